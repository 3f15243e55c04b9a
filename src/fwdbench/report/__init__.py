"""The report: one results store -> a self-contained HTML page, figures and exports.

``build_report(db, out)`` writes ``out/index.html`` (inline SVG figures, no
network access needed), ``out/figures/*.svg|pdf`` and ``out/data/*.csv`` +
``trials.parquet``; ``build_comparison(a, b, out)`` does the same for two
campaigns with ratios and significance. ``report_cmd`` / ``compare_cmd`` are
the CLI bodies. ``load_model(db)`` gives the numbers without rendering.
"""
from .command import build_comparison, build_report, compare_cmd, report_cmd
from .model import ReportModel, load_model

__all__ = ["ReportModel", "build_comparison", "build_report", "compare_cmd", "load_model",
           "report_cmd"]
