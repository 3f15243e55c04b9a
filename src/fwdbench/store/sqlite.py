"""SQLite results store (WAL): one campaign per file. Every trial row is
committed when it ends; the queries themselves are in base.py.

Reading commands open the file read-only after checking it is a SQLite
database holding fwdbench's tables, so a mistyped path, a user's own
database, an empty or a text file is refused and left byte for byte as it
was. A writer (``fwdbench run``) holds an exclusive ``flock`` on the file
from before it first writes until it closes; the kernel drops it when the
process ends, however it ends. A reader takes a shared ``flock``: while no
writer is active it reads with ``immutable=1`` (SQLite's ``mode=ro`` alone
would create the ``-wal`` and ``-shm`` files of a WAL database), and a writer
starting meanwhile waits for it (WRITER_WAIT_S). While a writer is active,
or a crashed one left its ``-wal`` (committed trials not yet in the main
file), the reader opens ``mode=ro`` beside the side files that exist already.
"""
from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

from .base import NotAStore, ResultsStore, StoreError, TrialRow, trial_from_dict
from .schema import BACKFILL, version_upsert

__all__ = ["Store", "StoreError", "TrialRow", "trial_from_dict"]

SQLITE_MAGIC = b"SQLite format 3\x00"      # the first 16 bytes of every SQLite database
WRITER_WAIT_S = 5.0     # [s] a writer waits this long for readers (they hold the lock briefly)


def _flock(fd: int, mode: int, wait_s: float = 0.0) -> bool:
    """flock without blocking, retried for up to ``wait_s``; True when taken."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def check_sqlite_file(path: Path) -> None:
    """Refuse, without opening it as a database, a path that is not a SQLite file."""
    if not path.exists():
        raise StoreError(f"{path}: no such results file; give the .sqlite file 'fwdbench run' "
                         "wrote (results/<campaign>.sqlite)")
    if not path.is_file():
        raise NotAStore(f"{path}: not a file; give the .sqlite file 'fwdbench run' wrote")
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise StoreError(f"{path}: cannot read: {e.strerror or e}") from None
    if not head:
        raise NotAStore(f"{path}: an empty file, not a fwdbench results store; give the "
                         ".sqlite file 'fwdbench run' wrote")
    if head != SQLITE_MAGIC:
        raise NotAStore(f"{path}: not a fwdbench results store (not a SQLite database); give "
                         "the .sqlite file 'fwdbench run' wrote")


def writer_lock_free(path: Path) -> bool:
    """True when no process holds the writer lock of the store at ``path``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _flock(fd, fcntl.LOCK_EX, WRITER_WAIT_S)
    finally:
        os.close(fd)


class Store(ResultsStore):
    """One campaign's results in one SQLite file."""

    def __init__(self, path: Path | str, *, read_only: bool = False, writer: bool = False):
        """``writer``: take the writer lock before the first write (the migration),
        or raise StoreBusy naming the writer that holds it."""
        self.path = Path(path)
        self._lock_fd: int | None = None
        if read_only:
            self._open_read_only()
            return
        if self.path.exists() and self.path.stat().st_size:
            check_sqlite_file(self.path)        # not a text file or another format
        if writer:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            if not _flock(fd, fcntl.LOCK_EX, WRITER_WAIT_S):
                os.close(fd)
                from .base import StoreBusy
                try:
                    other = Store(self.path, read_only=True)
                    holder = other.writer_holder()
                    other.close()
                except StoreError:
                    holder = "another fwdbench process"
                raise StoreBusy(
                    f"{self.path} is being written by {holder}; a results store has one "
                    "writer at a time: wait for that run to end, or stop it, then continue "
                    f"with 'fwdbench run --resume {self.path}'")
            self._lock_fd = fd
        try:
            self._connect_writer()
        except BaseException:
            self._unlock_writer()
            raise

    def _open_read_only(self) -> None:
        # reports and views never write: no journal-mode switch, no migration, no side
        # files created; this also reads a file the user may not write
        check_sqlite_file(self.path)
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        quiet = _flock(fd, fcntl.LOCK_SH)           # no writer now, none until we close
        wal = Path(str(self.path) + "-wal")
        if quiet and not wal.exists():
            uri, self._lock_fd = "?mode=ro&immutable=1", fd
        else:
            os.close(fd)                            # a writer is active, or crashed mid-run
            uri = "?mode=ro"
        try:
            self.db = sqlite3.connect(self.path.resolve().as_uri() + uri, uri=True,
                                      isolation_level=None, timeout=30)
        except sqlite3.Error as e:
            self._unlock_writer()
            raise StoreError(f"{self.path}: cannot open read-only: {e}") from None
        self.db.row_factory = sqlite3.Row
        try:
            self._check_readable()
        except sqlite3.DatabaseError as e:
            self.close()
            raise NotAStore(f"{self.path}: not a fwdbench results store ({e})") from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._unlock_writer()           # a reader's shared lock, or a leftover

    def _connect_writer(self) -> None:
        self.db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        try:
            if self._version() == 0:        # before anything writes (the journal mode)
                theirs = [r[0] for r in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
                if theirs:
                    raise NotAStore(
                        f"{self.path}: a SQLite database with tables that are not "
                        f"fwdbench's ({', '.join(theirs[:5])}{', ...' if len(theirs) > 5 else ''}"
                        "); write the results to a new file")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise NotAStore(f"{self.path}: not a fwdbench results store ({e})") from None
        except BaseException:
            self.db.close()
            raise

    def _version(self) -> int:
        if self._table_exists("meta"):
            cols = {r[1] for r in self.db.execute("PRAGMA table_info(meta)")}
            if not {"key", "value"} <= cols:
                return 0            # someone else's 'meta' table
        return super()._version()

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
        # The DDL, the step's backfill and the version bump commit together
        # (executescript leaves the transaction its script began open).
        self.db.executescript("BEGIN IMMEDIATE;\n" + ddl)
        try:
            if step in BACKFILL:
                BACKFILL[step](self)
            self.db.execute(version_upsert(step + 1))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _try_lock_writer(self) -> bool:
        # flock, not SQLite's own fcntl locks: independent of them, held by this open
        # file description only, and released by the kernel when the process dies.
        if self._lock_fd is not None:
            return True                     # taken before the first write (writer=True)
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        if not _flock(fd, fcntl.LOCK_EX, WRITER_WAIT_S):
            os.close(fd)
            return False
        self._lock_fd = fd
        return True

    def _unlock_writer(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)         # closing the descriptor drops the flock
            self._lock_fd = None


SQLiteStore = Store
