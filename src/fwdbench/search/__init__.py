"""Searches: pick the loads, ask for trials, return NDR/PDR and the trials used.

One entry point, :func:`run_search`, for every strategy:

- ``binary``: RFC 2544 binary search for NDR and PDR@x (:mod:`.binary`)
- ``mlr``: MLRsearch through the PyPI library (:mod:`.mlr`)
- ``sweep``: fixed loads, n repetitions each (:mod:`.sweep`)
- ``latency``: loads at fractions of a PDR (:mod:`.latency`)

Searches never touch packets: they call ``measure(duration_s, load_pps,
intent) -> TrialResult`` (:class:`fwdbench.intent.TrialIntent` says why) and
are deterministic functions of the results it returns, so a resumed campaign
can replay stored trials through them.
"""
from __future__ import annotations

from fwdbench.search.binary import run_binary
from fwdbench.search.latency import latency_loads, run_latency, run_latency_trials
from fwdbench.search.mlr import mlr_config, run_mlr
from fwdbench.search.result import GoalResult, Measure, SearchError, SearchResult, SearchTrial, TrialLog
from fwdbench.search.settings import (
    BinarySettings,
    LatencySettings,
    MlrSettings,
    SearchSettings,
    SweepSettings,
    parse_search_settings,
)
from fwdbench.search.sweep import curve_goal, run_sweep

__all__ = [
    "BinarySettings", "GoalResult", "LatencySettings", "Measure", "MlrSettings",
    "SearchError", "SearchResult", "SearchSettings", "SearchTrial", "SweepSettings",
    "TrialLog", "curve_goal", "latency_loads", "mlr_config", "parse_search_settings",
    "run_binary", "run_latency", "run_latency_trials", "run_mlr", "run_search", "run_sweep",
]


def run_search(settings: SweepSettings | BinarySettings | MlrSettings | LatencySettings,
               measure: Measure, max_load_pps: float, *,
               pdr_pps: float | None = None) -> SearchResult:
    """Run one search.

    ``measure(duration_s [s], load_pps [pps], intent) -> TrialResult`` runs and
    persists one trial. ``max_load_pps`` is the line/generator maximum per
    stream [pps]; no trial goes above it. ``pdr_pps`` is a PDR found earlier
    [pps], used by sweeps given as ``pdr_fractions`` and by a standalone
    latency search. A ``latency`` block in binary/mlr settings runs latency
    trials at fractions of the PDR the search found (the NDR if it searched
    no PDR goal). Raises :class:`SearchError` for settings that cannot run
    on this scenario or a search that cannot finish.
    """
    if not max_load_pps > 0:
        raise SearchError(f"max_load_pps must be positive, got {max_load_pps!r}")
    log = TrialLog(measure, float(max_load_pps))
    if isinstance(settings, SweepSettings):
        result = run_sweep(settings, log, pdr_pps)
    elif isinstance(settings, BinarySettings):
        result = run_binary(settings, log)
    elif isinstance(settings, MlrSettings):
        result = run_mlr(settings, log)
    elif isinstance(settings, LatencySettings):
        result = run_latency(settings, log, pdr_pps)
    else:
        raise SearchError(f"unknown search settings {type(settings).__name__}")
    latency = getattr(settings, "latency", None)
    if latency is not None:
        found = result.pdr_pps
        source = "PDR"
        if found is None and not any(g.loss_ratio > 0 for g in result.goals):
            found, source = result.ndr_pps, "NDR"
        run_latency_trials(latency, log, found, result, source=source)
    result.trials = list(log.trials)
    return result
