"""VPP's counters read by vpp_get_stats (what a DUT host over SSH uses) equal those
read from the statistics segment with vpp_papi, on one running VPP; VPP's
per-node runtime parsed from ``show runtime`` (dut/vpp/runtime.py)."""
from __future__ import annotations

import os
import tempfile
import time

import pytest

from fwdbench.dut.vpp.process import VppProcess
from fwdbench.dut.vpp.runtime import NodeRuntime, parse
from fwdbench.dut.vpp.startup import Startup
from fwdbench.dut.vpp.stats_remote import DumpView, RemoteVppStats
from fwdbench.lab.executor import Executor

from test_vpp_dut import need_vpp

def test_dump_view_reads_vpp_get_stats_lines():
    text = ("5.00 /sys/heartbeat\n"
            "[0]: local0 /if/names\n[2]: rd1 /if/names\n"
            "[2 @ 1]: 7 packets /if/drops\n"
            "[2 @ 0]: 3 packets, 180 bytes /if/rx\n[0 @ 1]: 1 packets, 60 bytes /if/rx\n"
            "[0 @ 0]: 4 packets /err/ip4-input/ip4 spoofed local-address packet dropped\n")
    v = DumpView(text)
    assert v["/sys/heartbeat"] == 5.0
    assert v["/if/names"] == ["local0", None, "rd1"]
    assert v["/if/drops"] == [[0, 0, 0], [0, 0, 7]]
    assert v["/if/rx"] == [[(0, 0), (0, 0), (3, 180)], [(1, 60), (0, 0), (0, 0)]]
    assert v.ls(["^/err/"]) == ["/err/ip4-input/ip4 spoofed local-address packet dropped"]
    with pytest.raises(KeyError):
        v["/if/tx"]


@pytest.mark.root
def test_vpp_get_stats_gives_the_segments_counters_and_show_runtime_the_nodes():
    inst = need_vpp()
    run_dir = tempfile.mkdtemp(prefix="fb-vppstats-")
    st = Startup(run_dir=run_dir, shm_prefix=f"fb-vppstats{os.getpid()}",
                 plugin_dir=inst.plugin_dir, plugins=("ping", "af_packet"),
                 main_core=sorted(os.sched_getaffinity(0))[-1], workers=(),
                 main_heap=256 << 20, buffers=16384)
    vp = VppProcess.start(inst, st, Executor(None))
    try:
        for cmd in ("create loopback interface", "set interface state loop0 up",
                    "set interface ip address loop0 198.18.99.1/24"):
            vp.api.cli(cmd)
        remote = RemoteVppStats(Executor(None), inst.get_stats, st.stats_socket)
        remote.connect()
        a, b = vp.stats.counters(), remote.counters()
        runtime = NodeRuntime()
        first = runtime.read(vp.api)
        vp.api.cli("ping 198.18.99.1 repeat 3 interval 0.01")     # nodes that run
        second = runtime.read(vp.api)
        shown = parse(vp.api.cli("show runtime"))
    finally:
        errors = vp.stop()
        import shutil
        shutil.rmtree(run_dir, ignore_errors=True)
    assert not errors
    assert a == b and any(k.startswith("loop0.") for k in a)
    assert not any(k.startswith("vpp_node.") for k in a)    # those are runtime.py's
    # the sums only grow, and each read starts VPP's runtime anew (clear runtime):
    # what `show runtime` shows right after a read is a fraction of the sums
    assert first and set(first) <= set(second)
    assert all(second[k] >= first[k] for k in first)
    moved = [k for k in second if k.endswith(".calls") and second[k] > first.get(k, 0)]
    assert "vpp_node.ip4-lookup.calls" in moved, sorted(second)
    for k in moved:
        node = k[len("vpp_node."):-len(".calls")]
        assert shown.get(node, {"calls": 0})["calls"] < second[k]


#: VPP v26.06's `show runtime` on the lab's memif router, 2 Mpps (2026-11-26)
SHOW_RUNTIME = """Thread 0 vpp_main (lcore 1)
Time 1.1, .100000 sec internal node vector rate 100.42 loops/sec 7624371.16
  vector rates in 1.9952e6, out 1.9952e6, drop 0.0000e0, punt 0.0000e0
             Name                 State         Calls          Vectors        Suspends      Packet-Clocks   Vectors/Call  
ethernet-input                   active              22082         2215636               0          3.02e1          100.34
fib-walk                       "any wait"                0               0               1          9.41e3            0.00
ip4-full-reassembly-expire-wal "any wait"                0               0              22          3.61e3            0.00
memif-input                      polling           8039075         2215636               0          2.40e2             .28
memif2/0-tx                      active              22082         2215636               0          1.70e1          100.34
statseg-collector-process      "suspended"               0               0              11          1.90e6            0.00
unix-cli-process-0              "running"                1               0               2          5.48e5            0.00
---------------
Thread 1 vpp_wk_0 (lcore 2)
Time 1.1, .100000 sec internal node vector rate 0.00 loops/sec 1000.00
             Name                 State         Calls          Vectors        Suspends      Packet-Clocks   Vectors/Call  
ethernet-input                   active                 10            1000               0          2.00e1          100.00
"""


def test_show_runtime_is_parsed_per_node_summed_over_threads():
    nodes = parse(SHOW_RUNTIME)
    assert nodes["ethernet-input"] == {"calls": 22092, "vectors": 2216636, "suspends": 0,
                                       "clocks": round(30.2 * 2215636) + 20 * 1000}
    # clocks per vector, else per call, else per suspend
    assert nodes["memif-input"]["clocks"] == round(240 * 2215636)
    assert nodes["unix-cli-process-0"]["clocks"] == 548000
    assert nodes["statseg-collector-process"] == {"calls": 0, "vectors": 0, "suspends": 11,
                                                  "clocks": round(1.9e6 * 11)}
    assert nodes["ip4-full-reassembly-expire-wal"]["suspends"] == 22   # quoted state, no gap
    assert "Name" not in nodes and "Thread" not in nodes and "Time" not in nodes


class _Api:
    def __init__(self, texts):
        self.texts, self.cleared = list(texts), 0

    def cli(self, cmd):
        if cmd == "clear runtime":
            self.cleared += 1
            return ""
        assert cmd == "show runtime"
        return self.texts.pop(0)


def test_node_runtime_sums_what_ran_between_reads_and_clears_each_time():
    line = "ip4-lookup                       active              {c}         {v}               0          1.00e1          1.00\n"
    api = _Api([line.format(c=2, v=200), line.format(c=3, v=300),
                "fib-walk   \"any wait\"   0   0   1   9.41e3   0.00\n"])
    rt = NodeRuntime()
    assert rt.read(api)["vpp_node.ip4-lookup.vectors"] == 200
    got = rt.read(api)
    assert got["vpp_node.ip4-lookup.vectors"] == 500 and got["vpp_node.ip4-lookup.calls"] == 5
    assert got["vpp_node.ip4-lookup.clocks"] == 5000
    got = rt.read(api)       # a node never called is not reported; the sums stay
    assert got["vpp_node.ip4-lookup.vectors"] == 500 and not any("fib-walk" in k for k in got)
    assert api.cleared == 3
