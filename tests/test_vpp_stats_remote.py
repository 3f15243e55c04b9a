"""VPP's counters read by vpp_get_stats (what a DUT host over SSH uses) equal those
read from the statistics segment with vpp_papi, on one running VPP."""
from __future__ import annotations

import os
import tempfile
import time

import pytest

from fwdbench.dut.vpp.process import VppProcess
from fwdbench.dut.vpp.startup import Startup
from fwdbench.dut.vpp.stats_remote import DumpView, RemoteVppStats
from fwdbench.lab.executor import Executor

from test_vpp_dut import need_vpp

#: counters that move on their own between two reads (the main loop's clocks and calls)
MOVING = (".clocks", ".calls", ".suspends")


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
def test_vpp_get_stats_gives_the_segments_counters():
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
        remote = RemoteVppStats(Executor(None), inst.get_stats, st.stats_socket,
                                st.stats_interval)
        remote.connect()
        time.sleep(3 * st.stats_interval)
        a, b = vp.stats.counters(), remote.counters()
    finally:
        errors = vp.stop()
        import shutil
        shutil.rmtree(run_dir, ignore_errors=True)
    assert not errors
    assert set(a) == set(b) and any(k.startswith("loop0.") for k in a)
    assert any(k.startswith("vpp_node.") for k in a)
    assert {k: v for k, v in a.items() if not k.endswith(MOVING)} == \
        {k: v for k, v in b.items() if not k.endswith(MOVING)}
