"""rapl meter against a fake powercap tree."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from fwdbench.meters import MeterError, RaplMeter
from fwdbench.meters import rapl as rapl_mod

MAX = 262_143_328_850          # a real max_energy_range_uj (2^32 x 61.035 uJ - 1 unit)


def zone(root: Path, zid: str, name: str, energy: int, max_range: int = MAX) -> Path:
    d = root / zid
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy}\n")
    (d / "max_energy_range_uj").write_text(f"{max_range}\n")
    (d / "enabled").write_text("1\n")
    return d


def set_energy(d: Path, uj: int) -> None:
    (d / "energy_uj").write_text(f"{uj}\n")


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "powercap"
    (root / "intel-rapl").mkdir(parents=True)          # the control type: no energy_uj
    z = {
        "root": root,
        "pkg0": zone(root, "intel-rapl:0", "package-0", 1_000_000),
        "core0": zone(root, "intel-rapl:0:0", "core", 500_000),
        "dram0": zone(root, "intel-rapl:0:1", "dram", 2_000_000),
        "pkg1": zone(root, "intel-rapl:1", "package-1", 3_000_000),
    }
    zone(root, "intel-rapl-mmio:0", "package-0", 1)    # duplicate MMIO interface: ignored
    return z


def test_discover_keys_and_kinds(tree):
    found = rapl_mod.discover(tree["root"])
    assert [(k, kind) for k, kind, _ in found] == [
        ("package-0", "package"), ("package-0/core", "core"), ("package-0/dram", "dram"),
        ("package-1", "package")]


def test_normal_read_sums_package_and_dram_not_core(tree):
    m = RaplMeter(root=tree["root"], sample_interval_s=0)
    ok, why = m.available()
    assert ok, why
    m.start()
    set_energy(tree["pkg0"], 1_000_000 + 25_500_000)   # +25.5 J
    set_energy(tree["dram0"], 2_000_000 + 4_000_000)   # +4 J
    set_energy(tree["pkg1"], 3_000_000 + 20_000_000)   # +20 J
    set_energy(tree["core0"], 500_000 + 99_000_000)    # part of package: never added
    r = m.stop()
    assert r.measured and r.source == "rapl"
    assert r.joules == pytest.approx(49.5)
    assert r.extra["domains_j"] == {"package-0": 25.5, "package-0/dram": 4.0, "package-1": 20.0}
    assert set(r.extra["total_of"]) == {"package-0", "package-0/dram", "package-1"}
    assert r.mean_watts == pytest.approx(49.5 / r.duration_s)
    assert r.sample_unit == "J" and r.samples[-1][1] == pytest.approx(49.5)


def test_selected_domains_only(tree):
    m = RaplMeter(root=tree["root"], domains=["core"], sample_interval_s=0)
    m.start()
    set_energy(tree["core0"], 500_000 + 7_000_000)
    set_energy(tree["pkg0"], 9_999_999_999)
    r = m.stop()
    assert r.joules == pytest.approx(7.0)
    assert list(r.extra["domains_j"]) == ["package-0/core"]


def test_wrap_around(tree):
    set_energy(tree["pkg0"], MAX - 1_000_000)              # 1 J before the wrap
    m = RaplMeter(root=tree["root"], domains=["package"], sample_interval_s=0)
    m.start()
    set_energy(tree["pkg0"], 2_000_000 - 1)                # wrapped, then 2 J more
    set_energy(tree["pkg1"], 3_000_000 + 5_000_000)
    r = m.stop()
    # (MAX - before) + after + 1: the counter runs 0..MAX inclusive
    assert r.extra["domains_j"]["package-0"] == pytest.approx(3.0)
    assert r.joules == pytest.approx(8.0)
    assert r.extra["wraps"] == {"package-0": 1}
    assert any("wrap-around" in n for n in r.notes)


def test_two_wraps_caught_by_sampling(tree):
    """Two wraps in one trial are only visible because the meter reads in between."""
    set_energy(tree["pkg0"], MAX - 10_000_000)
    m = RaplMeter(root=tree["root"], domains=["package"], sample_interval_s=0)
    m.start()
    set_energy(tree["pkg0"], MAX - 20_000_000)            # nearly a whole range later...
    assert m.poll() == pytest.approx((MAX - 10_000_000 + 1) / 1e6, rel=1e-9)
    set_energy(tree["pkg0"], 5_000_000)                   # ...and past the top again
    r = m.stop()
    expect = ((MAX - 10_000_000 + 1) + (20_000_000 + 1) + 5_000_000) / 1e6
    assert r.extra["domains_j"]["package-0"] == pytest.approx(expect, rel=1e-9)
    assert r.extra["wraps"] == {"package-0": 2}


def test_background_sampling_records_a_curve(tree):
    import threading
    import time
    m = RaplMeter(root=tree["root"], domains=["package"], sample_interval_s=0.05)
    m.start()
    stop = threading.Event()

    def burn():      # 10 J per 50 ms on package-0, like a 200 W package
        v = 1_000_000
        while not stop.is_set():
            v += 10_000_000
            set_energy(tree["pkg0"], v)
            time.sleep(0.05)
    t = threading.Thread(target=burn)
    t.start()
    time.sleep(0.4)
    stop.set()
    t.join()
    r = m.stop()
    final = int((tree["pkg0"] / "energy_uj").read_text())
    assert r.joules == pytest.approx((final - 1_000_000) / 1e6)
    assert len(r.samples) >= 5
    assert all(b[1] >= a[1] for a, b in zip(r.samples, r.samples[1:]))   # cumulative


def test_unreadable_energy_file_is_explained(tree, monkeypatch):
    real = rapl_mod._read_int

    def denied(path):
        if Path(path).name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)
    monkeypatch.setattr(rapl_mod, "_read_int", denied)
    m = RaplMeter(root=tree["root"])
    ok, why = m.available()
    assert not ok
    assert "CVE-2020-8694" in why and "root" in why and "energy_uj" in why
    with pytest.raises(MeterError, match="CVE-2020-8694"):
        m.check()
    with pytest.raises(MeterError, match="CVE-2020-8694"):
        m.start()


PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from fwdbench.meters import RaplMeter
ok, why = RaplMeter(root=sys.argv[2]).available()
print(ok)
print(why)
"""


def test_unreadable_energy_file_real_permissions(tmp_path):
    """energy_uj mode 0400 root, as Linux >= 5.10 ships it, read by an unprivileged user."""
    import subprocess
    import sys
    import tempfile
    import fwdbench
    src = str(Path(fwdbench.__file__).resolve().parents[1])
    # tmp_path sits in a 0700 directory; the unprivileged reader needs a path it can walk
    base = Path(tempfile.mkdtemp(prefix="fwdbench-rapl-"))
    try:
        base.chmod(0o755)
        root = base / "powercap"
        (root / "intel-rapl").mkdir(parents=True)
        z = zone(root, "intel-rapl:0", "package-0", 123)
        for p in (root, *root.iterdir(), *z.iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o444)
        if os.geteuid() == 0:
            (z / "energy_uj").chmod(0o400)       # root's file; the probe runs as nobody
            kw = {"user": 65534}
        else:
            (z / "energy_uj").chmod(0o000)       # our own file: take our access away
            kw = {}
        try:
            out = subprocess.run([sys.executable, "-c", PROBE, src, str(root)], check=True,
                                 capture_output=True, text=True, timeout=30, **kw)
        except (PermissionError, subprocess.CalledProcessError) as e:
            pytest.skip(f"cannot run a probe as an unprivileged user here: {e}")
        ok, why = out.stdout.split("\n", 1)
        assert ok == "False"
        assert "CVE-2020-8694" in why and "root" in why
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)


def test_missing_powercap_and_missing_domains(tmp_path, tree):
    ok, why = RaplMeter(root=tmp_path / "nope").available()
    assert not ok and "powercap" in why and "modprobe" in why
    empty = tmp_path / "empty"
    empty.mkdir()
    ok, why = RaplMeter(root=empty).available()
    assert not ok and "no intel-rapl" in why
    ok, why = RaplMeter(root=tree["root"], domains=["psys"]).available()
    assert not ok and "package" in why and "dram" in why     # says what exists


def test_psys_alone_is_the_total(tree):
    psys = zone(tree["root"], "intel-rapl:2", "psys", 0)
    m = RaplMeter(root=tree["root"], domains=["package", "psys"], sample_interval_s=0)
    m.start()
    set_energy(psys, 60_000_000)
    set_energy(tree["pkg0"], 1_000_000 + 30_000_000)
    r = m.stop()
    assert r.extra["total_of"] == ["psys"]
    assert r.joules == pytest.approx(60.0)
    assert r.extra["domains_j"]["package-0"] == pytest.approx(30.0)


def test_amd_zone_names(tmp_path):
    root = tmp_path / "pc"
    d = zone(root, "amd-rapl:0", "package-0", 10)
    m = RaplMeter(root=root, sample_interval_s=0)
    m.start()
    set_energy(d, 10 + 1_500_000)
    assert m.stop().joules == pytest.approx(1.5)
