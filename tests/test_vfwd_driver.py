"""The `vfwd` DUT driver without a lab: parameter validation (errors name the
field), the config it writes, statistics parsing, and the vfwd binary itself
in pg-input mode (no root needed): config errors name the line, per-node
statistics, vector 256 vs 1, the control socket.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fwdbench.dut import load_drivers
from fwdbench.dut.vfwd import (VfwdDut, VfwdParams, _Port, flatten_stats, query, render_config,
                               resolve_rings, resolve_rx_mode, vfwd_binary)
from fwdbench.dut.host import PortRx
from fwdbench.errors import CampaignError

ROOT = Path(__file__).resolve().parents[1]
VFWD = vfwd_binary()
needs_vfwd = pytest.mark.skipif(not VFWD.exists(), reason=f"{VFWD} not built (make -C native/vfwd)")


def lab_ports():
    return [SimpleNamespace(
        tg=SimpleNamespace(ifname=f"tg{i}", mac=f"02:fb:00:00:00:0{i + 1}",
                           ip4=("198.18.0.1", "198.19.0.1")[i], ip6=("2001:2::1", "2001:2:0:1::1")[i]),
        dut=SimpleNamespace(ifname=f"dut{i}", mac=f"02:fb:00:00:01:0{i + 1}",
                            ip4=("198.18.0.2", "198.19.0.2")[i], ip6=("2001:2::2", "2001:2:0:1::2")[i]),
        flows4=("198.18.128.0/17", "198.19.128.0/17")[i],
        flows6=("2001:2:0:10::/64", "2001:2:0:11::/64")[i]) for i in range(2)]


def test_registered():
    assert load_drivers()["vfwd"] is VfwdDut


@pytest.mark.parametrize("params, field", [
    ({"max_vector": 0}, "dut[0].params.max_vector"),
    ({"max_vector": 257}, "dut[0].params.max_vector"),
    ({"mode": "vpp"}, "dut[0].params.mode"),
    ({"routes": 3}, "dut[0].params.routes"),
    ({"ring_size": 1000}, "dut[0].params.ring_size"),
    ({"nat_pool": "10.0.0.1"}, "dut[0].params.nat_pool"),
    ({"work": {"hash": "md5"}}, "dut[0].params.work.hash"),
    ({"bogus": 1}, "dut[0].params.bogus"),
    ({"mode": "xconnect", "routes": 4}, "dut[0].params"),
    ({"mode": "router", "work": {"hashes": 3}}, "dut[0].params"),
    ({"workers": 1, "cpus": [0, 1]}, "dut[0].params.cpus"),
    ({"rx_mode": "sometimes"}, "dut[0].params.rx_mode"),
    ({"sched_priority": 100}, "dut[0].params.sched_priority"),
    ({"fill_depth": 8}, "dut[0].params.fill_depth"),
    ({"fill_depth": 1024, "ring_size": 256}, "dut[0].params"),
    ({"mode": "nat44", "workers": 2}, "workers = 2: mode 'nat44' keeps its sessions per worker"),
])
def test_validate_names_the_field(params, field):
    with pytest.raises(CampaignError) as e:
        VfwdDut.validate(params, "dut[0].params")
    assert field in str(e.value)


def test_validate_normalises():
    p = VfwdDut.validate({"mode": "work", "work": {"hashes": 2, "hash": "jhash"}}, "dut")
    assert p["max_vector"] == 256 and p["work"]["hashes"] == 2 and p["work"]["recirc"] == 0


def test_render_router_config():
    p = VfwdParams(mode="router", routes=4, max_vector=64, prefetch=False)
    ports = [_Port(x, i) for i, x in enumerate(lab_ports())]
    text = render_config(p, ports, [1])
    assert "max-vector 64\n" in text and "prefetch off\n" in text and "cpus 1\n" in text
    assert "port 0 dut0 driver auto mac 02:fb:00:00:01:01 ip4 198.18.0.2" in text
    assert "neighbor 198.19.0.1 02:fb:00:00:00:02 port 1" in text
    routes = [l for l in text.splitlines() if l.startswith("route ")]
    assert len(routes) == 2 * 2 * 4                 # 2 ports x (ip4 + ip6) x 4
    assert "route 198.19.224.0/19 via 198.19.0.1 port 1" in text


def test_render_refuses_ranges_outside_the_benchmarking_nets():
    ports = [_Port(x, i) for i, x in enumerate(lab_ports())]
    ports[1].flows4 = "10.0.0.0/8"
    from fwdbench.errors import DutError
    with pytest.raises(DutError, match="benchmarking"):
        render_config(VfwdParams(), ports, [0])


def test_peer_macs():
    host = SimpleNamespace(ports=lab_ports())
    assert VfwdDut({"mode": "router"}).peer_macs(host) == {"tg0": "02:fb:00:00:01:01",
                                                          "tg1": "02:fb:00:00:01:02"}
    assert VfwdDut({"mode": "xconnect"}).peer_macs(host) == {"tg0": "02:fb:00:00:00:02",
                                                            "tg1": "02:fb:00:00:00:01"}
    assert VfwdDut({"mode": "bridge"}).peer_macs() == {"tg0": "02:fb:00:00:00:02",
                                                       "tg1": "02:fb:00:00:00:01"}
    assert VfwdDut({}).pids() == []


def test_flatten_stats():
    st = {"nodes": {"ip4-input": {"calls": 2, "packets": 300, "clocks": 9000},
                    "port-input": {"calls": 50, "packets": 300, "clocks": 7000,
                                   "idle_calls": 47}},
          "drops": {"ip4-input: bad checksum": 3, "ethernet-input: arp (no control plane)": 1},
          "drops_total": 4,
          "bridge": {"entries": 2, "learnt": 18, "flooded": 19, "aged": 16},
          "ports": [{"port": 1, "ifname": "dut1", "rx_packets": 0, "rx_bytes": 0,
                     "tx_packets": 296, "tx_bytes": 17760, "tx_dropped": 0}]}
    c = flatten_stats(st)
    assert c["vfwd_ip4_input_packets"] == 300 and c["vfwd_ip4_input_clocks"] == 9000
    assert c["vfwd_port_input_idle_calls"] == 47 and c["vfwd_ip4_input_idle_calls"] == 0
    assert c["vfwd_drop_ip4_input_bad_checksum"] == 3
    assert c["vfwd_drop_ethernet_input_arp_no_control_plane"] == 1
    assert c["dut1_tx_packets"] == 296 and c["vfwd_drops_total"] == 4
    assert c["vfwd_bridge_learnt"] == 18 and c["vfwd_bridge_aged"] == 16
    assert "vfwd_bridge_entries" not in c


# ---- the binary in pg mode (no root) -----------------------------------------

PG = """mode router
max-vector {mv}
port 0 pg0 driver pg mac 02:fb:00:00:01:01
port 1 pg1 driver pg mac 02:fb:00:00:01:02
neighbor 198.19.0.1 02:fb:00:00:00:02 port 1
route 198.19.128.0/17 via 198.19.0.1
pg port 0 size 64 flows 64 src 198.18.128.0/17 dst 198.19.128.0/17 packets {n}
"""


def run_vfwd(tmp_path, text, *args, timeout=60):
    conf = tmp_path / "v.conf"
    conf.write_text(text)
    return subprocess.run([str(VFWD), "-c", str(conf), *args], capture_output=True, text=True,
                          timeout=timeout)


def final_stats(stdout: str) -> dict:
    return json.loads(stdout[stdout.index('{"vfwd_version"'):])


@needs_vfwd
def test_pg_fewer_packets_than_workers_ends(tmp_path):
    """pg packets 1 over 2 workers: one sends it, the other has none to send;
    both are done and vfwd exits (a worker with a zero share used to run
    without a limit)."""
    r = run_vfwd(tmp_path, "workers 2\ncpus 0\n" + PG.format(mv=256, n=1), timeout=30)
    assert r.returncode == 0, r.stderr
    assert final_stats(r.stdout)["ports"][1]["tx_packets"] == 1


@needs_vfwd
def test_pg_stats_and_vector_sizes(tmp_path):
    out = {}
    for mv in (256, 1):
        r = run_vfwd(tmp_path, PG.format(mv=mv, n=257 * 40))
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith('{"event": "ready"')
        st = final_stats(r.stdout)
        nodes = st["nodes"]
        for n in ("pg-input", "ethernet-input", "ip4-input", "ip4-lookup", "ip4-rewrite",
                  "port-output"):
            assert nodes[n]["packets"] == 257 * 40, n
            assert nodes[n]["clocks"] > 0
        assert st["ports"][1]["tx_packets"] == 257 * 40
        assert st["drops_total"] == 0
        # the worker's busy clocks time whole passes: every node call runs
        # inside one, so they are at least the nodes' clocks together
        w = st["workers_detail"][0]
        assert w["busy_clocks"] >= sum(v["clocks"] for v in w["nodes"].values()) > 0
        out[mv] = nodes["ip4-input"]["vectors_per_call"]
    assert out[1] == 1.0 and out[256] > 200


@needs_vfwd
@pytest.mark.parametrize("text, line, words", [
    ("port 0 a driver pg\nmax-vector 0\n", 2, "max-vector"),
    ("port 0 a driver pg\n\n# x\nroute 10.0.0.0/8 via 10.0.0.1\n", 4, "no neighbour"),
    ("port 0 a driver pg\nmode fast\n", 2, "mode: 'fast'"),
    ("port 0 a driver pg\nrx-mode sometimes\n", 2, "rx-mode: 'sometimes' must be poll"),
    ("port 0 a driver pg\n\nsched-priority 100\n", 3, "sched-priority: '100' must be 0"),
    ("port 0 a driver pg\nfill-depth 8\n", 2, "fill-depth: '8' must be 16"),
    ("port 0 a driver pg\nfill-depth 2048\nring-size 512\n", 2,
     "fill-depth 2048 is more than the fill ring holds (2 x ring-size = 1024)"),
])
def test_config_errors_name_the_line(tmp_path, text, line, words):
    r = run_vfwd(tmp_path, text, "--check")
    assert r.returncode == 2
    assert f"v.conf:{line}:" in r.stderr and words in r.stderr


@needs_vfwd
@pytest.mark.parametrize("lines, mode, prio", [
    ("", "adaptive", 0),                         # the binary's own default
    ("rx-mode interrupt\nsched-priority 0\n", "interrupt", 0),
    ("busy-poll on\n", "poll", 0),              # the older spelling
    ("busy-poll off\n", "adaptive", 0),
])
def test_rx_mode_in_stats(tmp_path, lines, mode, prio):
    r = run_vfwd(tmp_path, PG.format(mv=256, n=10) + lines)
    assert r.returncode == 0, r.stderr
    st = final_stats(r.stdout)
    assert (st["rx_mode"], st["sched_priority"]) == (mode, prio)
    assert st["drops_total"] == 0 and st["nodes"]["port-output"]["packets"] > 0


@needs_vfwd
@pytest.mark.parametrize("lines, ring, depth", [
    ("", 2048, 256),                             # the binary's own defaults
    ("ring-size 512\nfill-depth 1024\n", 512, 1024),
    ("ring-size 64\n", 64, 128),                # the default follows a small ring
])
def test_ring_and_fill_depth_in_stats(tmp_path, lines, ring, depth):
    r = run_vfwd(tmp_path, PG.format(mv=256, n=10) + lines)
    assert r.returncode == 0, r.stderr
    st = final_stats(r.stdout)
    assert (st["ring_size"], st["fill_depth"]) == (ring, depth)


def lab_for_rx_mode(napi_prio: int, tuning: bool = True, dut_cpu: int = 1,
                    ingress: str = "napi", queue: int = 0) -> PortRx:
    """The DUT ports' receive as the netns lab reports it (NetnsDutHost.rx)."""
    if not tuning:
        return PortRx(ingress="napi")
    return PortRx(ingress=ingress, queue=queue, napi_cpu=0 if ingress == "afxdp" else dut_cpu,
                  rt_priority=napi_prio)


@pytest.mark.parametrize("params, cpus, lab, want", [
    ({}, [1], lab_for_rx_mode(50), ("interrupt", 51)),      # FIFO NAPI on the worker's CPU
    ({}, [1], lab_for_rx_mode(99), ("interrupt", 99)),
    ({}, [0], lab_for_rx_mode(50), ("poll", 0)),            # NAPI elsewhere: spin
    ({}, [1], lab_for_rx_mode(0), ("poll", 0)),             # CFS NAPI threads
    ({}, [1], lab_for_rx_mode(50, tuning=False), ("poll", 0)),
    ({"rx_mode": "interrupt"}, [1], lab_for_rx_mode(50), ("interrupt", 51)),
    ({"rx_mode": "interrupt"}, [0], lab_for_rx_mode(50), ("interrupt", 0)),
    ({"rx_mode": "interrupt", "sched_priority": 0}, [1], lab_for_rx_mode(50), ("interrupt", 0)),
    ({"rx_mode": "poll"}, [1], lab_for_rx_mode(50), ("poll", 50)),     # take turns with NAPI
    ({"rx_mode": "adaptive"}, [1], lab_for_rx_mode(50), ("adaptive", 50)),
    ({"rx_mode": "poll", "sched_priority": 0}, [1], lab_for_rx_mode(50), ("poll", 0)),
    ({"rx_mode": "adaptive", "sched_priority": 7}, [1], lab_for_rx_mode(50), ("adaptive", 7)),
    ({"rx_mode": "poll", "sched_priority": 60}, [0], lab_for_rx_mode(50), ("poll", 60)),
    # afxdp ingress: NAPI fills the rings from the generator's CPU
    ({}, [1], lab_for_rx_mode(50, ingress="afxdp"), ("interrupt", 51)),
    ({"rx_mode": "poll"}, [1], lab_for_rx_mode(50, ingress="afxdp"), ("poll", 0)),
    ({"rx_mode": "poll", "sched_priority": 60}, [1], lab_for_rx_mode(50, ingress="afxdp"),
     ("poll", 60)),                                          # nothing of the lab's to starve
    ({}, [1], lab_for_rx_mode(50, tuning=False, ingress="afxdp"), ("poll", 0)),
    # memif: poll at the priority the lab gives a polling data plane
    ({}, [1], PortRx(ingress="memif", rt_priority=50), ("poll", 50)),
    ({}, [1], PortRx(ingress="memif"), ("poll", 0)),
    ({"sched_priority": 0}, [1], PortRx(ingress="memif", rt_priority=50), ("poll", 0)),
    ({"rx_mode": "interrupt"}, [1], PortRx(ingress="memif", rt_priority=50), ("interrupt", 50)),
])
def test_resolve_rx_mode(params, cpus, lab, want):
    assert resolve_rx_mode(VfwdParams(**params), cpus, lab) == want


def test_resolve_rx_mode_refuses_a_spinner_above_the_napi_threads():
    from fwdbench.errors import DutError
    with pytest.raises(DutError, match=r"rx_mode = 'poll' with sched_priority = 60 .*"
                                       r"napi_rt_priority = 50.*rx_mode = \"interrupt\""):
        resolve_rx_mode(VfwdParams(rx_mode="poll", sched_priority=60), [1], lab_for_rx_mode(50))


@pytest.mark.parametrize("params, lab, want", [
    ({}, None, (2048, 256)),
    ({"ring_size": 64}, None, (64, 128)),
    # behind the afxdp ingress the rings hold the lab's queue
    ({}, lab_for_rx_mode(50, ingress="afxdp", queue=4096), (4096, 4096)),
    ({}, lab_for_rx_mode(50, ingress="afxdp", queue=1024), (2048, 1024)),
    ({}, lab_for_rx_mode(50, ingress="afxdp", queue=3000), (4096, 3000)),
    ({}, lab_for_rx_mode(50, ingress="afxdp", queue=16384), (16384, 16384)),
    ({"ring_size": 1024}, lab_for_rx_mode(50, ingress="afxdp", queue=4096), (1024, 1024)),
    ({}, lab_for_rx_mode(50, ingress="afxdp", queue=0), (2048, 256)),
    ({}, lab_for_rx_mode(50, ingress="cpumap", queue=4096), (2048, 256)),
    ({"fill_depth": 512}, lab_for_rx_mode(50, ingress="afxdp", queue=4096), (4096, 512)),
    # memif: half the M2S ring waits for the generator's frames
    ({}, PortRx(ingress="memif"), (2048, 1024)),
    ({"ring_size": 8192}, PortRx(ingress="memif"), (8192, 4096)),
    ({"fill_depth": 300}, PortRx(ingress="memif"), (2048, 300)),
])
def test_resolve_rings(params, lab, want):
    assert resolve_rings(VfwdParams(**params), lab) == want


@pytest.mark.parametrize("params, rx, want", [
    ({}, PortRx(ingress="memif"), (8192, 4096)),            # testbed.memif_ring_size
    ({"ring_size": 512}, PortRx(ingress="memif"), (512, 256)),  # vfwd's own param wins
    ({}, PortRx(ingress="napi"), (2048, 256)),              # not a memif port: no effect
])
def test_resolve_rings_takes_the_memif_links_ring_size(params, rx, want):
    assert resolve_rings(VfwdParams(**params), rx, memif_ring=8192) == want


def test_render_config_rx_mode():
    ports = [_Port(x, i) for i, x in enumerate(lab_ports())]
    text = render_config(VfwdParams(), ports, [1], "interrupt", 51)
    assert "rx-mode interrupt\nsched-priority 51\n" in text
    assert "ring-size 2048\nfill-depth 256\n" in text
    text = render_config(VfwdParams(ring_size=4096, fill_depth=8192), ports, [1], "poll", 0)
    assert "ring-size 4096\nfill-depth 8192\n" in text
    # the default follows a ring too small for it instead of refusing the ring
    text = render_config(VfwdParams(ring_size=64), ports, [1], "poll", 0)
    assert "ring-size 64\nfill-depth 128\n" in text


@needs_vfwd
def test_check_reports_fib(tmp_path):
    r = run_vfwd(tmp_path, PG.format(mv=256, n=1) + "routes-random 1000 via 198.19.0.1 "
                 "port 1 len 16-24 within 0.0.0.0/1\n", "--check")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["routes4"] == 1001 and info["lpm"] == "dir24"


@needs_vfwd
def test_control_socket(tmp_path):
    conf = tmp_path / "v.conf"
    conf.write_text(PG.format(mv=256, n=0) + "trace 4\n")
    sock = str(tmp_path / "s")
    p = subprocess.Popen([str(VFWD), "-c", str(conf), "-s", sock], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().startswith('{"event": "ready"')
        time.sleep(0.3)
        st = query(sock, "stats")
        assert st["nodes"]["ip4-rewrite"]["packets"] > 0
        tr = query(sock, "trace")["trace"]
        # 4 packets followed through the graph, as VPP's trace does
        assert [t["node"] for t in tr].count("pg-input") == 4
        assert [t["node"] for t in tr].count("ip4-rewrite") == 4
        assert any(t["node"] == "ip4-rewrite" and "ttl 63" in t["text"] for t in tr)
        assert query(sock, "ping") == {"pong": True}
        assert "error" in query(sock, "bogus")
        assert query(sock, "quit") == {"stopping": True}
        p.wait(10)
        assert p.returncode == 0
        assert not Path(sock).exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def start_endless_xconnect(tmp_path) -> subprocess.Popen:
    """vfwd in pg xconnect mode without a packet limit, once it is ready."""
    conf = tmp_path / "v.conf"
    conf.write_text(PG.format(mv=256, n=0).replace("mode router", "mode xconnect")
                    + "xconnect 0 1\n")
    p = subprocess.Popen([str(VFWD), "-c", str(conf)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith('{"event": "ready"')
    time.sleep(0.2)
    return p


@needs_vfwd
def test_sigterm_prints_final_stats(tmp_path):
    p = start_endless_xconnect(tmp_path)
    p.terminate()
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    st = json.loads(out)
    assert st["mode"] == "xconnect" and st["nodes"]["l2-xconnect"]["packets"] > 0


@needs_vfwd
def test_a_worker_whose_cpu_is_taken_counts_the_stall(tmp_path):
    """A spinning worker stopped for 50 ms (SIGSTOP: its CPU taken, as by a
    preemption or a stolen vCPU) counts one pass that began > 4 ms late; left
    alone it counts none (what a lossy trial over memif is read with)."""
    p = start_endless_xconnect(tmp_path)
    try:
        p.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        p.send_signal(signal.SIGSTOP)
        time.sleep(0.05)
        p.send_signal(signal.SIGCONT)
        time.sleep(0.2)
    finally:
        p.terminate()
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    dec = json.JSONDecoder()
    before, end = dec.raw_decode(out, out.find("{"))
    final, _ = dec.raw_decode(out, out.find("{", end))
    b, f = (flatten_stats(d) for d in (before, final))
    assert f["vfwd_worker_stalls_over_4ms"] - b["vfwd_worker_stalls_over_4ms"] >= 1
    assert f["vfwd_worker_stalls_over_1ms"] >= f["vfwd_worker_stalls_over_4ms"]
    # the trial's warning, from the deltas
    d = {k: f[k] - b.get(k, 0) for k in f}
    note, = VfwdDut({"mode": "xconnect"}).trial_notes(d)
    assert "lost its CPU for over 1 ms" in note and "over 4 ms" in note
    assert VfwdDut({"mode": "xconnect"}).trial_notes({**d, "vfwd_worker_stalls_over_1ms": 0}) == []


@needs_vfwd
def test_sigusr1_prints_stats_while_running(tmp_path):
    """SIGUSR1 prints the statistics and vfwd goes on; the final ones at exit
    count more."""
    p = start_endless_xconnect(tmp_path)
    p.send_signal(signal.SIGUSR1)
    time.sleep(0.3)
    assert p.poll() is None, "SIGUSR1 stopped vfwd"
    p.terminate()
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    dec, docs, i = json.JSONDecoder(), [], out.find("{")
    while i >= 0:
        doc, end = dec.raw_decode(out, i)
        docs.append(doc)
        i = out.find("{", end)
    assert len(docs) == 2 and all(d["mode"] == "xconnect" for d in docs)
    first, final = (d["nodes"]["l2-xconnect"]["packets"] for d in docs)
    assert 0 < first < final


@needs_vfwd
def test_bench_script_smoke():
    import re
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "vfwd_nodes.py"), "--runs", "1",
                        "--packets", "20000", "--only", "ip4-1route", "--only", "l2-bridge"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "== ip4-1route" in r.stdout and "VPP 94" in r.stdout and "ip4-rewrite" in r.stdout
    assert "== l2-bridge" in r.stdout and "vector 1:" in r.stdout
    m = re.search(r"whole loop with pg-input \(measured.*\): ([\d.]+) \(vector 256\), "
                  r"([\d.]+) \(vector 1\)", r.stdout)
    assert m and float(m.group(1)) > 0 and float(m.group(2)) > 0, r.stdout
    # the vector-256-over-1 target is judged on the ip4 path only
    ip4, l2 = r.stdout.split("== l2-bridge")
    assert "target >= 2x: " in ip4 and "target >= 2x" not in l2


@needs_vfwd
def test_bench_callgrind_counts_instructions():
    """--callgrind: instructions per packet per node from callgrind_annotate
    (deterministic; 177 on the ip4 path when written)."""
    import re
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "vfwd_nodes.py"), "--runs", "1",
                        "--packets", "20000", "--only", "ip4-1route", "--callgrind",
                        "--cg-packets", "4096"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"instructions/packet on the path \(callgrind, vector 256\): ([\d.]+)", r.stdout)
    assert m and 100 < float(m.group(1)) < 400, r.stdout
    rows = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines() if ln.startswith("   ip4-")}
    assert all(float(rows[n][-1]) > 5 for n in ("ip4-input", "ip4-lookup", "ip4-rewrite")), rows


@needs_vfwd
def test_setup_failure_names_the_port():
    """vfwd exits 3 when a port cannot be opened; setup() raises DutError with
    vfwd's message and leaves nothing behind."""
    from fwdbench.errors import DutError
    ports = lab_ports()
    for i, p in enumerate(ports):
        p.dut.ifname = f"fbnx{i}none"           # no such interface
    from fwdbench.lab.executor import Executor
    from helpers import PlainDutHost
    d = VfwdDut({"mode": "router", "driver": "afpacket"})
    with pytest.raises(DutError) as e:
        d.setup(PlainDutHost(Executor(None), ports))
    assert "exited with" in str(e.value) and "fbnx0none" in str(e.value)
    assert d._proc is None and d._dir is None
    d.teardown()
