"""The report model on hand-made stores: bit rates, meters, histograms, warnings, units."""
from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import goal_rows, intent

from fwdbench.goal import NDR, PDR
from fwdbench.report import build_report, load_model
from fwdbench.report.model import (goal_label, hdr_values_counts, merged_cdf,
                                    meter_fields, methodology_text)
from fwdbench.report.numbers import integer, l1_bps, l2_bps, mpps, p_value, sig, us
from fwdbench.store import Store
from fwdbench.trial import LatencySummary, StreamResult, TrialResult


def _trial(load: float, dur: float, lost_share: float, streams: int = 2,
           frame_l2: int = 60, meters: dict | None = None, hdr: str | None = None,
           limited: bool = False) -> TrialResult:
    out = []
    for i in range(streams):
        n = int(load * dur)
        rx = n - int(n * lost_share)
        lat = LatencySummary(rx, 5000, 6000, 5800, 7000, 9000, 12000, 30000, 300.0, hdr)
        out.append(StreamResult(i, f"tg{i}", f"tg{1 - i}", load, n, n, n * frame_l2, rx,
                                rx * frame_l2, achieved_tx_pps=load * (0.9 if limited else 1),
                                tx_limited=limited, latency=lat))
    return TrialResult(load, dur, out, backend="test", meters=meters or {})


def _store(path, frame_size, direction="bi", meters=None, hdr=None, steal=None) -> int:
    st = Store(path)
    cid = st.create_campaign(
        name="hand", source_path="hand.toml", config_text='[campaign]\nname = "hand"\n',
        config={"campaign": {"name": "hand", "repetitions": 2},
                "testbed": {"type": "netns", "gen_cpu": 0, "dut_cpu": 1},
                "trial": {"duration": "1s", "warmup": "0.5s"}},
        host={"kernel": "6.1.0", "cpu_model": "Test CPU", "nproc": 2}, tool_version="0.1.0")
    sid = st.add_scenario(cid, 0, "dut imix", "dut", "linux", {"mode": "router"},
                          {"name": "imix", "frame_size": frame_size, "flows": 4,
                           "direction": direction, "l3": "ipv4"},
                          {"type": "binary", "loss_ratios": [0.0, 0.005]},
                          {"dut": "dut", "profile": "imix"}, 1e7)
    for rep, pdr in ((0, 1.0e6), (1, 1.2e6)):
        for seq, (load, loss) in enumerate(((0.5e6, 0.0), (pdr, 0.004), (2e6, 0.3))):
            m = dict(meters or {})
            if steal is not None:
                m = {**m, "cpu": {**m.get("cpu", {}), "dut": {
                    **m.get("cpu", {}).get("dut", {}), "steal": steal}}}
            t = st.begin_trial(sid, rep, seq, intent("search", f"binary: try {load:.0f}"), 1.0, load)
            st.finish_trial(t, _trial(load, 1.0, loss, meters=m, hdr=hdr))
        st.save_results(sid, rep, [(0.0, 0.5e6, {}), (0.005, pdr, {}),
                                   (None, None, {"search": "binary"})])
    st.close()
    return sid


def test_imix_bidirectional_bit_rates(tmp_path):
    _store(tmp_path / "h.sqlite", "imix")
    m = load_model(tmp_path / "h.sqlite")
    s = m.scenarios[0]
    assert set(s.goals) == {NDR, PDR}          # the 'search' record is no goal
    pdr = s.goals[PDR].estimate.mean
    assert pdr == pytest.approx(1.1e6)
    mean_frame = (7 * 64 + 4 * 570 + 1518) / 12
    assert l2_bps(pdr, "imix") == pytest.approx(pdr * mean_frame * 8)
    assert l1_bps(pdr, "imix") == pytest.approx(pdr * (mean_frame + 20) * 8)
    html = build_report(tmp_path / "h.sqlite", tmp_path / "out").read_text()
    # both directions count in the bit rate; the packet rate is per direction
    row = html[html.index('id="bitrate-table"'):]
    row = row[:row.index("</tr>", row.index("<tbody>"))]
    assert "<td>IMIX</td><td>2</td>" in row
    assert f">{mpps(pdr)}<" in row
    assert f">{l1_bps(pdr, 'imix') * 2 / 1e9:.3f}<" in row
    assert f">{l2_bps(pdr, 'imix') * 2 / 1e9:.3f}<" in row
    assert "bidirectional" in s.group_label


def test_meters_of_an_energy_session_are_read_and_labelled(tmp_path):
    meters = {"schema": 1,
              "cpu": {"dut_cpus": [1], "dut": {"cpus": "1", "utilisation": 0.42,
                                               "softirq_share": 0.9, "steal": 0.0},
                      "cycles_per_packet_estimated": 812.5},
              "energy": {"source": "rapl", "measured": True, "label": "measured",
                         "joules": 30.0, "mean_watts": 30.0, "packets_per_joule": 66666.7,
                         "joules_per_mpkt": 15.0, "scope": "CPU package(s) and DRAM of the host",
                         "baseline_subtracted": True},
              "warnings": ["meter ipmi: no BMC"]}
    f = meter_fields(meters, 2_000_000)
    assert f["dut_cpu_util"] == 0.42 and f["softirq_share"] == 0.9
    assert f["cycles_per_packet"] == 812.5 and f["cycles_estimated"] is True
    assert f["energy_measured"] is True and f["energy_source"] == "rapl"
    assert f["joules_per_mpkt"] == 15.0 and f["baseline_subtracted"] is True
    # a modelled meter without per-packet figures: derived from joules and packets
    g = meter_fields({"energy": {"source": "cpu-model", "joules": 4.0}}, 2_000_000)
    assert g["energy_measured"] is False
    assert g["packets_per_joule"] == 500_000 and g["joules_per_mpkt"] == 2.0
    # nothing at all: every field None, nothing raises
    assert all(v in (None, False) for v in meter_fields({}, 0).values())

    _store(tmp_path / "m.sqlite", 64, meters=meters)
    m = load_model(tmp_path / "m.sqlite")
    assert m.energy_any and m.cpu_any
    t = m.scenarios[0].thesis
    assert t.energy_j == pytest.approx(6 * 30.0) and t.energy_measured is True
    assert "idle baseline subtracted" in m.methodology
    html = build_report(tmp_path / "m.sqlite", tmp_path / "out").read_text()
    sec = html[html.index('<section id="thesis-table">'):html.index('<section id="environment">')]
    assert 'class="badge measured"' in sec and "modelled" not in sec
    assert "meter ipmi: no BMC" in html                       # meter warnings reach the page


def test_steal_time_is_a_warning(tmp_path):
    _store(tmp_path / "s.sqlite", 64, steal=0.04)
    m = load_model(tmp_path / "s.sqlite")
    w = [w for w in m.warnings if w.kind == "steal"]
    assert len(w) == 1 and "4.0 %" in w[0].message and "dedicated cores" in w[0].advice


def test_hdr_decoding_matches_the_library():
    from hdrh.histogram import HdrHistogram
    h = HdrHistogram(1, 60_000_000_000, 3)
    rng = np.random.default_rng(7)
    for v in rng.lognormal(9, 0.6, 20_000).astype(int):
        h.record_value(int(v))
    b64 = h.encode().decode()
    values, counts = hdr_values_counts(b64)
    ref = [(it.value_iterated_to, it.count_added_in_this_iter_step)
           for it in HdrHistogram.decode(b64).get_recorded_iterator()]
    assert counts.sum() == 20_000
    # same buckets and counts (the library reports each bucket's highest equivalent value)
    assert [c for _, c in ref] == counts.tolist()
    assert all(h.values_are_equivalent(int(a), int(b)) for a, (b, _) in zip(values, ref))
    x, p = merged_cdf([b64, b64])
    assert p[-1] == 1.0 and np.all(np.diff(p) > 0) and len(x) <= 400 + 1
    for q in (0.5, 0.99, 0.999):       # thinned to <= 400 points: within 1 % of the library
        at = x[np.searchsorted(p, q)]
        assert at == pytest.approx(h.get_value_at_percentile(q * 100), rel=0.01)


def test_units_and_formatting():
    assert goal_label(NDR) == "NDR" and goal_label(PDR) == "PDR@0.5%"
    assert mpps(1_234_567) == "1.235" and mpps(None) == "–"
    assert us(12_345) == "12.3" and us(1_234_567) == "1235" and us(950) == "0.95"
    assert integer(17_578_124_988) == "17\u2009578\u2009124\u2009988"
    assert sig(0.0001234) == "0.000123" and sig(123456.0) == "123\u2009456"
    assert p_value(1e-9) == "< 0.001" and p_value(0.0123) == "0.012"
    # 64 B frames at 10 Gbit/s L1: 14.88 Mpps; L2 carries 64/84 of the line
    assert l1_bps(14_880_952.38, 64) == pytest.approx(1e10, rel=1e-9)
    assert l2_bps(14_880_952.38, 64) == pytest.approx(1e10 * 64 / 84, rel=1e-9)


def test_generator_limited_trials_are_counted(tmp_path):
    st = Store(tmp_path / "g.sqlite")
    cid = st.create_campaign(name="g", source_path="g.toml", config_text="",
                             config={"campaign": {"name": "g"}}, host={}, tool_version="0.1.0")
    sid = st.add_scenario(cid, 0, "d p", "d", "linux", {}, {"name": "p", "frame_size": 64},
                          {"type": "sweep", "loads_pps": [1e6, 2e6]},
                          {"dut": "d", "profile": "p"}, 1e7)
    for seq, (load, lim) in enumerate(((1e6, False), (2e6, True))):
        t = st.begin_trial(sid, 0, seq, intent("search", "sweep"), 1.0, load)
        st.finish_trial(t, _trial(load, 1.0, 0.1 if lim else 0.0, streams=1, limited=lim))
    st.close()
    m = load_model(tmp_path / "g.sqlite")
    assert m.scenarios[0].generator_limited == 1
    w = [w for w in m.warnings if w.kind == "generator-limited"]
    assert w and "2.000 Mpps" in w[0].message
    assert [w.kind for w in m.warnings].count("repetitions") == 1   # one repetition: no CI


def test_methods_say_how_fwdgen_paced(tmp_path):
    st = Store(tmp_path / "p.sqlite")
    cid = st.create_campaign(name="p", source_path="p.toml", config_text="",
                             config={"campaign": {"name": "p"}}, host={}, tool_version="0.1.0")
    sid = st.add_scenario(cid, 0, "d p", "d", "linux", {}, {"name": "p", "frame_size": 64},
                          {"type": "sweep", "loads_pps": [1e5, 1e6, 2e6]},
                          {"dut": "d", "profile": "p"}, 1e7)
    trials = ((1e5, "user", 25), (2e5, "user", 50), (1e6, "kernel", 1), (2e6, "kernel", 1),
              (3e5, "kernel", 15), (4e5, "kernel", 20), (5e5, "kernel", None))
    for seq, (load, pacer, burst) in enumerate(trials):
        r = _trial(load, 1.0, 0.0, streams=1)
        r.raw = {"fwdgen_version": "0.1.0", "streams": [
            {"id": 0, "pacer": pacer, "intended_pps": load, "pace_burst": burst}]}
        t = st.begin_trial(sid, 0, seq, intent("search", "sweep"), 1.0, load)
        st.finish_trial(t, r)
    st.close()
    m = load_model(tmp_path / "p.sqlite")
    assert m.pacers == {"user": 2, "kernel": 5}
    # the figures come from each trial's pace_burst (an older fwdgen's: none)
    assert ("fwdgen paced 5 trial(s) in its XDP program, frame by frame on a schedule "
            "(2 of them in groups of 15-20 frames, 50 us of traffic each, as a NIC coalesces "
            "interrupts), and 2 in bursts from user space of 25-50 frames, one per 250 us "
            "of traffic.") in m.methodology
    # other generators (no pacer in their results): nothing is claimed
    assert "paced" not in load_model(_db_without_pacer(tmp_path)).methodology


def _db_without_pacer(tmp_path):
    db = tmp_path / "n.sqlite"
    _store(db, 64, direction="uni")
    return db


def test_dut_ingress_queue_is_reported(tmp_path):
    """A netns campaign without testbed.dut_rx_queue ran with the default queue:
    the report's testbed section and methods text say so."""
    db = tmp_path / "r.sqlite"
    _store(db, 64, direction="uni")
    m = load_model(db)
    assert m.placement["dut_rx_queue"] == 4096
    build_report(db, tmp_path / "rep")
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "4096 frames (kernel DUTs: cpumap;" in html
    assert "Kernel data planes received through a 4096-frame queue" in html
    # whose CPU pays for filling the queue: said, not left for the reader to guess
    assert "figures of kernel data planes leave that work out" in html


def test_each_duts_ingress_is_told_from_its_scenario(tmp_path):
    """Scenarios record how their DUT's ports received (testbeds.py,
    lab_ingress): the methods text names the DUTs per way, says which CPU
    filled the queues, and whose CPU figures include veth's receive."""
    db = tmp_path / "i.sqlite"
    sid0 = _store(db, 64, direction="uni")
    st = Store(db)
    cid = st.scenarios()[0]["campaign_id"]
    st.set_describe(sid0, {"lab_ingress": {"mode": "cpumap", "queue": 4096, "napi_cpu": None}})
    for idx, (name, dtype, ing) in enumerate((
            ("vfwd-router", "vfwd", {"mode": "afxdp", "queue": 4096, "napi_cpu": 0}),
            ("xdp-router", "xdp", {"mode": "napi", "queue": 0, "napi_cpu": 1})), start=1):
        sid = st.add_scenario(cid, idx, f"{name} p", name, dtype, {"mode": "router"},
                              {"name": "p", "frame_size": 64, "flows": 4, "direction": "uni",
                               "l3": "ipv4"},
                              {"type": "binary", "loss_ratios": [0.0, 0.005]},
                              {"dut": name, "profile": "p"}, 1e7)
        st.set_describe(sid, {"lab_ingress": ing})
    st.close()
    text = methodology_text(load_model(db))
    assert ("dut (kernel data planes) received through a 4096-frame queue in front of the "
            "DUT CPU") in text
    assert ("vfwd-router (AF_XDP data planes) received through their sockets' RX rings, "
            "filled on the generator's CPU as well") in text
    assert "xdp-router received through veth's 256-frame ring" in text
    assert "while those of xdp-router include it" in text
    assert "Kernel data planes received through" not in text        # not the old wording


def test_a_rate_interval_below_zero_is_printed_as_such(tmp_path):
    """Two PDRs of 1.0 and 1.2 Mpps: t(0.975, 1) = 12.71 stretches the interval
    to [-0.171, 2.371] Mpps; the page prints '< 0' and says why, the export
    keeps the number, an interval that stays positive is printed as is."""
    from fwdbench.report.numbers import ci_text, estimate

    e = estimate([1.0e6, 1.2e6])
    assert e.low == pytest.approx(-0.17062e6, rel=1e-4)
    assert ci_text(e) == "[< 0, 2.371]"
    assert ci_text(estimate([1.0e6, 1.01e6])) == "[0.941, 1.069]"
    _store(tmp_path / "c.sqlite", 64)
    out = tmp_path / "out"
    html = build_report(tmp_path / "c.sqlite", out).read_text()
    assert html.count("[&lt; 0, 2.371]") == 1 and "[0.500, 0.500]" in html
    assert "do not bound the rate from below" in html
    assert "< 0" not in html.replace("&lt; 0", "")           # escaped, never raw
    assert "-0.171" not in html
    import csv
    rows = list(csv.DictReader((out / "data" / "summary.csv").open()))
    pdr = next(r for r in rows if r["goal"] == "pdr@0.005")
    assert float(pdr["ci95_low_pps"]) == pytest.approx(e.low)


def test_recorded_structures_fold_into_escaped_json(tmp_path):
    """A nested host fact (the lab as set up) is folded into <details> as
    JSON, with every user string escaped; plain facts stay inline."""
    st = Store(tmp_path / "h.sqlite")
    evil = "<script>alert(1)</script>"
    st.create_campaign(name="h", source_path="h.toml", config_text="", config={},
                       host={"kernel": "6.1.0", "testbed": {"run_id": evil, "gen_cpu": 0}},
                       tool_version="0.1.0")
    st.close()
    html = build_report(tmp_path / "h.sqlite", tmp_path / "out").read_text()
    block = html[html.index('<details class="record">'):]
    block = block[:block.index("</details>")]
    assert "2 fields (JSON)" in block and '&#34;gen_cpu&#34;: 0' in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block and "<script" not in html.lower()
    assert "<dd>6.1.0</dd>" in html


def test_long_dut_records_fold_and_short_ones_stay_inline(tmp_path):
    sid = _store(tmp_path / "d.sqlite", 64)
    st = Store(tmp_path / "d.sqlite")
    offloads = {f"feature-{i}": "off [fixed]" for i in range(40)}
    st.set_describe(sid, {"peer_macs": {"tg0": "02:fb:00:00:01:01"}, "offloads": offloads,
                          "config": "mode router\n<ring-size> 2048\n"})
    st.close()
    html = build_report(tmp_path / "d.sqlite", tmp_path / "out").read_text()
    table = html[html.index('id="dut-table"'):]
    table = table[:table.index("</table>")]
    assert table.count('<details class="record">') == 2 and "40 fields (JSON)" in table
    assert "<summary>2 lines</summary><pre>mode router\n&lt;ring-size&gt; 2048\n</pre>" in table
    assert '&#34;feature-39&#34;: &#34;off [fixed]&#34;' in table
    assert "02:fb:00:00:01:01" in table.split("<details")[0]     # short: inline


def test_ratio_intervals_read_as_what_they_say(tmp_path):
    """The compare table's Fieller interval: '< 0' below zero, 'unbounded'
    when Fieller's is, '–' without two repetitions a side; the figure's axis
    spans 0 to twice the largest ratio whatever the intervals reach."""
    from fwdbench.report.compare import (AXIS_SPAN, Comparison, CompareRow, ratio_ci_text,
                                         ratio_figure)
    from fwdbench.report.figures import FigureWriter

    rows = [CompareRow("s ok", NDR, 1e6, 1.1e6, 1.1, 0.9123, 1.3, 0.2, False, 3, 3),
            CompareRow("s wide", NDR, 1e6, 1.2e6, 1.2, -1.131, 2336.2, 0.5, False, 2, 2),
            CompareRow("s inf", NDR, 1e6, 1.3e6, 1.3, None, None, 0.8, False, 2, 2),
            CompareRow("s one", NDR, 1e6, 0.9e6, 0.9, None, None, None, None, 1, 2)]
    assert [ratio_ci_text(r) for r in rows] == [
        "[0.912, 1.300]", "[< 0, 2336.200]", "unbounded", "–"]
    c = Comparison("A", "B", "a/index.html", None, rows, [], [])
    fig = ratio_figure(c, FigureWriter(tmp_path, pdf=False))
    svg = (tmp_path / "figures" / "compare_ratios.svg").read_text()
    assert fig is not None and "2336" not in svg
    ticks = re.findall(r">(\d+\.\d)</text>", svg)           # x tick labels
    assert max(float(t) for t in ticks) <= AXIS_SPAN * 1.3 and "0.0" in ticks
