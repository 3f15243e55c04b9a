"""The netns lab: two namespaces joined by two veth pairs (design.md).

``Lab.up(LabConfig(...))`` builds it, ``lab.down()`` removes it; use it as
a context manager. Teardown also runs at interpreter exit and on SIGTERM /
SIGHUP (turned into SystemExit) and SIGINT (KeyboardInterrupt).
"""
from __future__ import annotations

import atexit
import os
import sys
import platform
import secrets
import signal
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LabError
from . import cleanup, rt_throttling
from .addressing import FLOW_NETS, PORTS, PortPair, dut_ns, tg_ns
from .executor import Executor
from .netlink import link_stats
from . import ingress
from .ingress import IngressQueue
from .tuning import IfaceTuning, napi_affinity, tune_rx

if TYPE_CHECKING:
    from ..traffic.base import TesterHost
    from .host import NetnsDutHost

#: sysctls set in both namespaces before any interface exists
NS_SYSCTLS = {
    "net.ipv6.conf.all.accept_dad": 0, "net.ipv6.conf.default.accept_dad": 0,
    "net.ipv6.conf.all.accept_ra": 0, "net.ipv6.conf.default.accept_ra": 0,
    "net.ipv6.conf.all.router_solicitations": 0, "net.ipv6.conf.default.router_solicitations": 0,
    "net.ipv6.conf.default.addr_gen_mode": 1,      # no link-local addresses: no ND/MLD for them
    # the few MLD reports an address add causes go out within 10 ms, not over ~1 s
    "net.ipv6.conf.all.mldv2_unsolicited_report_interval": 10,
    "net.ipv6.conf.default.mldv2_unsolicited_report_interval": 10,
    "net.ipv6.conf.all.mldv1_unsolicited_report_interval": 10,
    "net.ipv6.conf.default.mldv1_unsolicited_report_interval": 10,
    "net.ipv4.conf.all.rp_filter": 0, "net.ipv4.conf.default.rp_filter": 0,
    "net.ipv4.conf.all.send_redirects": 0, "net.ipv4.conf.default.send_redirects": 0,
    "net.ipv4.conf.all.accept_redirects": 0, "net.ipv4.conf.default.accept_redirects": 0,
    "net.ipv4.ip_forward": 0, "net.ipv6.conf.all.forwarding": 0,
}


@dataclass(frozen=True)
class LabConfig:
    """How to build a lab. Validated on construction."""
    run_id: str | None = None       # None: 6 random hex digits
    gen_cpu: int = 0                # CPU of the generator and tg-side NAPI threads
    dut_cpu: int = 1                # CPU of the DUT and dut-side NAPI threads
    kernel_tuning: bool = True      # GRO + threaded NAPI pinned per side
    ipv6: bool = True
    mtu: int = 1500                 # [bytes] of every lab veth
    napi_rt_priority: int = 0       # SCHED_FIFO priority of the NAPI threads (0: normal, CFS)
    cpu_latency_us: int | None = 0  # PM QoS CPU wake-up latency while the lab is up (None: leave)
    lift_rt_throttling: bool = True  # sched_rt_runtime_us = -1 while FIFO NAPI threads run (rt_throttling.py)
    persistent: bool = False        # survive this process (`fwdbench lab up`); no auto teardown

    def __post_init__(self):
        if self.run_id is not None and not cleanup.RUN_ID_RE.match(self.run_id):
            raise LabError(f"lab.run_id: {self.run_id!r} must be 1-12 lowercase letters or digits")
        for f in ("gen_cpu", "dut_cpu"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise LabError(f"lab.{f}: {v!r} must be a CPU number >= 0")
        if not isinstance(self.mtu, int) or not 1280 <= self.mtu <= 9000:
            raise LabError(f"lab.mtu: {self.mtu!r} must be 1280..9000 bytes")
        if self.cpu_latency_us is not None and (
                not isinstance(self.cpu_latency_us, int) or self.cpu_latency_us < 0):
            raise LabError(f"lab.cpu_latency_us: {self.cpu_latency_us!r} must be >= 0 or None")
        if not isinstance(self.napi_rt_priority, int) or not 0 <= self.napi_rt_priority <= 99:
            raise LabError(f"lab.napi_rt_priority: {self.napi_rt_priority!r} must be 0 (off) .. 99")


_LIVE: dict[str, "Lab"] = {}
_HANDLERS_INSTALLED = False
_LOCK = threading.Lock()


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)


def _install_teardown_hooks() -> None:
    """atexit + SIGTERM/SIGHUP -> SystemExit (only where nobody installed a handler)."""
    global _HANDLERS_INSTALLED
    with _LOCK:
        if _HANDLERS_INSTALLED:
            return
        _HANDLERS_INSTALLED = True
    atexit.register(_atexit_down)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _raise_exit)
        if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _atexit_down() -> None:
    for lab in list(_LIVE.values()):
        if lab.owner_pid == os.getpid():
            try:
                lab.down()
            except Exception as e:      # pragma: no cover - best effort at exit
                os.write(2, f"fwdbench: lab {lab.run_id} teardown failed: {e}\n".encode())


class Lab:
    """A running lab. Build it with ``Lab.up(cfg)``."""

    def __init__(self, cfg: LabConfig, run_id: str):
        self.cfg = cfg
        self.run_id = run_id
        self.tg_ns = tg_ns(run_id)
        self.dut_ns = dut_ns(run_id)
        self.ports: tuple[PortPair, PortPair] = PORTS
        self.flow_nets: dict[str, tuple[str, str]] = FLOW_NETS   # {"ip4": (tg0 side, tg1 side)}
        self.gen_cpu = cfg.gen_cpu
        self.dut_cpu = cfg.dut_cpu
        self.tg_exec = Executor(self.tg_ns)
        self.dut_exec = Executor(self.dut_ns)
        self.owner_pid = os.getpid()
        self.tuning: list[IfaceTuning] = []
        self.dut_ingress = "napi"              # how the DUT ports receive (set_dut_ingress)
        self.dut_queue = 0                     # its queue [frames] in cpumap/afxdp mode
        self.tg_rx = "napi"                    # how the generator's ports receive (set_tg_rx)
        self.ingress: list[IngressQueue] = []
        self.timings: dict[str, float] = {}     # [s] per setup step
        self._made_ns: list[str] = []           # namespaces this object created (down removes only those)
        self._down = False
        self._pm_qos_fd: int | None = None
        self.rt_throttling = "left alone"       # what up() did to kernel.sched_rt_runtime_us

    # --- lifecycle -------------------------------------------------------------
    @classmethod
    def up(cls, cfg: LabConfig | None = None) -> "Lab":
        cfg = cfg or LabConfig()
        if os.geteuid() != 0:
            raise LabError("the netns lab needs root (network namespaces, veth): run with sudo")
        cpus = online_cpus()
        for f in ("gen_cpu", "dut_cpu"):
            if getattr(cfg, f) not in cpus:
                raise LabError(f"lab.{f}: CPU {getattr(cfg, f)} is not available "
                               f"(usable CPUs: {', '.join(map(str, sorted(cpus)))})")
        run_id = cfg.run_id or secrets.token_hex(3)
        lab = cls(cfg, run_id)
        if not cfg.persistent:
            _install_teardown_hooks()
        t0 = time.perf_counter()
        state = {
            "run_id": run_id,
            "owner_pid": None if cfg.persistent else lab.owner_pid,
            "owner_start": None if cfg.persistent else cleanup.proc_start_time(lab.owner_pid),
            "persistent": cfg.persistent,
            "created": time.time(),
            "namespaces": [lab.tg_ns, lab.dut_ns],
            "config": asdict(cfg) | {"run_id": run_id},
        }
        cleanup.write_state(state)      # before anything exists: crashes stay detectable
        if not cfg.persistent:
            _LIVE[run_id] = lab
        try:
            lab._build()
        except BaseException:
            lab.down()
            raise
        if cfg.kernel_tuning and cfg.cpu_latency_us is not None and not cfg.persistent:
            lab._hold_cpu_latency(cfg.cpu_latency_us)
        if cfg.kernel_tuning and cfg.napi_rt_priority > 0 and cfg.lift_rt_throttling:
            with cleanup.rt_lock():
                lab.rt_throttling = rt_throttling.lift(state, cleanup.other_states(run_id),
                                                       cleanup.update_state)
        lab.timings["total"] = time.perf_counter() - t0
        return lab

    def _hold_cpu_latency(self, us: int) -> None:
        """Ask the idle governor for wake-ups within ``us`` while the lab is up.

        Measured on these VMs (linux router, 64 kpps, 64 B): a DUT NAPI thread
        woken from a halted vCPU took ~100 us (p50 latency 80-100 us) and the
        dut0 ring overflowed ~0.3-0.8 % of the frames; with 0 us the idle vCPU
        polls, p50 fell to ~40 us and the drops to 0-0.02 %. The request lives
        as long as the file is open, so it ends with this process, even on a crash.
        """
        try:
            fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
            os.write(fd, us.to_bytes(4, sys.byteorder, signed=True))
        except OSError as e:
            self._pm_qos_error = f"/dev/cpu_dma_latency: {e.strerror}"
            return
        self._pm_qos_fd = fd

    @classmethod
    def attach(cls, run_id: str) -> "Lab":
        """A handle on an existing lab (e.g. made by `fwdbench lab up`); does not own it."""
        st = cleanup.read_state(run_id)
        if st is None or st.get("corrupt"):
            raise LabError(f"no lab with run id {run_id!r} (see `fwdbench lab status`)")
        cfgd = dict(st.get("config") or {})
        lab = cls(LabConfig(**cfgd), run_id)
        lab.owner_pid = -1          # never torn down by this process's atexit
        lab._made_ns = [lab.tg_ns, lab.dut_ns]
        if lab.cfg.kernel_tuning:   # a process that stopped mid-way may have left them inline
            threaded = lab.tg_exec.read_sysfs(f"/sys/class/net/{lab.ports[0].tg.ifname}/threaded")
            lab.tg_rx = "inline" if threaded == "0" else "napi"
        return lab

    def _build(self) -> None:
        tg, dut = self.tg_exec, self.dut_exec
        host = Executor(None)
        t = time.perf_counter()
        for ns in (self.tg_ns, self.dut_ns):
            if os.path.exists(f"/run/netns/{ns}"):
                raise LabError(f"netns {ns} already exists but has no lab of ours; "
                               f"remove it by hand (`ip netns del {ns}`)")
            host.run(["ip", "netns", "add", ns])
            self._made_ns.append(ns)
        self.timings["netns"] = time.perf_counter() - t
        t = time.perf_counter()
        sysctls = dict(NS_SYSCTLS)
        v6off = 0 if self.cfg.ipv6 else 1
        sysctls |= {"net.ipv6.conf.all.disable_ipv6": v6off,
                    "net.ipv6.conf.default.disable_ipv6": v6off}
        tg.sysctl_set(sysctls)
        dut.sysctl_set(sysctls)
        self.timings["sysctl"] = time.perf_counter() - t
        t = time.perf_counter()
        lines = ["link set lo up"]
        for p in self.ports:
            lines.append(f"link add {p.tg.ifname} address {p.tg.mac} mtu {self.cfg.mtu} type veth "
                         f"peer name {p.dut.ifname} address {p.dut.mac} mtu {self.cfg.mtu} "
                         f"netns {self.dut_ns}")
        for p in self.ports:
            lines += self._port_lines(p.tg, p.dut)
        tg.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n")
        self.dut_baseline()
        self.timings["links"] = time.perf_counter() - t
        if self.cfg.kernel_tuning:
            t = time.perf_counter()
            rt = self.cfg.napi_rt_priority
            self.tuning = tune_rx(dut, [p.dut.ifname for p in self.ports], self.dut_cpu, rt)
            self.tuning += tune_rx(tg, [p.tg.ifname for p in self.ports], self.gen_cpu, rt)
            self.timings["tuning"] = time.perf_counter() - t

    def _port_lines(self, me, peer) -> list[str]:
        """ip -batch lines: addresses, static neighbour of the peer, link up."""
        out = [f"link set {me.ifname} up",
               f"address replace {me.cidr4} dev {me.ifname}",
               f"neigh replace {peer.ip4} lladdr {peer.mac} dev {me.ifname} nud permanent"]
        if self.cfg.ipv6:
            out += [f"address replace {me.cidr6} dev {me.ifname} nodad",
                    f"neigh replace {peer.ip6} lladdr {peer.mac} dev {me.ifname} nud permanent"]
        return out

    def set_dut_ingress(self, mode: str, qsize: int = 0) -> None:
        """How the DUT ports receive: ``napi`` (threaded NAPI on the DUT CPU, the
        lab as built), ``cpumap`` (a ``qsize``-frame queue in front of the DUT
        CPU, for kernel data planes) or ``afxdp`` (threaded NAPI on the
        generator's CPU, for DUTs that receive through AF_XDP sockets, whose
        RX rings are then the queue); see lab/ingress.py. A no-op without
        kernel tuning. On failure the ports are put back to ``napi``."""
        if mode not in ingress.MODES:
            raise LabError(f"DUT ingress {mode!r}: must be one of {', '.join(ingress.MODES)}")
        if not self.cfg.kernel_tuning:
            return
        queue = 0 if mode == "napi" else qsize
        if mode == self.dut_ingress and queue == self.dut_queue:
            return
        ifnames = [p.dut.ifname for p in self.ports]
        self.dut_queue = queue
        try:
            self._detach_queues()
            if mode != "cpumap":
                self._napi_on(ifnames, mode)
                return
            self.tuning = [t for t in self.tuning if t.ifname not in ifnames]
            self.dut_ingress = "cpumap"
            for ifn in ifnames:
                self.ingress.append(ingress.attach(self.dut_exec, ifn, self.dut_cpu, qsize,
                                                   self.cfg.napi_rt_priority))
        except Exception:
            self._detach_queues()
            self._napi_on(ifnames)
            self.dut_queue = 0
            raise

    def set_tg_rx(self, mode: str) -> None:
        """How the generator's ports receive: ``napi`` (threaded NAPI on the
        generator CPU, the lab as built) or ``inline`` (NAPI in the softirq of
        the CPU that sends into the port, i.e. the DUT's).

        ``inline`` is for latency trials without background load: a frame's
        RX timestamp is then taken as the DUT transmits it, as a NIC stamps
        it on arrival, instead of after the generator CPU's NAPI thread is
        woken (4 us when that CPU idles, 19 us p50 when fwdgen runs there,
        measured with sched_waking -> sched_switch). The little RX work of a
        latency stream then runs on the DUT CPU. A no-op without kernel tuning.
        """
        if mode not in ("napi", "inline"):
            raise LabError(f"generator RX {mode!r}: must be napi or inline")
        if not self.cfg.kernel_tuning or mode == self.tg_rx:
            return
        ifnames = [p.tg.ifname for p in self.ports]
        self.tuning = [t for t in self.tuning if t.ifname not in ifnames]
        if mode == "inline":
            self.tg_exec.write_sysfs([f"/sys/class/net/{ifn}/threaded" for ifn in ifnames], "0")
        else:
            self.tuning += tune_rx(self.tg_exec, ifnames, self.gen_cpu, self.cfg.napi_rt_priority)
        self.tg_rx = mode

    def _detach_queues(self) -> None:
        for q in self.ingress:
            ingress.detach(self.dut_exec, q.ifname)
        self.ingress = []

    def _napi_on(self, ifnames: list[str], mode: str = "napi") -> None:
        """Threaded NAPI on the DUT ports, pinned as ``mode`` (napi or afxdp) wants;
        after cpumap the kthreads are new, so they are looked up again."""
        self.dut_ingress = mode
        self.tuning = [t for t in self.tuning if t.ifname not in ifnames]
        self.tuning[:0] = tune_rx(self.dut_exec, ifnames, self.dut_napi_cpu(),
                                  self.cfg.napi_rt_priority)

    def repin_dut_napi(self) -> None:
        """Pin the DUT ports' NAPI threads again as the current ingress wants (after
        the ports went down and up, their threads are new)."""
        if self.cfg.kernel_tuning and self.dut_ingress in ("napi", "afxdp"):
            self._napi_on([p.dut.ifname for p in self.ports], self.dut_ingress)

    def dut_napi_cpu(self) -> int | None:
        """Where the DUT ports' NAPI runs: the DUT CPU (napi), the generator's
        (afxdp), or None (cpumap: in the sender's softirq)."""
        return {"napi": self.dut_cpu, "afxdp": self.gen_cpu}.get(self.dut_ingress)

    def tester_host(self) -> "TesterHost":
        """The generator side of this lab: the tg namespace, its ports, the generator CPU."""
        from ..traffic.base import TesterHost
        return TesterHost(name=f"netns {self.tg_ns}", exec=self.tg_exec, ports=tuple(self.ports),
                          cpus=(self.gen_cpu,), run_dir=cleanup.run_dir(self.run_id),
                          run_tag=cleanup.shm_prefix(self.run_id).rstrip("-"))

    def dut_host(self, link: str = "veth", memif_role: str = "slave",
                 memif_ring: int | None = None) -> "NetnsDutHost":
        """The DUT side of this lab as DUT drivers see it (fwdbench.dut.host):
        its veth ports, or (``link="memif"``) memif interfaces whose control
        sockets sit in the lab's directory, one per port, the generator their
        master (docs/lab.md, "memif")."""
        from .host import NetnsDutHost
        if link not in ("veth", "memif"):
            raise LabError(f"lab link {link!r}: must be veth or memif")
        return NetnsDutHost(self, memif=self.memif_links(memif_role, memif_ring)
                            if link == "memif" else None)

    def memif_links(self, dut_role: str = "slave", ring_size: int | None = None):
        """One memif control socket per port in the lab's directory (made here),
        named after the port of the side that listens on it: ``tg0.sock`` where the
        generator is the master, ``dut0.sock`` where the DUT is. A generator that
        outlives a scenario (TRex's server) may still listen on tg0.sock while the
        next DUT, a master, creates its own."""
        from ..dut.host import MemifLink
        d = os.path.join(cleanup.run_dir(self.run_id), "memif")
        os.makedirs(d, mode=0o700, exist_ok=True)
        return tuple(MemifLink(socket=os.path.join(
            d, f"{p.tg.ifname if dut_role == 'slave' else p.dut.ifname}.sock"), id=0,
            role=dut_role, ring_size=ring_size) for p in self.ports)

    def ingress_record(self) -> dict[str, Any]:
        """How the DUT ports receive now, as a scenario records it for the report."""
        return {"mode": self.dut_ingress, "queue": self.dut_queue,
                "napi_cpu": self.dut_napi_cpu()}

    def dut_baseline(self) -> None:
        """(Re)apply the lab's own config of dut0/dut1: addresses, static neighbours, up.

        Idempotent; DUT drivers call it in teardown to hand the lab back as built.
        """
        lines = ["link set lo up"]
        for p in self.ports:
            lines.append(f"link set {p.dut.ifname} nomaster")
            lines += self._port_lines(p.dut, p.tg)
        self.dut_exec.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n")

    def down(self) -> None:
        """Remove everything this lab made: processes in it, namespaces, state file.

        Idempotent; signals are held off while it runs so teardown is not cut short.
        """
        if self._down:
            return
        main = threading.current_thread() is threading.main_thread()
        sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        if main:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
        try:
            for ex in (self.tg_exec, self.dut_exec):
                for proc in ex.children:
                    if proc.poll() is None:
                        proc.kill()
                        try:
                            proc.wait(timeout=3)
                        except Exception:
                            pass
                ex.children.clear()
            cleanup.remove_lab(self.run_id, list(self._made_ns))
            if self._pm_qos_fd is not None:
                os.close(self._pm_qos_fd)
                self._pm_qos_fd = None
            self._down = True
            _LIVE.pop(self.run_id, None)
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    # --- observation -------------------------------------------------------------
    def _ns(self, ns: str) -> str:
        return {"tg": self.tg_ns, "dut": self.dut_ns}.get(ns, ns)

    def interface_counters(self, ns: str) -> dict[str, dict[str, int]]:
        """Cumulative counters of the lab interfaces in ``ns`` ("tg", "dut" or a name).

        ``{ifname: {rx_packets, rx_bytes, rx_dropped, rx_errors, rx_otherhost_dropped,
        rx_nohandler, tx_packets, tx_bytes, tx_dropped, tx_errors}}`` from IFLA_STATS64
        over netlink (~1 ms). ``rx_otherhost_dropped`` counts frames whose destination
        MAC was not the interface's (a generator writing the wrong peer MAC).
        """
        name = self._ns(ns)
        if name not in (self.tg_ns, self.dut_ns):
            raise LabError(f"{ns!r} is not a namespace of lab {self.run_id}")
        wanted = {p.tg.ifname if name == self.tg_ns else p.dut.ifname for p in self.ports}
        keys = ("rx_packets", "rx_bytes", "rx_dropped", "rx_errors", "rx_otherhost_dropped",
                "rx_nohandler", "tx_packets", "tx_bytes", "tx_dropped", "tx_errors")
        try:
            stats = link_stats(name)
        except OSError as e:
            raise LabError(f"interface counters of {name}: {e}") from None
        return {ifn: {k: st[k] for k in keys if k in st}
                for ifn, st in stats.items() if ifn in wanted}

    def describe(self) -> dict[str, Any]:
        uname = platform.uname()
        return {
            "testbed": "netns",
            "run_id": self.run_id,
            "namespaces": {"tg": self.tg_ns, "dut": self.dut_ns},
            "placement": {"gen_cpu": self.gen_cpu, "dut_cpu": self.dut_cpu,
                          "cpus_online": os.cpu_count(),
                          "cpu_model": _cpu_model(),
                          "shared_host": True},
            "kernel": {"release": uname.release, "version": uname.version,
                       "machine": uname.machine},
            "kernel_tuning": self.cfg.kernel_tuning,
            "napi_rt_priority": self.cfg.napi_rt_priority,
            "cpu_latency_us": (self.cfg.cpu_latency_us if self._pm_qos_fd is not None
                               else getattr(self, "_pm_qos_error", None)),
            "rt_throttling": self.rt_throttling,
            "tuning": [t.as_dict() | {"affinity_now": napi_affinity(t)} for t in self.tuning],
            "dut_ingress": self.dut_ingress,
            "dut_queue": self.dut_queue,
            "tg_rx": self.tg_rx,
            "ingress_queues": [q.as_dict() for q in self.ingress],
            "mtu": self.cfg.mtu,
            "ipv6": self.cfg.ipv6,
            "ports": [asdict(p) for p in self.ports],
            "setup_s": dict(self.timings),
        }


def online_cpus() -> set[int]:
    """CPUs the kernel has online (``/sys/devices/system/cpu/online``, e.g. "0-3,6")."""
    try:
        with open("/sys/devices/system/cpu/online") as f:
            text = f.read().strip()
        out: set[int] = set()
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
        return out
    except (OSError, ValueError):
        return set(range(os.cpu_count() or 1))


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
