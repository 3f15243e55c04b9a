"""The results store: one campaign per SQLite file (WAL, the default) or per
PostgreSQL schema, chosen by the target given: a ``postgresql://`` (or
``postgres://``) URL opens PostgreSQL, anything else is a SQLite file path.
See docs/store.md."""
from __future__ import annotations

from pathlib import Path

from .base import ResultsStore, StoreError, StoreNeedsMigration, TrialRow, trial_from_dict
from .postgres import URL_FORM, is_postgres_url, mask_url
from .schema import SCHEMA_VERSION
from .sqlite import SQLiteStore, Store

__all__ = ["SCHEMA_VERSION", "ResultsStore", "SQLiteStore", "Store", "StoreError", "TrialRow",
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

    ``read_only``: for commands that only read (report, results, analysis).
    Nothing is created or written, except that a store written by an older
    fwdbench is upgraded once, as opening it for writing would."""
    def _open(ro: bool) -> ResultsStore:
        if is_store_url(target):
            from .postgres import PostgresStore
            return PostgresStore(str(target), read_only=ro)
        return Store(target, read_only=ro)

    if not read_only:
        return _open(False)
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
            st.drop_tables()
        finally:
            st.close()
        return
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
