"""The report's figures: one style, colour-blind-safe, readable in greyscale.

Every DUT keeps one colour (Okabe-Ito), one marker, one line style and one
hatch in every figure, so a figure printed in black and white still tells
the DUTs apart. Every axis carries its unit. Each figure is written as SVG
(for the web page, embedded inline) and PDF (for papers) under
``out/figures/``.
"""
from __future__ import annotations

import io
import multiprocessing as mp
import os
import re
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from markupsafe import Markup, escape  # noqa: E402
from matplotlib.ticker import (FixedLocator, FuncFormatter, NullFormatter,  # noqa: E402
                               NullLocator)

from .model import (NDR_GOAL, PDR_GOAL, Group, ReportModel, ScenarioReport,  # noqa: E402
                    goal_label)
from .numbers import l1_bps, l2_bps  # noqa: E402

# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
             "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1)),
              (0, (5, 3, 1, 3)))
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "+++", "ooo", "---")
PLR_FLOOR = 1e-6            # zero loss is drawn here on the log axis
PLR_BOTTOM = 2e-7           # bottom of the log PLR axis (PASTRAMI)
MAX_COLS = 4                # DUT panels per row in small multiples

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "lines.linewidth": 1.5,
    "lines.markersize": 4.5,
    "legend.frameon": False,
    "svg.fonttype": "none",      # text stays text: small, searchable, selectable
    "pdf.fonttype": 42,          # TrueType in PDFs (editable, accepted by publishers)
    "figure.dpi": 100,
}


def tex_safe(s: Any) -> str:
    """User text for matplotlib: '$' would start mathtext, a leading '_' hides a legend entry."""
    t = str(s).replace("$", r"\$")
    return "\u200b" + t if t.startswith("_") else t


@dataclass
class Figure:
    name: str                   # file stem under figures/
    title: str
    caption: str
    svg: Markup                 # inline SVG markup (matplotlib escapes all text in it)
    basis: str = "measured"     # measured | derived | modelled | mixed
    files: dict[str, str] = field(default_factory=dict)   # format -> path relative to out/


class DutStyle:
    """One colour, marker, line style and hatch per DUT, the same in every figure."""

    def __init__(self, duts: Iterable[str]):
        self.index = {d: i for i, d in enumerate(dict.fromkeys(duts))}

    def _i(self, dut: str) -> int:
        if dut not in self.index:
            self.index[dut] = len(self.index)
        return self.index[dut]

    def color(self, dut: str) -> str:
        return OKABE_ITO[self._i(dut) % len(OKABE_ITO)]

    def marker(self, dut: str) -> str:
        return MARKERS[self._i(dut) % len(MARKERS)]

    def linestyle(self, dut: str):
        return LINESTYLES[self._i(dut) % len(LINESTYLES)]

    def hatch(self, dut: str) -> str:
        return HATCHES[self._i(dut) % len(HATCHES)]

    def line(self, dut: str, *, hollow: bool = False) -> dict[str, Any]:
        c = self.color(dut)
        return {"color": c, "marker": self.marker(dut), "linestyle": self.linestyle(dut),
                "markerfacecolor": "white" if hollow else c, "markeredgecolor": c}


_SVG_HEAD = re.compile(r"^.*?(<svg\b)", re.S)
_SVG_SIZE = re.compile(r'\s(width|height)="[^"]*"')


_ID = re.compile(r'\sid="([^"]+)"')
_REF = re.compile(r'#([A-Za-z_][\w.-]*)')


def inline_svg(svg: str, label: str) -> Markup:
    """matplotlib's SVG document -> an element for the page: no XML prolog, scalable,
    and no ids but those the figure refers to (matplotlib's 'axes_1', 'line2d_3' ...
    would repeat across figures on one page)."""
    refs = set(_REF.findall(svg))
    svg = _ID.sub(lambda m: m.group(0) if m.group(1) in refs else "", svg)
    body = _SVG_HEAD.sub(r"\1", svg, count=1)
    end = body.index(">")
    width = re.search(r'\swidth="([0-9.]+)pt"', body[:end])
    tag = _SVG_SIZE.sub("", body[:end])
    tag += f' class="fig" role="img" aria-label="{escape(label)}"'
    if width:     # never wider than drawn (fonts keep their size), narrower on small screens
        tag += f' style="max-width: {float(width.group(1)) * 4 / 3:.0f}px"'
    return Markup(tag + body[end:])


class FigureWriter:
    """Saves figures as SVG + PDF and keeps the inline SVG for the page."""

    def __init__(self, out: Path, pdf: bool = True, simulated: bool = False):
        self.simulated = simulated      # every number comes from a simulated DUT
        self.out = out
        self.dir = out / "figures"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pdf = pdf

    def save(self, fig, name: str, title: str, caption: str, basis: str = "measured") -> Figure:
        buf = io.StringIO()
        with plt.rc_context({"svg.hashsalt": name}):   # ids unique across inline SVGs
            # tight: a figure legend wider than the axes (8 DUTs) is not cut off
            fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight",
                        pad_inches=0.05)
        svg = buf.getvalue()
        (self.dir / f"{name}.svg").write_text(svg, encoding="utf-8")
        files = {"svg": f"figures/{name}.svg"}
        if self.pdf:
            fig.savefig(self.dir / f"{name}.pdf", format="pdf", bbox_inches="tight",
                        pad_inches=0.05, metadata={"CreationDate": None, "Creator": "fwdbench"})
            files["pdf"] = f"figures/{name}.pdf"
        plt.close(fig)
        if self.simulated and basis in ("measured", "derived"):
            basis = "simulated"
        return Figure(name, title, caption, inline_svg(svg, title), basis, files)


# -- helpers ----------------------------------------------------------------------

def _mpps_axis(ax, axis: str = "x") -> None:
    fmt = FuncFormatter(lambda v, _: f"{v / 1e6:g}")
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(fmt)


def _plain_log(ax, axis: str = "y") -> None:
    """Log axis labelled 10, 100, 1000 (no mathtext, no minor labels)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def _grid_shape(n: int) -> tuple[int, int]:
    cols = min(max(n, 1), MAX_COLS)
    rows = (n + cols - 1) // cols
    return rows, cols


def _panel_title(s: ScenarioReport) -> str:
    return tex_safe(s.dut_name)


def _err(est) -> tuple[float, float]:
    if est.low is None or est.mean is None:
        return 0.0, 0.0
    return max(est.mean - est.low, 0.0), max(est.high - est.mean, 0.0)


def _basis(flags: set) -> str:
    flags = {f for f in flags if f is not None}
    if flags == {True}:
        return "measured"
    if flags == {False}:
        return "modelled"
    return "mixed" if flags else "measured"


# -- figures ------------------------------------------------------------------------

def goal_bars(m: ReportModel, st: DutStyle, w: FigureWriter) -> Figure | None:
    goals = list(m.goals)
    groups = [g for g in m.groups if any(s.goals for s in g.scenarios)]
    if not goals or not groups:
        return None
    ng = len(groups)
    width_in = min(max(4.8, 1.6 + 0.42 * ng * max(len(m.duts), 1)), 13)
    fig, axes = plt.subplots(len(goals), 1, figsize=(width_in, 2.5 * len(goals) + 0.6),
                             sharex=True, squeeze=False)
    nd = len(m.duts)
    bw = 0.8 / max(nd, 1)
    for gi, goal in enumerate(goals):
        ax = axes[gi][0]
        for di, dut in enumerate(m.duts):
            xs, ys, lo, hi = [], [], [], []
            for k, g in enumerate(groups):
                s = next((s for s in g.scenarios if s.dut_name == dut), None)
                if s is None or goal not in s.goals or s.goals[goal].estimate.mean is None:
                    continue
                e = s.goals[goal].estimate
                xs.append(k - 0.4 + bw * (di + 0.5))
                ys.append(e.mean)
                a, b = _err(e)
                lo.append(a)
                hi.append(b)
            if not xs:
                continue
            ax.bar(xs, ys, bw * 0.92, color=st.color(dut), hatch=st.hatch(dut),
                   edgecolor="black", linewidth=0.5, label=tex_safe(dut),
                   yerr=[lo, hi], capsize=2.5, error_kw={"elinewidth": 0.9, "ecolor": "black"})
        _mpps_axis(ax, "y")
        ax.set_ylim(bottom=0)          # a rate is not negative; wide t intervals are in the table
        ax.set_ylabel(f"{goal_label(goal)}\n[Mpps per direction]")
        ax.grid(axis="x", visible=False)
    ax = axes[-1][0]
    ax.set_xticks(range(ng))
    ax.set_xticklabels([tex_safe(g.label) for g in groups],
                       rotation=20 if ng > 3 else 0, ha="right" if ng > 3 else "center")
    ax.set_xlabel("Scenario")
    seen: dict[str, Any] = {}
    for row in axes:                   # every DUT once, even one without a bar in row 1
        for h, lab in zip(*row[0].get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="upper center",
                   ncols=min(len(seen), 6), bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return w.save(fig, "throughput_ndr_pdr", "NDR and PDR per DUT and scenario",
                  "Mean over repetitions; whiskers are 95 % confidence intervals (Student's t). "
                  "Loads are per direction.")


def frame_size_lines(m: ReportModel, st: DutStyle, w: FigureWriter) -> Figure | None:
    goal = PDR_GOAL if PDR_GOAL in m.goals else (NDR_GOAL if NDR_GOAL in m.goals else None)
    if goal is None:
        return None
    sizes = m.frame_sizes
    if len(sizes) < 2:                 # one frame size: the table says it all
        return None
    xpos = {fs: i for i, fs in enumerate(sorted(
        sizes, key=lambda f: (isinstance(f, str), f if isinstance(f, int) else 0)))}
    series: dict[tuple, list[ScenarioReport]] = {}
    for s in m.scenarios:
        if goal not in s.goals or s.goals[goal].estimate.mean is None:
            continue
        other = {k: v for k, v in s.profile.items() if k not in ("frame_size", "name")}
        axes_o = {k: v for k, v in s.axes.items() if k not in ("dut", "profile",
                                                               "profile.frame_size")}
        key = (s.dut_name, repr(sorted(other.items())), repr(sorted(axes_o.items())))
        series.setdefault(key, []).append(s)
    if not series:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.0))
    many = len({k[1:] for k in series}) > 1
    panels = (("Packet rate [Mpps]", lambda s, v: v / 1e6),
              ("L1 bit rate [Gbit/s]", lambda s, v: l1_bps(v, s.frame_size) / 1e9),
              ("L2 bit rate [Gbit/s]", lambda s, v: l2_bps(v, s.frame_size) / 1e9))
    for ax, (ylabel, conv) in zip(axes, panels):
        for (dut, okey, akey), scs in series.items():
            scs = sorted(scs, key=lambda s: xpos[s.frame_size])
            xs = [xpos[s.frame_size] for s in scs]
            ys = [conv(s, s.goals[goal].estimate.mean) for s in scs]
            lo = [conv(s, s.goals[goal].estimate.mean) - conv(s, s.goals[goal].estimate.low)
                  if s.goals[goal].estimate.low is not None else 0.0 for s in scs]
            hi = [conv(s, s.goals[goal].estimate.high) - conv(s, s.goals[goal].estimate.mean)
                  if s.goals[goal].estimate.high is not None else 0.0 for s in scs]
            label = tex_safe(dut if not many else f"{dut} ({scs[0].group_label.split(',')[0]})")
            ax.errorbar(xs, ys, yerr=[lo, hi], capsize=2, label=label, **st.line(dut))
        ax.set_xticks(list(xpos.values()))
        ax.set_xticklabels([str(f) if isinstance(f, int) else str(f).upper() for f in xpos])
        ax.set_xlabel("Frame size [B, incl. FCS]")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="upper center", ncols=min(len(h), 5), bbox_to_anchor=(0.5, 1.02))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return w.save(fig, "throughput_frame_size",
                  f"{goal_label(goal)} against frame size",
                  f"{goal_label(goal)} per direction as packet rate, as L1 bit rate (frame incl. "
                  "FCS + 20 B preamble and inter-frame gap) and as L2 bit rate (frame incl. "
                  "FCS); whiskers: 95 % CI.", "derived")


def loss_curves(g: Group, st: DutStyle, w: FigureWriter) -> Figure | None:
    scs = [s for s in g.scenarios if len(s.curve) >= 2]
    if not scs:
        return None
    rows, cols = _grid_shape(len(scs))
    fig, axes = plt.subplots(2 * rows, cols, figsize=(2.9 * cols + 0.6, 2.1 * 2 * rows + 0.3),
                             squeeze=False,
                             gridspec_kw={"height_ratios": [1.5, 1] * rows})
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        ax_plr, ax_dr = axes[2 * r][c], axes[2 * r + 1][c]
        if i >= len(scs):
            ax_plr.set_visible(False)
            ax_dr.set_visible(False)
            continue
        s = scs[i]
        ax_dr.sharex(ax_plr)
        ax_plr.tick_params(labelbottom=False)
        x = np.array([p.load_pps for p in s.curve])
        plr = np.array([p.plr.mean for p in s.curve])
        lo = np.array([p.plr.low if p.plr.low is not None else p.plr.mean for p in s.curve])
        hi = np.array([p.plr.high if p.plr.high is not None else p.plr.mean for p in s.curve])
        kw = st.line(s.dut_name)
        sweep = s.curve_kind == "sweep"
        if sweep:
            ax_plr.fill_between(x, np.maximum(lo, PLR_FLOOR), np.maximum(hi, PLR_FLOOR),
                                color=kw["color"], alpha=0.22, linewidth=0,
                                label="95 % CI")
            ax_plr.plot(x, np.maximum(plr, PLR_FLOOR), **kw, label="mean PLR")
            ax_dr.fill_between(x, 1 - hi, 1 - lo, color=kw["color"], alpha=0.22, linewidth=0)
            ax_dr.plot(x, 1 - plr, **kw)
        else:
            ax_plr.plot(x, np.maximum(plr, PLR_FLOOR), linestyle="none", marker=kw["marker"],
                        color=kw["color"], label="trial loads")
            ax_dr.plot(x, 1 - plr, linestyle="none", marker=kw["marker"], color=kw["color"])
        ax_plr.set_yscale("log")
        ax_plr.set_ylim(PLR_BOTTOM, 1.5)
        ax_plr.yaxis.set_major_locator(FixedLocator([1e-6, 1e-4, 1e-2, 1]))
        ax_plr.yaxis.set_minor_locator(NullLocator())
        ax_plr.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _: "1" if v >= 1 else f"1e{int(round(np.log10(v)))}"))
        ax_plr.axhline(0.005, color="black", linewidth=0.8, linestyle="--")
        ax_plr.text(x.min(), 0.005 * 1.4, "0.5 %", fontsize=6.5, va="bottom")
        ax_dr.axhline(0.995, color="black", linewidth=0.8, linestyle="--")
        ax_dr.set_ylim(min(0.0, float(np.nanmin(1 - hi)) - 0.02) if len(hi) else 0, 1.02)
        pa = s.pastrami
        if pa.actual is not None and pa.actual < len(x):
            ax_plr.axvline(x[pa.actual], color="#555555", linewidth=0.8, linestyle=":")
        verdict = pa.verdict
        mark = {"GOOD": "\u2713 GOOD", "BAD": "\u2717 BAD"}.get(verdict, verdict)
        ax_plr.text(0.03, 0.95, mark, transform=ax_plr.transAxes, va="top", ha="left",
                    fontsize=8,
                    bbox={"boxstyle": "round,pad=0.25", "facecolor": "white",
                          "edgecolor": "black" if verdict in ("GOOD", "BAD") else "#999999",
                          "linewidth": 1.4 if verdict == "BAD" else 0.8,
                          "linestyle": "--" if verdict not in ("GOOD", "BAD") else "-"})
        ax_plr.set_title(_panel_title(s))
        if c == 0:
            ax_plr.set_ylabel("Packet loss ratio [1]")
            ax_dr.set_ylabel("Delivery ratio [1]")
        _mpps_axis(ax_dr, "x")
        ax_dr.set_xlabel("Offered load [Mpps per direction]")
    fig.suptitle(tex_safe(g.label), fontsize=9)
    fig.tight_layout()
    return w.save(fig, f"curves_{g.slug}", f"Load-loss curves: {g.label}",
                  "PASTRAMI style: packet loss ratio on a log axis (zero loss drawn at 1e-6) "
                  "with the 95 % CI band over repetitions and the 0.5 % line; delivery ratio "
                  "below with the 99.5 % line. The verdict says whether PDR@0.5% summarises "
                  "the curve faithfully (GOOD) or not (BAD); a dotted line marks where "
                  "saturation begins.")


LAT_STATS = (("min_ns", "min", "#000000", "v", ":"),
             ("p50_ns", "p50", OKABE_ITO[0], "o", "-"),
             ("p99_ns", "p99", OKABE_ITO[1], "s", "--"),
             ("p999_ns", "p99.9", OKABE_ITO[3], "^", "-."),
             ("max_ns", "max", OKABE_ITO[4], "D", (0, (1, 1))))


def latency_panels(g: Group, st: DutStyle, w: FigureWriter) -> Figure | None:
    """Per DUT: latency statistics against load (top) and latency CDFs (bottom).

    The top row needs two loads or more; the bottom row needs histograms."""
    scs = [s for s in g.scenarios if s.latency]
    with_stats = any(len(s.latency) >= 2 for s in scs)
    with_cdf = any(p.cdf_ns is not None for s in scs for p in s.latency)
    if not (with_stats or with_cdf):
        return None                    # one load and no histogram: the table says it all
    rows, cols = _grid_shape(len(scs))
    per = int(with_stats) + int(with_cdf)
    fig, axes = plt.subplots(per * rows, cols, figsize=(2.9 * cols + 0.6, 2.4 * per * rows + 0.6),
                             squeeze=False)
    use_pct = all(p.pct_of_pdr is not None and p.source == "latency"
                  for s in scs for p in s.latency)
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        ax = axes[per * r][c] if with_stats else None
        ax_cdf = axes[per * r + per - 1][c] if with_cdf else None
        if i >= len(scs):
            for a in (ax, ax_cdf):
                if a is not None:
                    a.set_visible(False)
            continue
        s = scs[i]
        if ax is not None:
            _latency_stats(ax, s, use_pct, first_col=c == 0)
        if ax_cdf is None:
            continue
        if ax is None:
            ax_cdf.set_title(_panel_title(s))
        pts = [p for p in s.latency if p.cdf_ns is not None]
        for k, p in enumerate(pts):
            lbl = (f"{p.pct_of_pdr:.0f} % of PDR" if p.pct_of_pdr is not None
                   else f"{p.load_pps / 1e6:.3g} Mpps")
            ax_cdf.step(p.cdf_ns / 1e3, p.cdf_p, where="post", color=OKABE_ITO[k % 8],
                        linestyle=LINESTYLES[k % len(LINESTYLES)], label=lbl)
        if pts:
            lo = min(float(p.cdf_ns[0]) for p in pts)
            hi = max(float(p.cdf_ns[-1]) for p in pts)
            if lo > 0 and hi / lo > 20:        # log only where the data spans decades
                ax_cdf.set_xscale("log")
                _plain_log(ax_cdf, "x")
            ax_cdf.legend(loc="lower right", fontsize=6.5)
        ax_cdf.set_ylim(0, 1.01)
        ax_cdf.set_xlabel("One-way latency [µs]")
        if c == 0:
            ax_cdf.set_ylabel("Cumulative share [1]")
    tall = per * rows > 1
    if with_stats:
        h, lab = axes[0][0].get_legend_handles_labels()
        fig.legend(h, lab, loc="upper center", ncols=len(h), bbox_to_anchor=(0.5, 0.995))
        fig.suptitle(tex_safe(g.label), fontsize=9, y=0.955 if tall else 0.92)
        fig.tight_layout(rect=(0, 0, 1, 0.93 if tall else 0.86))
    else:
        fig.suptitle(tex_safe(g.label), fontsize=9)
        fig.tight_layout()
    parts = []
    if with_stats:
        parts.append(("Top: " if with_cdf else "") + "minimum, median, 99th and 99.9th "
                     "percentile and maximum one-way latency against load (percentiles: means "
                     "over repetitions; min and max: extremes).")
    if with_cdf:
        parts.append(("Bottom: l" if with_stats else "L") + "atency distribution from the "
                     "merged HdrHistograms of the trials at each load.")
    return w.save(fig, f"latency_{g.slug}", f"Latency: {g.label}", " ".join(parts))


def _latency_stats(ax, s: ScenarioReport, use_pct: bool, first_col: bool) -> None:
    x = np.array([(p.pct_of_pdr if use_pct else p.load_pps) for p in s.latency])
    ys = []
    for key, label, color, marker, ls in LAT_STATS:
        y = np.array([getattr(p, key) / 1e3 for p in s.latency])
        ys.append(y)
        ax.plot(x, y, color=color, marker=marker, linestyle=ls, label=label,
                markerfacecolor="white" if label in ("min", "max") else color)
    lo = min(float(y.min()) for y in ys)
    hi = max(float(y.max()) for y in ys)
    if lo > 0 and hi / lo > 20:            # log only where the data spans decades
        ax.set_yscale("log")
        _plain_log(ax, "y")
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(_panel_title(s))
    if use_pct:
        ax.set_xlabel("Background load [% of PDR@0.5%]")
    else:
        _mpps_axis(ax, "x")
        ax.set_xlabel("Offered load [Mpps per direction]")
    if first_col:
        ax.set_ylabel("One-way latency [µs]")


def jitter_lines(g: Group, st: DutStyle, w: FigureWriter) -> Figure | None:
    scs = [s for s in g.scenarios if len(s.latency) >= 2]
    if not scs:
        return None
    fig, ax = plt.subplots(figsize=(5.8, 2.8))
    for s in scs:
        x = [p.load_pps for p in s.latency]
        y = [p.jitter_ns / 1e3 for p in s.latency]
        ax.plot(x, y, label=tex_safe(s.dut_name), **st.line(s.dut_name))
    _mpps_axis(ax, "x")
    ax.set_xlabel("Offered load [Mpps per direction]")
    ax.set_ylabel("Interarrival jitter [µs]")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    ax.set_title(tex_safe(g.label))
    fig.tight_layout()
    return w.save(fig, f"jitter_{g.slug}", f"Jitter against load: {g.label}",
                  "RFC 3550 interarrival jitter of the latency samples, mean over repetitions.")


def meters_panels(g: Group, st: DutStyle, w: FigureWriter) -> Figure | None:
    scs = [s for s in g.scenarios if s.meters]
    if not any(len(s.meters) >= 2 for s in scs):
        return None                    # one load per DUT: the table says it all
    panels = (
        ("dut_cpu_util", "DUT CPU utilisation [%]", 100.0, "cpu"),
        ("cycles_per_packet", "Cycles per packet [cycles]", 1.0, "cpu"),
        ("joules_per_mpkt", "Energy per Mpkt [J]", 1.0, "energy"),
        ("packets_per_joule", "Packets per joule [1/J]", 1.0, "energy"),
    )
    present = [p for p in panels if any(getattr(mp, p[0]) is not None
                                        for s in scs for mp in s.meters)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(2.7 * len(present) + 0.4, 3.1),
                             squeeze=False)
    flags: set = set()
    handles: dict[str, Any] = {}
    for ax, (key, ylabel, scale, kind) in zip(axes[0], present):
        tags = set()
        for s in scs:
            pts = [mp for mp in s.meters if getattr(mp, key) is not None]
            if not pts:
                continue
            if kind == "energy":
                modelled = all(mp.energy_measured is False for mp in pts)
                flags.update(mp.energy_measured for mp in pts)
                tags.add("modelled" if modelled else "measured")
            else:
                modelled = False
                tags.add("estimated" if key == "cycles_per_packet" and
                         any(mp.cycles_estimated for mp in pts) else "measured")
            (line,) = ax.plot([mp.load_pps for mp in pts],
                              [getattr(mp, key) * scale for mp in pts],
                              **st.line(s.dut_name, hollow=modelled))
            handles.setdefault(s.dut_name, line)
        if w.simulated:
            tags = {"simulated" if t == "measured" else t for t in tags}
        ax.set_title(" + ".join(sorted(tags)), fontsize=7.5)
        _mpps_axis(ax, "x")
        ax.set_xlabel("Offered load [Mpps per direction]")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    fig.legend(list(handles.values()), [tex_safe(d) for d in handles], loc="upper center",
               ncols=min(len(handles), 6), bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(tex_safe(g.label), fontsize=9, y=0.91)
    fig.tight_layout(rect=(0, 0, 1, 0.87))
    basis = _basis(flags)
    return w.save(fig, f"cpu_energy_{g.slug}", f"CPU and energy against load: {g.label}",
                  "Means over repetitions at each offered load. Each panel's title says how its "
                  "values were obtained: measured (/proc/stat, RAPL, IPMI, an external meter), "
                  "modelled (energy from CPU time; hollow markers) or estimated (cycles per "
                  "packet = busy time x nominal frequency / packets).", basis)


@dataclass
class FigureSet:
    summary: list[Figure] = field(default_factory=list)       # throughput section
    curves: list[Figure] = field(default_factory=list)
    latency: list[Figure] = field(default_factory=list)
    meters: list[Figure] = field(default_factory=list)

    def all(self) -> list[Figure]:
        return self.summary + self.curves + self.latency + self.meters


_CAMPAIGN_FIGS = {"goal_bars": goal_bars, "frame_size_lines": frame_size_lines}
_GROUP_FIGS = {"loss_curves": loss_curves, "latency_panels": latency_panels,
               "jitter_lines": jitter_lines, "meters_panels": meters_panels}
_JOB: dict[str, Any] = {}          # the model etc., inherited by forked workers


def _run_task(task: tuple[str, str, int | None]) -> Figure | None:
    _section, fname, gi = task
    m, st, w = _JOB["m"], _JOB["st"], _JOB["w"]
    with plt.rc_context(RC):
        if gi is None:
            return _CAMPAIGN_FIGS[fname](m, st, w)
        return _GROUP_FIGS[fname](m.groups[gi], st, w)


def _worker_init() -> None:
    """A worker ends when the pool closes its queue, or by SIGTERM's default
    action. It must not inherit the parent's handlers: the lab turns SIGTERM
    into SystemExit, and a SystemExit raised while the child is still inside
    fork's own hooks is swallowed, which left a worker alive and
    Pool.terminate() waiting for it for ever (CI hung so). Ctrl-C is the
    parent's to handle."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def map_in_forked_pool(n: int, fn, tasks: list) -> list:
    """[fn(t) for t in tasks] in n forked workers, ended by close() + join():
    no signal is sent unless the parent itself is interrupted."""
    pool = mp.get_context("fork").Pool(n, initializer=_worker_init)
    try:
        figs = pool.map(fn, tasks, chunksize=1)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    return figs


def _jobs(requested: int | None) -> int:
    if requested:
        return requested
    env = os.environ.get("FWDBENCH_REPORT_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def build_figures(m: ReportModel, out: Path, *, pdf: bool = True,
                  jobs: int | None = None) -> FigureSet:
    """Draw every figure; with more than one CPU, in forked worker processes."""
    st = DutStyle(m.duts)
    w = FigureWriter(out, pdf=pdf, simulated=m.simulated)
    tasks: list[tuple[str, str, int | None]] = [
        ("summary", "goal_bars", None), ("summary", "frame_size_lines", None)]
    for i in range(len(m.groups)):
        tasks.append(("curves", "loss_curves", i))
        tasks.append(("latency", "latency_panels", i))
        tasks.append(("latency", "jitter_lines", i))
        tasks.append(("meters", "meters_panels", i))
    n = min(_jobs(jobs), len(tasks))
    _JOB.update(m=m, st=st, w=w)
    try:
        # fork is only safe while this process runs a single thread
        if n > 1 and "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
            figs = map_in_forked_pool(n, _run_task, tasks)
        else:
            figs = [_run_task(t) for t in tasks]
    finally:
        _JOB.clear()
    fs = FigureSet()
    for (section, _fname, _gi), f in zip(tasks, figs):
        if f is not None:
            getattr(fs, section).append(f)
    return fs


__all__ = ["Figure", "FigureSet", "DutStyle", "FigureWriter", "build_figures", "tex_safe",
           "inline_svg", "OKABE_ITO", "RC"]
