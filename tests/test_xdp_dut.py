"""The `xdp` DUT: parameter validation, route installer, and (root) forwarding
on the wire with scapy, counters, teardown and crash cleanup."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fwdbench.dut.xdp import XdpDut, XdpParams, fb_xdp_paths, parse_stats
from fwdbench.errors import CampaignError

from test_xdp_dut_lab import lab_up, need_root, wait_until, wire, xdp_prog_ids

REPO = Path(__file__).resolve().parents[1]
DPORT = 4791

# ---- plan time (no root) -------------------------------------------------------


def test_validate_defaults():
    p = XdpDut.validate({}, "dut[0].params")
    assert p == {"mode": "router", "attach": "native", "fib_lookup": "full", "routes": 2,
                 "routes6": 2}
    x = XdpDut.validate({"mode": "xconnect"}, "x")
    assert x["mode"] == "xconnect"
    assert XdpDut.validate(x, "x") == x                  # idempotent
    assert XdpDut.validate(p, "x") == p


@pytest.mark.parametrize("params, field, words", [
    ({"mode": "bridge"}, "dut[2].params.mode", ["'bridge'", "xconnect", "router"]),
    ({"attach": "offload"}, "dut[2].params.attach", ["'offload'", "native", "generic"]),
    ({"fib_lookup": "fast"}, "dut[2].params.fib_lookup", ["full", "direct"]),
    ({"routes": 0}, "dut[2].params.routes", ["0 is too small", "allowed: 1..1048576"]),
    ({"routes6": 1 << 21}, "dut[2].params.routes6", ["1048576"]),
    ({"routes": "many"}, "dut[2].params.routes", ["integer"]),
    ({"queues": 2}, "dut[2].params.queues",
     ["unknown key", "allowed keys: mode, attach, fib_lookup, routes, routes6"]),
    ({"mode": "xconnect", "routes": 16}, "dut[2].params.routes", ["router"]),
    ({"mode": "xconnect", "fib_lookup": "direct"}, "dut[2].params.fib_lookup", ["router"]),
])
def test_validate_rejects(params, field, words):
    with pytest.raises(CampaignError) as ei:
        XdpDut.validate(params, "dut[2].params")
    msg = str(ei.value)
    assert field in msg, msg
    for w in words:
        assert w in msg, msg


# `fb-xdp stats --ifaces dut0,dut1` output, byte for byte in its format (router; counts
# edited to cover passes, drops and two CPUs).
RECORDED_STATS = (
    '{"command":"stats","prog_id":104,"prog_name":"fb_router","cpus":2,"counters":{'
    '"forwarded":{"packets":258,"bytes":15480},"pass_not_ip":{"packets":0,"bytes":0},'
    '"pass_ttl_expired":{"packets":3,"bytes":198},"pass_not_forwarded":{"packets":1,"bytes":60},'
    '"pass_no_neigh":{"packets":0,"bytes":0},"pass_frag_needed":{"packets":0,"bytes":0},'
    '"pass_fwd_disabled":{"packets":0,"bytes":0},"pass_no_port":{"packets":0,"bytes":0},'
    '"pass_other":{"packets":0,"bytes":0},"drop_malformed":{"packets":2,"bytes":60},'
    '"drop_fib":{"packets":0,"bytes":0},"drop_no_port":{"packets":0,"bytes":0}},'
    '"cpu_packets":[4,260]}')


def test_parse_stats_recorded():
    c = parse_stats(json.loads(RECORDED_STATS))
    assert c["xdp.forwarded.packets"] == 258 and c["xdp.forwarded.bytes"] == 15480
    assert c["xdp.pass_ttl_expired.packets"] == 3
    assert c["xdp.passed_packets"] == 4 and c["xdp.dropped_packets"] == 2
    assert c["xdp.rx_packets"] == 264 == c["xdp.cpu0.packets"] + c["xdp.cpu1.packets"]
    assert all(isinstance(v, int) for v in c.values())


def test_params_model_units_documented():
    for name, f in XdpParams.model_fields.items():
        assert f.description, name


# ---- root: forwarding on the wire ----------------------------------------------

def _built() -> None:
    binary, obj = fb_xdp_paths()
    if not (binary.exists() and obj.exists()):
        r = subprocess.run(["make", "-s", "-C", str(REPO / "native" / "xdpdut")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot build fb-xdp: {r.stderr.strip()[-300:]}")
    r = subprocess.run([str(binary), "probe"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"kernel lacks an XDP feature: {r.stderr.strip()}")


@pytest.fixture(scope="module")
def lab():
    need_root()
    pytest.importorskip("scapy")
    _built()
    with lab_up() as lab:
        yield lab


def _udp4(lab, port_in: int, n_ttl: int = 64, dst: str = "198.19.128.7", size: int = 60):
    from scapy.all import IP, UDP, Ether, Raw
    p = lab.ports[port_in]
    src = "198.18.128.1" if port_in == 0 else "198.19.128.1"
    if port_in == 1:
        dst = "198.18.128.7"
    f = Ether(src=p.tg_mac, dst=p.dut_mac) / IP(src=src, dst=dst, ttl=n_ttl) / \
        UDP(sport=1024, dport=DPORT)
    return bytes(f / Raw(b"\x5a" * max(0, size - len(f))))


def _host(net: str, i: int) -> str:
    import ipaddress
    return str(ipaddress.ip_network(net)[i])


def _udp6(lab, hlim: int = 64):
    from scapy.all import UDP, Ether, IPv6, Raw
    p = lab.ports[0]
    f = Ether(src=p.tg_mac, dst=p.dut_mac) / \
        IPv6(src=_host(lab.flow_nets["ip6"][0], 1), dst=_host(lab.flow_nets["ip6"][1], 9),
             hlim=hlim) / \
        UDP(sport=1024, dport=DPORT)
    return bytes(f / Raw(b"\x6b" * max(0, 78 - len(f))))


def _delta(before: dict, after: dict, key: str) -> int:
    return after.get(key, 0) - before.get(key, 0)


@pytest.fixture
def driver_for(lab):
    made = []

    def make(**params):
        d = XdpDut(XdpDut.validate(params, "dut[0].params"))
        d.check()
        d.setup(lab.dut_host())
        made.append(d)
        return d

    yield make
    for d in made:
        d.teardown()
    assert xdp_prog_ids(lab) == {}, "a test left an XDP program attached"


@pytest.mark.root
@pytest.mark.parametrize("burst", [257, 2])
def test_xconnect_forwards_frames_unchanged(lab, driver_for, burst):
    d = driver_for(mode="xconnect")
    ids = xdp_prog_ids(lab)
    assert set(ids) == {"dut0", "dut1"} and ids["dut0"] == ids["dut1"]
    before = d.counters()
    fwd = [_udp4(lab, 0) for _ in range(burst)]
    back = [_udp4(lab, 1)]
    got = wire(lab, "tg0", fwd, ["tg1"], DPORT)
    assert got["tg1"] == fwd                       # every frame, byte for byte, in order
    got = wire(lab, "tg1", back, ["tg0"], DPORT)
    assert got["tg0"] == back
    after = d.counters()
    n = _delta(before, after, "xdp.forwarded.packets")
    assert n == burst + 1, (n, burst)
    assert _delta(before, after, "xdp.dropped_packets") == 0
    assert _delta(before, after, "dut1.rx_packets") >= 1
    assert after["xdp.rx_packets"] == after["xdp.forwarded.packets"] + \
        after["xdp.passed_packets"] + after["xdp.dropped_packets"]


def _ip4_checksum_ok(raw: bytes) -> bool:
    hdr = raw[14:14 + (raw[14] & 0x0F) * 4]
    s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, len(hdr), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


@pytest.mark.root
@pytest.mark.parametrize("burst", [257, 2])
def test_router_ipv4_rewrites_and_forwards(lab, driver_for, burst):
    from scapy.all import IP, Ether
    d = driver_for(mode="router")
    before = d.counters()
    frames = [_udp4(lab, 0, dst=f"198.19.{128 + i % 100}.{1 + i % 250}") for i in range(burst)]
    got = wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"]
    assert len(got) == burst
    for sent, raw in zip(frames, got):
        e, s = Ether(raw), Ether(sent)
        assert e.src == lab.ports[1].dut_mac and e.dst == lab.ports[1].tg_mac
        assert e[IP].ttl == s[IP].ttl - 1
        assert e[IP].dst == s[IP].dst and e[IP].src == s[IP].src
        assert _ip4_checksum_ok(raw)
        assert raw[34:] == sent[34:]               # L4 header and payload untouched
    # and the reverse direction
    back = wire(lab, "tg1", [_udp4(lab, 1)], ["tg0"], DPORT)["tg0"]
    assert len(back) == 1 and Ether(back[0]).dst == lab.ports[0].tg_mac
    after = d.counters()
    assert _delta(before, after, "xdp.forwarded.packets") == burst + 1
    assert _delta(before, after, "xdp.forwarded.bytes") == 60 * (burst + 1)
    assert _delta(before, after, "xdp.dropped_packets") == 0


@pytest.mark.root
def test_router_ipv6_hop_limit(lab, driver_for):
    from scapy.all import Ether, IPv6
    d = driver_for(mode="router", fib_lookup="direct")
    before = d.counters()
    frames = [_udp6(lab, hlim=64), _udp6(lab, hlim=2)]
    got = wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"]
    assert [Ether(g)[IPv6].hlim for g in got] == [63, 1]
    for g in got:
        assert Ether(g).src == lab.ports[1].dut_mac and Ether(g).dst == lab.ports[1].tg_mac
    assert _delta(before, d.counters(), "xdp.forwarded.packets") == 2


@pytest.mark.root
def test_router_ttl_expired_goes_to_kernel_and_is_counted(lab, driver_for):
    from scapy.all import ICMP, Ether
    from scapy.layers.inet6 import ICMPv6TimeExceeded
    d = driver_for(mode="router")
    before = d.counters()
    frames = [_udp4(lab, 0, n_ttl=1), _udp4(lab, 0, n_ttl=1), _udp6(lab, hlim=1)]
    got = wire(lab, "tg0", frames, ["tg0", "tg1"], DPORT, wait=1.0)
    assert not [g for g in got["tg1"] if Ether(g).haslayer("UDP")], "TTL 1 must not be forwarded"
    after = d.counters()
    assert _delta(before, after, "xdp.pass_ttl_expired.packets") == 3
    assert _delta(before, after, "xdp.forwarded.packets") == 0
    # the kernel stack handled them: ICMP time exceeded back to the source
    # (rate-limited by icmp_ratelimit, so at least one of each family)
    icmp4 = [g for g in got["tg0"] if Ether(g).haslayer(ICMP) and Ether(g)[ICMP].type == 11]
    icmp6 = [g for g in got["tg0"] if Ether(g).haslayer(ICMPv6TimeExceeded)]
    assert icmp4 and icmp6


@pytest.mark.root
def test_router_unrouted_destination_passes(lab, driver_for):
    d = driver_for(mode="router")
    before = d.counters()
    # no route to 198.18.77.1 (no default route): the kernel answers "unreachable"
    wire(lab, "tg0", [_udp4(lab, 0, dst="198.18.77.1")], [], DPORT, wait=0.2)
    after = d.counters()
    assert _delta(before, after, "xdp.pass_not_forwarded.packets") >= 1
    assert _delta(before, after, "xdp.forwarded.packets") == 0


@pytest.mark.root
def test_router_egress_port_not_enrolled_passes(lab, driver_for):
    d = driver_for(mode="router")
    ex = lab.dut_exec
    # a third port in the DUT namespace that fb-xdp did not enroll in its devmap
    ex.run(["ip", "-batch", "-"], input="link add fbx0 type veth peer name fbx1\nlink set fbx0 up\n"
           "address add 198.18.250.1/24 dev fbx0\n"
           "neigh replace 198.18.250.2 lladdr 02:fb:00:00:0f:01 dev fbx0 nud permanent\n")
    try:
        before = d.counters()
        wire(lab, "tg0", [_udp4(lab, 0, dst="198.18.250.2")], [], DPORT, wait=0.2)
        after = d.counters()
    finally:
        ex.run(["ip", "link", "del", "fbx0"])
    assert _delta(before, after, "xdp.pass_no_port.packets") == 1
    assert _delta(before, after, "xdp.forwarded.packets") == 0


@pytest.mark.root
def test_program_verdicts_with_test_run(lab, driver_for):
    """BPF_PROG_TEST_RUN of the router on crafted frames, incl. ones the wire
    cannot carry (truncated headers)."""
    from scapy.all import ARP, IP, Ether
    d = driver_for(mode="router")
    ok = _udp4(lab, 0)
    r = d.testrun(ok)
    assert r["action"] == "XDP_REDIRECT" and r["counters"] == {"forwarded": 1}
    e = Ether(r["frame_out"])
    assert e[IP].ttl == 63 and _ip4_checksum_ok(r["frame_out"])
    assert (e.src, e.dst) == (lab.ports[1].dut_mac, lab.ports[1].tg_mac)
    r = d.testrun(_udp4(lab, 1), ingress=1)           # and from the other port
    assert r["action"] == "XDP_REDIRECT" and Ether(r["frame_out"]).dst == lab.ports[0].tg_mac
    cases = [
        (_udp4(lab, 0, n_ttl=1), "XDP_PASS", "pass_ttl_expired"),
        (bytes(Ether(src=lab.ports[0].tg_mac) / ARP(pdst="198.18.0.2")), "XDP_PASS",
         "pass_not_ip"),
        (ok[:14 + 12], "XDP_DROP", "drop_malformed"),           # IPv4 header cut short
        (ok[:14] + b"\x41" + ok[15:], "XDP_DROP", "drop_malformed"),  # IHL 1
        (_udp6(lab)[:14 + 30], "XDP_DROP", "drop_malformed"),
        (_udp4(lab, 0, dst="198.18.0.2"), "XDP_PASS", "pass_not_forwarded"),  # for the DUT
    ]
    big = bytearray(ok)
    big[16:18] = (1600).to_bytes(2, "big")              # IPv4 total length above the MTU
    cases.append((bytes(big), "XDP_PASS", "pass_frag_needed"))
    cases.append((_udp4(lab, 0, dst="198.19.200.9"), "XDP_DROP", "drop_fib"))
    cases.append((_udp4(lab, 0, dst="198.19.201.9"), "XDP_PASS", "pass_no_neigh"))
    lab.dut_exec.run(["ip", "-batch", "-"], input="route add blackhole 198.19.200.0/24\n"
                     "route add 198.19.201.0/24 via 198.19.0.77 dev dut1\n")
    try:
        for frame, action, reason in cases:
            r = d.testrun(frame)
            assert (r["action"], r["counters"]) == (action, {reason: 1}), (frame.hex(), r)
            if action == "XDP_PASS":
                assert r["frame_out"] == frame          # the kernel gets it unmodified
    finally:
        lab.dut_exec.run(["ip", "-batch", "-"], input="route del blackhole 198.19.200.0/24\n"
                         "route del 198.19.201.0/24\n")
    # the fast path's cost: 100 runs per call on a TTL 255 frame, all forwarded
    r = d.testrun(_udp4(lab, 0, n_ttl=255), repeat=100, calls=3)
    assert r["counters"] == {"forwarded": 300} and 0 < r["duration_ns"] < 100_000


@pytest.mark.root
def test_generic_attach_mode(lab, driver_for):
    d = driver_for(mode="xconnect", attach="generic")
    desc = d.describe()
    assert {p["attach_mode"] for p in desc["programs"]} == {"generic"}
    frames = [_udp4(lab, 0) for _ in range(2)]
    assert wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"] == frames


@pytest.mark.root
def test_describe_and_teardown(lab):
    _built()
    routes_before = lab.dut_exec.run(["ip", "route", "show"]).stdout
    neigh_before = sorted(lab.dut_exec.run(["ip", "neigh", "show"]).stdout.splitlines())
    d = XdpDut(XdpDut.validate({"mode": "router", "routes": 8, "routes6": 4}, "dut[0].params"))
    d.setup(lab.dut_host())
    try:
        desc = d.describe()
        assert desc["dut"] == "xdp" and desc["mode"] == "router"
        assert desc["kernel"] and desc["libbpf"]
        assert {p["prog_name"] for p in desc["programs"]} == {"fb_router"}
        assert {p["attach_mode"] for p in desc["programs"]} == {"native"}
        assert all(len(p["prog_tag"]) == 16 for p in desc["programs"])
        assert desc["fib"]["ipv4"]["installed"] == 8 and desc["fib"]["ipv6"]["installed"] == 4
        assert desc["peer_macs"] == {"tg0": lab.ports[0].dut_mac, "tg1": lab.ports[1].dut_mac}
        if lab.cfg.kernel_tuning:                    # XDP runs in the pinned NAPI threads
            assert desc["napi_threaded"] == {"dut0": "1", "dut1": "1"}
            assert d.pids() and all(os.sched_getaffinity(p) == {lab.dut_cpu} for p in d.pids())
        routes = lab.dut_exec.run(["ip", "route", "show"]).stdout
        assert re.search(r"198\.19\.224\.0/19 .*via 198\.19\.0\.1 dev dut1", routes), routes
        assert "prog/xdp" in lab.dut_exec.run(["ip", "-d", "link", "show", "dut0"]).stdout
    finally:
        d.teardown()
    d.teardown()                                     # safe twice
    for ifname in ("dut0", "dut1"):
        assert "prog/xdp" not in lab.dut_exec.run(["ip", "-d", "link", "show", ifname]).stdout
    assert lab.dut_exec.run(["ip", "route", "show"]).stdout == routes_before
    assert sorted(lab.dut_exec.run(["ip", "neigh", "show"]).stdout.splitlines()) == neigh_before
    fwd = lab.dut_exec.run(["sysctl", "-n", "net.ipv4.conf.all.forwarding"]).stdout.strip()
    assert fwd == "0"                                # restored
    assert subprocess.run(["pgrep", "-x", "fb-xdp"], capture_output=True).returncode == 1


@pytest.mark.root
def test_loader_refuses_a_second_attach_and_bad_input(lab):
    _built()
    binary, _ = fb_xdp_paths()
    d = XdpDut({"mode": "xconnect"})
    d.setup(lab.dut_host())
    try:
        # a second attach must not clobber the first
        r = lab.dut_exec.run([str(binary), "attach", "--mode", "router", "--ifaces",
                              "dut0,dut1"], check=False)
        assert r.returncode == 3 and "already attached" in r.stderr and "fb_xconnect" in r.stderr
    finally:
        d.teardown()
    r = lab.dut_exec.run([str(binary), "attach", "--mode", "bogus", "--ifaces", "dut0"],
                         check=False)
    assert r.returncode == 2 and "--mode" in r.stderr
    r = lab.dut_exec.run([str(binary), "stats", "--ifaces", "nosuch0"], check=False)
    assert r.returncode == 2 and "nosuch0" in r.stderr


_CRASH_CHILD = r"""
import json, os, sys, time
from fwdbench.dut.xdp import XdpDut
from fwdbench.lab import Lab, LabConfig
cpus = sorted(os.sched_getaffinity(0))
lab = Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1]))
d = XdpDut({"mode": "router"})
d.setup(lab.dut_host())
print(json.dumps({"run_id": lab.run_id,
                  "prog_ids": [p["prog_id"] for p in d.describe()["programs"]]}), flush=True)
time.sleep(60)
"""


@pytest.mark.root
def test_programs_vanish_with_namespace_after_crash():
    from fwdbench.lab import down_all
    need_root()
    _built()
    if shutil.which("bpftool") is None:
        pytest.skip("needs bpftool")
    child = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD], stdout=subprocess.PIPE,
                             text=True)
    info = None
    try:
        info = json.loads(child.stdout.readline())
        child.send_signal(signal.SIGKILL)            # the driver process dies mid-run
        child.wait(timeout=10)
        ids = set(info["prog_ids"])
        assert len(ids) == 1
        prog_id = ids.pop()
        shown = subprocess.run(["bpftool", "prog", "show", "id", str(prog_id)],
                               capture_output=True, text=True)
        assert shown.returncode == 0 and "fb_router" in shown.stdout   # still attached
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if info:
            assert down_all([info["run_id"]]) == [info["run_id"]]   # crash cleanup of the lab
    gone = wait_until(lambda: subprocess.run(["bpftool", "prog", "show", "id", str(prog_id)],
                                             capture_output=True).returncode != 0, timeout=10)
    assert gone, f"XDP program {prog_id} outlived its namespace"
