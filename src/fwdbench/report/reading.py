"""Reading one results store into the report model: one pass over the campaign,
its scenarios, every finished trial and the search results. A trial says what
it was (its intent's columns: kind, step, goal, latency fraction) and a result
its goal's loss ratio; nothing is parsed back from text."""
from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..campaign import NetnsTestbed
from ..goal import LossGoal
from ..store import ResultsStore, is_store_url, open_store
from ..trial import TrialResult
from .meter_fields import meter_fields
from .methods import methodology_text
from .stats import _fill_scenario, _groups
from .types import ReportModel, ScenarioReport
from .warnings import report_warnings

_TESTBED_DEFAULTS = {k: f.default for k, f in NetnsTestbed.model_fields.items()}


def _trial_row(sc: dict[str, Any], t, r: TrialResult) -> dict[str, Any]:
    """One flat row per trial: the exports' trial table and the model's input."""
    lats = [s.latency for s in r.streams if s.latency]
    tx_bytes = sum(s.tx_bytes for s in r.streams)
    rx_bytes = sum(s.rx_bytes for s in r.streams)
    intent = t.intent
    row: dict[str, Any] = {
        "trial_id": t.id,
        "scenario_id": t.scenario_id,
        "scenario": sc["name"],
        "dut": sc["dut_name"],
        "dut_type": sc["dut_type"],
        "frame_size": str(sc["profile"].get("frame_size")),
        "repetition": t.repetition,
        "seq": t.seq,
        "kind": intent.kind,
        "step": intent.step,
        "goal_loss_ratio": intent.goal_loss_ratio,
        "latency_fraction": intent.latency_fraction,
        "latency_reference": intent.latency_reference,
        "reason": intent.reason,
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


def _dut_label(sc: dict[str, Any]) -> str:
    """The DUT's name, with the link beside it where it is not the lab's veth, so
    every table and figure says which link each row used."""
    link = (sc.get("describe") or {}).get("link")
    return sc["dut_name"] if link in (None, "veth") else f"{sc['dut_name']} ({link})"


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
            id=sc["id"], idx=sc["idx"], name=sc["name"], dut_name=_dut_label(sc),
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
    res_by_scen: dict[int, dict[LossGoal, list[float | None]]] = defaultdict(
        lambda: defaultdict(list))
    for r in store.results():
        sc = raw.get(r["scenario_id"])
        if sc is None:
            continue
        result_rows.append({
            "scenario_id": r["scenario_id"], "scenario": sc["name"], "dut": sc["dut_name"],
            "repetition": r["repetition"], "goal": r["goal"], "loss_ratio": r["loss_ratio"],
            "value_pps": r["value_pps"],
            "detail": json.dumps(r["detail"], sort_keys=True, default=str)})
        if r["loss_ratio"] is not None:          # None: the search's own record
            res_by_scen[r["scenario_id"]][LossGoal(r["loss_ratio"])].append(r["value_pps"])

    counts = store.trial_counts()
    first, last = store.done_span()
    wall = (last - first) if first is not None and last is not None else None

    for sid, s in scen.items():
        _fill_scenario(s, by_scen.get(sid, []), res_by_scen.get(sid, {}))

    scenarios = sorted(scen.values(), key=lambda s: s.idx)
    groups = _groups(scenarios)
    duts = list(dict.fromkeys(s.dut_name for s in scenarios))
    goals = sorted({g for s in scenarios for g in s.goals})
    tb = cfg.get("testbed") or {}
    host = camp.get("host") or {}
    placement = {
        "gen_cpu": host.get("gen_cpu", tb.get("gen_cpu", _cpus(tb.get("gen_cpus")))),
        "dut_cpu": host.get("dut_cpu", tb.get("dut_cpu", _cpus(tb.get("dut_cpus")))),
        "testbed": tb.get("type"),
        "kernel_tuning": tb.get("kernel_tuning"),
        # absent from older campaign files: the schema's default applied to them too
        "dut_rx_queue": tb.get("dut_rx_queue", _TESTBED_DEFAULTS["dut_rx_queue"])
        if tb.get("type", "netns") == "netns" else None,
        "line_rate": tb.get("line_rate"),
        "max_load": tb.get("max_load"),
        "generator": (cfg.get("generator") or {}).get("type", "fwdgen"),
    }
    if tb.get("type") == "ssh":
        placement.update(_ssh_placement(host.get("testbed") or {}))
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
    model.warnings = report_warnings(model)
    model.methodology = methodology_text(model)
    return model


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


def _cpus(cpus) -> str | None:
    """An ssh testbed's CPU list (its gen_cpus, dut_cpus) as the placement shows it."""
    return ",".join(map(str, cpus)) if isinstance(cpus, list) else None


def _ssh_placement(rec: dict[str, Any]) -> dict[str, Any]:
    """An ssh testbed's hosts and cabled ports (testbed/ssh.py's record), for the
    topology drawing."""
    ports = [((p.get("tg") or {}).get("ifname"), (p.get("dut") or {}).get("ifname"),
              (p.get("dut") or {}).get("ip4")) for p in rec.get("ports") or []
             if isinstance(p, dict)]
    return {"tester_host": (rec.get("tester") or {}).get("hostname"),
            "dut_host": (rec.get("dut_host") or {}).get("ssh"), "ports": ports}
