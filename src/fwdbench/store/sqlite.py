"""SQLite results store (WAL): one campaign per file. Every trial row is
committed when it ends; the queries themselves are in base.py."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import ResultsStore, StoreError, TrialRow, trial_from_dict
from .schema import version_upsert

__all__ = ["Store", "StoreError", "TrialRow", "trial_from_dict"]


class Store(ResultsStore):
    """One campaign's results in one SQLite file."""

    def __init__(self, path: Path | str, *, read_only: bool = False):
        self.path = Path(path)
        if read_only:
            # reports and views never write: mode=ro (no journal-mode switch, no
            # migration) also reads a file the user may not write
            if not self.path.is_file():
                raise StoreError(f"{self.path}: no such results file")
            self.db = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True,
                                      isolation_level=None, timeout=30)
            self.db.row_factory = sqlite3.Row
            try:
                self._check_readable()
            except BaseException:
                self.db.close()
                raise
            return
        self.db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    # -- dialect hooks ------------------------------------------------------
    def _exec(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, args)

    def _insert(self, sql: str, args: tuple) -> int:
        return int(self.db.execute(sql, args).lastrowid)

    def _table_exists(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                               (name,)).fetchone() is not None

    def _in_transaction(self) -> bool:
        return self.db.in_transaction

    def _begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def _apply_migration(self, step: int, ddl: str) -> None:
        # One script per step: the DDL and the version bump commit together.
        self.db.executescript(
            "BEGIN IMMEDIATE;\n" + ddl + f"\n{version_upsert(step + 1)};\nCOMMIT;")


SQLiteStore = Store
