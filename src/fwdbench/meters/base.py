"""The meter interface: every energy source (rapl, ipmi, command, cpu-model).

A meter is started just before a trial and stopped just after it; ``stop()``
returns one :class:`MeterReading` with the energy over that interval [J], the
mean power [W], the samples it took and whether the figure was measured by an
instrument (``measured=True``) or computed from a model (``measured=False``,
labelled "modelled" wherever it is shown).

Lifecycle: ``available()`` (probe, no side effects beyond reading files or
running the meter's tool once) -> ``start()`` -> ``stop()`` -> ``start()``
... ``describe()`` feeds the report. A meter can be reused for any number of
consecutive intervals but never for two at once.
"""
from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from ..errors import FwdbenchError


class MeterError(FwdbenchError):
    """A meter could not be started or read; the message says which and what to do."""


@dataclass
class MeterReading:
    """What one meter saw over one interval (one trial, or the idle baseline)."""
    source: str                      # meter name: "rapl", "ipmi", "command", "cpu-model"
    measured: bool                   # False: modelled, not measured by an instrument
    duration_s: float                # [s] wall-clock length of the interval
    joules: float | None             # [J] energy over the interval (None: no valid reading)
    mean_watts: float | None         # [W] joules / duration_s
    samples: list[tuple[float, float]] = field(default_factory=list)
    sample_unit: str = "W"           # unit of the samples' second element: "W" or "J"
    notes: list[str] = field(default_factory=list)     # warnings and caveats, for humans
    extra: dict[str, Any] = field(default_factory=dict)  # meter-specific detail (JSON-safe)

    @property
    def label(self) -> str:
        return "measured" if self.measured else "modelled"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form stored with the trial."""
        return {
            "source": self.source,
            "measured": self.measured,
            "label": self.label,
            "duration_s": sig(self.duration_s),
            "joules": sig(self.joules),
            "mean_watts": sig(self.mean_watts),
            "sample_unit": self.sample_unit,
            "samples": [[sig(t, 6), sig(v, 6)] for t, v in self.samples],
            "notes": list(self.notes),
            "extra": self.extra,
        }


def sig(x: float | None, digits: int = 9) -> float | None:
    """Round to significant digits for storage; NaN and inf (not JSON) become None."""
    if x is None:
        return None
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return None
    return float(f"{x:.{digits}g}")


class Meter(ABC):
    """One energy source. Subclasses set ``name`` and ``measured``."""

    name: ClassVar[str]
    measured: ClassVar[bool] = True

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, what it will read) or (False, why not and what to do about it)."""

    @abstractmethod
    def start(self) -> None:
        """Begin an interval. Raises MeterError if the meter cannot be read."""

    @abstractmethod
    def stop(self) -> MeterReading:
        """End the interval begun by start() and return what was seen."""

    def describe(self) -> dict[str, Any]:
        """Settings and facts for the report (never secrets such as passwords)."""
        return {"name": self.name, "measured": self.measured}

    def check(self) -> None:
        """Raise MeterError with the reason if the meter is not available."""
        ok, why = self.available()
        if not ok:
            raise MeterError(f"meter {self.name!r} is not available: {why}")


def integrate_watts(samples: list[tuple[float, float]], duration_s: float) -> float | None:
    """Energy [J] from power samples [(t [s] since start, watts)] over [0, duration_s].

    Trapezoid rule between samples; before the first and after the last sample
    the nearest reading is held (a meter that updates at ~1 Hz cannot say more).
    Samples outside [0, duration_s] are clipped to the interval.
    """
    pts = sorted((min(max(t, 0.0), duration_s), w) for t, w in samples)
    if not pts or duration_s <= 0:
        return None
    energy = pts[0][1] * pts[0][0]                       # hold the first reading back to 0
    for (t0, w0), (t1, w1) in zip(pts, pts[1:]):
        energy += (w0 + w1) / 2.0 * (t1 - t0)
    energy += pts[-1][1] * (duration_s - pts[-1][0])     # hold the last reading to the end
    return energy


class PeriodicSampler:
    """Calls ``read()`` every ``interval_s`` in a background thread.

    The first call happens at once; later calls are scheduled on a fixed grid
    from the start (no drift). Each successful call appends (t [s] since
    start, value). Failures are counted and the first messages kept; a meter
    decides whether they invalidate the interval.
    """

    def __init__(self, read: Callable[[], float], interval_s: float, name: str):
        if interval_s <= 0:
            raise ValueError(f"sample interval {interval_s!r} s must be above 0")
        self.read = read
        self.interval_s = interval_s
        self.name = name
        self.samples: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self.error_count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()

    def start(self, t0: float | None = None) -> None:
        self._t0 = time.monotonic() if t0 is None else t0
        self.samples, self.errors, self.error_count = [], [], 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"fwdbench-{self.name}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        k = 0
        while not self._stop.is_set():
            self.sample_once()
            k += 1
            delay = self._t0 + k * self.interval_s - time.monotonic()
            if delay < 0:          # a slow read: skip the missed slots, keep the grid
                k += int(-delay // self.interval_s) + 1
                delay = self._t0 + k * self.interval_s - time.monotonic()
            if self._stop.wait(max(delay, 0.0)):
                break

    def sample_once(self) -> float | None:
        """Take one sample now (also used for a final sample at stop)."""
        try:
            value = self.read()
        except Exception as e:   # noqa: BLE001 - recorded, reported by the meter
            with self._lock:
                self.error_count += 1
                if len(self.errors) < 3:
                    self.errors.append(str(e))
            return None
        t = time.monotonic() - self._t0
        with self._lock:
            self.samples.append((t, float(value)))
        return value

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def finish(self, timeout_s: float = 30.0, until_s: float | None = None
               ) -> tuple[list[tuple[float, float]], list[str]]:
        """Stop; the samples (taken at t <= ``until_s`` [s] if given: a read still
        running at stop() ends after the trial) and the error note, if any."""
        self.stop(timeout_s)
        samples = [(t, v) for t, v in self.samples if until_s is None or t <= until_s]
        note = self.error_note()
        return samples, [note] if note else []

    def error_note(self) -> str | None:
        if not self.error_count:
            return None
        return (f"{self.error_count} {self.name} sample(s) failed; first error: "
                f"{self.errors[0]}")
