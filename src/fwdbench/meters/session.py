"""EnergySession: what the runner wraps around every trial.

    session = EnergySession(settings, dut_cpus=[1], gen_cpus=[0])
    session.check()                    # probe meters before the campaign
    if session.wants_baseline:
        session.baseline()             # idle power, before any traffic
    for each trial:
        session.start(pids=[dut_pid])
        ... run the trial ...
        trial.meters = session.stop(pids=[dut_pid], packets=trial.rx_packets)

``stop()`` returns the JSON-safe dict stored as ``TrialResult.meters``
(schema in docs/energy.md and :data:`METERS_SCHEMA_VERSION`):

    {"schema": 1,
     "cpu":    {... CpuAccounting.stop() ...},
     "energy": {"source", "measured", "label", "joules", "mean_watts",
                "joules_gross", "mean_watts_gross", "duration_s",
                "baseline_watts", "baseline_subtracted",
                "packets", "packets_per_joule", "joules_per_mpkt",
                "scope", "notes", "meters": {name: reading}},
     "warnings": [...]}

A meter failing during a trial never fails the trial: its error is recorded
and the energy figure falls back to the next meter (at worst cpu-model).

On a DUT host reached over SSH (``dut_exec``, ``dut_host``) the CPU
accounting, the cpu-model and RAPL read that host's files through its
executor; IPMI over the LAN reads the BMC named in [energy.ipmi]; a local
IPMI device would be the tester's and is not used; the command meter runs
on the tester. Every energy figure says which host it measured.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterable

from .base import Meter, MeterError, MeterReading, sig
from .command import CommandMeter
from .cpu import CpuAccounting, _fmt_cpus
from .cpumodel import CpuModelMeter
from .ipmi import IpmiMeter
from .rapl import RaplMeter
from .settings import METER_NAMES, EnergySettings, parse_energy_settings

METERS_SCHEMA_VERSION = 1

_SCOPE = {
    "rapl": "CPU package(s) and DRAM of the host",
    "ipmi": "whole host at its power supplies (BMC)",
    "command": "whatever the command measures (e.g. a PDU outlet)",
    "cpu-model": "DUT CPUs only, modelled from busy time",
}


class ElsewhereMeter(Meter):
    """A meter that would measure the wrong host (the tester, not the DUT host)."""

    def __init__(self, name: str, why: str):
        self.name = name        # type: ignore[misc]
        self.why = why

    def available(self) -> tuple[bool, str]:
        return False, self.why

    def start(self) -> None:
        raise MeterError(self.why)

    def stop(self) -> MeterReading:
        raise MeterError(self.why)


def build_meter(name: str, settings: EnergySettings, dut_cpus: list[int], *,
                proc_root: str | os.PathLike = "/proc", dut_exec=None,
                dut_host: str = "") -> Meter:
    """One meter from the [energy] settings (``dut_exec``: the DUT host is another host)."""
    if name == "cpu-model":
        p = settings.cpu_model
        return CpuModelMeter(dut_cpus, idle_watts=p.idle_watts,
                             watts_per_busy_core=p.watts_per_busy_core,
                             sample_interval_s=p.sample_interval_s, proc_root=proc_root,
                             files=dut_exec.read_files if dut_exec is not None else None,
                             host=dut_host)
    if name == "rapl":
        r = settings.rapl
        return RaplMeter(root=r.root, domains=r.domains, sample_interval_s=r.sample_interval_s,
                         exec=dut_exec, host=dut_host)
    if name == "ipmi":
        i = settings.ipmi
        if dut_exec is not None and i.interface != "lanplus":
            return ElsewhereMeter("ipmi", f"[energy.ipmi] interface {i.interface!r} reads this "
                                          f"host's BMC (the tester's), not the DUT host's: set "
                                          f"interface = \"lanplus\" with the host, user and "
                                          f"password_file of {dut_host}'s BMC")
        return IpmiMeter(interface=i.interface, host=i.host, user=i.user,
                         password_file=i.password_file, ipmitool=i.ipmitool,
                         sample_interval_s=i.sample_interval_s, timeout_s=i.timeout_s,
                         min_trial_s=i.min_trial_s)
    if name == "command":
        c = settings.command
        if c is None:
            raise MeterError("meter 'command' needs [energy.command] with argv")
        return CommandMeter(c.argv, unit=c.unit, mode=c.mode,
                            sample_interval_s=c.sample_interval_s, timeout_s=c.timeout_s)
    raise MeterError(f"unknown meter {name!r}; choose from {', '.join(METER_NAMES)}")


class EnergySession:
    """CPU accounting + energy meters around every trial of a campaign."""

    def __init__(self, settings: EnergySettings | dict[str, Any] | None,
                 dut_cpus: Iterable[int] | str | None, gen_cpus: Iterable[int] | str | None = None,
                 *, meters: list[Meter] | None = None, proc_root: str | os.PathLike = "/proc",
                 sys_cpu_root: str | os.PathLike = "/sys/devices/system/cpu",
                 dut_exec=None, dut_host: str = ""):
        """``dut_exec``: the DUT host is another host (``dut_host``), read through it."""
        if settings is None or isinstance(settings, dict):
            settings = parse_energy_settings(settings)
        self.settings = settings
        self.dut_exec = dut_exec
        self.dut_host = dut_host
        self.cpu = CpuAccounting(dut_cpus, gen_cpus, proc_root=proc_root,
                                 sys_cpu_root=sys_cpu_root,
                                 dut_files=dut_exec.read_files if dut_exec is not None else None,
                                 dut_host=dut_host)
        self.proc_root = proc_root
        self._given = meters
        self.meters: list[Meter] = []
        self.unavailable: dict[str, str] = {}
        self.baseline_watts: dict[str, float] = {}
        self.baseline_info: dict[str, Any] | None = None
        self._checked = False
        self._started: list[Meter] = []
        self._start_errors: dict[str, str] = {}
        self._t0 = 0.0
        self._wall0 = 0.0

    @property
    def wants_baseline(self) -> bool:
        return self.settings.baseline

    # -- setup --------------------------------------------------------------
    def check(self) -> dict[str, str]:
        """Pick and probe the meters. Returns {meter: why unavailable} for auto mode;
        raises MeterError if a meter named explicitly is unavailable."""
        if self._checked:
            return dict(self.unavailable)
        dut = self.cpu.dut_cpus
        self.meters, self.unavailable = [], {}
        if self._given is not None:
            candidates = list(self._given)
            explicit = True
        else:
            explicit_list = self.settings.selected()
            explicit = explicit_list is not None
            names = explicit_list if explicit_list is not None else [
                n for n in METER_NAMES if n != "command" or self.settings.command is not None]
            candidates = [build_meter(n, self.settings, dut, proc_root=self.proc_root,
                                      dut_exec=self.dut_exec, dut_host=self.dut_host)
                          for n in names]
        for m in candidates:
            ok, why = m.available()
            if ok:
                self.meters.append(m)
            elif explicit or m.name == "command":     # a configured command is meant to run
                raise MeterError(f"meter {m.name!r} is not available: {why}")
            else:
                self.unavailable[m.name] = why
        if not self.meters:      # auto always has the model; an empty list is a bug upstream
            raise MeterError("no energy meter is available: " + "; ".join(
                f"{k}: {v}" for k, v in self.unavailable.items()))
        self._checked = True
        return dict(self.unavailable)

    def describe(self) -> dict[str, Any]:
        """For the campaign's host facts and the report."""
        self.check()
        return {"meters": [m.describe() for m in self.meters],
                "primary_order": [m.name for m in self.meters],
                "unavailable": dict(self.unavailable),
                **({"dut_host": self.dut_host} if self.dut_exec is not None else {}),
                "dut_cpus": self.cpu.dut_cpus, "gen_cpus": self.cpu.gen_cpus,
                "baseline": self.baseline_info,
                "baseline_subtracted": self.settings.baseline and bool(self.baseline_watts)}

    # -- idle baseline ------------------------------------------------------
    def baseline(self, seconds: float | None = None) -> dict[str, Any]:
        """Measure every meter's idle power for ``seconds`` (default settings.baseline_s).

        Call before the campaign, with no traffic and before any DUT is set up: a
        poll-mode DUT keeps its cores busy without traffic, and a baseline taken
        with it running would subtract the DUT's own cost. The watts are
        subtracted from later trials' energy if the [energy] baseline setting is on.
        """
        self.check()
        secs = self.settings.baseline_s if seconds is None else float(seconds)
        if secs <= 0:
            raise MeterError(f"baseline of {secs!r} s: give a positive duration")
        started = self._start_meters()
        time.sleep(secs)
        readings, errors = self._stop_meters(started)
        self._started = []
        self.baseline_watts = {n: r.mean_watts for n, r in readings.items()
                               if r.mean_watts is not None}
        self.baseline_info = {
            "duration_s": round(secs, 3), "taken_at": time.time(),
            "watts": {n: sig(w) for n, w in self.baseline_watts.items()},
            "errors": {**self._start_errors, **errors},
        }
        return dict(self.baseline_info)

    # -- per trial ------------------------------------------------------------
    def _start_meters(self) -> list[Meter]:
        started, self._start_errors = [], {}
        for m in self.meters:
            try:
                m.start()
                started.append(m)
            except MeterError as e:
                self._start_errors[m.name] = str(e)
        return started

    def _stop_meters(self, started: list[Meter]) -> tuple[dict[str, MeterReading], dict[str, str]]:
        readings: dict[str, MeterReading] = {}
        errors: dict[str, str] = {}
        for m in started:
            try:
                readings[m.name] = m.stop()
            except MeterError as e:
                errors[m.name] = str(e)
        return readings, errors

    def start(self, pids: Iterable[int] = ()) -> None:
        """Begin a trial: snapshot CPU accounting and start every meter."""
        self.check()
        self._wall0 = time.time()
        self._started = self._start_meters()
        self.cpu.start(pids)
        self._t0 = time.monotonic()

    def abort(self) -> None:
        """Stop the meters of a trial that failed (no result); safe to call twice."""
        self._stop_meters(self._started)
        self._started = []
        self.cpu._started = False

    def stop(self, pids: Iterable[int] = (), packets: int | None = None,
             window_s: float | None = None) -> dict[str, Any]:
        """End the trial; ``packets``: packets the DUT forwarded (e.g. the trial's rx).

        ``window_s`` [s]: the part of the metered interval the packets belong to (the
        measured trial, without the generator's warm-up and drain). Energy figures
        are then mean power over the whole interval x ``window_s``, so joules and
        packets cover the same time."""
        cpu = self.cpu.stop(pids, packets)
        readings, errors = self._stop_meters(self._started)
        errors = {**self._start_errors, **errors}
        self._started = []
        energy = self._energy(readings, errors, packets, window_s)
        warnings = [f"meter {n}: {e}" for n, e in errors.items()]
        warnings += [n for n in cpu["notes"] if n.startswith("steal")]
        idle_dut = self._idle_dut_note(cpu, packets)
        if idle_dut:
            cpu["notes"].append(idle_dut)
            warnings.append(idle_dut)
        return {"schema": METERS_SCHEMA_VERSION, "started_at": round(self._wall0, 3),
                "cpu": cpu, "energy": energy, "warnings": warnings}

    @staticmethod
    def _idle_dut_note(cpu: dict[str, Any], packets: int | None) -> str | None:
        """The DUT's CPUs idle while packets were forwarded: the work ran elsewhere."""
        dur = cpu["duration_s"] or 0.0
        if not packets or dur <= 0 or packets / dur < 1000:
            return None
        if cpu["dut"]["busy_cores"] >= 0.05:
            return None
        text = (f"the DUT CPUs ({cpu['dut']['cpus']}) were {cpu['dut']['busy_cores']:.1%} busy "
                f"while {packets / dur:,.0f} pps were forwarded: the work ran on other CPUs. ")
        if cpu.get("dut_host"):         # a DUT host over SSH (CpuAccounting's record)
            return text + (f"On {cpu['dut_host']} the kernel receives where the DUT ports' "
                           f"IRQs are: point them at the DUT CPUs (docs/testbeds.md, CPUs)")
        return text + ("On veth the kernel forwards in the softirq of the sending CPU (the "
                       "generator's) unless RPS on the DUT's interfaces steers it to the DUT CPUs")

    def _energy(self, readings: dict[str, MeterReading], errors: dict[str, str],
                packets: int | None, window_s: float | None = None) -> dict[str, Any]:
        subtract = self.settings.baseline and bool(self.baseline_watts)
        per_meter: dict[str, Any] = {}
        for name, r in readings.items():
            d = r.to_dict()
            bw = self.baseline_watts.get(name)
            d["baseline_watts"] = None if bw is None else sig(bw)
            d["joules_net"] = (None if r.joules is None or bw is None
                               else sig(r.joules - bw * r.duration_s))
            per_meter[name] = d
        for name, e in errors.items():
            per_meter[name] = {"source": name, "error": e}

        primary = next((m.name for m in self.meters
                        if m.name in readings and readings[m.name].joules is not None), None)
        out: dict[str, Any] = {
            "source": primary, "measured": None, "label": None, "joules": None,
            "mean_watts": None, "joules_gross": None, "mean_watts_gross": None,
            "duration_s": None, "baseline_watts": None, "baseline_subtracted": False,
            "packets": packets, "packets_per_joule": None, "joules_per_mpkt": None,
            "scope": None, "notes": [], "meters": per_meter,
        }
        if primary is None:
            out["notes"].append("no meter produced an energy figure for this trial")
            return out
        r = readings[primary]
        gross = float(r.joules)   # type: ignore[arg-type]
        bw = self.baseline_watts.get(primary) if subtract else None
        net = gross - bw * r.duration_s if bw is not None else gross
        notes = list(r.notes)
        if subtract and bw is None:
            notes.append(f"no idle baseline for {primary}: energy is gross")
        if bw is not None:
            notes.append(f"idle baseline of {bw:.2f} W subtracted")
        if primary != "cpu-model" and self.cpu.gen_cpus and self.dut_exec is None:
            notes.append(f"the meter covers the whole host, including the traffic generator "
                         f"on CPUs {_fmt_cpus(self.cpu.gen_cpus)}")
        scope = _SCOPE.get(primary, primary)
        on = f" of the DUT host {self.dut_host}" if self.dut_exec is not None else ""
        if primary == "cpu-model":
            scope = f"DUT CPUs {_fmt_cpus(self.cpu.dut_cpus)}{on} only, modelled from busy time"
        elif primary == "rapl":
            scope = f"CPU package(s) and DRAM{on or ' of the host'}"
        elif primary == "ipmi" and self.settings.ipmi.interface == "lanplus":
            scope = f"whole host at its power supplies (BMC {self.settings.ipmi.host})"
        elif primary == "command" and self.dut_exec is not None:
            scope += " (the command ran on the tester)"
        dur = r.duration_s
        metered_s = dur
        if window_s is not None and 0 < window_s < dur:
            # mean power is a property of the whole interval; the packets only of the window
            scale = window_s / dur
            notes.append(f"energy of the measured {window_s:g} s: mean power over the "
                         f"{dur:.3f} s metered (warm-up and drain included) x {window_s:g} s")
            gross, net, dur = gross * scale, net * scale, window_s
        out.update({
            "measured": r.measured, "label": r.label,
            "joules": sig(net), "mean_watts": sig(net / dur) if dur > 0 else None,
            "joules_gross": sig(gross),
            "mean_watts_gross": sig(gross / dur) if dur > 0 else None,
            "duration_s": sig(dur), "metered_s": sig(metered_s),
            "baseline_watts": None if bw is None else sig(bw),
            "baseline_subtracted": bw is not None, "scope": scope, "notes": notes,
        })
        if packets is not None and packets > 0:
            if net > 0:
                out["packets_per_joule"] = sig(packets / net)
                out["joules_per_mpkt"] = sig(net / (packets / 1e6))
            else:
                after = " after baseline subtraction" if bw is not None else ""
                notes.append(f"energy{after} is {net:.3f} J (not above 0): no per-packet figures")
        return out
