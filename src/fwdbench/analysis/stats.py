"""Statistics over repetitions (methodology.md, "Statistics over repetitions").

- mean; sample standard deviation with ddof = 1; coefficient of variation
  std / |mean|;
- the confidence interval of the mean with Student's t and n - 1 degrees of
  freedom: mean +- t(1 - (1 - c)/2, n - 1) * s / sqrt(n) (c = 0.95);
- PASTRAMI's normalised uncertainty (upper CI bound - mean) / |mean|, capped
  at 2 (0 when every value is 0: no spread, nothing uncertain).

With fewer than 2 values there is no standard deviation and no CI; the
summary says so in ``note`` instead of raising.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np
from scipy import stats as _st

NORM_UNCERTAINTY_CAP = 2.0
NO_CI = "fewer than 2 repetitions: no standard deviation and no confidence interval"


@lru_cache(maxsize=4096)
def t_critical(n: int, confidence: float = 0.95) -> float:
    """Two-sided Student's t quantile t(1 - (1 - confidence)/2, n - 1)."""
    if n < 2:
        raise ValueError(f"t_critical needs n >= 2, got {n}")
    return float(_st.t.ppf(1.0 - (1.0 - confidence) / 2.0, n - 1))


@dataclass(frozen=True)
class Summary:
    """Summary of repeated measurements of one quantity."""
    n: int
    mean: float
    std: float | None            # sample std, ddof = 1 (None if n < 2)
    cv: float | None             # std / |mean| (None if n < 2 or mean == 0)
    ci_low: float | None         # confidence interval of the mean (None if n < 2)
    ci_high: float | None
    confidence: float = 0.95
    note: str = ""

    @property
    def half_width(self) -> float | None:
        return None if self.ci_high is None else self.ci_high - self.mean

    @property
    def norm_uncertainty(self) -> float | None:
        """PASTRAMI's (upper CI bound - mean) / |mean|, capped at 2 (None if n < 2)."""
        if self.ci_high is None:
            return None
        return normalised_uncertainty_from(self.mean, self.ci_high)

    def to_dict(self) -> dict[str, float | int | str | None]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "cv": self.cv,
                "ci_low": self.ci_low, "ci_high": self.ci_high,
                "confidence": self.confidence, "norm_uncertainty": self.norm_uncertainty,
                "note": self.note}


def _array(values: Iterable[float]) -> np.ndarray:
    a = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"expected a 1-D sequence of numbers, got shape {a.shape}")
    if a.size and not np.all(np.isfinite(a)):
        raise ValueError(f"values must be finite, got {a[~np.isfinite(a)][:3].tolist()}")
    return a


def mean(values: Iterable[float]) -> float:
    a = _array(values)
    if a.size == 0:
        raise ValueError("mean of no values")
    return float(a.mean())


def sample_std(values: Iterable[float]) -> float | None:
    """Sample standard deviation (ddof = 1); None for fewer than 2 values."""
    a = _array(values)
    return float(a.std(ddof=1)) if a.size >= 2 else None


def cv(values: Iterable[float]) -> float | None:
    """Coefficient of variation std / |mean|; None if n < 2 or the mean is 0."""
    a = _array(values)
    if a.size < 2:
        return None
    m = float(a.mean())
    return float(a.std(ddof=1)) / abs(m) if m != 0.0 else None


def confidence_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student's t CI of the mean with n - 1 dof; None for fewer than 2 values."""
    s = summarize(values, confidence)
    return None if s.ci_low is None else (s.ci_low, s.ci_high)  # type: ignore[return-value]


def normalised_uncertainty_from(mean_value: float, ci_high: float) -> float:
    if mean_value == 0.0:
        return 0.0 if ci_high <= 0.0 else NORM_UNCERTAINTY_CAP
    return min(NORM_UNCERTAINTY_CAP, (ci_high - mean_value) / abs(mean_value))


def normalised_uncertainty(values: Iterable[float], confidence: float = 0.95) -> float | None:
    """PASTRAMI's (upper CI bound - mean) / |mean|, capped at 2; None if n < 2."""
    return summarize(values, confidence).norm_uncertainty


def summarize(values: Iterable[float], confidence: float = 0.95) -> Summary:
    """Mean, std, CV and the t confidence interval of the mean."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    a = _array(values)
    n = int(a.size)
    if n == 0:
        raise ValueError("cannot summarise no values")
    m = float(a.mean())
    if n < 2:
        return Summary(n, m, None, None, None, None, confidence, NO_CI)
    # identical values have no spread; a.std() would give rounding noise (1e-17)
    s = 0.0 if a.min() == a.max() else float(a.std(ddof=1))
    half = t_critical(n, confidence) * s / math.sqrt(n)
    return Summary(n, m, s, s / abs(m) if m != 0.0 else None, m - half, m + half, confidence)


def summarize_rows(rows: list[np.ndarray], confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Vectorised summaries of many groups (one array per group).

    Returns arrays (one entry per group) n, mean, std, ci_low, ci_high,
    norm_uncertainty; NaN where n < 2. Used for whole campaigns, where a
    Summary object per group would be slow.
    """
    k = len(rows)
    n = np.fromiter((r.size for r in rows), dtype=np.int64, count=k)
    if k and n.min() == 0:
        raise ValueError("a group has no values")
    sums = np.fromiter((r.sum() for r in rows), dtype=float, count=k)
    mean_v = sums / np.maximum(n, 1)
    # identical values in a group have no spread (not the rounding noise of r - mean)
    sq = np.fromiter(((r - m) @ (r - m) if r.size and r.min() != r.max() else 0.0
                      for r, m in zip(rows, mean_v)), dtype=float, count=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(n >= 2, np.sqrt(sq / np.maximum(n - 1, 1)), np.nan)
        tq = np.where(n >= 2, _st.t.ppf(1.0 - (1.0 - confidence) / 2.0, np.maximum(n - 1, 1)), np.nan)
        half = tq * std / np.sqrt(n)
        hi = mean_v + half
        nu = np.where(mean_v != 0.0, (hi - mean_v) / np.abs(mean_v),
                      np.where(hi <= 0.0, 0.0, NORM_UNCERTAINTY_CAP))
    nu = np.where(n >= 2, np.minimum(nu, NORM_UNCERTAINTY_CAP), np.nan)
    return {"n": n, "mean": mean_v, "std": std, "ci_low": mean_v - half, "ci_high": hi,
            "norm_uncertainty": nu}
