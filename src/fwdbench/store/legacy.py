"""Stores written before schema version 2 (issue 20): their trial rows carry
why a trial ran only as the search's reason sentence, and their result rows
their goal only as text ("pdr@0.005"). The migration to version 2 turns them
into the intent columns and the loss-ratio column once, here; nothing else
in fwdbench reads these texts back. The patterns are the sentences fwdbench
wrote until then (search/binary.py, mlr.py, sweep.py, latency.py; runner.py).
"""
from __future__ import annotations

import re
from typing import Any

_GOAL_TEXT = re.compile(r"(NDR|PDR@([0-9.eE+-]+)%)")
_LATENCY = re.compile(r"latency at ([0-9.eE+-]+)% of (PDR|NDR)")
_BINARY_STEPS = (("first trial", "first"), ("forwarding-rate hint", "hint"),
                 ("probe", "probe"), ("bisect", "bisect"), ("check min load", "min-load"),
                 ("verification", "verification"))


def _goal(text: str) -> float | None:
    m = _GOAL_TEXT.search(text)
    if not m:
        return None
    return 0.0 if m.group(1) == "NDR" else float(m.group(2)) / 100.0


def intent_columns(kind: str, reason: str) -> dict[str, Any]:
    """kind, step, goal_loss_ratio, latency_fraction, latency_reference of a
    version-1 trial row, from its kind and reason."""
    reason = reason or ""
    out: dict[str, Any] = {"kind": kind, "step": None, "goal_loss_ratio": None,
                           "latency_fraction": None, "latency_reference": None}
    m = _LATENCY.match(reason)
    if m:
        out.update(kind="latency", step="latency", latency_fraction=float(m.group(1)) / 100.0,
                   latency_reference=m.group(2))
    elif kind == "warmup" or reason.startswith("mlr: warm-up"):
        out.update(kind="warmup", step="warmup")
    elif reason.startswith("sweep"):
        out["step"] = "sweep"
    elif reason.startswith("binary "):
        out["goal_loss_ratio"] = _goal(reason.split(":", 1)[0])
        what = reason.split(":", 1)[1] if ":" in reason else ""
        out["step"] = next((step for word, step in _BINARY_STEPS if word in what), "bisect")
    elif reason.startswith("mlr"):
        if reason.startswith("mlr: initial"):
            out["step"] = "initial"
        else:
            out.update(step="target", goal_loss_ratio=_goal(reason.split(":", 1)[0]))
    else:
        out["step"] = "latency" if kind == "latency" else "sweep"
    return out


def goal_loss_ratio(goal: str) -> float | None:
    """'ndr' -> 0.0, 'pdr@0.005' -> 0.005, 'search' -> None."""
    if goal == "ndr":
        return 0.0
    m = re.fullmatch(r"pdr@([0-9.eE+-]+)", goal or "")
    return float(m.group(1)) if m else None


def backfill_intents(store) -> None:
    """Fill the version-2 columns of a store's version-1 rows (inside the
    migration's transaction)."""
    rows = store._exec("SELECT id, kind, reason FROM trial WHERE step IS NULL").fetchall()
    for r in rows:
        c = intent_columns(r["kind"], r["reason"])
        store._exec("UPDATE trial SET kind=?, step=?, goal_loss_ratio=?, latency_fraction=?,"
                    " latency_reference=? WHERE id=?",
                    (c["kind"], c["step"], c["goal_loss_ratio"], c["latency_fraction"],
                     c["latency_reference"], r["id"]))
    for r in store._exec("SELECT id, goal FROM result WHERE loss_ratio IS NULL").fetchall():
        lr = goal_loss_ratio(r["goal"])
        if lr is not None:
            store._exec("UPDATE result SET loss_ratio=? WHERE id=?", (lr, r["id"]))
