"""PASTRAMI-style figure of one load-loss curve (matplotlib, Agg backend).

Top: mean PLR on a log axis (bottom 2e-7; zero loss drawn at the 1e-6
floor) with the 95 % confidence band and each repetition as a faint dot, a
line at 0.5 %, markers at PDR@0.5% and at the saturation load, and the
verdict (GOOD / BAD, with "no saturation in the measured range" where that is why) written on the plot. Bottom:
mean delivery ratio on a linear axis with a line at 99.5 %.
Colours are the Okabe-Ito colour-blind-safe palette; the verdict is text,
never colour alone.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import LogLocator, NullLocator  # noqa: E402

from fwdbench.analysis.pastrami import PDR_LOSS_RATIO, PLR_LOG_FLOOR, Assessment, LoadLossCurve  # noqa: E402

PLR_AXIS_BOTTOM = 2e-7
OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "vermillion": "#D55E00",
             "sky": "#56B4E9", "green": "#009E73", "grey": "#999999", "black": "#000000"}
VERDICT_COLOUR = {"GOOD": OKABE_ITO["blue"], "BAD": OKABE_ITO["vermillion"]}


def _load_scale(max_load: float) -> tuple[float, str]:
    if max_load >= 1e6:
        return 1e6, "Mpps"
    if max_load >= 1e3:
        return 1e3, "kpps"
    return 1.0, "pps"


def plot_curve(curve: LoadLossCurve, assessment: Assessment, path: Path | str,
               title: str | None = None) -> Path:
    """Write the figure to ``path`` (format from its suffix: .svg, .png, .pdf)."""
    path = Path(path)
    loads = curve.loads_pps
    scale, unit = _load_scale(float(loads.max()) if loads.size else 1.0)
    x = loads / scale
    plr = np.maximum(curve.plr_mean, PLR_LOG_FLOOR)
    has_ci = ~np.isnan(curve.plr_ci_high)
    with plt.rc_context({"svg.fonttype": "none"}):      # keep text as text in SVG
        return _draw(curve, assessment, path, title, x, scale, unit, plr, has_ci)


def _draw(curve: LoadLossCurve, assessment: Assessment, path: Path, title: str | None,
          x: np.ndarray, scale: float, unit: str, plr: np.ndarray, has_ci: np.ndarray) -> Path:
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7.0, 6.0),
                                   gridspec_kw={"height_ratios": [3, 2]})
    try:
        # runs
        rx_, ry_ = [], []
        for xi, runs in zip(x, curve.plr_runs):
            rx_.extend([xi] * runs.size)
            ry_.extend(np.maximum(runs, PLR_LOG_FLOOR))
        ax1.scatter(rx_, ry_, s=6, color=OKABE_ITO["sky"], alpha=0.35, linewidths=0,
                    label="repetitions", zorder=1)
        if has_ci.any():
            lo = np.clip(curve.plr_ci_low, PLR_AXIS_BOTTOM, 1.0)
            hi = np.clip(curve.plr_ci_high, PLR_AXIS_BOTTOM, 1.0)
            ax1.fill_between(x[has_ci], lo[has_ci], hi[has_ci], color=OKABE_ITO["blue"],
                             alpha=0.2, linewidth=0, label="95% CI of the mean", zorder=2)
        ax1.plot(x, plr, marker="o", ms=3, color=OKABE_ITO["blue"], label="mean PLR", zorder=3)
        ax1.axhline(PDR_LOSS_RATIO, color=OKABE_ITO["orange"], ls="--", lw=1,
                    label="PLR 0.5%")
        ax1.set_yscale("log")
        ax1.set_ylim(bottom=PLR_AXIS_BOTTOM, top=1.5)
        ax1.yaxis.set_major_locator(LogLocator(base=10.0, numticks=9))
        ax1.yaxis.set_minor_locator(NullLocator())      # decades only: readable and fast
        ax1.set_ylabel("packet loss ratio [1] (log)")
        for ax in (ax1, ax2):
            if assessment.pdr_pps is not None:
                ax.axvline(assessment.pdr_pps / scale, color=OKABE_ITO["green"], ls=":", lw=1)
            if assessment.saturation_load_pps is not None:
                ax.axvline(assessment.saturation_load_pps / scale, color=OKABE_ITO["black"],
                           ls="-.", lw=0.8)
        verdict_text = assessment.label + f"  (rule: {assessment.rule})"
        ax1.text(0.02, 0.95, verdict_text, transform=ax1.transAxes, va="top", ha="left",
                 fontsize=14, fontweight="bold", color=VERDICT_COLOUR[assessment.verdict],
                 bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        notes = []
        if assessment.pdr_pps is not None:
            notes.append(f"PDR@0.5% = {assessment.pdr_pps / scale:.4g} {unit} (dotted)")
        if assessment.saturation_load_pps is not None:
            notes.append(f"saturation at {assessment.saturation_load_pps / scale:.4g} {unit} (dash-dot)")
        notes.append("zero loss drawn at 1e-6")
        if notes:
            ax1.text(0.02, 0.82, "\n".join(notes), transform=ax1.transAxes, va="top",
                     ha="left", fontsize=8)
        ax1.legend(loc="lower right", fontsize=8)
        ax1.grid(True, which="major", alpha=0.3)

        dr = curve.dr_mean
        ax2.plot(x, dr, marker="o", ms=3, color=OKABE_ITO["vermillion"], label="mean DR")
        if has_ci.any():
            ax2.fill_between(x[has_ci], (1.0 - curve.plr_ci_high)[has_ci],
                             (1.0 - curve.plr_ci_low)[has_ci], color=OKABE_ITO["vermillion"],
                             alpha=0.2, linewidth=0)
        ax2.axhline(1.0 - PDR_LOSS_RATIO, color=OKABE_ITO["orange"], ls="--", lw=1,
                    label="DR 99.5%")
        ax2.set_ylabel("delivery ratio [1]")
        ax2.set_xlabel(f"offered load [{unit}]")
        ax2.legend(loc="lower left", fontsize=8)
        ax2.grid(True, alpha=0.3)
        fig.suptitle(title or curve.name or "load-loss curve", fontsize=10)
        fig.subplots_adjust(left=0.12, right=0.97, top=0.93, bottom=0.09, hspace=0.08)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
