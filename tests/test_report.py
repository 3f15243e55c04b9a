"""The report (issue 4): a campaign of simulated DUTs -> HTML, figures, exports.

The store is built with the real store API from ``fwdbench.sim`` trials run
through the real searches (no root). One DUT is named
``<script>alert(1)</script>``. The browser test opens the page in headless
Chromium over the DevTools protocol (``--remote-debugging-pipe``, standard
library only), collects console errors, exceptions, dialogs, failed and
off-host requests and broken images, checks every section in the DOM and
takes a screenshot; it skips cleanly when Chromium is not installed.
"""
from __future__ import annotations

import base64
import csv
import fcntl
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fwdbench.goal import NDR, PDR
from fwdbench.report import build_comparison, build_report, compare_cmd, load_model, report_cmd
from fwdbench.report.sample import DEFAULT_DUTS, SampleDut, build_sample_store

EVIL = "<script>alert(1)</script>"
EVIL_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SECTIONS = ("summary", "throughput", "curves", "latency", "cpu-energy", "thesis-table",
            "environment", "warnings", "data")
# linux-router's binary search reaches loads its (simulated) generator cannot send
DUTS = (DEFAULT_DUTS[0],
        SampleDut("linux-router", "noisy", 1.1e6, params={"noise_cv": 0.03, "max_tx_pps": 4e6}),
        DEFAULT_DUTS[2], SampleDut(EVIL, "ideal", 1.5e6))


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("report")
    db = build_sample_store(base / "sample.sqlite", duts=DUTS, frame_sizes=(64, 512),
                            repetitions=3, loads=8, trial_duration_s=0.5,
                            binary_dut="linux-router")
    out = base / "out"
    index = build_report(db, out)
    return {"db": db, "out": out, "index": index, "html": index.read_text(encoding="utf-8"),
            "base": base}


class _Collect(HTMLParser):
    """Elements by id, attributes of every start tag, and visible text per id'd cell."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids[a["id"]] = tag


def _parse(html: str) -> _Collect:
    p = _Collect()
    p.feed(html)
    return p


def _db_goals(db: Path) -> dict[tuple[int, str], list[float]]:
    """Straight from SQLite: value_pps per (scenario id, goal), independent of the report."""
    con = sqlite3.connect(db)
    out: dict[tuple[int, str], list[float]] = {}
    for sid, goal, v in con.execute(
            "SELECT scenario_id, goal, value_pps FROM result WHERE goal IN ('ndr', 'pdr@0.005')"
            " AND value_pps IS NOT NULL"):
        out.setdefault((sid, goal), []).append(v)
    con.close()
    return out


def _cells(html: str, sid: int) -> str:
    m = re.search(rf'<tr data-scenario-id="{sid}" id="row-s\d+">(.*?)</tr>', html, re.S)
    assert m, f"no summary row for scenario {sid}"
    return m.group(1)


# -- files --------------------------------------------------------------------------

def test_report_writes_page_figures_and_exports(campaign):
    out = campaign["out"]
    assert campaign["index"] == out / "index.html"
    svgs = sorted((out / "figures").glob("*.svg"))
    pdfs = sorted((out / "figures").glob("*.pdf"))
    assert len(svgs) >= 8
    assert {p.stem for p in svgs} == {p.stem for p in pdfs}
    for p in pdfs:
        assert p.read_bytes()[:5] == b"%PDF-"
    # every figure file is embedded inline in the page, and linked
    html = campaign["html"]
    for p in svgs:
        assert f'id="fig-{p.stem}"' in html
        assert f'href="figures/{p.name}"' in html
    assert html.count("<svg") == len(svgs)
    for name in ("trials.csv", "results.csv", "summary.csv"):
        assert (out / "data" / name).stat().st_size > 0


def test_exports_match_the_store(campaign):
    con = sqlite3.connect(campaign["db"])
    done = con.execute("SELECT COUNT(*) FROM trial WHERE status='done'").fetchone()[0]
    results = con.execute("SELECT COUNT(*) FROM result").fetchone()[0]
    tx = con.execute("SELECT SUM(tx_packets) FROM trial WHERE status='done'").fetchone()[0]
    con.close()
    with open(campaign["out"] / "data" / "trials.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == done
    assert sum(int(r["tx_packets"]) for r in rows) == tx
    assert {r["dut"] for r in rows} == {d.name for d in DUTS}
    with open(campaign["out"] / "data" / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == results
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (fwdbench[export]) is missing")
    t = pq.read_table(campaign["out"] / "data" / "trials.parquet")
    assert t.num_rows == done
    assert sum(t.column("tx_packets").to_pylist()) == tx
    assert str(t.schema.field("loss_ratio").type) == "double"


# -- the page -----------------------------------------------------------------------

def test_every_section_is_present(campaign):
    p = _parse(campaign["html"])
    for sid in SECTIONS:
        assert p.ids.get(sid) == "section", sid
        assert f'href="#{sid}"' in campaign["html"]          # and in the table of contents
    for tid in ("summary-table", "bitrate-table", "pastrami-table", "latency-table",
                "meter-table", "traffic-energy-table", "dut-table", "campaign-file",
                "methodology"):
        assert tid in p.ids, tid


def test_page_is_self_contained(campaign):
    html = campaign["html"]
    p = _parse(html)
    assert not [t for t, _ in p.tags if t in ("script", "img", "iframe", "link", "object")]
    for _tag, a in p.tags:
        for attr in ("src", "href"):
            v = a.get(attr) or ""
            assert not re.match(r"^[a-z][a-z0-9+.-]*://", v) and not v.startswith("//"), v
    assert "@import" not in html and "url(" not in html.split("</style>")[0]
    ids = [a["id"] for _t, a in p.tags if a.get("id")]
    assert len(ids) == len(set(ids)), "duplicate ids across the inline figures"
    # every reference inside a figure resolves to an element of the page
    for ref in set(re.findall(r'(?:url\(#|href="#)([^)"]+)', html)):
        assert ref in ids, ref


def test_numbers_in_html_match_the_database(campaign):
    html = campaign["html"]
    goals = _db_goals(campaign["db"])
    assert goals
    seen = 0
    for (sid, goal), vals in goals.items():
        mean = sum(vals) / len(vals)
        row = _cells(html, sid)
        m = re.search(rf'data-goal="{re.escape(goal)}" data-value-pps="([0-9.]+)">([0-9.]+)', row)
        assert m, (sid, goal)
        assert float(m.group(1)) == pytest.approx(mean, rel=1e-9)
        assert m.group(2) == f"{mean / 1e6:.3f}"              # Mpps, 3 decimals
        seen += 1
    assert seen == len(goals)
    # trials per scenario and the thesis table's sums, also straight from SQLite
    con = sqlite3.connect(campaign["db"])
    for sid, n, tx in con.execute(
            "SELECT scenario_id, COUNT(*), SUM(tx_packets) FROM trial WHERE status='done'"
            " AND kind != 'warmup' GROUP BY scenario_id"):
        assert f'data-trials="{n}"' in _cells(html, sid)
        assert re.search(rf'<tr data-scenario-id="{sid}">.*?data-tx-packets="{tx}"', html, re.S)
    total = con.execute("SELECT COUNT(*) FROM trial WHERE status='done'").fetchone()[0]
    con.close()
    assert re.search(rf'id="fact-trials">{re.escape(f"{total:,}".replace(",", chr(0x2009)))}<',
                     html)


def test_confidence_intervals_are_student_t(campaign):
    from scipy import stats
    m = load_model(campaign["db"])
    s = next(s for s in m.scenarios if s.dut_name == "linux-router" and s.frame_size == 64)
    vals = _db_goals(campaign["db"])[(s.id, "pdr@0.005")]
    e = s.goals[PDR].estimate
    n = len(vals)
    mean = sum(vals) / n
    sd = (sum((v - mean) ** 2 for v in vals) / (n - 1)) ** 0.5
    half = stats.t.ppf(0.975, n - 1) * sd / n ** 0.5
    assert (e.low, e.high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert f"[{(mean - half) / 1e6:.3f}, {(mean + half) / 1e6:.3f}]" in _cells(
        campaign["html"], s.id)


def test_pastrami_verdicts_follow_the_analysis(campaign):
    from fwdbench.analysis.pastrami import assess
    m = load_model(campaign["db"])
    checked = 0
    for s in m.scenarios:
        if s.curve_kind != "sweep":
            assert s.pastrami.verdict == "n/a"
            continue
        a = assess([p.load_pps for p in s.curve], [p.plr.mean for p in s.curve])
        assert s.pastrami.verdict == a.verdict.replace("_", " ")
        assert s.pastrami.verdict in _cells(campaign["html"], s.id)
        checked += 1
    assert checked >= 6
    # the ideal DUT saturates right at its capacity: PASTRAMI calls it GOOD
    evil = [s for s in m.scenarios if s.dut_name == EVIL]
    assert {s.pastrami.verdict for s in evil} == {"GOOD"}


def test_evil_dut_name_is_escaped_everywhere(campaign):
    html = campaign["html"]
    assert EVIL not in html
    assert "<script" not in html.lower()
    assert html.count(EVIL_ESCAPED) >= 10          # tables, warnings, inline SVG legends
    for p in (campaign["out"] / "figures").glob("*.svg"):
        assert EVIL not in p.read_text(encoding="utf-8")


def test_sections_with_data_show_it_and_mark_its_basis(campaign):
    html = campaign["html"]
    assert "Simulated DUTs." in html                       # sim testbed: said at the top
    assert 'class="badge modelled"' in html                # energy from the CPU model
    assert "✓ GOOD" in html
    m = load_model(campaign["db"])
    assert m.latency_any and m.energy_any and m.cpu_any and m.curves_any
    # the binary-search DUT has CSIT-style latency trials at 0/10/50/90 % of its PDR
    lr = next(s for s in m.scenarios if s.dut_name == "linux-router" and s.frame_size == 64)
    assert [round(p.pct_of_pdr) for p in lr.latency] == [0, 10, 50, 90]
    assert all(p.source == "latency" for p in lr.latency)
    assert any(p.cdf_ns is not None for p in lr.latency)
    # bit rates: L1 adds 20 B per frame to the frame incl. FCS; L2 is the frame incl. FCS
    s64 = next(s for s in m.scenarios if s.dut_name == "vfwd" and s.frame_size == 64)
    pdr = s64.goals[PDR].estimate.mean
    row = re.search(r"<tr><td class=\"name\">[^<]*</td><td class=\"name\">vfwd</td>"
                    r"<td>PDR@0.5%</td><td>64 B</td><td>1</td>(.*?)</tr>", html, re.S)
    assert row
    nums = re.findall(r'<td class="num">([0-9.]+)</td>', row.group(1))
    assert nums == [f"{pdr / 1e6:.3f}", f"{pdr * 84 * 8 / 1e9:.3f}",
                    f"{pdr * 64 * 8 / 1e9:.3f}"]


def test_warnings_name_the_problem_and_what_to_do(campaign):
    m = load_model(campaign["db"])
    gl = [w for w in m.warnings if w.kind == "generator-limited"]
    con = sqlite3.connect(campaign["db"])
    names = {r[0] for r in con.execute(
        "SELECT DISTINCT s.name FROM trial t JOIN scenario s ON s.id = t.scenario_id"
        " WHERE t.status='done' AND t.generator_limited=1")}
    assert {w.scenario for w in gl} == names == {"linux-router udp64"}
    limited = con.execute(
        "SELECT COUNT(*) FROM trial t JOIN scenario s ON s.id = t.scenario_id WHERE"
        " t.status='done' AND t.kind != 'warmup' AND t.generator_limited=1").fetchone()[0]
    con.close()
    assert sum(s.generator_limited for s in m.scenarios) == limited > 0
    html = campaign["html"]
    sec = html[html.index('<section id="warnings">'):html.index('<section id="data">')]
    assert sec.count('<span class="kind">generator-limited</span>') == len(gl)
    assert "testbed.max_load" in sec                 # says what to do next
    assert f"{len(m.warnings)} warning" in html       # and the summary points at them


def test_environment_and_methodology(campaign):
    html = campaign["html"]
    m = load_model(campaign["db"])
    assert "RFC 2544 binary search" in m.methodology
    assert "load sweep over 8 offered loads" in m.methodology
    assert "Student&#39;s t" in html or "Student's t" in html
    # the campaign file as given, escaped
    assert '<pre id="campaign-file"><code># sample campaign' in html
    assert "capacity_pps" in html


def test_empty_store_says_so_plainly(tmp_path):
    from fwdbench.store import Store
    db = tmp_path / "empty.sqlite"
    st = Store(db)
    cid = st.create_campaign(name="empty", source_path="e.toml", config_text="[campaign]\n",
                             config={"campaign": {"name": "empty"}}, host={},
                             tool_version="0.1.0")
    st.add_scenario(cid, 0, "d p", "d", "sim", {}, {"name": "p", "frame_size": 64},
                    {"type": "sweep"}, {"dut": "d", "profile": "p"}, 1e6)
    st.close()
    html = build_report(db, tmp_path / "out").read_text()
    p = _parse(html)
    for sid in SECTIONS:
        assert p.ids.get(sid) == "section"
    for text in ("no NDR or PDR results", "no load-loss curves", "carries latency samples",
                 "carries CPU or energy readings", "states no question"):
        assert text.lower() in html.lower(), text
    assert "<svg" not in html


def test_report_cmd_errors_name_the_file(tmp_path, capsys):
    missing = tmp_path / "nope.sqlite"
    assert report_cmd(missing, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "nope.sqlite" in err and "no such results file" in err
    assert not missing.exists()                 # the report never creates a store
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database\n" * 100)
    assert report_cmd(junk, tmp_path / "out") == 2
    assert "not a fwdbench results store" in capsys.readouterr().err


def test_ctrl_c_while_drawing_says_how_to_finish(campaign, tmp_path, capsys, monkeypatch):
    import fwdbench.report.command as command_mod

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(command_mod, "build_figures", interrupted)
    assert report_cmd(campaign["db"], tmp_path / "r") == 130
    err = capsys.readouterr().err
    assert "interrupted: the report in" in err and "results file is untouched" in err
    assert f"fwdbench report {campaign['db']} -o {tmp_path / 'r'}" in err


def test_compare_two_campaigns(campaign, tmp_path):
    slower = tuple(SampleDut(d.name, d.model, d.capacity_pps * 0.8, d.poll_mode, d.params)
                   for d in DUTS)
    db_b = build_sample_store(tmp_path / "b.sqlite", duts=slower, frame_sizes=(64,),
                              repetitions=3, loads=8, trial_duration_s=0.5,
                              binary_dut="linux-router", seed=2)
    out = tmp_path / "cmp"
    assert compare_cmd(campaign["db"], db_b, out) == 0
    html = (out / "index.html").read_text()
    assert (out / "a" / "index.html").is_file()
    assert (out / "figures" / "compare_ratios.svg").is_file()
    assert 'id="comparison"' in html and 'id="compare-table"' in html
    assert EVIL not in html
    a, b = _db_goals(campaign["db"]), _db_goals(db_b)
    ma, mb = load_model(campaign["db"]), load_model(db_b)
    s_a = next(s for s in ma.scenarios if s.dut_name == "vfwd" and s.frame_size == 64)
    s_b = next(s for s in mb.scenarios if s.name == s_a.name)
    ra = sum(a[(s_a.id, "pdr@0.005")]) / len(a[(s_a.id, "pdr@0.005")])
    rb = sum(b[(s_b.id, "pdr@0.005")]) / len(b[(s_b.id, "pdr@0.005")])
    m = re.search(rf'<tr data-scenario="{re.escape(s_a.name)}" data-goal="pdr@0.005">.*?'
                  r'data-ratio="([0-9.]+)"', html, re.S)
    assert m and float(m.group(1)) == pytest.approx(rb / ra, rel=1e-5)
    assert 0.7 < rb / ra < 0.9
    # B ran only the 64 B scenarios: the 512 B ones of A are listed, not compared
    only_a = html[html.index("Only in A:"):].split("</p>")[0]
    assert "vfwd udp512" in only_a and "vfwd udp64" not in only_a


def test_build_comparison_same_store_is_a_tie(campaign, tmp_path):
    index = build_comparison(campaign["db"], campaign["db"], tmp_path / "same")
    html = index.read_text()
    assert re.findall(r'data-ratio="([0-9.]+)"', html)
    assert {float(x) for x in re.findall(r'data-ratio="([0-9.]+)"', html)} == {1.0}


# -- headless Chromium ---------------------------------------------------------------

def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class DevTools:
    """A browser driven over --remote-debugging-pipe (fd 3: commands in, fd 4: events out)."""

    def __init__(self, binary: str, profile: Path, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        # posix_spawn, not Popen(preexec_fn): no Python runs in the child of this
        # multi-threaded process. Above fd 4 first, so no dup2 below clobbers a source.
        src_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        src_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        argv = [binary, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--mute-audio", "--disable-dev-shm-usage",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        try:
            self.pid = os.posix_spawn(binary, argv, os.environ, file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_DUP2, src_r, 3),
                (os.POSIX_SPAWN_DUP2, src_w, 4)])
        finally:
            for fd in (src_r, src_w, devnull):
                os.close(fd)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the browser")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("the browser closed the DevTools pipe")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg: dict = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str) -> dict:
        deadline = time.monotonic() + self.timeout_s
        for e in self.events:
            if e.get("method") == method and e.get("sessionId") == session:
                return e
        while True:
            m = self._read_message(deadline)
            self.events.append(m)
            if m.get("method") == method and m.get("sessionId") == session:
                return m

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


DOM_CHECK = r"""
(() => {
  const ids = %s;
  const sections = ids.map(id => {
    const el = document.getElementById(id);
    return {id, present: !!el && el.tagName === "SECTION",
            h2: el && el.querySelector("h2") ? el.querySelector("h2").textContent : null,
            height: el ? el.getBoundingClientRect().height : 0};
  });
  const imgs = [...document.images].map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0}));
  const svgs = [...document.querySelectorAll("figure svg")].map(s => {
    const r = s.getBoundingClientRect(); return {w: r.width, h: r.height};
  });
  const duts = [...document.querySelectorAll("#summary-table td.dut")].map(td => td.textContent);
  return JSON.stringify({sections, imgs, svgs, duts, scripts: document.scripts.length,
                         title: document.title, width: document.documentElement.scrollWidth,
                         height: document.documentElement.scrollHeight});
})()
"""


def test_report_renders_in_headless_chromium(campaign, tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    dt = DevTools(binary, tmp_path / "profile")
    try:
        target = dt.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sess = dt.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            dt.send(f"{domain}.enable", session=sess)
        dt.send("Emulation.setDeviceMetricsOverride",
                {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=sess)
        url = campaign["index"].resolve().as_uri()
        dt.send("Page.navigate", {"url": url}, session=sess)
        dt.wait_event("Page.loadEventFired", sess)
        res = dt.send("Runtime.evaluate", {"expression": DOM_CHECK % json.dumps(list(SECTIONS)),
                                           "returnByValue": True}, session=sess)
        dom = json.loads(res["result"]["value"])
        shot = dt.send("Page.captureScreenshot",
                       {"format": "png", "captureBeyondViewport": True,
                        "clip": {"x": 0, "y": 0, "width": 1280,
                                 "height": min(dom["height"], 16000), "scale": 1}},
                       session=sess)
        png = base64.b64decode(shot["data"])
        pdf = base64.b64decode(dt.send("Page.printToPDF", {"printBackground": True},
                                       session=sess)["data"])
        time.sleep(0.2)
        dt.send("Runtime.evaluate", {"expression": "1"}, session=sess)   # drain late events
    finally:
        dt.close()

    screenshot = campaign["out"] / "screenshot.png"
    screenshot.write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    assert pdf[:5] == b"%PDF-" and len(pdf) > 50_000          # print CSS renders too

    ev = [e for e in dt.events if e.get("sessionId") == sess]
    console_errors = [e["params"] for e in ev if e.get("method") == "Runtime.consoleAPICalled"
                      and e["params"].get("type") in ("error", "assert")]
    exceptions = [e["params"] for e in ev if e.get("method") == "Runtime.exceptionThrown"]
    log_errors = [e["params"]["entry"] for e in ev if e.get("method") == "Log.entryAdded"
                  and e["params"]["entry"].get("level") == "error"]
    dialogs = [e["params"] for e in ev if e.get("method") == "Page.javascriptDialogOpening"]
    failed = [e["params"] for e in ev if e.get("method") == "Network.loadingFailed"]
    requests = [e["params"]["request"]["url"] for e in ev
                if e.get("method") == "Network.requestWillBeSent"]
    assert not console_errors, console_errors
    assert not exceptions, exceptions
    assert not log_errors, log_errors
    assert not dialogs, dialogs                 # alert(1) never ran
    assert not failed, failed
    assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests

    assert dom["scripts"] == 0
    assert all(s["present"] and s["h2"] and s["height"] > 40 for s in dom["sections"]), \
        dom["sections"]
    assert all(i["ok"] for i in dom["imgs"]), dom["imgs"]
    assert len(dom["svgs"]) >= 8
    assert all(s["w"] > 200 and s["h"] > 100 for s in dom["svgs"]), dom["svgs"]
    assert EVIL in dom["duts"]                  # shown as text, not run as markup
    assert dom["width"] <= 1280                 # nothing overflows the page sideways


POOL_CHILD = r"""
import os, signal, sys
from fwdbench.lab.netns import _raise_exit
from fwdbench.report.figures import map_in_forked_pool

def dispositions(_):
    return (os.getpid(), signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
            signal.getsignal(signal.SIGINT) is signal.SIG_IGN)

signal.signal(signal.SIGTERM, _raise_exit)        # as a lab installs it
seen = map_in_forked_pool(2, dispositions, list(range(8)))
assert all(d and i for _, d, i in seen), seen
assert os.getpid() not in {p for p, _, _ in seen}
for _ in range(150):                              # many short pools: none may hang
    map_in_forked_pool(2, abs, [-1, -2, -3])
assert signal.getsignal(signal.SIGTERM) is _raise_exit
print("ok")
"""


def test_figure_workers_end_without_the_parents_signal_handlers():
    """The figure pool's workers run with SIGTERM at its default and Ctrl-C
    ignored, and the pool ends by closing, not by SIGTERM: a lab's SIGTERM ->
    SystemExit handler, inherited by a worker still in fork's hooks, once
    left Pool.terminate() waiting for ever in CI."""
    import sys

    r = subprocess.run([sys.executable, "-c", POOL_CHILD], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
