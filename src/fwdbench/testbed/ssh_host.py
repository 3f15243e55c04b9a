"""The DUT host of the ``ssh`` testbed, as DUT drivers see it (dut/host.py).

Its executor runs on the remote host (remote/executor.py); its ports are the
campaign's (interface names, MACs read there when not given; or NICs bound to
a DPDK driver, ``dpdk_pci``, which have no kernel interface) with the lab's
addressing plan (lab/addressing.py), so every driver configures the same
addresses, neighbours and routes as on the netns lab. fwdbench manages no
receive tuning there (``rx()`` is ``nic``: the NIC's IRQs as the operator
set them; docs/testbeds.md). Directories for DUTs live in the run's
directory on the DUT host; fwdbench's programs in the versioned tools
directory (remote/tools.py).
"""
from __future__ import annotations

from typing import Any

from ..dut.host import DutHost, PortRx
from ..dut.pci import PciFunction
from ..lab.addressing import PortPair
from ..remote.executor import RemoteExecutor

#: the counters interface_counters() reads from sysfs (the lab's, but rx_otherhost_dropped,
#: which only netlink has)
COUNTERS = ("rx_packets", "rx_bytes", "rx_dropped", "rx_errors", "rx_nohandler",
            "tx_packets", "tx_bytes", "tx_dropped", "tx_errors")


class SshDutHost(DutHost):
    kind = "ssh"

    def __init__(self, ex: RemoteExecutor, ports: tuple[PortPair, ...], cpus: tuple[int, ...],
                 ipv6: bool, run_tag: str, run_dir: str, tools: dict[str, str],
                 tools_dir: str, facts: dict[str, Any] | None = None,
                 dpdk_pci: tuple[PciFunction | None, ...] = (), sysfs: str = "/sys"):
        self.exec = ex
        self.name = ex.conn.name
        self.ports = ports
        self.cpus = cpus
        self.ipv6 = ipv6
        self.run_tag = run_tag
        self.run_dir = run_dir
        self._tools = dict(tools)
        self._tools_dir = tools_dir
        self._facts = facts or {}
        self.dpdk_pci = dpdk_pci
        self.sysfs = sysfs

    def rx(self) -> PortRx:
        return PortRx(ingress="nic")

    def interface_counters(self) -> dict[str, dict[str, int]]:
        paths = {f"/sys/class/net/{p.dut.ifname}/statistics/{k}": (p.dut.ifname, k)
                 for p in self.kernel_ports() for k in COUNTERS}
        got = self.exec.read_files(list(paths))
        out: dict[str, dict[str, int]] = {p.dut.ifname: {} for p in self.kernel_ports()}
        for path, (ifn, k) in paths.items():
            v = got.get(path)
            if v is not None and v.strip().isdigit():
                out[ifn][k] = int(v)
        return out

    def baseline_lines(self) -> list[str]:
        """ip -batch lines that hand the ports back as the testbed set them up: no
        master, up, the plan's addresses, static neighbours of the tester ports (the
        kernel ports: a NIC bound to a DPDK driver has none of these)."""
        out = []
        for p in self.kernel_ports():
            me, peer = p.dut, p.tg
            out += [f"link set dev {me.ifname} nomaster", f"link set dev {me.ifname} up",
                    f"address replace {me.cidr4} dev {me.ifname}",
                    f"neigh replace {peer.ip4} lladdr {peer.mac} dev {me.ifname} nud permanent"]
            if self.ipv6:
                out += [f"address replace {me.cidr6} dev {me.ifname} nodad",
                        f"neigh replace {peer.ip6} lladdr {peer.mac} dev {me.ifname} "
                        f"nud permanent"]
        return out

    def restore_ports(self) -> None:
        if not self.kernel_ports():
            return
        self.exec.run(["ip", "-batch", "-"], input="\n".join(self.baseline_lines()) + "\n")

    def tool(self, name: str) -> str:
        return self._tools.get(name) or f"{self._tools_dir}/{name}"

    def make_dir(self, prefix: str) -> str:
        return self.exec.run(["mktemp", "-d", "-p", self.run_dir, f"{prefix}-XXXXXX"]
                             ).stdout.strip()

    def remove_dir(self, path: str) -> None:
        if not path.startswith(self.run_dir + "/"):
            raise ValueError(f"{path!r} is not a directory of this run ({self.run_dir})")
        self.exec.run(["rm", "-rf", "--", path], check=False)

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), "rx": self.rx().as_dict(), **self._facts}
