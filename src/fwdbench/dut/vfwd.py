"""`dut = "vfwd"`: fwdbench's reference vector packet processor (native/vfwd).

vfwd is a VPP-style graph of nodes run over vectors of packets (docs/vfwd.md).
The driver writes its config file from the campaign's ``dut.params`` and the
lab's addressing, starts ``vfwd`` in the DUT namespace pinned to the DUT CPU
(through the lab's executor), waits for its ``ready`` line, reads its per-node
runtime statistics (JSON over a UNIX socket) in ``counters()``, and stops it
with SIGTERM in ``teardown()`` (its final statistics are kept for
``describe()``).

Modes: ``router`` (IPv4 + IPv6 LPM forwarding), ``xconnect``, ``bridge``
(learning, aging, flooding), ``nat44`` (source NAT of the port-0 side to
``nat_pool``), ``work`` (router + the seed-004 synthetic per-packet work).
"""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import native
from ..errors import CampaignError, DutError, FwdbenchError
from ..lab.executor import Executor
from ..validation import parse_params
from . import register
from .base import DutDriver
from .host import PortRx

#: Flow networks and generator addresses when the lab does not say (design.md).
DEFAULT_FLOWS = {"ip4": ("198.18.128.0/17", "198.19.128.0/17"),
                 "ip6": ("2001:2:0:10::/64", "2001:2:0:11::/64")}
DEFAULT_TG = {"ip4": ("198.18.0.1", "198.19.0.1"), "ip6": ("2001:2::1", "2001:2:0:1::1")}
ALLOWED_NETS = (ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:2::/48"))
READY_TIMEOUT_S = 30.0      # [s] from start to the ready line (2^20 routes take a while)
STOP_TIMEOUT_S = 10.0       # [s] after SIGTERM before SIGKILL
FILL_DEPTH = 256            # vfwd's default fill-depth (VF_FILL_DEPTH in native/vfwd/vfwd.h)
RING_SIZE = 2048            # vfwd's default ring-size


def vfwd_binary() -> Path:
    """native/build/vfwd, or `vfwd` on $PATH. $FWDBENCH_VFWD overrides (e.g. vfwd-asan)."""
    env = os.environ.get("FWDBENCH_VFWD")
    if env:
        return Path(env)
    return native.tool("vfwd")


class WorkParams(BaseModel):
    """Per-packet synthetic work of mode ``work`` (seed 004); counts per packet."""
    model_config = ConfigDict(extra="forbid")
    lookups: int = Field(0, ge=0, le=100000, description="dependent table lookups [1/packet]")
    hashes: int = Field(0, ge=0, le=100000, description="hash computations [1/packet]")
    hash: Literal["crc32", "jhash"] = Field("crc32", description="hash function")
    arith: int = Field(0, ge=0, le=100000, description="multiply-add steps [1/packet]")
    regs: int = Field(0, ge=0, le=100000, description="register read-modify-writes [1/packet]")
    recirc: int = Field(0, ge=0, le=64, description="recirculations through the graph [1/packet]")
    table: int = Field(4096, ge=1, le=1 << 26, description="lookup table size [entries]")


class VfwdParams(BaseModel):
    """Parameters of ``dut.type = "vfwd"`` (campaign ``dut.params``)."""
    model_config = ConfigDict(extra="forbid")

    mode: Literal["router", "xconnect", "bridge", "nat44", "work"] = Field(
        "router", description="processing graph")
    max_vector: int = Field(256, ge=1, le=256,
                            description="largest vector [packets]; 1 = a scalar processor")
    workers: int = Field(1, ge=1, le=16, description="worker threads (one queue per port each)")
    cpus: list[int] | None = Field(
        None, description="CPUs of the workers; default: the lab's DUT CPU for all")
    prefetch: bool = Field(True, description="prefetch next packets' headers / table entries")
    rx_mode: Literal["auto", "poll", "adaptive", "interrupt"] = Field(
        "auto", description="how an idle worker waits (VPP's rx-mode): poll spins, interrupt "
                            "sleeps in poll() at once, adaptive after ~2000 empty passes; "
                            "auto: interrupt when the lab's NAPI threads share the worker's "
                            "CPU or fill its rings from the generator's (afxdp ingress), "
                            "else poll (docs/vfwd.md)")
    sched_priority: int | None = Field(
        None, ge=0, le=99, description="SCHED_FIFO priority of the workers (0: normal); "
                                       "default: one above the lab's NAPI threads in "
                                       "interrupt mode, theirs in poll mode when they share "
                                       "the workers' CPU, else 0")
    ring_size: int | None = Field(
        None, ge=64, le=16384, description="AF_XDP ring size [descriptors]; default 2048, "
                                           "behind the lab's afxdp ingress at least its queue "
                                           "(testbed.dut_rx_queue)")
    fill_depth: int | None = Field(
        None, ge=16, le=32768,
        description="buffers each AF_XDP socket keeps in the kernel (fill + rx rings; at most "
                    "2 x ring_size; default 256, or 2 x ring_size if that is less; behind "
                    "the lab's afxdp ingress its queue, testbed.dut_rx_queue, up to "
                    "ring_size): shallow keeps the working set in cache when NAPI copies "
                    "on the DUT CPU (docs/vfwd.md)")
    driver: Literal["auto", "xdp", "afpacket"] = Field(
        "auto", description="port backend: AF_XDP (copy mode on veth), AF_PACKET, or auto")
    routes: int = Field(1, ge=1, le=32768,
                        description="routes per direction: each flow network split into this "
                                    "many prefixes (a power of two)")
    random_routes: int = Field(0, ge=0, le=1 << 24,
                               description="extra random /24 routes in 0.0.0.0/1 (FIB size "
                                           "experiments; never match lab traffic)")
    lpm: Literal["dir24", "ref"] = Field("dir24", description="IPv4 LPM implementation")
    lpm_tbl8: int = Field(8192, ge=1, le=1 << 20, description="DIR-24-8 tbl8 groups")
    bridge_aging: int = Field(300, ge=0, le=86400, description="MAC aging [s]; 0 = never")
    bridge_size: int = Field(4096, ge=16, le=1 << 24, description="MAC table size [entries]")
    nat_pool: str = Field("198.19.0.100", description="nat44 outside address (port-1 side)")
    nat_sessions: int = Field(65536, ge=16, le=1 << 24, description="nat44 sessions per worker")
    work: WorkParams = Field(default_factory=WorkParams)
    trace: int = Field(0, ge=0, le=256, description="packets to trace on worker 0")

    @field_validator("routes")
    @classmethod
    def _pow2(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"{v} is not a power of two (1, 2, 4, ... 32768)")
        return v

    @field_validator("ring_size")
    @classmethod
    def _ring_pow2(cls, v: int | None) -> int | None:
        if v is not None and v & (v - 1):
            raise ValueError(f"{v} is not a power of two (64 .. 16384)")
        return v

    @field_validator("nat_pool")
    @classmethod
    def _pool(cls, v: str) -> str:
        try:
            a = ipaddress.ip_address(v)
        except ValueError:
            raise ValueError(f"{v!r} is not an IPv4 address") from None
        if a.version != 4 or a not in ALLOWED_NETS[0]:
            raise ValueError(f"{v} must be an IPv4 address in 198.18.0.0/15")
        return v

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and (not v or any(c < 0 for c in v)):
            raise ValueError(f"{v!r} must be a non-empty list of CPU numbers >= 0")
        return v

    @model_validator(mode="after")
    def _modes(self) -> "VfwdParams":
        if self.mode in ("xconnect", "bridge") and (self.routes != 1 or self.random_routes):
            raise ValueError(f"routes/random_routes need mode 'router', 'nat44' or 'work' "
                             f"(mode {self.mode!r} does no IP lookup)")
        if self.mode == "nat44" and self.workers > 1:
            raise ValueError(f"workers = {self.workers}: mode 'nat44' keeps its sessions per "
                             f"worker and does not hand return traffic to the session's "
                             f"worker; use workers = 1")
        if self.mode != "work" and self.work != WorkParams():
            raise ValueError(f"work settings need mode 'work' (mode is {self.mode!r})")
        ring = self.ring_size or RING_SIZE
        if self.fill_depth is not None and self.fill_depth > 2 * ring:
            raise ValueError(f"fill_depth {self.fill_depth} is more than the fill ring holds "
                             f"(2 x ring_size = {2 * ring}): lower it or raise ring_size")
        return self


def _get(obj: Any, *path: str) -> Any:
    for name in path:
        if obj is None:
            return None
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj


class _Port:
    """What the driver needs from a lab port: fwdbench.lab's PortPair
    (``p.tg.ifname``...), a flat object (``p.dut_ifname``) or a dict."""

    def __init__(self, p: Any, i: int):
        def pick(side: str, field: str) -> Any:
            v = _get(p, side, field)
            return v if v is not None else _get(p, f"{side}_{field}")
        self.index = i
        self.dut_ifname = pick("dut", "ifname")
        self.dut_mac = pick("dut", "mac")
        self.dut_ip4 = _addr(pick("dut", "ip4"))
        self.dut_ip6 = _addr(pick("dut", "ip6"))
        self.tg_mac = pick("tg", "mac")
        self.tg_ip4 = _addr(pick("tg", "ip4")) or DEFAULT_TG["ip4"][i]
        self.tg_ip6 = _addr(pick("tg", "ip6")) or DEFAULT_TG["ip6"][i]
        self.flows4 = _get(p, "flows4") or DEFAULT_FLOWS["ip4"][i]
        self.flows6 = _get(p, "flows6") or DEFAULT_FLOWS["ip6"][i]
        if not self.dut_ifname:
            raise DutError(f"vfwd: lab port {i} has no DUT interface name")


def _addr(v: Any) -> str | None:
    return None if v is None else str(v).split("/")[0]


def resolve_rx_mode(p: VfwdParams, cpus: list[int], rx: PortRx | None) -> tuple[str, int]:
    """(rx_mode, sched_priority) for the DUT ports' receive as the testbed runs
    it (``rx``, DutHost.rx(); None: not managed): the ``auto`` and default choices.

    The lab's threaded NAPI (SCHED_FIFO ``napi_rt_priority`` on the DUT CPU)
    is what fills vfwd's AF_XDP rings. A worker spinning below it is
    preempted at every frame and, at overload, hardly runs (receive
    livelock). One priority above it, sleeping as soon as it is idle, the
    worker empties its rings and the NAPI thread refills them in turn.
    Measured interleaved at 1.5 Mpps offered: median 0.355 Mpps forwarded
    (0.185-0.735) spinning below, 0.468 (0.407-0.663) this way; and, 8
    rounds with 512-descriptor rings on 2026-11-22, 0.839 this way against
    0.516 spinning at the NAPI threads' priority and yielding after every
    pass (what ``poll`` and ``adaptive`` do here), equal at 0.6 Mpps
    (docs/vfwd.md).

    Behind the lab's ``afxdp`` ingress the NAPI threads run on the
    generator's CPU, and ``interrupt`` is still the choice: a spinning worker
    sends smaller batches, each waking the generator's receive on its CPU,
    which then sent less (0.55 against 0.90 Mpps forwarded at 0.9 offered,
    3 trials each in one run, 2026-11-23).
    """
    rx = rx or PortRx()
    if rx.ingress == "memif":
        # no NAPI thread: vfwd polls its memif rings, at the priority the lab
        # gives a polling data plane (PortRx.rt_priority), so that this host's
        # other work does not take the DUT CPU mid-trial: at 0.6 Mpps with a
        # test suite running beside it, 0 of 3 trials lossless at 0 against 3
        # of 3 at FIFO 50 (2026-11-26, docs/lab.md)
        mode = p.rx_mode if p.rx_mode != "auto" else "poll"
        return mode, rx.rt_priority if p.sched_priority is None else p.sched_priority
    napi_prio = rx.rt_priority if rx.managed else 0
    lab_napi = rx.managed
    on_gen = lab_napi and rx.ingress == "afxdp"
    shared = lab_napi and not on_gen and rx.napi_cpu in cpus
    mode = p.rx_mode if p.rx_mode != "auto" else ("interrupt" if shared or on_gen else "poll")
    prio = p.sched_priority
    if prio is None:
        if mode == "interrupt" and (shared or on_gen):
            prio = min(napi_prio + 1, 99)
        else:
            prio = napi_prio if shared else 0
    if shared and mode != "interrupt" and prio > napi_prio:
        raise DutError(f"vfwd: rx_mode = {mode!r} with sched_priority = {prio} spins above "
                       f"the lab's NAPI threads (napi_rt_priority = {napi_prio}) on CPU "
                       f"{rx.napi_cpu}, which then never fill its rings: use rx_mode = "
                       f"\"interrupt\" or a sched_priority of at most {napi_prio}")
    return mode, prio


def resolve_rings(p: VfwdParams, rx: PortRx | None,
                  memif_ring: int | None = None) -> tuple[int, int]:
    """(ring_size, fill_depth) for the DUT ports' receive: the params if set; on memif
    the link's ring size (testbed.memif_ring_size) if set; behind the
    lab's ``afxdp`` ingress the rings hold its queue (testbed.dut_rx_queue)
    and the socket keeps that many buffers in the kernel; else RING_SIZE and
    a shallow FILL_DEPTH (docs/vfwd.md).

    Shallow pays on the DUT CPU, where NAPI copies into the chunks; with NAPI
    on the generator's CPU the depth is the queue that rides out the DUT
    CPU's stalls. Measured 2026-11-23: at 0.3 Mpps 3 of 3 trials lost
    nothing (2048) against 2 of 3 (256), at 1.5 Mpps offered 0 frames lost
    against 10805; rings of 4096 against 2048, 9 trials each: lossless 6
    against 5 at 0.6 Mpps and 6 against 4 at 0.9."""
    queue = rx.queue if rx is not None else 0
    behind = rx is not None and rx.ingress == "afxdp" and queue > 0
    memif = rx is not None and rx.ingress == "memif"
    ring = p.ring_size or (min(max(RING_SIZE, 1 << (queue - 1).bit_length()), 16384)
                           if behind else (memif_ring if memif and memif_ring else RING_SIZE))
    if p.fill_depth is not None:
        return ring, p.fill_depth
    if memif:
        # memif ports: half the M2S ring waits for the generator's frames
        # (port_memif.c's own default; the other half of each port's share
        # of the pool holds its S2M frames). The AF_XDP 256 here left 0.6 ms
        # of frames at 0.4 Mpps and lost frames at any load (docs/vfwd.md).
        return ring, ring // 2
    return ring, (max(16, min(queue, ring)) if behind else min(FILL_DEPTH, 2 * ring))


def render_config(p: VfwdParams, ports: list[_Port], cpus: list[int],
                  rx_mode: str = "poll", sched_priority: int = 0,
                  rings: tuple[int, int] | None = None, memif=None) -> str:
    """The vfwd config file for these params and lab ports (docs/vfwd.md);
    ``rings``: (ring_size, fill_depth) from resolve_rings; ``memif``: one
    dut.host.MemifLink per port when the ports are memif interfaces (vfwd is
    the slave: zero copy, its pool is the shared memory)."""
    ring_size, fill_depth = rings or resolve_rings(p, None)
    drv = {"auto": "auto", "xdp": "xdp", "afpacket": "afpacket"}[p.driver]
    lines = [
        "# written by fwdbench's vfwd driver",
        f"mode {p.mode}",
        f"max-vector {p.max_vector}",
        f"workers {p.workers}",
        f"cpus {','.join(map(str, cpus))}",
        f"prefetch {'on' if p.prefetch else 'off'}",
        f"rx-mode {rx_mode}",
        f"sched-priority {sched_priority}",
        f"ring-size {ring_size}",
        f"fill-depth {fill_depth}",
        f"lpm {p.lpm}",
        f"lpm-tbl8 {p.lpm_tbl8}",
        f"trace {p.trace}",
        f"bridge aging {p.bridge_aging} size {p.bridge_size}",
    ]
    for pt in ports:
        extra = f" mac {pt.dut_mac}" if pt.dut_mac else ""
        if p.mode not in ("xconnect", "bridge"):
            if pt.dut_ip4:
                extra += f" ip4 {pt.dut_ip4}"
            if pt.dut_ip6:
                extra += f" ip6 {pt.dut_ip6}"
        if memif:
            m = memif[pt.index]
            lines.append(f"port {pt.index} {pt.dut_ifname} driver memif socket {m.socket} "
                         f"id {m.id} role slave{extra}")
        else:
            lines.append(f"port {pt.index} {pt.dut_ifname} driver {drv}{extra}")
    if p.mode == "xconnect":
        lines.append("xconnect 0 1")
    if p.mode in ("router", "nat44", "work"):
        extra_bits = (p.routes - 1).bit_length()
        for pt in ports:
            if not pt.tg_mac:
                raise DutError(f"vfwd: lab port {pt.index} does not tell the generator port's "
                               f"MAC; the router needs it for its neighbour entry")
            lines.append(f"neighbor {pt.tg_ip4} {pt.tg_mac} port {pt.index}")
            lines.append(f"neighbor {pt.tg_ip6} {pt.tg_mac} port {pt.index}")
            for net_s, via in ((pt.flows4, pt.tg_ip4), (pt.flows6, pt.tg_ip6)):
                net = ipaddress.ip_network(str(net_s), strict=False)
                if not any(net.version == a.version and net.subnet_of(a) for a in ALLOWED_NETS):
                    raise DutError(f"vfwd: flow network {net} is outside the benchmarking "
                                   f"ranges 198.18.0.0/15 and 2001:2::/48")
                if net.prefixlen + extra_bits > net.max_prefixlen:
                    raise DutError(f"vfwd: cannot split {net} into {p.routes} routes")
                for sub in net.subnets(prefixlen_diff=extra_bits):
                    lines.append(f"route {sub} via {via} port {pt.index}")
        if p.random_routes:
            last = ports[-1]
            lines.append(f"routes-random {p.random_routes} via {last.tg_ip4} port {last.index} "
                         f"len 24 within 0.0.0.0/1 seed 1")
    if p.mode == "nat44":
        lines.append(f"nat44 inside 0 outside {ports[-1].index} pool {p.nat_pool} "
                     f"sessions {p.nat_sessions}")
    if p.mode == "work":
        w = p.work
        lines.append(f"work lookups {w.lookups} hashes {w.hashes} hash {w.hash} arith {w.arith} "
                     f"regs {w.regs} recirc {w.recirc} table {w.table}")
    return "\n".join(lines) + "\n"


def flatten_stats(st: dict[str, Any]) -> dict[str, int]:
    """vfwd's stats JSON -> cumulative integer counters (the runner takes deltas)."""
    out: dict[str, int] = {}
    for node, v in st.get("nodes", {}).items():
        key = node.replace("-", "_")
        for f in ("calls", "packets", "clocks", "idle_calls"):
            out[f"vfwd_{key}_{f}"] = int(v.get(f, 0))
    for reason, n in st.get("drops", {}).items():
        key = "".join(c if c.isalnum() else "_" for c in reason.lower()).strip("_")
        while "__" in key:
            key = key.replace("__", "_")
        out[f"vfwd_drop_{key}"] = int(n)
    out["vfwd_drops_total"] = int(st.get("drops_total", 0))
    # the MAC table's counters (bridge mode); "entries" is a level, not a count
    for k, v in st.get("bridge", {}).items():
        if k != "entries":
            out[f"vfwd_bridge_{k}"] = int(v)
    # passes that began > 1 ms (4 ms) late while the workers meant to spin: their
    # CPU was taken (preempted, or the vCPU stolen); what a lossy trial is read with
    for f in ("stalls_over_1ms", "stalls_over_4ms"):
        out[f"vfwd_worker_{f}"] = sum(int(w.get(f, 0)) for w in st.get("workers_detail", []))
    for p in st.get("ports", []):
        name = p.get("ifname") or f"port{p.get('port')}"
        for f in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_dropped"):
            out[f"{name}_{f}"] = int(p.get(f, 0))
    return out


def query(sock_path: str, cmd: str = "stats", timeout: float = 5.0) -> dict[str, Any]:
    """Send one command on vfwd's control socket, parse the JSON answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall(cmd.encode() + b"\n")
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    return json.loads(b"".join(chunks) or b"{}")


@register
class VfwdDut(DutDriver):
    name = "vfwd"
    links = ("veth", "memif")
    modes = ("router", "xconnect", "bridge", "nat44", "work")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        self.p = VfwdParams.model_validate(params)
        # AF_XDP ports (auto tries them first): the lab receives for vfwd on the
        # generator's CPU, into its UMEM (lab/ingress.py, "afxdp")
        self.afxdp_rx = self.p.driver != "afpacket"
        self.binary = vfwd_binary()
        self._proc: subprocess.Popen | None = None
        self._host = None
        self._dir: str | None = None
        self._sock = ""
        self._ready: dict[str, Any] = {}
        self._final: dict[str, Any] = {}
        self._stdout_lines: list[str] = []
        self._stderr = ""
        self._reader: threading.Thread | None = None
        self._err_reader: threading.Thread | None = None
        self._config = ""
        self._cpus: list[int] = []
        self._rx_mode, self._sched_priority = "", 0

    # ---- plan time ------------------------------------------------------------

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        p = parse_params(VfwdParams, params, where)
        if p.cpus is not None and len(p.cpus) > p.workers:
            raise CampaignError(f"campaign: {where}.cpus: {len(p.cpus)} CPUs for "
                                f"{p.workers} worker(s); give at most one per worker")
        return p.model_dump(mode="json")

    def check(self, host=None) -> None:
        ex = host.exec if host is not None else Executor(None)
        binary = host.tool("vfwd") if host is not None else str(self.binary)
        if not ex.exists(binary):
            raise DutError(f"vfwd: {binary} is missing; build it with "
                           f"'make -C native/vfwd' (needs libxdp-dev, libbpf-dev)")
        try:
            r = ex.run([binary, "--version"], timeout=10, check=False)
        except FwdbenchError as e:
            raise DutError(f"vfwd: {binary} --version failed: {e}") from None
        if r.returncode != 0 or not r.stdout.startswith("vfwd "):
            raise DutError(f"vfwd: {binary} --version: {r.stderr.strip() or r.stdout}")
        missing = ex.missing_tools(ex.tools_for("unix_request"))
        if missing:     # its control socket is reached through them (a DUT host over SSH)
            raise DutError(f"vfwd: {', '.join(missing)} is missing on {host.name}, which "
                           f"fwdbench needs there to read vfwd's statistics from its control "
                           f"socket (apt-get install {' '.join(missing)})")

    def peer_macs(self, host=None) -> dict[str, str]:
        """Destination MAC the generator writes on each tg port: the DUT port's
        (router, nat44, work), the other tg port's in the L2 modes."""
        if host is None:
            from ..lab import PORTS as raw
        else:
            raw = list(host.ports)[:2]
        ports = [_Port(p, i) for i, p in enumerate(raw)]
        tg = [_get(p, "tg", "ifname") or _get(p, "tg_ifname") or f"tg{i}"
              for i, p in enumerate(raw)]
        if self.p.mode in ("xconnect", "bridge"):
            return {tg[0]: ports[1].tg_mac, tg[1]: ports[0].tg_mac}
        return {tg[i]: ports[i].dut_mac for i in range(len(ports))}

    def pids(self) -> list[int]:
        """vfwd's process (its CPU time is the DUT's, for the energy meters)."""
        return [self._proc.pid] if self._proc is not None and self._proc.poll() is None else []

    # ---- lifecycle ------------------------------------------------------------

    def setup(self, host) -> None:
        ports = [_Port(p, i) for i, p in enumerate(list(host.ports)[:2])]
        if len(ports) != 2:
            raise DutError(f"vfwd: the DUT host has {len(ports)} ports, vfwd needs 2")
        self._host = host
        self._check_queues(host, ports)
        self._cpus = list(self.p.cpus) if self.p.cpus else [int(host.cpus[0])]
        rx = host.rx()
        self._rx_mode, self._sched_priority = resolve_rx_mode(self.p, self._cpus, rx)
        if host.memif and self.p.workers > 1:
            raise DutError(f"vfwd: workers = {self.p.workers} on memif ports: vfwd's memif "
                           f"ports run one worker (docs/vfwd.md); use workers = 1")
        self._config = render_config(self.p, ports, self._cpus, self._rx_mode,
                                     self._sched_priority,
                                     resolve_rings(self.p, rx, host.memif[0].ring_size
                                                   if host.memif else None),
                                     memif=host.memif)
        self.binary = Path(host.tool("vfwd"))
        self._dir = host.make_dir("vfwd")
        conf = f"{self._dir}/vfwd.conf"
        host.exec.write_file(conf, self._config)
        self._sock = f"{self._dir}/vfwd.sock"
        argv = [str(self.binary), "-c", conf, "-s", self._sock]
        try:
            self._proc = host.exec.popen(argv, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
            self._wait_ready()
        except BaseException:
            self.teardown_quietly()
            raise

    def _check_queues(self, host, ports: list[_Port]) -> None:
        """AF_XDP workers take one RX queue of each port each (RSS spreads the
        flows): refuse more workers than the ports have queues, which would
        otherwise fail to bind or, with driver auto, leave the extra workers
        on AF_PACKET sockets that the XDP redirect starves. (The netns lab's
        veths have one queue, and veth puts the generator's frames on one
        queue anyway; driver afpacket spreads by PACKET_FANOUT instead.)"""
        if self.p.workers == 1 or self.p.driver == "afpacket" or host.memif:
            return
        for pt in ports:
            names = host.exec.run(["ls", f"/sys/class/net/{pt.dut_ifname}/queues"]).stdout.split()
            nq = sum(n.startswith("rx-") for n in names)
            if nq < self.p.workers:
                raise DutError(f"vfwd: workers = {self.p.workers} needs {self.p.workers} RX "
                               f"queues on each port for AF_XDP, and {pt.dut_ifname} has {nq}: "
                               f"use workers = 1 here, or driver = \"afpacket\" (PACKET_FANOUT "
                               f"spreads the flows over the workers)")

    def _wait_ready(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        got: list[str] = []
        ready = threading.Event()

        def read_stdout() -> None:
            for line in proc.stdout:    # type: ignore[union-attr]
                self._stdout_lines.append(line)
                if not got and line.startswith('{"event": "ready"'):
                    got.append(line)
                    ready.set()
            ready.set()

        def read_stderr() -> None:
            self._stderr = proc.stderr.read() if proc.stderr else ""   # type: ignore[union-attr]

        self._reader = threading.Thread(target=read_stdout, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=read_stderr, daemon=True)
        self._err_reader.start()
        ready.wait(READY_TIMEOUT_S)
        if not got:
            try:
                rc = proc.wait(2)       # stdout closed: vfwd is most likely exiting
            except subprocess.TimeoutExpired:
                rc = None
            if rc is not None and self._err_reader is not None:
                self._err_reader.join(2)
            what = (f"exited with {rc}" if rc is not None
                    else f"not ready after {READY_TIMEOUT_S:g} s")
            raise DutError(f"vfwd: {what}: {self._stderr.strip()[-800:] or '(no stderr)'}")
        self._ready = json.loads(got[0])
        deadline = time.monotonic() + 5
        while not self._host.exec.exists(self._sock) and time.monotonic() < deadline:
            time.sleep(0.02)

    def trial_notes(self, counters: dict[str, int]) -> list[str]:
        # a pass that began > 1 ms after the previous one: the worker's CPU was
        # taken (lossy memif trials coincided with these, and only those:
        # docs/lab.md)
        n1 = counters.get("vfwd_worker_stalls_over_1ms", 0)
        if n1 <= 0:
            return []
        n4 = counters.get("vfwd_worker_stalls_over_4ms", 0)
        return [f"vfwd's worker lost its CPU for over 1 ms {n1} time(s) in this trial "
                f"({n4} over 4 ms): preempted, or the vCPU stolen by the hypervisor; frames "
                f"lost then are this host's, not vfwd's"]

    def counters(self) -> dict[str, int]:
        """Per-node packets/calls/clocks, drops per reason, per-port packets (cumulative)."""
        if self._proc is None:
            return {}
        if self._proc.poll() is not None:
            raise DutError(f"vfwd: exited with {self._proc.returncode} during the run: "
                           f"{self._stderr.strip()[-500:]}")
        try:
            return flatten_stats(self._query("stats"))
        except (OSError, ValueError) as e:
            raise DutError(f"vfwd: reading statistics from {self._sock}: {e}") from None

    def stats(self) -> dict[str, Any]:
        """The raw statistics JSON (per node clocks/packet, vectors/call, ...)."""
        if self._proc is None or self._proc.poll() is not None:
            return self._final
        return self._query("stats")

    def _query(self, cmd: str) -> dict[str, Any]:
        """One command on vfwd's control socket, through the DUT host."""
        return json.loads(self._host.exec.unix_request(self._sock, cmd.encode() + b"\n") or b"{}")

    def teardown(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            for t in (self._reader, self._err_reader):
                if t is not None:
                    t.join(5)
            self._final = _last_stats(self._stdout_lines) or self._final
            for f in (proc.stdout, proc.stderr):
                if f:
                    f.close()
        if self._dir:
            self._host.remove_dir(self._dir)
            self._dir = None

    def teardown_quietly(self) -> None:
        try:
            self.teardown()
        except Exception:    # pragma: no cover - already failing
            pass

    def describe(self) -> dict[str, Any]:
        runtime = {n: {"clocks_per_packet": v.get("clocks_per_packet"),
                       "vectors_per_call": v.get("vectors_per_call"),
                       "packets": v.get("packets")}
                   for n, v in (self._final or {}).get("nodes", {}).items()}
        return {
            "dut": "vfwd",
            **self.p.model_dump(mode="json"),
            "version": self._ready.get("version", ""),
            "binary": str(self.binary),
            "cpus": self._cpus,
            "rx_mode_used": self._rx_mode,
            "sched_priority_used": self._sched_priority,
            "ports": self._ready.get("ports", []),
            "tsc_hz": self._ready.get("tsc_hz"),
            "config": self._config,
            # the whole run's, once stopped (campaigns describe at the start,
            # and keep each trial's per-node figures in its counters)
            **({"runtime": runtime} if runtime else {}),
        }


def _last_stats(lines: list[str]) -> dict[str, Any]:
    """The last statistics JSON vfwd printed (it prints one at exit)."""
    text = "".join(lines)
    start = text.rfind('{"vfwd_version"')
    if start < 0:
        return {}
    try:
        return json.loads(text[start:])
    except ValueError:
        return {}
