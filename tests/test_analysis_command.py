"""``analyze_cmd`` end to end (table, JSON lines, figures, bad input)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdbench.analysis import analyze_cmd, read_experiment, analyze_experiment
from fwdbench.analysis.figures import plot_curve

DATA = Path(__file__).parent / "data"
FILES = [DATA / "pastrami_ideal.txt", DATA / "pastrami_realistic_rules_differ.txt",
         DATA / "pastrami_realistic_early.txt", DATA / "pastrami_trashing.txt",
         DATA / "realistic.csv"]


def run_json(capsys, files, **kw):
    rc = analyze_cmd(files, as_json=True, **kw)
    out, err = capsys.readouterr()
    return rc, [json.loads(line) for line in out.splitlines()], err


def test_json_lines_one_per_experiment(capsys):
    rc, rows, _ = run_json(capsys, FILES)
    assert rc == 0
    assert [Path(r["file"]).name for r in rows] == [f.name for f in FILES]
    for r in rows:
        assert set(r) == {"file", "pdr_0p5_pps", "saturation_load_pps", "verdict", "reason", "rule",
                          "max_norm_uncertainty"}
        assert r["rule"] == "paper"
    verdicts = {Path(r["file"]).name: r["verdict"] for r in rows}
    assert verdicts == {"pastrami_ideal.txt": "GOOD", "pastrami_realistic_rules_differ.txt": "BAD",
                        "pastrami_realistic_early.txt": "BAD", "pastrami_trashing.txt": "GOOD",
                        "realistic.csv": "GOOD"}
    ideal = rows[0]
    assert ideal["pdr_0p5_pps"] == 1_000_000.0 and ideal["saturation_load_pps"] == 1_200_000.0
    assert ideal["max_norm_uncertainty"] == 0.0


def test_published_code_rule_changes_the_verdict(capsys):
    rc, rows, _ = run_json(capsys, [FILES[1]], rule="published-code")
    assert rc == 0 and rows[0]["verdict"] == "GOOD" and rows[0]["rule"] == "published-code"


def test_table(capsys):
    rc = analyze_cmd(FILES)
    out, err = capsys.readouterr()
    assert rc == 0
    for header in ("PDR@0.5% [pps]", "saturation load [pps]", "verdict"):
        assert header in out
    assert "1,000,000" in out and "1,200,000" in out
    assert out.count("GOOD") == 3 and out.count("BAD") == 2
    assert "no figures written" in out


def test_figures_written_to_out_dir(tmp_path, capsys):
    rc, rows, _ = run_json(capsys, FILES[:2], out_dir=tmp_path / "figs")
    assert rc == 0
    figs = sorted((tmp_path / "figs").glob("*.svg"))
    assert [f.name for f in figs] == ["pastrami_ideal.svg", "pastrami_realistic_rules_differ.svg"]
    assert rows[0]["figure"] == str(tmp_path / "figs" / "pastrami_ideal.svg")
    svg = figs[0].read_text()
    assert "GOOD" in svg and "packet loss ratio" in svg and "offered load [Mpps]" in svg
    assert "BAD" in figs[1].read_text()


def test_same_stem_gets_distinct_figures(tmp_path, capsys):
    other = tmp_path / "in" / "pastrami_ideal.txt"
    other.parent.mkdir()
    other.write_text((DATA / "pastrami_trashing.txt").read_text())
    rc = analyze_cmd([FILES[0], other], out_dir=tmp_path / "out")
    capsys.readouterr()
    assert rc == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "pastrami_ideal-2.svg", "pastrami_ideal.svg"]


def test_bad_file_reports_and_others_still_analysed(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("[[100, 0], [10, 10, 0]]\n[[oops]]\n")
    rc, rows, err = run_json(capsys, [bad, FILES[0]])
    assert rc == 2
    assert len(rows) == 1 and rows[0]["verdict"] == "GOOD"
    assert f"{bad}:2:" in err and "not valid JSON" in err


def test_warnings_and_flags_on_stderr(tmp_path, capsys):
    p = tmp_path / "odd.csv"
    p.write_text("load,repetition,tx,rx\n200,0,20,20\n100,0,10,11\n100,1,10,10\n")
    rc, rows, err = run_json(capsys, [p])
    assert rc == 0 and len(rows) == 1
    assert "not in ascending order" in err and "rx 11 > tx 10" in err
    assert rows[0]["verdict"] == "BAD"
    assert rows[0]["reason"] == "no saturation in the measured range"


@pytest.mark.parametrize("rule", ["published-code", "paper"])
def test_no_saturation_in_a_measurement_file_is_bad_under_both_rules(tmp_path, capsys, rule):
    """A PASTRAMI measurement file whose loss never saturates (PDR next to the highest
    load): the authors' code says BAD; so does fwdbench (it said NO_SATURATION)."""
    p = tmp_path / "clab_unsaturated.txt"
    lines = []
    for k, load in enumerate(range(250_000, 450_001, 50_000)):
        loss = 0.0006 * k if load < 450_000 else 0.008        # above 0.5 % only at the top
        runs = ", ".join(f"[{load * 10}, {round(load * 10 * (1 - loss)) - r}, 0]"
                         for r in range(3))
        lines.append(f"[[{load}, 0], {runs}]")
    p.write_text("\n".join(lines) + "\n")
    rc, rows, err = run_json(capsys, [p], rule=rule)
    assert rc == 0, err
    assert rows[0]["verdict"] == "BAD" and rows[0]["rule"] == rule
    assert rows[0]["reason"] == "no saturation in the measured range"
    assert rows[0]["pdr_0p5_pps"] == 400_000


def test_bad_rule_and_no_files(capsys):
    assert analyze_cmd(FILES, rule="strict") == 2
    assert "strict" in capsys.readouterr().err
    assert analyze_cmd([]) == 2


def test_plot_single_repetition_and_no_saturation(tmp_path, capsys):
    p = tmp_path / "one.csv"
    p.write_text("load,repetition,tx,rx\n100,0,10,10\n200,0,20,20\n")
    an = analyze_experiment(read_experiment(p)[0])
    out = plot_curve(an.curve, an.assessment, tmp_path / "one.png")
    assert out.stat().st_size > 1000
    assert an.max_norm_uncertainty is None
    assert analyze_cmd([p]) == 0
    assert "fewer than 2 repetitions" in capsys.readouterr().err


@pytest.mark.parametrize("rule", ["paper", "published-code"])
def test_rule_recorded_on_figure(tmp_path, rule):
    an = analyze_experiment(read_experiment(FILES[1])[0], rule)
    svg = plot_curve(an.curve, an.assessment, tmp_path / "f.svg").read_text()
    assert f"rule: {rule}" in svg
