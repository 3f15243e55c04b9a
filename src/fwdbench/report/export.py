"""Exports of the report model: CSV (trials, results, summary) and Parquet (trials).

One function per format and table. Column names carry their unit suffix
(``_pps``, ``_ns``, ``_s``, ``_j``); ratios are plain fractions.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable

from .model import ReportModel, goal_label

TRIAL_COLUMNS = (
    "trial_id", "scenario_id", "scenario", "dut", "dut_type", "frame_size", "repetition", "seq",
    "kind", "step", "goal_loss_ratio", "latency_fraction", "latency_reference", "reason",
    "intended_load_pps", "duration_s", "streams", "intended_packets",
    "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "lost", "loss_ratio", "delivery_ratio",
    "forwarding_rate_pps", "achieved_tx_pps", "generator", "generator_limited", "reordered",
    "duplicated",
    "lat_min_ns", "lat_mean_ns", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns",
    "lat_max_ns", "jitter_ns", "dut_cpu_util", "softirq_share", "steal", "cycles_per_packet",
    "cycles_estimated", "joules", "mean_watts", "packets_per_joule", "joules_per_mpkt",
    "energy_source", "energy_measured", "energy_scope", "baseline_subtracted", "warnings")
RESULT_COLUMNS = ("scenario_id", "scenario", "dut", "repetition", "goal", "loss_ratio",
                  "value_pps", "detail")
SUMMARY_COLUMNS = ("scenario_id", "scenario", "dut", "goal", "goal_label", "source", "n",
                   "missing", "mean_pps", "std_pps", "ci95_low_pps", "ci95_high_pps",
                   "normalised_uncertainty", "pastrami_verdict")


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return ""
    return v


def write_csv(path: Path, columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> Path:
    cols = list(columns)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in cols])
    return path


def summary_rows(m: ReportModel) -> list[dict[str, Any]]:
    rows = []
    for s in m.scenarios:
        for g, r in s.goals.items():
            e = r.estimate
            rows.append({
                "scenario_id": s.id, "scenario": s.name, "dut": s.dut_name, "goal": g.key,
                "goal_label": goal_label(g), "source": r.source, "n": e.n, "missing": e.missing,
                "mean_pps": e.mean, "std_pps": e.std, "ci95_low_pps": e.low,
                "ci95_high_pps": e.high, "normalised_uncertainty": e.normalised_uncertainty,
                "pastrami_verdict": s.pastrami.verdict})
    return rows


def write_parquet(path: Path, m: ReportModel) -> Path | None:
    """The trial table as Parquet; None when pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    types = {
        "trial_id": pa.int64(), "scenario_id": pa.int64(), "repetition": pa.int64(),
        "seq": pa.int64(), "streams": pa.int64(), "intended_packets": pa.int64(),
        "tx_packets": pa.int64(), "tx_bytes": pa.int64(), "rx_packets": pa.int64(),
        "rx_bytes": pa.int64(), "lost": pa.int64(), "reordered": pa.int64(),
        "duplicated": pa.int64(), "generator_limited": pa.bool_(),
        "cycles_estimated": pa.bool_(), "energy_measured": pa.bool_(),
        "scenario": pa.string(), "dut": pa.string(), "dut_type": pa.string(),
        "generator": pa.string(),
        "frame_size": pa.string(), "kind": pa.string(), "reason": pa.string(),
        "step": pa.string(), "latency_reference": pa.string(),
        "energy_source": pa.string(), "warnings": pa.string(),
        "energy_scope": pa.string(), "baseline_subtracted": pa.bool_(),
    }
    fields = [pa.field(c, types.get(c, pa.float64())) for c in TRIAL_COLUMNS]
    schema = pa.schema(fields, metadata={"source": str(m.db_path.name), "campaign": m.name})
    cols = {c: [r.get(c) for r in m.trial_rows] for c in TRIAL_COLUMNS}
    table = pa.Table.from_pydict(cols, schema=schema)
    pq.write_table(table, path, compression="zstd")
    return path


def export_all(m: ReportModel, out: Path) -> list[dict[str, str]]:
    """Write every export under out/data; return [{path, what}] for the page."""
    d = out / "data"
    d.mkdir(parents=True, exist_ok=True)
    files = [
        (write_csv(d / "trials.csv", TRIAL_COLUMNS, m.trial_rows),
         f"every finished trial ({len(m.trial_rows)} rows): counts, loss, latency, CPU, energy"),
        (write_csv(d / "results.csv", RESULT_COLUMNS, m.result_rows),
         f"search results per scenario and repetition ({len(m.result_rows)} rows)"),
        (write_csv(d / "summary.csv", SUMMARY_COLUMNS, summary_rows(m)),
         "mean, standard deviation and 95 % CI per DUT x scenario x goal"),
    ]
    pq = write_parquet(d / "trials.parquet", m)
    if pq is not None:
        files.append((pq, "the trial table as Parquet (pandas, polars, R arrow, DuckDB)"))
    return [{"path": str(p.relative_to(out)), "what": what} for p, what in files]
