"""vfwd's per-node runtime in the report: from a trial's counter deltas to the table."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from fwdbench.report.command import _build
from fwdbench.report.model import load_model
from fwdbench.report.runtime import node_counters, runtime_point, scenario_runtime
from fwdbench.report.sample import build_sample_store


def counters(scale: int = 1, vec: int = 100) -> dict:
    """One trial's deltas as the vfwd driver flattens them (1000 frames received)."""
    c = {"vfwd_drops_total": 0, "vfwd_drop_ip4_input_bad_checksum": 3, "dut1_tx_packets": 1000}
    for node, clocks in (("port_input", 50_000), ("ethernet_input", 10_000),
                         ("ip4_input", 20_000), ("ip4_rewrite", 30_000),
                         ("port_output", 900_000)):
        c[f"vfwd_{node}_packets"] = 1000 * scale
        c[f"vfwd_{node}_clocks"] = clocks * scale
        c[f"vfwd_{node}_calls"] = 1000 * scale // vec + (40 if node == "port_input" else 0)
        c[f"vfwd_{node}_idle_calls"] = 40 if node == "port_input" else 0
    return c


def test_node_counters_skip_drop_reasons():
    n = node_counters(counters())
    assert set(n) == {"port-input", "ethernet-input", "ip4-input", "ip4-rewrite", "port-output"}
    assert n["port-input"] == {"packets": 1000, "clocks": 50_000, "calls": 50, "idle_calls": 40}


def test_runtime_point_per_node_and_path():
    p = runtime_point(2e5, 0.0, counters(), 2.5e9)
    by = {r.node: r for r in p.nodes}
    assert [r.node for r in p.nodes][0] == "port-input" and p.nodes[-1].node == "port-output"
    assert by["ip4-rewrite"].clocks_per_packet == 30.0
    assert by["ip4-rewrite"].vectors_per_call == 100.0
    assert by["port-input"].vectors_per_call == 100.0        # idle calls left out
    assert p.path_clocks == (10_000 + 20_000 + 30_000 + 900_000) / 1000
    assert p.ns_per_clock == pytest.approx(0.4)
    assert runtime_point(1.0, 0.0, {"vfwd_port_input_packets": 0}, None) is None
    idle = {**counters(), "vfwd_nat44_packets": 0, "vfwd_nat44_calls": 0, "vfwd_nat44_clocks": 0}
    assert "nat44" not in {r.node for r in runtime_point(2e5, 0.0, idle, None).nodes}


def vpp_counters() -> dict:
    """One trial's deltas as the VPP driver reads them from VPP's stats segment."""
    c = {"dut0.rx_packets": 1000, "vpp_err.dut1-tx.syscall required": 7, "vpp_revived": 0}
    for node, calls, vectors, clocks in (
            ("af_xdp-input", 90_000, 1000, 40_000_000), ("ethernet-input", 20, 1000, 9_000),
            ("ip4-input", 20, 1000, 12_000), ("ip4-lookup", 20, 1000, 15_000),
            ("ip4-rewrite", 20, 1000, 11_000), ("dut1-tx", 20, 1000, 600_000),
            ("statseg-collector-process", 0, 0, 2_000_000)):
        for f, v in (("calls", calls), ("vectors", vectors), ("clocks", clocks), ("suspends", 0)):
            c[f"vpp_node.{node}.{f}"] = v
    return c


def test_vpp_counters_read_as_nodes_with_its_input_node_and_path():
    """VPP's vectors are packets; its polling input node opens the path; process
    nodes (no packets) are not on the path; error counters are not nodes."""
    n = node_counters(vpp_counters())
    assert n["ip4-lookup"] == {"calls": 20, "packets": 1000, "clocks": 15_000}
    assert "statseg-collector-process" in n and not any("err" in k for k in n)
    p = runtime_point(2e5, 0.0, vpp_counters(), 2.3e9)
    assert p.nodes[0].node == "af_xdp-input"
    assert {r.node for r in p.nodes} == {"af_xdp-input", "ethernet-input", "ip4-input",
                                          "ip4-lookup", "ip4-rewrite", "dut1-tx"}
    assert p.path_clocks == (9_000 + 12_000 + 15_000 + 11_000 + 600_000) / 1000
    assert [q.load_pps for q in scenario_runtime([_trial(2e5, 0.0, vpp_counters())],
                                                 {"tsc_hz": 2.3e9}, 0.005)] == [2e5]


def _trial(load, loss, c, kind="search"):
    return ({"kind": kind, "intended_load_pps": load, "loss_ratio": loss},
            SimpleNamespace(dut_counters=c))


def test_scenario_runtime_low_load_and_highest_within_pdr():
    trials = [_trial(1e5, 0.0, counters(vec=10)), _trial(8e5, 0.001, counters(vec=200)),
              _trial(9e5, 0.2, counters(vec=256)), _trial(5e4, 0.0, counters(), "latency"),
              _trial(4e5, 0.0, {})]
    pts = scenario_runtime(trials, {"tsc_hz": 2e9}, 0.005)
    assert [p.load_pps for p in pts] == [1e5, 8e5]
    assert [p.nodes[1].vectors_per_call for p in pts] == [10.0, 200.0]
    # one trial is both: one point; no vfwd counters: nothing
    assert len(scenario_runtime(trials[:1], None, 0.005)) == 1
    assert scenario_runtime([_trial(1e5, 0.0, {"dut0_rx_packets": 5})], None, 0.005) == []


def test_report_shows_the_table_only_with_runtime(tmp_path):
    db = build_sample_store(tmp_path / "s.sqlite", frame_sizes=(64,), repetitions=1, loads=3,
                            trial_duration_s=0.5)
    m = load_model(db)
    assert not m.runtime_any                         # simulated DUTs count no nodes
    plain = _build(m, tmp_path / "plain").read_text(encoding="utf-8")
    assert 'id="runtime-table"' not in plain
    s = m.scenarios[0]
    s.runtime = [runtime_point(1e5, 0.0, counters(vec=10), 2.5e9),
                 runtime_point(8e5, 0.001, counters(vec=200), 2.5e9)]
    html = _build(m, tmp_path / "rt").read_text(encoding="utf-8")
    table = html[html.index('id="runtime-table"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr") == 1 + 2 * (5 + 1)     # head, 5 nodes + path per point
    assert ">ip4-rewrite<" in table and ">path<" in table and ">960<" in table
