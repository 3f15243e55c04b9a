"""A trial's ``meters`` record (CPU and energy) flattened into report fields."""
from __future__ import annotations

import math
from typing import Any


def _num(d: Any, *keys: str) -> float | None:
    """The first numeric value among `keys` in dict `d` (None if none)."""
    if not isinstance(d, dict):
        return None
    for k in keys:
        v = d.get(k)
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            return float(v)
    return None


def _share(v: float | None) -> float | None:
    """Utilisation given as % (0..100 * n) or as a share (0..1): -> share."""
    if v is None:
        return None
    return v / 100.0 if v > 1.5 else v


def meter_fields(meters: dict[str, Any], packets: int) -> dict[str, Any]:
    """Flatten a trial's ``meters`` dict (CPU and energy) into report fields.

    Every key is optional: a store written without meters, or by an older
    meter, still reports; missing values are None.
    """
    cpu = meters.get("cpu") if isinstance(meters, dict) else None
    energy = meters.get("energy") if isinstance(meters, dict) else None
    out: dict[str, Any] = {}
    util = steal = softirq = cpp = None
    cpp_est = False
    if isinstance(cpu, dict):
        dut = cpu.get("dut") if isinstance(cpu.get("dut"), dict) else None
        util = _share(_num(dut, "util", "busy", "utilisation", "utilization")
                      if dut else None)
        if util is None:
            util = _share(_num(cpu, "dut_util", "dut_busy", "dut_utilisation",
                               "dut_utilization", "util", "busy"))
        if util is None and isinstance(cpu.get("per_cpu"), (dict, list)):
            util = _per_cpu_dut_util(cpu)
        softirq = _share(_num(dut, "softirq_share", "softirq") if dut else None)
        if softirq is None:
            softirq = _share(_num(cpu, "softirq_share", "dut_softirq_share", "softirq"))
        steal = _share(_num(dut, "steal") if dut else None)
        if steal is None:
            steal = _share(_num(cpu, "steal", "steal_share", "max_steal"))
        cpp = _num(cpu, "cycles_per_packet", "cycles_per_packet_estimated")
        if cpp is None and dut:
            cpp = _num(dut, "cycles_per_packet", "cycles_per_packet_estimated")
        cpp_est = "cycles_per_packet" not in cpu and cpp is not None
        if isinstance(cpu.get("cycles_estimated"), bool):
            cpp_est = cpu["cycles_estimated"]
    out.update(dut_cpu_util=util, softirq_share=softirq, steal=steal,
               cycles_per_packet=cpp, cycles_estimated=cpp_est)
    joules = watts = ppj = jpm = None
    source = None
    measured = None
    if isinstance(energy, dict):
        joules = _num(energy, "joules", "energy_j")
        watts = _num(energy, "mean_watts", "watts")
        ppj = _num(energy, "packets_per_joule")
        jpm = _num(energy, "joules_per_mpkt")
        if ppj is None and joules and packets:
            ppj = packets / joules
        if jpm is None and joules is not None and packets:
            jpm = joules / (packets / 1e6)
        src = energy.get("source")
        source = str(src) if src is not None else None
        if isinstance(energy.get("measured"), bool):
            measured = energy["measured"]
        elif source is not None:
            measured = source not in ("cpu-model", "model", "modelled")
    scope = energy.get("scope") if isinstance(energy, dict) else None
    baseline = bool(energy.get("baseline_subtracted")) if isinstance(energy, dict) else False
    out.update(joules=joules, mean_watts=watts, packets_per_joule=ppj, joules_per_mpkt=jpm,
               energy_source=source, energy_measured=measured,
               energy_scope=str(scope) if scope else None, baseline_subtracted=baseline)
    return out


def _per_cpu_dut_util(cpu: dict) -> float | None:
    per = cpu.get("per_cpu")
    dut_cpus = cpu.get("dut_cpus")
    items: list[tuple[str, Any]]
    if isinstance(per, dict):
        items = list(per.items())
    else:
        items = [(str(x.get("cpu", i)), x) for i, x in enumerate(per) if isinstance(x, dict)]
    vals = []
    for k, v in items:
        if dut_cpus is not None and str(k) not in {str(c) for c in dut_cpus}:
            continue
        u = _share(_num(v, "util", "busy", "utilisation", "utilization"))
        if u is not None:
            vals.append(u)
    return sum(vals) / len(vals) if vals else None
