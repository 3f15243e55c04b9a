"""rapl: CPU package and DRAM energy from the powercap framework.

Linux exposes Intel RAPL (and AMD's RAPL-compatible counters, through the
same intel_rapl driver) under /sys/class/powercap/intel-rapl:<pkg>[:<sub>]/:
``name`` (package-0, dram, core, uncore, psys), ``energy_uj`` (cumulative
energy [uJ]) and ``max_energy_range_uj`` (where energy_uj wraps to 0).

The meter reads energy_uj of each selected domain at start, samples it in a
background thread (default every 1 s) and reads it at stop. Energy is the sum
of the increments between consecutive reads; an increment below zero means
the counter wrapped, and max_energy_range_uj + 1 is added. Sampling often
enough matters: a 32-bit counter at ~61 uJ units wraps after ~262 kJ, that is
every ~22 min at 200 W, so two reads a wrap apart could not tell one wrap
from two.

What the total covers: package + DRAM domains by default. core and uncore
are parts of package and never added to it; psys (the whole SoC platform,
on some client CPUs) is used alone when selected. RAPL measures the CPU
package, not the wall: NICs, fans, disks and PSU losses are not in it.

Since Linux 5.10 energy_uj is readable only by root (CVE-2020-8694,
"Platypus": the counter leaks information about what other code runs).

On the ``ssh`` testbed the meter reads the DUT host's powercap files through
its executor (``exec``): every read, also each sample, is one command there.
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .base import Meter, MeterError, MeterReading, PeriodicSampler

DEFAULT_ROOT = "/sys/class/powercap"
DEFAULT_DOMAINS = ("package", "dram")
_ZONE = re.compile(r"^(intel|amd)-rapl(:\d+)+$")
_ADDITIVE = ("package", "dram")   # disjoint domains that sum to the total


def _read_int(path: Path) -> int:
    """Read one integer sysfs attribute (tests patch this to simulate errors)."""
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


@dataclass(frozen=True)
class RaplDomain:
    key: str          # "package-0", "package-0/dram"
    kind: str         # "package", "dram", "core", "uncore", "psys"
    path: Path        # the zone directory
    max_range_uj: int

    @property
    def energy_path(self) -> Path:
        return self.path / "energy_uj"


def _kind(name: str) -> str:
    return re.sub(r"-\d+$", "", name)


def discover(root: str | os.PathLike = DEFAULT_ROOT) -> list[tuple[str, str, Path]]:
    """All RAPL zones under root: (key, kind, dir), parents before children."""
    root = Path(root)
    zones = [p.name for p in root.iterdir() if _ZONE.match(p.name)]
    names = {}
    for z in zones:
        try:
            names[z] = root.joinpath(z, "name").read_text().strip()
        except OSError:
            continue
    return _zones(root, names)


def discover_on(ex, root: str | os.PathLike = DEFAULT_ROOT) -> list[tuple[str, str, Path]]:
    """discover() on the host of executor ``ex`` (the DUT host over SSH)."""
    root = Path(root)
    cp = ex.run(["find", str(root), "-mindepth", "1", "-maxdepth", "1"], check=False)
    zones = [ln.rsplit("/", 1)[-1] for ln in cp.stdout.split()]
    zones = [z for z in zones if _ZONE.match(z)]
    got = ex.read_files([str(root / z / "name") for z in zones])
    return _zones(root, {z: (got[str(root / z / "name")] or "").strip() for z in zones
                         if got[str(root / z / "name")] is not None})


def _zones(root: Path, names: dict[str, str]) -> list[tuple[str, str, Path]]:
    """(key, kind, dir) of the zones named ``names`` (zone -> its name file), parents first."""
    out = []
    for z in sorted(names, key=lambda n: [int(x) for x in n.split(":")[1:]]):
        parent = z.rsplit(":", 1)[0]
        key = f"{names[parent]}/{names[z]}" if parent in names else names[z]
        out.append((key, _kind(names[z]), root / z))
    return out


def total_keys(domains: Iterable[RaplDomain]) -> list[str]:
    """Which domains add up to the reported total (see the module docstring)."""
    domains = list(domains)
    psys = [d.key for d in domains if d.kind == "psys"]
    if psys:
        return psys
    additive = [d.key for d in domains if d.kind in _ADDITIVE]
    if additive:
        return additive
    return [d.key for d in domains]     # e.g. only core + uncore: disjoint parts


class RaplMeter(Meter):
    name = "rapl"
    measured = True

    def __init__(self, *, root: str | os.PathLike = DEFAULT_ROOT,
                 domains: Iterable[str] = DEFAULT_DOMAINS, sample_interval_s: float = 1.0,
                 exec=None, host: str = ""):
        """``exec``: read another host's powercap files (``host``) through that executor."""
        self.root = Path(root)
        self.exec = exec
        self.host = host
        self.want = tuple(domains)
        self.sample_interval_s = float(sample_interval_s)
        self.domains: list[RaplDomain] = []
        self._lock = threading.Lock()
        self._last: dict[str, int] = {}
        self._acc: dict[str, int] = {}      # [uJ] accumulated since start
        self._wraps: dict[str, int] = {}
        self._sampler: PeriodicSampler | None = None
        self._t0 = 0.0

    # -- probing ------------------------------------------------------------
    def _ints(self, paths: list[Path]) -> dict[Path, int]:
        """Integer sysfs attributes, one command for all on a remote host."""
        if self.exec is None:
            return {p: _read_int(p) for p in paths}
        got = self.exec.read_files([str(p) for p in paths])
        out = {}
        for p in paths:
            text = got.get(str(p))
            if text is None:
                raise MeterError(f"{p} on {self.host} is not readable (energy_uj is root-only "
                                 f"since CVE-2020-8694: does fwdbench run commands there as "
                                 f"root or with sudo?)")
            try:
                out[p] = int(text.strip())
            except ValueError:
                raise MeterError(f"{p} on {self.host}: {text.strip()[:40]!r} is not a "
                                 f"counter") from None
        return out

    def _probe_remote(self) -> list[RaplDomain]:
        if not self.exec.exists(str(self.root)):
            raise MeterError(f"no {self.root} on {self.host}: its kernel has no powercap "
                             f"framework or the RAPL driver is not loaded (modprobe "
                             f"intel_rapl_msr there); virtual machines rarely expose RAPL")
        zones = discover_on(self.exec, self.root)
        if not zones:
            raise MeterError(f"{self.root} on {self.host} has no intel-rapl/amd-rapl zone: "
                             f"load the RAPL driver there (modprobe intel_rapl_msr)")
        chosen = [(k, kind, p) for k, kind, p in zones if kind in self.want]
        if not chosen:
            have = ", ".join(sorted({kind for _, kind, _ in zones}))
            raise MeterError(f"none of the RAPL domains {list(self.want)} exists on "
                             f"{self.host}; it has: {have}")
        ints = self._ints([p / f for _, _, p in chosen
                           for f in ("energy_uj", "max_energy_range_uj")])
        out = []
        for key, kind, p in chosen:
            max_range = ints[p / "max_energy_range_uj"]
            if max_range <= 0:
                raise MeterError(f"{p / 'max_energy_range_uj'} on {self.host} is {max_range}; "
                                 f"the counter's wrap-around point is unknown")
            out.append(RaplDomain(key=key, kind=kind, path=p, max_range_uj=max_range))
        return out

    def _probe(self) -> list[RaplDomain]:
        """Find the selected domains and read each once; MeterError says why not."""
        if self.exec is not None:
            return self._probe_remote()
        if not self.root.is_dir():
            raise MeterError(
                f"no {self.root}: the kernel has no powercap framework or the RAPL driver is "
                f"not loaded (try: modprobe intel_rapl_msr); virtual machines rarely expose "
                f"RAPL")
        zones = discover(self.root)
        if not zones:
            raise MeterError(
                f"{self.root} has no intel-rapl/amd-rapl zone: load the RAPL driver "
                f"(modprobe intel_rapl_msr; AMD needs Zen and a recent kernel)")
        chosen = [(k, kind, p) for k, kind, p in zones if kind in self.want]
        if not chosen:
            have = ", ".join(sorted({kind for _, kind, _ in zones}))
            raise MeterError(f"none of the RAPL domains {list(self.want)} exists here; "
                             f"this host has: {have}")
        out = []
        for key, kind, p in chosen:
            try:
                _read_int(p / "energy_uj")
                max_range = _read_int(p / "max_energy_range_uj")
            except PermissionError as e:
                raise MeterError(
                    f"{p / 'energy_uj'} is not readable: since Linux 5.10 RAPL energy counters "
                    f"are readable by root only (CVE-2020-8694, 'Platypus'). Run fwdbench as "
                    f"root, or grant read access to the energy_uj files (e.g. a udev rule "
                    f"that chmods them), knowing that reopens the side channel") from e
            except (OSError, ValueError) as e:
                raise MeterError(f"cannot read RAPL domain {key} at {p}: {e}") from e
            if max_range <= 0:
                raise MeterError(f"{p / 'max_energy_range_uj'} is {max_range}; "
                                 f"the counter's wrap-around point is unknown")
            out.append(RaplDomain(key=key, kind=kind, path=p, max_range_uj=max_range))
        return out

    def available(self) -> tuple[bool, str]:
        try:
            doms = self._probe()
        except MeterError as e:
            return False, str(e)
        return True, ("measured: " + ", ".join(d.key for d in doms) + f" under {self.root}"
                      + (f" on {self.host}" if self.exec is not None else ""))

    # -- measuring ----------------------------------------------------------
    def poll(self) -> float:
        """Read every domain now (what the sampler does); returns joules since start."""
        return self._read_all()

    def _read_all(self) -> float:
        """Read every domain, accumulate increments; returns joules so far."""
        with self._lock:
            try:
                now = self._ints([d.energy_path for d in self.domains])
            except PermissionError as e:
                raise MeterError(f"{e.filename}: permission denied (root only since "
                                 f"CVE-2020-8694)") from e
            for d in self.domains:
                v = now[d.energy_path]
                inc = v - self._last[d.key]
                if inc < 0:                    # wrapped past max_energy_range_uj
                    inc += d.max_range_uj + 1
                    self._wraps[d.key] += 1
                self._acc[d.key] += inc
                self._last[d.key] = v
            return sum(self._acc[k] for k in total_keys(self.domains)) / 1e6

    def start(self) -> None:
        if not self.domains:
            self.domains = self._probe()
        with self._lock:
            try:
                now = self._ints([d.energy_path for d in self.domains])
                self._last = {d.key: now[d.energy_path] for d in self.domains}
            except OSError as e:
                raise MeterError(f"rapl: cannot read energy_uj: {e}") from e
            self._acc = {d.key: 0 for d in self.domains}
            self._wraps = {d.key: 0 for d in self.domains}
        self._t0 = time.monotonic()
        if self.sample_interval_s > 0:
            self._sampler = PeriodicSampler(self._read_all, self.sample_interval_s, self.name)
            self._sampler.start(self._t0)

    def stop(self) -> MeterReading:
        notes: list[str] = []
        samples: list[tuple[float, float]] = []
        if self._sampler is not None:
            samples, notes = self._sampler.finish()
            self._sampler = None
        try:
            joules = self._read_all()
        except (OSError, MeterError) as e:
            raise MeterError(f"rapl: final read failed: {e}") from e
        duration = time.monotonic() - self._t0
        samples.append((duration, joules))
        keys = total_keys(self.domains)
        per_domain = {k: v / 1e6 for k, v in self._acc.items()}
        if any(self._wraps.values()):
            notes.append("counter wrap-around handled: " + ", ".join(
                f"{k} x{n}" for k, n in self._wraps.items() if n))
        wrap_s = min(d.max_range_uj for d in self.domains) / 1e6 / 400.0   # [s] at 400 W
        if duration > wrap_s / 2 and (self.sample_interval_s <= 0
                                      or self.sample_interval_s > wrap_s / 2):
            notes.append(f"reads were more than {wrap_s / 2:.0f} s apart: a counter could have "
                         f"wrapped twice between them at 400 W; lower sample_interval_s")
        notes.append("covers the CPU package(s) and DRAM only, not the whole system"
                     + (f" (of {self.host})" if self.exec is not None else ""))
        return MeterReading(
            source=self.name, measured=True, duration_s=duration, joules=joules,
            mean_watts=joules / duration if duration > 0 else None,
            samples=samples, sample_unit="J", notes=notes,
            extra={"domains_j": per_domain, "total_of": keys,
                   "wraps": {k: n for k, n in self._wraps.items() if n}})

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "measured": True, "root": str(self.root),
                **({"host": self.host} if self.exec is not None else {}),
                "domains": [d.key for d in self.domains] or list(self.want),
                "total_of": total_keys(self.domains) if self.domains else None,
                "sample_interval_s": self.sample_interval_s}

