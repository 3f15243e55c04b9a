"""`fwdbench meters`: every meter listed, with a reason."""
from __future__ import annotations

from fwdbench.meters import EnergySettings, meters_cmd, probe
from fwdbench.meters.detect import perf_power_status

from test_meters_rapl import zone


def test_probe_lists_every_meter_with_a_reason(tmp_path):
    s = EnergySettings.model_validate({"rapl": {"root": str(tmp_path / "none")},
                                       "ipmi": {"ipmitool": str(tmp_path / "no-ipmitool")}})
    st = {x.name: x for x in probe(s)}
    assert set(st) == {"rapl", "perf power PMU", "ipmi", "command", "cpu-model"}
    assert not st["rapl"].available and "powercap" in st["rapl"].reason
    assert not st["ipmi"].available and "not installed" in st["ipmi"].reason
    assert not st["command"].available and "[energy.command]" in st["command"].reason
    assert st["cpu-model"].available and st["cpu-model"].measured is False
    assert st["perf power PMU"].used_by_fwdbench is False
    assert all(x.reason for x in st.values())


def test_probe_finds_fake_rapl(tmp_path):
    root = tmp_path / "pc"
    zone(root, "intel-rapl:0", "package-0", 5)
    st = {x.name: x for x in probe(EnergySettings.model_validate({"rapl": {"root": str(root)}}))}
    assert st["rapl"].available and "package-0" in st["rapl"].reason


def test_perf_power_pmu(tmp_path):
    assert not perf_power_status(str(tmp_path / "power")).available
    ev = tmp_path / "power" / "events"
    ev.mkdir(parents=True)
    for n in ("energy-pkg", "energy-pkg.scale", "energy-pkg.unit", "energy-ram"):
        (ev / n).write_text("event=0x02\n")
    s = perf_power_status(str(tmp_path / "power"))
    assert s.available and "energy-pkg, energy-ram" in s.reason


def test_meters_cmd_prints_a_table(capsys):
    assert meters_cmd() == 0
    out = capsys.readouterr().out
    for name in ("rapl", "ipmi", "command", "cpu-model", "perf power PMU"):
        assert name in out
    assert "measured" in out or "modelled" in out
