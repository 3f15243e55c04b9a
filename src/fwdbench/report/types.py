"""The report model's types: what the report shows, as plain dataclasses.

Goals are :class:`fwdbench.goal.LossGoal` values (keyed by their loss ratio,
read from the store's column); ``goal_label`` and ``goal_sort_key`` are for
templates and tables.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..goal import NDR, PDR, LossGoal
from .numbers import Estimate
from .runtime import RuntimePoint

PDR_GOAL = PDR                     # PASTRAMI / CSIT PDR (PDR@0.5%)
NDR_GOAL = NDR
NU_WARN = 0.05                     # normalised uncertainty above this is flagged
STEAL_WARN = 0.01                  # steal time share above this is flagged
CDF_POINTS = 400                   # points kept per latency CDF
CDF_MAX_TRIALS = 12                # histograms merged per CDF (the rest add little)
CDF_TARGETS = (0.1, 0.5, 0.9)      # shares of PDR, as CSIT measures latency


def goal_label(goal: LossGoal) -> str:
    """NDR -> 'NDR', PDR@0.005 -> 'PDR@0.5%'."""
    return goal.label


def goal_sort_key(goal: LossGoal) -> float:
    return goal.loss_ratio


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return s[:60] or "x"


@dataclass
class GoalResult:
    goal: LossGoal
    estimate: Estimate
    source: str                     # "search" | "sweep" (derived from the load sweep)

    @property
    def label(self) -> str:
        return self.goal.label


@dataclass
class CurvePoint:
    load_pps: float                 # offered load per stream [pps]
    plr: Estimate                   # packet loss ratio over repetitions
    throughput: Estimate            # O * (1 - PLR) [pps]
    generator_limited: int          # trials at this load where the generator was the limit

    @property
    def n(self) -> int:
        return self.plr.n


@dataclass
class Pastrami:
    verdict: str                    # GOOD | BAD | NO SATURATION | n/a
    detail: str
    past_pdr: int | None = None
    potential: int | None = None
    actual: int | None = None
    tir: list[float | None] = field(default_factory=list)


@dataclass
class LatencyPoint:
    load_pps: float                 # background load per stream [pps]
    pct_of_pdr: float | None        # load / mean PDR@0.5% [%]
    n: int                          # trials aggregated
    min_ns: float
    mean_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    max_ns: float
    jitter_ns: float
    source: str                     # "latency" (CSIT-style latency trials) | "search"
    cdf_ns: np.ndarray | None = None    # latency values [ns]
    cdf_p: np.ndarray | None = None     # cumulative share at those values
    hdr: list[str] = field(default_factory=list, repr=False)


@dataclass
class MeterPoint:
    load_pps: float                 # offered load per stream [pps]
    n: int
    dut_cpu_util: float | None      # busy share of the DUT CPUs [0..1]
    softirq_share: float | None     # softirq share of the DUT CPUs' busy time
    steal: float | None             # steal share [0..1]
    cycles_per_packet: float | None
    cycles_estimated: bool
    joules: float | None            # per trial [J]
    mean_watts: float | None        # [W]
    packets_per_joule: float | None
    joules_per_mpkt: float | None
    energy_source: str | None
    energy_measured: bool | None


@dataclass
class ThesisRow:
    scenario: str
    dut: str
    trials: int
    duration_s: float               # measured time summed [s]
    tx_packets: int
    tx_bytes: int                   # L2 bytes without FCS (as fwdgen counts)
    tx_bytes_fcs: int               # L2 bytes with FCS (as TRex and the thesis count)
    rx_packets: int
    energy_j: float | None
    energy_trials: int              # trials with an energy reading
    energy_measured: bool | None    # True measured, False modelled, None unknown/mixed
    energy_source: str | None

    @property
    def mean_watts(self) -> float | None:
        if self.energy_j is None or not self.duration_s:
            return None
        return self.energy_j / self.duration_s


@dataclass
class ScenarioReport:
    id: int
    idx: int
    name: str
    dut_name: str
    dut_type: str
    dut_params: dict[str, Any]
    profile: dict[str, Any]
    search: dict[str, Any]
    axes: dict[str, Any]
    max_load_pps: float
    describe: dict[str, Any] | None
    group_key: str = ""
    group_label: str = ""
    goals: dict[LossGoal, GoalResult] = field(default_factory=dict)
    curve: list[CurvePoint] = field(default_factory=list)
    curve_kind: str | None = None   # "sweep" | "search" (loads the search chose)
    pastrami: Pastrami = field(default_factory=lambda: Pastrami("n/a", "no load-loss curve"))
    latency: list[LatencyPoint] = field(default_factory=list)
    meters: list[MeterPoint] = field(default_factory=list)
    runtime: list[RuntimePoint] = field(default_factory=list)   # vfwd's per-node runtime
    thesis: ThesisRow | None = None
    repetitions: list[int] = field(default_factory=list)
    trials: int = 0                 # measured trials (search + latency)
    warmup_trials: int = 0
    trial_seconds: float = 0.0      # measured trial time [s]
    generator_limited: int = 0
    max_steal: float | None = None

    @property
    def slug(self) -> str:
        return f"s{self.idx}"

    @property
    def frame_size(self) -> int | str:
        return self.profile.get("frame_size", 64)

    @property
    def direction(self) -> str:
        return self.profile.get("direction", "uni")

    @property
    def streams(self) -> int:
        return 2 if self.direction == "bi" else 1

    def goal(self, goal: LossGoal) -> GoalResult | None:
        return self.goals.get(goal)

    @property
    def pdr(self) -> Estimate | None:
        g = self.goals.get(PDR_GOAL)
        return g.estimate if g else None

    @property
    def headline_goal(self) -> LossGoal | None:
        """The goal used to rank DUTs: PDR@0.5 %, else NDR, else the first one."""
        for g in (PDR_GOAL, NDR_GOAL):
            if g in self.goals and self.goals[g].estimate.mean is not None:
                return g
        for g, r in self.goals.items():
            if r.estimate.mean is not None:
                return g
        return None


@dataclass
class Winner:
    dut_name: str
    scenario: ScenarioReport
    goal: LossGoal
    runner_up: ScenarioReport | None
    ratio: float | None             # winner / runner-up
    p_value: float | None           # Welch's t-test winner vs runner-up
    significant: bool | None

    @property
    def text(self) -> str:
        if self.runner_up is None:
            return "only DUT in this scenario"
        who = f"{self.ratio:.2f}\u00d7 the runner-up ({self.runner_up.dut_name})"
        if self.significant is None:
            return f"{who}; too few repetitions to test significance"
        p = "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.2g}"
        if self.significant:
            return f"{who}, {p}: significant at 5 %"
        return f"{who}, but {p}: not significant, a tie within the measurement noise"


@dataclass
class Group:
    key: str
    label: str
    scenarios: list[ScenarioReport]
    winner: Winner | None = None

    @property
    def slug(self) -> str:
        return "g-" + slug(self.label)


@dataclass
class ReportWarning:
    kind: str                       # generator-limited | pastrami-bad | uncertainty | steal | ...
    scenario: str | None
    message: str
    advice: str


@dataclass
class ReportModel:
    db_path: Path
    name: str
    description: str
    question: str
    source_path: str
    config_text: str
    config: dict[str, Any]
    host: dict[str, Any]
    tool_version: str
    created_at: float
    scenarios: list[ScenarioReport]
    groups: list[Group]
    duts: list[str]
    goals: list[LossGoal]
    trial_counts: dict[str, int]
    measured_seconds: float
    wall_seconds: float | None
    warnings: list[ReportWarning]
    methodology: str
    placement: dict[str, Any]
    fwdgen_version: str | None
    repetitions: int
    trial_rows: list[dict[str, Any]] = field(default_factory=list, repr=False)
    simulated: bool = False          # testbed 'sim': no packets were forwarded
    pacers: dict[str, int] = field(default_factory=dict)  # fwdgen's pacer -> trials
    # fwdgen's pacer -> (frames sent together, us of traffic per burst) of each trial
    pacing: dict[str, list[tuple[int, float]]] = field(default_factory=dict, repr=False)
    result_rows: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # which generator measured the trials: "TRex v3.08 (af_packet)" -> trials
    generators: dict[str, int] = field(default_factory=dict)

    @property
    def energy_any(self) -> bool:
        return any(m.joules is not None for s in self.scenarios for m in s.meters)

    @property
    def cpu_any(self) -> bool:
        return any(m.dut_cpu_util is not None or m.cycles_per_packet is not None
                   for s in self.scenarios for m in s.meters)

    @property
    def runtime_any(self) -> bool:
        return any(s.runtime for s in self.scenarios)

    @property
    def latency_any(self) -> bool:
        return any(s.latency for s in self.scenarios)

    @property
    def curves_any(self) -> bool:
        return any(s.curve for s in self.scenarios)

    @property
    def frame_sizes(self) -> list[int | str]:
        seen: dict[Any, None] = {}
        for s in self.scenarios:
            seen.setdefault(s.frame_size, None)
        return list(seen)

    def scenario_by_id(self, sid: int) -> ScenarioReport:
        for s in self.scenarios:
            if s.id == sid:
                return s
        raise KeyError(sid)


