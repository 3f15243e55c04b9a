"""The report model: everything the report shows, read from one results store.

``load_model(db)`` reads the campaign, its scenarios, every ``done`` trial and
the search results once, and turns them into plain dataclasses: estimates
with 95 % CIs per DUT x scenario, load-loss curves with their PASTRAMI
verdict, latency and meter series against load, the thesis's table, the
environment and the warnings. Figures, HTML and exports only read this
model; nothing is re-measured (the store is the only input).
"""
from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..campaign import NetnsTestbed
from ..store import ResultsStore, is_store_url, open_store
from ..trial import TrialResult
from . import analysis_bridge as ab
from .numbers import FCS_B, Estimate, estimate
from .runtime import RuntimePoint, scenario_runtime

PDR_GOAL = "pdr@0.005"             # PASTRAMI / CSIT PDR
NU_WARN = 0.05                     # normalised uncertainty above this is flagged
STEAL_WARN = 0.01                  # steal time share above this is flagged
CDF_POINTS = 400                   # points kept per latency CDF
CDF_MAX_TRIALS = 12                # histograms merged per CDF (the rest add little)
CDF_TARGETS = (0.1, 0.5, 0.9)      # shares of PDR, as CSIT measures latency


# -- small value types -------------------------------------------------------------

def goal_label(goal: str) -> str:
    """'ndr' -> 'NDR', 'pdr@0.005' -> 'PDR@0.5%'."""
    if goal == "ndr":
        return "NDR"
    m = re.fullmatch(r"pdr@([0-9.eE+-]+)", goal)
    if m:
        return f"PDR@{float(m.group(1)) * 100:g}%"
    return goal.upper()


def goal_loss_ratio(goal: str) -> float | None:
    if goal == "ndr":
        return 0.0
    m = re.fullmatch(r"pdr@([0-9.eE+-]+)", goal)
    return float(m.group(1)) if m else None


def goal_sort_key(goal: str) -> tuple:
    lr = goal_loss_ratio(goal)
    return (0, lr) if lr is not None else (1, goal)


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return s[:60] or "x"


_TESTBED_DEFAULTS = {k: f.default for k, f in NetnsTestbed.model_fields.items()}

@dataclass
class GoalResult:
    goal: str
    estimate: Estimate
    source: str                     # "search" | "sweep" (derived from the load sweep)

    @property
    def label(self) -> str:
        return goal_label(self.goal)


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
    goals: dict[str, GoalResult] = field(default_factory=dict)
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

    def goal(self, goal: str) -> GoalResult | None:
        return self.goals.get(goal)

    @property
    def pdr(self) -> Estimate | None:
        g = self.goals.get(PDR_GOAL)
        return g.estimate if g else None

    @property
    def headline_goal(self) -> str | None:
        """The goal used to rank DUTs: PDR@0.5 %, else NDR, else the first one."""
        for g in (PDR_GOAL, "ndr"):
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
    goal: str
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
    goals: list[str]
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


# -- meters -------------------------------------------------------------------------

def _num(d: Any, *keys: str) -> float | None:
    """The first numeric value among `keys` in dict `d` (None if none)."""
    if not isinstance(d, dict):
        return None
    for k in keys:
        v = d.get(k)
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            return float(v)
    return None


def _share(v: float | None) -> float | None:
    """Utilisation given as % (0..100 * n) or as a share (0..1): -> share."""
    if v is None:
        return None
    return v / 100.0 if v > 1.5 else v


def meter_fields(meters: dict[str, Any], packets: int) -> dict[str, Any]:
    """Flatten a trial's ``meters`` dict (CPU and energy) into report fields.

    Every key is optional: a store written without meters, or by an older
    meter, still reports; missing values are None.
    """
    cpu = meters.get("cpu") if isinstance(meters, dict) else None
    energy = meters.get("energy") if isinstance(meters, dict) else None
    out: dict[str, Any] = {}
    util = steal = softirq = cpp = None
    cpp_est = False
    if isinstance(cpu, dict):
        dut = cpu.get("dut") if isinstance(cpu.get("dut"), dict) else None
        util = _share(_num(dut, "util", "busy", "utilisation", "utilization")
                      if dut else None)
        if util is None:
            util = _share(_num(cpu, "dut_util", "dut_busy", "dut_utilisation",
                               "dut_utilization", "util", "busy"))
        if util is None and isinstance(cpu.get("per_cpu"), (dict, list)):
            util = _per_cpu_dut_util(cpu)
        softirq = _share(_num(dut, "softirq_share", "softirq") if dut else None)
        if softirq is None:
            softirq = _share(_num(cpu, "softirq_share", "dut_softirq_share", "softirq"))
        steal = _share(_num(dut, "steal") if dut else None)
        if steal is None:
            steal = _share(_num(cpu, "steal", "steal_share", "max_steal"))
        cpp = _num(cpu, "cycles_per_packet", "cycles_per_packet_estimated")
        if cpp is None and dut:
            cpp = _num(dut, "cycles_per_packet", "cycles_per_packet_estimated")
        cpp_est = "cycles_per_packet" not in cpu and cpp is not None
        if isinstance(cpu.get("cycles_estimated"), bool):
            cpp_est = cpu["cycles_estimated"]
    out.update(dut_cpu_util=util, softirq_share=softirq, steal=steal,
               cycles_per_packet=cpp, cycles_estimated=cpp_est)
    joules = watts = ppj = jpm = None
    source = None
    measured = None
    if isinstance(energy, dict):
        joules = _num(energy, "joules", "energy_j")
        watts = _num(energy, "mean_watts", "watts")
        ppj = _num(energy, "packets_per_joule")
        jpm = _num(energy, "joules_per_mpkt")
        if ppj is None and joules and packets:
            ppj = packets / joules
        if jpm is None and joules is not None and packets:
            jpm = joules / (packets / 1e6)
        src = energy.get("source")
        source = str(src) if src is not None else None
        if isinstance(energy.get("measured"), bool):
            measured = energy["measured"]
        elif source is not None:
            measured = source not in ("cpu-model", "model", "modelled")
    scope = energy.get("scope") if isinstance(energy, dict) else None
    baseline = bool(energy.get("baseline_subtracted")) if isinstance(energy, dict) else False
    out.update(joules=joules, mean_watts=watts, packets_per_joule=ppj, joules_per_mpkt=jpm,
               energy_source=source, energy_measured=measured,
               energy_scope=str(scope) if scope else None, baseline_subtracted=baseline)
    return out


def _per_cpu_dut_util(cpu: dict) -> float | None:
    per = cpu.get("per_cpu")
    dut_cpus = cpu.get("dut_cpus")
    items: list[tuple[str, Any]]
    if isinstance(per, dict):
        items = list(per.items())
    else:
        items = [(str(x.get("cpu", i)), x) for i, x in enumerate(per) if isinstance(x, dict)]
    vals = []
    for k, v in items:
        if dut_cpus is not None and str(k) not in {str(c) for c in dut_cpus}:
            continue
        u = _share(_num(v, "util", "busy", "utilisation", "utilization"))
        if u is not None:
            vals.append(u)
    return sum(vals) / len(vals) if vals else None


# -- latency histograms --------------------------------------------------------------

def hdr_values_counts(b64: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode one HdrHistogram (V2, compressed, base64): recorded values and counts."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram.decode(b64)
    counts = np.ctypeslib.as_array(h.counts)[: h.counts_len].astype(np.int64)
    idx = np.nonzero(counts)[0]
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    shift = int(h.sub_bucket_half_count_magnitude)
    half = int(h.sub_bucket_half_count)
    bucket = (idx >> shift) - 1
    sub = (idx & (half - 1)) + half
    low = bucket < 0
    sub = np.where(low, sub - half, sub)
    bucket = np.where(low, 0, bucket)
    values = sub.astype(np.int64) << (bucket + int(h.unit_magnitude)).astype(np.int64)
    return values, counts[idx]


def merged_cdf(hdrs: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """CDF of the union of several histograms, thinned to CDF_POINTS points."""
    vs, cs = [], []
    for b64 in hdrs:
        try:
            v, c = hdr_values_counts(b64)
        except Exception:      # a corrupt histogram must not stop the report
            continue
        vs.append(v)
        cs.append(c)
    if not vs:
        return None
    values = np.concatenate(vs)
    counts = np.concatenate(cs)
    if values.size == 0:
        return None
    uniq, inv = np.unique(values, return_inverse=True)
    summed = np.bincount(inv, weights=counts)
    cum = np.cumsum(summed)
    p = cum / cum[-1]
    if uniq.size > CDF_POINTS:
        # evenly in p, and in log(1 - p) so the tail keeps its shape
        keep = np.unique(np.concatenate([
            [0],
            np.searchsorted(p, np.linspace(0, 1, CDF_POINTS // 2)).clip(0, uniq.size - 1),
            np.searchsorted(p, 1 - np.logspace(0, -6, CDF_POINTS // 2)).clip(0, uniq.size - 1),
            [uniq.size - 1]]))
        uniq, p = uniq[keep], p[keep]
    return uniq.astype(float), p


# -- reading the store ---------------------------------------------------------------

def _round_load(x: float) -> float:
    """Loads as a key: 9 significant digits (float noise from unit conversions)."""
    if x == 0:
        return 0.0
    return float(f"{x:.9g}")


def _trial_row(sc: dict[str, Any], t, r: TrialResult) -> dict[str, Any]:
    """One flat row per trial: the exports' trial table and the model's input."""
    lats = [s.latency for s in r.streams if s.latency]
    tx_bytes = sum(s.tx_bytes for s in r.streams)
    rx_bytes = sum(s.rx_bytes for s in r.streams)
    kind = t.kind
    if kind == "search" and t.reason.startswith("latency"):
        kind = "latency"            # CSIT-style latency trials run inside the search
    row: dict[str, Any] = {
        "trial_id": t.id,
        "scenario_id": t.scenario_id,
        "scenario": sc["name"],
        "dut": sc["dut_name"],
        "dut_type": sc["dut_type"],
        "frame_size": str(sc["profile"].get("frame_size")),
        "repetition": t.repetition,
        "seq": t.seq,
        "kind": kind,
        "reason": t.reason,
        "intended_load_pps": t.intended_load_pps,
        "duration_s": t.duration_s,
        "streams": len(r.streams),
        "intended_packets": r.intended_packets,
        "tx_packets": r.tx_packets,
        "tx_bytes": tx_bytes,
        "rx_packets": r.rx_packets,
        "rx_bytes": rx_bytes,
        "lost": r.lost,
        "loss_ratio": r.loss_ratio,
        "delivery_ratio": r.delivery_ratio,
        "forwarding_rate_pps": r.forwarding_rate_pps,
        "achieved_tx_pps": (sum(s.achieved_tx_pps for s in r.streams) / len(r.streams)
                            if r.streams else None),
        "generator_limited": r.generator_limited,
        "generator": r.backend,
        "reordered": _measured_sum(s.reordered for s in r.streams),
        "duplicated": _measured_sum(s.duplicated for s in r.streams),
        "lat_min_ns": min(l.min_ns for l in lats) if lats else None,
        "lat_mean_ns": (sum(l.mean_ns for l in lats) / len(lats)) if lats else None,
        "lat_p50_ns": max(l.p50_ns for l in lats) if lats else None,
        "lat_p90_ns": max(l.p90_ns for l in lats) if lats else None,
        "lat_p99_ns": max(l.p99_ns for l in lats) if lats else None,
        "lat_p999_ns": max(l.p999_ns for l in lats) if lats else None,
        "lat_max_ns": max(l.max_ns for l in lats) if lats else None,
        "jitter_ns": max(l.jitter_ns for l in lats) if lats else None,
        "warnings": "; ".join(list(r.warnings) + [
            str(w) for w in ((r.meters or {}).get("warnings") or [])]),
    }
    row.update(meter_fields(r.meters or {}, r.rx_packets or r.tx_packets))
    return row


def _generator_label(r: TrialResult) -> str:
    """Which generator measured a trial, with its version and backend."""
    raw, backend = r.raw or {}, r.backend or "?"
    for name, key in (("TRex", "trex_version"), ("fwdgen", "fwdgen_version")):
        prefix = name.lower()
        if backend == prefix or backend.startswith(prefix + "-"):
            how = backend[len(prefix) + 1:]
            return f"{name} {raw.get(key) or '?'}" + (f" ({how})" if how else "")
    return backend


def _measured_sum(values: Iterable[int | None]) -> int | None:
    """Sum of per-stream counts; None (not measured) if any stream did not count it."""
    vals = list(values)
    return None if any(v is None for v in vals) else sum(vals)


def _group_of(sc: dict[str, Any]) -> tuple[str, str]:
    """Scenarios that differ only in the DUT share a group (and a figure)."""
    axes = {k: v for k, v in (sc["axes"] or {}).items() if k != "dut"}
    prof = dict(sc["profile"] or {})
    key = json.dumps({"axes": axes, "profile": prof}, sort_keys=True, default=str)
    fs = prof.get("frame_size")
    what = [f"{fs} B" if isinstance(fs, int) else str(fs).upper()]
    if prof.get("l3"):
        what.append(str(prof["l3"]).replace("ipv", "IPv"))
    parts = [str(axes.get("profile", prof.get("name", ""))), " ".join(what)]
    flows = prof.get("flows")
    if flows:
        parts.append(f"{flows} flow" + ("s" if flows != 1 else ""))
    if prof.get("direction") == "bi":
        parts.append("bidirectional")
    for k, v in axes.items():
        if k in ("profile", "profile.frame_size", "profile.l3", "profile.flows",
                 "profile.direction"):
            continue
        parts.append(f"{k.split('.')[-1]}={v}")
    label = " · ".join(p for p in parts if p)
    return key, label


def load_model(db: Path | str) -> ReportModel:
    """Read a results store into the report model (nothing is written to it)."""
    from ..errors import FwdbenchError
    try:
        # read-only; a PostgreSQL URL's errors are StoreErrors already
        store = open_store(db, read_only=True)
    except sqlite3.DatabaseError as e:
        raise FwdbenchError(f"{db}: not a fwdbench results file ({e})") from None
    try:
        # the report names its source: the file, or database:schema (never the URL)
        return _load(store, Path(store.label) if is_store_url(db) else Path(db))
    except sqlite3.DatabaseError as e:
        raise FwdbenchError(f"{db}: cannot read the results ({e})") from None
    finally:
        store.close()


def _load(store: ResultsStore, db: Path) -> ReportModel:
    camp = store.campaign()
    if camp is None:
        from ..errors import FwdbenchError
        raise FwdbenchError(f"{db}: holds no campaign (was 'fwdbench run' started with it?)")
    cfg = camp.get("config") or {}
    info = cfg.get("campaign") or {}
    sc_rows = store.scenarios()
    scen: dict[int, ScenarioReport] = {}
    for sc in sc_rows:
        gkey, glabel = _group_of(sc)
        scen[sc["id"]] = ScenarioReport(
            id=sc["id"], idx=sc["idx"], name=sc["name"], dut_name=sc["dut_name"],
            dut_type=sc["dut_type"], dut_params=sc["dut_params"] or {},
            profile=sc["profile"] or {}, search=sc["search"] or {}, axes=sc["axes"] or {},
            max_load_pps=sc["max_load_pps"], describe=sc["describe"],
            group_key=gkey, group_label=glabel)
    raw = {s["id"]: s for s in sc_rows}

    # one pass over the trials
    trial_rows: list[dict[str, Any]] = []
    by_scen: dict[int, list[tuple[dict, TrialResult]]] = defaultdict(list)
    fwdgen_versions: set[str] = set()
    generators: Counter[str] = Counter()
    pacers: Counter[str] = Counter()
    pacing: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for t in store.trials("done"):
        if t.result is None or t.scenario_id not in raw:
            continue
        row = _trial_row(raw[t.scenario_id], t, t.result)
        trial_rows.append(row)
        by_scen[t.scenario_id].append((row, t.result))
        v = (t.result.raw or {}).get("fwdgen_version")
        if v:
            fwdgen_versions.add(str(v))
        generators[_generator_label(t.result)] += 1
        pacer, burst = _trial_pacing(t.result.raw or {})
        if pacer:
            pacers[pacer] += 1
            if burst:
                pacing[pacer].append(burst)

    result_rows = []
    res_by_scen: dict[int, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    for r in store.results():
        sc = raw.get(r["scenario_id"])
        if sc is None:
            continue
        result_rows.append({
            "scenario_id": r["scenario_id"], "scenario": sc["name"], "dut": sc["dut_name"],
            "repetition": r["repetition"], "goal": r["goal"], "value_pps": r["value_pps"],
            "detail": json.dumps(r["detail"], sort_keys=True, default=str)})
        if goal_loss_ratio(r["goal"]) is not None:
            res_by_scen[r["scenario_id"]][r["goal"]].append(r["value_pps"])

    counts = store.trial_counts()
    first, last = store.done_span()
    wall = (last - first) if first is not None and last is not None else None

    for sid, s in scen.items():
        _fill_scenario(s, by_scen.get(sid, []), res_by_scen.get(sid, {}))

    scenarios = sorted(scen.values(), key=lambda s: s.idx)
    groups = _groups(scenarios)
    duts = list(dict.fromkeys(s.dut_name for s in scenarios))
    goals = sorted({g for s in scenarios for g in s.goals}, key=goal_sort_key)
    tb = cfg.get("testbed") or {}
    host = camp.get("host") or {}
    placement = {
        "gen_cpu": host.get("gen_cpu", tb.get("gen_cpu")),
        "dut_cpu": host.get("dut_cpu", tb.get("dut_cpu")),
        "testbed": tb.get("type"),
        "kernel_tuning": tb.get("kernel_tuning"),
        # absent from older campaign files: the schema's default applied to them too
        "dut_rx_queue": tb.get("dut_rx_queue", _TESTBED_DEFAULTS["dut_rx_queue"])
        if tb.get("type", "netns") == "netns" else None,
        "line_rate": tb.get("line_rate"),
        "max_load": tb.get("max_load"),
    }
    fwdgen_version = host.get("fwdgen_version") or host.get("fwdgen") or (
        ", ".join(sorted(fwdgen_versions)) if fwdgen_versions else None)
    model = ReportModel(
        db_path=db, name=camp["name"], description=str(info.get("description") or ""),
        question=str(info.get("question") or ""), source_path=camp.get("source_path", ""),
        config_text=camp.get("config_text", ""), config=cfg, host=host,
        tool_version=camp.get("tool_version", ""), created_at=camp.get("created_at", 0.0),
        scenarios=scenarios, groups=groups, duts=duts, goals=goals, trial_counts=counts,
        measured_seconds=sum(s.trial_seconds for s in scenarios), wall_seconds=wall,
        warnings=[], methodology="", placement=placement, fwdgen_version=fwdgen_version,
        repetitions=int(info.get("repetitions") or
                        max((len(s.repetitions) for s in scenarios), default=0)),
        trial_rows=trial_rows, result_rows=result_rows, simulated=tb.get("type") == "sim",
        pacers=dict(pacers), pacing=dict(pacing), generators=dict(generators))
    model.warnings = _warnings(model)
    model.methodology = methodology_text(model)
    return model


def _fill_scenario(s: ScenarioReport, trials: list[tuple[dict, TrialResult]],
                   results: dict[str, list[float | None]]) -> None:
    measured = [(row, r) for row, r in trials if row["kind"] != "warmup"]
    s.warmup_trials = len(trials) - len(measured)
    s.trials = len(measured)
    s.trial_seconds = sum(row["duration_s"] for row, _ in measured)
    s.generator_limited = sum(1 for row, _ in measured if row["generator_limited"])
    steals = [row["steal"] for row, _ in measured if row["steal"] is not None]
    s.max_steal = max(steals) if steals else None
    s.repetitions = sorted({row["repetition"] for row, _ in measured if row["repetition"] >= 0})
    search_rows = [(row, r) for row, r in measured if row["kind"] == "search"]
    stype = (s.search or {}).get("type", "sweep")

    # load-loss curve: one point per offered load, over repetitions
    by_load: dict[float, list[dict]] = defaultdict(list)
    for row, _ in search_rows:
        by_load[_round_load(row["intended_load_pps"])].append(row)
    pts = []
    for load in sorted(by_load):
        rows = by_load[load]
        plr = estimate([r["loss_ratio"] for r in rows])
        thr = estimate([load * (1 - r["loss_ratio"]) for r in rows])
        pts.append(CurvePoint(load, plr, thr, sum(1 for r in rows if r["generator_limited"])))
    s.curve = pts
    s.curve_kind = ("sweep" if stype == "sweep" else "search") if pts else None
    if stype == "sweep" and len(pts) >= 2:
        s.pastrami = ab.pastrami_verdict([p.load_pps for p in pts],
                                         [p.plr.mean or 0.0 for p in pts])
    elif stype == "sweep" and pts:
        s.pastrami = Pastrami("n/a", "one offered load only: PASTRAMI needs a sweep over "
                                     "several loads")
    elif pts:
        s.pastrami = Pastrami("n/a", f"the loads were chosen by a {stype} search, not swept; "
                                     "PASTRAMI needs a load sweep")
    else:
        s.pastrami = Pastrami("n/a", "no load-loss curve")

    # goals: the search's own results, else derived from the sweep per repetition
    for goal, vals in results.items():
        s.goals[goal] = GoalResult(goal, estimate(vals), "search")
    if stype == "sweep" and search_rows:
        per_rep: dict[int, list[dict]] = defaultdict(list)
        for row, _ in search_rows:
            per_rep[row["repetition"]].append(row)
        for goal in ("ndr", PDR_GOAL):
            if goal in s.goals:
                continue
            lr = goal_loss_ratio(goal) or 0.0
            vals: list[float | None] = []
            for rep in sorted(per_rep):
                ok = [r["intended_load_pps"] for r in per_rep[rep]
                      if r["loss_ratio"] <= lr + 1e-15]
                vals.append(max(ok) if ok else None)
            s.goals[goal] = GoalResult(goal, estimate(vals), "sweep")
    s.goals = dict(sorted(s.goals.items(), key=lambda kv: goal_sort_key(kv[0])))

    s.latency = _latency_points(s, measured)
    s.meters = _meter_points(measured)
    s.runtime = scenario_runtime(measured, s.describe, goal_loss_ratio(PDR_GOAL) or 0.0)
    s.thesis = _thesis_row(s, measured)


def _latency_points(s: ScenarioReport, measured: list[tuple[dict, TrialResult]]
                    ) -> list[LatencyPoint]:
    lat_trials = [(row, r) for row, r in measured if row["kind"] == "latency"
                  and row["lat_p50_ns"] is not None]
    source = "latency"
    if not lat_trials:
        lat_trials = [(row, r) for row, r in measured if row["lat_p50_ns"] is not None]
        source = "search"
    if not lat_trials:
        return []
    pdr = s.pdr.mean if s.pdr else None
    # CSIT-style latency trials are grouped by their share of the PDR (the PDR, and so
    # the load, differs per repetition); other trials by offered load
    by_key: dict[float, list[tuple[dict, TrialResult]]] = defaultdict(list)
    shares = {}
    for row, r in lat_trials:
        share = _reason_share(row["reason"]) if source == "latency" else None
        key = share if share is not None else _round_load(row["intended_load_pps"])
        shares[key] = share
        by_key[key].append((row, r))
    pts = []
    for key in sorted(by_key):
        items = by_key[key]
        rows = [row for row, _ in items]

        def mean(key: str) -> float:
            return float(np.mean([row[key] for row in rows]))

        load = mean("intended_load_pps")
        hdrs = [l.hdr for _, r in items for st in r.streams
                for l in [st.latency] if l is not None and l.hdr]
        share = shares[key]
        if share is None and pdr:
            share = 100.0 * load / pdr
        pts.append(LatencyPoint(
            load_pps=load, pct_of_pdr=share, n=len(rows),
            min_ns=float(min(row["lat_min_ns"] for row in rows)), mean_ns=mean("lat_mean_ns"),
            p50_ns=mean("lat_p50_ns"), p90_ns=mean("lat_p90_ns"), p99_ns=mean("lat_p99_ns"),
            p999_ns=mean("lat_p999_ns"), max_ns=float(max(row["lat_max_ns"] for row in rows)),
            jitter_ns=mean("jitter_ns"), source=source, hdr=hdrs))
    # CDFs: every level of CSIT-style latency trials; else loads near 10/50/90 % of PDR
    if source == "latency":
        chosen = pts
    else:
        below = [p for p in pts if pdr is None or p.load_pps <= pdr * 1.0001] or pts
        ref = pdr if pdr else max(p.load_pps for p in pts)
        chosen = []
        for share in CDF_TARGETS:
            best = min(below, key=lambda p: abs(p.load_pps - share * ref))
            if best not in chosen:
                chosen.append(best)
    for p in chosen:
        cdf = merged_cdf(p.hdr[:CDF_MAX_TRIALS])
        if cdf is not None:
            p.cdf_ns, p.cdf_p = cdf
    for p in pts:
        p.hdr = []
    return pts


_SHARE = re.compile(r"latency at ([0-9.]+)% of (PDR|NDR)")


def _reason_share(reason: str) -> float | None:
    """'latency at 50% of PDR 123 pps' -> 50.0 (the search's own share of its PDR)."""
    m = _SHARE.match(reason or "")
    return float(m.group(1)) if m else None


def _meter_points(measured: list[tuple[dict, TrialResult]]) -> list[MeterPoint]:
    by_load: dict[float, list[dict]] = defaultdict(list)
    for row, _ in measured:
        # a generator-limited trial did not offer its intended load: no point on this axis
        if row["kind"] != "search" or row["generator_limited"]:
            continue
        by_load[_round_load(row["intended_load_pps"])].append(row)
    pts = []

    def avg(rows: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rows if r[key] is not None]
        return float(np.mean(vals)) if vals else None

    for load in sorted(by_load):
        rows = by_load[load]
        sources = {r["energy_source"] for r in rows if r["energy_source"]}
        measured_flags = {r["energy_measured"] for r in rows if r["energy_measured"] is not None}
        pts.append(MeterPoint(
            load_pps=load, n=len(rows), dut_cpu_util=avg(rows, "dut_cpu_util"),
            softirq_share=avg(rows, "softirq_share"), steal=avg(rows, "steal"),
            cycles_per_packet=avg(rows, "cycles_per_packet"),
            cycles_estimated=any(r["cycles_estimated"] for r in rows),
            joules=avg(rows, "joules"), mean_watts=avg(rows, "mean_watts"),
            packets_per_joule=avg(rows, "packets_per_joule"),
            joules_per_mpkt=avg(rows, "joules_per_mpkt"),
            energy_source=", ".join(sorted(sources)) or None,
            energy_measured=(measured_flags.pop() if len(measured_flags) == 1 else None)))
    if not any(p.dut_cpu_util is not None or p.cycles_per_packet is not None
               or p.joules is not None for p in pts):
        return []
    return pts


def _thesis_row(s: ScenarioReport, measured: list[tuple[dict, TrialResult]]) -> ThesisRow:
    tx = sum(row["tx_packets"] for row, _ in measured)
    txb = sum(row["tx_bytes"] for row, _ in measured)
    e = [row["joules"] for row, _ in measured if row["joules"] is not None]
    flags = {row["energy_measured"] for row, _ in measured if row["energy_measured"] is not None}
    sources = sorted({row["energy_source"] for row, _ in measured if row["energy_source"]})
    return ThesisRow(
        scenario=s.name, dut=s.dut_name, trials=len(measured),
        duration_s=sum(row["duration_s"] for row, _ in measured),
        tx_packets=tx, tx_bytes=txb, tx_bytes_fcs=txb + FCS_B * tx,
        rx_packets=sum(row["rx_packets"] for row, _ in measured),
        energy_j=math.fsum(e) if e else None, energy_trials=len(e),
        energy_measured=flags.pop() if len(flags) == 1 else None,
        energy_source=", ".join(sources) or None)


def _groups(scenarios: list[ScenarioReport]) -> list[Group]:
    groups: dict[str, Group] = {}
    for s in scenarios:
        g = groups.setdefault(s.group_key, Group(s.group_key, s.group_label, []))
        g.scenarios.append(s)
    labels: dict[str, int] = defaultdict(int)
    for g in groups.values():           # two groups must not share a label (slugs, figures)
        labels[g.label] += 1
        if labels[g.label] > 1:
            g.label = f"{g.label} ({labels[g.label]})"
        g.winner = _winner(g)
    return list(groups.values())


def _winner(g: Group) -> Winner | None:
    ranked = []
    goal = None
    for cand in (PDR_GOAL, "ndr"):
        ranked = [s for s in g.scenarios if s.goal(cand) and s.goals[cand].estimate.mean]
        if ranked:
            goal = cand
            break
    if not ranked or goal is None:
        return None
    ranked.sort(key=lambda s: s.goals[goal].estimate.mean or 0.0, reverse=True)
    best = ranked[0]
    if len(ranked) == 1:
        return Winner(best.dut_name, best, goal, None, None, None, None)
    second = ranked[1]
    a = best.goals[goal].estimate
    b = second.goals[goal].estimate
    ratio = (a.mean / b.mean) if b.mean else None
    p = ab.welch_p_value(list(a.values), list(b.values))
    return Winner(best.dut_name, best, goal, second, ratio, p,
                  None if p is None else bool(p < 0.05))


def _warnings(m: ReportModel) -> list[ReportWarning]:
    out: list[ReportWarning] = []
    for s in m.scenarios:
        if s.generator_limited:
            loads = sorted({p.load_pps for p in s.curve if p.generator_limited})
            where = (f" (offered loads from {loads[0] / 1e6:.3f} Mpps)" if loads else "")
            out.append(ReportWarning(
                "generator-limited", s.name,
                f"In {s.generator_limited} of {s.trials} trials the generator, not the DUT, "
                f"was the limit: it sent more than 0.5 % below the intended rate{where}.",
                "Their loss belongs to the tester. Lower testbed.max_load below the rate the "
                "generator reaches, or give the generator its own CPU."))
        if s.pastrami.verdict == "BAD":
            out.append(ReportWarning(
                "pastrami-bad", s.name,
                f"PASTRAMI verdict BAD: {s.pastrami.detail}",
                "PDR@0.5% alone misrepresents this DUT here; report the load-loss curve "
                "with it, or find the noise source (pinning, ring sizes, other load)."))
        for gr in s.goals.values():
            nu = gr.estimate.normalised_uncertainty
            if nu is not None and nu > NU_WARN:
                out.append(ReportWarning(
                    "uncertainty", s.name,
                    f"{gr.label}: normalised uncertainty {nu * 100:.1f} % "
                    f"(95 % CI half-width over {gr.estimate.n} repetitions) is above "
                    f"{NU_WARN * 100:.0f} %.",
                    "Run more repetitions or longer trials, and check for background load."))
            if gr.estimate.missing:
                out.append(ReportWarning(
                    "not-found", s.name,
                    f"{gr.label} was not found in {gr.estimate.missing} repetition(s): "
                    "even the lowest load lost more than the goal allows.",
                    "Lower the search's minimum load, or look at the DUT's configuration."))
        if s.max_steal is not None and s.max_steal > STEAL_WARN:
            out.append(ReportWarning(
                "steal", s.name,
                f"CPU steal time up to {s.max_steal * 100:.1f} %: the hypervisor took CPU "
                "time from this host during trials.",
                "Results from a shared VM are noisy; use dedicated cores or bare metal, "
                "or repeat the campaign at a quieter time."))
    reps = {len(s.repetitions) for s in m.scenarios if s.trials}
    if reps and max(reps) < 2:
        out.append(ReportWarning(
            "repetitions", None,
            "Every scenario ran once: there are no confidence intervals.",
            "Set campaign.repetitions to 5 or more (PASTRAMI uses 30-50)."))
    bad = {k: v for k, v in m.trial_counts.items() if k in ("failed", "interrupted") and v}
    if bad:
        out.append(ReportWarning(
            "trials", None,
            "Trials that did not finish: " + ", ".join(f"{v} {k}" for k, v in bad.items())
            + ". They are kept in the store and excluded from every number here.",
            "See the 'error' column of the trial table; 'fwdbench run --resume' reruns "
            "interrupted trials."))
    msgs: dict[str, int] = defaultdict(int)
    for row in m.trial_rows:
        for w in filter(None, (row["warnings"] or "").split("; ")):
            msgs[w] += 1
    for w, n in sorted(msgs.items(), key=lambda kv: -kv[1])[:10]:
        out.append(ReportWarning("trial", None, f"{n} trial(s) reported: {w}",
                                 "See the trial table (data/trials.csv) for which ones."))
    return out


# -- methodology ----------------------------------------------------------------------

def _fmt_secs(v: Any) -> str:
    from ..units import UnitError, parse_duration
    try:
        return f"{parse_duration(v):g} s"
    except (UnitError, TypeError, ValueError):
        return str(v)


def _pct_list(v: Any) -> str:
    if not isinstance(v, list):
        return str(v)
    return ", ".join(f"{float(x) * 100:g} %" for x in v)


def _search_phrase(search: dict[str, Any]) -> str:
    """One search's settings in words (keys of fwdbench.search.settings)."""
    t = search.get("type", "sweep")
    lat = search.get("latency")
    if t == "sweep":
        loads = search.get("loads_pps")
        if loads:
            txt = (f"a load sweep over {len(loads)} offered loads from "
                   f"{min(loads) / 1e6:.3f} to {max(loads) / 1e6:.3f} Mpps")
        elif search.get("start_pps"):
            txt = (f"a load sweep from {search['start_pps'] / 1e6:.3f} to "
                   f"{search['stop_pps'] / 1e6:.3f} Mpps in steps of "
                   f"{search['step_pps'] / 1e6:.3f} Mpps")
        elif search.get("pdr_fractions"):
            txt = f"a load sweep at {_pct_list(search['pdr_fractions'])} of an earlier PDR"
        else:
            txt = "a load sweep"
        n = search.get("repetitions") or 1
        if n != 1:
            txt += f", {n} trials per load"
        if search.get("trial_duration_s"):
            txt += f", {search['trial_duration_s']:g} s trials"
    elif t == "binary":
        txt = "an RFC 2544 binary search"
        if search.get("relative_width") is not None:
            txt += f" to a relative width of {float(search['relative_width']) * 100:g} %"
        if search.get("loss_ratios") is not None:
            txt += f" for loss goals of {_pct_list(search['loss_ratios'])}"
        if search.get("trial_duration_s"):
            txt += f" with {search['trial_duration_s']:g} s trials"
        if search.get("verify"):
            txt += ", verifying each result with a final trial"
    elif t == "mlr":
        txt = "MLRsearch (FD.io CSIT)"
        if search.get("loss_ratios") is not None:
            txt += f" for loss goals of {_pct_list(search['loss_ratios'])}"
        if search.get("initial_trial_duration_s") is not None:
            txt += (f" with trials of {search['initial_trial_duration_s']:g} s to "
                    f"{search.get('final_trial_duration_s', '?'):g} s, a duration sum of "
                    f"{search.get('duration_sum_s', 0):g} s and an exceed ratio of "
                    f"{search.get('exceed_ratio', 0):g}")
    elif t == "latency":
        txt = f"latency trials at {_pct_list(search.get('fractions', []))} of the PDR"
    else:
        txt = f"a {t} search"
    if isinstance(lat, dict):
        txt += (f", then latency trials at {_pct_list(lat.get('fractions', []))} of the "
                f"PDR found ({lat.get('trial_duration_s', '?'):g} s each)")
    return txt


def _search_summary(scenarios: list[ScenarioReport]) -> list[str]:
    """Searches in words, sweeps of the same shape merged (their load ranges joined)."""
    out: dict[str, list[ScenarioReport]] = {}
    for s in scenarios:
        srch = dict(s.search)
        if srch.get("type") == "sweep" and srch.get("loads_pps"):
            srch["loads_pps"] = None          # merged below
            key = "sweep:" + _search_phrase(srch) + f":{len(s.search['loads_pps'])}"
        else:
            key = _search_phrase(srch)
        out.setdefault(key, []).append(s)
    phrases = []
    for key, scs in out.items():
        n = f" ({len(scs)} scenario{'s' if len(scs) != 1 else ''})" if len(out) > 1 else ""
        if key.startswith("sweep:"):
            loads = [x for s in scs for x in s.search["loads_pps"]]
            rest = _search_phrase({**scs[0].search, "loads_pps": None}).removeprefix(
                "a load sweep")
            phrases.append(f"a load sweep over {len(scs[0].search['loads_pps'])} offered loads "
                           f"(between {min(loads) / 1e6:.3f} and {max(loads) / 1e6:.3f} Mpps "
                           f"over all scenarios){rest}{n}")
        else:
            phrases.append(key + n)
    return phrases


def _trial_pacing(raw: dict[str, Any]) -> tuple[str | None, tuple[int, float] | None]:
    """How fwdgen paced a trial's load (contracts.md, `pacer`, `pace_burst`): the
    pacer, None for other generators, "max" loads and fwdgen versions that did
    not say; and (frames it sent together, us of traffic they stand for), None
    where fwdgen did not say."""
    streams = raw.get("streams") or []
    s = streams[0] if streams and isinstance(streams[0], dict) else {}
    pacer = s.get("pacer") if s.get("pacer") in ("kernel", "user") else None
    b, pps = s.get("pace_burst"), s.get("intended_pps")
    if not isinstance(b, int) or b < 1 or not isinstance(pps, (int, float)) or pps <= 0:
        return pacer, None
    return pacer, (b, b / pps * 1e6)


def _span(values: list[float], fmt: str) -> str:
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def _ingress_text(m: ReportModel) -> str | None:
    """How each DUT's ports received, from the scenarios' ``lab_ingress``
    records (testbeds.py); None when a scenario has none (older stores)."""
    duts: dict[str, list[str]] = {}
    queues: dict[str, set[int]] = {}
    for s in m.scenarios:
        ing = (s.describe or {}).get("lab_ingress")
        if not isinstance(ing, dict) or ing.get("mode") not in ("napi", "cpumap", "afxdp"):
            return None
        names = duts.setdefault(ing["mode"], [])
        if s.dut_name not in names:
            names.append(s.dut_name)
        queues.setdefault(ing["mode"], set()).add(int(ing.get("queue") or 0))
    out = []
    if "cpumap" in duts:
        q = "/".join(str(x) for x in sorted(queues["cpumap"]))
        out.append(f"{', '.join(duts['cpumap'])} (kernel data planes) received through a "
                   f"{q}-frame queue in front of the DUT CPU (cpumap, as a NIC's RX ring), "
                   "filled on the generator's CPU: veth's receive and a redirect per frame.")
    if "afxdp" in duts:
        out.append(f"{', '.join(duts['afxdp'])} (AF_XDP data planes) received through their "
                   "sockets' RX rings, filled on the generator's CPU as well: veth's receive, "
                   "the data plane's redirect to its socket and the copy into the socket's "
                   "memory, which a zero-copy NIC does by DMA.")
    moved = [n for k in ("cpumap", "afxdp") for n in duts.get(k, [])]
    if "napi" in duts:
        out.append(f"{', '.join(duts['napi'])} received through veth's 256-frame ring with "
                   "threaded NAPI on the DUT CPU.")
        if moved:
            out.append("So the DUT CPU and energy figures of the data planes with a queue "
                       "leave veth's receive out, while those of "
                       f"{', '.join(duts['napi'])} include it.")
    elif moved:
        out.append("So the DUT CPU and energy figures leave veth's receive out.")
    return " ".join(out)


def _pacing_text(m: ReportModel) -> str:
    """How fwdgen paced the trials, from what each trial's result says."""
    kern = [b for b in m.pacing.get("kernel", []) if b[0] > 1]
    user = m.pacing.get("user", [])
    text = (f"fwdgen paced {m.pacers.get('kernel', 0)} trial(s) in its XDP program, frame by "
            "frame on a schedule")
    if kern:
        text += (f" ({len(kern)} of them in groups of {_span([b for b, _ in kern], '{:.0f}')} "
                 f"frames, {_span([u for _, u in kern], '{:.0f}')} us of traffic each, as a "
                 "NIC coalesces interrupts)")
    text += f", and {m.pacers.get('user', 0)} in bursts from user space"
    if user:
        text += (f" of {_span([b for b, _ in user], '{:.0f}')} frames, one per "
                 f"{_span([u for _, u in user], '{:.0f}')} us of traffic")
    return text + "."


def methodology_text(m: ReportModel) -> str:
    cfg = m.config
    trial = cfg.get("trial") or {}
    tb = cfg.get("testbed") or {}
    searches = _search_summary(m.scenarios)
    sizes = ", ".join(f"{f} B" if isinstance(f, int) else str(f).upper()
                      for f in m.frame_sizes)
    parts = [
        f"The campaign '{m.name}' measured {len(m.duts)} DUT(s) "
        f"({', '.join(m.duts)}) in {len(m.scenarios)} scenario(s) with frame sizes of "
        f"{sizes} (frame sizes include the 4-byte FCS).",
        f"Each scenario ran {m.repetitions} repetition(s) of {'; '.join(searches)}. "
        f"Every trial began with {_fmt_secs(trial.get('warmup', 0))} of warm-up traffic "
        "that was not counted"
        + (", and one discarded warm-up trial followed every DUT setup" if trial.get(
            "warmup_trial") else "") + ".",
        "A trial's packet loss ratio is (intended - received) / intended packets, so "
        "packets the generator did not send count as lost.",
        "NDR is the highest offered load with zero loss and PDR@0.5% the highest with a "
        "loss ratio of at most 0.5 %; where a sweep ran, both are read from its loads per "
        "repetition.",
        "Values are means over repetitions with 95 % confidence intervals from Student's t "
        "(n - 1 degrees of freedom); a load-loss curve is judged with PASTRAMI's throughput "
        "increase ratio (saturation entry below 0.3, kept below 0.1).",
    ]
    if tb.get("type") == "sim":
        parts.append("The DUTs were simulated (testbed 'sim'): no packets were forwarded.")
    elif m.placement.get("gen_cpu") is not None:
        parts.append(f"The generator ran on CPU {m.placement['gen_cpu']} and the DUT on CPU "
                     f"{m.placement['dut_cpu']} of the same host, joined by veth pairs "
                     "in network namespaces.")
        q = m.placement.get("dut_rx_queue")
        tuned = m.placement.get("kernel_tuning", True) is not False
        ingress = _ingress_text(m) if tuned else None
        if ingress:
            parts.append(ingress)
        elif q and tuned:
            # stores from before scenarios recorded their lab_ingress
            parts.append(f"Kernel data planes received through a {q}-frame queue in front "
                         "of the DUT CPU (cpumap, as a NIC's RX ring); the others through "
                         "veth's 256-frame ring with threaded NAPI on the DUT CPU. The "
                         "queue is filled on the generator's CPU (veth's receive and a "
                         "redirect per frame), as a NIC fills its ring, so the DUT CPU and "
                         "energy figures of kernel data planes leave that work out, while "
                         "those of the others include veth's receive.")
        if m.latency_any and tuned:
            parts.append("In latency trials without background load the generator's ports "
                         "received inline on the DUT CPU, so frames were stamped as the DUT "
                         "sent them; under load the generator's CPU received them, and its "
                         "wake-up is part of the latency.")
    if m.pacers:
        parts.append(_pacing_text(m))
    if m.energy_any:
        kinds = {mp.energy_measured for s in m.scenarios for mp in s.meters
                 if mp.joules is not None}
        scopes = sorted({r["energy_scope"] for r in m.trial_rows if r.get("energy_scope")})
        base = any(r.get("baseline_subtracted") for r in m.trial_rows)
        parts.append("Energy was " + (
            "measured" if kinds == {True} else "modelled from CPU time" if kinds == {False}
            else "measured where a meter existed and modelled elsewhere")
            + " for every trial" + (f" (scope: {'; '.join(scopes)})" if scopes else "")
            + (", with the idle baseline subtracted" if base else ", gross (no idle baseline "
               "subtracted)") + "; packets per joule count received packets.")
    return " ".join(parts)
