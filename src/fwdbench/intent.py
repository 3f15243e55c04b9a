"""Why a trial runs: the search's intent, typed, from the search to the store
and the report.

A search asks for a trial for a reason it knows exactly: a step of its
algorithm, the loss goal it is narrowing, the share of a PDR a latency trial
sits at. :class:`TrialIntent` carries that as values (not as a sentence to be
parsed again): the search builds it, ``measure(duration_s, load_pps, intent)``
passes it to the runner, the store keeps it in columns of the trial row, and
the report reads those columns. ``reason`` is the same in words, for people.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["search", "latency", "warmup"]
KINDS: tuple[str, ...] = ("search", "latency", "warmup")

#: the steps a search takes (``TrialIntent.step``)
STEPS: tuple[str, ...] = (
    "sweep",            # sweep: a load of the list
    "first",            # binary: the first trial, at max load
    "hint",             # binary: the failed trial's forwarding rate
    "probe",            # binary: one goal width beside the hint
    "bisect",           # binary: the middle of the bracket
    "min-load",         # binary: the lowest load allowed
    "verification",     # binary: the result again (verify = true)
    "initial",          # mlr: the library's initial trials
    "target",           # mlr: a trial for one of the library's targets
    "latency",          # latency at a fraction of the PDR (or NDR)
    "warmup",           # a trial whose result is ignored (after DUT setup; MLRsearch's)
)


@dataclass(frozen=True)
class TrialIntent:
    """Why a search asks for a trial. Loads and durations are not here: they are
    ``measure``'s own arguments."""
    kind: Kind                              # what the trial is for (the store's ``kind``)
    step: str                               # the search's step (STEPS)
    reason: str                             # the same in words
    goal_loss_ratio: float | None = None    # [1] the loss goal it serves (0 NDR, 0.005 PDR@0.5%)
    latency_fraction: float | None = None   # [1] latency trials: share of the reference rate
    latency_reference: str | None = None    # latency trials: "PDR" or "NDR"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"intent kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.step not in STEPS:
            raise ValueError(f"intent step {self.step!r} is not one of {', '.join(STEPS)}")

    @property
    def used(self) -> bool:
        """Whether the search uses the result (a warm-up's is ignored)."""
        return self.kind != "warmup"

    @classmethod
    def search(cls, step: str, reason: str, goal_loss_ratio: float | None = None
               ) -> "TrialIntent":
        return cls("search", step, reason, goal_loss_ratio)

    @classmethod
    def latency(cls, fraction: float, reference: str, reason: str) -> "TrialIntent":
        return cls("latency", "latency", reason, latency_fraction=float(fraction),
                   latency_reference=reference)

    @classmethod
    def warmup(cls, reason: str) -> "TrialIntent":
        return cls("warmup", "warmup", reason)
