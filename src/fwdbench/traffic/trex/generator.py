"""``[generator] type = "trex"``: Cisco TRex's stateless mode drives the trials.

``check()`` finds the TRex install (install.py), writes its config for the
tester's ports and CPUs (config.py), starts ``t-rex-64 -i`` on the tester
host (server.py) -- or, with ``host``, attaches to a server already running
there -- starts the STL client beside it (client.py, agent.py), waits until
the server answers and records its version. ``run()`` turns each trial into
TRex streams (plan.py), runs them and reads TRex's and the kernel's counters
back into a ``TrialResult`` (result.py). ``close()`` stops the client and the
server and removes what they left.

The server's ports follow the scenario's link: the tester's veth ports
(af_packet) at ``check()`` and for kernel DUTs, the lab's memif sockets
(config.memif_device) when a trial's request carries them (user-space DUTs
on ``link = "memif"``). A trial whose link differs from the running
server's restarts the server with the right ports; before every memif trial
its ports must be up (the DUT, a memif slave, connects to TRex's sockets,
retrying, also a DUT started anew for the next scenario; where the DUT is
the master, DPDK's memif client connects only when TRex starts, so a down
port gets one fresh server), else the trial fails naming the side and the
socket.

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
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import CampaignError, GeneratorError
from ...trial import TrialResult
from ...dut.host import MemifLink
from ...validation import parse_params
from ..base import Generator, TesterHost, TrialRequest
from .client import AgentClient
from .config import CfgPort, TrexCfg, memif_device
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
    memif_timeout: float = Field(15.0, gt=0, le=600,
                                 description="on the memif link: wait this long for TRex's "
                                             "ports to be connected before a trial [s] (VPP's "
                                             "slave retries every 3 s)")

    @field_validator("ports")
    @classmethod
    def _ports(cls, v: list[int]) -> list[int]:
        if len(v) != 2 or len(set(v)) != 2 or any(p < 0 for p in v):
            raise ValueError(f"{v!r} must be two different port ids, e.g. [0, 1]")
        return v


class TrexGenerator(Generator):
    """Cisco TRex (stateless) on the tester host; see the module docstring."""

    name = "trex"
    links = ("veth", "memif")

    def __init__(self, settings: dict[str, Any], tester: TesterHost):
        super().__init__(settings, tester)
        self.s = TrexSettings.model_validate(settings)
        self.install: TrexInstall | None = None
        self.server: TrexServer | None = None
        self.agent: AgentClient | None = None
        self.workdir: str | None = None
        self.info: dict[str, Any] = {}
        self.version = ""
        #: the memif links the running server's ports are on (None: the veth ports)
        self.memif: tuple[MemifLink, ...] | None = None
        self.ports_info: list[dict[str, Any]] = []
        self.servers_started = 0

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

    @classmethod
    def links_for(cls, settings: dict[str, Any]) -> tuple[str, ...]:
        # an attached server's ports are its own: the tester's veth ports, if any
        return ("veth",) if settings.get("host") else cls.links

    # ---- set-up ---------------------------------------------------------------

    @property
    def kernel_ports(self) -> bool:
        """The tester's ports are Linux interfaces TRex opens (af_packet) and whose
        kernel counters are read around each trial: a server fwdbench started, on
        the veth link."""
        return self.s.host is None and self.memif is None

    def _cfg(self, memif: tuple[MemifLink, ...] | None = None) -> TrexCfg:
        t = self.tester
        if memif:
            devices = [memif_device(i, m, p.tg.mac)
                       for i, (m, p) in enumerate(zip(memif, t.ports[:2]))]
        else:
            # TRex would open a plain interface name as net_af_packet<i>,iface=<name>;
            # the full vdev string sets the ring size too
            devices = [f"--vdev=net_af_packet{i},iface={p.tg.ifname},"
                       f"framecnt={self.s.af_packet_frames}" for i, p in enumerate(t.ports[:2])]
        ports = tuple(CfgPort(device=d, src_mac=p.tg.mac, dest_mac=p.dut.mac)
                      for d, p in zip(devices, t.ports[:2]))
        return TrexCfg(ports=ports, cpus=tuple(t.cpus), prefix=f"{t.run_tag}-trex",
                       rpc_port=self.s.sync_port, pub_port=self.s.async_port)

    def _start(self, memif: tuple[MemifLink, ...] | None) -> dict[str, Any]:
        """Start the server on ``memif``'s sockets (None: the veth ports) unless one is
        attached, start the client, wait until the server answers; the connect answer."""
        assert self.install is not None and self.workdir is not None
        cfg = None
        if self.s.host is None:
            cfg = self._cfg(memif)
            listen = tuple(m.socket for m in memif or () if m.peer_role == "master")
            self.server = TrexServer(self.tester, self.install, cfg, self.workdir, listen)
            self.server.start()
            self.servers_started += 1
        self.agent = AgentClient(self.tester, self.install, self.s.python or sys.executable)
        started = self.agent.start(self.workdir)
        host = self.s.host or "127.0.0.1"

        def connect():
            return self.agent.call("connect", timeout_s=30, server=host,
                                   sync_port=self.s.sync_port,
                                   async_port=self.s.async_port, ports=self.s.ports)
        ans = wait_answering(self.server, connect, self.s.start_timeout)
        self.memif = memif
        self.ports_info = [p for p in ans.get("ports") or [] if isinstance(p, dict)]
        self.info.setdefault("links", {})["memif" if memif else "veth"] = {
            "ports": ans.get("ports"), "trex_cfg": cfg.render() if cfg else None}
        ans["client_python"] = started.get("python")
        return ans

    def _stop(self) -> list[str]:
        """Stop the client and the server; what had to be forced."""
        notes: list[str] = []
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        if self.server is not None:
            notes += self.server.stop()
            self.server = None
        return notes

    def check(self) -> dict[str, Any]:
        if len(self.tester.ports) < 2:
            raise GeneratorError(f"trex: the tester {self.tester.name} has "
                                 f"{len(self.tester.ports)} port(s); 2 are needed")
        self.install = find_trex(self.s.trex_prefix)
        base = self.tester.run_dir or tempfile.gettempdir()
        os.makedirs(base, mode=0o700, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="trex-", dir=base)
        try:
            ans = self._start(None)
        except BaseException:
            self.close()
            raise
        host = self.s.host or "127.0.0.1"
        cfg = self.server.cfg if self.server is not None else None
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
            "client_python": ans.get("client_python"),
            "trex_cfg": cfg.render() if cfg else None,
            "counts_checked_against_kernel": self.kernel_ports,
            "links": self.info.get("links", {}),
        }
        # the lab's memif link: DPDK's memif PMD in this build, and a server we start
        memif = self.s.host is None and self.install.has_memif()
        self.info["memif"] = memif
        if not memif:
            self.info["errors"] = {"memif": "an attached TRex server has its own ports"
                                   if self.s.host else
                                   f"{self.install.prefix}/_t-rex-64 has no net_memif driver"}
        return self.info

    # ---- trials -----------------------------------------------------------------

    def run(self, request: TrialRequest) -> TrialResult:
        if self.workdir is None:
            raise GeneratorError("trex: run() before check()")
        if request.load_pps < 0:
            raise CampaignError(f"trex: load {request.load_pps} pps is negative")
        memif = tuple(request.memif) if request.memif else None
        started = False
        if memif != self.memif or self.agent is None:     # (None: the last start failed)
            if self.s.host is not None:
                raise CampaignError("trex: the DUT is on the memif link, but an attached TRex "
                                    "server (host = ...) has its own ports; let fwdbench start "
                                    "the server (remove host), or use link = \"veth\"")
            self._restart(memif)
            started = True
        if self.server is not None and not self.server.alive():
            raise self.server.died()
        if memif:
            started = self._await_memif(memif, started)
        plan, smap = build_plan(self.tester, request, trex_ports=tuple(self.s.ports),
                                stall_s=self.s.stall_timeout)
        if memif:
            plan["kernel_ifaces"] = []          # no kernel on the path
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
        driver = {str(p.get("driver")) for p in self.ports_info}
        backend = "trex-" + "+".join(sorted(d.removeprefix("net_") for d in driver)) \
            if driver else "trex"
        result = parse_trial(answer, smap, warmup_s=plan["warmup_s"],
                             kernel_ports=self.kernel_ports, version=self.version,
                             backend=backend)
        result.raw["link"] = "memif" if memif else "veth"
        result.raw["server_started_for_trial"] = started
        if memif:
            result.raw["memif"] = [{**m.as_dict(), "trex_role": m.peer_role} for m in memif]
        return result

    # ---- the link ---------------------------------------------------------------

    def _restart(self, memif: tuple[MemifLink, ...] | None) -> None:
        """A server with ``memif``'s ports (None: the veth ports) in place of the
        running one. Where TRex is a memif slave, the DUT's sockets must be there
        first (DPDK's client tries once, when its port starts)."""
        notes = self._stop()
        if notes:
            print("fwdbench: trex: " + "; ".join(notes), file=sys.stderr)
        try:
            for i, m in enumerate(memif or ()):
                if m.peer_role == "slave":
                    self._await_socket(i, m)
            self._start(memif)
        except BaseException:
            self._stop()
            raise

    def _await_socket(self, i: int, m: MemifLink) -> None:
        deadline = time.monotonic() + self.s.memif_timeout
        while not os.path.exists(m.socket):
            if time.monotonic() >= deadline:
                raise GeneratorError(
                    f"trex: memif port {i}: no socket at {m.socket} after "
                    f"{self.s.memif_timeout:g} s: the DUT is the master there and did not "
                    "create it (is the DUT running?); TRex, its slave, was not started")
            time.sleep(0.1)

    def _await_memif(self, memif: tuple[MemifLink, ...], fresh: bool) -> bool:
        """Every TRex port connected to its memif peer, within ``memif_timeout``;
        whether the server is new (``fresh``, or restarted here)."""
        deadline = time.monotonic() + self.s.memif_timeout
        while True:
            assert self.agent is not None
            links = self.agent.call("links", timeout_s=30)["links"]
            down = [i for i, p in enumerate(self.s.ports) if links.get(str(p)) != "UP"]
            if not down:
                return fresh
            if self.server is not None and not self.server.alive():
                raise self.server.died()
            if not fresh and any(memif[i].peer_role == "slave" for i in down):
                # a DUT master started after this server: DPDK's client connects
                # only as its port starts, so a fresh server connects to it
                self._restart(memif)
                fresh = True
                deadline = time.monotonic() + self.s.memif_timeout
                continue
            if time.monotonic() >= deadline:
                i = down[0]
                m = memif[i]
                side = ("TRex is the master (DPDK server) of the socket and the DUT, its "
                        "slave, never connected" if m.peer_role == "master" else
                        "TRex is the slave (DPDK client) and the DUT, the master listening "
                        "there, did not accept it")
                raise GeneratorError(
                    f"trex: memif port {i} ({m.socket}) not connected after "
                    f"{self.s.memif_timeout:g} s: {side}"
                    + ("" if len(down) == 1 else f" (ports {down} are down)"))
            time.sleep(0.1)

    def describe(self) -> dict[str, Any]:
        return {"generator": self.name, **self.settings, "version": self.version}

    # ---- tear-down ----------------------------------------------------------------

    def close(self) -> None:
        notes = self._stop()
        self.memif = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        if notes:
            print("fwdbench: trex: " + "; ".join(notes), file=sys.stderr)


__all__ = ["TrexGenerator", "TrexSettings"]
