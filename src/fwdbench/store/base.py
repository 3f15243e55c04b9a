"""What every results store does, written once for both backends.

A trial is first written as ``running``; it becomes ``done`` (or ``failed``)
when it ends, and each of these writes is committed at once. On resume, rows
still ``running`` belong to a trial that was cut off: they are marked
``interrupted``, kept for the record, and the trial is run again. Only
``done`` rows count.

The SQL here is SQLite's with ``?`` placeholders, restricted to what
PostgreSQL accepts as well. A backend (sqlite.py, postgres.py) supplies the
connection and the few dialect hooks below; nothing else differs.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import FwdbenchError
from ..goal import goal_key
from ..intent import TrialIntent
from ..trial import LatencySummary, StreamResult, TrialResult
from .schema import MIGRATIONS, SCHEMA_VERSION


class StoreError(FwdbenchError):
    pass


class StoreNeedsMigration(StoreError):
    """A store opened read-only was written by an older fwdbench: its schema
    must be upgraded (a write) before this one can read it."""


class NotAStore(StoreError):
    """The file or schema given is not a fwdbench results store (bad input: left alone)."""


class StoreBusy(StoreError):
    """Another process is writing this store (a store has one writer at a time)."""


WRITER_KEY = "writer"       # meta row: who holds the writer lock (JSON: pid, host, started_at)


@dataclass(frozen=True)
class TrialRow:
    id: int
    scenario_id: int
    repetition: int
    seq: int
    status: str
    intent: TrialIntent             # why it ran (kind, step, goal, latency fraction, reason)
    intended_load_pps: float
    duration_s: float
    result: TrialResult | None

    @property
    def kind(self) -> str:          # search | latency | warmup
        return self.intent.kind

    @property
    def reason(self) -> str:
        return self.intent.reason


def trial_from_dict(d: dict[str, Any]) -> TrialResult:
    streams = []
    for s in d.get("streams", []):
        s = dict(s)
        lat = s.pop("latency", None)
        streams.append(StreamResult(**s, latency=LatencySummary(**lat) if lat else None))
    fields = {k: v for k, v in d.items() if k != "streams"}
    return TrialResult(streams=streams, **fields)


class ResultsStore:
    """One campaign's results. Subclasses open ``self.db`` and call ``_migrate()``.

    ``path`` names the store in messages: the file (SQLite) or the URL with
    its password masked (PostgreSQL).
    """

    path: Any
    db: Any
    _writer: dict[str, Any] | None = None     # our record while we hold the writer lock

    # -- dialect hooks (the only backend-specific parts) --------------------
    def _exec(self, sql: str, args: tuple = ()) -> Any:
        """Run one statement (``?`` placeholders); a cursor whose rows index by name."""
        raise NotImplementedError

    def _insert(self, sql: str, args: tuple) -> int:
        """Run an INSERT into a table with an ``id`` column; the new row's id."""
        raise NotImplementedError

    def _table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def _in_transaction(self) -> bool:
        raise NotImplementedError

    def _begin(self) -> None:
        """Start a write transaction (taking the write lock where there is one)."""
        raise NotImplementedError

    def _apply_migration(self, step: int, ddl: str) -> None:
        """Upgrade from version ``step`` to ``step + 1``: DDL and version bump in one commit."""
        raise NotImplementedError

    def _try_lock_writer(self) -> bool:
        """Take this store's writer lock without waiting; False when another process
        holds it. The lock must die with the process (kill -9 included)."""
        raise NotImplementedError

    def _unlock_writer(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._writer is not None:
            try:
                with self.tx():
                    self._exec("DELETE FROM meta WHERE key=? AND value=?",
                               (WRITER_KEY, json.dumps(self._writer, sort_keys=True)))
            except Exception:
                pass            # e.g. the connection is gone: the lock dies with it anyway
            try:
                self._unlock_writer()
            except Exception:
                pass
            self._writer = None
        self.db.close()

    # -- one writer ---------------------------------------------------------
    def lock_writer(self) -> None:
        """Become this store's only writer, or raise :class:`StoreBusy` naming the
        process that is (its pid, host and start time, as it recorded them).
        Held until :meth:`close` or the end of the process."""
        if self._writer is not None:
            return
        if not self._try_lock_writer():
            raise StoreBusy(
                f"{self.path} is being written by {self.writer_holder()}; a results store "
                "has one writer at a time: wait for that run to end, or stop it, then "
                f"continue with 'fwdbench run --resume {self.path}'")
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": time.time()}
        try:
            with self.tx():
                self._exec("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key)"
                           " DO UPDATE SET value=excluded.value",
                           (WRITER_KEY, json.dumps(me, sort_keys=True)))
        except BaseException:
            self._unlock_writer()
            raise
        self._writer = me

    def writer_holder(self) -> str:
        """The writer as it recorded itself: 'fwdbench pid N on HOST, started TIME'."""
        try:
            row = self._exec("SELECT value FROM meta WHERE key=?", (WRITER_KEY,)).fetchone()
            w = json.loads(row["value"]) if row else None
        except Exception:
            w = None
        if not isinstance(w, dict):
            return ("another fwdbench process (one reading it at length, or a run that has "
                    "not recorded its pid yet)")
        started = w.get("started_at")
        when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
                if isinstance(started, (int, float)) else "?")
        return f"fwdbench pid {w.get('pid', '?')} on host {w.get('host', '?')}, started {when}"

    # -- schema -------------------------------------------------------------
    def _version(self) -> int:
        if not self._table_exists("meta"):
            return 0
        row = self._exec("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row["value"]) if row else 0

    def _check_version(self, v: int) -> None:
        if v > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {v} is newer than this fwdbench "
                f"({SCHEMA_VERSION}); upgrade fwdbench to read it")

    def _migrate(self) -> None:
        v = self._version()
        self._check_version(v)
        for i in range(v, SCHEMA_VERSION):
            self._apply_migration(i, MIGRATIONS[i])

    def _check_readable(self) -> None:
        """For a read-only connection: the schema is this fwdbench's."""
        v = self._version()
        self._check_version(v)
        if v == 0:
            raise NotAStore(f"{self.path}: not a fwdbench results store (no fwdbench "
                            "tables in it); give the file or URL 'fwdbench run' wrote to")
        if v < SCHEMA_VERSION:
            raise StoreNeedsMigration(f"{self.path}: schema version {v} needs an upgrade to "
                                      f"{SCHEMA_VERSION}")

    class _Tx:
        def __init__(self, store: "ResultsStore"):
            self.store = store

        def __enter__(self):
            if not self.store._in_transaction():
                self.store._begin()
                self.owner = True
            else:
                self.owner = False
            return self.store.db

        def __exit__(self, et, ev, tb):
            if not self.owner:
                return
            if et is None:
                self.store._exec("COMMIT")
                return
            try:
                self.store._exec("ROLLBACK")
            except Exception:
                pass        # e.g. the connection is gone: report the first error, not this

    def tx(self) -> "ResultsStore._Tx":
        return ResultsStore._Tx(self)

    @property
    def schema_version(self) -> int:
        return self._version()

    # -- campaign and scenarios --------------------------------------------
    def campaign(self) -> dict[str, Any] | None:
        row = self._exec("SELECT * FROM campaign ORDER BY id LIMIT 1").fetchone()
        if not row:
            return None
        d = dict(row)
        d["config"] = json.loads(d.pop("config_json"))
        d["host"] = json.loads(d.pop("host_json"))
        return d

    def create_campaign(self, *, name: str, source_path: str, config_text: str,
                        config: dict, host: dict, tool_version: str) -> int:
        if self.campaign() is not None:
            raise StoreError(f"{self.path} already holds a campaign; "
                             "use 'fwdbench run --resume' to continue it")
        with self.tx():
            return self._insert(
                "INSERT INTO campaign(name, source_path, config_text, config_json, host_json,"
                " tool_version, created_at) VALUES (?,?,?,?,?,?,?)",
                (name, source_path, config_text, json.dumps(config), json.dumps(host),
                 tool_version, time.time()))

    def update_host(self, facts: dict) -> None:
        """Merge testbed facts (placement, tuning, generator version) into the campaign's."""
        c = self.campaign()
        if c is None:
            raise StoreError(f"{self.path} holds no campaign")
        host = dict(c["host"])
        host.update(facts)
        with self.tx():
            self._exec("UPDATE campaign SET host_json=? WHERE id=?",
                       (json.dumps(host, default=str), c["id"]))

    def add_scenario(self, campaign_id: int, idx: int, name: str, dut_name: str,
                     dut_type: str, dut_params: dict, profile: dict, search: dict,
                     axes: dict, max_load_pps: float) -> int:
        with self.tx():
            return self._insert(
                "INSERT INTO scenario(campaign_id, idx, name, dut_name, dut_type, dut_params,"
                " profile, search, axes, max_load_pps) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (campaign_id, idx, name, dut_name, dut_type, json.dumps(dut_params),
                 json.dumps(profile), json.dumps(search), json.dumps(axes), max_load_pps))

    def scenarios(self) -> list[dict[str, Any]]:
        out = []
        for row in self._exec("SELECT * FROM scenario ORDER BY idx"):
            d = dict(row)
            for k in ("dut_params", "profile", "search", "axes", "describe"):
                d[k] = json.loads(d[k]) if d[k] else None
            out.append(d)
        return out

    def set_describe(self, scenario_id: int, describe: dict) -> None:
        with self.tx():
            self._exec("UPDATE scenario SET describe=? WHERE id=?",
                       (json.dumps(describe, default=str), scenario_id))

    # -- trials -------------------------------------------------------------
    def mark_interrupted(self) -> int:
        """Trials cut off by a crash or Ctrl-C: keep them, never count them."""
        with self.tx():
            cur = self._exec(
                "UPDATE trial SET status='interrupted', error=COALESCE(error,"
                " 'interrupted: the run stopped during this trial; it was run again')"
                " WHERE status='running'")
            return cur.rowcount

    def begin_trial(self, scenario_id: int, repetition: int, seq: int, intent: TrialIntent,
                    duration_s: float, load_pps: float) -> int:
        with self.tx():
            return self._insert(
                "INSERT INTO trial(scenario_id, repetition, seq, status, kind, reason, step,"
                " goal_loss_ratio, latency_fraction, latency_reference, intended_load_pps,"
                " duration_s, started_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (scenario_id, repetition, seq, "running", intent.kind, intent.reason,
                 intent.step, intent.goal_loss_ratio, intent.latency_fraction,
                 intent.latency_reference, load_pps, duration_s, time.time()))

    def finish_trial(self, trial_id: int, result: TrialResult) -> None:
        lat50 = lat99 = None
        lats = [s.latency for s in result.streams if s.latency]
        if lats:
            lat50 = max(l.p50_ns for l in lats)
            lat99 = max(l.p99_ns for l in lats)
        achieved = (sum(s.achieved_tx_pps for s in result.streams) / len(result.streams)
                    if result.streams else None)
        with self.tx():
            self._exec(
                "UPDATE trial SET status='done', ended_at=?, intended_packets=?, tx_packets=?,"
                " rx_packets=?, lost=?, loss_ratio=?, forwarding_rate_pps=?, achieved_tx_pps=?,"
                " generator_limited=?, lat_p50_ns=?, lat_p99_ns=?, result_json=? WHERE id=?",
                (time.time(), result.intended_packets, result.tx_packets, result.rx_packets,
                 result.lost, result.loss_ratio, result.forwarding_rate_pps, achieved,
                 int(result.generator_limited), lat50, lat99,
                 json.dumps(result.to_dict(), default=str), trial_id))

    def fail_trial(self, trial_id: int, error: str) -> None:
        with self.tx():
            self._exec("UPDATE trial SET status='failed', ended_at=?, error=? WHERE id=?",
                       (time.time(), error, trial_id))

    def done_trials(self, scenario_id: int, repetition: int) -> list[TrialRow]:
        rows = self._exec(
            "SELECT * FROM trial WHERE scenario_id=? AND repetition=? AND status='done'"
            " ORDER BY seq", (scenario_id, repetition)).fetchall()
        return [self._row(r) for r in rows]

    def trials(self, status: str | None = "done") -> Iterator[TrialRow]:
        q = "SELECT * FROM trial"
        args: tuple = ()
        if status:
            q += " WHERE status=?"
            args = (status,)
        for r in self._exec(q + " ORDER BY scenario_id, repetition, seq, id", args):
            yield self._row(r)

    @staticmethod
    def _row(r: Any) -> TrialRow:
        res = trial_from_dict(json.loads(r["result_json"])) if r["result_json"] else None
        intent = TrialIntent(r["kind"], r["step"], r["reason"], r["goal_loss_ratio"],
                             r["latency_fraction"], r["latency_reference"])
        return TrialRow(r["id"], r["scenario_id"], r["repetition"], r["seq"], r["status"],
                        intent, r["intended_load_pps"], r["duration_s"], res)

    def trial_counts(self) -> dict[str, int]:
        return {r["status"]: r["n"] for r in self._exec(
            "SELECT status, COUNT(*) AS n FROM trial GROUP BY status")}

    def done_span(self) -> tuple[float | None, float | None]:
        """[s] Unix times: the first finished trial's start, the last one's end."""
        r = self._exec("SELECT MIN(started_at) AS first, MAX(ended_at) AS last FROM trial"
                       " WHERE status='done'").fetchone()
        return (r["first"], r["last"]) if r else (None, None)

    # -- results ------------------------------------------------------------
    def save_results(self, scenario_id: int, repetition: int,
                     goals: list[tuple[float | None, float | None, dict]]) -> None:
        """Write the search results of one repetition and mark it done, atomically.
        ``goals``: (loss ratio of the goal, or None for the search's own record;
        the load found [pps] or None; the detail record)."""
        now = time.time()
        with self.tx():
            for loss_ratio, value, detail in goals:
                goal = "search" if loss_ratio is None else goal_key(loss_ratio)
                self._exec(
                    "INSERT INTO result(scenario_id, repetition, goal, loss_ratio, value_pps,"
                    " detail_json, created_at) VALUES (?,?,?,?,?,?,?)"
                    " ON CONFLICT(scenario_id, repetition, goal) DO UPDATE SET"
                    " loss_ratio=excluded.loss_ratio, value_pps=excluded.value_pps,"
                    " detail_json=excluded.detail_json, created_at=excluded.created_at",
                    (scenario_id, repetition, goal, loss_ratio, value,
                     json.dumps(detail, default=str), now))
            self._exec(
                "INSERT INTO repetition_done(scenario_id, repetition, ended_at) VALUES (?,?,?)"
                " ON CONFLICT(scenario_id, repetition) DO UPDATE SET ended_at=excluded.ended_at",
                (scenario_id, repetition, now))

    def repetition_done(self, scenario_id: int, repetition: int) -> bool:
        return self._exec(
            "SELECT 1 AS one FROM repetition_done WHERE scenario_id=? AND repetition=?",
            (scenario_id, repetition)).fetchone() is not None

    def results(self) -> list[dict[str, Any]]:
        out = []
        for r in self._exec("SELECT * FROM result ORDER BY scenario_id, repetition, goal"):
            d = dict(r)
            d["detail"] = json.loads(d.pop("detail_json"))
            out.append(d)
        return out
