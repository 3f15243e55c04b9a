"""The lab's fixed addressing plan (design.md, "The local lab").

Every lab uses the same names, MACs and addresses; labs are told apart by
their namespaces only, so the generator can write peer MACs directly.
Only RFC 2544 / RFC 5180 benchmarking ranges are used.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """One end of a lab veth."""
    ifname: str
    mac: str
    ip4: str            # address without prefix length
    ip6: str
    plen4: int = 24     # [bits]
    plen6: int = 64     # [bits]

    @property
    def cidr4(self) -> str:
        return f"{self.ip4}/{self.plen4}"

    @property
    def cidr6(self) -> str:
        return f"{self.ip6}/{self.plen6}"


@dataclass(frozen=True)
class PortPair:
    """A tg<i> <== veth ==> dut<i> link and the flow ranges behind tg<i>."""
    index: int
    tg: Endpoint
    dut: Endpoint
    net4: str           # link network
    net6: str
    flows4: str         # addresses the generator uses behind tg<i>
    flows6: str

    # flat views (tg_ifname, dut_mac, ...) for code that wants one level
    tg_ifname = property(lambda self: self.tg.ifname)
    tg_mac = property(lambda self: self.tg.mac)
    tg_ip4 = property(lambda self: self.tg.ip4)
    tg_ip6 = property(lambda self: self.tg.ip6)
    dut_ifname = property(lambda self: self.dut.ifname)
    dut_mac = property(lambda self: self.dut.mac)
    dut_ip4 = property(lambda self: self.dut.ip4)
    dut_ip6 = property(lambda self: self.dut.ip6)


PORTS: tuple[PortPair, PortPair] = (
    PortPair(
        index=0,
        tg=Endpoint("tg0", "02:fb:00:00:00:01", "198.18.0.1", "2001:2::1"),
        dut=Endpoint("dut0", "02:fb:00:00:01:01", "198.18.0.2", "2001:2::2"),
        net4="198.18.0.0/24", net6="2001:2::/64",
        flows4="198.18.128.0/17", flows6="2001:2:0:10::/64",
    ),
    PortPair(
        index=1,
        tg=Endpoint("tg1", "02:fb:00:00:00:02", "198.19.0.1", "2001:2:0:1::1"),
        dut=Endpoint("dut1", "02:fb:00:00:01:02", "198.19.0.2", "2001:2:0:1::2"),
        net4="198.19.0.0/24", net6="2001:2:0:1::/64",
        flows4="198.19.128.0/17", flows6="2001:2:0:11::/64",
    ),
)

#: flow ranges per family: (behind tg0, behind tg1)
FLOW_NETS: dict[str, tuple[str, str]] = {
    "ip4": (PORTS[0].flows4, PORTS[1].flows4),
    "ip6": (PORTS[0].flows6, PORTS[1].flows6),
}
#: MAC of the DUT's bridge device in `linux` bridge mode
BRIDGE_MAC = "02:fb:00:00:01:ff"
#: the only ranges lab addresses come from
BENCH_NET4 = "198.18.0.0/15"
BENCH_NET6 = "2001:2::/48"


def tg_ns(run_id: str) -> str:
    return f"fb-{run_id}-tg"


def dut_ns(run_id: str) -> str:
    return f"fb-{run_id}-dut"
