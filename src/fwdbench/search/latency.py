"""Latency at fractions of the PDR (0, 10, 50, 90 % by default), as CSIT
reports it: a low-rate latency stream beside a background load.

This module only picks the background loads; the latency stream is the
runner's part (fwdgen's ``latency`` settings). A fraction of 0 is a trial
with no background load (``load_pps`` 0.0: the latency stream alone).
"""
from __future__ import annotations

from fwdbench.intent import TrialIntent
from fwdbench.search.result import SearchError, SearchResult, TrialLog
from fwdbench.search.settings import LatencySettings


def latency_loads(settings: LatencySettings, pdr_pps: float) -> list[tuple[float, float]]:
    """(fraction, load [pps]) pairs, in the order given."""
    return [(f, f * pdr_pps) for f in settings.fractions]


def run_latency_trials(settings: LatencySettings, log: TrialLog, pdr_pps: float | None,
                       result: SearchResult, source: str = "PDR") -> None:
    """Append the latency trials to ``log`` (and note problems in ``result``)."""
    pdr = settings.pdr_pps if settings.pdr_pps is not None else pdr_pps
    if pdr is None:
        result.warnings.append(
            f"latency: no {source} was found, so there are no loads to measure latency at; "
            "give latency.pdr_pps or fix the search first")
        return
    for fraction, load in latency_loads(settings, pdr):
        if load > log.max_load_pps * (1 + 1e-9):
            raise SearchError(
                f"latency: fraction {fraction!r} of {source} {pdr:.0f} pps is {load:.0f} pps, "
                f"above max load {log.max_load_pps:.0f} pps")
        for rep in range(settings.repetitions):
            why = f"latency at {fraction * 100:g}% of {source} {pdr:.0f} pps"
            if settings.repetitions > 1:
                why += f" (repetition {rep + 1}/{settings.repetitions})"
            log.run(settings.trial_duration_s, load, TrialIntent.latency(fraction, source, why))


def run_latency(settings: LatencySettings, log: TrialLog, pdr_pps: float | None) -> SearchResult:
    """The standalone ``latency`` search: trials only, no goals."""
    result = SearchResult(search="latency", max_load_pps=log.max_load_pps,
                          settings=settings.model_dump())
    if settings.pdr_pps is None and pdr_pps is None:
        raise SearchError("latency: no PDR to take fractions of; set pdr_pps in the latency "
                          "settings or run a binary/mlr search before it")
    run_latency_trials(settings, log, pdr_pps, result)
    return result
