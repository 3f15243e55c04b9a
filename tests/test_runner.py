"""The runner on simulated DUTs: every trial on disk, exact resume after kill -9."""
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import sim_campaign

CAMPAIGN = sim_campaign("resume")

FWDBENCH = [sys.executable, "-m", "fwdbench.cli"]


def run(args, env=None, **kw):
    e = dict(os.environ, **(env or {}))
    return subprocess.run(FWDBENCH + args, env=e, capture_output=True, text=True, **kw)


def trial_set(db: Path):
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT s.idx, t.repetition, t.seq, t.kind, t.intended_load_pps, t.duration_s,"
        " t.tx_packets, t.rx_packets FROM trial t JOIN scenario s ON s.id = t.scenario_id"
        " WHERE t.status = 'done' ORDER BY s.idx, t.repetition, t.seq").fetchall()
    results = con.execute(
        "SELECT s.idx, r.repetition, r.goal, r.value_pps FROM result r"
        " JOIN scenario s ON s.id = r.scenario_id WHERE r.goal != 'search'"
        " ORDER BY 1, 2, 3").fetchall()
    status = dict(con.execute("SELECT status, COUNT(*) FROM trial GROUP BY status").fetchall())
    con.close()
    return rows, results, status


def wait_for_trials(db: Path, p: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait until the run has started trials (so a signal lands mid-campaign)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        try:
            con = sqlite3.connect(db)
            n = con.execute("SELECT COUNT(*) FROM trial").fetchone()[0]
            con.close()
            if n:
                return
        except sqlite3.Error:
            pass
        time.sleep(0.05)


@pytest.fixture
def campaign(tmp_path):
    p = tmp_path / "resume.toml"
    p.write_text(CAMPAIGN)
    return p


def test_run_writes_every_trial_and_result(campaign, tmp_path):
    db = tmp_path / "a.sqlite"
    r = run(["run", str(campaign), "--out", str(db), "--no-report"])
    assert r.returncode == 0, r.stderr
    rows, results, status = trial_set(db)
    assert status == {"done": len(rows)}
    search = [x for x in rows if x[3] == "search"]
    # no (scenario, repetition, seq) twice; seq is 0..n-1 in each repetition
    keys = [(x[0], x[1], x[2]) for x in search]
    assert len(keys) == len(set(keys))
    for sc in (0, 1):
        for rep in (0, 1):
            seqs = [x[2] for x in search if x[0] == sc and x[1] == rep]
            assert seqs == list(range(len(seqs))) and len(seqs) >= 2
    # one warm-up trial per scenario (CSIT), stored apart
    assert sum(1 for x in rows if x[3] == "warmup") == 2
    goals = {(i, rep, g) for i, rep, g, _ in results}
    assert (0, 1, "ndr") in goals and (1, 0, "pdr@0.005") in goals
    out = run(["results", str(db), "--json"])
    doc = json.loads(out.stdout)
    assert doc["campaign"] == "resume" and len(doc["scenarios"]) == 2


def test_kill_9_then_resume_gives_the_same_trial_set(campaign, tmp_path):
    ref = tmp_path / "ref.sqlite"
    assert run(["run", str(campaign), "--out", str(ref), "--no-report"]).returncode == 0
    expected = trial_set(ref)

    db = tmp_path / "cut.sqlite"
    env = dict(os.environ, FWDBENCH_SIM_DELAY="0.1")
    rng = random.Random(1234)
    killed = 0
    for attempt in range(4):       # kill it several times at random moments
        args = (["run", "--resume", str(db)] if db.exists() and attempt
                else ["run", str(campaign), "--out", str(db)]) + ["--no-report", "-q"]
        p = subprocess.Popen(FWDBENCH + args, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        wait_for_trials(db, p)
        time.sleep(rng.uniform(0.0, 0.6))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
    assert killed >= 1
    r = run(["run", "--resume", str(db), "--no-report"])
    assert r.returncode == 0, r.stderr
    rows, results, status = trial_set(db)
    # the measured trials and results are exactly those of the uninterrupted run;
    # a warm-up trial follows every DUT setup, so resumed runs have more of those
    assert [x for x in rows if x[3] == "search"] == [x for x in expected[0] if x[3] == "search"]
    assert results == expected[1]
    assert sum(x[3] == "warmup" for x in rows) >= sum(x[3] == "warmup" for x in expected[0])
    assert status.get("running", 0) == 0


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(campaign, tmp_path):
    db = tmp_path / "c.sqlite"
    p = subprocess.Popen(FWDBENCH + ["run", str(campaign), "--out", str(db), "--no-report", "-q"],
                         env=dict(os.environ, FWDBENCH_SIM_DELAY="0.1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_trials(db, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130
    assert f"fwdbench run --resume {db}" in err
    r = run(["run", "--resume", str(db), "--no-report"])
    assert r.returncode == 0
    rows, _, status = trial_set(db)
    assert status.get("running", 0) == 0 and rows


def test_resume_of_a_finished_run_runs_nothing(campaign, tmp_path):
    db = tmp_path / "f.sqlite"
    assert run(["run", str(campaign), "--out", str(db), "--no-report"]).returncode == 0
    before = trial_set(db)
    r = run(["run", "--resume", str(db), "--no-report"])
    assert r.returncode == 0
    assert "trials run: 0" in r.stdout
    assert trial_set(db) == before


def test_existing_results_file_is_not_overwritten(campaign, tmp_path):
    db = tmp_path / "e.sqlite"
    assert run(["run", str(campaign), "--out", str(db), "--no-report"]).returncode == 0
    r = run(["run", str(campaign), "--out", str(db), "--no-report"])
    assert r.returncode != 0 and "--resume" in r.stderr


def test_latency_trials_are_stored_as_latency_kind(tmp_path):
    p = tmp_path / "lat.toml"
    p.write_text(CAMPAIGN.replace('relative_width = 0.01',
                                  'relative_width = 0.01\n'
                                  'latency = { fractions = [0.0, 0.5, 0.9], trial_duration = "1s" }'))
    db = tmp_path / "lat.sqlite"
    r = run(["run", str(p), "--out", str(db), "--no-report"])
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    rows = con.execute("SELECT repetition, intended_load_pps, reason FROM trial"
                       " WHERE kind = 'latency' ORDER BY scenario_id, repetition, seq").fetchall()
    pdr = dict(((sid, rep), v) for sid, rep, v in con.execute(
        "SELECT scenario_id, repetition, value_pps FROM result WHERE goal = 'pdr@0.005'"))
    con.close()
    assert len(rows) == 2 * 2 * 3            # scenarios x repetitions x fractions
    assert [x[1] for x in rows[:3]][0] == 0.0 and "latency at 0% of PDR" in rows[0][2]
    assert any(abs(x[1] - 0.9 * v) < 1e-6 for x in rows for v in pdr.values())


INTENT_CAMPAIGN = """
[campaign]
name = "intent"
[testbed]
type = "sim"
max_load = "2Mpps"
[trial]
duration = "1s"
[[dut]]
name = "d"
type = "sim"
params = { model = "ideal", capacity_pps = 1000000, seed = 1 }
[[profile]]
name = "p"
[search]
type = "{type}"
latency = { fractions = [0.0, 0.5], trial_duration = "1s" }
"""


@pytest.mark.parametrize("search", ["binary", "mlr"])
def test_every_trial_row_says_what_it_is(tmp_path, search):
    """The search's intent reaches the store as columns: the kind (a latency trial is
    'latency', MLRsearch's ignored warm-up 'warmup'), the step, the loss goal and the
    latency fraction; result rows carry their goal's loss ratio."""
    p = tmp_path / "c.toml"
    p.write_text(INTENT_CAMPAIGN.replace("{type}", search))
    db = tmp_path / "c.sqlite"
    r = run(["run", str(p), "--out", str(db), "--no-report", "-q"])
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    rows = con.execute("SELECT repetition, kind, step, goal_loss_ratio, latency_fraction,"
                       " latency_reference, reason FROM trial WHERE status='done'"
                       " ORDER BY repetition, seq").fetchall()
    goals = con.execute("SELECT goal, loss_ratio FROM result ORDER BY goal").fetchall()
    con.close()
    assert rows[0][:3] == (-1, "warmup", "warmup")                  # after DUT setup
    lat = [x for x in rows if x[1] == "latency"]
    assert [(x[2], x[4], x[5]) for x in lat] == [("latency", 0.0, "PDR"), ("latency", 0.5, "PDR")]
    assert all(x[6].startswith("latency at") for x in lat)
    search_rows = [x for x in rows if x[0] == 0 and x[1] == "search"]
    assert search_rows and all(x[2] for x in search_rows)
    assert {x[3] for x in search_rows if x[2] in ("first", "bisect", "hint", "target")} \
        <= {0.0, 0.005}
    if search == "mlr":                     # the library's warm-up: kept, marked, ignored
        assert [x[1:3] for x in rows if x[0] == 0][0] == ("warmup", "warmup")
    assert goals == [("ndr", 0.0), ("pdr@0.005", 0.005), ("search", None)]
