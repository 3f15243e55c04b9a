"""Ratio of means with Fieller's CI, and Welch's t-test."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from fwdbench.analysis import compare, fieller_interval


def test_ratio_ci_solves_fiellers_equation_and_welch_matches_scipy():
    a = [10.0, 12.0, 14.0]
    b = [20.0, 22.0, 24.0]
    c = compare(a, b)
    assert c.ratio == pytest.approx(22 / 12)
    va = vb = 4.0 / 3.0
    r = 22 / 12
    dof = (vb + r * r * va) ** 2 / (vb * vb / 2 + r ** 4 * va * va / 2)
    assert c.dof == pytest.approx(dof)
    t = st.t.ppf(0.975, dof)
    for end in (c.ci_low, c.ci_high):        # the bounds solve (b - r a)^2 = t^2 (vb + r^2 va)
        assert (22 - end * 12) ** 2 == pytest.approx(t * t * (vb + end * end * va), rel=1e-9)
    assert c.ci_low < c.ratio < c.ci_high
    w = st.ttest_ind(b, a, equal_var=False)
    assert c.t_statistic == pytest.approx(w.statistic) and c.p_value == pytest.approx(w.pvalue)
    assert c.significant is True
    assert c.method == "fieller"


def test_not_significant_when_same_distribution():
    rng = np.random.default_rng(1)
    a = rng.normal(1e6, 1e4, 20)
    b = rng.normal(1e6, 1e4, 20)
    c = compare(a, b)
    assert c.significant is False
    assert c.ci_low < 1.0 < c.ci_high
    # close to the delta method when the relative errors are small
    sa, sb = st.sem(a), st.sem(b)
    delta = c.ratio * math.sqrt((sa / a.mean()) ** 2 + (sb / b.mean()) ** 2)
    assert (c.ci_high - c.ci_low) / 2 == pytest.approx(st.t.ppf(0.975, c.dof) * delta, rel=0.01)


def test_unbounded_when_denominator_not_significant():
    assert fieller_interval(0.1, 1.0, 1.0, 0.01, 2.0) is None
    c = compare([-1.0, 1.0, 0.5], [5.0, 6.0, 7.0])
    assert c.ci_low is None and c.ci_high is None and "unbounded" in c.note


def test_too_few_repetitions_and_constant_samples():
    c = compare([1.0], [2.0, 3.0])
    assert c.ratio == pytest.approx(2.5) and c.ci_low is None and c.p_value is None
    assert "fewer than 2" in c.note
    c = compare([2.0, 2.0], [3.0, 3.0])
    assert (c.ci_low, c.ci_high) == (1.5, 1.5) and c.significant is True
    with pytest.raises(ValueError):
        compare([], [1.0])
