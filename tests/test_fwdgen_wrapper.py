"""The Python wrapper of fwdgen: binary lookup, exit-code mapping, parsing of
recorded results (no root, no kernel features needed)."""
from __future__ import annotations

import json
import stat

import pytest

from fwdbench.errors import CampaignError, GeneratorError
from fwdbench.traffic import fwdgen as fg

RECORDED = {
    "fwdgen_version": "0.1.0", "ok": True, "backends": {"tg0": "xdp", "tg1": "xdp"},
    "duration_s": 10.0, "warmup_s": 1.0,
    "streams": [
        {"id": 0, "tx_port": "tg0", "rx_port": "tg1", "intended_pps": 100000.0,
         "intended_packets": 1000000, "tx_packets": 1000000, "tx_bytes": 60000000,
         "rx_packets": 999998, "rx_bytes": 59999880, "lost": 2, "reordered": 1,
         "duplicated": 0, "achieved_tx_pps": 99998.7, "tx_limited": False,
         "latency": {"samples": 999998, "min_ns": 4100, "mean_ns": 5321.4, "p50_ns": 5100,
                     "p90_ns": 6000, "p99_ns": 9000, "p999_ns": 21000, "max_ns": 80000,
                     "jitter_ns": 310.2, "hdr": "HISTFAAAAB94nJNpmSzMwMDAzAABMJoRTM6fBGED"},
         "latency_stream": None, "per_second": [{"t": 1, "tx": 100000, "rx": 100000}],
         "max_rate": False, "tx_backend": "xdp", "rx_backend": "xdp"},
        {"id": 1, "tx_port": "tg1", "rx_port": "tg0", "intended_pps": 100000.0,
         "intended_packets": 1000000, "tx_packets": 990000, "tx_bytes": 59400000,
         "rx_packets": 990000, "rx_bytes": 59400000, "lost": 10000, "reordered": 0,
         "duplicated": 0, "achieved_tx_pps": 99000.0, "tx_limited": True, "latency": None,
         "latency_stream": None, "per_second": None, "max_rate": False,
         "tx_backend": "xdp", "rx_backend": "xdp"},
    ],
    "warnings": ["stream 1: generator limited"],
}
SPEC = {"load_pps": 100000, "duration_s": 10.0, "warmup_s": 1.0}


def test_parse_recorded_result():
    res = fg.parse_result(RECORDED, SPEC)
    assert res.intended_load_pps == 100000.0
    assert res.duration_s == 10.0 and res.warmup_s == 1.0
    assert res.backend == "fwdgen-xdp"
    assert res.intended_packets == 2_000_000
    assert res.rx_packets == 1_989_998
    assert res.lost == 10_002
    assert res.loss_ratio == pytest.approx(10_002 / 2_000_000)
    assert res.generator_limited is True
    s0, s1 = res.streams
    assert (s0.stream_id, s0.tx_port, s0.rx_port, s0.reordered) == (0, "tg0", "tg1", 1)
    assert s0.latency.p99_ns == 9000 and s0.latency.jitter_ns == pytest.approx(310.2)
    assert s0.latency.hdr.startswith("HISTF")
    assert s1.latency is None and s1.tx_limited
    assert res.raw is RECORDED and res.warnings == ["stream 1: generator limited"]


def test_parse_rejects_malformed_results():
    with pytest.raises(GeneratorError):
        fg.parse_result({"ok": False}, SPEC)
    broken = json.loads(json.dumps(RECORDED))
    del broken["streams"][0]["rx_packets"]
    with pytest.raises(GeneratorError, match="malformed"):
        fg.parse_result(broken, SPEC)


def fake_fwdgen(tmp_path, body: str) -> str:
    path = tmp_path / "fwdgen"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_find_binary_prefers_env(tmp_path, monkeypatch):
    binary = fake_fwdgen(tmp_path, "exit 0\n")
    monkeypatch.setenv("FWDGEN", binary)
    assert fg.find_binary() == binary
    monkeypatch.setenv("FWDGEN", str(tmp_path / "missing"))
    with pytest.raises(GeneratorError, match="FWDGEN"):
        fg.find_binary()


def test_find_binary_uses_the_native_build_dir(tmp_path, monkeypatch):
    """Without $FWDGEN: $FWDBENCH_NATIVE_BUILD, as for fb-ingress, fb-xdp and vfwd."""
    monkeypatch.delenv("FWDGEN", raising=False)
    monkeypatch.setenv("FWDBENCH_NATIVE_BUILD", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(GeneratorError, match=f"not found in {tmp_path}"):
        fg.find_binary()
    binary = fake_fwdgen(tmp_path, "exit 0\n")      # written as tmp_path/fwdgen
    assert fg.find_binary() == binary


def test_run_trial_passes_spec_on_stdin_and_parses(tmp_path, monkeypatch):
    seen = tmp_path / "seen.json"
    out = tmp_path / "out.json"
    out.write_text(json.dumps(RECORDED))
    binary = fake_fwdgen(tmp_path, f'[ "$1 $2 $3" = "trial --spec -" ] || exit 9\n'
                                   f'cat > {seen}\ncat {out}\n')
    monkeypatch.setenv("FWDGEN", binary)
    res = fg.run_trial(SPEC, netns=None, timeout=10)
    assert json.loads(seen.read_text()) == SPEC
    assert res.tx_packets == 1_990_000


def test_exit_2_is_a_campaign_error_with_fwdgens_message(tmp_path, monkeypatch):
    monkeypatch.setenv("FWDGEN", fake_fwdgen(
        tmp_path, 'cat >/dev/null\necho "fwdgen: spec.profile.frame_size: 40 is below 64" >&2\n'
                  'exit 2\n'))
    with pytest.raises(CampaignError, match=r"spec\.profile\.frame_size: 40 is below 64"):
        fg.run_trial(SPEC, timeout=10)


def test_exit_3_is_a_generator_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FWDGEN", fake_fwdgen(
        tmp_path, 'cat >/dev/null\necho "fwdgen: xdp: bpf_xdp_attach(tg1): Device or resource busy" >&2\n'
                  'exit 3\n'))
    with pytest.raises(GeneratorError, match=r"bpf_xdp_attach\(tg1\)"):
        fg.run_trial(SPEC, timeout=10)


def test_timeout_is_a_generator_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FWDGEN", fake_fwdgen(tmp_path, "sleep 5\n"))
    with pytest.raises(GeneratorError, match="did not finish"):
        fg.run_trial(SPEC, timeout=0.5)


def test_check_reports_backends(tmp_path, monkeypatch):
    monkeypatch.setenv("FWDGEN", fake_fwdgen(
        tmp_path, 'echo \'{"fwdgen_version":"0.1.0","xdp":false,"afpacket":true,'
                  '"errors":{"xdp":"bpf load: Operation not permitted","afpacket":""}}\'\n'))
    info = fg.check()
    assert info["afpacket"] is True and info["xdp"] is False
    monkeypatch.setenv("FWDGEN", fake_fwdgen(
        tmp_path, 'echo \'{"xdp":false,"afpacket":false,"errors":{}}\'\nexit 3\n'))
    with pytest.raises(GeneratorError, match="no working backend"):
        fg.check()


def test_measure_interface_for_searches(tmp_path, monkeypatch):
    out = tmp_path / "out.json"
    out.write_text(json.dumps(RECORDED))
    seen = tmp_path / "seen.json"
    monkeypatch.setenv("FWDGEN", fake_fwdgen(tmp_path, f"cat > {seen}\ncat {out}\n"))
    gen = fg.Fwdgen({"ports": [], "warmup_s": 0.5})
    res = gen.measure(2.0, 12345.0)
    spec = json.loads(seen.read_text())
    assert spec["duration_s"] == 2.0 and spec["load_pps"] == 12345.0 and spec["warmup_s"] == 0.5
    assert res.duration_s == 10.0
