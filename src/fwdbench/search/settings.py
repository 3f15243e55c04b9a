"""Search settings, as a campaign file gives them (``[scenario.search]``).

Each model has a ``type`` field that selects it (``sweep``, ``binary``,
``mlr``, ``latency``); :data:`SearchSettings` is the discriminated union and
:func:`parse_search_settings` builds one from a dict. Loads are packets per
second per stream [pps], durations seconds [s], ratios plain fractions
(0.005 is 0.5 %). Validation errors show the offending value.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

# FD.io CSIT's MLRsearch defaults (NDR and PDR@0.5% in one search).
CSIT_LOSS_RATIOS = (0.0, 0.005)
LATENCY_FRACTIONS = (0.0, 0.1, 0.5, 0.9)
MAX_REPETITIONS = 1000          # trials per load, as campaign.repetitions
MAX_S = 86_400.0                # [s] any duration: one day


def _check_loss_ratios(v: list[float]) -> list[float]:
    if not v:
        raise ValueError("loss_ratios is empty; give at least one goal, e.g. [0.0, 0.005]")
    for x in v:
        if not 0.0 <= x < 1.0:
            raise ValueError(f"loss ratio {x!r} is outside [0, 1); 0.005 means 0.5 %")
    if len(set(v)) != len(v):
        raise ValueError(f"loss_ratios {v!r} has duplicates")
    return sorted(v)


def _check_fractions(v: list[float], name: str, upper: float | None = None) -> list[float]:
    if not v:
        raise ValueError(f"{name} is empty")
    for x in v:
        if x < 0.0:
            raise ValueError(f"{name}: {x!r} is negative; fractions are of the PDR (0.5 = 50 %)")
        if upper is not None and x > upper:
            raise ValueError(f"{name}: {x!r} is above {upper:g}; fractions are of the PDR "
                             "(0.5 = 50 %), and latency above the PDR is not a latency point "
                             "(the DUT is losing packets there)")
    return v


class LatencySettings(BaseModel):
    """Latency as CSIT reports it: a low-rate latency stream beside a
    background load at fractions of the PDR (0, 10, 50 and 90 % by default).

    The latency stream itself is the runner's business (fwdgen's
    ``latency.enabled``); a search only picks the background loads. A 0 %
    trial has no background load (``load_pps`` 0: latency stream only).
    """
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    type: Literal["latency"] = "latency"
    fractions: list[float] = Field(default=list(LATENCY_FRACTIONS),
                                   description="Background loads as fractions of the PDR [1].")
    trial_duration_s: float = Field(default=5.0, gt=0.0, le=MAX_S,
                                    description="Duration of each latency trial [s].")
    repetitions: int = Field(default=1, ge=1, le=MAX_REPETITIONS,
                             description="Trials per fraction.")
    pdr_pps: float | None = Field(default=None, gt=0.0,
                                  description="PDR to take fractions of [pps]; if absent, "
                                              "the PDR found by the search it follows.")

    @field_validator("fractions")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        return _check_fractions(v, "fractions", upper=1.0)


class SweepSettings(BaseModel):
    """Fixed loads, n repetitions each: PASTRAMI's load-loss curve.

    Give exactly one of ``loads_pps`` (a list), ``start_pps``/``stop_pps``/
    ``step_pps`` (inclusive range), or ``pdr_fractions`` (fractions of a PDR
    found earlier, passed to ``run_search`` as ``pdr_pps``).
    """
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    type: Literal["sweep"] = "sweep"
    loads_pps: list[float] | None = Field(default=None,
                                          description="Offered loads per stream [pps].")
    start_pps: float | None = Field(default=None, gt=0.0, description="First load [pps].")
    stop_pps: float | None = Field(default=None, gt=0.0, description="Last load, inclusive [pps].")
    step_pps: float | None = Field(default=None, gt=0.0, description="Load increment [pps].")
    pdr_fractions: list[float] | None = Field(default=None,
                                              description="Loads as fractions of an earlier PDR [1].")
    repetitions: int = Field(default=1, ge=1, le=MAX_REPETITIONS,
                             description="Trials per load (PASTRAMI uses 50).")
    trial_duration_s: float = Field(default=10.0, gt=0.0, le=MAX_S,
                                    description="Duration of each trial [s] (PASTRAMI: 10).")
    order: Literal["by_load", "by_repetition"] = Field(
        default="by_load",
        description="by_load: all repetitions of a load, then the next load; "
                    "by_repetition: the whole curve once per repetition.")
    pdr_loss_ratio: float = Field(default=0.005, ge=0.0, lt=1.0,
                                  description="PLR threshold for the PDR read off the curve [1].")

    @field_validator("loads_pps")
    @classmethod
    def _loads(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("loads_pps is empty")
        for x in v:
            if x <= 0:
                raise ValueError(f"load {x!r} pps is not positive")
        return v

    @field_validator("pdr_fractions")
    @classmethod
    def _fr(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        v = _check_fractions(v, "pdr_fractions")
        for x in v:
            if x == 0.0:
                raise ValueError("pdr_fractions: 0 is not a load; use the latency search for 0 %")
        return v

    @model_validator(mode="after")
    def _one_form(self) -> "SweepSettings":
        rng = (self.start_pps, self.stop_pps, self.step_pps)
        forms = [self.loads_pps is not None, any(x is not None for x in rng),
                 self.pdr_fractions is not None]
        if sum(forms) != 1:
            raise ValueError(
                "give exactly one of loads_pps, start_pps/stop_pps/step_pps, pdr_fractions "
                f"(got loads_pps={self.loads_pps!r}, start/stop/step={rng!r}, "
                f"pdr_fractions={self.pdr_fractions!r})")
        if forms[1]:
            if any(x is None for x in rng):
                raise ValueError(f"start_pps, stop_pps and step_pps go together; got {rng!r}")
            if self.stop_pps < self.start_pps:
                raise ValueError(f"stop_pps {self.stop_pps!r} is below start_pps {self.start_pps!r}")
            if (self.stop_pps - self.start_pps) / self.step_pps > 100_000:
                raise ValueError(f"start/stop/step {rng!r} gives more than 100000 loads")
        return self

    def loads(self, pdr_pps: float | None = None) -> list[float]:
        """The loads this sweep runs, ascending, duplicates removed [pps]."""
        if self.loads_pps is not None:
            vals = list(self.loads_pps)
        elif self.pdr_fractions is not None:
            if pdr_pps is None:
                raise ValueError("this sweep is given as pdr_fractions but no PDR was found "
                                 "earlier; run a binary or mlr search first")
            vals = [f * pdr_pps for f in self.pdr_fractions]
        else:
            vals = []
            k = 0
            while True:
                x = self.start_pps + k * self.step_pps
                if x > self.stop_pps * (1 + 1e-12):
                    break
                vals.append(x)
                k += 1
        return sorted(set(vals))


class BinarySettings(BaseModel):
    """RFC 2544 binary search for NDR and PDR@x: bisect between a known-good
    and a known-bad load until (hi - lo) / hi <= relative_width."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    type: Literal["binary"] = "binary"
    loss_ratios: list[float] = Field(default=list(CSIT_LOSS_RATIOS),
                                     description="Loss goals [1]: 0 is NDR, 0.005 PDR@0.5 %.")
    relative_width: float = Field(default=0.005, gt=0.0, lt=1.0,
                                  description="Stop when (hi - lo) / hi <= this [1].")
    trial_duration_s: float = Field(default=60.0, gt=0.0, le=MAX_S,
                                    description="Duration of each search trial [s] (RFC 2544: 60).")
    min_load_pps: float = Field(default=9001.0, gt=0.0,
                                description="Lowest load tried [pps]; the search never goes below.")
    forwarding_rate_hint: bool = Field(
        default=True,
        description="After a failing trial at max load, try the measured forwarding rate "
                    "(divided by 1 - loss goal) before bisecting; False gives the textbook "
                    "bisection of [min_load_pps, max_load_pps].")
    verify: bool = Field(default=False,
                         description="Run a verification trial at each result; if it fails, "
                                     "the search continues below it.")
    verify_duration_s: float | None = Field(default=None, gt=0.0, le=MAX_S,
                                            description="Verification trial duration [s]; "
                                                        "default trial_duration_s.")
    max_verifications: int = Field(default=3, ge=1, le=100,
                                   description="Verification attempts per goal before giving up.")
    max_trials: int = Field(default=200, ge=1, le=10_000,
                            description="Safety stop: most trials per goal.")
    latency: LatencySettings | None = Field(default=None,
                                            description="Latency trials at fractions of the PDR found.")

    @field_validator("loss_ratios")
    @classmethod
    def _lr(cls, v: list[float]) -> list[float]:
        return _check_loss_ratios(v)


class MlrSettings(BaseModel):
    """MLRsearch (FD.io CSIT, PyPI ``MLRsearch``) with CSIT's defaults: NDR and
    PDR@0.5 % in one search, 1 s trials, duration sum 21 s, exceed ratio 0.5."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    type: Literal["mlr"] = "mlr"
    loss_ratios: list[float] = Field(default=list(CSIT_LOSS_RATIOS),
                                     description="Loss goals [1]: 0 is NDR, 0.005 PDR@0.5 %.")
    exceed_ratio: float = Field(default=0.5, ge=0.0, lt=1.0,
                                description="Share of the duration sum that may be bad trials [1].")
    relative_width: float = Field(default=0.005, gt=0.0, lt=1.0,
                                  description="Goal width of the final interval [1].")
    initial_trial_duration_s: float = Field(default=1.0, gt=0.0, le=MAX_S,
                                            description="Shortest trial duration [s].")
    final_trial_duration_s: float = Field(default=1.0, gt=0.0, le=MAX_S,
                                          description="Trial duration for the final classification [s].")
    duration_sum_s: float = Field(default=21.0, gt=0.0, le=MAX_S,
                                  description="Trial seconds needed at a load before it is classified [s].")
    preceding_targets: int = Field(default=2, ge=0, le=10,
                                   description="Coarser targets searched first.")
    expansion_coefficient: int = Field(default=2, ge=2, le=100,
                                       description="External search widens (log) width by this factor.")
    min_load_pps: float = Field(default=9001.0, gt=0.0,
                                description="Lowest load tried [pps] (CSIT: 9001).")
    warmup_duration_s: float = Field(default=1.0, ge=0.0, le=MAX_S,
                                     description="Warm-up trial at max load, result ignored [s]; 0: none.")
    search_duration_max_s: float = Field(
        default=1200.0, gt=0.0, le=30 * MAX_S,
        description="Budget of trial seconds [s]: the search fails when the sum of the "
                    "intended durations of its trials would exceed it. Counted in trial "
                    "seconds, not wall time, so that replaying stored trials is deterministic.")
    fail_fast: bool = Field(default=False,
                            description="Raise when min_load_pps is already an upper bound "
                                        "(CSIT: true); false reports the goal as not found.")
    latency: LatencySettings | None = Field(default=None,
                                            description="Latency trials at fractions of the PDR found.")

    @field_validator("loss_ratios")
    @classmethod
    def _lr(cls, v: list[float]) -> list[float]:
        return _check_loss_ratios(v)

    @model_validator(mode="after")
    def _durations(self) -> "MlrSettings":
        if self.final_trial_duration_s < self.initial_trial_duration_s:
            raise ValueError(
                f"final_trial_duration_s {self.final_trial_duration_s!r} is below "
                f"initial_trial_duration_s {self.initial_trial_duration_s!r}")
        if self.duration_sum_s < self.final_trial_duration_s:
            raise ValueError(
                f"duration_sum_s {self.duration_sum_s!r} is below "
                f"final_trial_duration_s {self.final_trial_duration_s!r}")
        if self.preceding_targets == 0 and self.initial_trial_duration_s < self.duration_sum_s:
            raise ValueError(
                "preceding_targets 0 needs initial_trial_duration_s >= duration_sum_s "
                f"(got {self.initial_trial_duration_s!r} < {self.duration_sum_s!r})")
        return self


SearchSettings = Annotated[
    Union[SweepSettings, BinarySettings, MlrSettings, LatencySettings],
    Field(discriminator="type"),
]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(SearchSettings)


def parse_search_settings(data: dict[str, Any]) -> SweepSettings | BinarySettings | MlrSettings | LatencySettings:
    """Build the settings model its ``type`` names; raises pydantic.ValidationError."""
    return _ADAPTER.validate_python(data)
