"""Property-based fuzzing (hypothesis) of campaign files and `analyze` inputs
through the CLI, so the class of defects of issue 20 stays closed: whatever
the file holds, fwdbench exits 0 or 2, never with a traceback, and every error
line names the file. Examples are bounded (FWDBENCH_FUZZ_EXAMPLES, default
120 per test) and derandomized, so CI runs the same cases in seconds; set
FWDBENCH_FUZZ_RANDOM=1 to explore new ones."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fwdbench.cli import main

EXAMPLES = int(os.environ.get("FWDBENCH_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=os.environ.get("FWDBENCH_FUZZ_RANDOM") != "1",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["fwdbench", *map(str, args)]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def check(code: int, err: str, path: Path, prefix: str) -> None:
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err and "Error:" not in err.split(":", 1)[0], err
    lines = [l for l in err.splitlines() if l.strip()]
    if code == 2:
        assert lines, "an error must say what is wrong"
    for line in lines:
        if line.startswith(prefix):
            assert str(path) in line, line          # every error names the file


# -- campaign files -------------------------------------------------------------------

BASE = {
    "campaign": {"name": "fuzz", "repetitions": 1},
    "testbed": {"type": "sim", "max_load": "2Mpps"},
    "trial": {"duration": "1s", "warmup_trial": False},
    "dut": [{"name": "d", "type": "sim",
             "params": {"model": "ideal", "capacity_pps": 1000000, "seed": 1}}],
    "profile": [{"name": "p", "frame_size": 64}],
    "search": {"type": "sweep", "loads": ["10%", "50%", "100%"]},
}
PATHS = [("campaign", "name"), ("campaign", "repetitions"), ("campaign", "description"),
         ("testbed", "max_load"), ("testbed", "line_rate"), ("testbed", "gen_cpu"),
         ("trial", "duration"), ("trial", "warmup"), ("trial", "latency_rate"),
         ("dut", 0, "name"), ("dut", 0, "type"), ("dut", 0, "params", "capacity_pps"),
         ("dut", 0, "params", "model"), ("dut", 0, "params", "seed"),
         ("profile", 0, "frame_size"), ("profile", 0, "flows"), ("profile", 0, "name"),
         ("search", "type"), ("search", "loads"), ("search", "repetitions"),
         ("search", "trial_duration"), ("search", "latency"), ("matrix",),
         ("matrix", "exclude"), ("matrix", "dut.params.seed"), ("energy",), ("bogus",),
         ("search", "latency", "fractions"), ("search", "min_load"), ("search", "verify"),
         ("search", "relative_width"), ("search", "loss_ratios"), ("search", "max_trials"),
         ("search", "start"), ("search", "stop"), ("search", "step"),
         ("matrix", "profile.frame_size"), ("matrix", "trial.duration"), ("matrix", "dut"),
         ("energy", "meter"), ("energy", "command"), ("testbed", "dut_rx_queue"),
         ("testbed", "type"), ("profile", 0, "vary"), ("profile", 0, "l3"),
         ("profile", 0, "direction"), ("dut", 0, "params"), ("dut", 0, "params", "noise_cv")]

HOSTILE_TEXT = st.sampled_from([
    "[/bold]", "[link=http://evil]click[/link]", "1e308s", "1e-9", "0%", "200%", "1e400pps",
    "-5", "nan", "inf", "", " ", "\x00", "x" * 5000, "10Gbps", "1e400Gbps", "50%", "1Mpps",
    "imix", "sweep", "binary", "mlr", "ideal", "d", "p", "caf\u00e9", "\u202e", "1e-9pps",
    "noisy", "trashing", "realistic", "src_ip", "ipv6", "bi", "cpu-model", "rapl", "auto"])
SCALARS = st.one_of(
    st.booleans(), st.integers(), st.integers(min_value=2**63 - 2, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), HOSTILE_TEXT,
    st.text(alphabet=st.characters(codec="utf-8"), max_size=30))
VALUES = st.recursive(SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(
        ["type", "fractions", "dut", "profile", "x", "[/bold]", "trial_duration"]), kids,
        max_size=3)), max_leaves=8)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"


def toml_doc(d: dict) -> str:
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in d.items())


def mutate(doc: dict, path: tuple, value) -> dict:
    doc = json.loads(json.dumps(doc))
    node = doc
    for k in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(k, {})
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            node = node[k]
        else:
            return doc
    if isinstance(node, dict):
        node[path[-1]] = value
    return doc


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(PATHS), VALUES), min_size=1, max_size=3),
       drop=st.lists(st.sampled_from(list(BASE)), max_size=2))
def test_fuzz_campaign_values(edits, drop):
    doc = {k: v for k, v in BASE.items() if k not in drop}
    for path, value in edits:
        doc = mutate(doc, path, value)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "c.toml"
        f.write_text(toml_doc(doc), encoding="utf-8", errors="surrogatepass")
        code, _, err = run_cli("plan", f)
        check(code, err, f, "error:")
        if code == 0:                       # it plans: then it runs, or refuses in one line
            code, _, err = run_cli("run", f, "--out", Path(d) / "r.sqlite", "--no-report", "-q")
            assert code in (0, 2, 3) and "Traceback" not in err, err


@FUZZ
@given(data=st.data())
def test_fuzz_campaign_bytes(data):
    text = toml_doc(BASE).encode()
    ops = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.binary(max_size=8),
                                       st.integers(0, 4)), min_size=1, max_size=4))
    for pos, ins, cut in ops:
        text = text[:pos] + ins + text[pos + cut:]
    if data.draw(st.booleans()):
        text = data.draw(st.sampled_from([b"\xff\xfe", b"\xef\xbb\xbf", b""])) + text
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "c.toml"
        f.write_bytes(text)
        code, _, err = run_cli("plan", f)
        check(code, err, f, "error:")


# -- analyze inputs -------------------------------------------------------------------

NUMBERS = st.one_of(st.integers(min_value=-5, max_value=2**66),
                    st.integers(min_value=10**300, max_value=10**400),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    HOSTILE_TEXT, st.none())


@FUZZ
@given(rows=st.lists(st.tuples(NUMBERS, st.lists(st.lists(NUMBERS, min_size=0, max_size=4),
                                                  max_size=4)), min_size=1, max_size=6),
       junk=st.binary(max_size=12), junk_at=st.integers(0, 400))
def test_fuzz_analyze_pastrami_files(rows, junk, junk_at):
    lines = [json.dumps([[load, 0], *runs]) for load, runs in rows]
    data = "\n".join(lines).encode()
    if junk:
        data = data[:junk_at] + junk + data[junk_at:]
    _analyze(data, "m.txt")


NUMBER_TEXT = st.sampled_from(["1e308", "-1e308", str(2**63), str(2**64 + 7), "9" * 400,
                               "9" * 5000, "1e-320", "nan", "Infinity", "0", "100000", "1.5",
                               "+7", "-0"])


FIELD = st.one_of(st.integers(1, 10**7).map(str), NUMBER_TEXT, NUMBERS.map(str), HOSTILE_TEXT)


@FUZZ
@given(rows=st.lists(st.tuples(FIELD, FIELD, FIELD, FIELD).map(list) | st.lists(FIELD, max_size=6),
                     max_size=6),
       header=st.sampled_from(["load,repetition,tx,rx"] * 4 + [
           "rx,tx,repetition,load,extra", "load,tx", "", "\ufeffload,repetition,tx,rx"]))
def test_fuzz_analyze_csv_files(rows, header):
    text = header + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    _analyze(text.encode("utf-8", "surrogatepass"), "m.csv")


def _analyze(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_bytes(data)
        for flags in ([], ["--json"], ["--rule", "published-code"]):
            code, out, err = run_cli("analyze", *flags, f)
            check(code, err, f, "fwdbench analyze: error:")
            if code == 0 and flags == ["--json"]:
                for line in out.splitlines():
                    assert json.loads(line)["verdict"] in ("GOOD", "BAD")
