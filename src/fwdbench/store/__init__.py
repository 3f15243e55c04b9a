"""The results store: one campaign per SQLite file (WAL, the default) or per
PostgreSQL schema, chosen by the target given: a ``postgresql://`` (or
``postgres://``) URL opens PostgreSQL, anything else is a SQLite file path.
See docs/store.md."""
from __future__ import annotations

from pathlib import Path

from .base import (NotAStore, ResultsStore, StoreBusy, StoreError, StoreNeedsMigration,
                   TrialRow, trial_from_dict)
from .postgres import URL_FORM, is_postgres_url, mask_url
from .schema import SCHEMA_VERSION
from .sqlite import SQLiteStore, Store

__all__ = ["SCHEMA_VERSION", "NotAStore", "ResultsStore", "SQLiteStore", "Store", "StoreBusy", "StoreError",
           "TrialRow",
           "URL_FORM", "display_target", "is_store_url", "open_store", "remove_store",
           "store_target", "trial_from_dict"]


def is_store_url(target: object) -> bool:
    """True for a PostgreSQL URL; False for a SQLite path."""
    return is_postgres_url(target)


def store_target(target: str | Path) -> str | Path:
    """A command-line argument as a store target: the URL as given, or a Path."""
    return target if is_store_url(target) else Path(target)


def display_target(target: str | Path) -> str:
    """The target for messages: the URL with its password masked, or the path."""
    return mask_url(target) if is_store_url(target) else str(target)


def open_store(target: str | Path, *, read_only: bool = False) -> ResultsStore:
    """Open (creating and migrating as needed) the store at ``target``.

    Without ``read_only`` the caller becomes the store's one writer (``fwdbench
    run``): :class:`StoreBusy`, naming the writer, when another process is.

    ``read_only``: for commands that only read (report, results, analysis).
    Nothing is created or written, and a file or schema that is not a fwdbench
    store is refused untouched; the one exception is a store written by an older
    fwdbench, whose schema is upgraded once, as opening it for writing would."""
    def _open(ro: bool, writer: bool = False) -> ResultsStore:
        if is_store_url(target):
            from .postgres import PostgresStore
            return PostgresStore(str(target), read_only=ro)
        return Store(target, read_only=ro, writer=writer)

    if not read_only:
        st = _open(False, writer=True)
        try:
            st.lock_writer()
        except BaseException:
            st.close()
            raise
        return st
    try:
        return _open(True)
    except StoreNeedsMigration:
        _open(False).close()
        return _open(True)


def remove_store(target: str | Path) -> None:
    """``run --force``: delete the campaign at ``target`` so a new one can start.
    SQLite: the file and its WAL side files. PostgreSQL: fwdbench's tables in
    the URL's schema (other tables, the schema and the database stay)."""
    if is_store_url(target):
        from .postgres import PostgresStore
        st = PostgresStore(str(target), migrate=False)
        try:
            if st._table_exists("meta"):
                st.lock_writer()        # never under a running writer's feet
            st.drop_tables()
        finally:
            st.close()
        return
    path = Path(target)
    if path.is_file() and path.stat().st_size:
        if not _is_fwdbench_file(path):
            raise NotAStore(f"{path}: not a fwdbench results store; --force replaces only "
                             "results 'fwdbench run' wrote: remove it yourself or write "
                             "elsewhere with --out")
        holder = writer_of(path)
        if holder is not None:
            raise StoreBusy(f"{path} is being written by {holder}; --force will not remove a "
                            "store another run is writing: wait for it to end, or stop it")
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)


def writer_of(path: Path) -> str | None:
    """Who is writing the SQLite store at ``path`` (None: nobody)."""
    from .sqlite import writer_lock_free
    if writer_lock_free(path):
        return None
    try:
        st = Store(path, read_only=True)
    except StoreError:
        return "another fwdbench process"
    try:
        return st.writer_holder()
    finally:
        st.close()


def _is_fwdbench_file(path: Path) -> bool:
    try:
        Store(path, read_only=True).close()
        return True
    except StoreNeedsMigration:
        return True
    except StoreError:
        return False
