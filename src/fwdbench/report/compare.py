"""Two campaigns side by side: B relative to A, scenario by scenario.

Scenarios are matched by name ("DUT profile axis=value ..."), so two runs of
the same campaign file (two versions of a DUT, two kernels) line up. For
every goal both campaigns report, the ratio of means B / A comes with its
95 % CI (Fieller) and Welch's p-value, from ``fwdbench.analysis.compare``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from . import analysis_bridge as ab
from .figures import RC, Figure, FigureWriter, tex_safe
from .model import LossGoal, ReportModel, goal_label
from .numbers import interval_text


@dataclass
class CompareRow:
    scenario: str
    goal: LossGoal
    a: float | None
    b: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    p: float | None
    significant: bool | None
    n_a: int
    n_b: int


@dataclass
class Comparison:
    a_name: str
    b_name: str
    a_link: str
    b_link: str | None
    rows: list[CompareRow]
    only_a: list[str]
    only_b: list[str]
    figures: list[Figure] = field(default_factory=list)

    def as_context(self) -> dict[str, Any]:
        return dict(self.__dict__)


def compare_models(a: ReportModel, b: ReportModel, *, a_link: str,
                   b_link: str | None = None) -> Comparison:
    sa = {s.name: s for s in a.scenarios}
    sb = {s.name: s for s in b.scenarios}
    rows: list[CompareRow] = []
    for s in b.scenarios:
        other = sa.get(s.name)
        if other is None:
            continue
        for goal in sorted(set(s.goals) & set(other.goals)):
            ea, eb = other.goals[goal].estimate, s.goals[goal].estimate
            if not ea.values or not eb.values:
                continue
            c = ab.comparison(ea.values, eb.values)
            rows.append(CompareRow(s.name, goal, ea.mean, eb.mean, c.ratio, c.ci_low,
                                   c.ci_high, c.p_value, c.significant, ea.n, eb.n))
    a_name, b_name = a.name, b.name
    if a_name == b_name:                      # two runs of one campaign: name the files
        a_name, b_name = f"{a.name} ({a.db_path.stem})", f"{b.name} ({b.db_path.stem})"
    return Comparison(a_name, b_name, a_link, b_link, rows,
                      [n for n in sa if n not in sb], [n for n in sb if n not in sa])


def ratio_ci_text(r: CompareRow) -> str:
    """The ratio's 95 % CI as the table prints it (interval_text: '< 0' below
    zero); 'unbounded' when Fieller's interval is (A's mean not significantly
    different from 0); '–' without two repetitions on each side."""
    if r.ratio_low is None or r.ratio_high is None:
        return "unbounded" if r.ratio is not None and min(r.n_a, r.n_b) >= 2 else "–"
    return interval_text(r.ratio_low, r.ratio_high)


#: the ratio axis ends at this multiple of the largest ratio (at least 2):
#: a 2-repetition interval can reach 2000x and would squeeze every point to 1
AXIS_SPAN = 2.0


def ratio_figure(c: Comparison, w: FigureWriter) -> Figure | None:
    rows = [r for r in c.rows if r.ratio is not None]
    if not rows:
        return None
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.2, 0.32 * len(rows) + 1.2))
        y = np.arange(len(rows))[::-1]
        right = AXIS_SPAN * max(max(r.ratio for r in rows), 1.0)
        for yi, r in zip(y, rows):
            marker = "o" if r.goal.is_ndr else "s"
            face = "black" if r.significant else "white"
            bounded = r.ratio_low is not None and r.ratio_high is not None
            lo = max(r.ratio_low, 0.0) if bounded else 0.0
            hi = min(r.ratio_high, right) if bounded else right
            # an interval cut by the axis (or unbounded) ends in an arrow head
            ax.plot([lo, hi], [yi, yi], color="black", linewidth=1.0,
                    linestyle="-" if bounded else ":")
            if not bounded or r.ratio_high > right:
                ax.plot([right], [yi], marker=">", color="black", markersize=4, clip_on=False)
            if bounded and r.ratio_low >= 0:
                ax.plot([lo], [yi], marker="|", color="black", markersize=6)
            if bounded and r.ratio_high <= right:
                ax.plot([hi], [yi], marker="|", color="black", markersize=6)
            ax.plot([r.ratio], [yi], marker=marker, color="black", markerfacecolor=face,
                    linestyle="none")
        ax.set_xlim(0.0, right)
        ax.axvline(1.0, color="#555555", linewidth=0.9, linestyle="--")
        ax.set_yticks(y)
        ax.set_yticklabels([tex_safe(f"{r.scenario} · {goal_label(r.goal)}") for r in rows])
        ax.set_xlabel(tex_safe(f"Throughput ratio {c.b_name} / {c.a_name} [1]"))
        ax.grid(axis="y", visible=False)
        fig.tight_layout()
        return w.save(fig, "compare_ratios", "Throughput ratio B / A per scenario and goal",
                      "Ratio of means with its 95 % confidence interval (Fieller); filled "
                      "markers are significant (Welch's t-test, p < 0.05); circles NDR, "
                      "squares PDR. The axis starts at 0 and ends at twice the largest "
                      "ratio: an interval reaching past it ends in an arrow, an unbounded "
                      "one is dotted.", "derived")
