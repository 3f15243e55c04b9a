"""``[generator] type = "trex"``: Cisco TRex's stateless mode drives the trials.

``check()`` finds the TRex install (install.py), writes its config for the
tester's ports and CPUs (config.py), starts ``t-rex-64 -i`` on the tester
host (server.py) -- or, with ``host``, attaches to a server already running
there -- starts the STL client beside it (client.py, agent.py), waits until
the server answers and records its version. ``run()`` turns each trial into
TRex streams (plan.py), runs them and reads TRex's and the kernel's counters
back into a ``TrialResult`` (result.py). ``close()`` stops the client and the
server and removes what they left.

A server that does not start fails ``check()`` with TRex's own last words;
one that dies or stalls during a trial fails that trial with the reason
(the run stops; ``fwdbench run --resume`` carries on after the finished
trials, with a fresh server).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import CampaignError, GeneratorError
from ...trial import TrialResult
from ...validation import parse_params
from ..base import Generator, TesterHost, TrialRequest
from .client import AgentClient
from .config import CfgPort, TrexCfg
from .install import TrexInstall, find_trex
from .plan import build_plan
from .result import parse_trial
from .server import TrexServer, wait_answering


class TrexSettings(BaseModel):
    """``[generator]`` settings of ``type = "trex"``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    trex_prefix: str | None = Field(
        None, description="folder of a TRex release (holding t-rex-64); default: "
                          "t-rex-64 on $PATH, then fwdbench's build in /opt/fwdbench/trex-*")
    python: str | None = Field(
        None, description="Python that runs TRex's client (default: fwdbench's own)")
    host: str | None = Field(
        None, description="attach to a TRex server already running at this address "
                          "(as seen from the tester host) instead of starting one")
    sync_port: int = Field(4501, ge=1, le=65535, description="TRex's RPC port [TCP]")
    async_port: int = Field(4500, ge=1, le=65535, description="TRex's publisher port [TCP]")
    ports: list[int] = Field(
        default_factory=lambda: [0, 1],
        description="TRex port ids facing DUT ports 0 and 1 (a server fwdbench starts "
                    "has exactly these two, in order)")
    # measured here (Linux router, 64 B, 2 s): DPDK's default 512 frames lost 1-3 % of
    # what the kernel delivered at 100 kpps and 11 % at 300 kpps on TRex's receive
    # (its one core sleeps between polls in low_end mode); 4096 lost none up to 300 kpps
    af_packet_frames: int = Field(
        4096, ge=64, le=65536, description="frames in each ring of TRex's af_packet ports "
                                          "(Linux interfaces; DPDK's default: 512)")
    start_timeout: float = Field(60.0, gt=0, le=600,
                                 description="wait for the server to answer [s]")
    stall_timeout: float = Field(30.0, gt=0, le=600,
                                 description="a trial with no answer this long past its "
                                             "own time fails [s]")

    @field_validator("ports")
    @classmethod
    def _ports(cls, v: list[int]) -> list[int]:
        if len(v) != 2 or len(set(v)) != 2 or any(p < 0 for p in v):
            raise ValueError(f"{v!r} must be two different port ids, e.g. [0, 1]")
        return v


class TrexGenerator(Generator):
    """Cisco TRex (stateless) on the tester host; see the module docstring."""

    name = "trex"

    def __init__(self, settings: dict[str, Any], tester: TesterHost):
        super().__init__(settings, tester)
        self.s = TrexSettings.model_validate(settings)
        self.install: TrexInstall | None = None
        self.server: TrexServer | None = None
        self.agent: AgentClient | None = None
        self.workdir: str | None = None
        self.info: dict[str, Any] = {}
        self.version = ""

    @classmethod
    def validate(cls, settings: dict[str, Any], where: str) -> dict[str, Any]:
        s = parse_params(TrexSettings, settings, where)
        if s.trex_prefix is not None and not os.path.isdir(s.trex_prefix):
            raise CampaignError(f"{where}.trex_prefix: {s.trex_prefix!r} is not a folder; "
                                "point it at an unpacked TRex release (the folder holding "
                                "t-rex-64)")
        if s.host is None and s.ports != [0, 1]:
            raise CampaignError(f"{where}.ports: a server fwdbench starts has ports [0, 1]; "
                                "other port ids need an attached server (host = ...)")
        if s.sync_port == s.async_port:
            raise CampaignError(f"{where}.async_port: equals sync_port ({s.sync_port}); "
                                "TRex's RPC and publisher ports differ")
        return s.model_dump(exclude_defaults=True)

    # ---- set-up ---------------------------------------------------------------

    @property
    def kernel_ports(self) -> bool:
        """The tester's ports are Linux interfaces TRex opens (af_packet) and whose
        kernel counters are read around each trial: a server fwdbench started."""
        return self.s.host is None

    def _cfg(self) -> TrexCfg:
        t = self.tester
        # TRex would open a plain interface name as net_af_packet<i>,iface=<name>;
        # the full vdev string sets the ring size too
        ports = tuple(CfgPort(device=f"--vdev=net_af_packet{i},iface={p.tg.ifname},"
                                     f"framecnt={self.s.af_packet_frames}",
                              src_mac=p.tg.mac, dest_mac=p.dut.mac)
                      for i, p in enumerate(t.ports[:2]))
        return TrexCfg(ports=ports, cpus=tuple(t.cpus), prefix=f"{t.run_tag}-trex",
                       rpc_port=self.s.sync_port, pub_port=self.s.async_port)

    def check(self) -> dict[str, Any]:
        if len(self.tester.ports) < 2:
            raise GeneratorError(f"trex: the tester {self.tester.name} has "
                                 f"{len(self.tester.ports)} port(s); 2 are needed")
        self.install = find_trex(self.s.trex_prefix)
        python = self.s.python or sys.executable
        base = self.tester.run_dir or tempfile.gettempdir()
        os.makedirs(base, mode=0o700, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="trex-", dir=base)
        try:
            cfg = None
            if self.s.host is None:
                cfg = self._cfg()
                self.server = TrexServer(self.tester, self.install, cfg, self.workdir)
                self.server.start()
            self.agent = AgentClient(self.tester, self.install, python)
            started = self.agent.start(self.workdir)
            host = self.s.host or "127.0.0.1"

            def connect():
                return self.agent.call("connect", timeout_s=30, server=host,
                                       sync_port=self.s.sync_port,
                                       async_port=self.s.async_port, ports=self.s.ports)
            ans = wait_answering(self.server, connect, self.s.start_timeout)
        except BaseException:
            self.close()
            raise
        ver = ans.get("server_version") or {}
        self.version = str(ver.get("version", ""))
        if self.install.version and self.version and self.install.version != self.version:
            self.close()
            raise GeneratorError(f"trex: the server at {host} runs TRex {self.version}, the "
                                 f"client in {self.install.prefix} is {self.install.version}; "
                                 "point trex_prefix at the server's release")
        self.info = {
            "trex_version": self.version,
            "server_build": {k: ver.get(k) for k in ("build_date", "build_time", "mode")
                             if k in ver},
            "prefix": self.install.prefix,
            "server": "attached" if self.s.host else "started",
            "address": f"{host}:{self.s.sync_port}",
            "ports": ans.get("ports"),
            "system": ans.get("system"),
            "client_python": started.get("python"),
            "trex_cfg": cfg.render() if cfg else None,
            "counts_checked_against_kernel": self.kernel_ports,
        }
        return self.info

    # ---- trials -----------------------------------------------------------------

    def run(self, request: TrialRequest) -> TrialResult:
        if self.agent is None:
            raise GeneratorError("trex: run() before check()")
        if request.load_pps < 0:
            raise CampaignError(f"trex: load {request.load_pps} pps is negative")
        if self.server is not None and not self.server.alive():
            raise self.server.died()
        plan, smap = build_plan(self.tester, request, trex_ports=tuple(self.s.ports),
                                stall_s=self.s.stall_timeout)
        budget = (plan["warmup_s"] + plan["duration_s"] + plan["drain_ms"] / 1000
                  + 2 * self.s.stall_timeout)
        try:
            answer = self.agent.call("trial", timeout_s=budget, plan=plan)
        except GeneratorError as e:
            if self.server is not None and not self.server.alive():
                raise self.server.died() from None
            if not self.agent.alive():      # stalled: the next trial needs a fresh client
                raise GeneratorError(f"{e}; the run stops here (resume with "
                                     "`fwdbench run --resume`)") from None
            raise
        driver = {str(p.get("driver")) for p in (self.info.get("ports") or [])
                  if isinstance(p, dict)}
        backend = "trex-" + "+".join(sorted(d.removeprefix("net_") for d in driver)) \
            if driver else "trex"
        return parse_trial(answer, smap, warmup_s=plan["warmup_s"],
                           kernel_ports=self.kernel_ports, version=self.version,
                           backend=backend)

    def describe(self) -> dict[str, Any]:
        return {"generator": self.name, **self.settings, "version": self.version}

    # ---- tear-down ----------------------------------------------------------------

    def close(self) -> None:
        notes: list[str] = []
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        if self.server is not None:
            notes += self.server.stop()
            self.server = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        if notes:
            print("fwdbench: trex: " + "; ".join(notes), file=sys.stderr)


__all__ = ["TrexGenerator", "TrexSettings"]
