"""Simulated DUT: load-loss models for tests and for demos without root.

Models (PASTRAMI section IV-B; O is the offered load, C the saturation
offered load ``capacity_pps``, T(O) the throughput):

- ``ideal``: no loss up to C, then T(O) = C, so PLR = 1 - C/O (PASTRAMI eq. 3).
- ``realistic``: small random losses below C: none below
  ``loss_onset_fraction`` * C, then a PLR that starts at ``low_loss_ratio``
  (order 1e-6 .. 1e-5) and rises smoothly to ``loss_at_capacity`` (1e-2) at C;
  beyond C the throughput stays at T_sat = C (1 - loss_at_capacity)
  (eq. 4 with f = 1). Loss counts are binomial around that curve; below C
  the loss ratio also gets a per-trial lognormal spread (``loss_dispersion``,
  mean 1), so repetitions differ the way PASTRAMI's do.
- ``trashing``: ideal up to ``trashing_start_pps`` (default C); beyond it the
  forwarding rate falls: T(O) = C * f(O) with the stepwise-linear
  f(O) = max(0, 1 - (O - O_t) / K), K = ``trashing_slope_pps`` (eq. 4-5).
- ``noisy``: ideal, but every trial draws its own capacity
  C_trial = C (1 + noise_cv z), z standard normal: trial-to-trial noise. The
  true NDR/PDR of a noisy device are those of its median capacity C.

Every trial draws from ``numpy.random.default_rng([seed, trial_index])``: a
device with the same seed gives the same results for the same sequence of
trials, whatever else the process does.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from fwdbench.intent import TrialIntent
from fwdbench.trial import LatencySummary, StreamResult, TrialResult

SimModel = Literal["ideal", "realistic", "trashing", "noisy"]
LATENCY_STREAM_PPS = 9000.0      # CSIT-style latency stream, used when there is no background load


class SimParams(BaseModel):
    """A simulated DUT, as a campaign gives it (``dut = "sim"``)."""
    # strict: capacity_pps = true is not 1 pps; no nan or inf anywhere
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    model: SimModel = Field(description="Load-loss model: ideal, realistic, trashing or noisy.")
    capacity_pps: float = Field(ge=100.0, le=1e12,
                                description="Saturation offered load C [pps]: 100 pps "
                                            "(fwdbench's lowest load) .. 1e12.")
    seed: int = Field(default=0, ge=0, le=2**63 - 1, description="Seed of all random draws.")
    # realistic
    loss_onset_fraction: float = Field(default=0.2, gt=0.0, lt=1.0,
                                       description="realistic: no loss below this fraction of C [1].")
    low_loss_ratio: float = Field(default=1e-5, gt=0.0, lt=1.0,
                                  description="realistic: PLR where losses start [1].")
    loss_at_capacity: float = Field(default=0.01, gt=0.0, lt=1.0,
                                    description="realistic: PLR reached at C [1].")
    loss_shape: float = Field(default=6.0, ge=1.0,
                              description="realistic: exponent of the rise; larger rises later [1].")
    loss_dispersion: float = Field(default=0.5, ge=0.0,
                                   description="realistic: lognormal sigma of per-trial loss [1].")
    # trashing
    trashing_start_pps: float | None = Field(default=None, gt=0.0,
                                             description="trashing: load O_t where throughput starts "
                                                         "to fall [pps]; default C.")
    trashing_slope_pps: float | None = Field(default=None, gt=0.0,
                                             description="trashing: K, load beyond O_t at which "
                                                         "throughput reaches zero [pps]; default 4 C.")
    # noise
    noise_cv: float | None = Field(default=None, ge=0.0, lt=0.5,
                                   description="Per-trial capacity noise, std / C [1]; default "
                                               "0.02 for noisy, 0 otherwise.")
    # generator and latency
    max_tx_pps: float | None = Field(default=None, gt=0.0,
                                     description="Simulated generator limit [pps]; trials above "
                                                 "it are tx_limited.")
    frame_size: int = Field(default=64, ge=64, le=9000, description="Frame size incl. FCS [B].")
    base_latency_ns: float = Field(default=10_000.0, ge=0.0,
                                   description="Latency of an idle DUT [ns].")
    buffer_packets: int = Field(default=1024, ge=1,
                                description="Queue depth; sets the latency of an overloaded DUT [packets].")

    @model_validator(mode="after")
    def _check(self) -> "SimParams":
        if self.trashing_start_pps is not None and self.trashing_start_pps < self.capacity_pps:
            raise ValueError(
                f"trashing_start_pps {self.trashing_start_pps!r} is below capacity_pps "
                f"{self.capacity_pps!r}; trashing starts at or beyond saturation")
        if self.low_loss_ratio >= self.loss_at_capacity:
            raise ValueError(
                f"low_loss_ratio {self.low_loss_ratio!r} must be below loss_at_capacity "
                f"{self.loss_at_capacity!r}")
        return self


class SimDevice:
    """A seeded, deterministic simulated DUT with one stream."""

    def __init__(self, model: SimModel | SimParams, capacity_pps: float | None = None,
                 seed: int = 0, **params: object) -> None:
        if isinstance(model, SimParams):
            self.params = model
        else:
            self.params = SimParams(model=model, capacity_pps=capacity_pps, seed=seed, **params)
        p = self.params
        self.model: str = p.model
        self.capacity_pps = p.capacity_pps
        self.seed = p.seed
        self.noise_cv = p.noise_cv if p.noise_cv is not None else (0.02 if p.model == "noisy" else 0.0)
        self.trashing_start_pps = p.trashing_start_pps or p.capacity_pps
        self.trashing_slope_pps = p.trashing_slope_pps or 4.0 * p.capacity_pps
        self.trials_run = 0

    @classmethod
    def from_params(cls, params: SimParams) -> "SimDevice":
        return cls(params)

    # ---- the expected curve -------------------------------------------------
    def throughput_pps(self, load_pps: float, capacity_pps: float | None = None) -> float:
        """Expected throughput T(O) at offered load O [pps] (no random draws)."""
        c = self.capacity_pps if capacity_pps is None else capacity_pps
        o = load_pps
        if o <= 0.0:
            return 0.0
        p = self.params
        if self.model == "realistic":
            return o * (1.0 - self._realistic_plr(o, c)) if o <= c else c * (1.0 - p.loss_at_capacity)
        if o <= c:
            return o
        if self.model == "trashing":
            ot = self.trashing_start_pps * c / self.capacity_pps
            if o <= ot:
                return c
            return c * max(0.0, 1.0 - (o - ot) / self.trashing_slope_pps)
        return c

    def _realistic_plr(self, o: float, c: float) -> float:
        p = self.params
        onset = p.loss_onset_fraction * c
        if o < onset:
            return 0.0
        u = min(1.0, (o - onset) / (c - onset))
        return p.low_loss_ratio * (p.loss_at_capacity / p.low_loss_ratio) ** (u ** p.loss_shape)

    def expected_loss_ratio(self, load_pps: float) -> float:
        """Expected PLR at this offered load for the nominal (median) capacity [1]."""
        if load_pps <= 0:
            return 0.0
        return 1.0 - self.throughput_pps(load_pps) / load_pps

    def true_ndr_pps(self) -> float:
        """Highest load with zero expected loss [pps]."""
        return self._sup_load(0.0)

    def true_pdr_pps(self, loss_ratio: float = 0.005) -> float:
        """Highest load with expected PLR <= loss_ratio [pps]."""
        return self._sup_load(loss_ratio)

    def _sup_load(self, x: float) -> float:
        # Expected PLR is non-decreasing in load for every model: bisect.
        lo, hi = 0.0, self.capacity_pps
        while self.expected_loss_ratio(hi) <= x:
            lo, hi = hi, hi * 2.0
            if hi > 1e15:
                return math.inf
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if self.expected_loss_ratio(mid) <= x:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-9 * hi:
                break
        return lo

    # ---- one trial ----------------------------------------------------------
    def measure(self, duration_s: float, load_pps: float,
                intent: "TrialIntent | None" = None) -> TrialResult:
        """Run one simulated trial of ``duration_s`` [s] at ``load_pps`` [pps].

        A load of 0 is a latency trial without background load: as on the lab,
        the latency stream (``LATENCY_STREAM_PPS``) is the only stream."""
        if duration_s <= 0:
            raise ValueError(f"duration_s must be positive, got {duration_s!r}")
        if load_pps < 0:
            raise ValueError(f"load_pps must not be negative, got {load_pps!r}")
        p = self.params
        index = self.trials_run
        self.trials_run += 1
        rng = np.random.default_rng([p.seed & 0xFFFFFFFF, index])
        c = self.capacity_pps
        if self.noise_cv > 0.0:
            c = max(0.05 * self.capacity_pps, c * (1.0 + self.noise_cv * float(rng.standard_normal())))
        stream_pps = load_pps if load_pps > 0 else LATENCY_STREAM_PPS
        intended = int(round(stream_pps * duration_s))
        tx_rate = stream_pps if p.max_tx_pps is None else min(stream_pps, p.max_tx_pps)
        tx = intended if tx_rate == stream_pps else int(round(tx_rate * duration_s))
        offered = tx / duration_s
        if self.model == "realistic":
            q = 1.0 - self.throughput_pps(offered, c) / offered if offered > 0 else 0.0
            if q > 0.0 and p.loss_dispersion > 0.0 and offered < c:
                s = p.loss_dispersion
                q = min(1.0, q * math.exp(s * float(rng.standard_normal()) - s * s / 2.0))
            lost_tx = int(rng.binomial(tx, q)) if tx > 0 and q > 0 else 0
            rx = tx - lost_tx
        elif offered <= c:
            rx = tx
        else:
            rx = min(tx, int(math.floor(self.throughput_pps(offered, c) * duration_s)))
        latency = self._latency(rng, offered, c, rx, duration_s)
        frame_l2 = p.frame_size - 4
        stream = StreamResult(
            stream_id=0, tx_port="sim0", rx_port="sim1",
            intended_pps=float(stream_pps), intended_packets=intended,
            tx_packets=tx, tx_bytes=tx * frame_l2, rx_packets=rx, rx_bytes=rx * frame_l2,
            achieved_tx_pps=offered,
            tx_limited=intended > 0 and tx < intended * 0.995,
            latency=latency,
        )
        warnings = []
        if stream.tx_limited:
            warnings.append(f"sim generator limited to {p.max_tx_pps:.0f} pps: "
                            f"intended {load_pps:.0f} pps")
        return TrialResult(
            intended_load_pps=float(load_pps), duration_s=float(duration_s), streams=[stream],
            backend="sim",
            raw={"sim": {"model": self.model, "seed": p.seed, "trial_index": index,
                         "capacity_pps": c,
                         "reason": intent.reason if intent is not None else ""}},
            warnings=warnings,
        )

    def _latency(self, rng: np.random.Generator, offered: float, c: float, rx: int,
                 duration_s: float) -> LatencySummary:
        """A plausible one-way latency summary: base + queueing (M/D/1 below
        capacity, a full queue above it), with 5 % per-trial spread [ns]."""
        p = self.params
        service_ns = 1e9 / c
        full_ns = p.buffer_packets * service_ns
        rho = offered / c
        if rho < 1.0:
            wait = min(full_ns, service_ns * rho / (2.0 * (1.0 - rho)) + service_ns)
            spread = wait
        else:
            wait = full_ns
            spread = 0.05 * full_ns
        wait *= 1.0 + 0.05 * float(rng.standard_normal())
        wait = max(wait, 0.0)
        spread = max(spread * (1.0 + 0.05 * float(rng.standard_normal())), 1.0)
        samples = rx if rx > 0 else int(round(LATENCY_STREAM_PPS * duration_s))
        base = p.base_latency_ns
        low = base + max(0.0, wait - spread)

        def quant(q: float) -> float:
            return low + spread * -math.log1p(-q)

        return LatencySummary(
            samples=samples, min_ns=round(low, 1), mean_ns=round(low + spread, 1),
            p50_ns=round(quant(0.5), 1), p90_ns=round(quant(0.9), 1),
            p99_ns=round(quant(0.99), 1), p999_ns=round(quant(0.999), 1),
            max_ns=round(low + spread * (math.log(max(samples, 2)) + 0.5772), 1),
            jitter_ns=round(spread, 1),
        )
