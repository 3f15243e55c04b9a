"""``fwdbench meters``: which energy meters this host has, and why not the others."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cpu import nominal_frequency, read_proc_stat
from .rapl import RaplMeter
from .settings import EnergySettings
from .session import build_meter

PERF_POWER = "/sys/bus/event_source/devices/power"


@dataclass(frozen=True)
class MeterStatus:
    name: str
    available: bool
    measured: bool
    reason: str
    used_by_fwdbench: bool = True     # False: informational (no fwdbench meter reads it)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def virtualised() -> str | None:
    """A short description if this host looks like a VM, else None."""
    try:
        if " hypervisor" in Path("/proc/cpuinfo").read_text():
            hv = ""
            try:
                hv = Path("/sys/hypervisor/type").read_text().strip()
            except OSError:
                pass
            return f"virtual machine{' (' + hv + ')' if hv else ''}"
    except OSError:
        pass
    return None


def perf_power_status(path: str = PERF_POWER) -> MeterStatus:
    p = Path(path)
    if not p.is_dir():
        return MeterStatus("perf power PMU", False, True,
                           f"no {path}: the kernel exposes no RAPL events to perf either",
                           used_by_fwdbench=False)
    events = sorted(e.name for e in (p / "events").glob("energy-*") if not e.name.endswith(
        (".scale", ".unit")))
    return MeterStatus("perf power PMU", True, True,
                       f"{path} has {', '.join(events) or 'no energy events'}; these are the "
                       f"RAPL counters the rapl meter reads through powercap",
                       used_by_fwdbench=False)


def probe(settings: EnergySettings | None = None) -> list[MeterStatus]:
    """Every meter fwdbench knows, probed on this host."""
    settings = settings or EnergySettings()
    vm = virtualised()
    out: list[MeterStatus] = []

    rapl = RaplMeter(root=settings.rapl.root, domains=settings.rapl.domains)
    ok, why = rapl.available()
    if not ok and vm:
        why += f"; this host is a {vm}"
    out.append(MeterStatus("rapl", ok, True, why))
    out.append(perf_power_status())

    ok, why = build_meter("ipmi", settings, []).available()
    if not ok and vm and settings.ipmi.interface == "open":
        why += f"; a {vm} normally has no BMC of its own"
    out.append(MeterStatus("ipmi", ok, True, why))

    if settings.command is None:
        out.append(MeterStatus("command", False, True,
                               "not configured: set [energy.command] argv to a program that "
                               "prints watts or joules (smart PDU, lab power meter)"))
    else:
        ok, why = build_meter("command", settings, []).available()
        out.append(MeterStatus("command", ok, True, why))

    model = build_meter("cpu-model", settings, [])
    ok, why = model.available()
    out.append(MeterStatus("cpu-model", ok, False, why))
    return out


def _freq_line() -> str:
    try:
        cpus = sorted(read_proc_stat())
    except OSError:
        return "CPU frequency: unknown"
    hz, src = nominal_frequency(cpus[0])
    if hz is None:
        return f"nominal CPU frequency: {src}"
    return f"nominal CPU frequency (for cycles per packet): {hz / 1e9:.3f} GHz from {src}"


def meters_cmd(settings: EnergySettings | None = None) -> int:
    """Print a table of the meters on this host. Returns the exit status (0)."""
    from rich.table import Table
    from rich.text import Text

    from ..text import console as make_console

    statuses = probe(settings)
    console = make_console(no_color=not sys.stdout.isatty())
    table = Table(title="Energy meters on this host", show_lines=True)
    table.add_column("meter", style="bold")
    table.add_column("available")
    table.add_column("kind")
    table.add_column("details / why not")
    for s in statuses:
        kind = "measured" if s.measured else "modelled"
        if not s.used_by_fwdbench:
            kind = "info only"
        table.add_row(s.name, Text("yes", "green") if s.available else Text("no", "red"), kind,
                      s.reason)
    console.print(table)
    primary = next((s for s in statuses if s.available and s.used_by_fwdbench
                    and s.measured), None)
    if primary:
        console.print(Text.assemble("energy figures will be ", ("measured", "bold"),
                                    f" by {primary.name} (meters = 'auto')"))
    else:
        console.print(Text.assemble(
            "energy figures will be ", ("modelled", "bold"), " (cpu-model): no measuring meter "
            "on this host; reports label them 'modelled'. Attach a meter with "
            "[energy.command] or run on hardware with RAPL or a BMC to measure."))
    vm = virtualised()
    if vm:
        console.print(f"host: {vm}")
    console.print(_freq_line())
    return 0
