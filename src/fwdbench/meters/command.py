"""command: a user-supplied program that prints power [W] or energy [J].

For smart PDUs, lab power meters, or anything fwdbench has no driver for.
The program is given as an argv list (never a shell string) and must print a
number on its last non-empty line of stdout, optionally followed by a unit:
``W``, ``mW``, ``kW`` for power; ``J``, ``mJ``, ``kJ``, ``Wh``, ``kWh`` for
energy (e.g. ``231.5``, ``231.5 W``, ``0.0123 kWh``).

- ``unit = "W"`` (the program prints instantaneous power): the meter samples
  it every ``sample_interval_s`` during the trial and integrates with the
  trapezoid rule.
- ``unit = "J"`` (the program prints a cumulative energy counter): the meter
  reads it at start and at stop; the difference is the energy. In
  ``mode = "sample"`` it also reads in between, for the power curve.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any, Sequence

from .base import Meter, MeterError, MeterReading, PeriodicSampler, integrate_watts

_VALUE = re.compile(r"^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_POWER = {"": 1.0, "w": 1.0, "mw": 1e-3, "kw": 1e3}
_ENERGY = {"": 1.0, "j": 1.0, "mj": 1e-3, "kj": 1e3, "wh": 3600.0, "kwh": 3.6e6}


def parse_value(text: str, unit: str) -> float:
    """The number on the last non-empty line, converted to W (unit 'W') or J (unit 'J')."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise MeterError("the command printed nothing; it must print a number of "
                         f"{'watts' if unit == 'W' else 'joules'}")
    m = _VALUE.match(lines[-1])
    if not m:
        raise MeterError(f"cannot read a number from the command's output {lines[-1].strip()!r}; "
                         f"print e.g. '231.5' or '231.5 {unit}'")
    value, suffix = float(m.group(1)), m.group(2).lower()
    table = _POWER if unit == "W" else _ENERGY
    if suffix not in table:
        other = _ENERGY if unit == "W" else _POWER
        hint = (f"; it looks like {'energy' if unit == 'W' else 'power'}: set unit = "
                f"'{'J' if unit == 'W' else 'W'}'") if suffix in other else ""
        raise MeterError(f"unit {m.group(2)!r} in {lines[-1].strip()!r} is not a "
                         f"{'power' if unit == 'W' else 'energy'} unit{hint}")
    return value * table[suffix]


class CommandMeter(Meter):
    name = "command"
    measured = True

    def __init__(self, argv: Sequence[str], *, unit: str = "W", mode: str = "sample",
                 sample_interval_s: float = 1.0, timeout_s: float = 5.0):
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"command argv {argv!r} must be a non-empty list of strings "
                             f"(no shell string)")
        if unit not in ("W", "J"):
            raise ValueError(f"command unit {unit!r} is not 'W' or 'J'")
        if mode not in ("sample", "before-after"):
            raise ValueError(f"command mode {mode!r} is not 'sample' or 'before-after'")
        if unit == "W" and mode == "before-after":
            raise ValueError("a command that prints watts must be sampled (mode = 'sample'); "
                             "two power readings do not give the energy in between")
        self.argv = list(argv)
        self.unit, self.mode = unit, mode
        self.sample_interval_s = float(sample_interval_s)
        self.timeout_s = float(timeout_s)
        self._sampler: PeriodicSampler | None = None
        self._t0 = 0.0
        self._first: float | None = None

    def read_once(self) -> float:
        try:
            p = subprocess.run(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired as e:
            raise MeterError(f"{self.argv[0]} did not finish within {self.timeout_s:g} s") from e
        except OSError as e:
            raise MeterError(f"cannot run {self.argv[0]}: {e}") from e
        if p.returncode != 0:
            err = p.stderr.decode(errors="replace").strip().splitlines()
            raise MeterError(f"{self.argv[0]} exited with status {p.returncode}"
                             + (f": {err[-1]}" if err else ""))
        return parse_value(p.stdout.decode(errors="replace"), self.unit)

    def available(self) -> tuple[bool, str]:
        prog = self.argv[0]
        if shutil.which(prog) is None and not os.access(prog, os.X_OK):
            return False, f"{prog!r} is not an executable in PATH"
        try:
            v = self.read_once()
        except MeterError as e:
            return False, str(e)
        return True, f"measured: {' '.join(self.argv)} -> {v:g} {self.unit}"

    def start(self) -> None:
        self._first = None
        if self.unit == "J":
            self._first = self.read_once()
        self._t0 = time.monotonic()
        if self.mode == "sample":
            self._sampler = PeriodicSampler(self.read_once, self.sample_interval_s, self.name)
            self._sampler.start(self._t0)

    def stop(self) -> MeterReading:
        duration = time.monotonic() - self._t0
        notes: list[str] = []
        samples: list[tuple[float, float]] = []
        if self._sampler is not None:
            samples, notes = self._sampler.finish(self.timeout_s + 1.0, until_s=duration)
            self._sampler = None
        if self.unit == "J":
            last = self.read_once()
            assert self._first is not None
            joules = last - self._first
            samples = [(0.0, self._first), *samples, (duration, last)]
            if joules < 0:
                raise MeterError(f"{self.argv[0]}: the energy counter went backwards "
                                 f"({self._first:g} J -> {last:g} J); was it reset?")
        else:
            joules = integrate_watts(samples, duration)
            if joules is None:
                notes.append("no valid power reading during the trial")
            elif len(samples) < 3:
                notes.append(f"only {len(samples)} power reading(s) in {duration:.1f} s")
        return MeterReading(source=self.name, measured=True, duration_s=duration, joules=joules,
                            mean_watts=(joules / duration) if joules is not None and duration > 0
                            else None, samples=samples, sample_unit=self.unit, notes=notes,
                            extra={"argv": self.argv, "mode": self.mode})

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "measured": True, "argv": self.argv, "unit": self.unit,
                "mode": self.mode, "sample_interval_s": self.sample_interval_s}
