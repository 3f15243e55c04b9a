"""command meter with small scripts that print watts or a joule counter."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from fwdbench.meters import CommandMeter, MeterError, parse_value

WATTS_SCRIPT = """\
import sys
print("PDU outlet 3")          # chatter before the value is fine
print(sys.argv[1] + " W")
"""

COUNTER_SCRIPT = """\
import sys
print(open(sys.argv[1]).read().strip())
"""


@pytest.fixture
def scripts(tmp_path: Path):
    w = tmp_path / "watts.py"
    w.write_text(WATTS_SCRIPT)
    c = tmp_path / "counter.py"
    c.write_text(COUNTER_SCRIPT)
    counter = tmp_path / "energy"
    counter.write_text("1000.0 J\n")
    return w, c, counter


def test_parse_value_units():
    assert parse_value("231.5\n", "W") == 231.5
    assert parse_value("chatter\n 231.5 W \n\n", "W") == 231.5
    assert parse_value("1.2 kW", "W") == 1200.0
    assert parse_value("500mW", "W") == pytest.approx(0.5)
    assert parse_value("0.5 Wh", "J") == 1800.0
    assert parse_value("0.001 kWh", "J") == pytest.approx(3600.0)
    assert parse_value("2.5e3 J", "J") == 2500.0
    with pytest.raises(MeterError, match="set unit = 'J'"):
        parse_value("12 kWh", "W")
    with pytest.raises(MeterError, match="cannot read a number"):
        parse_value("power: n/a", "W")
    with pytest.raises(MeterError, match="printed nothing"):
        parse_value("  \n", "J")


def test_sampled_watts(scripts):
    w, _, _ = scripts
    m = CommandMeter([sys.executable, str(w), "42.5"], unit="W", sample_interval_s=0.1)
    ok, why = m.available()
    assert ok and "42.5 W" in why
    m.start()
    time.sleep(0.6)
    r = m.stop()
    assert r.measured and r.source == "command" and r.sample_unit == "W"
    assert len(r.samples) >= 3
    assert all(v == 42.5 for _, v in r.samples)
    assert r.joules == pytest.approx(42.5 * r.duration_s, rel=1e-6)


def test_joule_counter_before_after(scripts):
    _, c, counter = scripts
    m = CommandMeter([sys.executable, str(c), str(counter)], unit="J", mode="before-after")
    m.start()
    counter.write_text("1123.25 J\n")
    r = m.stop()
    assert r.joules == pytest.approx(123.25)
    assert r.samples[0][1] == 1000.0 and r.samples[-1][1] == 1123.25
    assert r.mean_watts == pytest.approx(123.25 / r.duration_s)


def test_joule_counter_sampled_kwh(scripts, tmp_path):
    _, c, counter = scripts
    counter.write_text("1.0 kWh\n")
    m = CommandMeter([sys.executable, str(c), str(counter)], unit="J", sample_interval_s=0.1)
    m.start()
    time.sleep(0.25)
    counter.write_text("1.0001 kWh\n")
    r = m.stop()
    assert r.joules == pytest.approx(360.0, rel=1e-6)
    assert len(r.samples) >= 3


def test_counter_going_backwards_is_an_error(scripts):
    _, c, counter = scripts
    m = CommandMeter([sys.executable, str(c), str(counter)], unit="J", mode="before-after")
    m.start()
    counter.write_text("10 J\n")
    with pytest.raises(MeterError, match="went backwards"):
        m.stop()


def test_failing_command_reports_status_and_stderr(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nsys.stderr.write('outlet 9 does not exist\\n')\nsys.exit(3)\n")
    ok, why = CommandMeter([sys.executable, str(bad)]).available()
    assert not ok and "status 3" in why and "outlet 9 does not exist" in why
    ok, why = CommandMeter(["/nonexistent/pdu-read"]).available()
    assert not ok and "not an executable" in why


def test_argv_must_be_a_list_and_watts_must_be_sampled():
    with pytest.raises(ValueError, match="list of strings"):
        CommandMeter("pdu-read --outlet 3")        # a shell string
    with pytest.raises(ValueError, match="must be sampled"):
        CommandMeter(["x"], unit="W", mode="before-after")
