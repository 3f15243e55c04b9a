"""The `linux` DUT driver: parameter validation, FIB layout, and (root) each mode
forwarding the right frames, checked on the wire with scapy in the tg netns."""
from __future__ import annotations

import ipaddress
import socket

import pytest

from fwdbench.dut import load_drivers
from fwdbench.dut.linux import FILLER4, FILLER6, MAX_ROUTES, LinuxDut, fib_layout
from fwdbench.errors import CampaignError
from fwdbench.lab import PORTS

P0, P1 = PORTS
MARK = b"fwdbench-test"


# --- validation (no root) ------------------------------------------------------
def test_registered():
    assert load_drivers()["linux"] is LinuxDut
    assert LinuxDut.modes == ("router", "nat", "bridge", "xconnect")


def test_validate_mode_error_names_field_and_choices():
    with pytest.raises(CampaignError) as e:
        LinuxDut.validate({"mode": "nat6"}, "duts[1].params")
    assert str(e.value) == "duts[1].params.mode: 'nat6' is not one of router, nat, bridge, xconnect"


@pytest.mark.parametrize("params, field, words", [
    ({"mode": "router", "routes": 0}, "routes", "1..1048576"),
    ({"mode": "router", "routes": MAX_ROUTES + 1}, "routes", "1..1048576"),
    ({"mode": "router", "routes": True}, "routes", "integer"),
    ({"mode": "router", "routes": "1M"}, "routes", "integer"),
    ({"mode": "nat", "routes6": 0}, "routes6", "1..1048576"),
    ({"mode": "nat", "nat": "dnat"}, "nat", "snat, masquerade"),
    ({"mode": "bridge", "learning": "yes"}, "learning", "true or false"),
    ({"mode": "router", "learning": False}, "learning", "only to bridge"),
    ({"mode": "xconnect", "routes": 4}, "routes", "only to router, nat"),
    ({"mode": "router", "fib": 4}, "fib", "allowed: mode, routes"),
])
def test_validate_errors_name_the_field(params, field, words):
    with pytest.raises(CampaignError) as e:
        LinuxDut.validate(params, "dut[0].params")
    msg = str(e.value)
    assert msg.startswith(f"dut[0].params.{field}: "), msg
    assert words in msg


def test_validate_normalises_with_defaults():
    assert LinuxDut.validate({}, "p") == {"mode": "router", "routes": 2, "routes6": 2}
    assert LinuxDut.validate({"mode": "nat", "routes": 8}, "p") == \
        {"mode": "nat", "routes": 8, "routes6": 2, "nat": "snat"}
    assert LinuxDut.validate({"mode": "bridge"}, "p") == {"mode": "bridge", "learning": True}
    assert LinuxDut.validate({"mode": "xconnect"}, "p") == {"mode": "xconnect"}
    norm = LinuxDut.validate({"mode": "bridge", "learning": False}, "p")
    assert LinuxDut.validate(norm, "p") == norm          # idempotent


def test_peer_macs_per_mode():
    assert LinuxDut({"mode": "router"}).peer_macs() == {"tg0": P0.dut.mac, "tg1": P1.dut.mac}
    assert LinuxDut({"mode": "bridge"}).peer_macs() == {"tg0": P1.tg.mac, "tg1": P0.tg.mac}
    assert LinuxDut({"mode": "xconnect"}).peer_macs() == {"tg0": P1.tg.mac, "tg1": P0.tg.mac}


# --- FIB layout (no root) -------------------------------------------------------
def _routes(n, fam):
    specs, desc = fib_layout(n, fam)
    out = []
    for s in specs:
        for net, plen in s.prefixes:
            out.append((ipaddress.ip_network((int.from_bytes(net, "big"), plen)), s.gateway, s.oif))
    return out, desc


@pytest.mark.parametrize("fam", [socket.AF_INET, socket.AF_INET6])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 65536 + 7])
def test_fib_layout_counts_coverage_and_next_hops(n, fam):
    routes, desc = _routes(n, fam)
    assert len(routes) == n == desc["routes"]
    nets = [r[0] for r in routes]
    assert len(set(nets)) == n                                   # distinct prefixes
    v6 = fam == socket.AF_INET6
    f0 = ipaddress.ip_network(P0.flows6 if v6 else P0.flows4)
    f1 = ipaddress.ip_network(P1.flows6 if v6 else P1.flows4)
    gw0, gw1 = (P0.tg.ip6, P1.tg.ip6) if v6 else (P0.tg.ip4, P1.tg.ip4)
    # every address behind tg1 is covered by routes via tg1 (and behind tg0 via tg0 when n >= 2)
    cover1 = [r for r in routes if r[0].subnet_of(f1)]
    assert sum(r[0].num_addresses for r in cover1) == f1.num_addresses
    assert all(r[1] == gw1 and r[2] == "dut1" for r in cover1)
    cover0 = [r for r in routes if r[0].subnet_of(f0)]
    if n >= 2:
        assert sum(r[0].num_addresses for r in cover0) == f0.num_addresses
        assert all(r[1] == gw0 and r[2] == "dut0" for r in cover0)
        assert len(cover0) == len(cover1)
    else:
        assert cover0 == []
    filler = [r for r in routes if not r[0].subnet_of(f0) and not r[0].subnet_of(f1)]
    fnet = FILLER6 if v6 else FILLER4
    assert all(r[0].subnet_of(fnet) for r in filler)
    if v6:
        assert all(r[0].subnet_of(ipaddress.ip_network("2001:2::/48")) for r in routes)


def test_fib_layout_max_size_fits():
    routes, desc = _routes(MAX_ROUTES, socket.AF_INET)
    assert len(routes) == MAX_ROUTES and len({r[0] for r in routes}) == MAX_ROUTES
    # the flow ranges are split into /32s at most: 2^15 per direction
    assert sum(1 for r in routes if r[0].prefixlen == 32) == 2 * (1 << 15)
    with pytest.raises(ValueError):
        fib_layout(MAX_ROUTES + 1, socket.AF_INET)


# --- on the wire (root) -------------------------------------------------------------
def _udp4(src, dst, sport=1024, dport=1024, smac=P0.tg.mac, dmac=P0.dut.mac, ttl=64):
    from scapy.all import IP, UDP, Ether, Raw
    return Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, ttl=ttl) / \
        UDP(sport=sport, dport=dport) / Raw(MARK)


def _udp6(src, dst, smac=P0.tg.mac, dmac=P0.dut.mac, hlim=64):
    from scapy.all import UDP, Ether, IPv6, Raw
    return Ether(src=smac, dst=dmac) / IPv6(src=src, dst=dst, hlim=hlim) / \
        UDP(sport=1024, dport=1024) / Raw(MARK)


def _ours(p) -> bool:
    from scapy.all import Raw
    return Raw in p and bytes(p[Raw].load).endswith(MARK)


def _ipv4_checksum_ok(pkt) -> bool:
    from scapy.all import IP
    raw = bytes(pkt[IP])[: pkt[IP].ihl * 4]
    s = sum(int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


@pytest.fixture
def dut(lab):
    made = []

    def make(**params):
        d = LinuxDut(params)
        d.check()
        d.setup(lab.dut_host())
        made.append(d)
        return d
    yield make
    for d in made:
        d.teardown()


@pytest.mark.root
def test_router_ipv4_forwards_with_ttl_checksum_and_macs(lab, dut, tg_wire):
    from scapy.all import IP, UDP, Ether
    d = dut(mode="router")
    tg_wire.listen("tg0", "tg1")
    before = d.counters()
    frames = [_udp4(f"198.18.128.{i}", f"198.19.{128 + i}.{i + 1}", ttl=64 - i) for i in range(5)]
    tg_wire.send("tg0", frames)
    got = tg_wire.sniff("tg1", count=5, timeout=2, match=_ours)
    assert len(got) == 5
    for sent, p in zip(frames, got):
        assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
        assert p[IP].ttl == sent[IP].ttl - 1
        assert p[IP].src == sent[IP].src and p[IP].dst == sent[IP].dst
        assert _ipv4_checksum_ok(p)
        assert p[UDP].sport == 1024 and p[UDP].dport == 1024
    after = d.counters()
    assert after["ip4.forwarded"] - before["ip4.forwarded"] == 5
    assert after["dut0.rx_packets"] - before["dut0.rx_packets"] >= 5
    assert after["dut1.tx_packets"] - before["dut1.tx_packets"] >= 5
    # the reverse direction (bidirectional profiles) is routed via tg0
    tg_wire.send("tg1", _udp4("198.19.128.1", "198.18.200.2", smac=P1.tg.mac, dmac=P1.dut.mac))
    back = tg_wire.sniff("tg0", count=1, timeout=2, match=_ours)
    assert len(back) == 1 and back[0][Ether].src == P0.dut.mac and back[0][Ether].dst == P0.tg.mac
    assert back[0][IP].ttl == 63


@pytest.mark.root
def test_router_ipv6_forwards_with_hop_limit_and_macs(lab, dut, tg_wire):
    from scapy.all import Ether, IPv6
    dut(mode="router")
    tg_wire.listen("tg1")
    frames = [_udp6("2001:2:0:10::5", f"2001:2:0:11::{i + 1}", hlim=10 + i) for i in range(3)]
    tg_wire.send("tg0", frames)
    got = tg_wire.sniff("tg1", count=3, timeout=2, match=_ours)
    assert len(got) == 3
    for sent, p in zip(frames, got):
        assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
        assert p[IPv6].hlim == sent[IPv6].hlim - 1
        assert p[IPv6].dst == sent[IPv6].dst


@pytest.mark.root
def test_router_large_fib_installs_covers_and_is_removed(lab, dut, tg_wire):
    from scapy.all import IP
    d = dut(mode="router", routes=4096, routes6=64)
    out = lab.dut_exec.run(["ip", "-4", "route", "show", "proto", "251"]).stdout
    assert out.count("\n") == 4096
    assert lab.dut_exec.run(["ip", "-6", "route", "show", "proto", "251"]).stdout.count("\n") == 64
    # destinations spread over the split flow range all arrive
    tg_wire.listen("tg1")
    dsts = [str(ipaddress.ip_address("198.19.128.0") + k * 4099) for k in range(8)]
    tg_wire.send("tg0", [_udp4("198.18.128.1", a) for a in dsts])
    got = tg_wire.sniff("tg1", count=8, timeout=2, match=_ours)
    assert sorted(p[IP].dst for p in got) == sorted(dsts)
    assert d.describe()["fib"]["ipv4"]["installed"] == 4096
    d.teardown()
    assert lab.dut_exec.run(["ip", "route", "show", "proto", "251"]).stdout == ""
    assert lab.dut_exec.sysctl_get(["net.ipv4.ip_forward"])["net.ipv4.ip_forward"] == "0"


@pytest.mark.root
@pytest.mark.parametrize("kind", ["snat", "masquerade"])
def test_nat_rewrites_source_and_return_path(lab, dut, tg_wire, kind):
    from scapy.all import IP, UDP, Ether
    d = dut(mode="nat", nat=kind)
    tg_wire.listen("tg0", "tg1")
    tg_wire.send("tg0", _udp4("198.18.128.7", "198.19.128.9", sport=5000, dport=6000))
    out = tg_wire.sniff("tg1", count=1, timeout=2, match=_ours)
    assert len(out) == 1
    p = out[0]
    assert p[IP].src == P1.dut.ip4 and p[IP].dst == "198.19.128.9"
    assert p[IP].ttl == 63 and _ipv4_checksum_ok(p)
    assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
    mapped = p[UDP].sport
    # the reply to the NAT address comes back de-NATed to the original source
    tg_wire.send("tg1", _udp4("198.19.128.9", P1.dut.ip4, sport=6000, dport=mapped,
                              smac=P1.tg.mac, dmac=P1.dut.mac))
    back = tg_wire.sniff("tg0", count=1, timeout=2, match=_ours)
    assert len(back) == 1
    r = back[0]
    assert (r[IP].src, r[IP].dst, r[UDP].sport, r[UDP].dport) == ("198.19.128.9", "198.18.128.7", 6000, 5000)
    assert r[Ether].src == P0.dut.mac and r[Ether].dst == P0.tg.mac and _ipv4_checksum_ok(r)
    c = d.counters()
    assert c["nat.packets"] >= 1 and c["conntrack.entries"] >= 1
    assert ("snat ip to" if kind == "snat" else "masquerade") in d.describe()["nft_ruleset"]
    d.teardown()
    ct = lab.dut_exec.sysctl_get(["net.netfilter.nf_conntrack_count"])
    assert ct["net.netfilter.nf_conntrack_count"] in ("0", None)


@pytest.mark.root
def test_nat_ipv6_rewrites_source(lab, dut, tg_wire):
    from scapy.all import IPv6
    dut(mode="nat")
    tg_wire.listen("tg1")
    tg_wire.send("tg0", _udp6("2001:2:0:10::7", "2001:2:0:11::9"))
    out = tg_wire.sniff("tg1", count=1, timeout=2, match=_ours)
    assert len(out) == 1 and out[0][IPv6].src == P1.dut.ip6 and out[0][IPv6].hlim == 63


def _fdb(lab) -> str:
    return lab.dut_exec.run(["bridge", "fdb", "show", "br", "fbbr0"]).stdout


@pytest.mark.root
@pytest.mark.parametrize("learning", [True, False])
def test_bridge_passes_frames_unchanged(lab, dut, tg_wire, learning):
    d = dut(mode="bridge", learning=learning)
    tg_wire.listen("tg0", "tg1")
    f1 = _udp4("198.18.128.1", "198.19.128.1", dmac=P1.tg.mac)
    f2 = _udp4("198.19.128.1", "198.18.128.1", smac=P1.tg.mac, dmac=P0.tg.mac)
    stranger = _udp4("198.18.128.2", "198.19.128.2", smac="02:fb:00:00:00:99", dmac=P1.tg.mac)
    tg_wire.send("tg0", [f1, stranger])
    tg_wire.send("tg1", f2)
    got1 = tg_wire.sniff("tg1", count=2, timeout=2, match=_ours)
    got0 = tg_wire.sniff("tg0", count=1, timeout=2, match=_ours)
    assert [bytes(p) for p in got1] == [bytes(f1), bytes(stranger)]
    assert [bytes(p) for p in got0] == [bytes(f2)]
    fdb = _fdb(lab)
    learned = [ln for ln in fdb.splitlines() if "02:fb:00:00:00:99" in ln]
    if learning:
        assert learned and "static" not in learned[0] and "dev dut0" in learned[0]
    else:
        assert learned == []
        assert f"{P0.tg.mac} dev dut0" in fdb and f"{P1.tg.mac} dev dut1" in fdb
        assert "static" in [ln for ln in fdb.splitlines() if P0.tg.mac in ln][0]
    assert d.describe()["bridge"]["learning"] is learning


@pytest.mark.root
def test_xconnect_passes_any_frame_unchanged_both_ways(lab, dut, tg_wire):
    from scapy.all import Ether, Raw
    dut(mode="xconnect")
    tg_wire.listen("tg0", "tg1")
    odd = Ether(src="02:fb:00:00:00:77", dst="02:fb:00:00:00:78", type=0x88B5) / Raw(b"x" * 50 + MARK)
    f = _udp4("198.18.128.1", "198.19.128.1", dmac=P1.tg.mac, ttl=1)    # TTL 1: not routed
    tg_wire.send("tg0", [f, odd])
    tg_wire.send("tg1", f)
    assert [bytes(p) for p in tg_wire.sniff("tg1", count=2, timeout=2, match=_ours)] == \
        [bytes(f), bytes(odd)]
    assert [bytes(p) for p in tg_wire.sniff("tg0", count=1, timeout=2, match=_ours)] == [bytes(f)]


@pytest.mark.root
@pytest.mark.parametrize("params", [{"mode": "router", "routes": 100}, {"mode": "nat"},
                                    {"mode": "bridge", "learning": False}, {"mode": "xconnect"}])
def test_teardown_restores_the_lab_and_is_idempotent(lab, params):
    ex = lab.dut_exec

    def snapshot():
        return (ex.run(["ip", "-br", "addr"]).stdout, ex.run(["ip", "route"]).stdout,
                ex.run(["ip", "-6", "route"]).stdout, ex.run(["ip", "neigh"]).stdout,
                ex.run(["tc", "qdisc", "show", "ingress"]).stdout, ex.run(["nft", "list", "ruleset"]).stdout,
                ex.sysctl_get(["net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"]))
    base = snapshot()
    d = LinuxDut(params)
    d.setup(lab.dut_host())
    assert snapshot() != base
    d.teardown()
    d.teardown()
    assert snapshot() == base
    assert "fbbr0" not in ex.run(["ip", "-br", "link"]).stdout


@pytest.mark.root
def test_failed_setup_is_undone(lab):
    # a route that already exists makes the bulk install fail half-way
    lab.dut_exec.run(["ip", "route", "add", "198.19.128.0/18", "via", P1.tg.ip4])
    d = LinuxDut({"mode": "router", "routes": 4})
    from fwdbench.errors import DutError
    with pytest.raises(DutError, match="198.19.128.0/18"):
        d.setup(lab.dut_host())
    assert lab.dut_exec.run(["ip", "route", "show", "proto", "251"]).stdout == ""
    assert lab.dut_exec.sysctl_get(["net.ipv4.ip_forward"])["net.ipv4.ip_forward"] == "0"
    d.teardown()


@pytest.mark.root
def test_describe_records_kernel_sysctls_offloads(lab, dut):
    d = dut(mode="router")
    desc = d.describe()
    assert desc["kernel"] and desc["mode"] == "router"
    assert desc["sysctls"]["net.ipv4.ip_forward"] == "1"
    assert desc["offloads"]["dut0"]["generic-receive-offload"].startswith("on")
    assert desc["offloads"]["dut0.threaded"] in ("1", "enabled")
    assert desc["fib"]["ipv4"]["routes"] == 2


@pytest.mark.root
def test_bulk_install_error_mid_batch_names_prefix_and_is_undone(lab):
    from fwdbench.errors import DutError
    # routes=5000: 2 x 2048 flow routes, then 904 filler /28s from 10.0.0.0; the
    # 700th filler already exists (another protocol), deep inside a 256-route batch
    clash = str(ipaddress.ip_address("10.0.0.0") + 699 * 16)
    lab.dut_exec.run(["ip", "route", "add", f"{clash}/28", "via", P1.tg.ip4])
    d = LinuxDut({"mode": "router", "routes": 5000})
    with pytest.raises(DutError, match=f"{clash}/28"):
        d.setup(lab.dut_host())
    assert lab.dut_exec.run(["ip", "route", "show", "proto", "251"]).stdout == ""
    assert lab.dut_exec.run(["ip", "nexthop", "show"]).stdout == ""
    assert f"{clash}/28" in lab.dut_exec.run(["ip", "route"]).stdout      # not ours: kept
