"""ipmi: whole-system power from the BMC, through ``ipmitool dcmi power reading``.

DCMI's "Get Power Reading" returns the instantaneous system power [W] (at the
power supplies, so it includes fans, NICs, disks and PSU losses) plus the
minimum, maximum and average over the BMC's own rolling sampling period.
The meter runs ipmitool about once a second during the trial and integrates
the instantaneous readings with the trapezoid rule; before the first and
after the last reading the nearest one is held.

BMCs refresh their reading slowly (every 1 to 5 s is common; some average
over longer periods) and ipmitool itself takes 0.05 to 1 s per call over
the LAN, so trials shorter than ``min_trial_s`` (default 10 s) get a
warning: the energy of a 2 s trial is one or two readings times 2 s.

Local access needs /dev/ipmi0 (modules ipmi_si + ipmi_devintf) and root;
remote access uses lanplus (IPMI v2.0 RMCP+) with ``-f <password file>``,
so the password never appears in an argv (visible in ps) or in the store.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable

from .base import Meter, MeterError, MeterReading, PeriodicSampler, integrate_watts

IPMI_DEVICES = ("/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0")

# (returncode, combined stdout + stderr)
Runner = Callable[[list[str], float], tuple[int, str]]


@dataclass(frozen=True)
class DcmiPowerReading:
    """One reply of ``ipmitool dcmi power reading``."""
    instantaneous_w: float          # [W]
    minimum_w: float | None         # [W] over the BMC's sampling period
    maximum_w: float | None         # [W]
    average_w: float | None         # [W]
    sampling_period_s: float | None  # [s] the BMC's own averaging window
    timestamp: str | None           # the BMC's clock, as ipmitool printed it
    active: bool                    # "Power reading state is: activated"


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_FIELDS = {
    "instantaneous_w": re.compile(rf"Instantaneous power reading\s*:\s*{_NUM}\s*Watts", re.I),
    "minimum_w": re.compile(rf"Minimum during sampling period\s*:\s*{_NUM}\s*Watts", re.I),
    "maximum_w": re.compile(rf"Maximum during sampling period\s*:\s*{_NUM}\s*Watts", re.I),
    "average_w": re.compile(rf"Average power reading over sample period\s*:\s*{_NUM}\s*Watts", re.I),
}
_PERIOD = re.compile(r"Sampling period\s*:\s*([0-9]+)\s*(Milliseconds|Seconds|Minutes|Hours|Days)",
                     re.I)
_PERIOD_UNIT = {"milliseconds": 1e-3, "seconds": 1.0, "minutes": 60.0, "hours": 3600.0,
                "days": 86400.0}
_STAMP = re.compile(r"IPMI timestamp\s*:\s*(.+?)\s*$", re.I | re.M)
_STATE = re.compile(r"Power reading state is\s*:\s*(activated|deactivated)", re.I)
# How ipmitool reports failures (first matching line is quoted back to the user)
_ERRORS = (
    re.compile(r"^.*DCMI request failed because:.*$", re.M),
    re.compile(r"^.*Could not open device.*$", re.M),
    re.compile(r"^.*Unable to establish IPMI.*$", re.M),
    re.compile(r"^Error.*$", re.M | re.I),
    re.compile(r"^.*Invalid command.*$", re.M | re.I),
)


def parse(output: str) -> DcmiPowerReading:
    """Parse ipmitool's ``dcmi power reading`` output; MeterError on an error reply."""
    m = _FIELDS["instantaneous_w"].search(output)
    if not m:
        for pat in _ERRORS:
            if e := pat.search(output):
                raise MeterError(f"ipmitool: {e.group(0).strip()}")
        first = next((ln.strip() for ln in output.splitlines() if ln.strip()), "(no output)")
        raise MeterError(f"ipmitool printed no power reading: {first}")
    vals: dict[str, float | None] = {}
    for key, pat in _FIELDS.items():
        f = pat.search(output)
        vals[key] = float(f.group(1)) if f else None
    period = None
    if p := _PERIOD.search(output):
        period = int(p.group(1)) * _PERIOD_UNIT[p.group(2).lower()]
    stamp = s.group(1) if (s := _STAMP.search(output)) else None
    state = _STATE.search(output)
    # ipmitool always prints the state; if a build does not, trust the reading
    active = state is None or state.group(1).lower() == "activated"
    return DcmiPowerReading(instantaneous_w=float(vals["instantaneous_w"]),  # type: ignore[arg-type]
                            minimum_w=vals["minimum_w"], maximum_w=vals["maximum_w"],
                            average_w=vals["average_w"], sampling_period_s=period,
                            timestamp=stamp, active=active)


def _run(argv: list[str], timeout_s: float) -> tuple[int, str]:
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise MeterError(f"{' '.join(argv[:1])} did not answer within {timeout_s:g} s "
                         f"(BMC unreachable or busy?)") from e
    except OSError as e:
        raise MeterError(f"cannot run {argv[0]}: {e}") from e
    return p.returncode, p.stdout.decode("utf-8", errors="replace")


class IpmiMeter(Meter):
    name = "ipmi"
    measured = True

    def __init__(self, *, interface: str = "open", host: str | None = None,
                 user: str | None = None, password_file: str | None = None,
                 ipmitool: str = "ipmitool", sample_interval_s: float = 1.0,
                 timeout_s: float = 5.0, min_trial_s: float = 10.0,
                 runner: Runner | None = None, devices: tuple[str, ...] = IPMI_DEVICES):
        if interface not in ("open", "lanplus"):
            raise ValueError(f"ipmi interface {interface!r} is not 'open' or 'lanplus'")
        if interface == "lanplus" and not (host and user and password_file):
            raise ValueError("ipmi interface 'lanplus' needs host, user and password_file")
        self.interface = interface
        self.host, self.user, self.password_file = host, user, password_file
        self.ipmitool = ipmitool
        self.sample_interval_s = float(sample_interval_s)
        self.timeout_s = float(timeout_s)
        self.min_trial_s = float(min_trial_s)
        self.devices = devices
        self._runner = runner or _run
        self._sampler: PeriodicSampler | None = None
        self._t0 = 0.0
        self.bmc_period_s: float | None = None
        self._inactive_seen = False

    def argv(self) -> list[str]:
        cmd = [self.ipmitool]
        if self.interface == "lanplus":
            cmd += ["-I", "lanplus", "-H", str(self.host), "-U", str(self.user),
                    "-f", str(self.password_file)]
        else:
            cmd += ["-I", "open"]
        return cmd + ["dcmi", "power", "reading"]

    def read_once(self) -> DcmiPowerReading:
        rc, out = self._runner(self.argv(), self.timeout_s)
        try:
            r = parse(out)
        except MeterError as e:
            raise MeterError(f"{e} (exit status {rc})") from None
        if not r.active:
            if r.instantaneous_w <= 0:
                raise MeterError("the BMC says DCMI power reading is deactivated and reports "
                                 "0 W; enable power monitoring in the BMC settings")
            self._inactive_seen = True
        if r.sampling_period_s:
            self.bmc_period_s = r.sampling_period_s
        return r

    def available(self) -> tuple[bool, str]:
        problems = []
        if self._runner is _run and shutil.which(self.ipmitool) is None \
                and not os.access(self.ipmitool, os.X_OK):
            problems.append(f"{self.ipmitool} is not installed (apt-get install ipmitool)")
        if self.interface == "open":
            if not any(os.path.exists(d) for d in self.devices):
                problems.append("no /dev/ipmi0: this host has no BMC, or the ipmi_si and "
                                "ipmi_devintf modules are not loaded (modprobe ipmi_devintf "
                                "ipmi_si); for a remote BMC set interface = 'lanplus'")
        elif not os.access(str(self.password_file), os.R_OK):
            problems.append(f"password file {self.password_file!r} is not readable")
        if problems:
            return False, "; ".join(problems)
        try:
            r = self.read_once()
        except MeterError as e:
            return False, str(e)
        where = "local BMC" if self.interface == "open" else f"BMC at {self.host}"
        return True, f"measured: {where} reports {r.instantaneous_w:g} W (whole system)"

    def start(self) -> None:
        self._inactive_seen = False
        self._t0 = time.monotonic()
        self._sampler = PeriodicSampler(lambda: self.read_once().instantaneous_w,
                                        self.sample_interval_s, self.name)
        self._sampler.start(self._t0)

    def stop(self) -> MeterReading:
        duration = time.monotonic() - self._t0
        notes: list[str] = []
        samples: list[tuple[float, float]] = []
        if self._sampler is not None:
            # a call still running at stop() ends after the trial: not part of it
            samples, notes = self._sampler.finish(self.timeout_s + 1.0, until_s=duration)
            self._sampler = None
        joules = integrate_watts(samples, duration)
        if joules is None:
            notes.append("no valid power reading during the trial")
        if duration < self.min_trial_s:
            period = f" (this BMC averages over {self.bmc_period_s:g} s)" if self.bmc_period_s else ""
            notes.append(f"trial of {duration:.1f} s is shorter than {self.min_trial_s:g} s: "
                         f"BMCs refresh their reading every 1-5 s{period}, so this figure rests "
                         f"on {len(samples)} reading(s); use longer trials or the rapl/command "
                         f"meter")
        elif self.bmc_period_s and duration < 3 * self.bmc_period_s:
            notes.append(f"trial of {duration:.1f} s spans fewer than 3 of the BMC's "
                         f"{self.bmc_period_s:g} s averaging periods; readings lag the load")
        elif len(samples) < 3:
            notes.append(f"only {len(samples)} power reading(s) in {duration:.1f} s; "
                         f"ipmitool is slower than sample_interval_s={self.sample_interval_s:g}")
        if self._inactive_seen:
            notes.append("the BMC flagged its power reading state as deactivated")
        notes.append("whole-system power at the power supplies")
        return MeterReading(source=self.name, measured=True, duration_s=duration, joules=joules,
                            mean_watts=(joules / duration) if joules is not None and duration > 0
                            else None, samples=samples, sample_unit="W", notes=notes,
                            extra={"bmc_sampling_period_s": self.bmc_period_s,
                                   "readings": len(samples)})

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "measured": True, "interface": self.interface,
                             "sample_interval_s": self.sample_interval_s,
                             "bmc_sampling_period_s": self.bmc_period_s}
        if self.interface == "lanplus":
            d.update(host=self.host, user=self.user, password_file=self.password_file)
        return d

