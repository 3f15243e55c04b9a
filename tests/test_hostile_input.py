"""Hostile and careless input through the real CLI (issue 20): every bad file is
one line naming the file (and the line or field), exit code 2, never a
traceback; user text is never Rich markup; values are bounded and shown
clipped; a trial that sent nothing is no pass."""
from __future__ import annotations

import sqlite3
import sys

import pytest

from fwdbench.cli import main

BASE = """\
[campaign]
name = "probe"
[testbed]
type = "sim"
max_load = "2Mpps"
[trial]
duration = "1s"
warmup_trial = false
[[dut]]
name = "ideal"
type = "sim"
params = { model = "ideal", capacity_pps = 1000000, seed = 1 }
[[profile]]
name = "p"
frame_size = 64
[search]
type = "sweep"
loads = ["10%", "50%", "100%"]
"""


def cli(capsys, monkeypatch, *args) -> tuple[int, str, str]:
    """Run fwdbench as the console script does; (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["fwdbench", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, path, *needles: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0], err
    for n in needles:
        assert n in lines[0], (n, err)
    return lines[0]


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


# -- campaign files: the traceback causes of issue 20 ---------------------------------

CAMPAIGN_TRACEBACKS = {
    # name: (file bytes, what the one line says)
    "utf16": (BASE.encode("utf-16"), "UTF-16"),
    "latin1": (sub(BASE, 'name = "probe"', 'name = "probe"\ndescription = "caf\u00e9"')
               .encode("latin-1"), ":3: byte 0xe9"),
    "binary": (bytes(range(256)) * 4, "is not UTF-8"),
    "deep-array": (("a = " + "[" * 100_000 + "]" * 100_000 + "\n").encode(), "nested"),
    "deep-table": (("a = " + "{b=" * 100_000 + "1" + "}" * 100_000 + "\n").encode(), "nested"),
    "duration-1e308s": (sub(BASE, 'duration = "1s"', 'duration = "1e308s"').encode(),
                        "trial.duration"),
    "loads-nan": (sub(BASE, 'loads = ["10%", "50%", "100%"]', "loads = [nan]").encode(),
                  "search.loads[0]: nan is not a finite number"),
    "5000-digits": (sub(BASE, "seed = 1", "seed = " + "9" * 5000).encode(), "4300 digits"),
    "markup-name": (sub(BASE, 'name = "ideal"', 'name = "[/bold]"').encode(), "'[/bold]'"),
    "markup-type": (sub(BASE, 'type = "sweep"', 'type = "[/bold]"').encode(), "'[/bold]'"),
}


@pytest.mark.parametrize("case", CAMPAIGN_TRACEBACKS)
@pytest.mark.parametrize("command", ["plan", "run"])
def test_campaign_files_that_were_tracebacks(case, command, tmp_path, capsys, monkeypatch):
    data, needle = CAMPAIGN_TRACEBACKS[case]
    f = tmp_path / "c.toml"
    f.write_bytes(data)
    args = [command, f] + (["--out", tmp_path / "r.sqlite", "--no-report", "-q"]
                           if command == "run" else [])
    code, _, err = cli(capsys, monkeypatch, *args)
    one_line_error(code, err, f, needle)
    assert not (tmp_path / "r.sqlite").exists()      # refused before anything was set up


def test_markup_in_values_prints_literally(tmp_path, capsys, monkeypatch):
    """A value of [link=...] was rendered as a hyperlink (and printed without its tags)."""
    f = tmp_path / "c.toml"
    f.write_text(sub(BASE, 'model = "ideal"', 'model = "[link=http://evil]click[/link]"'))
    code, _, err = cli(capsys, monkeypatch, "plan", f)
    line = one_line_error(code, err, f, "'[link=http://evil]click[/link]'")
    assert "\x1b]8;" not in err                       # no OSC 8 hyperlink escape


def test_a_100kb_value_is_not_echoed_whole(tmp_path, capsys, monkeypatch):
    f = tmp_path / "c.toml"
    f.write_text(sub(BASE, 'name = "ideal"', 'name = "' + "x" * 100_000 + '"'))
    code, _, err = cli(capsys, monkeypatch, "plan", f)
    line = one_line_error(code, err, f, "dut[0].name", "chars)")
    assert len(line) < 400


# -- bounds: values that were accepted and ignored, or unbounded -----------------------

BOUNDS = {
    "max_load 0%": (('max_load = "2Mpps"', 'max_load = "0%"'), "testbed.max_load"),
    "max_load 200%": (('max_load = "2Mpps"', 'max_load = "200%"'), "testbed.max_load"),
    "max_load 1e400pps": (('max_load = "2Mpps"', 'max_load = "1e400pps"'), "testbed.max_load"),
    "line_rate inf": (('max_load = "2Mpps"', "line_rate = inf"), "testbed.line_rate"),
    "line_rate 1e400Gbps": (('max_load = "2Mpps"', 'line_rate = "1e400Gbps"'),
                            "testbed.line_rate"),
    "search.repetitions 1e18": (('loads = ["10%", "50%", "100%"]',
                                 'loads = ["10%"]\nrepetitions = 1000000000000000000'),
                                "search.repetitions"),
    "capacity_pps inf": (("capacity_pps = 1000000", "capacity_pps = inf"), "capacity_pps"),
    "capacity_pps 0.5": (("capacity_pps = 1000000", "capacity_pps = 0.5"), "capacity_pps"),
    "capacity_pps true": (("capacity_pps = 1000000", "capacity_pps = true"), "capacity_pps"),
    "latency nan": (('type = "sweep"\nloads = ["10%", "50%", "100%"]',
                     'type = "binary"\nlatency = { fractions = [nan] }'),
                    "search.latency.fractions[0]"),
    "latency 2.0": (('type = "sweep"\nloads = ["10%", "50%", "100%"]',
                     'type = "binary"\nlatency = { fractions = [2.0] }'),
                    "search.latency.fractions"),
    "duration 1e-9": (('duration = "1s"', "duration = 1e-9"), "trial.duration"),
    "load 1e-9pps": (('loads = ["10%", "50%", "100%"]', 'loads = ["1e-9pps"]'),
                     "search.loads"),
    "exclude all": (("[search]", '[matrix]\nexclude = [{ dut = "ideal" }]\n[search]'),
                    "removes all"),
    "exclude no such dut": (("[search]", '[matrix]\nexclude = [{ dut = "nosuch" }]\n[search]'),
                            "matrix.exclude[0].dut: 'nosuch' is not a value"),
    "exclude no such profile": (("[search]",
                                 '[matrix]\nexclude = [{ profile = "nosuch" }]\n[search]'),
                                "matrix.exclude[0].profile"),
    "120000 scenarios": (("[search]", "[matrix]\n\"dut.params.seed\" = ["
                          + ",".join(map(str, range(120_000))) + "]\n[search]"),
                         "120,000 scenarios"),
}


@pytest.mark.parametrize("case", BOUNDS)
def test_bounds_refuse_with_one_line(case, tmp_path, capsys, monkeypatch):
    (old, new), needle = BOUNDS[case]
    f = tmp_path / "c.toml"
    f.write_text(sub(BASE, old, new))
    code, _, err = cli(capsys, monkeypatch, "plan", f)
    one_line_error(code, err, f, needle)


def test_a_max_load_that_caps_nothing_plans_with_a_warning(tmp_path, capsys, monkeypatch):
    """20 Mpps is above 10 Gbit/s of 64 B frames (14.88 Mpps): it was silently ignored;
    a user may mean it (a generator limit set once for many frame sizes): a warning."""
    f = tmp_path / "c.toml"
    f.write_text(sub(BASE, 'max_load = "2Mpps"', 'max_load = "20Mpps"'))
    code, out, err = cli(capsys, monkeypatch, "plan", f)
    assert code == 0, err
    assert "warning: " in err and "testbed.max_load '20Mpps' is at or above the line rate" \
        in err and "caps nothing" in err
    assert "1 scenarios" in out


def test_a_long_campaign_is_planned_with_a_warning(tmp_path, capsys, monkeypatch):
    f = tmp_path / "c.toml"
    f.write_text(sub(sub(BASE, 'duration = "1s"', 'duration = "1h"'), "[search]",
                     "[matrix]\n\"dut.params.seed\" = [" + ",".join(map(str, range(1500)))
                     + "]\n[search]"))
    code, out, err = cli(capsys, monkeypatch, "plan", f)
    assert code == 0, err
    assert "expands to 1,500 scenarios" in err and "days" in err


# -- analyze: the traceback causes of issue 20 -----------------------------------------

ANALYZE_TRACEBACKS = {
    "pastrami 1e308": ("a.txt", "[[100000, 0], [1e308, 1e308, 0]]\n", ":1: run 1 tx"),
    "pastrami 2^63": ("a.txt", f"[[100000, 0], [{2**63}, {2**63}, 0]]\n", "2^63-1"),
    "pastrami 400 digits": ("a.txt", f"[[100000, 0], [{'9' * 400}, {'9' * 400}, 0]]\n",
                            "2^63-1"),
    "pastrami 5000 digits": ("a.txt", f"[[100000, 0], [{'9' * 5000}, 1, 0]]\n", "4300 digits"),
    "pastrami load 5000 digits": ("a.txt", f"[[{'9' * 5000}, 0], [10, 1, 0]]\n", "4300 digits"),
    "pastrami deep": ("a.txt", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    "csv 1e308": ("a.csv", "load,repetition,tx,rx\n100000,0,1e308,1e308\n", ":2: tx"),
    "csv 2^63": ("a.csv", f"load,repetition,tx,rx\n100000,0,{2**63},{2**63}\n", "2^63-1"),
    "csv 400 digits": ("a.csv", f"load,repetition,tx,rx\n100000,0,{'9' * 400},1\n",
                       "400 digits"),
}


@pytest.mark.parametrize("case", ANALYZE_TRACEBACKS)
@pytest.mark.parametrize("flags", [[], ["--json"], ["--rule", "published-code"]],
                         ids=["table", "json", "published-code"])
def test_analyze_inputs_that_were_tracebacks(case, flags, tmp_path, capsys, monkeypatch):
    name, text, needle = ANALYZE_TRACEBACKS[case]
    f = tmp_path / name
    f.write_text(text)
    code, out, err = cli(capsys, monkeypatch, "analyze", *flags, f)
    one_line_error(code, err, f, needle)
    assert out.strip() in ("",)


# -- a trial that sent nothing ----------------------------------------------------------

def test_a_trial_that_sent_nothing_is_no_pass():
    """tx 0, rx 0 counted as loss 0: an NDR at the maximum load for lossy devices."""
    from fwdbench.intent import TrialIntent
    from fwdbench.search import BinarySettings, SweepSettings, run_search
    from fwdbench.trial import StreamResult, TrialResult

    def nothing(duration_s, load_pps, intent: TrialIntent) -> TrialResult:
        s = StreamResult(0, "tg0", "tg1", load_pps, 0, 0, 0, 0, 0)   # intended 0, sent 0
        return TrialResult(load_pps, duration_s, [s])

    assert nothing(1.0, 1e6, None).loss_ratio == 1.0
    r = run_search(SweepSettings(loads_pps=[1e5, 1e6], trial_duration_s=1.0), nothing, 1e6)
    assert r.ndr_pps is None and r.pdr_pps is None
    r = run_search(BinarySettings(trial_duration_s=1.0), nothing, 1e6)
    assert r.ndr_pps is None and r.pdr_pps is None
    assert not any(g.max_load_reached for g in r.goals)


def test_pastrami_counts_an_empty_run_as_loss():
    from fwdbench.analysis import LoadLossCurve
    c = LoadLossCurve.from_counts([1e5], [[0]], [[0]])
    assert c.plr_mean[0] == 1.0


def test_resume_of_a_users_database_is_refused_untouched(tmp_path, capsys, monkeypatch):
    f = tmp_path / "mine.sqlite"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    before = f.read_bytes()
    code, _, err = cli(capsys, monkeypatch, "run", "--resume", f)
    one_line_error(code, err, f, "not a fwdbench results store")
    assert f.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [f.name]
