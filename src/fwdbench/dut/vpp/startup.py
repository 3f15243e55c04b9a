"""VPP's startup.conf for one scenario.

Everything VPP creates lives in the scenario's own directory (``runtime-dir``:
the CLI, API and stats sockets, the log, the pid file) or in shared memory
named after the run (``api-segment prefix``), so runs never collide and a
crashed run's leftovers are found by name. No hugepages are needed: the main
heap, the buffers and the stats segment use 4 KiB pages unless the scenario
asks for hugepages (``page_size``).

DPDK ports (``dpdk``): a ``dpdk`` section naming the devices, PCI functions
of real NICs (``dev <address> { name <port> }``, VPP's interface then carries
the port's name) or EAL vdevs on kernel ports (``vdev net_af_packet0,iface=dut0``),
with ``no-pci`` when there are none. With 4 KiB pages DPDK runs ``--no-huge``
and ``no-shconf`` (VPP's buffers are its own, registered with DPDK; vdevs do
no DMA); with hugepages VPP passes ``--in-memory`` itself. The EAL's
``file-prefix`` is the run's shared-memory prefix, so the runtime directory it
makes (/var/run/dpdk/<prefix>) is found by name after a crash.
"""
from __future__ import annotations

from dataclasses import dataclass

#: plugins every scenario loads, besides the ones its interfaces and mode need
BASE_PLUGINS = ("ping",)
#: plugin of each interface kind
IFACE_PLUGINS = {"af_xdp": "af_xdp", "af_packet": "af_packet", "memif": "memif",
                 "dpdk": "dpdk"}
DPDK_RUN_DIR = "/var/run/dpdk"


@dataclass(frozen=True)
class DpdkPorts:
    """startup.conf's ``dpdk`` section: the DUT ports as DPDK devices."""
    file_prefix: str
    vdevs: tuple[str, ...] = ()                 # EAL --vdev arguments, in port order
    pci: tuple[tuple[str, str], ...] = ()       # (PCI address, VPP interface name)
    hugepages: bool = False
    rx_desc: int = 0                            # 0: the PMD's default
    tx_desc: int = 0

    @property
    def run_dir(self) -> str:
        return f"{DPDK_RUN_DIR}/{self.file_prefix}"

    def render(self) -> str:
        lines = [f"file-prefix {self.file_prefix}"]
        if not self.hugepages:
            lines += ["no-hugetlb", "no-shconf"]
        if not self.pci:
            lines.append("no-pci")
        lines += [f"vdev {v}" for v in self.vdevs]
        lines += [f"dev {addr} {{ name {name} }}" for addr, name in self.pci]
        desc = " ".join(f"{k} {v}" for k, v in (("num-rx-desc", self.rx_desc),
                                                 ("num-tx-desc", self.tx_desc)) if v)
        if desc:
            lines.append(f"dev default {{ {desc} }}")
        return "dpdk {\n" + "".join(f"  {ln}\n" for ln in lines) + "}\n"
#: plugins of each mode
MODE_PLUGINS = {"nat": ("nat",)}


@dataclass(frozen=True)
class Startup:
    """What startup.conf says (sizes in bytes, counts in buffers)."""
    run_dir: str
    shm_prefix: str
    plugin_dir: str
    plugins: tuple[str, ...]
    main_core: int
    workers: tuple[int, ...]          # CPUs of the worker threads (empty: main thread only)
    main_heap: int
    buffers: int
    page_size: str = "4k"             # "4k" or "2M" (hugepages)
    stats_size: int = 64 << 20
    buffer_data_size: int = 2048
    #: [s] between the passes of VPP's stats collector: parked (a pass at start,
    #: then once a day), since each pass stalls the main thread for ms
    #: (runtime.py); the counters the driver reads do not need it
    stats_interval: float = 86400.0
    dpdk: DpdkPorts | None = None
    #: SCHED_FIFO priority of VPP's threads (0: normal scheduling): on the lab's
    #: memif link the polling data plane runs at the NAPI threads' priority
    #: (dut.host.PortRx.rt_priority)
    fifo_priority: int = 0

    @property
    def cli_socket(self) -> str:
        return f"{self.run_dir}/cli.sock"

    @property
    def api_socket(self) -> str:
        return f"{self.run_dir}/api.sock"

    @property
    def stats_socket(self) -> str:
        return f"{self.run_dir}/stats.sock"

    @property
    def log(self) -> str:
        return f"{self.run_dir}/vpp.log"

    def render(self) -> str:
        cpu = f"main-core {self.main_core}"
        if self.workers:
            cpu += f"\n  corelist-workers {','.join(map(str, self.workers))}"
        if self.fifo_priority:
            cpu += f"\n  scheduler-policy fifo\n  scheduler-priority {self.fifo_priority}"
        plugins = "\n".join(f"  plugin {p}_plugin.so {{ enable }}" for p in self.plugins)
        return f"""# written by fwdbench's vpp driver
unix {{
  nodaemon
  nosyslog
  nocolor
  runtime-dir {self.run_dir}
  cli-listen {self.cli_socket}
  log {self.log}
  pidfile {self.run_dir}/vpp.pid
}}
api-segment {{ prefix {self.shm_prefix} }}
socksvr {{ socket-name {self.api_socket} }}
statseg {{
  socket-name {self.stats_socket}
  size {_mb(self.stats_size)}
  page-size {self.page_size}
  update-interval {self.stats_interval:g}
}}
memory {{
  main-heap-size {_mb(self.main_heap)}
  main-heap-page-size {self.page_size}
}}
buffers {{
  buffers-per-numa {self.buffers}
  default data-size {self.buffer_data_size}
  page-size {self.page_size}
}}
cpu {{
  {cpu}
}}
plugins {{
  path {self.plugin_dir}
  plugin default {{ disable }}
{plugins}
}}
""" + (self.dpdk.render() if self.dpdk is not None else "")


def _mb(n: int) -> str:
    return f"{max(1, n >> 20)}M"


def plugins_for(interface: str, mode: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*BASE_PLUGINS, IFACE_PLUGINS[interface],
                                *MODE_PLUGINS.get(mode, ()))))
