"""The report's calls into ``fwdbench.analysis``: PASTRAMI verdicts and comparisons.

The analysis package owns the algorithms (methodology.md); this module only
adapts their results to the report model's vocabulary.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..analysis.compare import compare as _compare
from ..analysis.pastrami import assess as _assess

def pastrami_verdict(loads: Sequence[float], plr: Sequence[float]):
    """PASTRAMI verdict (the paper's rule) of a curve: ascending loads, mean PLR per load."""
    from .types import Pastrami

    a = _assess(list(loads), list(plr), rule="paper")
    tir = [None if (x is None or math.isnan(x)) else float(x) for x in a.tir]
    return Pastrami(a.verdict, a.explanation,
                    a.past_pdr_index, a.potential_index, a.actual_index, tir)


def comparison(a: Sequence[float], b: Sequence[float]):
    """B relative to A: ratio of means, its 95 % CI (Fieller) and Welch's p-value."""
    return _compare(list(a), list(b))


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Welch p-value that two repetition samples share a mean."""
    if len(a) < 2 or len(b) < 2:
        return None
    return comparison(a, b).p_value
