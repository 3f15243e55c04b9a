"""Reading commands never write (issue 20): `results`, `analyze`, `report` and
`compare` open a SQLite store read-only, create no -wal or -shm file and leave
its bytes as they were; a file that is not a fwdbench store (a user's own
database, an empty file, a text file) is refused with one line naming it, exit
code 2, untouched. (PostgreSQL's read-only transactions: test_store_postgres.py.)"""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import sim_campaign

FWDBENCH = [sys.executable, "-m", "fwdbench.cli"]
READERS = (["results"], ["results", "--json"], ["results", "--trials"], ["analyze"],
           ["analyze", "--json"], ["report", "-o", "{out}"], ["compare", "{db}", "-o", "{out}"])


def fwdbench(*args, cwd=None):
    return subprocess.run(FWDBENCH + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=dict(os.environ, FWDBENCH_REPORT_JOBS="1"))


def snapshot(d: Path) -> dict[str, str]:
    """Every file in ``d`` with the SHA-256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ro")
    camp = d / "c.toml"
    camp.write_text(sim_campaign("ro"))
    db = d / "store" / "ro.sqlite"
    db.parent.mkdir()
    r = fwdbench("run", camp, "--out", db, "--no-report", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == ["ro.sqlite"]
    return db


@pytest.mark.parametrize("cmd", READERS, ids=[" ".join(c[:2]) for c in READERS])
def test_reading_a_store_changes_no_byte_and_creates_no_file(store, cmd, tmp_path):
    db = tmp_path / "store" / store.name             # a fresh copy: no side files yet
    db.parent.mkdir()
    shutil.copyfile(store, db)
    before = snapshot(db.parent)
    args = [a.format(out=tmp_path / "out", db=db) for a in cmd]
    r = fwdbench(args[0], db, *args[1:])
    assert r.returncode == 0, r.stderr
    assert snapshot(db.parent) == before             # same files (no -wal, -shm), same bytes


def _own_db(path: Path, wal: bool) -> None:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE notes (body TEXT)")
    con.execute("INSERT INTO notes VALUES ('mine')")
    con.commit()
    con.close()


NOT_STORES = {
    "own-db": (lambda p: _own_db(p, wal=False), "not a fwdbench results store"),
    "own-db-wal": (lambda p: _own_db(p, wal=True), "not a fwdbench results store"),
    "empty": (lambda p: p.write_bytes(b""), "an empty file"),
    "text": (lambda p: p.write_text("load,repetition,tx,rx\n"), "not a SQLite database"),
}


@pytest.mark.parametrize("kind", NOT_STORES)
@pytest.mark.parametrize("cmd", READERS, ids=[" ".join(c[:2]) for c in READERS])
def test_a_file_that_is_not_a_store_is_refused_untouched(kind, cmd, tmp_path, store):
    d = tmp_path / "d"
    d.mkdir()
    f = d / "mine.sqlite"
    make, why = NOT_STORES[kind]
    make(f)
    before = snapshot(d)
    args = [a.format(out=tmp_path / "out", db=store) for a in cmd]
    if args[0] == "compare":
        args = ["compare", f, store, *args[2:]]      # the bad file first
    else:
        args = [args[0], f, *args[1:]]
    r = fwdbench(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and why in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(d) == before                      # no fwdbench tables, no side files


def test_run_and_force_leave_a_users_database_alone(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text(sim_campaign("own"))
    f = tmp_path / "mine.sqlite"
    _own_db(f, wal=False)
    before = snapshot(tmp_path)
    r = fwdbench("run", camp, "--out", f, "--no-report", "-q")
    assert r.returncode == 2 and "tables that are not fwdbench's (notes)" in r.stderr, r.stderr
    r = fwdbench("run", camp, "--out", f, "--force", "--no-report", "-q")
    assert r.returncode == 2 and "not a fwdbench results store" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before
