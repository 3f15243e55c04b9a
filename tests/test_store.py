"""Store round trip, migrations, and the trial status life cycle."""
import sqlite3

import pytest

from fwdbench.store import SCHEMA_VERSION, Store, StoreError
from helpers import goal_rows, intent
from helpers import store_campaign as _campaign
from helpers import store_result as _result


def test_round_trip_keeps_every_field(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    sid = _campaign(st)
    tid = st.begin_trial(sid, 0, 0, intent("search", "sweep load 1 of 1"), 1.0, 1000.0)
    st.finish_trial(tid, _result())
    st.save_results(sid, 0, goal_rows({"ndr": (900.0, {"trials": 3}), "pdr@0.005": (None, {})}))
    st.close()

    st = Store(tmp_path / "r.sqlite")
    [row] = st.done_trials(sid, 0)
    assert row.result == _result()
    assert row.result.loss_ratio == pytest.approx(0.001)
    assert st.repetition_done(sid, 0) and not st.repetition_done(sid, 1)
    goals = {r["goal"]: r for r in st.results()}
    assert goals["ndr"]["value_pps"] == 900.0 and goals["ndr"]["detail"] == {"trials": 3}
    assert goals["pdr@0.005"]["value_pps"] is None
    assert st.campaign()["config"] == {"a": 1}
    assert st.scenarios()[0]["dut_params"] == {"m": 1}


def test_running_trials_become_interrupted_and_never_count(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    sid = _campaign(st)
    st.begin_trial(sid, 0, 0, intent("search", "cut off"), 1.0, 1000.0)
    assert st.done_trials(sid, 0) == []
    assert st.mark_interrupted() == 1
    assert st.trial_counts() == {"interrupted": 1}
    assert st.mark_interrupted() == 0


def test_second_campaign_in_one_file_is_refused(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    _campaign(st)
    with pytest.raises(StoreError, match="--resume"):
        _campaign(st)


def test_schema_version_and_newer_file_refused(tmp_path):
    p = tmp_path / "r.sqlite"
    st = Store(p)
    assert st.schema_version == SCHEMA_VERSION
    st.close()
    db = sqlite3.connect(p)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store(p)


def test_wal_mode(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
