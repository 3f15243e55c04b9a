"""``fwdbench analyze FILE...``: PASTRAMI analysis of load-loss data.

Reads PASTRAMI measurement files and CSV (load,repetition,tx,rx), one
experiment per file, and prints a table (file, PDR@0.5% [pps], saturation
load [pps], verdict, worst normalised uncertainty of the mean PLR), or with
``as_json`` one JSON object per experiment per line with the keys file,
pdr_0p5_pps, saturation_load_pps, verdict (GOOD or BAD), reason (null, or
"no saturation in the measured range"), rule and max_norm_uncertainty (plus ``figure`` when one was written).

Figures (one SVG per experiment, PASTRAMI style) are written only when
``out_dir`` is given, as ``out_dir/<file stem>.svg``; without it nothing is
written. Warnings and data flags go to stderr. Exit code 0 when every file
was analysed, 2 when a file could not be read (the others are still
analysed) or the rule is unknown.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.table import Table
from rich.text import Text

from fwdbench.analysis.analyze import ExperimentAnalysis, analyze_experiment
from fwdbench.analysis.external import InputFormatError, read_experiment
from fwdbench.analysis.pastrami import RULES
from fwdbench.text import clip_lines, console, shown

MAX_FLAGS_SHOWN = 5


def _fmt_pps(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _fmt_nu(v: float | None) -> str:
    if v is None:
        return "n/a (<2 reps)"
    return f"{v:.3g}" + (" (cap)" if v >= 2.0 else "")


def _figure_path(out_dir: Path, source: str, used: set[Path]) -> Path:
    stem = Path(source).stem or "experiment"
    path = out_dir / f"{stem}.svg"
    k = 2
    while path in used:
        path = out_dir / f"{stem}-{k}.svg"
        k += 1
    used.add(path)
    return path


def analyze_cmd(files: list[Path], rule: str = "paper", as_json: bool = False,
                out_dir: Path | None = None) -> int:
    """Analyse each file; print a table or JSON lines; return the exit code."""
    err = console(stderr=True, soft_wrap=True)
    if rule not in RULES:
        err.print(f"fwdbench analyze: error: rule {shown(rule)} is not one of {', '.join(RULES)}")
        return 2
    if not files:
        err.print("fwdbench analyze: error: no files given; pass PASTRAMI measurement "
                  "files or CSV (load,repetition,tx,rx)")
        return 2
    results: list[tuple[ExperimentAnalysis, Path | None]] = []
    failed = 0
    used: set[Path] = set()
    for f in files:
        try:
            experiments = read_experiment(f)   # a Path, or a store URL (str)
        except InputFormatError as e:
            err.print(f"fwdbench analyze: error: {clip_lines(e)}")
            failed += 1
            continue
        for exp in experiments:
            an = analyze_experiment(exp, rule)
            for w in an.warnings:
                err.print(f"warning: {w}")
            for flag in an.flags[:MAX_FLAGS_SHOWN]:
                err.print(f"flag: {flag}")
            if len(an.flags) > MAX_FLAGS_SHOWN:
                err.print(f"flag: {exp.source}: {len(an.flags) - MAX_FLAGS_SHOWN} more rows "
                          "with rx > tx")
            if an.curve.repetitions < 2:
                err.print(f"note: {exp.source}: fewer than 2 repetitions at some loads: no "
                          "confidence interval there (run more repetitions for an error bar)")
            fig = None
            if out_dir is not None:
                from fwdbench.analysis.figures import plot_curve   # matplotlib only when needed
                fig = plot_curve(an.curve, an.assessment,
                                 _figure_path(Path(out_dir), exp.source, used),
                                 title=exp.name)
            results.append((an, fig))
    if as_json:
        for an, fig in results:
            d = an.to_json_dict()
            if fig is not None:
                d["figure"] = str(fig)
            sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.flush()
    elif results:
        table = Table(title=f"PASTRAMI analysis (rule: {rule})")
        table.add_column("file", overflow="fold")
        table.add_column("PDR@0.5% [pps]", justify="right")
        table.add_column("saturation load [pps]", justify="right")
        table.add_column("verdict")
        table.add_column("worst norm. uncertainty", justify="right")
        for an, _ in results:
            a = an.assessment
            table.add_row(Text(an.source), _fmt_pps(a.pdr_pps), _fmt_pps(a.saturation_load_pps),
                          Text(a.label), Text(_fmt_nu(an.max_norm_uncertainty)))
        out = console()
        if not out.is_terminal:
            out = console(width=200)   # pipes and files: do not wrap columns
        out.print(table)
        if out_dir is not None:
            out.print(f"figures written to {out_dir}")
        else:
            out.print("no figures written (give an output directory to write one SVG "
                      "per experiment)")
    return 2 if failed else 0
