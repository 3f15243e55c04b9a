"""Store round trip, migrations, and the trial status life cycle."""
import sqlite3

import pytest

from fwdbench.store import SCHEMA_VERSION, Store, StoreError
from fwdbench.trial import LatencySummary, StreamResult, TrialResult


def _result(load=1000.0, rx=999):
    lat = LatencySummary(rx, 1000, 1500.5, 1400, 1900, 2500, 4000, 9000, 12.5, "HISTFAAA")
    return TrialResult(load, 1.0, [StreamResult(0, "tg0", "tg1", load, 1000, 1000, 60000, rx,
                                                rx * 60, reordered=1, duplicated=0,
                                                achieved_tx_pps=load, latency=lat)],
                       backend="xdp", warmup_s=0.5, raw={"ok": True},
                       dut_counters={"dut0": {"rx_packets": 1000}},
                       meters={"energy": {"joules": 1.5, "measured": False}})


def _campaign(st):
    cid = st.create_campaign(name="c", source_path="c.toml", config_text="[campaign]\n",
                             config={"a": 1}, host={"kernel": "6"}, tool_version="0.1")
    return st.add_scenario(cid, 0, "s0", "d", "sim", {"m": 1}, {"l3": "ipv4"},
                           {"type": "sweep"}, {"dut": "d"}, 1e6)


def test_round_trip_keeps_every_field(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    sid = _campaign(st)
    tid = st.begin_trial(sid, 0, 0, "search", "sweep load 1 of 1", 1000.0, 1.0)
    st.finish_trial(tid, _result())
    st.save_results(sid, 0, {"ndr": (900.0, {"trials": 3}), "pdr@0.005": (None, {})})
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
    st.begin_trial(sid, 0, 0, "search", "cut off", 1000.0, 1.0)
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
