"""The campaign file's ``[energy]`` section.

    [energy]
    meters = "auto"            # or a list: ["rapl", "cpu-model"]
    baseline = true            # measure idle power before the campaign, subtract it
    baseline_s = 10            # [s]

    [energy.cpu-model]
    idle_watts = 0.0           # [W]
    watts_per_busy_core = 10.0 # [W]

    [energy.rapl]
    domains = ["package", "dram"]

    [energy.ipmi]
    interface = "lanplus"
    host = "10.0.0.5"
    user = "admin"
    password_file = "/etc/fwdbench/bmc.pass"

    [energy.command]
    argv = ["pdu-read", "--outlet", "3"]
    unit = "W"

"auto" runs every meter that is available on the host (the command meter
only when configured, and then it must work) plus the cpu-model; the energy figure of a trial
comes from the first of command, rapl, ipmi, cpu-model that produced one.
A list runs exactly those meters, fails early if one is unavailable, and
takes the figure from the first in the list.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..validation import campaign_error
from .cpumodel import DEFAULT_IDLE_WATTS, DEFAULT_WATTS_PER_BUSY_CORE
from .rapl import DEFAULT_DOMAINS, DEFAULT_ROOT

METER_NAMES = ("command", "rapl", "ipmi", "cpu-model")     # also the "auto" preference order
RAPL_KINDS = ("package", "dram", "core", "uncore", "psys")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)


class CpuModelParams(_Strict):
    idle_watts: float = Field(DEFAULT_IDLE_WATTS, ge=0, description="[W] constant part")
    watts_per_busy_core: float = Field(DEFAULT_WATTS_PER_BUSY_CORE, ge=0,
                                       description="[W] per fully busy core")
    sample_interval_s: float = Field(1.0, ge=0, description="[s] power curve; 0 = none")


class RaplParams(_Strict):
    root: str = Field(DEFAULT_ROOT, description="powercap directory")
    domains: list[str] = Field(default_factory=lambda: list(DEFAULT_DOMAINS), min_length=1)
    sample_interval_s: float = Field(1.0, gt=0, description="[s]")

    @field_validator("domains")
    @classmethod
    def _domains(cls, v: list[str]) -> list[str]:
        for d in v:
            if d not in RAPL_KINDS:
                raise ValueError(f"RAPL domain {d!r} is not one of {', '.join(RAPL_KINDS)}")
        return v


class IpmiParams(_Strict):
    interface: Literal["open", "lanplus"] = "open"
    host: str | None = None
    user: str | None = None
    password_file: str | None = Field(None, description="file holding the BMC password")
    ipmitool: str = "ipmitool"
    sample_interval_s: float = Field(1.0, gt=0, description="[s]")
    timeout_s: float = Field(5.0, gt=0, description="[s] per ipmitool call")
    min_trial_s: float = Field(10.0, ge=0, description="[s] shorter trials get a warning")

    @model_validator(mode="after")
    def _iface(self) -> "IpmiParams":
        if self.interface == "lanplus":
            missing = [f for f in ("host", "user", "password_file") if not getattr(self, f)]
            if missing:
                raise ValueError(f"interface 'lanplus' needs {', '.join(missing)}")
        elif self.host:
            raise ValueError(f"host {self.host!r} is given but interface is 'open' (local "
                             f"/dev/ipmi0); set interface = 'lanplus' for a remote BMC")
        return self


class CommandParams(_Strict):
    argv: list[str] = Field(min_length=1, description="program and arguments (no shell)")
    unit: Literal["W", "J"] = "W"
    mode: Literal["sample", "before-after"] = "sample"
    sample_interval_s: float = Field(1.0, gt=0, description="[s]")
    timeout_s: float = Field(5.0, gt=0, description="[s] per call")

    @field_validator("argv", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise ValueError(f"argv {v!r} is a string; give a list such as "
                             f"{v.split()!r} (fwdbench never runs a shell)")
        return v

    @model_validator(mode="after")
    def _mode(self) -> "CommandParams":
        if self.unit == "W" and self.mode == "before-after":
            raise ValueError("unit 'W' with mode 'before-after': two power readings do not "
                             "give the energy in between; use mode = 'sample'")
        return self


class EnergySettings(_Strict):
    meters: Literal["auto"] | list[str] = "auto"
    baseline: bool = Field(False, description="measure idle power before the campaign and subtract it")
    baseline_s: float = Field(10.0, gt=0, description="[s] length of the idle measurement")
    cpu_model: CpuModelParams = Field(default_factory=CpuModelParams, alias="cpu-model")
    rapl: RaplParams = Field(default_factory=RaplParams)
    ipmi: IpmiParams = Field(default_factory=IpmiParams)
    command: CommandParams | None = None

    @field_validator("meters", mode="before")
    @classmethod
    def _meters(cls, v: Any) -> Any:
        if isinstance(v, str) and v != "auto":
            if v in METER_NAMES:
                return [v]
            raise ValueError(f"meters = {v!r}: write 'auto' or a list of "
                             f"{', '.join(METER_NAMES)}")
        if isinstance(v, list):
            if not v:
                raise ValueError("meters = []: name at least one meter, or write 'auto'")
            for name in v:
                if name not in METER_NAMES:
                    raise ValueError(f"unknown meter {name!r}; choose from "
                                     f"{', '.join(METER_NAMES)} (or meters = 'auto')")
            if len(set(v)) != len(v):
                raise ValueError(f"meters {v!r} names a meter twice")
        return v

    @model_validator(mode="after")
    def _command_needs_params(self) -> "EnergySettings":
        if isinstance(self.meters, list) and "command" in self.meters and self.command is None:
            raise ValueError("meter 'command' is selected but [energy.command] with argv is missing")
        return self

    def selected(self) -> list[str] | None:
        """The explicit meter list, or None for auto."""
        return None if self.meters == "auto" else list(self.meters)


def parse_energy_settings(data: dict[str, Any] | None, where: str = "energy",
                          file: str | None = None) -> EnergySettings:
    """Validate an [energy] table; CampaignError names the file, field path and bad value."""
    try:
        return EnergySettings.model_validate(data or {})
    except ValidationError as e:
        raise campaign_error(e, EnergySettings, where=where, file=file) from None
