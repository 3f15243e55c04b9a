"""RFC 2544 binary search on the simulated devices."""
from __future__ import annotations

import pytest

from fwdbench.search import BinarySettings, SearchError, run_search
from fwdbench.sim import SimDevice

C = 1_000_000.0
MAX = 2 * C
DEVICES = [
    ("ideal", {}),
    ("realistic", {"loss_dispersion": 0.0}),
    ("trashing", {"trashing_slope_pps": C}),
    ("noisy", {"noise_cv": 0.0005}),
]


def within_width(found: float, true: float, width: float) -> bool:
    """found is a good load at most one goal width below the true value."""
    return true * (1 - width) * (1 - 1e-9) <= found <= true * (1 + 0.002)


@pytest.mark.parametrize("hint", [True, False])
@pytest.mark.parametrize("model,kw", DEVICES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_true_ndr_and_pdr_within_width(model, kw, seed, hint):
    d = SimDevice(model, C, seed=seed, **kw)
    s = BinarySettings(trial_duration_s=10.0, forwarding_rate_hint=hint)
    r = run_search(s, d.measure, MAX)
    assert within_width(r.ndr_pps, d.true_ndr_pps(), s.relative_width), r.ndr_pps
    assert within_width(r.pdr_pps, d.true_pdr_pps(0.005), s.relative_width), r.pdr_pps
    for g in r.goals:
        assert g.relative_width <= s.relative_width
        assert g.load_pps < g.upper_pps
    assert r.search == "binary"
    assert all(t.duration_s == 10.0 for t in r.trials)


def test_ideal_with_hint_is_exact_in_few_trials():
    d = SimDevice("ideal", C)
    r = run_search(BinarySettings(trial_duration_s=1.0), d.measure, MAX)
    assert r.ndr_pps == pytest.approx(C)
    assert r.pdr_pps == pytest.approx(C / 0.995)
    assert r.trial_count <= 6
    assert r.trials[0].reason == "binary NDR: first trial at max load"
    assert "forwarding-rate hint" in r.trials[1].reason
    # the intent says it as values: the step and the goal, no sentence to parse
    assert (r.trials[0].intent.step, r.trials[0].intent.goal_loss_ratio) == ("first", 0.0)
    assert r.trials[1].intent.step == "hint" and r.trials[1].kind == "search"
    assert {t.intent.goal_loss_ratio for t in r.trials} <= {0.0, 0.005}


def test_textbook_bisection_first_trials():
    d = SimDevice("ideal", C)
    s = BinarySettings(trial_duration_s=1.0, forwarding_rate_hint=False, min_load_pps=0.001 * MAX)
    r = run_search(s, d.measure, MAX)
    loads = [t.load_pps for t in r.trials]
    assert loads[0] == MAX
    assert loads[1] == pytest.approx((0.001 * MAX + MAX) / 2)
    assert all("bisect" in t.reason and t.intent.step == "bisect" for t in r.trials[1:])
    # each NDR bisection halves the bracket: about log2(1/width) trials
    ndr_trials = [t for t in r.trials if t.reason.startswith("binary NDR")]
    assert len(ndr_trials) <= 10


def test_pdr_reuses_ndr_trials():
    d = SimDevice("ideal", C)
    r = run_search(BinarySettings(trial_duration_s=1.0, forwarding_rate_hint=False), d.measure, MAX)
    pdr_trials = [t for t in r.trials if t.reason.startswith("binary PDR")]
    ndr_trials = [t for t in r.trials if t.reason.startswith("binary NDR")]
    assert len(pdr_trials) < len(ndr_trials)
    assert not any("max load" in t.reason for t in pdr_trials)


def test_max_load_passes():
    d = SimDevice("ideal", C)
    r = run_search(BinarySettings(trial_duration_s=1.0), d.measure, 0.5 * C)
    assert r.trial_count == 1
    assert r.ndr_pps == 0.5 * C and r.pdr_pps == 0.5 * C
    assert all(g.max_load_reached and g.upper_pps is None for g in r.goals)
    assert any("max load" in w for w in r.warnings)


def test_min_load_fails_reports_no_result():
    d = SimDevice("realistic", C, loss_onset_fraction=0.001, loss_dispersion=0.0,
                  low_loss_ratio=1e-3, loss_at_capacity=0.5)
    s = BinarySettings(trial_duration_s=10.0, loss_ratios=[0.0], min_load_pps=0.01 * C)
    r = run_search(s, d.measure, MAX)
    assert r.ndr_pps is None
    assert r.trials[-1].load_pps == 0.01 * C and r.trials[-1].reason.endswith("check min load")
    assert any("min_load_pps" in w for w in r.warnings)


def test_verification_trial_and_failed_verification():
    d = SimDevice("ideal", C)
    r = run_search(BinarySettings(trial_duration_s=1.0, verify=True, verify_duration_s=5.0),
                   d.measure, MAX)
    ver = [t for t in r.trials if "verification" in t.reason]
    assert all(t.duration_s == 5.0 and t.intent.step == "verification" and t.kind == "search"
               for t in ver)
    assert any(t.reason.startswith("binary NDR") for t in ver)
    assert any(t.reason.startswith("binary PDR") for t in ver)
    assert all(g.verified for g in r.goals)
    # the last verification of each goal ran at the reported load
    for g in r.goals:
        last = [t for t in ver if t.reason.startswith(f"binary {g.name}")][-1]
        assert last.load_pps == g.load_pps

    # A device that loses more in long trials: every 5 s trial fails above 0.9 C.
    dev = SimDevice("ideal", C)

    def measure(duration_s, load_pps, intent):
        t = dev.measure(duration_s, load_pps, intent)
        if duration_s == 5.0 and load_pps > 0.9 * C:
            return SimDevice("ideal", 0.9 * C).measure(duration_s, load_pps, intent)
        return t

    s = BinarySettings(trial_duration_s=1.0, verify=True, verify_duration_s=5.0,
                       loss_ratios=[0.0], max_verifications=2)
    r = run_search(s, measure, MAX)
    g = r.goals[0]
    assert g.verified is False
    assert len([t for t in r.trials if "verification" in t.reason]) == 2
    assert any("verification" in w for w in r.warnings)


def test_max_trials_stops_with_warning():
    d = SimDevice("ideal", C)
    s = BinarySettings(trial_duration_s=1.0, forwarding_rate_hint=False, max_trials=3,
                       loss_ratios=[0.0])
    r = run_search(s, d.measure, MAX)
    assert r.trial_count == 3
    assert any("max_trials" in w for w in r.warnings)


def test_min_load_above_max_load_is_an_error():
    with pytest.raises(SearchError, match="min_load_pps"):
        run_search(BinarySettings(min_load_pps=5e6), SimDevice("ideal", C).measure, MAX)


def test_noisy_device_lands_near_median_capacity():
    errs = []
    for seed in range(20):
        d = SimDevice("noisy", C, seed=seed, noise_cv=0.02)
        r = run_search(BinarySettings(trial_duration_s=1.0), d.measure, MAX)
        errs.append(r.ndr_pps / C - 1)
    # a single-trial search lands on one draw of the capacity: within 3 sigma
    assert max(abs(e) for e in errs) < 3 * 0.02
