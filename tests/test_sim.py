"""The simulated DUT: load-loss models, determinism, counts and latency."""
from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from fwdbench.intent import TrialIntent
from fwdbench.sim import SimDevice, SimParams
from fwdbench.trial import TrialResult

C = 1_000_000.0


def test_ideal_no_loss_up_to_capacity_then_plr_is_one_minus_c_over_o():
    d = SimDevice("ideal", C, seed=1)
    for load in (1e5, 5e5, 999_999.0, C):
        t = d.measure(1.0, load)
        assert t.lost == 0 and t.loss_ratio == 0.0
    t = d.measure(2.0, 2 * C)
    assert t.intended_packets == 4_000_000
    assert t.rx_packets == 2_000_000
    assert t.loss_ratio == pytest.approx(0.5)


def test_trial_result_shape_and_counts():
    d = SimDevice("ideal", C, seed=3)
    t = d.measure(1.5, 123_456.7, TrialIntent.search("sweep", "why"))
    assert isinstance(t, TrialResult)
    assert t.backend == "sim"
    assert len(t.streams) == 1
    s = t.streams[0]
    assert isinstance(s.tx_packets, int) and isinstance(s.rx_packets, int)
    assert s.intended_packets == round(123_456.7 * 1.5)
    assert s.tx_bytes == s.tx_packets * 60          # 64 B frame without FCS
    assert t.raw["sim"]["reason"] == "why"
    lat = s.latency
    assert lat is not None
    assert lat.min_ns <= lat.p50_ns <= lat.p90_ns <= lat.p99_ns <= lat.p999_ns <= lat.max_ns
    assert lat.min_ns >= 10_000.0                   # base latency


def test_latency_grows_with_load():
    d = SimDevice("ideal", C, seed=4)
    p99 = [d.measure(1.0, f * C).streams[0].latency.p99_ns for f in (0.1, 0.5, 0.9, 1.5)]
    assert p99[0] < p99[1] < p99[2] < p99[3]


def test_zero_load_is_a_latency_only_trial():
    t = SimDevice("ideal", C).measure(2.0, 0.0)
    # no background load: the 9 kpps latency stream is the only stream, as on the lab
    assert t.intended_load_pps == 0.0 and t.intended_packets == 18_000
    assert t.loss_ratio == 0.0 and t.rx_packets == 18_000
    assert t.streams[0].latency.samples == 18_000


def test_same_seed_same_results_different_seed_differs():
    def run(seed):
        d = SimDevice("noisy", C, seed=seed)
        return [d.measure(1.0, 1.01 * C).rx_packets for _ in range(20)]
    assert run(7) == run(7)
    assert run(7) != run(8)


def test_realistic_small_losses_below_capacity():
    d = SimDevice("realistic", C, seed=2)
    assert d.measure(10.0, 0.1 * C).lost == 0                 # below onset: no loss
    plrs = [d.measure(10.0, 0.5 * C).loss_ratio for _ in range(20)]
    assert all(0 < p < 1e-3 for p in plrs)                     # small, non-zero
    assert np.std(plrs) > 0                                    # varies between repetitions
    at_cap = np.mean([d.measure(10.0, C).loss_ratio for _ in range(20)])
    assert at_cap == pytest.approx(0.01, rel=0.3)              # ~1 % at saturation
    # Beyond saturation the throughput stays at T_sat = C (1 - 0.01).
    t = d.measure(10.0, 2 * C)
    assert t.forwarding_rate_pps == pytest.approx(0.99 * C, rel=1e-3)


def test_trashing_forwarding_rate_falls_beyond_start():
    d = SimDevice("trashing", C, seed=0, trashing_start_pps=1.2 * C, trashing_slope_pps=2 * C)
    fr = [d.measure(1.0, f * C).forwarding_rate_pps for f in (1.0, 1.2, 1.6, 2.2, 3.5)]
    assert fr[0] == pytest.approx(C) and fr[1] == pytest.approx(C)
    assert fr[2] == pytest.approx(0.8 * C, rel=1e-6)           # 1 - 0.4/2
    assert fr[3] == pytest.approx(0.5 * C, rel=1e-6)
    assert fr[4] == 0.0


def test_noisy_capacity_varies_around_nominal():
    d = SimDevice("noisy", C, seed=11, noise_cv=0.05)
    caps = np.array([d.measure(1.0, 3 * C).forwarding_rate_pps for _ in range(400)])
    assert caps.std() / C == pytest.approx(0.05, rel=0.2)
    assert np.median(caps) == pytest.approx(C, rel=0.01)


def test_true_ndr_pdr():
    assert SimDevice("ideal", C).true_ndr_pps() == pytest.approx(C, rel=1e-9)
    assert SimDevice("ideal", C).true_pdr_pps(0.005) == pytest.approx(C / 0.995, rel=1e-9)
    r = SimDevice("realistic", C)
    assert r.true_ndr_pps() == pytest.approx(0.2 * C, rel=1e-6)
    pdr = r.true_pdr_pps(0.005)
    assert 0.2 * C < pdr < C
    assert r.expected_loss_ratio(pdr) == pytest.approx(0.005, rel=1e-5)
    t = SimDevice("trashing", C, trashing_start_pps=C, trashing_slope_pps=C)
    pdr = t.true_pdr_pps(0.005)
    assert t.expected_loss_ratio(pdr) == pytest.approx(0.005, rel=1e-5)
    assert pdr < C / 0.995                  # trashing loses more than ideal beyond C


def test_generator_limit_flags_trials():
    d = SimDevice("ideal", C, max_tx_pps=0.5 * C)
    t = d.measure(1.0, 0.8 * C)
    assert t.generator_limited
    assert t.tx_packets == 500_000
    assert t.loss_ratio == pytest.approx(1 - 0.5 / 0.8)          # unsent packets are lost
    assert t.warnings


def test_params_validation_shows_value():
    with pytest.raises(ValidationError, match="0.5"):
        SimParams(model="trashing", capacity_pps=1000.0, trashing_start_pps=0.5)
    with pytest.raises(ValidationError):
        SimParams(model="ideal", capacity_pps=C, bogus=1)            # extra="forbid"
    with pytest.raises(ValidationError):
        SimParams(model="perfect", capacity_pps=C)
    dev = SimDevice.from_params(SimParams(model="noisy", capacity_pps=C, seed=5))
    assert dev.noise_cv == 0.02 and dev.seed == 5


def test_bad_trial_inputs():
    d = SimDevice("ideal", C)
    with pytest.raises(ValueError, match="duration_s"):
        d.measure(0.0, C)
    with pytest.raises(ValueError, match="load_pps"):
        d.measure(1.0, -1.0)
    assert math.isfinite(d.measure(1.0, 1.0).loss_ratio)
