"""Analysis: statistics over repetitions, PASTRAMI's verdict, comparisons,
external data readers, figures and the ``fwdbench analyze`` command.

``figures`` (matplotlib) is imported lazily: ``from fwdbench.analysis.figures
import plot_curve``.
"""
from __future__ import annotations

from fwdbench.analysis.analyze import ExperimentAnalysis, analyze_experiment, analyze_trials
from fwdbench.analysis.command import analyze_cmd
from fwdbench.analysis.compare import Comparison, compare, fieller_interval
from fwdbench.analysis.external import (
    Experiment,
    InputFormatError,
    experiment_from_trials,
    read_csv,
    read_experiment,
    read_pastrami,
    read_store,
)
from fwdbench.analysis.pastrami import (
    RULES,
    Assessment,
    LoadLossCurve,
    assess,
    assess_curve,
    tir,
)
from fwdbench.analysis.stats import (
    NO_CI,
    Summary,
    confidence_interval,
    cv,
    mean,
    normalised_uncertainty,
    sample_std,
    summarize,
    summarize_rows,
    t_critical,
)

__all__ = [
    "NO_CI", "RULES", "Assessment", "Comparison", "Experiment", "ExperimentAnalysis",
    "InputFormatError", "LoadLossCurve", "Summary", "analyze_cmd", "analyze_experiment",
    "analyze_trials", "assess", "assess_curve", "compare", "confidence_interval", "cv",
    "experiment_from_trials", "fieller_interval", "mean", "normalised_uncertainty",
    "read_csv", "read_experiment", "read_pastrami", "read_store", "sample_std", "summarize",
    "summarize_rows", "t_critical", "tir",
]
