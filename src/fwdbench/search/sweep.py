"""Sweep: fixed loads, n repetitions each (PASTRAMI's load-loss curve).

The goals of a sweep are read off the curve of mean PLR per load: for loss
ratio x, the highest load such that it and every lower load tested have mean
PLR <= x (so a curve that crosses x and comes back does not report the
comeback). NDR uses x = 0; PDR uses ``pdr_loss_ratio`` (0.5 % by default).
"""
from __future__ import annotations

from fwdbench.intent import TrialIntent
from fwdbench.search.result import GoalResult, SearchError, SearchResult, TrialLog
from fwdbench.search.settings import SweepSettings


def curve_goal(loads: list[float], mean_plr: list[float], x: float) -> GoalResult:
    """GoalResult for loss ratio x from an ascending curve of mean PLR."""
    lo: float | None = None
    hi: float | None = None
    for load, plr in zip(loads, mean_plr):
        if plr <= x:
            lo = load
        else:
            hi = load
            break
    width = (hi - lo) / hi if lo is not None and hi is not None else None
    return GoalResult(loss_ratio=x, load_pps=lo, upper_pps=hi, relative_width=width,
                      max_load_reached=hi is None and lo is not None)


def run_sweep(settings: SweepSettings, log: TrialLog, pdr_pps: float | None) -> SearchResult:
    try:
        loads = settings.loads(pdr_pps)
    except ValueError as e:
        raise SearchError(f"sweep: {e}") from None
    too_high = [x for x in loads if x > log.max_load_pps * (1 + 1e-9)]
    if too_high:
        raise SearchError(f"sweep: load {too_high[0]:.0f} pps is above max load "
                          f"{log.max_load_pps:.0f} pps; lower it or raise the max load")
    result = SearchResult(search="sweep", max_load_pps=log.max_load_pps,
                          settings=settings.model_dump())
    n = settings.repetitions
    plans: list[tuple[float, int]]
    if settings.order == "by_load":
        plans = [(x, r) for x in loads for r in range(n)]
    else:
        plans = [(x, r) for r in range(n) for x in loads]
    sums = {x: 0.0 for x in loads}
    for x, r in plans:
        why = f"sweep: load {x:.0f} pps, repetition {r + 1}/{n}"
        t = log.run(settings.trial_duration_s, x, TrialIntent.search("sweep", why))
        sums[x] += t.loss_ratio
    means = [sums[x] / n for x in loads]
    goals = sorted({0.0, settings.pdr_loss_ratio})
    result.goals = [curve_goal(loads, means, g) for g in goals]
    return result
