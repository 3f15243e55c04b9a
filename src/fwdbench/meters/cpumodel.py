"""cpu-model: energy computed from the DUT's busy CPU time. Always "modelled".

    P [W] = idle_watts + watts_per_busy_core x busy_cores
    E [J] = P x duration = idle_watts x T + watts_per_busy_core x busy core-seconds

busy_cores is the sum over the DUT's CPUs of their busy shares from
/proc/stat (user + nice + system + irq + softirq); 1.0 means one core busy
for the whole interval. Steal time is excluded from busy (this vCPU was not
running) and reported separately, with a note when it is noticeable.

Defaults (see docs/energy.md for the reasoning):
- ``watts_per_busy_core = 10.0`` W: thermal design power per core of common
  server CPUs lies between about 6 and 12 W (the thesis DUT's Xeon E5-2660 v3:
  105 W / 10 cores = 10.5 W); a busy core draws roughly its share of TDP.
- ``idle_watts = 0.0`` W: by default the model reports only the energy the
  DUT's work adds. Set it to the platform's idle power (a spec sheet, or one
  reading of a wall meter) to model whole-system energy instead.

The model cannot see frequency scaling, C-states inside "busy" time, memory,
NIC or fan power. Poll-mode DUTs (DPDK, VPP) are 100 % busy at any load, so
the model gives them constant power, which is what real meters show too.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterable

from .base import Meter, MeterError, MeterReading, PeriodicSampler, sig
from .cpu import (STEAL_WARN_SHARE, CpuTimes, FileReader, _fmt_cpus, check_cpus, cpu_shares,
                  parse_cpu_list, read_proc_stat, remote_proc_stat)

DEFAULT_IDLE_WATTS = 0.0             # [W]
DEFAULT_WATTS_PER_BUSY_CORE = 10.0   # [W] per fully busy core


def model_watts(busy_cores: float, idle_watts: float, watts_per_busy_core: float) -> float:
    """The model's power [W] for a number of busy cores."""
    return idle_watts + watts_per_busy_core * busy_cores


def busy_cores(d0: dict[int, CpuTimes], d1: dict[int, CpuTimes], cpus: Iterable[int]) -> tuple[float, float]:
    """(busy cores, steal share) of a CPU set between two /proc/stat snapshots."""
    cpus = list(cpus)
    busy = steal = tot = 0.0
    for c in cpus:
        d = d1[c] - d0[c]
        busy += cpu_shares(d)["busy"]
        steal += d.steal
        tot += d.total
    return busy, (steal / tot if tot else 0.0)


class CpuModelMeter(Meter):
    name = "cpu-model"
    measured = False

    def __init__(self, cpus: Iterable[int] | str | None, *, idle_watts: float = DEFAULT_IDLE_WATTS,
                 watts_per_busy_core: float = DEFAULT_WATTS_PER_BUSY_CORE,
                 sample_interval_s: float = 1.0, proc_root: str | os.PathLike = "/proc",
                 files: FileReader | None = None, host: str = ""):
        """``files``: the CPUs are another host's (``host``), read through it."""
        if idle_watts < 0:
            raise ValueError(f"idle_watts {idle_watts!r} W must not be negative")
        if watts_per_busy_core < 0:
            raise ValueError(f"watts_per_busy_core {watts_per_busy_core!r} W must not be negative")
        self.stat_path = os.path.join(proc_root, "stat")
        self.files = files
        self.host = host
        self.cpus = parse_cpu_list(cpus)
        self.idle_watts = float(idle_watts)
        self.watts_per_busy_core = float(watts_per_busy_core)
        self.sample_interval_s = float(sample_interval_s)
        self._t0 = 0.0
        self._s0: dict[int, CpuTimes] = {}
        self._sampler: PeriodicSampler | None = None
        self._prev: tuple[float, dict[int, CpuTimes]] | None = None

    def _resolve_cpus(self, stat: dict[int, CpuTimes]) -> list[int]:
        if not self.cpus:
            self.cpus = sorted(stat)
        check_cpus(self.cpus, stat, "cpu-model")
        return self.cpus

    def _read(self) -> dict[int, CpuTimes]:
        if self.files is not None:
            return remote_proc_stat(self.files, self.host)
        return read_proc_stat(self.stat_path)

    @property
    def _where(self) -> str:
        return f"/proc/stat of {self.host}" if self.files is not None else self.stat_path

    def available(self) -> tuple[bool, str]:
        try:
            stat = self._read()
            cpus = self._resolve_cpus(stat)
        except (OSError, MeterError) as e:
            return False, str(e)
        return True, (f"modelled: {self.idle_watts:g} W + {self.watts_per_busy_core:g} W x busy "
                      f"cores of CPUs {_fmt_cpus(cpus)} (from {self._where})")

    def start(self) -> None:
        try:
            self._s0 = self._read()
        except OSError as e:
            raise MeterError(f"cpu-model: cannot read {self._where}: {e}") from e
        self._resolve_cpus(self._s0)
        self._t0 = time.monotonic()
        self._prev = (self._t0, self._s0)
        if self.sample_interval_s > 0:
            self._sampler = PeriodicSampler(self._sample_watts, self.sample_interval_s, self.name)
            self._sampler.start(self._t0)

    def _sample_watts(self) -> float:
        """Model power over the time since the previous sample [W]."""
        now = self._read()
        assert self._prev is not None
        _, prev = self._prev
        self._prev = (time.monotonic(), now)
        bc, _ = busy_cores(prev, now, self.cpus)
        return model_watts(bc, self.idle_watts, self.watts_per_busy_core)

    def stop(self) -> MeterReading:
        if self._sampler is not None:
            self._sampler.stop()
        s1 = self._read()
        duration = time.monotonic() - self._t0
        bc, steal = busy_cores(self._s0, s1, self.cpus)
        watts = model_watts(bc, self.idle_watts, self.watts_per_busy_core)
        notes = ["modelled from busy CPU time, not measured"]
        if steal > STEAL_WARN_SHARE:
            notes.append(f"steal time {steal:.1%}: the hypervisor ran other guests on these CPUs; "
                         "busy time (and so the model) misses that share")
        samples = []
        if self._sampler is not None:
            # each sample is the mean over the time since the previous one; the
            # first, taken at t = 0, covers no time and is dropped
            samples = self._sampler.samples[1:]
            self._sampler = None
        return MeterReading(
            source=self.name, measured=False, duration_s=duration,
            joules=watts * duration, mean_watts=watts, samples=samples, sample_unit="W",
            notes=notes,
            extra={"busy_cores": sig(bc), "steal": sig(steal), "cpus": self.cpus,
                   "idle_watts": self.idle_watts,
                   "watts_per_busy_core": self.watts_per_busy_core})

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "measured": False, "label": "modelled",
                "formula": "idle_watts + watts_per_busy_core x busy_cores",
                "idle_watts": self.idle_watts, "watts_per_busy_core": self.watts_per_busy_core,
                "cpus": self.cpus, **({"host": self.host} if self.files is not None else {})}
