"""Energy meters and CPU accounting around every trial.

Meters: ``rapl`` (powercap), ``ipmi`` (BMC via ipmitool DCMI), ``command``
(a user program printing watts or joules) and ``cpu-model`` (busy CPU time x
watts per core; always labelled "modelled"). The runner uses one
:class:`EnergySession` per campaign; its ``stop()`` dict is
``TrialResult.meters``. See docs/energy.md.
"""
from .base import Meter, MeterError, MeterReading, PeriodicSampler, integrate_watts
from .command import CommandMeter, parse_value
from .cpu import CpuAccounting, CpuTimes, nominal_frequency, parse_cpu_list, read_proc_stat
from .cpumodel import (DEFAULT_IDLE_WATTS, DEFAULT_WATTS_PER_BUSY_CORE, CpuModelMeter,
                       model_watts)
from .detect import MeterStatus, meters_cmd, probe
from .ipmi import DcmiPowerReading, IpmiMeter
from .ipmi import parse as parse_ipmi
from .rapl import RaplMeter
from .session import METERS_SCHEMA_VERSION, EnergySession, build_meter
from .settings import (METER_NAMES, CommandParams, CpuModelParams, EnergySettings, IpmiParams,
                       RaplParams, parse_energy_settings)

__all__ = [
    "Meter", "MeterError", "MeterReading", "PeriodicSampler", "integrate_watts",
    "CommandMeter", "parse_value",
    "CpuAccounting", "CpuTimes", "nominal_frequency", "parse_cpu_list", "read_proc_stat",
    "CpuModelMeter", "DEFAULT_IDLE_WATTS", "DEFAULT_WATTS_PER_BUSY_CORE", "model_watts",
    "MeterStatus", "meters_cmd", "probe",
    "DcmiPowerReading", "IpmiMeter", "parse_ipmi",
    "RaplMeter",
    "METERS_SCHEMA_VERSION", "EnergySession", "build_meter",
    "METER_NAMES", "CommandParams", "CpuModelParams", "EnergySettings", "IpmiParams",
    "RaplParams", "parse_energy_settings",
]
