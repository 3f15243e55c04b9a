"""How the generator's ports receive (Lab.set_tg_rx): threaded NAPI on the
generator CPU, or inline on the DUT CPU for latency trials without load."""
from __future__ import annotations

import os

import pytest

from fwdbench.campaign import build_campaign
from fwdbench.lab import Lab, LabConfig
from helpers import assert_all_forwarded

CPUS = sorted(os.sched_getaffinity(0))
GEN, DUTC = CPUS[0], CPUS[-1]


def _threaded(lab, ifname):
    return lab.tg_exec.read_sysfs(f"/sys/class/net/{ifname}/threaded")


@pytest.mark.root
def test_switching_between_inline_and_napi():
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, napi_rt_priority=50)) as lab:
        assert lab.tg_rx == "napi"
        lab.set_tg_rx("inline")
        d = lab.describe()
        assert d["tg_rx"] == "inline"
        assert [_threaded(lab, i) for i in ("tg0", "tg1")] == ["0", "0"]
        # the DUT side keeps its NAPI threads; the tg side has none left
        assert {t["ifname"] for t in d["tuning"]} == {"dut0", "dut1"}
        # a handle from another process sees how the ports were left
        assert Lab.attach(lab.run_id).tg_rx == "inline"

        lab.set_tg_rx("napi")
        d = lab.describe()
        assert d["tg_rx"] == "napi"
        assert [_threaded(lab, i) for i in ("tg0", "tg1")] == ["1", "1"]
        assert Lab.attach(lab.run_id).tg_rx == "napi"
        tg_threads = [n for t in d["tuning"] if t["ifname"].startswith("tg") for n in t["napi"]]
        assert len(tg_threads) == 2
        for n in tg_threads:            # new kthreads: pinned and prioritised again
            assert os.sched_getaffinity(n["pid"]) == {GEN}
            assert os.sched_getscheduler(n["pid"]) == os.SCHED_FIFO
            assert os.sched_getparam(n["pid"]).sched_priority == 50

        with pytest.raises(Exception, match="must be napi or inline"):
            lab.set_tg_rx("softirq")


@pytest.mark.root
def test_idle_latency_trials_receive_inline_and_loaded_trials_do_not():
    """The campaign path: a latency trial without load stamps frames on the DUT
    CPU; the next throughput trial gets the generator CPU's NAPI back."""
    from fwdbench.testbed.netns import NetnsTestbed

    c = build_campaign({
        "campaign": {"name": "tg-rx"},
        "testbed": {"type": "netns", "gen_cpu": GEN, "dut_cpu": DUTC},
        "trial": {"duration": "1s", "warmup": "0.2s", "drain": "0.2s", "warmup_trial": False,
                  "latency_rate": 5000},
        "dut": [{"name": "r", "type": "linux", "params": {"mode": "router"}}],
        "profile": [{"name": "p", "frame_size": 64, "flows": 16}],
        "search": {"type": "sweep", "loads": ["20kpps"]},
    }, "test_lab_tg_rx.py")
    with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _describe):
        idle = execute(1.0, 0, 0, True)
        assert tb.lab.tg_rx == "inline"
        assert any("received inline on the DUT CPU" in w for w in idle.warnings)
        s = idle.streams[0]
        assert s.tx_packets == 5000 and s.rx_packets == s.tx_packets, s
        assert s.latency is not None and s.latency.samples == s.rx_packets
        assert 0 < s.latency.min_ns <= s.latency.p50_ns <= s.latency.max_ns

        loaded = execute(1.0, 20_000, 1, False)
        assert tb.lab.tg_rx == "napi"
        assert not any("inline" in w for w in loaded.warnings)
        assert_all_forwarded(loaded, 20_000)
