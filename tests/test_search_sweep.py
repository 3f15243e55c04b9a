"""Sweep and latency searches, settings validation, replay determinism."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from fwdbench.search import (
    BinarySettings,
    LatencySettings,
    MlrSettings,
    SearchError,
    SweepSettings,
    curve_goal,
    parse_search_settings,
    run_search,
)
from fwdbench.sim import SimDevice

C = 1_000_000.0


def test_sweep_list_repetitions_and_goals():
    d = SimDevice("ideal", C)
    s = SweepSettings(loads_pps=[1.2e6, 0.5e6, 1.0e6, 1.001e6], repetitions=3, trial_duration_s=2.0)
    r = run_search(s, d.measure, 2 * C)
    assert [t.load_pps for t in r.trials] == [0.5e6] * 3 + [1.0e6] * 3 + [1.001e6] * 3 + [1.2e6] * 3
    assert r.trials[4].reason == "sweep: load 1000000 pps, repetition 2/3"
    assert {(t.kind, t.intent.step) for t in r.trials} == {("search", "sweep")}
    assert r.ndr_pps == 1.0e6 and r.goal(0.0).upper_pps == 1.001e6
    assert r.pdr_pps == 1.001e6 and r.goal(0.005).upper_pps == 1.2e6
    assert r.total_trial_s == 24.0


def test_sweep_range_and_order_by_repetition():
    s = SweepSettings(start_pps=1e5, stop_pps=3e5, step_pps=1e5, repetitions=2, order="by_repetition")
    assert s.loads() == [1e5, 2e5, 3e5]
    r = run_search(s, SimDevice("ideal", C).measure, C)
    assert [t.load_pps for t in r.trials] == [1e5, 2e5, 3e5, 1e5, 2e5, 3e5]


def test_sweep_pdr_fractions():
    s = SweepSettings(pdr_fractions=[0.5, 0.9, 1.0, 1.1])
    r = run_search(s, SimDevice("ideal", C).measure, 2 * C, pdr_pps=C)
    assert [t.load_pps for t in r.trials] == [0.5 * C, 0.9 * C, C, 1.1 * C]
    with pytest.raises(SearchError, match="no PDR"):
        run_search(s, SimDevice("ideal", C).measure, 2 * C)


def test_sweep_above_max_load_is_an_error():
    with pytest.raises(SearchError, match="above max load"):
        run_search(SweepSettings(loads_pps=[3 * C]), SimDevice("ideal", C).measure, 2 * C)


def test_curve_goal_stops_at_first_exceedance():
    g = curve_goal([1, 2, 3, 4], [0.0, 0.01, 0.0, 0.5], 0.005)
    assert (g.load_pps, g.upper_pps) == (1, 2)
    g = curve_goal([1, 2], [0.1, 0.2], 0.005)
    assert g.load_pps is None and g.upper_pps == 1
    g = curve_goal([1, 2], [0.0, 0.0], 0.0)
    assert g.load_pps == 2 and g.max_load_reached


def test_latency_after_search_and_standalone():
    d = SimDevice("ideal", C)
    s = BinarySettings(trial_duration_s=1.0, latency=LatencySettings(trial_duration_s=3.0))
    r = run_search(s, d.measure, 2 * C)
    lat = [t for t in r.trials if t.reason.startswith("latency")]
    assert [t.load_pps for t in lat] == pytest.approx([0.0, 0.1 * r.pdr_pps, 0.5 * r.pdr_pps,
                                                       0.9 * r.pdr_pps])
    assert all(t.duration_s == 3.0 and t.kind == "latency" for t in lat)
    assert lat[2].reason == f"latency at 50% of PDR {r.pdr_pps:.0f} pps"
    assert [(t.intent.latency_fraction, t.intent.latency_reference) for t in lat] == \
        [(0.0, "PDR"), (0.1, "PDR"), (0.5, "PDR"), (0.9, "PDR")]
    p50 = [t.trial.streams[0].latency.p50_ns for t in lat]
    assert p50 == sorted(p50)

    r = run_search(LatencySettings(fractions=[0.5], repetitions=2), d.measure, 2 * C, pdr_pps=C)
    assert [t.load_pps for t in r.trials] == [0.5 * C, 0.5 * C]
    assert r.goals == []
    with pytest.raises(SearchError, match="no PDR"):
        run_search(LatencySettings(), d.measure, 2 * C)
    with pytest.raises(SearchError, match="above max load"):
        run_search(LatencySettings(fractions=[0.9]), d.measure, 0.5 * C, pdr_pps=C)
    with pytest.raises(ValidationError, match="above 1"):
        LatencySettings(fractions=[1.5])         # latency above the PDR is no latency point


def test_latency_uses_ndr_when_no_pdr_goal():
    s = MlrSettings(loss_ratios=[0.0], latency=LatencySettings(fractions=[0.5]))
    r = run_search(s, SimDevice("ideal", C).measure, 2 * C)
    assert r.trials[-1].reason.startswith("latency at 50% of NDR")


@pytest.mark.parametrize("settings", [
    BinarySettings(trial_duration_s=1.0),
    BinarySettings(trial_duration_s=1.0, forwarding_rate_hint=False, verify=True),
    MlrSettings(),
    SweepSettings(loads_pps=[5e5, 1e6, 1.5e6], repetitions=2),
])
def test_replaying_stored_trials_gives_the_same_result(settings):
    """Resume: a search fed the stored trials in order asks for the same
    trials and returns the same result, whatever the wall clock does."""
    d = SimDevice("noisy", C, seed=3)
    first = run_search(settings, d.measure, 2 * C)
    stored = list(first.trials)

    def replay(duration_s, load_pps, intent):
        t = stored.pop(0)
        assert (t.duration_s, t.load_pps, t.intent) == (duration_s, load_pps, intent)
        return t.trial

    again = run_search(settings, replay, 2 * C)
    assert not stored
    assert again.goals == first.goals


def test_settings_discriminator_and_messages():
    s = parse_search_settings({"type": "mlr", "relative_width": 0.01})
    assert isinstance(s, MlrSettings) and s.relative_width == 0.01
    assert isinstance(parse_search_settings({"type": "sweep", "loads_pps": [1.0]}), SweepSettings)
    with pytest.raises(ValidationError, match="'rfc'"):
        parse_search_settings({"type": "rfc"})
    with pytest.raises(ValidationError, match="extra"):
        parse_search_settings({"type": "binary", "trial_duration": 60})
    with pytest.raises(ValidationError, match="1.5"):
        BinarySettings(loss_ratios=[0.0, 1.5])
    with pytest.raises(ValidationError, match="exactly one"):
        SweepSettings(loads_pps=[1.0], start_pps=1.0, stop_pps=2.0, step_pps=1.0)
    with pytest.raises(ValidationError, match="exactly one"):
        SweepSettings()
    with pytest.raises(ValidationError, match="-3"):
        SweepSettings(loads_pps=[-3.0])
    with pytest.raises(ValidationError, match="0.5"):
        MlrSettings(duration_sum_s=0.5)
    with pytest.raises(ValidationError):
        MlrSettings(relative_width=0.0)
    assert BinarySettings().trial_duration_s == 60.0            # RFC 2544
    assert BinarySettings().loss_ratios == [0.0, 0.005]
    assert SweepSettings(loads_pps=[1.0]).trial_duration_s == 10.0


def test_measure_must_return_trial_result():
    with pytest.raises(SearchError, match="TrialResult"):
        run_search(SweepSettings(loads_pps=[1.0]), lambda d, l, r: None, 10.0)
    with pytest.raises(SearchError, match="max_load_pps"):
        run_search(SweepSettings(loads_pps=[1.0]), SimDevice("ideal", C).measure, 0.0)
