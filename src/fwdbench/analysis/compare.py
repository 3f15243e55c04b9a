"""Compare two DUTs or versions: ratio of means with a CI, and significance.

The ratio is R = mean(B) / mean(A) ("B relative to A"; 1.05 is 5 % more).
Its confidence interval uses **Fieller's theorem** for independent samples:
the set of r for which (mean_B - r mean_A)^2 <= t^2 (v_B + r^2 v_A), with
v = s^2 / n the variance of each mean. The t quantile uses the
Welch-Satterthwaite degrees of freedom of v_B + R^2 v_A evaluated at the
point estimate R (an approximation; exact for equal variances and sizes in
the limit). When mean(A) is not significantly different from zero
(t^2 v_A >= mean_A^2) the Fieller set is unbounded and no CI is given.

Significance is Welch's unequal-variance t-test (scipy.stats.ttest_ind with
equal_var=False), two-sided, at alpha = 1 - confidence.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Comparison:
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    ratio: float | None              # mean_b / mean_a (None if mean_a == 0)
    ci_low: float | None             # Fieller CI of the ratio (None: unbounded or n < 2)
    ci_high: float | None
    dof: float | None                # Welch-Satterthwaite dof used for the CI
    t_statistic: float | None        # Welch t of B - A
    p_value: float | None
    significant: bool | None         # p < alpha (None if it cannot be tested)
    confidence: float = 0.95
    method: str = "fieller"
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def _welch_dof(va: float, vb: float, n_a: int, n_b: int, r: float) -> float:
    num = (vb + r * r * va) ** 2
    den = (vb * vb) / (n_b - 1) + (r ** 4) * (va * va) / (n_a - 1)
    return num / den if den > 0 else float(n_a + n_b - 2)


def fieller_interval(mean_a: float, mean_b: float, var_mean_a: float, var_mean_b: float,
                     t: float) -> tuple[float, float] | None:
    """Fieller CI of mean_b / mean_a for independent means; None if unbounded."""
    a, b = mean_a, mean_b
    qa = a * a - t * t * var_mean_a
    if qa <= 0.0:
        return None
    disc = a * a * var_mean_b + b * b * var_mean_a - t * t * var_mean_a * var_mean_b
    root = t * math.sqrt(max(disc, 0.0))
    return ((a * b - root) / qa, (a * b + root) / qa)


def compare(a: Iterable[float], b: Iterable[float], confidence: float = 0.95) -> Comparison:
    """Compare samples B against A (e.g. throughput per repetition)."""
    xa = np.asarray(list(a), dtype=float)
    xb = np.asarray(list(b), dtype=float)
    if xa.size == 0 or xb.size == 0:
        raise ValueError("compare needs at least one value on each side")
    ma, mb = float(xa.mean()), float(xb.mean())
    ratio = mb / ma if ma != 0.0 else None
    n_a, n_b = int(xa.size), int(xb.size)
    if n_a < 2 or n_b < 2:
        return Comparison(n_a, n_b, ma, mb, ratio, None, None, None, None, None, None, confidence,
                          note="fewer than 2 repetitions on a side: no confidence interval "
                               "and no significance test")
    va = float(xa.var(ddof=1)) / n_a
    vb = float(xb.var(ddof=1)) / n_b
    alpha = 1.0 - confidence
    if va == 0.0 and vb == 0.0:
        same = ma == mb
        return Comparison(n_a, n_b, ma, mb, ratio, ratio, ratio, None, None,
                          1.0 if same else 0.0, not same, confidence,
                          note="no variation in either sample: the ratio is exact")
    r = ratio if ratio is not None else 0.0
    dof = _welch_dof(va, vb, n_a, n_b, r)
    tq = float(_st.t.ppf(1.0 - alpha / 2.0, dof))
    ci = fieller_interval(ma, mb, va, vb, tq) if ratio is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        test = _st.ttest_ind(xb, xa, equal_var=False)
    notes = []
    if ci is None:
        notes.append("mean of A is not significantly different from 0: the ratio's CI is unbounded")
    if any("precision loss" in str(w.message).lower() for w in caught):
        notes.append("samples are nearly identical: scipy reports precision loss in the t-test")
    note = "; ".join(notes)
    return Comparison(n_a, n_b, ma, mb, ratio,
                      ci[0] if ci else None, ci[1] if ci else None, dof,
                      float(test.statistic), float(test.pvalue), bool(test.pvalue < alpha),
                      confidence, note=note)
