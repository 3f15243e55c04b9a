"""Numbers in the report: estimates over repetitions and their formatting.

Statistics come from ``fwdbench.analysis`` (mean, sample standard deviation,
95 % confidence interval with Student's t, PASTRAMI's normalised
uncertainty; see methodology.md, "Statistics over repetitions"). Formatting
is done here, once, so every table and figure shows a quantity with the same
unit and precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from ..analysis.stats import normalised_uncertainty_from, summarize
from ..units import L1_OVERHEAD_B, mean_frame_size

FCS_B = 4                   # frame check sequence [B], not in the stored byte counts
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """Mean of repeated measurements with a 95 % CI (Student's t, n - 1 df)."""
    values: tuple[float, ...]
    mean: float | None
    std: float | None          # sample standard deviation (ddof = 1); None when n < 2
    low: float | None          # CI bounds; None when n < 2
    high: float | None
    missing: int = 0           # repetitions where the goal was not found (value NULL)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def half_width(self) -> float | None:
        if self.high is None or self.mean is None:
            return None
        return self.high - self.mean

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (std / mean)."""
        if self.std is None or not self.mean:
            return None
        return self.std / abs(self.mean)

    @property
    def normalised_uncertainty(self) -> float | None:
        """PASTRAMI: (upper CI bound - mean) / |mean|, capped at 2."""
        if self.high is None or self.mean is None:
            return None
        return normalised_uncertainty_from(self.mean, self.high)


def estimate(values: Iterable[float | None]) -> Estimate:
    """Summary of repetitions; None values (goal not found) are counted as missing."""
    vals = list(values)
    nums = [float(v) for v in vals if v is not None and math.isfinite(float(v))]
    missing = len(vals) - len(nums)
    if not nums:
        return Estimate((), None, None, None, None, missing)
    s = summarize(nums, CONFIDENCE)
    return Estimate(tuple(nums), s.mean, s.std, s.ci_low, s.ci_high, missing)


# -- formatting ----------------------------------------------------------------

def mpps(pps: float | None, digits: int = 3) -> str:
    return "–" if pps is None else f"{pps / 1e6:.{digits}f}"


def gbps(bps: float | None, digits: int = 3) -> str:
    return "–" if bps is None else f"{bps / 1e9:.{digits}f}"


def us(ns: float | None) -> str:
    """Nanoseconds as microseconds with 3 significant digits (at least 1 decimal)."""
    if ns is None:
        return "–"
    v = ns / 1e3
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def pct(ratio: float | None, digits: int = 1) -> str:
    return "–" if ratio is None else f"{ratio * 100:.{digits}f}"


def integer(n: int | float | None) -> str:
    """Thousands separated by a thin space, as the thesis prints them."""
    if n is None:
        return "–"
    return f"{int(round(n)):,}".replace(",", "\u2009")


def sig(x: float | None, digits: int = 3) -> str:
    """A number with `digits` significant digits, no exponent for everyday sizes."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(x))))
    if mag >= 6 or mag < -4:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - mag, 0)
    return f"{x:,.{decimals}f}".replace(",", "\u2009")


def p_value(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.2g}"


def duration(secs: float | None) -> str:
    if secs is None:
        return "–"
    secs = float(secs)
    if secs < 60:
        return f"{secs:.1f} s"
    m, s = divmod(int(round(secs)), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s"


def interval_text(low: float, high: float, scale: float = 1.0, digits: int = 3) -> str:
    """'[1.234, 1.250]' for a quantity that is never negative (a rate, a ratio
    of rates): a lower bound below zero is printed '< 0', meaning the data
    do not bound it from below; the exports keep the number."""
    lo = "< 0" if low < 0 else f"{low / scale:.{digits}f}"
    return f"[{lo}, {high / scale:.{digits}f}]"


def ci_text(est: Estimate, scale: float = 1e6, digits: int = 3) -> str:
    """A rate's CI as interval_text prints it, or '–' when fewer than two
    repetitions."""
    if est.low is None or est.high is None:
        return "–"
    return interval_text(est.low, est.high, scale, digits)


# -- bit rates -------------------------------------------------------------------

def frame_bytes(frame_size: int | str) -> float:
    """Mean frame size incl. FCS [B] (IMIX averaged)."""
    return mean_frame_size(frame_size)


def l2_bps(pps: float, frame_size: int | str) -> float:
    """L2 bit rate: frame incl. FCS [bit/s]."""
    return pps * frame_bytes(frame_size) * 8


def l1_bps(pps: float, frame_size: int | str) -> float:
    """L1 bit rate: frame incl. FCS + 20 B preamble and inter-frame gap [bit/s]."""
    return pps * (frame_bytes(frame_size) + L1_OVERHEAD_B) * 8
