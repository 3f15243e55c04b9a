"""TRex's counters -> TrialResult, on answers recorded from a real TRex (v3.08,
af_packet ports in the lab, the Linux router as DUT; tests/data/trex), and the
"not measured" counts through the store and the report's trial rows.

Recorded with the agent's ``trial`` request: uni64-latency (20 kpps, 64 flows,
a 9 kpps latency stream), uni64-limited (3 Mpps asked: TRex fell behind and
was stopped after its catch-up time), bi-imix (20 kpps each way).
"""
import copy
import json
from pathlib import Path

import pytest

from fwdbench.campaign import Profile, TrialSettings
from fwdbench.lab.addressing import PORTS
from fwdbench.lab.executor import Executor
from fwdbench.report.reading import _generator_label, _measured_sum
from fwdbench.store import Store
from fwdbench.traffic import base
from fwdbench.traffic.trex.plan import build_plan
from fwdbench.traffic.trex.result import latency_summary, parse_trial
from helpers import store_campaign

DATA = Path(__file__).parent / "data" / "trex"


def recorded(name):
    doc = json.loads((DATA / f"{name}.json").read_text())
    r = doc["request"]
    req = base.TrialRequest(profile=Profile(**r["profile"]),
                            trial=TrialSettings(warmup=r["warmup"]), load_pps=r["load_pps"],
                            duration_s=r["duration_s"], latency=r["latency"])
    tester = base.TesterHost(name="t", exec=Executor(None), ports=PORTS, cpus=(0,))
    plan, smap = build_plan(tester, req)
    return doc["answer"], smap, plan


def parse(answer, smap, plan, kernel=True):
    return parse_trial(answer, smap, warmup_s=plan["warmup_s"], kernel_ports=kernel,
                       version="v3.08", backend="trex-af_packet")


def test_load_and_latency_stream_map_to_one_direction():
    answer, smap, plan = recorded("uni64-latency")
    r = parse(answer, smap, plan)
    (s,) = r.streams
    assert (s.tx_port, s.rx_port, s.intended_packets) == ("tg0", "tg1", 20000)
    fs = answer["stats"]["flow_stats"]["1"]
    assert s.tx_packets == fs["tx_pkts"]["0"] and s.rx_packets == fs["rx_pkts"]["1"]
    assert s.tx_bytes == s.tx_packets * 60 and s.rx_bytes == s.rx_packets * 60
    assert not s.tx_limited and r.warnings == []
    # not counted by TRex for load streams: None, never 0
    assert s.reordered is None and s.duplicated is None
    lat = s.latency
    lat_rx = answer["stats"]["flow_stats"]["100"]["rx_pkts"]["1"]
    assert lat.samples == lat_rx == r.raw["latency_streams"]["100"]["rx"]
    assert 0 < lat.min_ns <= lat.p50_ns <= lat.p90_ns <= lat.p99_ns <= lat.p999_ns <= lat.max_ns
    from hdrh.histogram import HdrHistogram
    assert HdrHistogram.decode(lat.hdr).get_total_count() == lat.samples
    assert lat.jitter_ns == answer["stats"]["latency"]["100"]["latency"]["jitter"] * 1000
    assert r.backend == "trex-af_packet" and r.raw["trex_version"] == "v3.08"
    assert r.raw["checks"]["port0"]["not_sent"] == 0


def test_trex_falling_behind_is_generator_limited_and_unsent_frames_are_lost():
    answer, smap, plan = recorded("uni64-limited")
    assert answer["times"]["stopped"]
    r = parse(answer, smap, plan)
    (s,) = r.streams
    assert s.intended_packets == 3_000_000 and s.tx_packets < s.intended_packets
    assert s.tx_limited and r.generator_limited
    assert s.lost == s.intended_packets - s.rx_packets
    assert s.achieved_tx_pps == pytest.approx(s.tx_packets / answer["times"]["tx_s"], rel=0.02)
    assert any("within the trial" in w and "stopped" in w for w in r.warnings)


def test_frames_trex_counted_but_the_kernel_never_took_are_not_sent():
    answer, smap, plan = recorded("uni64-latency")
    a = copy.deepcopy(answer)
    a["kernel"]["after"]["tg0"]["tx_packets"] -= 5000
    r = parse(a, smap, plan)
    (s,) = r.streams
    load_tx = answer["stats"]["flow_stats"]["1"]["tx_pkts"]["0"]
    lat_tx = answer["stats"]["flow_stats"]["100"]["tx_pkts"]["0"]
    # the port's shortfall is shared over its streams by what TRex says each sent
    assert s.tx_packets == load_tx - round(5000 * load_tx / (load_tx + lat_tx))
    assert s.tx_limited and r.raw["checks"]["port0"]["not_sent"] == 5000
    assert any("never left the tester" in w for w in r.warnings)
    # without kernel ports (an attached server) TRex's count stands
    assert not parse(a, smap, plan, kernel=False).streams[0].tx_limited


def test_without_kernel_ports_frames_the_port_driver_never_sent_are_not_sent():
    """memif: TRex's low_end mode drops frames at a full ring and still counts
    them per stream; the port's own driver count (opackets) is what the DUT got."""
    answer, smap, plan = recorded("uni64-latency")
    a = copy.deepcopy(answer)
    assert parse(a, smap, plan, kernel=False).raw["checks"]["port0"]["not_sent"] == 0
    a["stats"]["0"]["opackets"] -= 300
    r = parse(a, smap, plan, kernel=False)
    (s,) = r.streams
    load_tx = answer["stats"]["flow_stats"]["1"]["tx_pkts"]["0"]
    lat_tx = answer["stats"]["flow_stats"]["100"]["tx_pkts"]["0"]
    assert s.tx_packets == load_tx - round(300 * load_tx / (load_tx + lat_tx))
    assert r.raw["checks"]["port0"]["not_sent"] == 300
    assert s.tx_limited            # 300 of 20000 intended: above 0.5 %
    assert any("its port driver sent" in w and "full transmit queue" in w for w in r.warnings)
    a["stats"]["0"]["opackets"] += 290                   # 10 short: noted, not limiting
    r = parse(a, smap, plan, kernel=False)
    assert not r.streams[0].tx_limited and r.raw["checks"]["port0"]["not_sent"] == 10


def test_frames_trex_did_not_receive_flag_the_generator_not_the_dut():
    answer, smap, plan = recorded("uni64-latency")
    a = copy.deepcopy(answer)
    a["stats"]["1"]["ipackets"] -= 1000      # the kernel delivered them, TRex missed them
    r = parse(a, smap, plan)
    assert r.streams[0].tx_limited and r.raw["checks"]["port1"]["rx_missed"] == 1000
    assert any("receive on port 1 missed 1000" in w for w in r.warnings)


def test_bidirectional_imix_counts_each_size_at_its_length():
    answer, smap, plan = recorded("bi-imix")
    r = parse(answer, smap, plan)
    assert [(s.tx_port, s.rx_port) for s in r.streams] == [("tg0", "tg1"), ("tg1", "tg0")]
    fs = answer["stats"]["flow_stats"]
    for d, s in enumerate(r.streams):
        pgs = {1 + 8 * d + k: size for k, size in enumerate((64, 570, 1518))}
        assert s.tx_packets == sum(fs[str(pg)]["tx_pkts"][str(d)] for pg in pgs)
        assert s.tx_bytes == sum(fs[str(pg)]["tx_pkts"][str(d)] * (size - 4)
                                 for pg, size in pgs.items())
        n64, n570, n1518 = (fs[str(pg)]["tx_pkts"][str(d)] for pg in pgs)
        assert abs(n64 / n1518 - 7) < 0.1 and abs(n570 / n1518 - 4) < 0.1
        assert s.latency is None and not s.tx_limited


def test_trex_coarse_histogram_without_hdrh_gives_bucket_upper_bounds():
    rec = {"latency": {"histogram": {"0": 10, "20": 80, "300": 10}, "total_min": 4,
                       "total_max": 350, "average": 30.0, "jitter": 5}}
    lat, notes = latency_summary([rec])
    assert (lat.samples, lat.p50_ns, lat.p99_ns, lat.max_ns) == (100, 30_000, 400_000, 350_000)
    assert "coarse histogram" in notes[0]


def test_not_measured_survives_the_store_and_the_report_rows(tmp_path):
    answer, smap, plan = recorded("uni64-latency")
    r = parse(answer, smap, plan)
    st = Store(tmp_path / "r.sqlite")
    sid = store_campaign(st)
    from helpers import intent
    tid = st.begin_trial(sid, 0, 0, intent("search", "sweep"), 1.0, 20000.0)
    st.finish_trial(tid, r)
    st.close()
    [row] = Store(tmp_path / "r.sqlite").done_trials(sid, 0)
    s = row.result.streams[0]
    assert s.reordered is None and s.duplicated is None and s.latency == r.streams[0].latency
    assert _measured_sum(x.reordered for x in row.result.streams) is None
    assert _measured_sum([0, 2]) == 2
    assert _generator_label(row.result) == "TRex v3.08 (af_packet)"
