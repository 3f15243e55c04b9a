"""Readers of load-loss data from outside fwdbench.

- PASTRAMI measurement files (TRex, one JSON array per line, one line per
  offered load): ``[[rate_pps, rx_discards_at_start], [tx, rx, rx_discards], ...]``
  with one ``[tx, rx, rx_discards]`` element per run. PLR = (tx - rx) / tx.
- CSV with a header naming the columns ``load,repetition,tx,rx`` (others are
  ignored), one row per trial; load in pps.

Both give an :class:`Experiment`. Malformed input raises
:class:`InputFormatError` naming the file, the line and what was expected.
Loads out of order are sorted (with a warning); a load that appears twice
has its runs merged (with a warning); rx > tx is kept (PLR < 0) but flagged.

fwdbench's own results store: :func:`experiment_from_trials` builds an
Experiment from TrialResults; a store reader only has to yield them
(:func:`read_store` is the hook, not implemented until the store lands).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from fwdbench.analysis.pastrami import LoadLossCurve
from fwdbench.errors import FwdbenchError
from fwdbench.text import shown
from fwdbench.trial import TrialResult

CSV_COLUMNS = ("load", "repetition", "tx", "rx")
STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
MAX_COUNT = 2**63 - 1          # packet counts: 64-bit, as every generator keeps them
MAX_LOAD_PPS = 1e12            # [pps] far above any link (10 Tbit/s of 64 B frames: 1.5e10)


class InputFormatError(FwdbenchError):
    """An external data file is malformed; the message names file, line and expectation."""


@dataclass
class Experiment:
    """One load-loss experiment read from a file: counts per load and run."""
    source: str                      # file path (or a store reference)
    loads_pps: np.ndarray            # ascending [pps]
    tx: list[np.ndarray]             # per load: tx count of each run
    rx: list[np.ndarray]             # per load: rx count of each run
    warnings: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)     # data kept but suspicious (rx > tx)

    @property
    def name(self) -> str:
        return Path(self.source).name

    @property
    def trial_count(self) -> int:
        return int(sum(a.size for a in self.tx))

    def curve(self) -> LoadLossCurve:
        c = LoadLossCurve.from_counts(self.loads_pps, self.tx, self.rx, name=self.name)
        c.flags = list(self.flags)
        return c


def _fmt_num(x: float) -> str:
    return f"{x:.6g}"


def _finalize(source: str, rows: list[tuple[float, int, int, int]],
              warnings: list[str], merge_warning: bool = False) -> Experiment:
    """rows: (load, tx, rx, line). Sort, merge duplicate loads, flag rx > tx."""
    if not rows:
        raise InputFormatError(f"{source}: no data; expected at least one load with one run")
    flags: list[str] = []
    order = [r[0] for r in rows]
    if any(b < a for a, b in zip(order, order[1:])):
        warnings.append(f"{source}: loads are not in ascending order; sorted them "
                        "(check the file if the order carried meaning)")
    groups: dict[float, list[tuple[int, int]]] = {}
    lines: dict[float, set[int]] = {}
    for load, tx, rx, line in rows:
        groups.setdefault(load, []).append((tx, rx))
        lines.setdefault(load, set()).add(line)
        if rx > tx:
            flags.append(f"{source}:{line}: rx {rx} > tx {tx} at load {_fmt_num(load)} pps "
                         "(kept; PLR is negative: duplicated frames or miscounted tx)")
    if merge_warning:
        for load, ls in lines.items():
            if len(ls) > 1:
                warnings.append(f"{source}: load {_fmt_num(load)} pps appears on lines "
                                f"{', '.join(map(str, sorted(ls)))}; their runs were merged")
    loads = sorted(groups)
    tx_l = [np.asarray([g[0] for g in groups[x]], dtype=np.int64) for x in loads]
    rx_l = [np.asarray([g[1] for g in groups[x]], dtype=np.int64) for x in loads]
    return Experiment(source, np.asarray(loads, dtype=float), tx_l, rx_l, warnings, flags)


def _int_count(v: object, source: str, line: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputFormatError(f"{source}:{line}: expected {what} as a number, got {shown(v)}")
    if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
        raise InputFormatError(f"{source}:{line}: expected {what} as a whole number, "
                               f"got {shown(v)}")
    if v < 0:
        raise InputFormatError(f"{source}:{line}: expected {what} >= 0, got {shown(v)}")
    if v > MAX_COUNT:
        raise InputFormatError(f"{source}:{line}: {what} {shown(v)} is beyond 2^63-1, the "
                               "largest 64-bit packet count; check the file")
    return int(v)


def _load(v: object, source: str, line: int) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputFormatError(f"{source}:{line}: expected the offered load [pps] as a number, "
                               f"got {shown(v)}")
    try:
        x = float(v)
    except OverflowError:           # an integer beyond the float range
        x = math.inf
    if not math.isfinite(x):
        raise InputFormatError(f"{source}:{line}: expected the offered load [pps] as a finite "
                               f"number, got {shown(v)}")
    if x <= 0:
        raise InputFormatError(f"{source}:{line}: expected a positive offered load [pps], "
                               f"got {shown(v)}")
    if x > MAX_LOAD_PPS:
        raise InputFormatError(f"{source}:{line}: offered load {shown(v)} pps is above "
                               f"{MAX_LOAD_PPS:g} pps, faster than any link; check the file")
    return x


def _csv_number(text: str) -> int | float:
    """A CSV field as a number: an integer exactly (counts beyond 2^53 keep every
    digit), else a float. ValueError when it is neither."""
    t = text.strip()
    if t.lstrip("+-").isdigit():
        if len(t) > 40:             # no count or load needs 40 digits; int() of 5000 would fail
            return math.inf
        return int(t)
    return float(t)


def read_pastrami(path: Path | str) -> Experiment:
    """Read a PASTRAMI measurement file (one JSON array per line)."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputFormatError(f"{source}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputFormatError(f"{source}: not a text file; expected one JSON array per line") from None
    rows: list[tuple[float, int, int, int]] = []
    expect = "[[rate_pps, rx_discards_at_start], [tx, rx, rx_discards], ...]"
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        try:
            item = json.loads(s)
        except json.JSONDecodeError as e:
            raise InputFormatError(
                f"{source}:{lineno}: not valid JSON ({e.msg} at column {e.colno}); "
                f"expected {expect}") from None
        except RecursionError:
            raise InputFormatError(
                f"{source}:{lineno}: JSON nested too deeply; expected {expect}") from None
        except ValueError:          # an integer of more than 4300 digits
            raise InputFormatError(
                f"{source}:{lineno}: a number has more than 4300 digits; expected {expect}") \
                from None
        if not isinstance(item, list) or len(item) < 2:
            raise InputFormatError(
                f"{source}:{lineno}: expected a JSON array {expect} with at least one run, "
                f"got {shown(s)}")
        head = item[0]
        if not isinstance(head, list) or len(head) < 1:
            raise InputFormatError(
                f"{source}:{lineno}: expected the first element to be [rate_pps, rx_discards_at_start], "
                f"got {shown(head)}")
        load = _load(head[0], source, lineno)
        for k, run in enumerate(item[1:], start=1):
            if not isinstance(run, list) or len(run) < 2:
                raise InputFormatError(
                    f"{source}:{lineno}: expected run {k} as [tx, rx, rx_discards], "
                    f"got {shown(run)}")
            tx = _int_count(run[0], source, lineno, f"run {k} tx")
            rx = _int_count(run[1], source, lineno, f"run {k} rx")
            if tx == 0:
                raise InputFormatError(f"{source}:{lineno}: run {k} has tx 0; expected packets sent")
            rows.append((load, tx, rx, lineno))
    return _finalize(source, rows, [], merge_warning=True)


def read_csv(path: Path | str) -> Experiment:
    """Read CSV with columns load,repetition,tx,rx (header required)."""
    path = Path(path)
    source = str(path)
    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as e:
        raise InputFormatError(f"{source}: cannot read: {e.strerror or e}") from None
    rows: list[tuple[float, int, int, int]] = []
    warnings: list[str] = []
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise InputFormatError(f"{source}:1: empty file; expected a header "
                                   f"{','.join(CSV_COLUMNS)}") from None
        except (csv.Error, UnicodeDecodeError) as e:
            raise InputFormatError(f"{source}:1: unreadable CSV ({e})") from None
        names = [h.strip().lower() for h in header]
        missing = [c for c in CSV_COLUMNS if c not in names]
        if missing:
            raise InputFormatError(
                f"{source}:1: expected a header with columns {','.join(CSV_COLUMNS)}; "
                f"missing {','.join(missing)} (got {shown(','.join(header))})")
        idx = {c: names.index(c) for c in CSV_COLUMNS}
        seen: set[tuple[float, str]] = set()
        try:
            for rec in reader:
                lineno = reader.line_num
                if not rec or all(not f.strip() for f in rec):
                    continue
                if len(rec) < len(names):
                    raise InputFormatError(
                        f"{source}:{lineno}: expected {len(names)} fields "
                        f"({','.join(header)}), got {len(rec)}")
                vals: dict[str, float] = {}
                for c in ("load", "tx", "rx"):
                    f = rec[idx[c]].strip()
                    try:
                        vals[c] = _csv_number(f)
                    except ValueError:
                        raise InputFormatError(
                            f"{source}:{lineno}: expected column {c} as a number, "
                            f"got {shown(f)}") from None
                    if vals[c] == math.inf and f.strip().lstrip("+-").isdigit():
                        raise InputFormatError(
                            f"{source}:{lineno}: column {c} has {len(f.strip())} digits; "
                            f"expected a count or load of at most 64 bits") from None
                load = _load(vals["load"], source, lineno)
                tx = _int_count(vals["tx"], source, lineno, "tx")
                rx = _int_count(vals["rx"], source, lineno, "rx")
                if tx == 0:
                    raise InputFormatError(f"{source}:{lineno}: tx is 0; expected packets sent")
                rep = rec[idx["repetition"]].strip()
                if (load, rep) in seen:
                    warnings.append(f"{source}:{lineno}: load {_fmt_num(load)} pps repetition "
                                    f"{shown(rep)} appears twice; both rows kept")
                seen.add((load, rep))
                rows.append((load, tx, rx, lineno))
        except csv.Error as e:
            raise InputFormatError(f"{source}:{reader.line_num}: unreadable CSV ({e})") from None
        except UnicodeDecodeError:
            raise InputFormatError(f"{source}: not a text file; expected CSV") from None
    return _finalize(source, rows, warnings)


def read_store(path: Path | str) -> list[Experiment]:
    """fwdbench's own results: one experiment per scenario, from the trials its
    searches ran (all repetitions pooled by offered load; warm-up and latency
    trials left out)."""
    from fwdbench.store import StoreError, is_store_url, open_store

    url = is_store_url(path)
    try:
        store = open_store(path, read_only=True)
    except StoreError as e:     # names the file (or the URL, password masked) and the fix
        raise InputFormatError(str(e)) from None
    except Exception as e:      # sqlite3.DatabaseError: damaged
        raise InputFormatError(f"{path}: not a readable fwdbench results store ({e})") from None
    if url:
        path = store.label   # never the URL (it may carry a password)
    try:
        names = {s["id"]: s["name"] for s in store.scenarios()}
        by_scenario: dict[int, list[TrialResult]] = {sid: [] for sid in names}
        for row in store.trials("done"):
            if row.kind == "search" and row.result is not None:
                by_scenario[row.scenario_id].append(row.result)
    finally:
        store.close()
    for trials in by_scenario.values():         # stored in run order: sort by load
        trials.sort(key=lambda t: t.intended_load_pps)
    out = [experiment_from_trials(f"{path}#{names[sid]}", trials)
           for sid, trials in by_scenario.items() if trials]
    if not out:
        raise InputFormatError(f"{path}: holds no finished trials to analyse")
    return out


def experiment_from_trials(source: str, trials: Iterable[TrialResult]) -> Experiment:
    """An Experiment from fwdbench trials: grouped by intended load, tx is the
    intended packet count (unsent packets are lost), rx the received count."""
    rows = [(float(t.intended_load_pps), int(t.intended_packets), int(t.rx_packets), i + 1)
            for i, t in enumerate(trials)]
    return _finalize(source, rows, [])


def read_experiment(path: Path | str) -> list[Experiment]:
    """Read one file, choosing the reader by suffix (.csv: CSV; a results
    store: the store hook; anything else: PASTRAMI JSON lines)."""
    from fwdbench.store import is_store_url
    if is_store_url(path):
        return read_store(path)
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return [read_csv(p)]
    if suffix in STORE_SUFFIXES:
        return read_store(p)
    return [read_pastrami(p)]
