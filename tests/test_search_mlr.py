"""The MLRsearch adapter, with the real PyPI library (MLRsearch 1.2.1)."""
from __future__ import annotations

import MLRsearch
import pytest

from fwdbench.search import MlrSettings, SearchError, mlr_config, run_search
from fwdbench.sim import SimDevice

C = 1_000_000.0
MAX = 2 * C
DEVICES = [
    ("ideal", {}),
    ("realistic", {"loss_dispersion": 0.0}),
    ("trashing", {"trashing_slope_pps": C}),
    ("noisy", {"noise_cv": 0.0005}),
]


def test_config_has_csit_defaults():
    cfg = mlr_config(MlrSettings(), MAX)
    assert [g.loss_ratio for g in cfg.goals] == [0.0, 0.005]
    for g in cfg.goals:
        assert isinstance(g, MLRsearch.SearchGoal)
        assert (g.exceed_ratio, g.relative_width) == (0.5, 0.005)
        assert (g.initial_trial_duration, g.final_trial_duration, g.duration_sum) == (1.0, 1.0, 21.0)
        assert (g.preceding_targets, g.expansion_coefficient) == (2, 2)
    assert cfg.min_load == 9001.0 and cfg.max_load == MAX
    assert cfg.warmup_duration == 1.0
    assert cfg.search_duration_max >= 1e9          # wall-time limit disabled, see mlr.py


@pytest.mark.parametrize("model,kw", DEVICES)
@pytest.mark.parametrize("seed", [0, 1])
def test_finds_true_ndr_and_pdr_within_width(model, kw, seed):
    d = SimDevice(model, C, seed=seed, **kw)
    s = MlrSettings()
    r = run_search(s, d.measure, MAX)
    for found, true in ((r.ndr_pps, d.true_ndr_pps()), (r.pdr_pps, d.true_pdr_pps(0.005))):
        assert true * (1 - s.relative_width) <= found <= true * 1.002, (found, true)
    for g in r.goals:
        assert g.upper_pps > g.load_pps
        assert g.relative_width <= s.relative_width * 1.0001
        assert g.conditional_throughput_pps <= g.load_pps
    assert r.search == "mlr"


def test_warmup_recorded_and_ignored_and_reasons():
    d = SimDevice("ideal", C)
    r = run_search(MlrSettings(), d.measure, MAX)
    first = r.trials[0]
    assert first.reason == "mlr: warm-up at max load (result ignored)"
    assert not first.used and first.load_pps == MAX and first.kind == "warmup"
    assert first.intent.step == "warmup"
    assert {t.kind for t in r.trials[1:]} == {"search"}
    assert {t.intent.step for t in r.trials[1:]} == {"initial", "target"}
    # the target trials say which goal they narrow, as a number
    assert {t.intent.goal_loss_ratio for t in r.trials if t.intent.step == "target"} \
        == {0.0, 0.005}
    assert r.trials[1].reason == "mlr: initial trial at max load"
    assert all(t.used for t in r.trials[1:])
    assert all(t.reason.startswith("mlr") for t in r.trials)
    assert any(t.reason.startswith("mlr NDR") for t in r.trials)
    assert any(t.reason.startswith("mlr PDR@0.5%") for t in r.trials)
    # 1 s trials, and each bound needs duration_sum seconds at the final target
    assert all(t.duration_s == 1.0 for t in r.trials)
    assert r.total_trial_s >= 21.0


def test_no_warmup():
    r = run_search(MlrSettings(warmup_duration_s=0.0), SimDevice("ideal", C).measure, MAX)
    assert r.trials[0].used and r.trials[0].reason == "mlr: initial trial at max load"


def test_trial_second_budget_is_deterministic_error():
    d = SimDevice("noisy", C, noise_cv=0.05)
    with pytest.raises(SearchError, match="search_duration_max_s=10"):
        run_search(MlrSettings(search_duration_max_s=10.0), d.measure, MAX)


def test_max_load_passes():
    r = run_search(MlrSettings(), SimDevice("ideal", C).measure, 0.5 * C)
    assert r.ndr_pps == pytest.approx(0.5 * C)
    assert all(g.max_load_reached for g in r.goals)


def test_min_load_is_upper_bound():
    d = SimDevice("ideal", 1000.0)
    r = run_search(MlrSettings(loss_ratios=[0.0]), d.measure, MAX)
    assert r.ndr_pps is None
    assert any("min load" in w for w in r.warnings)
    with pytest.raises(SearchError, match="MLRsearch failed"):
        run_search(MlrSettings(loss_ratios=[0.0], fail_fast=True), SimDevice("ideal", 1000.0).measure, MAX)


def test_exceed_ratio_tolerates_bad_trials_on_noisy_device():
    """With exceed ratio 0.5 MLRsearch estimates the median capacity."""
    errs = []
    for seed in range(8):
        d = SimDevice("noisy", C, seed=seed, noise_cv=0.02)
        r = run_search(MlrSettings(), d.measure, MAX)
        errs.append(r.ndr_pps / C - 1)
    assert max(abs(e) for e in errs) < 0.02
