"""The report's statistics over a scenario's trials and results: load-loss curve
and PASTRAMI verdict, goals with 95 % CIs (from the search, or read off a
sweep per repetition), latency and meter points against load, the thesis's
totals, groups and their winners."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from ..goal import LossGoal
from ..trial import TrialResult
from . import analysis_bridge as ab
from .hdr import merged_cdf
from .numbers import FCS_B, estimate
from .runtime import scenario_runtime
from .types import (CDF_MAX_TRIALS, CDF_TARGETS, NDR_GOAL, PDR_GOAL, CurvePoint, GoalResult,
                    Group, LatencyPoint, MeterPoint, Pastrami, ScenarioReport, ThesisRow,
                    Winner)


def _round_load(x: float) -> float:
    """Loads as a key: 9 significant digits (float noise from unit conversions)."""
    if x == 0:
        return 0.0
    return float(f"{x:.9g}")


def _fill_scenario(s: ScenarioReport, trials: list[tuple[dict, TrialResult]],
                   results: dict[LossGoal, list[float | None]]) -> None:
    measured = [(row, r) for row, r in trials if row["kind"] != "warmup"]
    s.warmup_trials = len(trials) - len(measured)
    s.trials = len(measured)
    s.trial_seconds = sum(row["duration_s"] for row, _ in measured)
    s.generator_limited = sum(1 for row, _ in measured if row["generator_limited"])
    steals = [row["steal"] for row, _ in measured if row["steal"] is not None]
    s.max_steal = max(steals) if steals else None
    s.repetitions = sorted({row["repetition"] for row, _ in measured if row["repetition"] >= 0})
    search_rows = [(row, r) for row, r in measured if row["kind"] == "search"]
    stype = (s.search or {}).get("type", "sweep")

    # load-loss curve: one point per offered load, over repetitions
    by_load: dict[float, list[dict]] = defaultdict(list)
    for row, _ in search_rows:
        by_load[_round_load(row["intended_load_pps"])].append(row)
    pts = []
    for load in sorted(by_load):
        rows = by_load[load]
        plr = estimate([r["loss_ratio"] for r in rows])
        thr = estimate([load * (1 - r["loss_ratio"]) for r in rows])
        pts.append(CurvePoint(load, plr, thr, sum(1 for r in rows if r["generator_limited"])))
    s.curve = pts
    s.curve_kind = ("sweep" if stype == "sweep" else "search") if pts else None
    if stype == "sweep" and len(pts) >= 2:
        s.pastrami = ab.pastrami_verdict([p.load_pps for p in pts],
                                         [p.plr.mean or 0.0 for p in pts])
    elif stype == "sweep" and pts:
        s.pastrami = Pastrami("n/a", "one offered load only: PASTRAMI needs a sweep over "
                                     "several loads")
    elif pts:
        s.pastrami = Pastrami("n/a", f"the loads were chosen by a {stype} search, not swept; "
                                     "PASTRAMI needs a load sweep")
    else:
        s.pastrami = Pastrami("n/a", "no load-loss curve")

    # goals: the search's own results, else derived from the sweep per repetition
    for goal, vals in results.items():
        s.goals[goal] = GoalResult(goal, estimate(vals), "search")
    if stype == "sweep" and search_rows:
        per_rep: dict[int, list[dict]] = defaultdict(list)
        for row, _ in search_rows:
            per_rep[row["repetition"]].append(row)
        for goal in (NDR_GOAL, PDR_GOAL):
            if goal in s.goals:
                continue
            lr = goal.loss_ratio
            vals: list[float | None] = []
            for rep in sorted(per_rep):
                ok = [r["intended_load_pps"] for r in per_rep[rep]
                      if r["loss_ratio"] <= lr + 1e-15]
                vals.append(max(ok) if ok else None)
            s.goals[goal] = GoalResult(goal, estimate(vals), "sweep")
    s.goals = dict(sorted(s.goals.items()))

    s.latency = _latency_points(s, measured)
    s.meters = _meter_points(measured)
    s.runtime = scenario_runtime(measured, s.describe, PDR_GOAL.loss_ratio)
    s.thesis = _thesis_row(s, measured)


def _latency_points(s: ScenarioReport, measured: list[tuple[dict, TrialResult]]
                    ) -> list[LatencyPoint]:
    lat_trials = [(row, r) for row, r in measured if row["kind"] == "latency"
                  and row["lat_p50_ns"] is not None]
    source = "latency"
    if not lat_trials:
        lat_trials = [(row, r) for row, r in measured if row["lat_p50_ns"] is not None]
        source = "search"
    if not lat_trials:
        return []
    pdr = s.pdr.mean if s.pdr else None
    # CSIT-style latency trials are grouped by their share of the PDR (the PDR, and so
    # the load, differs per repetition); other trials by offered load
    by_key: dict[float, list[tuple[dict, TrialResult]]] = defaultdict(list)
    shares = {}
    for row, r in lat_trials:
        frac = row["latency_fraction"] if source == "latency" else None
        share = 100.0 * frac if frac is not None else None     # the search's own share
        key = share if share is not None else _round_load(row["intended_load_pps"])
        shares[key] = share
        by_key[key].append((row, r))
    pts = []
    for key in sorted(by_key):
        items = by_key[key]
        rows = [row for row, _ in items]

        def mean(key: str) -> float:
            return float(np.mean([row[key] for row in rows]))

        load = mean("intended_load_pps")
        hdrs = [l.hdr for _, r in items for st in r.streams
                for l in [st.latency] if l is not None and l.hdr]
        share = shares[key]
        if share is None and pdr:
            share = 100.0 * load / pdr
        pts.append(LatencyPoint(
            load_pps=load, pct_of_pdr=share, n=len(rows),
            min_ns=float(min(row["lat_min_ns"] for row in rows)), mean_ns=mean("lat_mean_ns"),
            p50_ns=mean("lat_p50_ns"), p90_ns=mean("lat_p90_ns"), p99_ns=mean("lat_p99_ns"),
            p999_ns=mean("lat_p999_ns"), max_ns=float(max(row["lat_max_ns"] for row in rows)),
            jitter_ns=mean("jitter_ns"), source=source, hdr=hdrs))
    # CDFs: every level of CSIT-style latency trials; else loads near 10/50/90 % of PDR
    if source == "latency":
        chosen = pts
    else:
        below = [p for p in pts if pdr is None or p.load_pps <= pdr * 1.0001] or pts
        ref = pdr if pdr else max(p.load_pps for p in pts)
        chosen = []
        for share in CDF_TARGETS:
            best = min(below, key=lambda p: abs(p.load_pps - share * ref))
            if best not in chosen:
                chosen.append(best)
    for p in chosen:
        cdf = merged_cdf(p.hdr[:CDF_MAX_TRIALS])
        if cdf is not None:
            p.cdf_ns, p.cdf_p = cdf
    for p in pts:
        p.hdr = []
    return pts


def _meter_points(measured: list[tuple[dict, TrialResult]]) -> list[MeterPoint]:
    by_load: dict[float, list[dict]] = defaultdict(list)
    for row, _ in measured:
        # a generator-limited trial did not offer its intended load: no point on this axis
        if row["kind"] != "search" or row["generator_limited"]:
            continue
        by_load[_round_load(row["intended_load_pps"])].append(row)
    pts = []

    def avg(rows: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rows if r[key] is not None]
        return float(np.mean(vals)) if vals else None

    for load in sorted(by_load):
        rows = by_load[load]
        sources = {r["energy_source"] for r in rows if r["energy_source"]}
        measured_flags = {r["energy_measured"] for r in rows if r["energy_measured"] is not None}
        pts.append(MeterPoint(
            load_pps=load, n=len(rows), dut_cpu_util=avg(rows, "dut_cpu_util"),
            softirq_share=avg(rows, "softirq_share"), steal=avg(rows, "steal"),
            cycles_per_packet=avg(rows, "cycles_per_packet"),
            cycles_estimated=any(r["cycles_estimated"] for r in rows),
            joules=avg(rows, "joules"), mean_watts=avg(rows, "mean_watts"),
            packets_per_joule=avg(rows, "packets_per_joule"),
            joules_per_mpkt=avg(rows, "joules_per_mpkt"),
            energy_source=", ".join(sorted(sources)) or None,
            energy_measured=(measured_flags.pop() if len(measured_flags) == 1 else None)))
    if not any(p.dut_cpu_util is not None or p.cycles_per_packet is not None
               or p.joules is not None for p in pts):
        return []
    return pts


def _thesis_row(s: ScenarioReport, measured: list[tuple[dict, TrialResult]]) -> ThesisRow:
    tx = sum(row["tx_packets"] for row, _ in measured)
    txb = sum(row["tx_bytes"] for row, _ in measured)
    e = [row["joules"] for row, _ in measured if row["joules"] is not None]
    flags = {row["energy_measured"] for row, _ in measured if row["energy_measured"] is not None}
    sources = sorted({row["energy_source"] for row, _ in measured if row["energy_source"]})
    return ThesisRow(
        scenario=s.name, dut=s.dut_name, trials=len(measured),
        duration_s=sum(row["duration_s"] for row, _ in measured),
        tx_packets=tx, tx_bytes=txb, tx_bytes_fcs=txb + FCS_B * tx,
        rx_packets=sum(row["rx_packets"] for row, _ in measured),
        energy_j=math.fsum(e) if e else None, energy_trials=len(e),
        energy_measured=flags.pop() if len(flags) == 1 else None,
        energy_source=", ".join(sources) or None)


def _groups(scenarios: list[ScenarioReport]) -> list[Group]:
    groups: dict[str, Group] = {}
    for s in scenarios:
        g = groups.setdefault(s.group_key, Group(s.group_key, s.group_label, []))
        g.scenarios.append(s)
    labels: dict[str, int] = defaultdict(int)
    for g in groups.values():           # two groups must not share a label (slugs, figures)
        labels[g.label] += 1
        if labels[g.label] > 1:
            g.label = f"{g.label} ({labels[g.label]})"
        g.winner = _winner(g)
    return list(groups.values())


def _winner(g: Group) -> Winner | None:
    ranked = []
    goal = None
    for cand in (PDR_GOAL, NDR_GOAL):
        ranked = [s for s in g.scenarios if s.goal(cand) and s.goals[cand].estimate.mean]
        if ranked:
            goal = cand
            break
    if not ranked or goal is None:
        return None
    ranked.sort(key=lambda s: s.goals[goal].estimate.mean or 0.0, reverse=True)
    best = ranked[0]
    if len(ranked) == 1:
        return Winner(best.dut_name, best, goal, None, None, None, None)
    second = ranked[1]
    a = best.goals[goal].estimate
    b = second.goals[goal].estimate
    ratio = (a.mean / b.mean) if b.mean else None
    p = ab.welch_p_value(list(a.values), list(b.values))
    return Winner(best.dut_name, best, goal, second, ratio, p,
                  None if p is None else bool(p < 0.05))
