"""The results store on PostgreSQL, against a real server, and on SQLite alike.

A throwaway cluster is created in a temp dir with Debian's binaries
(initdb, pg_ctl; run as the ``postgres`` user when we are root), listening
only on a unix socket in that dir, and removed at the end. Tests skip only
when the PostgreSQL binaries are missing (``apt-get install postgresql``).
"""
from __future__ import annotations

import glob
import itertools
import json
import os
import pwd
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fwdbench.store import (SCHEMA_VERSION, SQLiteStore, StoreBusy, StoreError, open_store,
                            remove_store)
from fwdbench.store.postgres import PostgresStore, mask_url, pg_ddl, split_url
from fwdbench.store.schema import MIGRATIONS
from helpers import goal_rows, intent
from helpers import sim_campaign
from helpers import store_campaign as _campaign
from helpers import store_result as _result

SECRET_USER, SECRET_PW = "fwdsecret", "s3cret-pw"


def _pg_bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return str(Path(found[-1]).parent)
    initdb = shutil.which("initdb")
    return str(Path(initdb).parent) if initdb else None


@pytest.fixture(scope="module")
def pg_cluster():
    """A private PostgreSQL cluster on a unix socket in a temp dir; its base URL."""
    bindir = _pg_bindir()
    if bindir is None or not Path(bindir, "pg_ctl").exists():
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql")
    pytest.importorskip("psycopg", reason="psycopg 3 missing: pip install 'psycopg[binary]'")
    prefix: list[str] = []
    d = tempfile.mkdtemp(prefix="fwdbench-pg-")
    if os.geteuid() == 0:            # postgres refuses to run as root
        pg = pwd.getpwnam("postgres")
        os.chown(d, pg.pw_uid, pg.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, log = f"{d}/data", f"{d}/server.log"

    def pg(*args: str) -> None:
        r = subprocess.run(prefix + list(args), cwd=d, capture_output=True, text=True,
                           timeout=120)
        if r.returncode:
            raise RuntimeError(f"{' '.join(args)} failed: {r.stdout}{r.stderr}")

    started = False
    try:
        pg(f"{bindir}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
           "--no-sync", "--no-instructions")
        # the password user proves masking and the auth-failure message; the rest is trust
        Path(data, "pg_hba.conf").write_text(
            f"local all {SECRET_USER} scram-sha-256\nlocal all all trust\n")
        opts = (f"-c listen_addresses='' -c unix_socket_directories='{d}' "
                "-c fsync=off -c full_page_writes=off -c max_connections=40")
        pg(f"{bindir}/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o", opts, "start")
        started = True
        pg(f"{bindir}/createdb", "-h", d, "-U", "postgres", "fwdbench")
        import psycopg
        with psycopg.connect(f"postgresql:///fwdbench?host={d}&user=postgres",
                             autocommit=True) as con:
            con.execute(f"CREATE ROLE {SECRET_USER} LOGIN PASSWORD '{SECRET_PW}'")
            con.execute(f"GRANT CREATE ON DATABASE fwdbench TO {SECRET_USER}")
        yield {"dir": d, "url": f"postgresql:///fwdbench?host={d}&user=postgres"}
    finally:
        if started:
            subprocess.run(prefix + [f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w",
                                     "stop"], cwd=d, capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)


_schemas = itertools.count()


@pytest.fixture
def pg_url(pg_cluster):
    """A URL to a fresh schema (one campaign per schema)."""
    return f"{pg_cluster['url']}&schema=t{os.getpid()}_{next(_schemas)}"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "r.sqlite"
    return request.getfixturevalue("pg_url")


def raw_exec(target, sql: str) -> list[tuple]:
    """Run SQL on the store's database behind fwdbench's back."""
    if isinstance(target, Path):
        import sqlite3
        con = sqlite3.connect(target)
        try:
            rows = con.execute(sql).fetchall()
            con.commit()
            return rows
        finally:
            con.close()
    import psycopg
    conninfo, schema = split_url(target)
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(f'SET search_path TO "{schema}"')
        cur = con.execute(sql)
        return cur.fetchall() if cur.description else []


# -- the same behaviour on both backends ----------------------------------------

def test_open_store_picks_the_backend(target):
    st = open_store(target)
    try:
        assert isinstance(st, SQLiteStore if isinstance(target, Path) else PostgresStore)
        assert st.schema_version == SCHEMA_VERSION
    finally:
        st.close()


def test_round_trip_keeps_every_field(target):
    st = open_store(target)
    sid = _campaign(st)
    tid = st.begin_trial(sid, 0, 0, intent("search", "sweep load 1 of 1"), 1.0, 1000.0)
    st.finish_trial(tid, _result())
    st.save_results(sid, 0, goal_rows({"ndr": (900.0, {"trials": 3}), "pdr@0.005": (None, {})}))
    st.update_host({"gen_cpu": 0})
    st.set_describe(sid, {"driver": "veth"})
    st.close()

    st = open_store(target)
    try:
        [row] = st.done_trials(sid, 0)
        assert row.id == tid and row.status == "done" and row.kind == "search"
        assert row.reason == "sweep load 1 of 1" and row.intended_load_pps == 1000.0
        assert row.result == _result()
        assert row.result.loss_ratio == pytest.approx(0.001)
        assert st.repetition_done(sid, 0) and not st.repetition_done(sid, 1)
        goals = {r["goal"]: r for r in st.results()}
        assert goals["ndr"]["value_pps"] == 900.0 and goals["ndr"]["detail"] == {"trials": 3}
        assert goals["pdr@0.005"]["value_pps"] is None
        c = st.campaign()
        assert c["config"] == {"a": 1} and c["host"] == {"kernel": "6", "gen_cpu": 0}
        assert c["name"] == "c" and c["config_text"] == "[campaign]\n"
        [sc] = st.scenarios()
        assert sc["id"] == sid and sc["dut_params"] == {"m": 1}
        assert sc["describe"] == {"driver": "veth"} and sc["max_load_pps"] == 1e6
        assert st.trial_counts() == {"done": 1}
    finally:
        st.close()


def test_counts_above_32_bits_and_float_precision_survive(target):
    st = open_store(target)
    sid = _campaign(st)
    big = 3 * 2**31 + 7                       # more packets than an int4 holds
    load = 1234567.8912345678
    tid = st.begin_trial(sid, 0, 0, intent("search", "big"), 300.0, load)
    st.finish_trial(tid, _result(load=load, tx=big, rx=big - 5))
    st.close()
    st = open_store(target)
    try:
        [row] = st.done_trials(sid, 0)
        assert row.intended_load_pps == load          # a double, not a float4
        assert row.result.tx_packets == big and row.result.lost == 5
        [(tx, lost, started)] = raw_exec(
            target, "SELECT tx_packets, lost, started_at FROM trial")
        assert tx == big and lost == 5
        assert abs(started - time.time()) < 60        # Unix time at full precision
    finally:
        st.close()


def test_running_trials_become_interrupted_on_reopen_and_never_count(target):
    st = open_store(target)
    sid = _campaign(st)
    done = st.begin_trial(sid, 0, 0, intent("search", "kept"), 1.0, 1000.0)
    st.finish_trial(done, _result())
    st.begin_trial(sid, 0, 1, intent("search", "cut off"), 1.0, 2000.0)
    st.close()                                        # the run dies here

    st = open_store(target)
    try:
        assert [t.seq for t in st.done_trials(sid, 0)] == [0]
        assert st.mark_interrupted() == 1
        assert st.trial_counts() == {"done": 1, "interrupted": 1}
        assert st.mark_interrupted() == 0
        # resume runs the trial again: a new row; the interrupted one stays on record
        again = st.begin_trial(sid, 0, 1, intent("search", "cut off"), 1.0, 2000.0)
        st.finish_trial(again, _result(load=2000.0))
        assert [(t.seq, t.id) for t in st.done_trials(sid, 0)] == [(0, done), (1, again)]
        everything = list(st.trials(status=None))
        assert [t.status for t in everything] == ["done", "interrupted", "done"]
        [(err,)] = raw_exec(target, "SELECT error FROM trial WHERE status='interrupted'")
        assert err.startswith("interrupted:")
    finally:
        st.close()


def test_failed_trial_is_kept_with_its_error(target):
    st = open_store(target)
    try:
        sid = _campaign(st)
        tid = st.begin_trial(sid, 0, 0, intent("search", "x"), 1.0, 1000.0)
        st.fail_trial(tid, "RuntimeError: generator died")
        assert st.done_trials(sid, 0) == [] and st.trial_counts() == {"failed": 1}
        assert [t.status for t in st.trials(status="failed")] == ["failed"]
        [(err,)] = raw_exec(target, "SELECT error FROM trial")
        assert err == "RuntimeError: generator died"
    finally:
        st.close()


def test_second_campaign_in_one_store_is_refused(target):
    st = open_store(target)
    try:
        _campaign(st)
        with pytest.raises(StoreError, match="--resume"):
            _campaign(st)
    finally:
        st.close()


def test_save_results_replaces_and_orders_goals_bytewise(target):
    st = open_store(target)
    try:
        sid = _campaign(st)
        ratios = [0.005, 0.0, None, 0.1, 0.05, 1e-7]
        st.save_results(sid, 0, [(lr, 1.0, {}) for lr in ratios])
        st.save_results(sid, 0, [(0.0, 2.0, {"again": True})])      # a rerun replaces
        res = st.results()
        goals = ["pdr@0.005", "ndr", "search", "pdr@0.1", "pdr@0.05", "pdr@1e-07"]
        assert [r["goal"] for r in res] == sorted(goals)            # byte order, as SQLite
        # the goal is a number in its own column: no text to parse back
        assert {r["goal"]: r["loss_ratio"] for r in res} == dict(zip(goals, ratios))
        ndr = [r for r in res if r["goal"] == "ndr"]
        assert len(ndr) == 1 and ndr[0]["value_pps"] == 2.0 and ndr[0]["detail"] == {"again": True}
        assert st.repetition_done(sid, 0)
    finally:
        st.close()


def test_schema_version_and_newer_store_refused(target):
    st = open_store(target)
    assert st.schema_version == SCHEMA_VERSION
    st.close()
    assert raw_exec(target, "SELECT value FROM meta WHERE key='schema_version'") == [
        (str(SCHEMA_VERSION),)]
    raw_exec(target, "UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="newer"):
        open_store(target)


def test_an_old_store_is_migrated_on_open(target):
    """A store at version 0 (no tables) is brought to SCHEMA_VERSION; reopening is a no-op."""
    for _ in range(2):
        st = open_store(target)
        assert st.schema_version == SCHEMA_VERSION
        st.close()
    tables = raw_exec(target, "SELECT COUNT(*) FROM meta")
    assert tables == [(1,)]


# Rows as fwdbench wrote them at schema version 1: the intent only in the reason text.
V1_TRIALS = [  # (kind, reason) -> (kind, step, goal_loss_ratio, latency_fraction, reference)
    (("warmup", "warm-up trial after DUT setup (CSIT)"), ("warmup", "warmup", None, None, None)),
    (("search", "binary NDR: first trial at max load"), ("search", "first", 0.0, None, None)),
    (("search", "binary PDR@0.5%: forwarding-rate hint from the failed trial at 2000000 pps"),
     ("search", "hint", 0.005, None, None)),
    (("search", "binary PDR@0.5%: bisect between 9001 pps and 2000000 pps"),
     ("search", "bisect", 0.005, None, None)),
    (("search", "binary NDR: verification at 990000 pps"),
     ("search", "verification", 0.0, None, None)),
    (("search", "mlr: warm-up at max load (result ignored)"),
     ("warmup", "warmup", None, None, None)),
    (("search", "mlr: initial trial at max load"), ("search", "initial", None, None, None)),
    (("search", "mlr PDR@0.5% (target duration sum 21 s): Upper bound"),
     ("search", "target", 0.005, None, None)),
    (("search", "sweep: load 100000 pps, repetition 1/3"), ("search", "sweep", None, None, None)),
    (("search", "latency at 50% of PDR 990000 pps"), ("latency", "latency", None, 0.5, "PDR")),
    (("latency", "latency at 10% of NDR 900000 pps (repetition 2/2)"),
     ("latency", "latency", None, 0.1, "NDR")),
]


def _make_v1_store(target) -> None:
    """A store as fwdbench wrote it at schema version 1, from that version's DDL."""
    from fwdbench.store.schema import version_upsert
    ddl = MIGRATIONS[0] + ";" + version_upsert(1) + ";"
    if isinstance(target, Path):
        import sqlite3
        con = sqlite3.connect(target)
        con.executescript(ddl)
    else:
        import psycopg
        conninfo, schema = split_url(target)
        con = psycopg.connect(conninfo, autocommit=True)
        con.execute(f'CREATE SCHEMA "{schema}"')
        con.execute(f'SET search_path TO "{schema}"')
        con.execute(pg_ddl(ddl))
    res = json.dumps(_result().to_dict())
    stmts = [
        "INSERT INTO campaign(id, name, source_path, config_text, config_json, host_json,"
        " tool_version, created_at) VALUES (1, 'old', 'old.toml', '', '{}', '{}', '0.1', 0)",
        "INSERT INTO scenario(id, campaign_id, idx, name, dut_name, dut_type, dut_params,"
        " profile, search, axes, max_load_pps) VALUES (1, 1, 0, 's', 'd', 'sim', '{}', '{}',"
        " '{\"type\": \"binary\"}', '{}', 2000000)",
        "INSERT INTO result(id, scenario_id, repetition, goal, value_pps, detail_json,"
        " created_at) VALUES (1, 1, 0, 'ndr', 9e5, '{}', 0), (2, 1, 0, 'pdr@0.005', 9.9e5,"
        " '{}', 0), (3, 1, 0, 'search', NULL, '{}', 0)",
    ]
    for i, ((kind, reason), _) in enumerate(V1_TRIALS):
        stmts.append(
            "INSERT INTO trial(id, scenario_id, repetition, seq, status, kind, reason,"
            " intended_load_pps, duration_s, started_at, result_json) VALUES"
            f" ({i + 1}, 1, 0, {i}, 'done', '{kind}', '{reason}', 1000, 1, 0, '{res}')")
    for q in stmts:
        con.execute(q)
    if isinstance(target, Path):
        con.commit()
    con.close()


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
def test_a_version_1_store_gets_its_trials_intents_and_goals_as_values(target, read_only):
    """Schema 2 stores the search's intent in columns and a result's goal as its loss
    ratio. A store written at version 1 (built here from that version's DDL) is
    migrated on open, by a writer or once by a reader, and its rows get those
    values from the texts they carried."""
    _make_v1_store(target)
    st = open_store(target, read_only=read_only)
    try:
        assert st.schema_version == SCHEMA_VERSION == 2
        got = [(t.intent.kind, t.intent.step, t.intent.goal_loss_ratio,
                t.intent.latency_fraction, t.intent.latency_reference)
               for t in st.trials("done")]
        assert got == [want for _, want in V1_TRIALS]
        assert [t.reason for t in st.trials("done")] == [r for (_, r), _ in V1_TRIALS]
        assert {r["goal"]: r["loss_ratio"] for r in st.results()} == {
            "ndr": 0.0, "pdr@0.005": 0.005, "search": None}
        assert st.campaign()["name"] == "old"
    finally:
        st.close()
    st = open_store(target)                     # reopening does not migrate again
    try:
        assert st.schema_version == SCHEMA_VERSION
        assert len(list(st.trials("done"))) == len(V1_TRIALS)
    finally:
        st.close()


def _schema_exists(url: str) -> bool:
    import psycopg
    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        return con.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                           (schema,)).fetchone() is not None


def test_read_only_store_reads_and_refuses_writes(target):
    """Reports, `results` and `analyze` open the store read-only: the database
    itself refuses a write through that connection."""
    st = open_store(target)
    _campaign(st)
    st.close()
    st = open_store(target, read_only=True)
    try:
        assert st.campaign()["name"] and st.scenarios()
        with pytest.raises(Exception, match="(?i)read-?only"):
            st._exec("UPDATE meta SET value='0' WHERE key='schema_version'")
    finally:
        st.close()
    assert raw_exec(target, "SELECT value FROM meta WHERE key='schema_version'") == [
        (str(SCHEMA_VERSION),)]


def test_read_only_open_of_a_missing_store_creates_nothing(target):
    with pytest.raises(StoreError, match="no such results file|no schema"):
        open_store(target, read_only=True)
    if isinstance(target, Path):
        assert not target.exists()
    else:
        assert not _schema_exists(target)


def test_read_only_open_refuses_what_is_not_a_store_untouched(target):
    """No fwdbench tables (an empty SQLite file, an empty schema): a reading
    command refuses it and creates nothing (it used to create the tables)."""
    if isinstance(target, Path):
        target.touch()
    else:
        import psycopg
        conninfo, schema = split_url(target)
        with psycopg.connect(conninfo, autocommit=True) as con:
            con.execute(f'CREATE SCHEMA "{schema}"')
    with pytest.raises(StoreError, match="not a fwdbench results store|an empty file"):
        open_store(target, read_only=True)
    if isinstance(target, Path):
        assert target.stat().st_size == 0
        assert sorted(p.name for p in target.parent.iterdir()) == [target.name]
    else:
        with psycopg.connect(conninfo, autocommit=True) as con:
            assert con.execute("SELECT count(*) FROM pg_tables WHERE schemaname=%s",
                               (schema,)).fetchone()[0] == 0


# -- one writer per store ----------------------------------------------------------

@pytest.fixture
def quick_writer_wait(monkeypatch):
    """A SQLite writer waits WRITER_WAIT_S for readers before refusing; shorten it."""
    monkeypatch.setattr("fwdbench.store.sqlite.WRITER_WAIT_S", 0.2)


def test_a_store_has_one_writer_and_the_refusal_names_it(target, quick_writer_wait):
    import socket
    st = open_store(target)
    try:
        with pytest.raises(StoreBusy) as e:
            open_store(target)
        msg = str(e.value)
        assert f"being written by fwdbench pid {os.getpid()} on host {socket.gethostname()}, " \
               "started 20" in msg, msg
        assert "one writer at a time" in msg and "--resume" in msg
        with pytest.raises(StoreBusy, match=f"pid {os.getpid()} "):
            remove_store(target)                # --force never pulls it from under a run
        ro = open_store(target, read_only=True)  # readers are welcome
        ro.close()
    finally:
        st.close()
    open_store(target).close()                  # free again once the writer closed


def _holder(target) -> subprocess.Popen:
    """Another process that opens ``target`` as its writer and sleeps."""
    code = ("import sys, time; from fwdbench.store import open_store, store_target; "
            "st = open_store(store_target(sys.argv[1])); print('locked', flush=True); "
            "time.sleep(120)")
    p = subprocess.Popen([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    assert line == "locked", p.stderr.read() if p.poll() is not None else line
    return p


def test_the_writer_lock_dies_with_a_killed_writer(target, quick_writer_wait):
    p = _holder(target)
    try:
        with pytest.raises(StoreBusy, match=f"fwdbench pid {p.pid} on host "):
            open_store(target)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    end = time.monotonic() + 10             # the server notices the closed connection
    while True:
        try:
            open_store(target).close()
            break
        except StoreBusy:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


def test_remove_store_starts_over(target):
    st = open_store(target)
    _campaign(st)
    st.close()
    remove_store(target)
    st = open_store(target)
    try:
        assert st.campaign() is None and st.scenarios() == [] and st.trial_counts() == {}
        _campaign(st)                     # a new campaign is accepted
    finally:
        st.close()


# -- PostgreSQL only -------------------------------------------------------------

def test_pg_columns_have_sqlite_ranges(pg_url):
    open_store(pg_url).close()
    types = dict(raw_exec(pg_url, "SELECT column_name, data_type FROM information_schema.columns"
                                  " WHERE table_schema = current_schema() AND table_name='trial'"))
    assert types["id"] == "bigint" and types["tx_packets"] == "bigint"
    assert types["started_at"] == "double precision" and types["loss_ratio"] == "double precision"
    assert types["result_json"] == "text"
    ddl = pg_ddl(MIGRATIONS[0])
    assert " INTEGER" not in ddl and " REAL" not in ddl and "--" not in ddl


def test_pg_schemas_hold_separate_campaigns(pg_cluster):
    a = f"{pg_cluster['url']}&schema=camp_a_{os.getpid()}"
    b = f"{pg_cluster['url']}&schema=camp_b_{os.getpid()}"
    for url, name in ((a, "A"), (b, "B")):
        st = open_store(url)
        st.create_campaign(name=name, source_path="x", config_text="", config={}, host={},
                           tool_version="0")
        st.close()
    remove_store(a)                       # --force on one leaves the other alone
    sa, sb = open_store(a), open_store(b)
    try:
        assert sa.campaign() is None and sb.campaign()["name"] == "B"
    finally:
        sa.close()
        sb.close()


def test_pg_force_drops_only_fwdbench_tables(pg_url):
    st = open_store(pg_url)
    _campaign(st)
    st.close()
    raw_exec(pg_url, "CREATE TABLE notes (x int)")
    raw_exec(pg_url, "INSERT INTO notes VALUES (42)")
    remove_store(pg_url)
    assert raw_exec(pg_url, "SELECT x FROM notes") == [(42,)]
    assert raw_exec(pg_url, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()"
                            " AND tablename = 'trial'") == [(0,)]


def test_pg_password_user_works_and_password_is_masked(pg_cluster):
    d = pg_cluster["dir"]
    good = f"postgresql://{SECRET_USER}:{SECRET_PW}@/fwdbench?host={d}&schema=secret_{os.getpid()}"
    st = open_store(good)
    try:
        assert SECRET_PW not in str(st.path) and "***" in str(st.path)
        assert st.label == f"postgresql:fwdbench:secret_{os.getpid()}"
    finally:
        st.close()
    for bad in (f"postgresql://{SECRET_USER}:wrong-pw-123@/fwdbench?host={d}",
                f"postgresql:///fwdbench?host={d}&user={SECRET_USER}&password=wrong-pw-123"):
        with pytest.raises(StoreError) as ei:
            open_store(bad)
        msg = str(ei.value)
        assert "wrong-pw-123" not in msg and "***" in msg
        assert "authentication failed" in msg and "password" in msg and "PGPASSWORD" in msg


def test_pg_unreachable_server_names_the_url_and_the_fix(tmp_path):
    pytest.importorskip("psycopg")
    url = f"postgresql://u:topsecret@/fwdbench?host={tmp_path}/nowhere&connect_timeout=2"
    with pytest.raises(StoreError) as ei:
        open_store(url)
    msg = str(ei.value)
    assert f"postgresql://u:***@/fwdbench?host={tmp_path}/nowhere" in msg
    assert "topsecret" not in msg and "server is running" in msg


def test_pg_missing_database_and_bad_urls(pg_cluster):
    d = pg_cluster["dir"]
    with pytest.raises(StoreError, match="createdb"):
        open_store(f"postgresql:///no_such_db?host={d}&user=postgres")
    with pytest.raises(StoreError, match="postgresql://USER"):
        open_store(f"postgresql:///fwdbench?host={d}&user=postgres&bogus_option=1")
    with pytest.raises(StoreError, match="plain SQL name"):
        open_store(f"{pg_cluster['url']}&schema=drop;table")
    with pytest.raises(StoreError, match="plain SQL name"):
        open_store(f"{pg_cluster['url']}&schema=")


def test_mask_url():
    assert mask_url("postgresql://me:pw@db.example:5433/res?schema=a") == \
        "postgresql://me:***@db.example:5433/res?schema=a"
    assert mask_url("postgres:///res?host=/tmp/x&password=pw&user=me") == \
        "postgres:///res?host=/tmp/x&password=***&user=me"
    assert mask_url("postgresql://me@h/db") == "postgresql://me@h/db"
    assert split_url("postgresql:///db?host=/tmp/x&schema=c1&user=me") == (
        "postgresql:///db?host=/tmp/x&user=me", "c1")
    assert split_url("postgresql://h/db")[1] == "public"


# -- end to end: fwdbench run / results / report / analyze into PostgreSQL --------

CAMPAIGN = sim_campaign("pgrun")

FWDBENCH = [sys.executable, "-m", "fwdbench.cli"]


def fwdbench(*args, env=None, **kw):
    return subprocess.run(FWDBENCH + [str(a) for a in args], env=dict(os.environ, **(env or {})),
                          capture_output=True, text=True, timeout=300, **kw)


def trial_set(target):
    rows = raw_exec(target,
        "SELECT s.idx, t.repetition, t.seq, t.kind, t.intended_load_pps, t.duration_s,"
        " t.tx_packets, t.rx_packets FROM trial t JOIN scenario s ON s.id = t.scenario_id"
        " WHERE t.status = 'done' ORDER BY s.idx, t.repetition, t.seq")
    results = raw_exec(target,
        "SELECT s.idx, r.repetition, r.goal, r.value_pps FROM result r"
        " JOIN scenario s ON s.id = r.scenario_id WHERE r.goal != 'search'"
        " ORDER BY 1, 2, 3")
    status = dict(raw_exec(target, "SELECT status, COUNT(*) FROM trial GROUP BY status"))
    return [tuple(r) for r in rows], [tuple(r) for r in results], status


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The campaign run into SQLite: what PostgreSQL must agree with."""
    d = tmp_path_factory.mktemp("ref")
    camp = d / "pgrun.toml"
    camp.write_text(CAMPAIGN)
    db = d / "ref.sqlite"
    r = fwdbench("run", camp, "--out", db, "--no-report", "-q")
    assert r.returncode == 0, r.stderr
    return {"campaign": camp, "db": db, "trials": trial_set(db)}


def _results_json(target) -> dict:
    r = fwdbench("results", target, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    doc.pop("created_at")
    return doc


def test_e2e_run_results_report_analyze_agree_with_sqlite(reference, pg_url, tmp_path):
    r = fwdbench("run", reference["campaign"], "--out", pg_url, "--no-report")
    assert r.returncode == 0, r.stderr
    assert "results: postgresql:///fwdbench?" in r.stdout
    rows, results, status = trial_set(pg_url)
    assert (rows, results, status) == reference["trials"]
    assert status == {"done": len(rows)} and len(results) >= 4

    doc = _results_json(pg_url)
    assert doc == _results_json(reference["db"])
    assert doc["campaign"] == "pgrun" and len(doc["scenarios"]) == 2
    assert all(s["results"]["ndr"] for s in doc["scenarios"])

    out_pg, out_sq = tmp_path / "rep-pg", tmp_path / "rep-sq"
    r = fwdbench("report", pg_url, "--out", out_pg)
    assert r.returncode == 0, r.stderr
    assert fwdbench("report", reference["db"], "--out", out_sq).returncode == 0
    html = (out_pg / "index.html").read_text()
    assert "pgrun" in html and f"postgresql:fwdbench:{pg_url.rsplit('=', 1)[1]}" in html
    for csv in ("results.csv", "summary.csv", "trials.csv"):
        assert (out_pg / "data" / csv).read_text() == (out_sq / "data" / csv).read_text(), csv

    a_pg = fwdbench("analyze", pg_url, "--json")
    a_sq = fwdbench("analyze", reference["db"], "--json")
    assert a_pg.returncode == 0, a_pg.stderr
    pg_docs = [json.loads(l) for l in a_pg.stdout.splitlines()]
    sq_docs = [json.loads(l) for l in a_sq.stdout.splitlines()]
    assert len(pg_docs) == 2 and pg_docs[0]["file"].startswith("postgresql:fwdbench:")
    assert "#realistic" in pg_docs[0]["file"] and "host=" not in pg_docs[0]["file"]
    for p, s in zip(pg_docs, sq_docs):
        assert p.pop("file").split("#")[1] == s.pop("file").split("#")[1]
        assert p == s and p["pdr_0p5_pps"]


def test_e2e_existing_resume_and_force(reference, pg_url, tmp_path):
    camp = reference["campaign"]
    assert fwdbench("run", camp, "--out", pg_url, "--no-report", "-q").returncode == 0
    before = trial_set(pg_url)
    r = fwdbench("run", camp, "--out", pg_url, "--no-report")
    assert r.returncode != 0 and "--resume" in r.stderr and "--force" in r.stderr
    r = fwdbench("run", "--resume", pg_url, "--no-report")
    assert r.returncode == 0, r.stderr
    assert "trials run: 0" in r.stdout and trial_set(pg_url) == before
    # --force starts over; the end-of-run report goes to results/<campaign>-report
    r = fwdbench("run", camp, "--out", pg_url, "--force", cwd=tmp_path,
                 env={"FWDBENCH_REPORT_JOBS": "1"})
    assert r.returncode == 0, r.stderr
    assert "trials run: 0" not in r.stdout and trial_set(pg_url) == before
    assert (tmp_path / "results" / "pgrun-report" / "index.html").is_file()
    assert len(raw_exec(pg_url, "SELECT id FROM campaign")) == 1


def _wait_for_trials(url, p, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        try:
            if raw_exec(url, "SELECT COUNT(*) FROM trial")[0][0]:
                return
        except Exception:
            pass
        time.sleep(0.05)


def test_e2e_kill_9_then_resume_gives_the_same_trial_set(reference, pg_url):
    expected = reference["trials"]
    env = dict(os.environ, FWDBENCH_SIM_DELAY="0.1")
    rng = random.Random(4321)
    killed = 0
    for attempt in range(3):
        args = (["run", "--resume", pg_url] if attempt
                else ["run", str(reference["campaign"]), "--out", pg_url]) + ["--no-report", "-q"]
        p = subprocess.Popen(FWDBENCH + args, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        _wait_for_trials(pg_url, p)
        time.sleep(rng.uniform(0.0, 0.6))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
    assert killed >= 1
    r = fwdbench("run", "--resume", pg_url, "--no-report")
    assert r.returncode == 0, r.stderr
    rows, results, status = trial_set(pg_url)
    assert [x for x in rows if x[3] == "search"] == [x for x in expected[0] if x[3] == "search"]
    assert results == expected[1]
    assert status.get("running", 0) == 0
    assert status.get("interrupted", 0) >= 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_e2e_second_resume_refuses_and_trials_are_not_duplicated(backend, reference, tmp_path,
                                                                request):
    """Two 'run --resume' of one store at once used to both run, duplicating trials
    (analyze then counted them as repetitions). The second now refuses, naming the
    first; the store ends with exactly the uninterrupted run's trials."""
    url = tmp_path / "twice.sqlite" if backend == "sqlite" else request.getfixturevalue("pg_url")
    r = fwdbench("run", reference["campaign"], "--out", url, "--no-report", "-q")
    assert r.returncode == 0, r.stderr
    # an unfinished store: drop the last repetition's results and trials
    raw_exec(url, "DELETE FROM repetition_done WHERE repetition = 1")
    raw_exec(url, "DELETE FROM result WHERE repetition = 1")
    raw_exec(url, "DELETE FROM trial WHERE repetition = 1")
    first = subprocess.Popen(FWDBENCH + ["run", "--resume", str(url), "--no-report", "-q"],
                             env=dict(os.environ, FWDBENCH_SIM_DELAY="1"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and not raw_exec(
                url, "SELECT 1 FROM trial WHERE repetition = 1"):
            time.sleep(0.05)
        second = fwdbench("run", "--resume", url, "--no-report", "-q")
        assert second.returncode == 3, second.stderr
        assert f"is being written by fwdbench pid {first.pid} on host " in second.stderr
        assert "one writer at a time" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    r = fwdbench("run", "--resume", url, "--no-report", "-q")
    assert r.returncode == 0, r.stderr
    rows, results, status = trial_set(url)
    measured = [x for x in rows if x[3] != "warmup"]       # each run warms up once
    assert measured == [x for x in reference["trials"][0] if x[3] != "warmup"]
    assert results == reference["trials"][1]


def test_e2e_ctrl_c_message_masks_the_password(pg_cluster, tmp_path, reference):
    d = pg_cluster["dir"]
    url = f"postgresql://{SECRET_USER}:{SECRET_PW}@/fwdbench?host={d}&schema=cc_{os.getpid()}"
    p = subprocess.Popen(FWDBENCH + ["run", str(reference["campaign"]), "--out", url,
                                     "--no-report", "-q"],
                         env=dict(os.environ, FWDBENCH_SIM_DELAY="0.1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_trials(url, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert f"fwdbench run --resume postgresql://{SECRET_USER}:***@/fwdbench" in err
    assert SECRET_PW not in err
    r = fwdbench("run", "--resume", url, "--no-report")
    assert r.returncode == 0, r.stderr
    assert SECRET_PW not in r.stdout + r.stderr
    assert trial_set(url)[2].get("running", 0) == 0
