"""PASTRAMI's TIR, saturation detection and verdicts on synthetic curves
built from the paper's equations (section IV-B), under both rules."""
from __future__ import annotations

import numpy as np
import pytest

from fwdbench.analysis import LoadLossCurve, assess, assess_curve, tir
from fwdbench.sim import SimDevice

M = 1e6
LOADS = np.arange(1, 16) * 0.1 * M            # 0.1 .. 1.5 Mpps


def ideal(o, sat):                               # eq. 3
    return np.where(o <= sat, 0.0, 1.0 - sat / o)


def realistic(o, sat, plr_sat=0.01, low=1e-5, onset=0.2, shape=6.0):
    """Small losses below saturation rising to plr_sat, then T = T_sat (eq. 4, f = 1)."""
    u = np.clip((o - onset * sat) / (sat - onset * sat), 0.0, 1.0)
    below = np.where(o < onset * sat, 0.0, low * (plr_sat / low) ** (u ** shape))
    return np.where(o <= sat, below, 1.0 - sat * (1.0 - plr_sat) / o)


def trashing(o, sat, o_t, k):                    # eq. 4 with the stepwise-linear f of eq. 5
    f = np.where(o <= o_t, 1.0, np.maximum(0.0, 1.0 - (o - o_t) / k))
    return np.where(o <= sat, 0.0, 1.0 - sat * f / o)


def test_tir_hand_computed():
    o = [1.0, 2.0, 3.0, 4.0]
    p = [0.0, 0.0, 1 / 3, 0.5]          # throughput 1, 2, 2, 2
    t = tir(o, p)
    assert np.isnan(t[0])
    assert t[1:] == pytest.approx([1.0, 0.0, 0.0])
    t = tir([10, 20, 40], [0.0, 0.1, 0.5])   # throughput 10, 18, 20
    assert t[1:] == pytest.approx([0.8, 0.1])


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_ideal_is_good(rule):
    a = assess(LOADS, ideal(LOADS, 1.0 * M), rule)
    assert a.verdict == "GOOD" and a.label == "GOOD"
    assert a.past_pdr_index == 10 and a.potential_index == 11 and a.actual_index == 11
    assert a.pdr_pps == pytest.approx(1.0 * M)
    assert a.saturation_load_pps == pytest.approx(1.2 * M)
    assert np.isnan(a.tir[:11]).all() and a.tir[11:] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_trashing_is_good(rule):
    a = assess(LOADS, trashing(LOADS, 1.0 * M, 1.1 * M, 2.0 * M), rule)
    assert a.verdict == "GOOD"
    assert a.tir[11:] == pytest.approx(-0.5)    # throughput falls by K^-1 per pps: TIR < 0


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_realistic_steep_is_good(rule):
    # PLR reaches 1 % exactly at saturation (1.0 Mpps): saturated right after PDR.
    a = assess(LOADS, realistic(LOADS, 1.0 * M), rule)
    assert a.verdict == "GOOD"
    assert a.pdr_pps == pytest.approx(0.9 * M)


def test_realistic_slow_rise_rules_differ():
    """PLR passes 0.5 % below saturation and throughput keeps growing to the
    next load (TIR >= 0.3 at p), then stays flat: the paper's rule sees the
    saturation start one load late (BAD); the published code, which never
    applies the 0.3 entry test, calls it GOOD."""
    plr = realistic(LOADS, 1.1 * M, plr_sat=0.03, shape=1.5)
    paper = assess(LOADS, plr, "paper")
    code = assess(LOADS, plr, "published-code")
    p = paper.potential_index
    assert paper.tir[p] >= 0.3 and (paper.tir[p + 1:] < 0.1).all()
    assert paper.verdict == "BAD" and paper.actual_index == p + 1
    assert code.verdict == "GOOD" and code.actual_index == p
    assert paper.pdr_pps == code.pdr_pps


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_realistic_early_losses_are_bad(rule):
    # 0.5 % passed at 1.0 Mpps, but saturation only at 1.4 Mpps (Fig. 6b's shape).
    a = assess(LOADS, realistic(LOADS, 1.4 * M, plr_sat=0.05, shape=1.0), rule)
    assert a.verdict == "BAD"
    assert a.saturation_load_pps > a.pdr_pps + 0.2 * M


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_no_saturation_in_the_measured_range_is_bad(rule):
    """The authors' code labels a curve whose loss never saturates within the loads
    measured BAD (it said NO_SATURATION here before); the paper's two labels put it
    with BAD too (analysis.pastrami's docstring). The reason says why."""
    a = assess(LOADS, ideal(LOADS, 2.0 * M), rule)       # PDR at the highest load
    assert a.verdict == "BAD" and not a.saturation_observed
    assert a.reason == "no saturation in the measured range"
    assert a.label == "BAD (no saturation in the measured range)"
    assert a.pdr_pps == LOADS[-1] and a.saturation_load_pps is None
    assert a.to_dict()["reason"] == a.reason
    a = assess(LOADS, ideal(LOADS, 1.45 * M), rule)      # PDR next to the highest load
    assert a.verdict == "BAD" and a.past_pdr_index == 14 and not a.saturation_observed
    assert a.pdr_pps == pytest.approx(1.4 * M)
    a = assess(LOADS, ideal(LOADS, 1.35 * M), rule)      # one load past the potential one
    assert a.verdict == "GOOD" and a.saturation_observed and a.reason is None


def test_curve_not_ending_saturated_is_bad_and_reentry_counts_last_stretch():
    o = [1, 2, 3, 4, 5, 6]
    thr = [1, 1.98, 2.0, 2.0, 3.0, 3.0]          # saturated, then a jump, then flat again
    plr = [1 - t / x for t, x in zip(thr, o)]
    a = assess(o, plr)
    assert a.past_pdr_index == 1 and a.potential_index == 2
    assert a.actual_index == 5 and a.verdict == "BAD"
    thr = [1, 1.98, 2.0, 2.0, 2.0, 3.0]          # leaves saturation at the end
    a = assess(o, [1 - t / x for t, x in zip(thr, o)])
    assert a.actual_index is None and a.verdict == "BAD"


def test_pdr_below_lowest_load():
    a = assess([1.0, 2.0, 3.0], [0.1, 0.5, 0.7])
    assert a.pdr_pps is None and a.past_pdr_index == 0
    assert "lowest load" in a.explanation


def test_unknown_rule():
    with pytest.raises(ValueError, match="published-code"):
        assess(LOADS, ideal(LOADS, M), "strict")


def test_curve_from_counts_and_uncertainty():
    c = LoadLossCurve.from_counts([1e5, 2e5], [[100, 100, 100], [200, 200]], [[100, 100, 99], [200, 200]])
    assert c.plr_mean == pytest.approx([1 / 300, 0.0])
    assert c.plr_norm_uncertainty[0] == 2.0          # rare tiny loss: capped
    assert c.plr_norm_uncertainty[1] == 0.0
    assert c.max_norm_uncertainty == 2.0
    assert c.repetitions == 2
    assert c.dr_mean == pytest.approx([1 - 1 / 300, 1.0])
    single = LoadLossCurve.from_counts([1e5], [[100]], [[90]])
    assert single.max_norm_uncertainty is None        # one repetition: no CI
    with pytest.raises(ValueError, match="ascending"):
        LoadLossCurve(np.array([2.0, 1.0]), [np.zeros(1), np.zeros(1)])


def test_sim_sweep_to_verdict():
    """The sim's models give PASTRAMI's verdicts end to end."""
    from fwdbench.search import SweepSettings, run_search
    for model, kw, verdict in [("ideal", {}, "GOOD"),
                               ("trashing", {"trashing_start_pps": 1.05 * M}, "GOOD"),
                               ("realistic", {"loss_at_capacity": 0.05, "loss_shape": 1.0}, "BAD")]:
        d = SimDevice(model, 1.0 * M, seed=1, **kw)
        r = run_search(SweepSettings(loads_pps=list(LOADS), repetitions=5, trial_duration_s=10.0),
                       d.measure, 2 * M)
        c = LoadLossCurve.from_trials([t.trial for t in r.trials])
        assert c.repetitions == 5
        assert assess_curve(c).verdict == verdict, model
