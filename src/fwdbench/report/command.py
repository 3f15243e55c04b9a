"""`fwdbench report` and `fwdbench compare`: results store(s) -> out/.

Layout written under ``out``::

    index.html            the report, self-contained (inline SVG, inline CSS)
    figures/*.svg, *.pdf  every figure, for papers
    data/trials.csv       one row per finished trial
    data/results.csv      one row per scenario x repetition x goal
    data/summary.csv      mean and 95 % CI per DUT x scenario x goal
    data/trials.parquet   the trial table (when pyarrow is installed)

``compare`` writes B's report with a comparison section on top to
``out/index.html`` and A's own report to ``out/a/``.

Figures are drawn in parallel, one worker process per CPU
(``FWDBENCH_REPORT_JOBS=N`` overrides; 1 draws them in this process).
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import FwdbenchError
from ..store import store_target
from ..text import clip_lines
from .compare import compare_models, ratio_figure
from .export import export_all
from .figures import FigureWriter, build_figures
from .html import render, write
from .model import ReportModel, load_model


def _check_db(db: Path | str) -> None:
    from ..store import is_store_url
    if is_store_url(db):
        return          # a PostgreSQL URL: opening it says what is wrong, if anything
    if not Path(db).is_file():
        raise FwdbenchError(f"{db}: no such results file; give the .sqlite file "
                            "'fwdbench run' wrote (results/<campaign>.sqlite)")


def _build(m: ReportModel, out: Path, compare=None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    figs = build_figures(m, out)
    data_files = export_all(m, out)
    return write(out / "index.html", render(m, figs, data_files=data_files, compare=compare))


def build_report(db: Path, out: Path) -> Path:
    """Write the report of one results store under ``out``; return index.html's path."""
    db, out = store_target(db), Path(out)
    _check_db(db)
    return _build(load_model(db), out)


def build_comparison(a: Path, b: Path, out: Path) -> Path:
    """B's report with B-vs-A ratios and significance on top; A's report in out/a/."""
    a, b, out = store_target(a), store_target(b), Path(out)
    _check_db(a)
    _check_db(b)
    ma, mb = load_model(a), load_model(b)
    _build(ma, out / "a")
    out.mkdir(parents=True, exist_ok=True)
    cmp = compare_models(ma, mb, a_link="a/index.html")
    fig = ratio_figure(cmp, FigureWriter(out))
    if fig is not None:
        cmp.figures.append(fig)
    return _build(mb, out, compare=cmp)


def interrupted_note(db, out) -> str:
    """What Ctrl-C while writing a report leaves, and how to finish it."""
    return (f"interrupted: the report in {out} is incomplete; the results file is "
            f"untouched; write the report again with 'fwdbench report {db} -o {out}'")


def report_cmd(db: Path, out: Path) -> int:
    """CLI body of `fwdbench report DB -o OUT`: 0 on success, 2 on a user
    error, 130 on Ctrl-C."""
    try:
        path = build_report(db, out)
    except FwdbenchError as e:
        print(f"fwdbench report: {clip_lines(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_note(db, out), file=sys.stderr)
        return 130
    print(f"report: {path}")
    return 0


def compare_cmd(a: Path, b: Path, out: Path) -> int:
    """CLI body of `fwdbench compare A B -o OUT`: 0 on success, 2 on a user error."""
    try:
        path = build_comparison(a, b, out)
    except FwdbenchError as e:
        print(f"fwdbench compare: {clip_lines(e)}", file=sys.stderr)
        return 2
    print(f"comparison: {path}")
    return 0
