"""Statistics over repetitions against scipy and hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from fwdbench.analysis import (
    NO_CI,
    confidence_interval,
    cv,
    mean,
    normalised_uncertainty,
    sample_std,
    summarize,
    summarize_rows,
    t_critical,
)


def test_hand_computed_case():
    s = summarize([1, 2, 3, 4, 5])
    assert s.n == 5 and s.mean == 3.0
    assert s.std == pytest.approx(math.sqrt(2.5))               # ddof = 1
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3)
    assert t_critical(5) == pytest.approx(2.776445105, rel=1e-9)  # t(0.975, 4), from tables
    half = 2.776445105 * math.sqrt(2.5) / math.sqrt(5)
    assert (s.ci_low, s.ci_high) == pytest.approx((3 - half, 3 + half), rel=1e-9)
    assert s.norm_uncertainty == pytest.approx(half / 3, rel=1e-9)
    assert s.half_width == pytest.approx(half)


@pytest.mark.parametrize("n", [2, 3, 10, 50])
def test_against_scipy(n):
    rng = np.random.default_rng(n)
    x = rng.normal(1e6, 2e4, n)
    s = summarize(x)
    assert s.mean == pytest.approx(np.mean(x))
    assert s.std == pytest.approx(np.std(x, ddof=1))
    lo, hi = st.t.interval(0.95, n - 1, loc=np.mean(x), scale=st.sem(x))
    assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), rel=1e-12)
    assert confidence_interval(x) == pytest.approx((lo, hi), rel=1e-12)
    assert sample_std(x) == pytest.approx(np.std(x, ddof=1))
    assert cv(x) == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    lo99, hi99 = st.t.interval(0.99, n - 1, loc=np.mean(x), scale=st.sem(x))
    s99 = summarize(x, confidence=0.99)
    assert (s99.ci_low, s99.ci_high) == pytest.approx((lo99, hi99), rel=1e-12)


def test_fewer_than_two_repetitions_has_no_ci_said_plainly():
    s = summarize([0.25])
    assert s.mean == 0.25
    assert s.std is None and s.cv is None and s.ci_low is None and s.ci_high is None
    assert s.norm_uncertainty is None
    assert s.note == NO_CI and "fewer than 2" in s.note
    assert confidence_interval([1.0]) is None
    assert normalised_uncertainty([1.0]) is None
    assert sample_std([3.0]) is None


def test_normalised_uncertainty_capped_at_two_and_zero_cases():
    # tiny mean, large spread -> capped
    assert normalised_uncertainty([0.0, 0.0, 0.0, 1e-6]) == 2.0
    # all zero: no spread, nothing uncertain
    assert normalised_uncertainty([0.0, 0.0, 0.0]) == 0.0
    assert normalised_uncertainty([5.0, 5.0]) == 0.0
    assert cv([0.0, 0.0]) is None


def test_bad_input():
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        summarize([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError):
        mean([])


def test_summarize_rows_matches_scalar_summaries():
    rng = np.random.default_rng(0)
    rows = [rng.random(k) * 1e-3 for k in (1, 2, 5, 30)] + [np.zeros(4)]
    out = summarize_rows(rows)
    for i, r in enumerate(rows):
        s = summarize(r)
        assert out["n"][i] == s.n
        assert out["mean"][i] == pytest.approx(s.mean)
        if s.n < 2:
            assert np.isnan(out["std"][i]) and np.isnan(out["ci_high"][i])
            assert np.isnan(out["norm_uncertainty"][i])
        else:
            assert out["std"][i] == pytest.approx(s.std)
            assert out["ci_low"][i] == pytest.approx(s.ci_low)
            assert out["ci_high"][i] == pytest.approx(s.ci_high)
            assert out["norm_uncertainty"][i] == pytest.approx(s.norm_uncertainty)
