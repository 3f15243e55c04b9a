"""`fwdbench plan`: the expanded matrix, trial count and estimated duration."""
from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from .campaign import Campaign, Scenario
from .units import fmt_duration, fmt_pps, parse_duration

TRIAL_OVERHEAD_S = 0.3      # target of the core issue: everything but traffic
DUT_SETUP_S = 2.0


def estimate_trials(search: dict[str, Any]) -> tuple[int, float]:
    """(trials, traffic seconds) of one repetition; adaptive searches are estimated."""
    kind = search.get("type")
    dur = float(search.get("trial_duration_s") or search.get("final_trial_duration_s") or 1.0)
    lat = search.get("latency") or None
    lat_n = len(lat["fractions"]) * lat["repetitions"] if lat else 0
    lat_s = lat_n * lat["trial_duration_s"] if lat else 0.0
    if kind == "sweep":
        if search.get("loads_pps"):
            n_loads = len(search["loads_pps"])
        elif search.get("pdr_fractions"):
            n_loads = len(search["pdr_fractions"])
        else:
            n_loads = int((search["stop_pps"] - search["start_pps"]) / search["step_pps"]) + 1
        n = n_loads * int(search.get("repetitions", 1))
        return n, n * dur
    if kind == "binary":
        width = float(search.get("relative_width", 0.005))
        goals = len(search.get("loss_ratios") or [0.0, 0.005])
        n = goals * (math.ceil(math.log2(1 / width)) + 2) + (goals if search.get("verify") else 0)
        return n + lat_n, n * dur + lat_s
    if kind == "mlr":
        # MLRsearch: short trials first, then about duration_sum per goal at the final
        # duration around each bound (CSIT runs take ~30 trials for 2 goals).
        goals = len(search.get("loss_ratios") or [0.0, 0.005])
        dsum = float(search.get("duration_sum_s", 21.0))
        fin = float(search.get("final_trial_duration_s", 1.0))
        n = 10 * goals + int(2 * goals * dsum / fin)
        return n + lat_n, 10 * goals * float(search.get("initial_trial_duration_s", 1.0)) \
            + 2 * goals * dsum + lat_s
    return 1, dur


def scenario_estimate(sc: Scenario) -> tuple[int, float]:
    n, traffic = estimate_trials(sc.search)
    per_trial = parse_duration(sc.trial.warmup) + parse_duration(sc.trial.drain) + TRIAL_OVERHEAD_S
    return n, traffic + n * per_trial


def plan_table(c: Campaign) -> tuple[Table, int, float]:
    t = Table(title=f"campaign {c.name}: {len(c.scenarios)} scenarios x "
                    f"{c.repetitions} repetitions", show_lines=False)
    for col in ("#", "scenario", "dut", "mode", "link", "profile", "frame", "dir", "search",
                "max load", "trials/rep"):
        t.add_column(col, justify="right" if col in ("#", "trials/rep") else "left")
    total_trials, total_s = 0, 0.0
    for sc in c.scenarios:
        n, secs = scenario_estimate(sc)
        total_trials += n * c.repetitions
        total_s += secs * c.repetitions + DUT_SETUP_S
        if sc.trial.warmup_trial:
            total_trials += 1
            total_s += max(parse_duration(sc.trial.warmup), 1.0)
        t.add_row(str(sc.idx + 1), sc.name, f"{sc.dut.name} ({sc.dut.type})",
                  str(sc.dut.params.get("mode", "-")), sc.dut.link or "-",
                  f"{sc.profile.name} {sc.profile.l3}",
                  str(sc.profile.frame_size), sc.profile.direction,
                  str(sc.search.get("type")), fmt_pps(sc.max_load_pps), f"~{n}")
    return t, total_trials, total_s


def plan_dict(c: Campaign) -> dict:
    _, trials, secs = plan_table(c)
    return {
        "campaign": c.name, "repetitions": c.repetitions,
        "scenarios": [{"idx": sc.idx, "name": sc.name, "dut": sc.dut.model_dump(),
                       "profile": sc.profile.model_dump(), "search": sc.search,
                       "axes": sc.axes, "max_load_pps": sc.max_load_pps}
                      for sc in c.scenarios],
        "estimated_trials": trials, "estimated_seconds": secs,
    }


LONG_CAMPAIGN_S = 7 * 86_400     # plan warns above a week


def long_campaign_warning(secs: float) -> str | None:
    if secs <= LONG_CAMPAIGN_S:
        return None
    return (f"this campaign is estimated to take {secs / 86_400:,.0f} days; check that the "
            "matrix, repetitions and trial durations are what you meant")


def fmt_total(trials: int, secs: float) -> str:
    return f"about {trials} trials, about {fmt_duration(secs)}"
