"""fwdgen on real veth pairs (root): exact counting, induced loss, pacing,
bidirectional, IPv6, IMIX, the afpacket backend, cleanup on SIGTERM.

Each test builds its own namespaces fb-t<random>-* and removes them."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time

import pytest

from fwdbench.meters.cpu import read_proc_stat

from test_fwdgen_helpers import (BUILD, build_native, fwdgen_argv, fwdgen_net, is_root,
                                 loop_spec, run_spec, sh)

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not is_root(), reason="needs root (network namespaces, BPF)")]

MAC0, MAC1 = "02:fb:00:00:00:01", "02:fb:00:00:01:01"


@pytest.fixture(scope="module", autouse=True)
def built():
    build_native("all")
    probe = subprocess.run([str(BUILD / "fwdgen"), "check"], capture_output=True, text=True,
                           check=False)
    info = json.loads(probe.stdout)
    if not info["xdp"]:
        pytest.skip(f"no XDP live-frame support here: {info['errors']['xdp']}")
    return info


@pytest.fixture
def loop():
    """One namespace with a veth pair p0 <-> p1."""
    with fwdgen_net() as net:
        ns = net.ns("loop")
        net.veth(ns, "p0", ns, "p1", MAC0, MAC1)
        yield ns


def assert_exact(s: dict) -> None:
    assert s["tx_packets"] == s["intended_packets"], s
    assert s["rx_packets"] == s["tx_packets"], s
    assert s["lost"] == 0 and s["reordered"] == 0 and s["duplicated"] == 0, s
    assert s["rx_bytes"] == s["tx_bytes"], s
    assert s["latency"]["samples"] == s["rx_packets"]


def run_ok(ns: str, spec: dict, **kw) -> dict:
    rc, doc, err = run_spec(ns, spec, **kw)
    assert rc == 0, err
    assert doc["ok"] is True
    return doc


def max_rate(ns: str, **kw) -> float:
    """Frames per second the loop delivers when fwdgen sends as fast as it can."""
    doc = run_ok(ns, loop_spec("max", 1.0, **kw))
    s = doc["streams"][0]
    assert s["max_rate"] is True and s["intended_packets"] == s["tx_packets"]
    assert s["pacer"] is None and s["pace_burst"] is None
    assert s["rx_packets"] + s["lost"] == s["tx_packets"]
    return s["rx_packets"] / doc["duration_s"]


def test_xdp_loop_counts_exactly_at_half_of_max(loop):
    top = max_rate(loop)
    assert top > 100_000
    # other work shares these 2 CPUs: cap the load so CI stays deterministic
    doc = run_ok(loop, loop_spec(min(round(top * 0.5), 1_000_000), 3.0))
    assert doc["backends"] == {"p0": "xdp", "p1": "xdp"}
    s = doc["streams"][0]
    assert_exact(s)
    assert s["tx_bytes"] == 60 * s["tx_packets"]      # 64 B frames without FCS
    lat = s["latency"]
    assert 0 < lat["min_ns"] <= lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"]
    assert lat["hdr"].startswith("HISTF")
    assert sum(p["tx"] for p in s["per_second"]) <= s["tx_packets"]
    assert len(s["per_second"]) == 3


@pytest.mark.parametrize("load", [1_000, 10_000, 100_000, 300_000])
def test_pacing_within_half_percent(loop, load):
    # auto: the xdp TX program sends each frame (below 0.5 Mpps each 50 us
    # group) when due; not due is a cheap drop
    doc = run_ok(loop, loop_spec(load, 2.0))
    s = doc["streams"][0]
    assert s["pacer"] == "kernel"
    assert s["pace_burst"] == max(1, math.floor(load * 50e-6 + 0.5))
    assert_exact(s)
    assert s["tx_packets"] == load * 2
    assert abs(s["achieved_tx_pps"] - load) / load <= 0.005, s["achieved_tx_pps"]
    assert s["tx_limited"] is False


@pytest.mark.parametrize("load, spec_kw", [
    (10_000, {"pacer": "user"}),
    (300_000, {"pacer": "user"}),
    (300_000, {}),                      # auto, on a port with burst_period_us: user
])
def test_user_pacer_within_half_percent(loop, load, spec_kw):
    spec = loop_spec(load, 2.0, **spec_kw)
    period_us = 250.0                   # the xdp backend's shortest burst period
    if not spec_kw:
        period_us = 400.0
        for p in spec["ports"]:
            p["burst_period_us"] = period_us
    doc = run_ok(loop, spec)
    s = doc["streams"][0]
    # user-space bursts, at most one per period of traffic
    assert (s["pacer"], s["pace_burst"]) == ("user", max(1, int(load * period_us * 1e-6)))
    assert s["tx_packets"] == s["intended_packets"] == load * 2
    assert abs(s["achieved_tx_pps"] - load) / load <= 0.005, s["achieved_tx_pps"]
    assert s["tx_limited"] is False
    assert s["lost"] == 0


def test_high_share_of_the_maximum_is_paced_exactly(loop):
    # auto picks the kernel pacer for a stream alone on its thread;
    # user-space bursts fell 0.02-9 % short at 90 % of the maximum. 75 % here
    # (the bench runs 90 %): this shared host's maximum drifts from run to run.
    # A run short of its schedule while the hypervisor stole CPU time (a
    # few-ms stall near the end left CI 0.54 % short at 2.67 Mpps) is run
    # again at 75 % of a fresh maximum, up to twice; the last run counts.
    for _ in range(3):
        load = round(0.75 * max_rate(loop))
        before = read_proc_stat()
        doc = run_ok(loop, loop_spec(load, 2.0))
        stolen = any(t.steal > before[c].steal for c, t in read_proc_stat().items())
        s = doc["streams"][0]
        if not (stolen and abs(s["achieved_tx_pps"] - load) / load > 0.005):
            break
    assert s["pacer"] == "kernel"
    assert s["tx_packets"] == s["intended_packets"]
    assert abs(s["achieved_tx_pps"] - load) / load <= 0.005, (s["achieved_tx_pps"], load)
    assert s["tx_limited"] is False
    # a latency stream beside it on an unpinned thread: user-space pacing
    doc = run_ok(loop, loop_spec(100_000, 1.0, latency={"enabled": True, "rate_pps": 1000},
                                 pacer="kernel"))
    assert doc["streams"][0]["pacer"] == "user"


@pytest.mark.parametrize("load", [100_000, 1_000_000])
def test_latency_stream_paced_with_its_load_in_one_call(loop, load):
    # a pinned TX thread with a load stream and its latency stream: one XDP
    # program paces both (fg_tx_pair), the load in 50 us groups below 0.5 Mpps
    doc = run_ok(loop, loop_spec(load, 2.0, latency={"enabled": True, "rate_pps": 9000},
                                 cpus={"tx": [0]}))
    s = doc["streams"][0]
    ls = s["latency_stream"]
    assert s["pacer"] == ls["pacer"] == "kernel"
    assert s["pace_burst"] == (5 if load < 500_000 else 1)            # 50 us groups below
    assert_exact(s)
    assert abs(s["achieved_tx_pps"] - load) / load <= 0.005, s["achieved_tx_pps"]
    assert ls["intended_packets"] == ls["tx_packets"] == ls["rx_packets"] == 18_000
    assert ls["lost"] == 0 and ls["reordered"] == 0 and ls["duplicated"] == 0
    assert ls["latency"]["samples"] == 18_000
    # each frame carries its own stream's signature: no latency frame was
    # counted as load or the other way round
    assert s["rx_packets"] == 2 * load and s["duplicated"] == 0


def test_induced_loss_equals_dropped_count():
    """tg: t0 -> [mid: m0 --xdp-path drops every 7th--> m1] -> t1."""
    with fwdgen_net() as net:
        tg, mid = net.ns("tg"), net.ns("mid")
        net.veth(tg, "t0", mid, "m0", MAC0, MAC1)
        net.veth(mid, "m1", tg, "t1", "02:fb:00:00:01:02", "02:fb:00:00:00:02")
        path = subprocess.Popen(fwdgen_argv(mid, "xdp-path", "--in", "m0", "--out", "m1",
                                            "--drop-every", "7"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert path.stdout.readline().strip() == "ready", path.stderr.read()
            spec = loop_spec(50_000, 2.0)
            spec["ports"][0]["ifname"], spec["ports"][1]["ifname"] = "t0", "t1"
            doc = run_ok(tg, spec)
        finally:
            path.send_signal(signal.SIGTERM)
            out, err = path.communicate(timeout=10)
        counts = json.loads(out.strip().splitlines()[-1])
        s = doc["streams"][0]
        assert counts["signed"] == s["tx_packets"] == 100_000
        assert counts["dropped"] == 100_000 // 7
        assert s["lost"] == counts["dropped"]
        assert s["rx_packets"] == s["tx_packets"] - counts["dropped"]
        assert s["reordered"] == 0 and s["duplicated"] == 0


def test_bidirectional_streams(loop):
    doc = run_ok(loop, loop_spec(100_000, 2.0, bidir=True))
    assert [s["id"] for s in doc["streams"]] == [0, 1]
    assert [(s["tx_port"], s["rx_port"]) for s in doc["streams"]] == [("p0", "p1"),
                                                                        ("p1", "p0")]
    for s in doc["streams"]:
        assert_exact(s)


def test_ipv6_flows(loop):
    doc = run_ok(loop, loop_spec(100_000, 1.0, l3="ipv6", frame_size=82, flows=1000))
    s = doc["streams"][0]
    assert_exact(s)
    assert s["tx_bytes"] == 78 * s["tx_packets"]


def test_imix(loop):
    doc = run_ok(loop, loop_spec(60_000, 1.0, frame_size="imix"))
    s = doc["streams"][0]
    assert_exact(s)
    # 60000 frames = 5000 IMIX cycles of 7x60 + 4x566 + 1x1514 bytes
    assert s["tx_bytes"] == 5000 * (7 * 60 + 4 * 566 + 1514)


def test_latency_stream_beside_load(loop):
    doc = run_ok(loop, loop_spec(100_000, 2.0, latency={"enabled": True, "rate_pps": 9000}))
    s = doc["streams"][0]
    assert_exact(s)
    ls = s["latency_stream"]
    assert ls["intended_packets"] == ls["tx_packets"] == ls["rx_packets"] == 18_000
    assert ls["lost"] == 0 and ls["latency"]["samples"] == 18_000


def test_afpacket_backend_counts_exactly(loop):
    doc = run_ok(loop, loop_spec(20_000, 2.0, backend="afpacket"))
    assert doc["backends"] == {"p0": "afpacket", "p1": "afpacket"}
    assert_exact(doc["streams"][0])


def test_afxdp_backend_counts_exactly(loop):
    cpus = sorted(os.sched_getaffinity(0))
    doc = run_ok(loop, loop_spec(20_000, 2.0, backend="afxdp", bidir=True,
                                 cpus={"tx": [cpus[0]], "rx": [cpus[-1]]}))
    assert doc["backends"] == {"p0": "afxdp", "p1": "afxdp"}
    for s in doc["streams"]:
        assert (s["tx_backend"], s["rx_backend"]) == ("afxdp", "afxdp")
        assert_exact(s)
    links = sh("ip", "-n", loop, "link", "show").stdout
    assert "xdp" not in links, links          # libxdp's program went with the sockets


def test_auto_uses_afpacket_for_jumbo_frames(loop):
    for dev in ("p0", "p1"):
        sh("ip", "-n", loop, "link", "set", dev, "mtu", "9000")
    doc = run_ok(loop, loop_spec(5_000, 1.0, frame_size=9000, backend="auto"))
    assert doc["backends"] == {"p0": "afpacket", "p1": "afpacket"}
    s = doc["streams"][0]
    assert_exact(s)
    assert s["tx_bytes"] == 8996 * 5000


def start_trial(ns: str, spec: dict, tmp_path) -> subprocess.Popen:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return subprocess.Popen(fwdgen_argv(ns, "trial", "--spec", str(path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_stray_signed_frames_of_another_run_are_not_counted(loop, tmp_path):
    """Frames with fwdgen's signature but another run's nonce arrive during the
    trial; they must not be counted (rx > tx is impossible)."""
    trial = start_trial(loop, loop_spec(10_000, 2.0), tmp_path)
    time.sleep(0.8)
    inject = (
        "import socket\n"
        "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
        "s.bind(('p0', 0))\n"
        "eth = bytes.fromhex('02fb0000010102fb000000010800')\n"
        "ip = bytes.fromhex('4500002e00004000401100000a0000010a000002')\n"
        "udp = bytes.fromhex('04000400001a0000')\n"
        "for seq in range(500):\n"
        "    sig = bytes.fromhex('6667dead') + bytes([0, 2, 0, 0]) + seq.to_bytes(4, 'big') + bytes(4)\n"
        "    s.send(eth + ip + udp + sig)\n"
    )
    sh("ip", "netns", "exec", loop, "python3", "-c", inject)
    out, err = trial.communicate(timeout=30)
    assert trial.returncode == 0, err
    s = json.loads(out)["streams"][0]
    assert_exact(s)


def test_sigterm_detaches_xdp_programs(loop, tmp_path):
    trial = start_trial(loop, loop_spec(10_000, 30.0, bidir=True), tmp_path)
    deadline = time.time() + 5
    while time.time() < deadline and "xdp" not in sh("ip", "-n", loop, "link", "show",
                                                     "p1").stdout:
        time.sleep(0.05)
    assert "xdp" in sh("ip", "-n", loop, "link", "show", "p1").stdout
    trial.send_signal(signal.SIGTERM)
    out, err = trial.communicate(timeout=10)
    assert trial.returncode == 3
    assert "interrupted" in err
    links = sh("ip", "-n", loop, "link", "show").stdout
    assert "xdp" not in links, links


def test_busy_port_is_a_runtime_error(loop):
    """Another XDP program on the rx port: exit 3 naming the call and the port."""
    path = subprocess.Popen(fwdgen_argv(loop, "xdp-path", "--in", "p1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert path.stdout.readline().strip() == "ready"
        rc, _, err = run_spec(loop, loop_spec(1000, 0.5))
        assert rc == 3
        assert "bpf_xdp_attach(p1)" in err
    finally:
        path.send_signal(signal.SIGTERM)
        path.communicate(timeout=10)


def test_python_wrapper_runs_a_trial(loop):
    from fwdbench.traffic import run_trial
    from fwdbench.errors import CampaignError

    res = run_trial(loop_spec(50_000, 1.0, bidir=True), netns=loop)
    assert res.backend == "fwdgen-xdp"
    assert res.intended_packets == res.tx_packets == res.rx_packets == 100_000
    assert res.loss_ratio == 0.0 and not res.generator_limited
    assert res.streams[0].latency is not None and res.streams[0].latency.samples == 50_000
    bad = loop_spec(1000, 1.0)
    bad["profile"]["frame_size"] = 10
    with pytest.raises(CampaignError, match="spec.profile.frame_size"):
        run_trial(bad, netns=loop)


def test_through_a_linux_router(tmp_path):
    """tg: t0 -> [rt: r0 ip_forward r1] -> t1. The router rewrites the MACs and
    TTL in place in the pages fwdgen sent; those pages come back to fwdgen's
    live-frame pool and must not go out again with the router's headers."""
    with fwdgen_net() as net:
        tg, rt = net.ns("tg"), net.ns("rt")
        net.veth(tg, "t0", rt, "r0", MAC0, MAC1)
        net.veth(rt, "r1", tg, "t1", "02:fb:00:00:01:02", "02:fb:00:00:00:02")
        for args in (("addr", "add", "198.18.0.2/24", "dev", "r0"),
                     ("addr", "add", "198.19.0.2/24", "dev", "r1"),
                     ("route", "add", "198.19.128.0/17", "via", "198.19.0.1"),
                     ("neigh", "replace", "198.19.0.1", "lladdr", "02:fb:00:00:00:02",
                      "dev", "r1", "nud", "permanent")):
            sh("ip", "-n", rt, *args)
        sh("ip", "netns", "exec", rt, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "netns", "exec", rt, "ethtool", "-K", "r0", "gro", "on")  # NAPI for XDP_TX
        spec = loop_spec(100_000, 1.0, flows=64)
        spec["ports"][0]["ifname"], spec["ports"][1]["ifname"] = "t0", "t1"
        doc = run_ok(tg, spec)
        s = doc["streams"][0]
        stats = json.loads(sh("ip", "-n", rt, "-j", "-s", "-s", "link", "show", "r0").stdout)
        rx = stats[0]["stats64"]["rx"]
        assert rx.get("otherhost", 0) == 0, rx      # frames with the router's MACs
        assert_exact(s)
        assert s["latency"]["p50_ns"] < 1_000_000


CAPTURE = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(5)
want, out = int(sys.argv[2]), []
print("ready", flush=True)
while len(out) < want:
    try:
        f = s.recv(16384)
    except socket.timeout:
        break
    if f[0:6] == bytes.fromhex("02fb00000101"):   # ours, not ND/MLD of the kernel
        out.append(f.hex())
print("\n".join(out), flush=True)
"""


@pytest.mark.parametrize("l3,size,vary,pattern", [
    ("ipv4", 64, ["src_ip"], "sequential"),
    ("ipv4", "imix", ["src_ip", "dst_ip", "src_port", "dst_port"], "rfc4814"),
    ("ipv6", 82, ["dst_ip", "src_port"], "rfc4814"),
    ("ipv6", "imix", ["src_ip"], "sequential"),
])
def test_xdp_frames_on_the_wire_decode_with_scapy(loop, l3, size, vary, pattern):
    """Frames built by the BPF TX program, captured on the peer and checked by
    scapy: lengths, checksums, addresses per flow, ports, signature."""
    pytest.importorskip("scapy.all")
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    sh("ip", "netns", "exec", loop, "ethtool", "-K", "p1", "gro", "on")  # NAPI: accept XDP_TX
    cap = subprocess.Popen(["ip", "netns", "exec", loop, sys_python(), "-c", CAPTURE, "p1", "48"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert cap.stdout.readline().strip() == "ready"
    spec = loop_spec(2000, 0.3, l3=l3, frame_size=size, flows=8, warmup_s=0)
    spec["profile"].update(vary=vary, port_pattern=pattern)
    spec["streams"][0]["rx_port"] = None
    doc = run_ok(loop, spec)
    out, _ = cap.communicate(timeout=20)
    frames = [bytes.fromhex(x) for x in out.split()]
    assert len(frames) >= 24
    assert doc["streams"][0]["rx_backend"] == "none"
    seen_flows = set()
    for raw in frames:
        pkt = Ether(raw)
        assert pkt.dst == MAC1 and pkt.src == MAC0
        l3p = pkt[IP] if l3 == "ipv4" else pkt[IPv6]
        udp = pkt[UDP]
        payload = bytes(udp.payload)
        magic, stream, phase = payload[0:2], payload[4], payload[5]
        seq = int.from_bytes(payload[8:12], "big")
        assert magic == b"\x66\x67" and stream == 0 and phase == 2
        expect = size if size != "imix" else [82 if l3 == "ipv6" else 64, 64, 570, 64, 64, 570,
                                               1518, 64, 570, 64, 64, 570][seq % 12]
        if l3 == "ipv6" and size == "imix" and expect == 64:
            expect = 82
        assert len(raw) + 4 == expect, (seq, len(raw))
        clone = pkt.copy()
        del clone[UDP].chksum
        if l3 == "ipv4":
            del clone[IP].chksum
            assert l3p.len == len(raw) - 14
        else:
            assert l3p.plen == len(raw) - 54
        rebuilt = Ether(bytes(clone))
        assert udp.chksum == rebuilt[UDP].chksum != 0
        if l3 == "ipv4":
            assert l3p.chksum == rebuilt[IP].chksum
        flow = seq % 8
        base_src, base_dst = (("198.18.128.", "198.19.128.") if l3 == "ipv4" else
                              ("2001:2::", "2001:2:0:1::"))
        if l3 == "ipv4":
            src_k, dst_k = int(l3p.src.split(".")[-1]), int(l3p.dst.split(".")[-1])
        else:
            src_k = int(l3p.src.split(":")[-1] or "0", 16) - 0x100
            dst_k = int(l3p.dst.split(":")[-1] or "0", 16) - 0x100
        assert src_k == (flow if "src_ip" in vary else 0)
        assert dst_k == (flow if "dst_ip" in vary else 0)
        if "src_port" not in vary:
            assert udp.sport == 1024
        elif pattern == "sequential":
            assert udp.sport == 1024 + flow
        else:
            assert 1024 <= udp.sport <= 65535
        seen_flows.add((l3p.src, l3p.dst, udp.sport, udp.dport))
    assert len(seen_flows) == (1 if not vary else 8)


def sys_python() -> str:
    import sys
    return sys.executable


@pytest.mark.parametrize("backend", ["xdp", "afxdp", "afpacket"])
def test_asan_build_runs_clean(loop, backend):
    """fwdgen built with ASan/UBSan (make -C native test builds it) runs a short
    bidirectional trial with latency streams without a sanitizer report."""
    build_native("build/asan/fwdgen")
    spec = loop_spec(5_000, 0.5, bidir=True, backend=backend,
                     latency={"enabled": True, "rate_pps": 1000})
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    proc = subprocess.run(["ip", "netns", "exec", loop, str(BUILD / "asan" / "fwdgen"), "trial",
                           "--spec", "-"], input=json.dumps(spec), capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    for s in json.loads(proc.stdout)["streams"]:
        assert s["rx_packets"] == s["tx_packets"] == 2_500
