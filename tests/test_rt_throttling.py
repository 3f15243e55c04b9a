"""RT throttling lift/restore bookkeeping (lab/rt_throttling.py), on a stand-in file."""
import pytest

from fwdbench.lab import rt_throttling as rt


@pytest.fixture
def knob(tmp_path, monkeypatch):
    f = tmp_path / "sched_rt_runtime_us"
    f.write_text("950000\n")
    monkeypatch.setattr(rt, "RT_RUNTIME", str(f))
    monkeypatch.setattr(rt, "kernel_has_fair_server", lambda release=None: True)
    return f


def test_lift_saves_before_writing_and_restore_puts_it_back(knob):
    seen = []
    state = {"run_id": "a"}
    # the value on disk at save time is still the old one: a crash now is restorable
    what = rt.lift(state, [], lambda st: seen.append((dict(st), knob.read_text().strip())))
    assert seen == [({"run_id": "a", rt.KEY: 950000}, "950000")]
    assert knob.read_text().strip() == "-1" and "lifted" in what
    rt.restore(state, [])
    assert knob.read_text().strip() == "950000"


def test_two_labs_share_the_first_value_and_the_last_one_restores(knob):
    a, b = {"run_id": "a"}, {"run_id": "b"}
    rt.lift(a, [], lambda st: None)
    rt.lift(b, [a], lambda st: None)            # finds -1 on disk, takes a's saved value
    assert b[rt.KEY] == 950000
    rt.restore(a, [b])                          # b still relies on the lift
    assert knob.read_text().strip() == "-1"
    rt.restore(b, [])
    assert knob.read_text().strip() == "950000"


def test_already_unlimited_and_old_kernels_are_left_alone(knob, monkeypatch):
    knob.write_text("-1\n")
    st = {}
    assert "already unlimited" in rt.lift(st, [], lambda s: None) and rt.KEY not in st
    rt.restore(st, [])
    assert knob.read_text().strip() == "-1"
    knob.write_text("950000\n")
    monkeypatch.setattr(rt, "kernel_has_fair_server", lambda release=None: False)
    assert "no fair server" in rt.lift(st, [], lambda s: None)
    assert knob.read_text().strip() == "950000" and rt.KEY not in st


@pytest.mark.parametrize("release, has", [("6.18.44-fc", True), ("6.12.0", True),
                                          ("6.11.9", False), ("5.10.0-28-amd64", False),
                                          ("7.0.1", True)])
def test_fair_server_kernel_versions(release, has):
    assert rt.kernel_has_fair_server(release) is has
