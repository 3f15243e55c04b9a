"""ipmi meter: parse() on recorded ipmitool outputs, integration with a fake ipmitool."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fwdbench.meters import IpmiMeter, MeterError, integrate_watts, parse_ipmi

DATA = Path(__file__).parent / "data" / "ipmi"
EXPECTED = json.loads((DATA / "expected.json").read_text())


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_parse_fixture(fname):
    text = (DATA / fname).read_text()
    want = EXPECTED[fname]
    if "error" in want:
        with pytest.raises(MeterError) as ei:
            parse_ipmi(text)
        assert want["error"] in str(ei.value)
        return
    r = parse_ipmi(text)
    for key, value in want.items():
        assert getattr(r, key) == value, key


def test_every_fixture_is_covered():
    files = {p.name for p in DATA.glob("*.txt")}
    assert files == set(EXPECTED)
    assert sum("error" in v for v in EXPECTED.values()) >= 3
    assert sum("error" not in v for v in EXPECTED.values()) >= 4


def test_parse_garbage_names_first_line():
    with pytest.raises(MeterError, match="no power reading: hello"):
        parse_ipmi("\n  hello\nworld\n")


def reply(watts: int, period: int = 1, state: str = "activated") -> str:
    return ("\n    Instantaneous power reading:              %8d Watts\n"
            "    Minimum during sampling period:           %8d Watts\n"
            "    Maximum during sampling period:           %8d Watts\n"
            "    Average power reading over sample period: %8d Watts\n"
            "    IPMI timestamp:                           Tue Mar 12 09:41:27 2019\n"
            "    Sampling period:                          %08u Seconds.\n"
            "    Power reading state is:                   %s\n\n\n"
            % (watts, watts, watts, watts, period, state))


class FakeIpmitool:
    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout):
        self.calls.append(list(argv))
        out = self.outputs.pop(0) if len(self.outputs) > 1 else self.outputs[0]
        return (1 if "failed" in out or "Error" in out else 0), out


def test_integrate_watts_trapezoid_and_holds():
    # 100 W held to t=1, ramp to 200 W at t=3, held to the end at t=4
    assert integrate_watts([(1.0, 100.0), (3.0, 200.0)], 4.0) == pytest.approx(
        100 * 1 + 150 * 2 + 200 * 1)
    assert integrate_watts([(0.5, 80.0)], 2.0) == pytest.approx(160.0)
    assert integrate_watts([], 2.0) is None
    # samples after the interval are clipped to its end
    assert integrate_watts([(0.0, 10.0), (5.0, 10.0)], 2.0) == pytest.approx(20.0)


def test_meter_samples_and_integrates(tmp_path):
    fake = FakeIpmitool([reply(238)])
    m = IpmiMeter(runner=fake, sample_interval_s=0.05, devices=(str(tmp_path),), min_trial_s=10)
    ok, why = m.available()
    assert ok and "238 W" in why
    m.start()
    time.sleep(0.4)
    r = m.stop()
    assert r.measured and r.source == "ipmi" and r.sample_unit == "W"
    assert len(r.samples) >= 4
    assert r.joules == pytest.approx(238 * r.duration_s, rel=1e-6)
    assert r.mean_watts == pytest.approx(238)
    assert any("shorter than 10 s" in n for n in r.notes)        # short-trial warning
    assert r.extra["bmc_sampling_period_s"] == 1.0
    assert fake.calls[0] == ["ipmitool", "-I", "open", "dcmi", "power", "reading"]


def test_meter_changing_power():
    fake = FakeIpmitool([reply(100)] * 4 + [reply(300)])
    m = IpmiMeter(runner=fake, sample_interval_s=0.05, min_trial_s=0)
    m.start()
    time.sleep(0.5)
    r = m.stop()
    assert r.mean_watts is not None and 100 < r.mean_watts < 300
    assert not any("shorter than" in n for n in r.notes)


def test_lanplus_argv_uses_password_file_never_password(tmp_path):
    pw = tmp_path / "bmc.pass"
    pw.write_text("s3cret\n")
    fake = FakeIpmitool([reply(187, period=5)])
    m = IpmiMeter(interface="lanplus", host="10.0.0.5", user="admin", password_file=str(pw),
                  runner=fake)
    assert m.available()[0]
    argv = fake.calls[0]
    assert argv[:9] == ["ipmitool", "-I", "lanplus", "-H", "10.0.0.5", "-U", "admin",
                        "-f", str(pw)]
    assert "s3cret" not in " ".join(argv) and "-P" not in argv
    assert "s3cret" not in json.dumps(m.describe())
    assert m.bmc_period_s == 5.0


def test_error_reply_makes_meter_unavailable_with_reason():
    fake = FakeIpmitool([(DATA / "error_invalid_command.txt").read_text()])
    m = IpmiMeter(runner=fake, devices=("/",))
    ok, why = m.available()
    assert not ok and "Invalid command (c1)" in why and "exit status 1" in why


def test_deactivated_zero_reading_is_an_error():
    fake = FakeIpmitool([(DATA / "lenovo_xcc_deactivated.txt").read_text()])
    m = IpmiMeter(runner=fake, devices=("/",))
    ok, why = m.available()
    assert not ok and "deactivated" in why
    m.start()
    time.sleep(0.05)
    r = m.stop()
    assert r.joules is None and any("no valid power reading" in n for n in r.notes)
    assert any("deactivated" in n for n in r.notes)


def test_no_device_reason(tmp_path):
    m = IpmiMeter(runner=FakeIpmitool([reply(1)]), devices=(str(tmp_path / "ipmi0"),))
    ok, why = m.available()
    assert not ok and "/dev/ipmi0" in why and "modprobe" in why


def test_lanplus_needs_credentials():
    with pytest.raises(ValueError, match="host, user and password_file"):
        IpmiMeter(interface="lanplus", host="h")


def test_bmc_averaging_period_longer_than_trial_is_noted():
    fake = FakeIpmitool([reply(187, period=5)])
    m = IpmiMeter(runner=fake, sample_interval_s=0.05, min_trial_s=0.1)
    m.start()
    time.sleep(0.3)
    r = m.stop()
    assert any("averaging periods" in n for n in r.notes)
