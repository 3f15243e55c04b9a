"""The report page: one self-contained HTML file (jinja2, autoescaped).

Every string that came from a user (campaign, DUT and profile names, the
campaign file, DUT descriptions) passes through jinja2's autoescape; the
only markup inserted unescaped is the SVG matplotlib wrote, whose text
matplotlib escapes itself. The page loads nothing: no scripts, fonts or
images from anywhere, so it opens offline and prints as it shows.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from .. import __version__
from . import numbers as nb
from .compare import ratio_ci_text
from .topology import topologies
from .figures import FigureSet
from .model import NDR_GOAL, PDR_GOAL, ReportModel, goal_label

SECTIONS = (
    ("summary", "Summary"),
    ("throughput", "Throughput"),
    ("curves", "Load-loss curves"),
    ("latency", "Latency"),
    ("cpu-energy", "CPU and energy"),
    ("thesis-table", "Traffic and energy table"),
    ("environment", "Environment"),
    ("warnings", "Warnings"),
    ("data", "Data files"),
)


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("fwdbench.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "html.j2"),
                                     default_for_string=True, default=True),
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(
        mpps=nb.mpps, gbps=nb.gbps, us=nb.us, pct=nb.pct, integer=nb.integer, sig=nb.sig,
        duration=nb.duration, ci=nb.ci_text, pval=nb.p_value, goal_label=goal_label,
        pretty_json=lambda v: json.dumps(v, indent=2, sort_keys=True, default=str),
        timestamp=_timestamp, value=_value, frame=_frame, ratio_ci=ratio_ci_text)
    return env


def _timestamp(t: float | None) -> str:
    if not t:
        return "–"
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _value(v: Any) -> str:
    """A describe()/host value for a table cell."""
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    if v is None:
        return "–"
    return str(v)


def _frame(fs: Any) -> str:
    return f"{fs} B" if isinstance(fs, int) else str(fs).upper()


def _dut_versions(m: ReportModel) -> list[dict[str, Any]]:
    """One entry per DUT: type, parameters and what its driver's describe() said."""
    out: dict[str, dict[str, Any]] = {}
    for s in m.scenarios:
        d = out.setdefault(s.dut_name, {"name": s.dut_name, "type": s.dut_type,
                                        "params": s.dut_params, "describe": {}})
        if s.describe and not d["describe"]:
            d["describe"] = s.describe
    return list(out.values())


def _bitrates(m: ReportModel) -> list[dict[str, Any]]:
    rows = []
    for s in m.scenarios:
        goal = s.headline_goal
        if goal is None:
            continue
        e = s.goals[goal].estimate
        if e.mean is None:
            continue
        rows.append({"s": s, "goal": goal, "pps": e.mean,
                     "l1": nb.l1_bps(e.mean, s.frame_size) * s.streams,
                     "l2": nb.l2_bps(e.mean, s.frame_size) * s.streams,
                     "l1_dir": nb.l1_bps(e.mean, s.frame_size)})
    return rows


def render(m: ReportModel, figs: FigureSet, *, data_files: list[dict[str, str]],
           compare: dict[str, Any] | None = None) -> str:
    env = environment()
    tpl = env.get_template("index.html.j2")
    table_goals = sorted(set(m.goals) | {NDR_GOAL, PDR_GOAL})     # NDR first, by loss ratio
    energy_flags = {r.thesis.energy_measured for r in m.scenarios
                    if r.thesis and r.thesis.energy_j is not None}
    return tpl.render(
        m=m, figs=figs, sections=SECTIONS, table_goals=table_goals, pdr_goal=PDR_GOAL,
        dut_versions=_dut_versions(m), bitrates=_bitrates(m), data_files=data_files,
        topologies=topologies(m.scenarios, m.placement),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        report_version=__version__, energy_flags=energy_flags, compare=compare,
        warn_counts=_warn_counts(m),
        sweep_derived=any(r.source == "sweep" for s in m.scenarios for r in s.goals.values()),
        ci_below_zero=any(r.estimate.low is not None and r.estimate.low < 0
                          for s in m.scenarios for r in s.goals.values()))


def _warn_counts(m: ReportModel) -> dict[str, int]:
    out: dict[str, int] = {}
    for w in m.warnings:
        out[w.kind] = out.get(w.kind, 0) + 1
    return out


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
