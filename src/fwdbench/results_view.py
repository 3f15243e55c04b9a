"""`fwdbench results`: a terminal table (or JSON) of what a campaign measured."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .errors import FwdbenchError
from .store import ResultsStore, is_store_url, open_store
from .units import fmt_pps


def collect(store: ResultsStore) -> dict:
    c = store.campaign()
    if c is None:
        raise FwdbenchError(f"{store.path} holds no campaign")
    scen = {s["id"]: s for s in store.scenarios()}
    results = store.results()
    trials = [t for t in store.trials("done") if t.kind == "search"]
    per_sc: dict[int, dict] = {}
    for sid, s in scen.items():
        per_sc[sid] = {"idx": s["idx"], "name": s["name"], "dut": s["dut_name"],
                       "dut_type": s["dut_type"], "search": s["search"].get("type"),
                       "results": {}, "trials": 0, "max_loss_ratio": None,
                       "generator_limited": 0}
    for r in results:
        if r["goal"] == "search":      # the search record, not a load
            continue
        per_sc[r["scenario_id"]]["results"].setdefault(r["goal"], []).append(r["value_pps"])
    for t in trials:
        d = per_sc[t.scenario_id]
        d["trials"] += 1
        if t.result is not None:
            lr = t.result.loss_ratio
            d["max_loss_ratio"] = lr if d["max_loss_ratio"] is None else max(d["max_loss_ratio"], lr)
            d["generator_limited"] += int(t.result.generator_limited)
    return {"campaign": c["name"], "created_at": c["created_at"],
            "tool_version": c["tool_version"], "trial_status": store.trial_counts(),
            "scenarios": sorted(per_sc.values(), key=lambda d: d["idx"])}


def results_cmd(db: Path | str, *, as_json: bool, show_trials: bool,
                console: Console) -> None:
    if not is_store_url(db) and not Path(db).exists():
        raise FwdbenchError(f"{db}: no such results file")
    store = open_store(db, read_only=True)
    try:
        data = collect(store)
        if show_trials:
            data["trial_rows"] = [
                {"scenario_id": t.scenario_id, "repetition": t.repetition, "seq": t.seq,
                 "status": t.status, "kind": t.kind, "reason": t.reason,
                 "intended_load_pps": t.intended_load_pps, "duration_s": t.duration_s,
                 "tx": t.result.tx_packets if t.result else None,
                 "rx": t.result.rx_packets if t.result else None,
                 "loss_ratio": t.result.loss_ratio if t.result else None}
                for t in store.trials(status=None)]
    finally:
        store.close()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    t = Table(title=f"campaign {data['campaign']} - trials: "
                    + ", ".join(f"{k} {v}" for k, v in sorted(data["trial_status"].items())))
    goals = sorted({g for s in data["scenarios"] for g in s["results"]})
    for col in ["#", "scenario", "search", "trials", *goals, "max loss", "gen-limited"]:
        t.add_column(col, justify="left" if col in ("scenario", "search") else "right")
    for s in data["scenarios"]:
        cells = []
        for g in goals:
            vals = [v for v in s["results"].get(g, []) if v is not None]
            if not vals:
                cells.append("-" if g not in s["results"] else "n/a")
            elif len(vals) == 1:
                cells.append(fmt_pps(vals[0]))
            else:
                cells.append(f"{fmt_pps(sum(vals) / len(vals))} (n={len(vals)})")
        ml = s["max_loss_ratio"]
        t.add_row(str(s["idx"] + 1), s["name"], s["search"] or "-", str(s["trials"]), *cells,
                  "-" if ml is None else f"{ml:.3%}", str(s["generator_limited"]))
    console.print(t)
    if show_trials:
        tt = Table(title="trials")
        for col in ("scenario", "rep", "seq", "status", "kind", "load", "dur", "tx", "rx",
                    "loss", "reason"):
            tt.add_column(col)
        for r in data["trial_rows"]:
            tt.add_row(str(r["scenario_id"]), str(r["repetition"]), str(r["seq"]), r["status"],
                       r["kind"], fmt_pps(r["intended_load_pps"]), f"{r['duration_s']:g}s",
                       str(r["tx"]), str(r["rx"]),
                       "-" if r["loss_ratio"] is None else f"{r['loss_ratio']:.4%}", r["reason"])
        console.print(tt)
