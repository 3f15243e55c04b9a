"""Readers of PASTRAMI measurement files and CSV, including bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import goal_rows, intent

from fwdbench.analysis import (
    InputFormatError,
    experiment_from_trials,
    read_csv,
    read_experiment,
    read_pastrami,
    read_store,
)
from fwdbench.errors import FwdbenchError
from fwdbench.sim import SimDevice

DATA = Path(__file__).parent / "data"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_pastrami_fixture():
    e = read_pastrami(DATA / "pastrami_ideal.txt")
    assert e.loads_pps.tolist() == [x * 1e5 for x in range(1, 16)]
    assert all(t.size == 5 for t in e.tx)
    assert e.tx[0][0] == 1_000_000 and e.rx[-1][0] == 10_000_000
    assert e.trial_count == 75 and not e.warnings and not e.flags
    c = e.curve()
    assert c.plr_mean[:10] == pytest.approx(0.0) and c.plr_mean[-1] == pytest.approx(1 - 1 / 1.5)


def test_read_csv_fixture_same_as_pastrami_reader_for_same_data(tmp_path):
    e = read_csv(DATA / "realistic.csv")
    assert e.loads_pps.size == 15 and all(t.size == 8 for t in e.tx)
    # the same counts written as PASTRAMI lines read back identically
    lines = []
    for load, tx, rx in zip(e.loads_pps, e.tx, e.rx):
        lines.append(json.dumps([[float(load), 0]] + [[int(a), int(b), 0] for a, b in zip(tx, rx)]))
    p = write(tmp_path, "same.txt", "\n".join(lines) + "\n")
    e2 = read_pastrami(p)
    assert np.array_equal(e.loads_pps, e2.loads_pps)
    assert all(np.array_equal(a, b) for a, b in zip(e.rx, e2.rx))


@pytest.mark.parametrize("text,where,what", [
    ("[[100, 0], [10, 10, 0]]\nnot json\n", ":2:", "not valid JSON"),
    ("[[100, 0]]\n", ":1:", "at least one run"),
    ('{"rate": 1}\n', ":1:", "expected a JSON array"),
    ("[[100, 0], [10, 10, 0]]\n[[\"fast\", 0], [10, 10, 0]]\n", ":2:", "offered load"),
    ("[[100, 0], [10, 10, 0]]\n\n[[200, 0], [10]]\n", ":3:", "run 1 as [tx, rx, rx_discards]"),
    ("[[100, 0], [10, 10.5, 0]]\n", ":1:", "run 1 rx as a whole number"),
    ("[[100, 0], [10, -1, 0]]\n", ":1:", "run 1 rx >= 0"),
    ("[[-5, 0], [10, 10, 0]]\n", ":1:", "positive offered load"),
    ("[[100, 0], [0, 0, 0]]\n", ":1:", "tx 0"),
    ("", "", "no data"),
])
def test_pastrami_errors_name_file_line_and_expectation(tmp_path, text, where, what):
    p = write(tmp_path, "bad.txt", text)
    with pytest.raises(InputFormatError) as ei:
        read_pastrami(p)
    msg = str(ei.value)
    assert msg.startswith(str(p) + where)
    assert what in msg
    assert isinstance(ei.value, FwdbenchError)


@pytest.mark.parametrize("text,where,what", [
    ("", ":1:", "header"),
    ("load,rep,tx,rx\n1,0,1,1\n", ":1:", "missing repetition"),
    ("load,repetition,tx,rx\n100,0,10,10\n200,0,ten,10\n", ":3:", "column tx as a number"),
    ("load,repetition,tx,rx\n100,0,10\n", ":2:", "expected 4 fields"),
    ("load,repetition,tx,rx\n100,0,0,0\n", ":2:", "tx is 0"),
    ("load,repetition,tx,rx\n", "", "no data"),
])
def test_csv_errors(tmp_path, text, where, what):
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(InputFormatError) as ei:
        read_csv(p)
    assert str(ei.value).startswith(str(p) + where)
    assert what in str(ei.value)


def test_unsorted_loads_sorted_with_warning_and_duplicates_merged(tmp_path):
    p = write(tmp_path, "unsorted.txt",
              "[[300, 0], [30, 20, 0]]\n[[100, 0], [10, 10, 0]]\n[[200, 0], [20, 20, 0]]\n"
              "[[100, 0], [10, 9, 0]]\n")
    e = read_pastrami(p)
    assert e.loads_pps.tolist() == [100.0, 200.0, 300.0]
    assert e.rx[0].tolist() == [10, 9]
    assert any("not in ascending order" in w for w in e.warnings)
    assert any("lines 2, 4" in w and "merged" in w for w in e.warnings)


def test_rx_above_tx_kept_but_flagged(tmp_path):
    p = write(tmp_path, "dup.csv", "load,repetition,tx,rx,extra\n100,0,10,12,x\n100,1,10,10,y\n")
    e = read_csv(p)
    assert e.rx[0].tolist() == [12, 10]
    assert len(e.flags) == 1 and ":2:" in e.flags[0] and "rx 12 > tx 10" in e.flags[0]
    assert e.curve().plr_mean[0] == pytest.approx(-0.1)


def test_csv_duplicate_repetition_warns(tmp_path):
    p = write(tmp_path, "d.csv", "load,repetition,tx,rx\n100,0,10,10\n100,0,10,9\n")
    e = read_csv(p)
    assert e.rx[0].size == 2 and any("appears twice" in w for w in e.warnings)


def test_dispatch_missing_file_and_store_hook(tmp_path):
    assert read_experiment(DATA / "realistic.csv")[0].loads_pps.size == 15
    assert read_experiment(DATA / "pastrami_trashing.txt")[0].loads_pps.size == 15
    with pytest.raises(InputFormatError, match="cannot read"):
        read_experiment(tmp_path / "missing.txt")
    with pytest.raises(InputFormatError, match="no such results file"):
        read_store(tmp_path / "results.db")
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(InputFormatError, match="not a fwdbench results store"):
        read_experiment(tmp_path / "junk.sqlite")


def test_store_experiments_one_per_scenario_search_trials_only(tmp_path):
    from fwdbench.store import Store
    st = Store(tmp_path / "r.sqlite")
    cid = st.create_campaign(name="c", source_path="c.toml", config_text="", config={},
                             host={}, tool_version="0")
    d = SimDevice("ideal", 1e6)
    for idx, name in enumerate(("a", "b")):
        sid = st.add_scenario(cid, idx, name, name, "sim", {}, {}, {}, {}, 2e6)
        for rep in range(2):
            for seq, load in enumerate((2e6, 5e5)):       # run order is not load order
                tid = st.begin_trial(sid, rep, seq, intent("search", ""), 1.0, load)
                st.finish_trial(tid, d.measure(1.0, load))
        tid = st.begin_trial(sid, -1, -1, intent("warmup", ""), 1.0, 9e5)
        st.finish_trial(tid, d.measure(1.0, 9e5))
    st.close()
    with pytest.raises(InputFormatError, match="no finished trials"):
        Store(tmp_path / "empty.sqlite").close()
        read_store(tmp_path / "empty.sqlite")
    exps = read_experiment(tmp_path / "r.sqlite")
    assert [e.name for e in exps] == ["r.sqlite#a", "r.sqlite#b"]
    assert exps[0].loads_pps.tolist() == [5e5, 2e6]          # warm-up at 9e5 left out
    assert [a.size for a in exps[0].tx] == [2, 2] and not exps[0].warnings


def test_experiment_from_trials():
    d = SimDevice("ideal", 1e6)
    trials = [d.measure(1.0, x) for x in (5e5, 5e5, 2e6, 1.5e6)]
    e = experiment_from_trials("scenario-1", trials)
    assert e.loads_pps.tolist() == [5e5, 1.5e6, 2e6]
    assert e.tx[0].tolist() == [500_000, 500_000]
    assert e.curve().plr_mean[-1] == pytest.approx(0.5)
