"""EnergySession: meter selection, baseline subtraction, the meters dict; settings."""
from __future__ import annotations

import json
import time

import pytest

from fwdbench.errors import CampaignError
from fwdbench.meters import (EnergySession, EnergySettings, Meter, MeterError, MeterReading,
                             parse_energy_settings)
from fwdbench.store import trial_from_dict
from fwdbench.trial import StreamResult, TrialResult

from test_meters_cpu import stat_text


class FakeMeter(Meter):
    """A measuring meter of constant power; optionally failing."""
    measured = True

    def __init__(self, name: str, watts: float | None, ok: bool = True, fail_stop: bool = False):
        self.name = name                  # type: ignore[misc]
        self.watts, self.ok, self.fail_stop = watts, ok, fail_stop
        self._t0 = 0.0

    def available(self):
        return (True, "fake") if self.ok else (False, f"{self.name} is switched off")

    def start(self):
        self._t0 = time.monotonic()

    def stop(self):
        if self.fail_stop:
            raise MeterError(f"{self.name}: BMC stopped answering")
        dur = time.monotonic() - self._t0
        j = None if self.watts is None else self.watts * dur
        return MeterReading(self.name, True, dur, j, self.watts, samples=[(0.0, self.watts or 0)])


@pytest.fixture
def proc(tmp_path):
    p = tmp_path / "proc"
    p.mkdir()
    (p / "stat").write_text(stat_text({0: (0,) * 10, 1: (0,) * 10}))
    (p / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2000.000\n\n"
                               "processor\t: 1\ncpu MHz\t\t: 2000.000\n")
    return p


def advance(proc, busy1: int, idle1: int, busy0: int = 0, idle0: int = 100):
    """Add ticks: CPU 1 (DUT) busy1 in softirq + idle1; CPU 0 (generator) busy0 user."""
    (proc / "stat").write_text(stat_text({
        0: (busy0, 0, 0, idle0, 0, 0, 0, 0, 0, 0),
        1: (0, 0, 0, idle1, 0, 0, busy1, 0, 0, 0)}))


def test_auto_on_this_kind_of_host_falls_back_to_the_model(proc, tmp_path):
    s = EnergySettings.model_validate({"rapl": {"root": str(tmp_path / "no-powercap")},
                                       "ipmi": {"ipmitool": str(tmp_path / "no-ipmitool")}})
    sess = EnergySession(s, dut_cpus=[1], gen_cpus=[0], proc_root=proc)
    why = sess.check()
    assert set(why) == {"rapl", "ipmi"}
    assert [m.name for m in sess.meters] == ["cpu-model"]
    sess.start()
    advance(proc, busy1=100, idle1=100, busy0=50, idle0=150)       # DUT CPU 50 % busy
    d = sess.stop(packets=2_000_000)
    e = d["energy"]
    assert e["source"] == "cpu-model" and e["measured"] is False and e["label"] == "modelled"
    assert e["mean_watts"] == pytest.approx(10.0 * 0.5)          # default 10 W/busy core
    assert e["joules"] == pytest.approx(5.0 * e["duration_s"], rel=1e-4)
    assert e["packets_per_joule"] == pytest.approx(2e6 / e["joules"], rel=1e-4)
    assert e["joules_per_mpkt"] == pytest.approx(e["joules"] / 2.0, rel=1e-4)
    assert e["baseline_subtracted"] is False and e["baseline_watts"] is None
    assert "DUT CPUs 1" in e["scope"]
    c = d["cpu"]
    assert c["dut"]["busy_cores"] == pytest.approx(0.5)
    assert c["dut"]["softirq_share"] == pytest.approx(1.0)
    assert c["gen"]["utilisation"] == pytest.approx(0.25)
    assert c["cycles_per_packet_basis"]["nominal_hz"] == 2e9


def test_primary_is_first_measuring_meter_and_baseline_is_subtracted(proc):
    s = EnergySettings.model_validate({"baseline": True, "baseline_s": 0.05})
    meters = [FakeMeter("ipmi", 200.0), FakeMeter("rapl", 80.0)]
    sess = EnergySession(s, [1], [0], meters=meters, proc_root=proc)
    # the idle baseline: 150 W and 30 W
    meters[0].watts, meters[1].watts = 150.0, 30.0
    b = sess.baseline()
    assert b["watts"] == {"ipmi": 150.0, "rapl": 30.0}
    meters[0].watts, meters[1].watts = 200.0, 80.0
    sess.start()
    time.sleep(0.05)
    d = sess.stop(packets=1_000_000)
    e = d["energy"]
    dur = e["duration_s"]
    assert e["source"] == "ipmi" and e["measured"] is True and e["label"] == "measured"
    assert e["baseline_subtracted"] is True and e["baseline_watts"] == 150.0
    assert e["joules_gross"] == pytest.approx(200.0 * dur, rel=1e-4)
    assert e["joules"] == pytest.approx(50.0 * dur, rel=1e-4)
    assert e["mean_watts"] == pytest.approx(50.0, rel=1e-4)
    assert e["joules_per_mpkt"] == pytest.approx(e["joules"], rel=1e-4)
    assert any("150.00 W subtracted" in n for n in e["notes"])
    assert any("generator" in n for n in e["notes"])          # host-wide meter, shared host
    # each meter nets out its own baseline over its own metered time (the two
    # fake meters are started and stopped a few microseconds apart)
    rapl = e["meters"]["rapl"]
    assert rapl["baseline_watts"] == 30.0
    assert rapl["joules_net"] == pytest.approx(50.0 * rapl["duration_s"], rel=1e-6)


def test_energy_of_the_measured_window_only(proc):
    """A 0.2 s metered run whose measured part is 0.1 s: joules and per-packet
    figures cover the 0.1 s the packets were counted in, at the run's mean power."""
    meters = [FakeMeter("rapl", 80.0)]
    sess = EnergySession(EnergySettings(), [1], [0], meters=meters, proc_root=proc)
    sess.start()
    time.sleep(0.2)
    e = sess.stop(packets=1_000_000, window_s=0.1)["energy"]
    assert e["metered_s"] >= 0.2 and e["duration_s"] == 0.1
    assert e["mean_watts"] == pytest.approx(80.0, rel=1e-4)
    assert e["joules"] == pytest.approx(8.0, rel=1e-4)
    assert e["packets_per_joule"] == pytest.approx(1_000_000 / 8.0, rel=1e-4)
    assert any("measured 0.1 s" in n for n in e["notes"])
    # a window longer than what was metered changes nothing
    sess.start()
    time.sleep(0.05)
    e = sess.stop(packets=10, window_s=5.0)["energy"]
    assert e["duration_s"] == e["metered_s"]


def test_failing_meter_falls_back_and_warns(proc):
    meters = [FakeMeter("ipmi", 200.0, fail_stop=True), FakeMeter("rapl", 80.0)]
    sess = EnergySession(None, [1], meters=meters, proc_root=proc)
    sess.start()
    d = sess.stop()
    assert d["energy"]["source"] == "rapl"
    assert d["energy"]["meters"]["ipmi"]["error"].endswith("BMC stopped answering")
    assert any("BMC stopped answering" in w for w in d["warnings"])
    assert d["energy"]["packets_per_joule"] is None          # no packets given


def test_explicit_meter_unavailable_fails_early(proc, tmp_path):
    s = EnergySettings.model_validate({"meters": ["rapl", "cpu-model"],
                                       "rapl": {"root": str(tmp_path / "nope")}})
    sess = EnergySession(s, [1], proc_root=proc)
    with pytest.raises(MeterError, match="meter 'rapl' is not available: no .*nope"):
        sess.check()


def test_negative_net_energy_has_no_per_packet_figures(proc):
    s = EnergySettings(baseline=True, baseline_s=0.05)
    m = FakeMeter("rapl", 100.0)
    sess = EnergySession(s, [1], meters=[m], proc_root=proc)
    sess.baseline()
    m.watts = 90.0
    sess.start()
    d = sess.stop(packets=10)
    assert d["energy"]["joules"] < 0
    assert d["energy"]["packets_per_joule"] is None and d["energy"]["joules_per_mpkt"] is None
    assert any("not above 0" in n for n in d["energy"]["notes"])


def test_dict_round_trips_through_json_and_the_trial(proc):
    sess = EnergySession({"meters": ["cpu-model"]}, [1], [0], proc_root=proc)
    sess.start(pids=[])
    advance(proc, busy1=200, idle1=0)
    d = sess.stop(packets=123)
    text = json.dumps(d)                         # JSON-serialisable, no NaN
    assert "NaN" not in text
    assert json.loads(text) == d
    trial = TrialResult(intended_load_pps=1e5, duration_s=1.0, meters=d, streams=[
        StreamResult(0, "tg0", "tg1", 1e5, 100_000, 100_000, 6_000_000, 99_000, 5_940_000)])
    back = trial_from_dict(json.loads(json.dumps(trial.to_dict())))
    assert back.meters == d
    assert back.meters["energy"]["source"] == "cpu-model"
    assert back.meters["schema"] == 1


def test_describe_lists_meters_and_why_not(proc, tmp_path):
    s = EnergySettings.model_validate({"rapl": {"root": str(tmp_path / "x")}})
    sess = EnergySession(s, [1], proc_root=proc)
    desc = sess.describe()
    assert desc["primary_order"][-1] == "cpu-model"
    assert "rapl" in desc["unavailable"]
    json.dumps(desc)


# ---- settings -------------------------------------------------------------

def test_settings_defaults_and_aliases():
    s = EnergySettings()
    assert s.meters == "auto" and s.selected() is None and s.baseline is False
    assert s.cpu_model.watts_per_busy_core == 10.0 and s.cpu_model.idle_watts == 0.0
    s = EnergySettings.model_validate({"meters": "rapl", "cpu-model": {"idle_watts": 55}})
    assert s.selected() == ["rapl"] and s.cpu_model.idle_watts == 55


@pytest.mark.parametrize("data, path, text", [
    ({"meters": ["rapl", "wattmeter"]}, "energy.meters", "'wattmeter'"),
    ({"meters": "sometimes"}, "energy.meters", "'sometimes'"),
    ({"meterz": "auto"}, "energy.meterz", "unknown key; did you mean 'meters'?"),
    ({"cpu-model": {"watts_per_busy_core": -3}}, "energy.cpu-model.watts_per_busy_core", "-3"),
    ({"rapl": {"domains": ["pkg"]}}, "energy.rapl.domains", "'pkg'"),
    ({"ipmi": {"interface": "lanplus", "host": "bmc1"}}, "energy.ipmi", "user, password_file"),
    ({"ipmi": {"host": "bmc1"}}, "energy.ipmi", "'bmc1'"),
    ({"command": {"argv": "pdu-read --outlet 3"}}, "energy.command.argv", "'pdu-read --outlet 3'"),
    ({"command": {"argv": ["x"], "mode": "before-after"}}, "energy.command", "mode = 'sample'"),
    ({"meters": ["command"]}, "energy", "[energy.command]"),
    ({"baseline_s": 0}, "energy.baseline_s", "0"),
])
def test_settings_errors_name_the_field_and_value(data, path, text):
    with pytest.raises(CampaignError) as ei:
        parse_energy_settings(data)
    msg = str(ei.value)
    assert msg.startswith(path), msg
    assert text in msg, msg


def test_abort_stops_sampling_threads(proc):
    import threading
    s = EnergySettings.model_validate({"cpu-model": {"sample_interval_s": 0.02}})
    sess = EnergySession(s, [1], proc_root=proc)
    sess.start()
    assert any(t.name == "fwdbench-cpu-model" for t in threading.enumerate())
    sess.abort()
    assert not any(t.name == "fwdbench-cpu-model" for t in threading.enumerate())
    sess.abort()                                  # twice is fine
    sess.start()                                  # and the session is reusable
    assert sess.stop()["energy"]["source"] == "cpu-model"


def test_idle_dut_cpus_while_forwarding_is_flagged(proc):
    sess = EnergySession({"meters": ["cpu-model"]}, [1], [0], proc_root=proc)
    sess.start()
    advance(proc, busy1=0, idle1=100, busy0=100, idle0=0)    # all work on the generator CPU
    time.sleep(0.02)
    d = sess.stop(packets=1_000_000)
    assert any("RPS" in w for w in d["warnings"])
    assert any("RPS" in n for n in d["cpu"]["notes"])
    sess.start()
    advance(proc, busy1=100, idle1=100, busy0=100, idle0=0)
    assert not any("RPS" in w for w in sess.stop(packets=1_000_000)["warnings"])


def test_auto_with_a_broken_configured_command_fails_early(proc, tmp_path):
    s = EnergySettings.model_validate({"command": {"argv": [str(tmp_path / "no-such-pdu")]}})
    with pytest.raises(MeterError, match="meter 'command' is not available"):
        EnergySession(s, [1], proc_root=proc).check()
