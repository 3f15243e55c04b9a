"""cpu-model meter: the arithmetic, on a fake /proc/stat."""
from __future__ import annotations

import pytest

from fwdbench.meters import (DEFAULT_IDLE_WATTS, DEFAULT_WATTS_PER_BUSY_CORE, CpuModelMeter,
                             model_watts)

from test_meters_cpu import stat_text


def test_model_watts():
    assert model_watts(0.0, 50.0, 8.0) == 50.0
    assert model_watts(2.5, 50.0, 8.0) == 70.0
    assert (DEFAULT_IDLE_WATTS, DEFAULT_WATTS_PER_BUSY_CORE) == (0.0, 10.0)


def test_meter_arithmetic(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    stat = proc / "stat"
    stat.write_text(stat_text({0: (0,) * 10, 1: (0,) * 10, 2: (0,) * 10}))
    m = CpuModelMeter("1-2", idle_watts=40.0, watts_per_busy_core=12.0, sample_interval_s=0,
                      proc_root=proc)
    ok, why = m.available()
    assert ok and why.startswith("modelled") and "1-2" in why
    m.start()
    # CPU 1: 100 % busy (user 80 + softirq 20 of 100 ticks);
    # CPU 2: 25 % busy (system), 10 % steal, 65 % idle; CPU 0 is not the DUT's
    stat.write_text(stat_text({0: (100, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                               1: (80, 0, 0, 0, 0, 0, 20, 0, 0, 0),
                               2: (0, 0, 25, 65, 0, 0, 0, 10, 0, 0)}))
    r = m.stop()
    assert r.measured is False and r.label == "modelled" and r.source == "cpu-model"
    assert r.extra["busy_cores"] == pytest.approx(1.25)
    assert r.extra["steal"] == pytest.approx(10 / 200)
    assert r.mean_watts == pytest.approx(40.0 + 12.0 * 1.25)
    assert r.joules == pytest.approx(55.0 * r.duration_s)
    assert any("steal" in n for n in r.notes)
    assert any("modelled" in n for n in r.notes)
    d = r.to_dict()
    assert d["measured"] is False and d["label"] == "modelled"


def test_meter_samples_power_curve(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "stat").write_text(stat_text({0: (0,) * 10}))
    m = CpuModelMeter([0], watts_per_busy_core=10.0, sample_interval_s=0.05, proc_root=proc)
    m.start()
    import time
    time.sleep(0.3)
    (proc / "stat").write_text(stat_text({0: (50, 0, 0, 50, 0, 0, 0, 0, 0, 0)}))
    r = m.stop()
    assert r.samples, "expected a power curve"
    assert all(w in (0.0, 5.0) for _, w in r.samples)
    assert r.mean_watts == pytest.approx(5.0)


def test_bad_coefficients():
    with pytest.raises(ValueError, match="-1"):
        CpuModelMeter([0], idle_watts=-1)


def test_unknown_cpu(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "stat").write_text(stat_text({0: (0,) * 10}))
    ok, why = CpuModelMeter([3], proc_root=proc).available()
    assert not ok and "3" in why and "offline" in why
