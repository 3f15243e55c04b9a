"""A loss goal: NDR (loss ratio 0) or PDR@x, as a value.

Goals are keyed by their loss ratio, a float, wherever code handles them (the
store keeps it in a column); ``key`` ("ndr", "pdr@0.005") and ``label``
("NDR", "PDR@0.5%") are derived from it for files and people, and never
parsed back.
"""
from __future__ import annotations

from dataclasses import dataclass

PDR_LOSS_RATIO = 0.005          # CSIT's and PASTRAMI's PDR


def goal_key(loss_ratio: float) -> str:
    """The goal's name in files: 'ndr', 'pdr@0.005'."""
    return "ndr" if loss_ratio == 0 else f"pdr@{loss_ratio:g}"


def goal_label(loss_ratio: float) -> str:
    """The goal's name for people: 'NDR', 'PDR@0.5%'."""
    return "NDR" if loss_ratio == 0 else f"PDR@{loss_ratio * 100:g}%"


@dataclass(frozen=True, order=True)
class LossGoal:
    """A loss goal, ordered by its loss ratio (NDR first)."""
    loss_ratio: float               # [1] 0 is NDR

    @property
    def key(self) -> str:
        return goal_key(self.loss_ratio)

    @property
    def label(self) -> str:
        return goal_label(self.loss_ratio)

    @property
    def is_ndr(self) -> bool:
        return self.loss_ratio == 0

    def __str__(self) -> str:
        return self.key


NDR = LossGoal(0.0)
PDR = LossGoal(PDR_LOSS_RATIO)
