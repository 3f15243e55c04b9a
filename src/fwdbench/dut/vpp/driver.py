"""``dut.type = "vpp"``: FD.io VPP on the DUT host, configured through its binary API.

Per scenario the driver writes a startup.conf (startup.py) into a directory
of its own on the DUT host, starts ``vpp`` there (in the lab's DUT
namespace) with its main thread, and workers if asked, on the DUT CPUs,
waits until the API answers, creates one VPP interface per DUT port
(``af_xdp``: AF_XDP sockets, copy mode on veth; ``af_packet``; ``dpdk``: the
dpdk plugin's ports, named in startup.conf: NICs bound to a DPDK driver by
PCI address, net_af_packet vdevs on kernel ports), names them as the ports
and gives them the ports' MACs, and configures the mode
(modes.py). Every trial reads VPP's interface and error counters from the
statistics segment (stats.py) and its per-node counters from ``show runtime``
(runtime.py; VPP's stats collector, parked, would stall the data path).
Teardown stops VPP (SIGTERM, then SIGKILL: af_xdp TX on veth has been seen
spinning until killed), removes its shared memory, sockets and directory,
detaches an XDP program it left on the ports and hands the ports back as the
testbed made them.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...errors import CampaignError, DutError
from ...validation import parse_params
from .. import register
from ..base import DutDriver
from . import modes
from .api import VppApi
from .install import VppInstall, find_vpp
from .process import VppProcess
from .runtime import NodeRuntime
from .startup import DpdkPorts, Startup, plugins_for

MAX_ROUTES = 1 << 20
PING_TIMEOUT_S = 5.0        # [s] a live VPP answers a control ping within this
RX_MODES = {"polling": 1, "interrupt": 2, "adaptive": 3}
#: [s] per route VPP needs after a memif link comes up (link_settle_s)
SETTLE_S_PER_ROUTE = 1e-6
AF_XDP_MODES = {"auto": 0, "copy": 1, "zero-copy": 2}
#: [B] one packet buffer with the dpdk plugin: 2048 B data, 128 B headroom, VPP's
#: and DPDK's headers (vlib_buffer_t, rte_mbuf, the mempool's), rounded up
BUFFER_ALLOC_BYTES = 2560


class VppParams(BaseModel):
    """Parameters of `dut.type = "vpp"` (campaign ``dut.params``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mode: Literal["router", "nat", "bridge", "xconnect"] = Field(
        "router", description="router: IPv4/IPv6 FIB; nat: router + nat44-ed; bridge: one "
                              "bridge domain; xconnect: L2 cross-connect")
    interface: Literal["af_xdp", "af_packet", "dpdk"] = Field(
        "af_xdp", description="how VPP opens the DUT ports: AF_XDP sockets (copy mode on "
                              "veth), AF_PACKET, or DPDK (its dpdk plugin: a NIC bound to "
                              "vfio-pci or uio where the ssh testbed's port is a PCI "
                              "address, else DPDK's net_af_packet on the kernel port)")
    af_xdp_mode: Literal["auto", "copy", "zero-copy"] = Field(
        "auto", description="AF_XDP copy or zero-copy (auto: zero-copy where the driver can)")
    workers: int = Field(0, ge=0, le=64, description="worker threads (0: the main thread "
                                                     "forwards, as the thesis's 'VPP main')")
    rx_mode: Literal["polling", "interrupt", "adaptive"] = Field(
        "polling", description="how VPP's input nodes wait for frames")
    rxq_size: int = Field(0, ge=0, le=16384, description="RX ring [descriptors] (0: VPP's default)")
    txq_size: int = Field(0, ge=0, le=16384, description="TX ring [descriptors] (0: VPP's default)")
    buffers: int = Field(16384, ge=4096, le=1 << 21, description="packet buffers per NUMA node")
    main_heap_mb: int = Field(0, ge=0, le=65536,
                              description="main heap [MiB] (0: sized for the FIB, 256 MiB + "
                                          "1.5 KiB per route)")
    page_size: Literal["4k", "2M"] = Field(
        "4k", description="page size of heap, buffers and stats (2M: hugepages must be free)")
    # 2 by default, as the linux DUT: both flow ranges, so replies and the reverse
    # direction of bidirectional profiles are routed too (linux.fib_layout)
    routes: int = Field(2, ge=1, le=MAX_ROUTES, description="IPv4 FIB size (router, nat)")
    routes6: int = Field(2, ge=1, le=MAX_ROUTES, description="IPv6 FIB size (router, nat)")
    learning: bool = Field(True, description="MAC learning (bridge)")
    nat_sessions: int = Field(65536, ge=1024, le=1 << 24,
                              description="nat44-ed sessions per thread (nat)")
    vpp_prefix: str | None = Field(None, description="directory holding bin/vpp (default: "
                                                     "FD.io's packages, then fwdbench's build)")

    def fib_routes(self) -> int:
        return self.routes + self.routes6 if self.mode in ("router", "nat") else 0

    def heap_bytes(self) -> int:
        if self.main_heap_mb:
            return self.main_heap_mb << 20
        # measured: 2^20 IPv4 routes need a main heap above 1 GiB
        return (256 << 20) + self.fib_routes() * 1536

    def stats_bytes(self) -> int:
        # every route's load-balance object has combined counters in the stats
        # segment, grown by doubling: 64 MiB ran out of memory at 2^21 routes
        return (64 << 20) + self.fib_routes() * 128


@register
class VppDut(DutDriver):
    name = "vpp"
    links = ("veth", "memif")
    modes = ("router", "nat", "bridge", "xconnect")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        self.p = VppParams.model_validate(params)
        # AF_XDP ports: the lab receives for VPP on the generator's CPU, into
        # its UMEM (lab/ingress.py, "afxdp"), as for vfwd and testpmd
        self.afxdp_rx = self.p.interface == "af_xdp"
        self.host = None
        self.install: VppInstall | None = None
        self.vpp: VppProcess | None = None
        self._startup: Startup | None = None
        self._dir: str | None = None
        self._sw_if: dict[str, int] = {}
        self._names: dict[str, str] = {}        # VPP interface name -> port name
        self._config: dict[str, Any] = {}
        self._version = ""
        self._cpus: list[int] = []
        self._warnings: list[str] = []
        self._revived = 0
        self._runtime = NodeRuntime()
        self._tsc_hz: float | None = None

    # ---- plan time ------------------------------------------------------------

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        p = parse_params(VppParams, params, where)
        only = {"routes": ("router", "nat"), "routes6": ("router", "nat"),
                "nat_sessions": ("nat",), "learning": ("bridge",)}
        for key, modes_ in only.items():
            if key in params and p.mode not in modes_:
                raise CampaignError(f"{where}.{key}: does not apply to mode {p.mode!r} "
                                    f"(only to {', '.join(modes_)})")
        if "af_xdp_mode" in params and p.interface != "af_xdp":
            raise CampaignError(f"{where}.af_xdp_mode: applies to interface 'af_xdp' only")
        # what does not apply is left out, so the normal form validates again
        skip = {k for k, m in only.items() if p.mode not in m}
        if p.interface != "af_xdp":
            skip.add("af_xdp_mode")
        return p.model_dump(mode="json", exclude=skip)

    @classmethod
    def fits_testbed(cls, params: dict[str, Any], dut_cpus: int | None, where: str) -> None:
        if dut_cpus is not None and params.get("workers", 0) > dut_cpus:
            raise CampaignError(f"{where}.workers: {params['workers']} workers but the testbed "
                                f"gives the DUT {dut_cpus} CPU(s); at most {dut_cpus} (0: the "
                                f"main thread forwards)")

    @classmethod
    def drives_dpdk_pci(cls, params: dict[str, Any]) -> bool:
        return params.get("interface") == "dpdk"

    def check(self, host=None) -> None:
        if host is not None and any(host.dpdk_pci) and self.p.interface == "dpdk":
            self._check_dpdk_memory(host)
        if host is not None and not host.exec.local:        # a DUT host over SSH
            from .install import find_vpp_on
            inst = find_vpp_on(host.exec, self.p.vpp_prefix)
            missing = host.exec.missing_tools(host.exec.tools_for("unix_request"))
            if missing:
                raise DutError(f"vpp: {', '.join(missing)} is missing on {host.name}, which "
                               f"carries VPP's API there (apt-get install "
                               f"{' '.join(missing)})")
        else:
            inst = find_vpp(self.p.vpp_prefix)
        need = plugins_for(self._interface(host), self.p.mode)
        missing = [n for n in need if not inst.has_plugin(n)]
        if missing:
            fix = ("; set dut.params.interface to af_xdp or af_packet, or add the dpdk plugin: "
                   "`make setup VPP_SRC=<vpp tarball>` builds it against Debian's DPDK, FD.io's "
                   "packages have it in vpp-plugin-dpdk" if "dpdk" in missing else "")
            raise DutError(f"vpp: the VPP in {inst.prefix} lacks the plugin(s) "
                           f"{', '.join(missing)} that interface {self._interface(host)!r} / mode "
                           f"{self.p.mode!r} need (plugins in {inst.plugin_dir or '?'}: "
                           f"{', '.join(inst.plugins) or 'none'}){fix}")
        if not inst.api_files():
            raise DutError(f"vpp: no API definitions (*.api.json) under {inst.api_dir}")
        try:
            import vpp_papi  # noqa: F401
        except ImportError:
            raise DutError("vpp: the Python package vpp-papi is missing "
                           "(pip install vpp-papi; `make setup` installs it)") from None
        self.install = inst

    def _check_dpdk_memory(self, host) -> None:
        """NICs bound to a DPDK driver: hugepages where DPDK DMAs to physical addresses
        (no IOMMU), and enough free ones for VPP's memory on them (dut/pci.py)."""
        fns = [fn for fn in host.dpdk_pci if fn is not None]
        pa = [fn for fn in fns if fn.needs_hugepages]
        if pa and self.p.page_size != "2M":
            fn = pa[0]
            why = "no IOMMU translates its DMA" if fn.driver == "vfio-pci" else \
                f"{fn.driver} has no IOMMU support"
            raise DutError(f"vpp: dut.params.page_size: {fn.address} on {host.name} is bound "
                           f"to {fn.driver} and {why}, so DPDK needs physical addresses, "
                           f"which only hugepages give: set page_size = \"2M\" and reserve "
                           f"hugepages there (docs/testbeds.md), or bind the NIC to vfio-pci "
                           f"with the IOMMU on (intel_iommu=on / amd_iommu=on)")
        if self.p.page_size != "2M":
            return
        from .. import pci
        need = pci.hugepages_for(self.dpdk_hugepage_bytes())
        free = pci.free_hugepages(host.exec, host.sysfs)
        if free is None or free < need:
            raise DutError(f"vpp: dut.params.page_size = \"2M\": VPP with DPDK ports needs "
                           f"about {need} free 2 MiB hugepages on {host.name}, it has "
                           f"{'no 2 MiB hugepage pool' if free is None else free}: there, "
                           f"`dpdk-hugepages.py -p 2M --reserve {need * 2}M` (or echo "
                           f"{need} to /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
                           f"); or lower dut.params.buffers / main_heap_mb")

    def dpdk_hugepage_bytes(self) -> int:
        """[B] VPP's memory on hugepages with page_size 2M and DPDK ports: main heap,
        stats segment, buffers (about 2.5 KiB each with DPDK's mbuf header, whole
        per page) and the 16 MiB the dpdk plugin preallocates for DPDK."""
        from .. import pci
        page = pci.HUGEPAGE_KB << 10
        per_page = page // BUFFER_ALLOC_BYTES
        buffers = -(-self.p.buffers // per_page) * page
        return self.p.heap_bytes() + self.p.stats_bytes() + buffers + pci.DPDK_PREALLOC

    def peer_macs(self, host=None) -> dict[str, str]:
        """The DUT port's MAC (router, nat: VPP's interfaces take it), the other
        tester port's in the L2 modes."""
        host = host or self.host
        if host is None:
            from ...lab import PORTS as ports
        else:
            ports = list(host.ports)[:2]
        if self.p.mode in ("bridge", "xconnect"):
            return {ports[0].tg.ifname: ports[1].tg.mac, ports[1].tg.ifname: ports[0].tg.mac}
        return {p.tg.ifname: p.dut.mac for p in ports}

    @property
    def _api(self) -> VppApi | None:
        return self.vpp.api if self.vpp is not None else None

    @property
    def _proc(self):
        return self.vpp.proc if self.vpp is not None else None

    def pids(self) -> list[int]:
        """VPP's process (main thread and workers): its CPU time is the DUT's."""
        pid = self.vpp.pid if self.vpp is not None else None
        return [pid] if pid is not None else []

    # ---- lifecycle ------------------------------------------------------------

    def setup(self, host) -> None:
        if self.host is not None:
            raise DutError("vpp: setup() called twice without teardown()")
        ports = list(host.ports)[:2]
        if len(ports) != 2:
            raise DutError(f"vpp: the DUT host has {len(ports)} ports, the VPP DUT needs 2")
        if self.p.workers > len(host.cpus):
            raise DutError(f"vpp: workers = {self.p.workers} but the testbed gives the DUT "
                           f"{len(host.cpus)} CPU(s) ({list(host.cpus)}); lower workers")
        if self.install is None:
            self.check(host)
        self.host = host
        try:
            self._start(host)
            self._configure(host, ports)
        except BaseException as e:
            tail = self.log_tail() if not str(e).count("\n-- ") else ""
            try:
                self.teardown()
            except Exception as te:
                e.add_note(f"(undoing the partial setup also failed: {te})")
            if isinstance(e, DutError) and tail:
                raise DutError(f"{e}\n{tail}") from None
            raise

    def _start(self, host) -> None:
        inst = self.install
        assert inst is not None
        cpus = list(host.cpus)
        workers = tuple(cpus[:self.p.workers])
        self._cpus = sorted({cpus[0], *workers})
        self._dir = host.make_dir("vpp")
        # unique per run and scenario: the lab removes fb-<run id>-* after a crash
        shm = f"{host.run_tag}-vpp{self._dir[-6:]}".replace("_", "x")
        self._startup = Startup(
            run_dir=self._dir, shm_prefix=shm, plugin_dir=inst.plugin_dir,
            plugins=plugins_for(self._interface(host), self.p.mode), main_core=cpus[0],
            workers=workers, main_heap=self.p.heap_bytes(), buffers=self.p.buffers,
            page_size=self.p.page_size, stats_size=self.p.stats_bytes(),
            dpdk=self._dpdk_ports(host, shm),
            fifo_priority=host.rx().rt_priority if host.memif else 0)
        self.vpp = VppProcess.start(inst, self._startup, host.exec)
        self._runtime = NodeRuntime()       # this VPP's: its counters start at 0
        self._version = self.vpp.version
        self._tsc_hz = _base_frequency(self._api.cli("show cpu"))

    def _dpdk_ports(self, host, file_prefix: str) -> DpdkPorts | None:
        """The dpdk section: a NIC bound to a DPDK driver by its PCI address, named as
        the port (``dev <pci> { name dut0 }``); a net_af_packet vdev on each kernel
        port. (net_af_xdp was tried: its ports come up but receive nothing, every
        frame counted as rx_missed, with VPP's buffers as its mempool; not offered.)"""
        if self._interface(host) != "dpdk":
            return None
        vdevs, pci = [], []
        for i, p in enumerate(list(host.ports)[:2]):
            fn = host.dpdk_port(i)
            if fn is not None:
                pci.append((fn.address, p.dut.ifname))
            else:
                vdevs.append(f"net_af_packet{i},iface={p.dut.ifname}")
        return DpdkPorts(file_prefix=file_prefix, vdevs=tuple(vdevs), pci=tuple(pci),
                         hugepages=self.p.page_size != "4k", rx_desc=self.p.rxq_size,
                         tx_desc=self.p.txq_size)

    def _configure(self, host, ports) -> None:
        api = self._api
        assert api is not None
        pci = [i for i in range(len(ports)) if host.dpdk_port(i) is not None]
        if not host.memif:
            # the kernel keeps off the DUT ports' traffic: VPP owns them now
            for i, p in enumerate(ports):
                if i not in pci:
                    host.exec.run(["ip", "addr", "flush", "dev", p.dut.ifname])
        if self._interface(host) == "dpdk":
            self._sw_if = _dpdk_interfaces(api, ports, pci)
        for i, p in enumerate(ports):
            if self._interface(host) != "dpdk":
                self._sw_if[p.dut.ifname] = self._create_interface(
                    api, p, host.memif[i] if host.memif else None, i + 1)
        # VPP's names for them (host-dut0, memif1/0): counters use the ports' names
        self._names = {d.interface_name: port for d in api.call("sw_interface_dump")
                       for port, sw in self._sw_if.items() if d.sw_if_index == sw}
        macs = {d.sw_if_index: str(d.l2_address).lower() for d in api.call("sw_interface_dump")}
        for p in ports:
            i = self._sw_if[p.dut.ifname]
            # a vdev took the kernel port's MAC; a NIC takes the testbed's dut_mac
            if macs.get(i) != p.dut.mac.lower():
                api.call("sw_interface_set_mac_address", sw_if_index=i, mac_address=p.dut.mac)
            api.call("sw_interface_set_flags", sw_if_index=i, flags=modes.ADMIN_UP)
            api.call("sw_interface_set_rx_mode", sw_if_index=i, queue_id_valid=False,
                     queue_id=0, mode=RX_MODES[self.p.rx_mode])
        cfg: dict[str, Any] = {}
        if self.p.mode in ("router", "nat"):
            cfg["fib"] = modes.setup_router(api, ports, self._sw_if, self.p.model_dump(),
                                            host.ipv6)
        if self.p.mode == "nat":
            cfg["nat"] = modes.setup_nat(api, ports, self._sw_if, self.p.model_dump())
        if self.p.mode == "bridge":
            cfg["bridge"] = modes.setup_bridge(api, ports, self._sw_if, self.p.learning)
        if self.p.mode == "xconnect":
            cfg["xconnect"] = modes.setup_xconnect(api, ports, self._sw_if)
        self._config = cfg

    def _interface(self, host) -> str:
        """memif on a memif link, else the ``interface`` param."""
        return "memif" if host is not None and host.memif else self.p.interface

    def _create_interface(self, api: VppApi, p, memif, socket_id: int) -> int:
        ifname = p.dut.ifname
        if memif is not None:
            # the slave: zero copy (VPP's buffers are the shared memory), as vfwd;
            # it reconnects to each trial's generator (the master) within 3 s
            api.call("memif_socket_filename_add_del_v2", is_add=True, socket_id=socket_id,
                     socket_filename=memif.socket)
            r = api.call("memif_create_v2", role=1, mode=0, rx_queues=1, tx_queues=1,
                         id=memif.id, socket_id=socket_id,
                         ring_size=self.p.rxq_size or memif.ring_size or 0,
                         buffer_size=0, no_zero_copy=False, use_dma=False, hw_addr=p.dut.mac,
                         secret="")
            return r.sw_if_index
        if self.p.interface == "af_xdp":
            r = api.call("af_xdp_create_v3", host_if=ifname, name=ifname, rxq_num=1,
                         rxq_size=self.p.rxq_size, txq_size=self.p.txq_size,
                         mode=AF_XDP_MODES[self.p.af_xdp_mode], flags=0, prog="", netns="")
            return r.sw_if_index
        r = api.call("af_packet_create_v3", mode=1, hw_addr=p.dut.mac, use_random_hw_addr=False,
                     host_if_name=ifname, rx_frame_size=0, tx_frame_size=0,
                     rx_frames_per_block=self.p.rxq_size, tx_frames_per_block=self.p.txq_size,
                     flags=1, num_rx_queues=1, num_tx_queues=1)
        return r.sw_if_index

    # ---- per trial --------------------------------------------------------------

    def counters(self) -> dict[str, int]:
        """Interface, error (stats.py) and per-node counters (runtime.py), cumulative."""
        if self.vpp is None or self.vpp.stats is None:
            raise DutError("vpp: counters() before setup()")
        self._check_alive()
        raw = {**self.vpp.stats.counters(), **self._runtime.read(self.vpp.api)}
        return {**{self._port_key(k): v for k, v in raw.items()}, "vpp_revived": self._revived}

    def _port_key(self, key: str) -> str:
        name, dot, field = key.rpartition(".")
        port = self._names.get(name)
        return f"{port}.{field}" if port and dot else key

    def _check_alive(self) -> None:
        """VPP runs and answers; one that spins in af_xdp's transmit is revived."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise DutError(f"vpp: exited with {proc.returncode if proc else '?'} during the run"
                           + (f"\n{self.log_tail()}" if self.log_tail() else ""))
        if self._answers(PING_TIMEOUT_S):
            return
        # VPP's af_xdp TX retries sendmsg() for as long as the kernel says EAGAIN;
        # a veth whose queue stopped (backpressure, kernel 6.14+) says so for ever,
        # and VPP's main thread never returns to its API (seen at 1.5 Mpps offered
        # in the lab). A port going down ends the loop (ENETDOWN); VPP then forwards
        # again (measured: 77 of 100 kpps in the next trial).
        for down_s in (0.2, 1.0, 2.0) if self._interface(self.host) == "af_xdp" else ():
            self.host.bounce_ports(down_s)
            if self._answers(PING_TIMEOUT_S):
                self._revived += 1
                self._warnings.append(
                    "VPP stopped answering (its af_xdp transmit spun on EAGAIN from a "
                    "stopped veth queue); the DUT ports were taken down and up to end it: "
                    "the frames it did not forward meanwhile count as this trial's loss")
                return
        raise DutError("vpp: its API does not answer (wedged)"
                       + (f"\n{self.log_tail()}" if self.log_tail() else ""))

    def _answers(self, timeout: float) -> bool:
        try:
            self._api.call("control_ping", _timeout=timeout)
            return True
        except DutError:
            return False

    def link_settle_s(self) -> float:
        """When a memif link comes up (each trial: the generator connects anew) VPP's
        main thread re-resolves every route through it in one go before it polls
        again. Measured 2026-11-26 on the lab (frames lost at 1 Mpps without warm-up):
        80 ms at 2^18 routes, 350 ms at 2^20, 0.33 us per route; three times that."""
        if self.host is None or not self.host.memif:
            return 0.0
        return self.p.fib_routes() * SETTLE_S_PER_ROUTE

    def link_settle_why(self) -> str:
        return f"VPP re-resolves its {self.p.fib_routes()} routes"

    def take_warnings(self) -> list[str]:
        out, self._warnings = self._warnings, []
        return out

    def log_tail(self) -> str:
        """The last lines of VPP's output and log, for error messages."""
        return self.vpp.log_tail() if self.vpp is not None else ""

    # ---- teardown --------------------------------------------------------------

    def teardown(self) -> None:
        host = self.host
        if host is None:
            return
        errors: list[str] = []
        if self.vpp is not None:
            errors += self.vpp.stop()
            self.vpp = None
        if self._dir:
            host.remove_dir(self._dir)
            self._dir = None
        for p in host.kernel_ports()[:2] if not host.memif else ():
            # an XDP program VPP left behind
            host.exec.run(["ip", "link", "set", "dev", p.dut.ifname, "xdp", "off"], check=False)
        try:
            host.restore_ports()
        except Exception as e:
            errors.append(f"ports: {e}")
        self.host = None
        self._sw_if = {}
        if errors:
            raise DutError("vpp teardown: " + "; ".join(errors))

    def describe(self) -> dict[str, Any]:
        inst = self.install
        d: dict[str, Any] = {
            "dut": "vpp",
            **self.p.model_dump(mode="json"),
            "version": self._version,
            "prefix": inst.prefix if inst else None,
            "build": inst.version if inst else None,
            "cpus": self._cpus,
            "main_core": self._startup.main_core if self._startup else None,
            "worker_cpus": list(self._startup.workers) if self._startup else [],
            "peer_macs": self.peer_macs(),
            "interfaces": dict(self._sw_if),
            # the clock of VPP's per-node counters (for ns per packet in the report)
            "tsc_hz": self._tsc_hz,
        }
        if self._startup is not None:
            d["startup_conf"] = self._startup.render()
        d.update(self._config)
        return d


def _dpdk_interfaces(api: VppApi, ports, pci: list[int] = ()) -> dict[str, int]:
    """The sw_if_index of each port's DPDK interface. A NIC (port index in
    ``pci``) carries the port's name (startup.conf names it). VPP names a vdev's
    interface by its link speed and DPDK port number (Ethernet0, ...), so a
    vdev port is found by the MAC its driver took from the kernel port."""
    dump = list(api.call("sw_interface_dump"))
    out = {}
    for n, p in enumerate(ports):
        if n in pci:
            hits = [d.sw_if_index for d in dump if d.interface_name == p.dut.ifname]
            if len(hits) != 1:
                seen = ", ".join(d.interface_name for d in dump)
                raise DutError(f"vpp: no DPDK interface {p.dut.ifname} for the NIC of port "
                               f"{n} (VPP's interfaces: {seen}): see VPP's log for why DPDK "
                               f"did not take it")
            out[p.dut.ifname] = hits[0]
            continue
        hits = [d.sw_if_index for d in dump
                if str(d.l2_address).lower() == p.dut.mac.lower() and d.sw_if_index != 0]
        if len(hits) != 1:
            seen = ", ".join(f"{d.interface_name} ({d.l2_address})" for d in dump)
            raise DutError(f"vpp: {len(hits)} DPDK interfaces carry {p.dut.ifname}'s MAC "
                           f"{p.dut.mac}, want 1 (VPP's interfaces: {seen})")
        out[p.dut.ifname] = hits[0]
    return out


def _base_frequency(show_cpu: str) -> float | None:
    """VPP's clock rate [Hz] from ``show cpu`` ("Base frequency: 2.3000 GHz"): the
    clock its per-node counters count in. Parsed from the CLI because no API
    message reports it."""
    import re
    m = re.search(r"Base frequency:\s*([0-9.]+)\s*GHz", show_cpu)
    return float(m.group(1)) * 1e9 if m else None
