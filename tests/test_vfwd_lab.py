"""vfwd forwarding on the wire, through the `vfwd` DUT driver, in a lab this
module builds itself (two namespaces, two veth pairs; the shared
fwdbench.lab is not needed):

    netns fb-t<id>-tg                        netns fb-t<id>-dut
    tg0 198.18.0.1/24  <== veth ==>  dut0 198.18.0.2/24
    tg1 198.19.0.1/24  <== veth ==>  dut1 198.19.0.2/24

Frames are sent and captured with scapy inside the tg namespace (a child
process); GRO is on for the tg-side veths so frames vfwd transmits from
AF_XDP reach them. Only 198.18.0.0/15 and 2001:2::/48 are used and no
interface ever exists in the root namespace.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fwdbench.errors import DutError
from fwdbench.dut.vfwd import VfwdDut, query, vfwd_binary
from fwdbench.lab.executor import Executor
from helpers import PlainDutHost

pytestmark = pytest.mark.root

TG_MAC = ("02:fb:00:00:00:01", "02:fb:00:00:00:02")
DUT_MAC = ("02:fb:00:00:01:01", "02:fb:00:00:01:02")
TG_IP4, DUT_IP4 = ("198.18.0.1", "198.19.0.1"), ("198.18.0.2", "198.19.0.2")
TG_IP6, DUT_IP6 = ("2001:2::1", "2001:2:0:1::1"), ("2001:2::2", "2001:2:0:1::2")


class MiniLab:
    """Just enough of fwdbench.lab.Lab for the vfwd driver."""

    def __init__(self, queues: int = 1):
        self.queues = queues
        rid = "t" + secrets.token_hex(3)
        self.tg_ns, self.dut_ns = f"fb-{rid}-tg", f"fb-{rid}-dut"
        self.tg_exec, self.dut_exec = Executor(self.tg_ns), Executor(self.dut_ns)
        cpus = sorted(os.sched_getaffinity(0))
        self.gen_cpu, self.dut_cpu = cpus[0], cpus[-1]
        self.ports = tuple(
            SimpleNamespace(
                index=i,
                tg=SimpleNamespace(ifname=f"tg{i}", mac=TG_MAC[i], ip4=TG_IP4[i], ip6=TG_IP6[i]),
                dut=SimpleNamespace(ifname=f"dut{i}", mac=DUT_MAC[i], ip4=DUT_IP4[i],
                                    ip6=DUT_IP6[i]),
                flows4=("198.18.128.0/17", "198.19.128.0/17")[i],
                flows6=("2001:2:0:10::/64", "2001:2:0:11::/64")[i])
            for i in range(2))

    def up(self) -> "MiniLab":
        sh = lambda *a: subprocess.run(a, check=True, capture_output=True, text=True)  # noqa: E731
        sh("ip", "netns", "add", self.tg_ns)
        sh("ip", "netns", "add", self.dut_ns)
        for ns in (self.tg_ns, self.dut_ns):
            # no IPv6 control traffic (DAD, MLD, RS) on the links
            sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        for p in self.ports:
            # created inside the tg namespace, the peer moved straight to the DUT's
            q = ["numtxqueues", str(self.queues), "numrxqueues", str(self.queues)]
            sh("ip", "-n", self.tg_ns, "link", "add", p.tg.ifname, "address", p.tg.mac, *q,
               "type", "veth", "peer", "name", p.dut.ifname, "address", p.dut.mac, *q,
               "netns", self.dut_ns)
            sh("ip", "-n", self.tg_ns, "addr", "add", f"{p.tg.ip4}/24", "dev", p.tg.ifname)
            sh("ip", "-n", self.dut_ns, "addr", "add", f"{p.dut.ip4}/24", "dev", p.dut.ifname)
            sh("ip", "-n", self.tg_ns, "link", "set", p.tg.ifname, "up")
            sh("ip", "-n", self.dut_ns, "link", "set", p.dut.ifname, "up")
            # a veth delivers XDP-redirected frames only into a peer with NAPI
            sh("ip", "netns", "exec", self.tg_ns, "ethtool", "-K", p.tg.ifname, "gro", "on")
        return self

    def dut_host(self):
        return PlainDutHost(self.dut_exec, self.ports, (self.dut_cpu,))

    def down(self) -> None:
        for ns in (self.tg_ns, self.dut_ns):
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _mini_lab(queues: int):
    # as root (these tests' mark) with `make setup` done, all of it is there:
    # a missing piece fails rather than skips
    assert shutil.which("ethtool"), "needs ethtool (GRO on the tg veths): make deps"
    assert vfwd_binary().exists(), f"{vfwd_binary()} not built (make -C native)"
    lab = MiniLab(queues)
    try:
        lab.up()
        yield lab
    finally:
        lab.down()
    assert not Path(f"/run/netns/{lab.tg_ns}").exists()


@pytest.fixture(scope="module")
def mlab():
    yield from _mini_lab(1)


@pytest.fixture(scope="module")
def mlab2q():
    yield from _mini_lab(2)


WIRE = r"""
import json, sys, time
from scapy.all import AsyncSniffer, Ether, sendp, raw, conf
conf.verb = 0
spec = json.loads(sys.argv[1])
sn = {i: AsyncSniffer(iface=i, store=True,
                      lfilter=lambda p: b"vfwdtest" in raw(p)) for i in ("tg0", "tg1")}
for s in sn.values():
    s.start()
time.sleep(0.5)
for iface, frames in spec["send"]:
    sendp([Ether(bytes.fromhex(f)) for f in frames], iface=iface, verbose=0)
    time.sleep(0.05)
time.sleep(spec.get("wait", 1.0))
out = {}
sent = {i: set(fs) for i, fs in spec["send"]}
for i, s in sn.items():
    # a sniffer also sees what its own port sent: leave those out
    out[i] = [raw(p).hex() for p in s.stop() if raw(p).hex() not in sent.get(i, ())]
print(json.dumps(out))
"""


def wire(lab: MiniLab, send: list[tuple[str, list[bytes]]], wait: float = 1.0) -> dict:
    """Send frames from tg ports; return {tg0: [bytes], tg1: [bytes]} received."""
    spec = {"send": [(i, [bytes(f).hex() for f in fs]) for i, fs in send], "wait": wait}
    r = subprocess.run(["ip", "netns", "exec", lab.tg_ns, sys.executable, "-c", WIRE,
                        json.dumps(spec)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    return {k: [bytes.fromhex(x) for x in v] for k, v in got.items()}


def udp4(src, dst, sport=1024, dport=1024, ttl=64, dmac=DUT_MAC[0], smac=TG_MAC[0], n=0):
    from scapy.all import IP, UDP, Ether, Raw
    return bytes(Ether(dst=dmac, src=smac) / IP(src=src, dst=dst, ttl=ttl) /
                 UDP(sport=sport, dport=dport) / Raw(b"vfwdtest%06d" % n + b"x" * 10))


def check_ip4_csum(frame: bytes) -> bool:
    from scapy.all import IP, UDP, Ether
    p = Ether(frame)
    ip_sum, udp_sum = p[IP].chksum, p[UDP].chksum
    q = Ether(frame)
    del q[IP].chksum
    del q[UDP].chksum
    q = Ether(bytes(q))
    return q[IP].chksum == ip_sum and (udp_sum == 0 or q[UDP].chksum == udp_sum)


@pytest.fixture
def dut(mlab):
    drivers = []

    def start(**params):
        d = VfwdDut(params)
        d.check()
        d.setup(mlab.dut_host())
        drivers.append(d)
        return d
    yield start
    for d in drivers:
        d.teardown()
        assert d._proc is None and d._dir is None
    # nothing of vfwd is left in the namespace
    r = subprocess.run(["ip", "netns", "pids", mlab.dut_ns], capture_output=True, text=True)
    assert r.stdout.strip() == ""


@pytest.mark.parametrize("driver", ["xdp", "afpacket"])
def test_router_ip4_on_the_wire(dut, mlab, driver):
    from scapy.all import IP, Ether
    d = dut(mode="router", driver=driver, max_vector=256)
    assert d._ready["ports"][0]["driver"] == driver
    for burst in (257, 2):
        frames = [udp4(f"198.18.128.{1 + i % 200}", f"198.19.{128 + i % 100}.{1 + i % 250}",
                       ttl=64 - (i % 3), n=i) for i in range(burst)]
        got = wire(mlab, [("tg0", frames)], wait=1.5)
        rx = got["tg1"]
        assert len(rx) == burst, f"{driver}: {len(rx)} of {burst} forwarded"
        for f in rx:
            p = Ether(f)
            n = int(bytes(p)[-16:-10])
            assert p.dst == TG_MAC[1] and p.src == DUT_MAC[1]
            assert p[IP].ttl == 63 - (n % 3)
            assert p[IP].dst == f"198.19.{128 + n % 100}.{1 + n % 250}"
            assert check_ip4_csum(f)
        assert got["tg0"] == []
    c = d.counters()
    assert c["vfwd_ip4_rewrite_packets"] >= 259
    assert c["dut1_tx_packets"] >= 259
    assert c["vfwd_port_input_clocks"] > 0


def test_auto_falls_back_to_afpacket_where_af_xdp_cannot_attach(dut, mlab):
    """driver auto: dut0 already has an XDP program of someone else's (native,
    attached the legacy way), so vfwd's AF_XDP socket cannot bind there and
    that port runs on AF_PACKET (the foreign program passes the frames to the
    stack); dut1 keeps AF_XDP. Forwarding works across the two."""
    from scapy.all import IP, Ether
    prog = vfwd_binary().parent / "bpf" / "fwdgen_rx.bpf.o"   # XDP_PASS for unsigned frames
    assert prog.exists(), f"{prog} not built (make -C native)"
    mlab.dut_exec.run(["ip", "link", "set", "dev", "dut0", "xdpdrv", "obj", str(prog),
                       "sec", "xdp"])
    try:
        d = dut(mode="router", driver="auto")
        assert [p["driver"] for p in d._ready["ports"]] == ["afpacket", "xdp"]
        frames = [udp4("198.18.128.1", f"198.19.128.{1 + i}", n=i) for i in range(50)]
        got = wire(mlab, [("tg0", frames)], wait=1.5)
        assert len(got["tg1"]) == 50
        assert all(Ether(f)[IP].ttl == 63 for f in got["tg1"])
        d.teardown()
    finally:
        mlab.dut_exec.run(["ip", "link", "set", "dev", "dut0", "xdpdrv", "off"])


def test_router_drops_malformed(dut, mlab):
    d = dut(mode="router")
    before = d.counters()
    good = udp4("198.18.128.1", "198.19.128.1", n=1)
    bad_csum = bytearray(good)
    bad_csum[14 + 10] ^= 0xff
    frames = [udp4("198.18.128.1", "198.19.128.1", ttl=1, n=2), bytes(bad_csum),
              udp4("198.18.128.1", "10.0.0.1", n=3), good[:14 + 12]]
    got = wire(mlab, [("tg0", frames)])
    assert got["tg1"] == [] and got["tg0"] == []
    after = d.counters()
    delta = lambda k: after.get(k, 0) - before.get(k, 0)  # noqa: E731
    assert delta("vfwd_drop_ip4_input_ttl_expired") == 1
    assert delta("vfwd_drop_ip4_input_bad_checksum") == 1
    assert delta("vfwd_drop_ip4_lookup_no_route") == 1
    assert delta("vfwd_drop_ip4_input_packet_too_short") == 1


def test_ip6_on_the_wire(dut, mlab):
    from scapy.all import UDP, Ether, IPv6, Raw
    dut(mode="router", max_vector=1)
    frames = [bytes(Ether(dst=DUT_MAC[0], src=TG_MAC[0]) /
                    IPv6(src="2001:2:0:10::5", dst=f"2001:2:0:11::{i + 1:x}", hlim=64) /
                    UDP(sport=1, dport=2) / Raw(b"vfwdtest%06d" % i)) for i in range(20)]
    got = wire(mlab, [("tg0", frames)])
    assert len(got["tg1"]) == 20
    for f in got["tg1"]:
        p = Ether(f)
        assert p[IPv6].hlim == 63 and p.src == DUT_MAC[1] and p.dst == TG_MAC[1]


def test_xconnect_on_the_wire(dut, mlab):
    dut(mode="xconnect")
    a = [udp4("198.18.128.1", "198.19.128.1", ttl=1, dmac="02:00:00:00:00:99", n=i)
         for i in range(5)]
    b = [udp4("198.19.128.1", "198.18.128.1", smac=TG_MAC[1], n=100 + i) for i in range(3)]
    got = wire(mlab, [("tg0", a), ("tg1", b)])
    assert sorted(got["tg1"]) == sorted(a)       # unchanged, even TTL 1 and a foreign MAC
    assert sorted(got["tg0"]) == sorted(b)


def test_nat44_on_the_wire(dut, mlab):
    from scapy.all import IP, UDP, Ether
    d = dut(mode="nat44", nat_pool="198.19.0.100")
    out = wire(mlab, [("tg0", [udp4("198.18.128.5", "198.19.128.9", 1234, 80, n=7)])])
    assert len(out["tg1"]) == 1
    p = Ether(out["tg1"][0])
    assert p[IP].src == "198.19.0.100" and p[IP].ttl == 63 and check_ip4_csum(out["tg1"][0])
    oport = p[UDP].sport
    reply = udp4("198.19.128.9", "198.19.0.100", 80, oport, dmac=DUT_MAC[1], smac=TG_MAC[1], n=8)
    back = wire(mlab, [("tg1", [reply])])
    assert len(back["tg0"]) == 1
    q = Ether(back["tg0"][0])
    assert q[IP].dst == "198.18.128.5" and q[UDP].dport == 1234 and q.dst == TG_MAC[0]
    assert check_ip4_csum(back["tg0"][0])
    assert d.counters()["vfwd_nat44_packets"] == 2


def test_bridge_on_the_wire(dut, mlab):
    from scapy.all import Ether
    dut(mode="bridge")
    a = udp4("198.18.128.1", "198.19.128.1", dmac="02:00:00:00:00:0b", smac="02:00:00:00:00:0a")
    got = wire(mlab, [("tg0", [a])])         # unknown destination: flooded
    assert got["tg1"] == [a]
    b = udp4("198.19.128.1", "198.18.128.1", dmac="02:00:00:00:00:0a", smac="02:00:00:00:00:0b")
    got = wire(mlab, [("tg1", [b])])         # learnt on port 0
    assert got["tg0"] == [b] and Ether(b).dst == "02:00:00:00:00:0a"


def test_driver_stats_and_teardown(dut, mlab):
    d = dut(mode="work", work={"lookups": 2, "hashes": 1, "recirc": 1})
    st = query(d._sock, "stats")
    assert st["mode"] == "work" and st["max_vector"] == 256
    wire(mlab, [("tg0", [udp4("198.18.128.1", "198.19.128.1", n=i) for i in range(10)])])
    c = d.counters()
    assert c["vfwd_work_packets"] == 20            # each packet recirculated once
    assert c["vfwd_ethernet_input_packets"] == 20
    d.teardown()
    assert d.describe()["runtime"]["work"]["packets"] == 20
    d.teardown()                                   # safe twice


@pytest.mark.parametrize("driver, lab", [("xdp", "mlab2q"), ("afpacket", "mlab")])
def test_two_workers_rss(driver, lab, request):
    """Two workers: with AF_XDP one socket per (port, queue) each, the sender's
    flow hash spreading frames over both veth queues; with AF_PACKET on a
    one-queue port, PACKET_FANOUT spreading them."""
    from scapy.all import IP, Ether
    ml = request.getfixturevalue(lab)
    d = VfwdDut({"mode": "router", "workers": 2, "driver": driver, "cpus": [0, 1]})
    d.check()
    d.setup(ml.dut_host())
    try:
        pid = d._proc.pid      # the main thread on cpus[0], worker i on cpus[i]
        workers = sorted(sorted(os.sched_getaffinity(int(t)))
                         for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
        assert workers == [[0], [1]] and os.sched_getaffinity(pid) == {0}
        frames = [udp4(f"198.18.128.{1 + i}", f"198.19.128.{1 + i}", sport=1000 + i, n=i)
                  for i in range(200)]
        got = wire(ml, [("tg0", frames)], wait=1.5)
        assert len(got["tg1"]) == 200
        assert all(Ether(f)[IP].ttl == 63 for f in got["tg1"])
        per_worker = [w["nodes"].get("ip4-rewrite", {}).get("packets", 0)
                      for w in d.stats()["workers_detail"]]
        assert sum(per_worker) == 200 and len(per_worker) == 2
        assert min(per_worker) > 0, f"RSS left a worker idle: {per_worker}"
    finally:
        d.teardown()


@pytest.mark.parametrize("driver", ["xdp", "auto"])
def test_more_workers_than_queues_is_refused(mlab, driver):
    """One RX queue per port: a second AF_XDP worker would get nothing (or fail
    to bind), so setup says so and names the fix; vfwd is not left running."""
    d = VfwdDut({"mode": "router", "workers": 2, "driver": driver})
    with pytest.raises(DutError, match=r"workers = 2 needs 2 RX queues .* has 1: use workers = 1"):
        d.setup(mlab.dut_host())
    assert d._proc is None


def test_asan_build_on_the_wire(mlab, monkeypatch):
    """The ASan/UBSan build forwards on AF_XDP and exits clean (no report)."""
    asan = vfwd_binary().parent / "vfwd-asan"
    assert asan.exists(), f"{asan} not built (make -C native)"
    monkeypatch.setenv("FWDBENCH_VFWD", str(asan))
    from scapy.all import IP, Ether
    d = VfwdDut({"mode": "router", "driver": "xdp"})
    d.setup(mlab.dut_host())
    try:
        frames = [udp4("198.18.128.1", f"198.19.128.{1 + i}", n=i) for i in range(50)]
        bad = bytearray(frames[0])
        bad[14] = 0x4f                          # IHL 15: longer than the packet
        got = wire(mlab, [("tg0", frames + [bytes(bad)])])
        assert len(got["tg1"]) == 50
        assert all(Ether(f)[IP].ttl == 63 for f in got["tg1"])
        proc = d._proc
    finally:
        d.teardown()
    assert proc.returncode == 0
    assert "ERROR: AddressSanitizer" not in d._stderr and "runtime error" not in d._stderr


@pytest.fixture(scope="module")
def real_lab():
    """fwdbench's own lab (GRO + threaded NAPI pinned per side). As root (these
    tests' mark) a lab that does not come up is a failure, not a skip."""
    from fwdbench.lab import Lab, LabConfig

    assert vfwd_binary().exists(), f"{vfwd_binary()} not built (make -C native)"
    cpus = sorted(os.sched_getaffinity(0))
    # FIFO NAPI threads, as campaigns set them (testbed.napi_rt_priority)
    lab = Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1], napi_rt_priority=50))
    try:
        yield lab
    finally:
        lab.down()


@pytest.mark.parametrize("params, mode, prio", [
    # the lab's FIFO NAPI threads share the DUT CPU: by default vfwd's worker
    # sleeps when idle and runs one priority above them (resolve_rx_mode) ...
    ({}, "interrupt", 51),
    # ... and a spinning one runs at their priority: without its yield after
    # every pass the NAPI threads would never run and nothing would arrive
    ({"rx_mode": "poll"}, "poll", 50),
])
def test_fwdgen_trial_through_vfwd(real_lab, params, mode, prio):
    """The campaign path: driver setup in fwdbench's lab, a fwdgen trial at a low
    rate through vfwd, counter deltas, teardown."""
    fwdgen = vfwd_binary().parent / "fwdgen"
    assert fwdgen.exists(), f"{fwdgen} not built (make -C native)"
    d = VfwdDut({"mode": "router", **params})
    d.check()
    d.setup(real_lab.dut_host())
    try:
        desc = d.describe()
        assert desc["rx_mode_used"] == mode and desc["sched_priority_used"] == prio
        assert f"rx-mode {mode}\nsched-priority {prio}\n" in desc["config"]
        fifo = [(t, os.sched_getparam(int(t)).sched_priority)
                for t in os.listdir(f"/proc/{d._proc.pid}/task")
                if os.sched_getscheduler(int(t)) == os.SCHED_FIFO]
        assert [p for _t, p in fifo] == [prio], fifo      # the one worker, nothing else
        tasks = os.listdir(f"/proc/{d._proc.pid}/task")
        assert all(os.sched_getaffinity(int(t)) == {real_lab.dut_cpu} for t in tasks), tasks
        macs = d.peer_macs(real_lab.dut_host())
        p0, p1 = real_lab.ports[0], real_lab.ports[1]
        spec = {"ports": [{"ifname": p.tg.ifname, "mac": p.tg.mac, "peer_mac": macs[p.tg.ifname],
                           "backend": "auto"} for p in (p0, p1)],
                "streams": [{"id": 0, "tx_port": 0, "rx_port": 1, "src": p0.flows4,
                             "dst": p1.flows4, "src_port": 1024, "dst_port": 1024}],
                "profile": {"l3": "ipv4", "frame_size": 64, "flows": 256,
                            "vary": ["src_ip", "dst_ip"]},
                "load_pps": 20000, "duration_s": 1.0, "warmup_s": 0.2, "drain_s": 0.3,
                "cpus": {"tx": [real_lab.gen_cpu], "rx": [real_lab.gen_cpu]}, "samples": False}
        before = d.counters()
        r = subprocess.run(["ip", "netns", "exec", real_lab.tg_ns, str(fwdgen), "trial",
                            "--spec", "-"], input=json.dumps(spec), capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        s = json.loads(r.stdout)["streams"][0]
        after = d.counters()
        assert s["tx_packets"] >= 19000
        # a shared CI host may deschedule vfwd for tens of ms (RX ring overflow):
        # this checks the path works end to end, not a loss rate
        assert s["rx_packets"] >= 0.95 * s["tx_packets"], s
        fwd = after["vfwd_ip4_rewrite_packets"] - before["vfwd_ip4_rewrite_packets"]
        assert fwd >= s["rx_packets"] - 5000     # warm-up frames are forwarded too
    finally:
        d.teardown()
