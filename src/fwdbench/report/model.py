"""The report model: everything the report shows, read from one results store.

``load_model(db)`` reads the campaign, its scenarios, every ``done`` trial and
the search results once, and turns them into plain dataclasses: estimates
with 95 % CIs per DUT x scenario, load-loss curves with their PASTRAMI
verdict, latency and meter series against load, the thesis's table, the
environment and the warnings. Figures, HTML and exports only read this
model; nothing is re-measured (the store is the only input).

One module per concern; this one gathers what the rest of fwdbench imports:

- :mod:`.types`: the dataclasses and thresholds
- :mod:`.reading`: the store -> the model (``load_model``)
- :mod:`.stats`: curves, goals, latency and meter points, groups and winners
- :mod:`.hdr`: HdrHistogram decoding and merged CDFs
- :mod:`.meter_fields`: a trial's CPU/energy record as report fields
- :mod:`.warnings`: the report's warnings
- :mod:`.methods`: the methods paragraph
"""
from __future__ import annotations

from ..goal import LossGoal
from .hdr import hdr_values_counts, merged_cdf
from .meter_fields import meter_fields
from .methods import methodology_text
from .reading import load_model
from .types import (CDF_MAX_TRIALS, CDF_POINTS, CDF_TARGETS, NDR_GOAL, NU_WARN, PDR_GOAL,
                    STEAL_WARN, CurvePoint, GoalResult, Group, LatencyPoint, MeterPoint,
                    Pastrami, ReportModel, ReportWarning, ScenarioReport, ThesisRow, Winner,
                    goal_label, goal_sort_key, slug)
from .warnings import report_warnings

__all__ = ["CDF_MAX_TRIALS", "CDF_POINTS", "CDF_TARGETS", "CurvePoint", "GoalResult", "Group",
           "LatencyPoint", "LossGoal", "MeterPoint", "NDR_GOAL", "NU_WARN", "PDR_GOAL",
           "Pastrami", "ReportModel", "ReportWarning", "STEAL_WARN", "ScenarioReport",
           "ThesisRow", "Winner", "goal_label", "goal_sort_key", "hdr_values_counts",
           "load_model", "merged_cdf", "meter_fields", "methodology_text", "report_warnings",
           "slug"]
