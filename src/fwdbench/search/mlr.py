"""MLRsearch through the PyPI library ``MLRsearch`` (FD.io CSIT), version 1.2.1.

fwdbench's trial callback becomes the library's measurer; each loss goal
becomes a ``SearchGoal`` with CSIT's defaults (exceed ratio 0.5, relative
width 0.005, 1 s trials, duration sum 21 s, two preceding targets), and NDR
and PDR are found in one search.

Determinism: the library stops a search after ``search_duration_max``
seconds of *wall time* (``time.monotonic``). A resumed campaign replays
stored trials instantly, so a wall-time limit could end the original run
and the replay differently. This adapter therefore gives the library an
effectively infinite limit and enforces ``search_duration_max_s`` itself as
a budget of intended trial seconds: the search fails (``SearchError``) when
the next trial would take the sum of intended durations over the budget.
The library's other decisions depend only on the results it receives.

Reported values: ``load_pps`` is the goal's relevant lower bound (the highest
load classified as meeting the goal, an offered load, matching the
methodology's definition of NDR/PDR); ``upper_pps`` the relevant upper
bound; ``conditional_throughput_pps`` is the library's conditional
throughput (lower bound times 1 - the pessimistic loss ratio).
"""
from __future__ import annotations

import re

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

from fwdbench.goal import goal_label
from fwdbench.intent import TrialIntent
from fwdbench.search.result import GoalResult, SearchError, SearchResult, TrialLog
from fwdbench.search.settings import MlrSettings

_UNLIMITED_S = 1e12          # wall-time limit handed to the library [s]
_MEASURING = re.compile(r"^Measuring at d=[^,]+,il=(\d+)")
_INT_LOAD = re.compile(r"int_load=(\d+)")
_TARGET = re.compile(r"^Target lr=([^,]+),er=[^,]+,ds=([^:]+): (.*)$")


def _goal_name(x: float) -> str:
    return goal_label(x)


def _explain(msg: str) -> TrialIntent:
    """The library's last debug line before a trial, as the trial's intent. (The
    library says which goal it targets only in these lines: its interface, read
    as it is written; fwdbench's own intents are never text.)"""
    if msg.startswith("First trial at max rate"):
        return TrialIntent.search("initial", "mlr: initial trial at max load")
    if msg.startswith("Second trial"):
        return TrialIntent.search(
            "initial", "mlr: initial trial at the max-load trial's forwarding rate")
    if msg.startswith("Third trial"):
        return TrialIntent.search(
            "initial",
            "mlr: initial trial refining the second (its forwarding rate or one width above)")
    m = _TARGET.match(msg)
    if m:
        what = m.group(3).rsplit(":", 1)[0].strip().rstrip(".")
        x = float(m.group(1))
        return TrialIntent.search(
            "target", f"mlr {_goal_name(x)} (target duration sum {float(m.group(2)):g} s): "
                      f"{what}", x)
    return TrialIntent.search("target", f"mlr: {msg}")


WARMUP = TrialIntent.warmup("mlr: warm-up at max load (result ignored)")


class _Measurer(AbstractMeasurer):
    def __init__(self, log: TrialLog, settings: MlrSettings) -> None:
        self.log = log
        self.settings = settings
        self.pending: list[str] = []
        self.measuring_int_load: int | None = None
        self.warmup_pending = settings.warmup_duration_s > 0.0
        self.intended_s = 0.0

    def debug(self, msg: str) -> None:
        m = _MEASURING.match(msg)
        if m:
            self.measuring_int_load = int(m.group(1))
        elif not msg.startswith("Measured lr"):
            self.pending.append(msg)

    def _intent(self) -> TrialIntent:
        """Every selector nominates (and logs) before the lowest load wins, so
        the reason is the latest message naming the load being measured."""
        il = self.measuring_int_load
        chosen = ""
        for msg in reversed(self.pending):
            m = _INT_LOAD.search(msg)
            if m and il is not None and int(m.group(1)) == il:
                chosen = msg
                break
        if not chosen:
            plain = [m for m in self.pending if not m.startswith("Target ")]
            chosen = plain[-1] if plain else (self.pending[-1] if self.pending else "")
        self.pending.clear()
        self.measuring_int_load = None
        return _explain(chosen)

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        budget = self.settings.search_duration_max_s
        if self.intended_s + intended_duration > budget * (1 + 1e-12):
            raise SearchError(
                f"mlr: the search would exceed search_duration_max_s={budget:g} s of trial "
                f"time after {len(self.log.trials)} trials; the DUT is noisy or the goals "
                "are too strict. Raise search_duration_max_s or relax relative_width.")
        self.intended_s += intended_duration
        warmup = self.warmup_pending
        self.warmup_pending = False
        intent = WARMUP if warmup else self._intent()
        if warmup:
            self.pending.clear()
        trial = self.log.run(intended_duration, intended_load, intent)
        n = trial.intended_packets
        rx = min(trial.rx_packets, n)
        if n <= 0:              # measured nothing: a total loss to the library too
            n, rx = 1, 0
        # offered = intended and forwarded = rx, so the library's loss ratio is
        # exactly fwdbench's PLR = (tx_intended - rx) / tx_intended.
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=n,
            forwarding_count=rx,
            intended_count=n,
            offered_duration=trial.duration_s,
            duration_with_overheads=intended_duration,
        )


def mlr_config(settings: MlrSettings, max_load_pps: float) -> Config:
    """The library's Config for these settings (wall-time limit disabled, see above)."""
    config = Config()
    config.goals = [
        SearchGoal(
            loss_ratio=x,
            exceed_ratio=settings.exceed_ratio,
            relative_width=settings.relative_width,
            initial_trial_duration=settings.initial_trial_duration_s,
            final_trial_duration=settings.final_trial_duration_s,
            duration_sum=settings.duration_sum_s,
            preceding_targets=settings.preceding_targets,
            expansion_coefficient=settings.expansion_coefficient,
            fail_fast=settings.fail_fast,
        )
        for x in settings.loss_ratios
    ]
    config.min_load = settings.min_load_pps
    config.max_load = max_load_pps
    config.search_duration_max = _UNLIMITED_S
    config.warmup_duration = settings.warmup_duration_s or None
    return config


def run_mlr(settings: MlrSettings, log: TrialLog) -> SearchResult:
    max_load = log.max_load_pps
    if settings.min_load_pps >= max_load:
        raise SearchError(f"mlr: min_load_pps {settings.min_load_pps!r} is not below "
                          f"max load {max_load!r} pps")
    config = mlr_config(settings, max_load)
    measurer = _Measurer(log, settings)
    search = MultipleLossRatioSearch(config=config)
    try:
        goal_results = search.search(measurer=measurer, debug=measurer.debug)
    except SearchError:
        raise
    except RuntimeError as e:     # the library's failures (e.g. fail_fast: min load too high)
        raise SearchError(f"mlr: MLRsearch failed: {e}") from e
    result = SearchResult(search="mlr", max_load_pps=max_load, settings=settings.model_dump())
    for goal, x in zip(config.goals, settings.loss_ratios):
        gr = goal_results[goal]
        lo = float(gr.relevant_lower_bound) if gr.relevant_lower_bound is not None else None
        hi = float(gr.relevant_upper_bound) if gr.relevant_upper_bound is not None else None
        ct = gr.conditional_throughput
        width = (hi - lo) / hi if lo is not None and hi is not None else None
        reached = hi is None and lo is not None
        result.goals.append(GoalResult(
            loss_ratio=x, load_pps=lo, upper_pps=hi, relative_width=width,
            conditional_throughput_pps=float(ct) if ct is not None else None,
            max_load_reached=reached))
        if lo is None:
            result.warnings.append(
                f"mlr {_goal_name(x)}: min load {settings.min_load_pps:.0f} pps is already "
                "an upper bound; no result. Lower min_load_pps or check the DUT.")
        if reached:
            result.warnings.append(
                f"mlr {_goal_name(x)}: max load {max_load:.0f} pps meets the goal; the DUT may "
                "be faster than the generator can show.")
    return result
