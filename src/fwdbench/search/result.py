"""What a search returns: the goal results and every trial it ran, with why.

A search never touches packets. It asks its ``measure`` callback for trials
and keeps each one together with the reason it asked for it, so a report can
show how the number was obtained and a resumed campaign can replay the
stored trials through the same search (searches are deterministic functions
of the trial results they receive).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from fwdbench.errors import FwdbenchError
from fwdbench.goal import goal_label
from fwdbench.intent import TrialIntent
from fwdbench.trial import TrialResult

Measure = Callable[[float, float, TrialIntent], TrialResult]
"""``measure(duration_s [s], load_pps [pps], intent) -> TrialResult``: runs one
trial at one intended load per stream and persists it before returning. The
one measure callback of fwdbench (searches, runner, sim); duration first, as
MLRsearch's ``measure(intended_duration, intended_load)`` and every execute."""


class SearchError(FwdbenchError):
    """A search could not run or could not finish (bad settings for this
    scenario, or a limit such as MLRsearch's duration budget was hit)."""


@dataclass(frozen=True)
class SearchTrial:
    """One trial a search asked for, and why."""
    index: int                 # 0-based order within the search
    intent: TrialIntent        # why (kind, step, goal, latency fraction, reason)
    trial: TrialResult

    @property
    def reason(self) -> str:   # e.g. "binary NDR: bisect between 500000 and 1000000 pps"
        return self.intent.reason

    @property
    def kind(self) -> str:     # "search" | "latency" | "warmup"
        return self.intent.kind

    @property
    def used(self) -> bool:    # False for trials whose result is ignored (MLRsearch warm-up)
        return self.intent.used

    @property
    def load_pps(self) -> float:
        return self.trial.intended_load_pps

    @property
    def duration_s(self) -> float:
        return self.trial.duration_s

    @property
    def loss_ratio(self) -> float:
        return self.trial.loss_ratio


@dataclass(frozen=True)
class GoalResult:
    """The result for one loss goal (loss_ratio 0 is NDR, 0.005 is PDR@0.5%).

    ``load_pps`` is the highest offered load classified as meeting the goal
    (the relevant lower bound); ``upper_pps`` the lowest load classified as
    not meeting it. ``load_pps`` is None when even the lowest load tried
    failed the goal; ``upper_pps`` is None when the maximum load passed
    (then ``max_load_reached`` is True and the DUT may be faster than the
    generator allows to show).
    """
    loss_ratio: float                          # goal PLR (0 = NDR)
    load_pps: float | None                     # [pps] per stream
    upper_pps: float | None = None             # [pps]
    relative_width: float | None = None        # (upper - load) / upper, achieved
    conditional_throughput_pps: float | None = None  # [pps] MLRsearch's value at load_pps
    max_load_reached: bool = False
    verified: bool | None = None               # binary: verification trial passed (None: not run)

    @property
    def name(self) -> str:
        return goal_label(self.loss_ratio)

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.name, "loss_ratio": self.loss_ratio,
            "load_pps": self.load_pps, "upper_pps": self.upper_pps,
            "relative_width": self.relative_width,
            "conditional_throughput_pps": self.conditional_throughput_pps,
            "max_load_reached": self.max_load_reached, "verified": self.verified,
        }


@dataclass
class SearchResult:
    """Goal results plus the trials the search ran, in order."""
    search: str                                # "binary" | "mlr" | "sweep" | "latency"
    max_load_pps: float                        # [pps] the line/generator maximum given
    goals: list[GoalResult] = field(default_factory=list)
    trials: list[SearchTrial] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    def goal(self, loss_ratio: float) -> GoalResult | None:
        """The result for the goal with this loss ratio, or None if not searched."""
        for g in self.goals:
            if abs(g.loss_ratio - loss_ratio) <= 1e-12:
                return g
        return None

    @property
    def ndr_pps(self) -> float | None:
        """NDR [pps]: highest load with zero loss (None if not searched or not found)."""
        g = self.goal(0.0)
        return g.load_pps if g else None

    @property
    def pdr_pps(self) -> float | None:
        """PDR [pps] for the smallest non-zero loss goal (PDR@0.5% by default)."""
        nonzero = sorted((g for g in self.goals if g.loss_ratio > 0.0),
                         key=lambda g: g.loss_ratio)
        return nonzero[0].load_pps if nonzero else None

    def pdr_at(self, loss_ratio: float) -> float | None:
        g = self.goal(loss_ratio)
        return g.load_pps if g else None

    @property
    def trial_count(self) -> int:
        return len(self.trials)

    @property
    def total_trial_s(self) -> float:
        """Sum of the measured durations of all trials run [s] (warm-ups included)."""
        return sum(t.duration_s for t in self.trials)

    def to_dict(self) -> dict[str, Any]:
        return {
            "search": self.search,
            "max_load_pps": self.max_load_pps,
            "goals": [g.to_dict() for g in self.goals],
            "trials": [{"index": t.index, "reason": t.reason, "used": t.used, "kind": t.kind,
                        "step": t.intent.step, "goal_loss_ratio": t.intent.goal_loss_ratio,
                        "latency_fraction": t.intent.latency_fraction,
                        "load_pps": t.load_pps, "duration_s": t.duration_s,
                        "loss_ratio": t.loss_ratio} for t in self.trials],
            "warnings": list(self.warnings),
            "settings": dict(self.settings),
        }


class TrialLog:
    """Wraps a ``measure`` callback and records every trial with its intent."""

    def __init__(self, measure: Measure, max_load_pps: float) -> None:
        self._measure = measure
        self.max_load_pps = max_load_pps
        self.trials: list[SearchTrial] = []

    def run(self, duration_s: float, load_pps: float, intent: TrialIntent) -> TrialResult:
        if load_pps > self.max_load_pps * (1 + 1e-9):
            raise SearchError(
                f"search asked for {load_pps:.6g} pps, above max_load_pps "
                f"{self.max_load_pps:.6g}; this is a bug in the search")
        trial = self._measure(float(duration_s), float(load_pps), intent)
        if not isinstance(trial, TrialResult):
            raise SearchError(
                f"measure() returned {type(trial).__name__}, expected TrialResult")
        self.trials.append(SearchTrial(len(self.trials), intent, trial))
        return trial

    @property
    def trial_seconds(self) -> float:
        return sum(t.duration_s for t in self.trials)
