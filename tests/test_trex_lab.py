"""The trex generator for real (root): TRex's server in the lab's generator
namespace on the tg veths (af_packet, low_end on the generator CPU), the Linux
router as DUT.

Counts are checked against a drop pattern injected in the DUT (nftables
drops every 10th UDP frame it forwards, with a counter) and against the
kernel's own counters; bidirectional, IMIX, latency streams; the generator
limit; and every failure the issue names: a server that does not start
(TRex's own message), ports in use, a server that dies or stalls mid-trial
(that trial fails; a campaign resumes), with nothing left behind.

Needs a TRex (scripts/build-trex.sh, `make trex TREX_SRC=...`, or t-rex-64
on $PATH). Without one these tests skip, except under CI=true, where a
missing TRex fails.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import stat
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from fwdbench.campaign import Profile, TrialSettings
from fwdbench.dut.linux import LinuxDut
from fwdbench.errors import GeneratorError
from fwdbench.lab import Lab, LabConfig
from fwdbench.lab.cleanup import ns_pids
from fwdbench.traffic.base import TrialRequest
from fwdbench.traffic.trex import TrexGenerator
from fwdbench.traffic.trex.install import find_trex

pytestmark = [pytest.mark.root, pytest.mark.slow]

NFT_TABLE = "fbtrextest"


@pytest.fixture(scope="module")
def trex_install():
    try:
        return find_trex()
    except GeneratorError as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no TRex: {e}")
        pytest.skip(str(e))


def lab_config() -> LabConfig:
    cpus = sorted(os.sched_getaffinity(0))
    # as campaigns run the lab (testbed.napi_rt_priority's default)
    return LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1], napi_rt_priority=50)


def trex_procs(ns: str) -> list[int]:
    out = []
    for pid in ns_pids(ns):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() in ("_t-rex-64", "t-rex-64"):
                    out.append(pid)
        except OSError:
            pass
    return out


def proc_state(pid: int) -> str | None:
    """A process's state letter (R, S, Z, ...), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def assert_nothing_left(lab: Lab, gen: TrexGenerator, prefix: str, workdir: str) -> None:
    """No process in the generator's namespace, no DPDK runtime files of the
    instance, no listening socket, no work directory."""
    assert lab.tg_exec.pids() == []
    assert not os.path.exists(f"/var/run/dpdk/{prefix}")
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]
    listening = lab.tg_exec.run(["ss", "-Hltn"]).stdout
    assert ":4501 " not in listening and ":4500 " not in listening, listening
    assert not os.path.exists(workdir)
    assert gen.agent is None and gen.server is None


class Bench:
    """One lab, the Linux router and a started TRex, shared by the trial tests."""

    def __init__(self):
        self.lab = Lab.up(lab_config())
        self.dut = None
        self.gen = None
        try:
            self.dut = LinuxDut({"mode": "router"})
            self.dut.check()
            self.dut.setup(self.lab.dut_host())
            self.gen = TrexGenerator({}, self.lab.tester_host())
            self.info = self.gen.check()
        except BaseException:
            self.close()
            raise

    def request(self, load, seconds=2.0, latency=False, **profile):
        profile.setdefault("name", "p")
        return TrialRequest(profile=Profile(**profile),
                            trial=TrialSettings(warmup=0, latency_rate=9000),
                            load_pps=load, duration_s=seconds, latency=latency,
                            peer_macs=self.dut.peer_macs())

    def counters(self):
        return {**self.lab.interface_counters("dut"), **self.lab.interface_counters("tg")}

    def close(self):
        if self.gen is not None:
            self.gen.close()
        if self.dut is not None:
            self.dut.teardown()
        self.lab.down()


@pytest.fixture(scope="module")
def bench(trex_install):
    b = Bench()
    yield b
    prefix, workdir = b.gen._cfg().prefix, b.gen.workdir
    b.gen.close()
    assert_nothing_left(b.lab, b.gen, prefix, workdir)
    b.gen = None
    b.close()


def delta(a, b, ifn, key):
    return b[ifn][key] - a[ifn][key]


@pytest.fixture
def drop_every_10th(bench):
    """nftables in the DUT drops every 10th UDP frame it forwards, and counts them."""
    ex = bench.lab.dut_exec
    ex.run(["nft", "-f", "-"], input=(
        f"table inet {NFT_TABLE} {{\n chain drop10 {{\n"
        f"  type filter hook forward priority -10;\n"
        f"  meta l4proto udp numgen inc mod 10 0 counter drop\n }}\n}}\n"))

    def dropped():
        doc = json.loads(ex.run(["nft", "-j", "list", "table", "inet", NFT_TABLE]).stdout)
        return sum(e["counter"]["packets"] for x in doc["nftables"] if "rule" in x
                   for e in x["rule"]["expr"] if "counter" in e)
    yield dropped
    ex.run(["nft", "delete", "table", "inet", NFT_TABLE], check=False)


def test_server_started_on_the_tester_ports(bench, trex_install):
    info = bench.info
    assert info["server"] == "started" and info["trex_version"] == trex_install.version
    assert [p["driver"] for p in info["ports"]] == ["net_af_packet", "net_af_packet"]
    assert [p["src_mac"] for p in info["ports"]] == [p.tg.mac for p in bench.lab.ports]
    assert "low_end: true" in info["trex_cfg"] and "iface=tg0" in info["trex_cfg"]
    assert bench.gen.describe()["version"] == trex_install.version


def test_loss_is_exactly_the_dut_drops(bench, drop_every_10th):
    before = bench.counters()
    r = bench.gen.run(bench.request(20_000, flows=64, vary=["src_ip", "src_port"]))
    after = bench.counters()
    (s,) = r.streams
    assert not s.tx_limited, r.warnings
    assert s.intended_packets == 40_000 and s.tx_packets >= s.intended_packets
    # every frame TRex counted left tg0 and reached dut0
    assert s.tx_packets == delta(before, after, "tg0", "tx_packets") == \
        delta(before, after, "dut0", "rx_packets")
    # loss = what the DUT dropped on purpose + what the veth rings dropped on the way
    path = delta(before, after, "dut0", "rx_dropped") + delta(before, after, "dut1", "tx_dropped")
    nft = drop_every_10th()
    assert s.tx_packets - s.rx_packets == nft + path
    assert abs(nft - (s.tx_packets - path) / 10) <= 1
    assert s.rx_packets == delta(before, after, "tg1", "rx_packets") - \
        delta(before, after, "tg1", "rx_dropped")
    assert s.reordered is None and s.duplicated is None


def test_bidirectional_counts_both_ways(bench, drop_every_10th):
    before = bench.counters()
    r = bench.gen.run(bench.request(10_000, direction="bi"))
    after = bench.counters()
    a, b = r.streams
    assert (a.tx_port, b.tx_port) == ("tg0", "tg1") and not r.generator_limited
    assert a.tx_packets == delta(before, after, "tg0", "tx_packets")
    assert b.tx_packets == delta(before, after, "tg1", "tx_packets")
    path = sum(delta(before, after, i, k) for i, k in (
        ("dut0", "rx_dropped"), ("dut1", "rx_dropped"), ("dut0", "tx_dropped"),
        ("dut1", "tx_dropped")))
    assert r.tx_packets - r.rx_packets == drop_every_10th() + path
    assert min(a.rx_packets, b.rx_packets) > 0.85 * a.intended_packets


def test_imix_sizes_and_bytes_as_the_kernel_counts_them(bench):
    for _attempt in range(2):   # a trial whose sending this host delayed (CI: 2.022 s
        before = bench.counters()       # for 2 s, flagged generator-limited): once more
        r = bench.gen.run(bench.request(12_000, frame_size="imix"))
        after = bench.counters()
        (s,) = r.streams
        if not s.tx_limited:
            break
    assert not s.tx_limited, r.warnings
    # L2 bytes without FCS, as veth counts them
    assert s.tx_bytes == delta(before, after, "tg0", "tx_bytes")
    assert s.rx_bytes == delta(before, after, "tg1", "rx_bytes")
    sizes = {x["pg_id"]: x["frame_size"] for x in r.raw["streams"]}
    assert sorted(sizes.values()) == [64, 570, 1518]
    assert s.tx_bytes / s.tx_packets == pytest.approx((7 * 60 + 4 * 566 + 1514) / 12, rel=0.01)


def test_latency_stream_beside_the_load(bench):
    r = bench.gen.run(bench.request(20_000, latency=True))
    (s,) = r.streams
    lat = s.latency
    assert lat is not None, r.warnings
    rec = r.raw["latency_streams"]["100"]
    assert lat.samples == rec["rx"] > 0.9 * 9000 * 2
    assert 0 < lat.min_ns <= lat.p50_ns <= lat.p90_ns <= lat.p99_ns <= lat.p999_ns <= lat.max_ns
    assert rec["err_cntrs"]["dup"] == 0 and rec["err_cntrs"]["out_of_order"] == 0
    # the load stream itself is counted apart from the latency stream
    assert s.tx_packets == pytest.approx(40_000, abs=2)


def test_latency_without_background_load_measures_the_stream_itself(bench):
    r = bench.gen.run(bench.request(9_000, l3="ipv6", frame_size=90))
    (s,) = r.streams
    assert s.latency is not None and s.latency.samples == s.rx_packets
    assert s.latency.hdr


def test_generator_limit_is_flagged_not_charged_to_the_dut(bench):
    before = bench.counters()
    r = bench.gen.run(bench.request(3_000_000, seconds=1.0))
    after = bench.counters()
    (s,) = r.streams
    assert r.raw["times"]["stopped"] and s.tx_limited and r.generator_limited
    assert s.tx_packets < 0.9 * s.intended_packets
    assert s.achieved_tx_pps < 0.9 * s.intended_pps
    # what TRex says it sent is what left tg0
    assert s.tx_packets == delta(before, after, "tg0", "tx_packets")
    assert any("generator-limited" in w for w in r.warnings)


# ---- failures -------------------------------------------------------------------------

@pytest.fixture
def plain_lab(trex_install):
    with Lab.up(lab_config()) as lab:
        yield lab


def test_server_that_does_not_start_shows_trex_own_message(plain_lab):
    t = plain_lab.tester_host()
    p0 = t.ports[0]
    bad = dataclasses.replace(t, ports=(dataclasses.replace(
        p0, tg=dataclasses.replace(p0.tg, ifname="tgnone")), t.ports[1]))
    gen = TrexGenerator({"start_timeout": 30}, bad)
    with pytest.raises(GeneratorError) as e:
        gen.check()
    assert "the server exited" in str(e.value)
    assert "Could not find Linux interface tgnone" in str(e.value)
    assert plain_lab.tg_exec.pids() == [] and gen.server is None and gen.workdir is None


def test_ports_in_use_fail_with_trex_message_and_spare_the_running_one(plain_lab):
    first = TrexGenerator({}, plain_lab.tester_host())
    first.check()
    try:
        second = TrexGenerator({"start_timeout": 30}, plain_lab.tester_host())
        with pytest.raises(GeneratorError) as e:
            second.check()
        assert "ZMQ port is used" in str(e.value)
        r = first.run(TrialRequest(profile=Profile(name="p"), trial=TrialSettings(warmup=0),
                                   load_pps=1000, duration_s=0.5))
        assert r.streams[0].tx_packets >= 500
    finally:
        first.close()
    assert plain_lab.tg_exec.pids() == []


def _trial_in_thread(gen, request):
    box = {}

    def go():
        try:
            box["result"] = gen.run(request)
        except Exception as e:      # the assertion is on what was raised
            box["error"] = e
    th = threading.Thread(target=go)
    th.start()
    return th, box


def test_server_dying_mid_trial_fails_that_trial_and_leaves_nothing(plain_lab):
    gen = TrexGenerator({}, plain_lab.tester_host())
    gen.check()
    prefix, workdir = gen._cfg().prefix, gen.workdir
    try:
        th, box = _trial_in_thread(gen, TrialRequest(
            profile=Profile(name="p"), trial=TrialSettings(warmup=0), load_pps=10_000,
            duration_s=4.0))
        time.sleep(1.5)
        for pid in trex_procs(plain_lab.tg_ns):
            os.kill(pid, signal.SIGKILL)
        th.join(60)
        assert not th.is_alive()
        assert isinstance(box.get("error"), GeneratorError), box
        assert "server exited" in str(box["error"]) or "client" in str(box["error"])
    finally:
        gen.close()
    assert_nothing_left(plain_lab, gen, prefix, workdir)


def test_server_stalling_mid_trial_fails_that_trial_in_bounded_time(plain_lab):
    gen = TrexGenerator({"stall_timeout": 5}, plain_lab.tester_host())
    gen.check()
    prefix, workdir = gen._cfg().prefix, gen.workdir
    stopped = []
    try:
        t0 = time.monotonic()
        th, box = _trial_in_thread(gen, TrialRequest(
            profile=Profile(name="p"), trial=TrialSettings(warmup=0), load_pps=10_000,
            duration_s=2.0))
        time.sleep(1.0)
        for pid in trex_procs(plain_lab.tg_ns):
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        th.join(60)
        took = time.monotonic() - t0
        assert not th.is_alive()
        assert isinstance(box.get("error"), GeneratorError), box
        # trial 2 s + catch-up 0.1 s + the client's 5 s RPC timeout, or the stall budget
        assert took < 2.0 + 2 * 5 + 10, took
    finally:
        gen.close()         # SIGKILL ends a stopped process too
    assert_nothing_left(plain_lab, gen, prefix, workdir)


CAMPAIGN = """
[campaign]
name = "trex-resume"
repetitions = 1

[testbed]
type = "netns"
gen_cpu = {gen}
dut_cpu = {dut}

[trial]
duration = "0.5s"
warmup = "0s"
warmup_trial = false

[generator]
type = "trex"

[[dut]]
name = "router"
type = "linux"
params = {{ mode = "router" }}

[[profile]]
name = "udp64"

[search]
type = "sweep"
loads = [5000, 6000, 7000, 8000]
"""


def test_campaign_resumes_after_the_server_died_mid_run(trex_install, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    toml = tmp_path / "c.toml"
    toml.write_text(CAMPAIGN.format(gen=cpus[0], dut=cpus[-1]))
    db = tmp_path / "r.sqlite"
    cmd = [sys.executable, "-m", "fwdbench.cli", "run", str(toml), "--out", str(db),
           "--no-report", "--quiet"]
    others = set(os.listdir("/run/netns"))     # other labs on this host are not ours
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = []
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:
            con = sqlite3.connect(db)
            done = con.execute("SELECT COUNT(*) FROM trial WHERE status='done'").fetchone()[0]
            con.close()
        except sqlite3.Error:
            done = 0
        if done >= 1 and not killed:
            for ns in set(os.listdir("/run/netns")) - others:
                if ns.endswith("-tg") and ns.startswith("fb-"):
                    for pid in trex_procs(ns):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
        time.sleep(0.05)
    out, err = p.communicate(timeout=60)
    assert killed, (out, err)
    assert p.returncode == 3, (out, err)
    assert "trex" in err and ("server exited" in err or "client" in err), err
    con = sqlite3.connect(db)
    status = dict(con.execute("SELECT status, COUNT(*) FROM trial GROUP BY status").fetchall())
    con.close()
    assert status.get("failed") == 1 and status.get("done", 0) >= 1
    again = subprocess.run([sys.executable, "-m", "fwdbench.cli", "run", "--resume", str(db),
                            "--no-report", "--quiet"], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    con = sqlite3.connect(db)
    loads = sorted(r[0] for r in con.execute(
        "SELECT intended_load_pps FROM trial WHERE status='done'"))
    con.close()
    assert loads == [5000, 6000, 7000, 8000]
    # nothing of either run is left: no lab namespace, no TRex (labs of other
    # processes that came meanwhile are alive, not left over)
    from fwdbench.lab.cleanup import list_labs
    new = set(os.listdir("/run/netns")) - others
    alive = {f"fb-{i.run_id}-{side}" for i in list_labs() if i.alive for side in ("tg", "dut")}
    assert not new - alive


def test_through_a_user_space_dut_trex_counts_equal_the_dut_own(trex_install):
    """vfwd (AF_XDP) through the campaign path (testbed, trial routine): TRex's tx
    and rx are exactly what vfwd counted in and out."""
    from fwdbench.campaign import build_campaign
    from fwdbench.testbed.netns import NetnsTestbed
    c = build_campaign({
        "campaign": {"name": "t"}, "testbed": {"type": "netns"},
        "trial": {"duration": "2s", "warmup": "0s"}, "generator": {"type": "trex"},
        "dut": [{"name": "v", "type": "vfwd", "params": {"mode": "router"}}],
        "profile": [{"name": "p", "flows": 16, "vary": ["src_ip"]}],
        "search": {"type": "sweep", "loads": [20000]}}, "test")
    with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _d):
        assert tb.describe()["generator"]["generator"] == "trex"
        r = execute(2.0, 20_000, 0, False)
    (s,) = r.streams
    assert not s.tx_limited, r.warnings
    dc = r.dut_counters
    assert s.tx_packets == dc["dut0_rx_packets"] == dc["vfwd_port_input_packets"]
    assert s.rx_packets == dc["dut1_tx_packets"] == dc["vfwd_port_output_packets"]


def test_attach_to_a_running_server_checks_its_version_and_leaves_it_running(plain_lab,
                                                                           trex_install):
    from fwdbench.traffic.trex.server import TrexServer
    probe = TrexGenerator({}, plain_lab.tester_host())
    workdir = tempfile.mkdtemp(prefix="trex-attach-")
    server = TrexServer(plain_lab.tester_host(), trex_install, probe._cfg(), workdir)
    server.start()
    try:
        gen = TrexGenerator({"host": "127.0.0.1", "start_timeout": 60},
                            plain_lab.tester_host())
        info = gen.check()
        try:
            assert info["server"] == "attached" and info["trex_version"] == trex_install.version
            assert not info["counts_checked_against_kernel"]
            r = gen.run(TrialRequest(profile=Profile(name="p"), trial=TrialSettings(warmup=0),
                                     load_pps=5000, duration_s=1.0))
            assert r.streams[0].tx_packets >= 5000 and "checks" in r.raw
        finally:
            gen.close()
        assert server.alive()           # not ours to stop
    finally:
        server.stop()
    assert plain_lab.tg_exec.pids() == []
    shutil.rmtree(workdir)


def test_a_run_that_never_closed_its_generator_leaves_nothing_after_lab_down(trex_install):
    """As after a crash: the lab's teardown alone kills TRex in the namespace and
    removes its DPDK runtime directory (lab/cleanup.py)."""
    lab = Lab.up(lab_config())
    try:
        gen = TrexGenerator({}, lab.tester_host())
        gen.check()
        prefix = gen._cfg().prefix
        pids = trex_procs(lab.tg_ns)
        assert pids and os.path.exists(f"/var/run/dpdk/{prefix}")
    finally:
        lab.down()
    assert not os.path.exists(f"/var/run/dpdk/{prefix}")
    # gone, or dead and waiting for init to reap it (a zombie holds nothing)
    assert all(proc_state(p) in (None, "Z") for p in pids)
    gen.close()         # what the generator still holds is gone already: a no-op


# ---- the lab's memif link ---------------------------------------------------------------

def memif_campaign(duts, duration="2s", **trial):
    from fwdbench.campaign import build_campaign
    cpus = sorted(os.sched_getaffinity(0))
    return build_campaign({
        "campaign": {"name": "trex-memif"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1]},
        "trial": {"duration": duration, "warmup": "0s", **trial},
        "generator": {"type": "trex"},
        "dut": [{"name": f"d{i}", **d} for i, d in enumerate(duts)],
        "profile": [{"name": "p", "flows": 16, "vary": ["src_ip"]}],
        "search": {"type": "sweep", "loads": [20000]}}, "test")


def dpdk_leftovers(run_id: str) -> list[str]:
    """DPDK runtime directories and shared memory of one lab's run, if any."""
    pre = f"fb-{run_id}-"
    found = [f"/dev/shm/{n}" for n in os.listdir("/dev/shm") if n.startswith(pre)]
    if os.path.isdir("/var/run/dpdk"):
        found += [f"/var/run/dpdk/{n}" for n in os.listdir("/var/run/dpdk") if n.startswith(pre)]
    return found


def dut_ports(dut_type: str, dc: dict) -> tuple[int, int, int]:
    """(frames the DUT took in on port 0, sent out of port 1, dropped sending
    on port 1: the generator's receive ring was full) from its own counters."""
    if dut_type == "vfwd":
        return dc["dut0_rx_packets"], dc["dut1_tx_packets"], dc.get("dut1_tx_dropped", 0)
    return (dc["dut0.rx_packets"], dc["dut1.tx_packets"],
            dc.get("vpp_err.memif2.0-tx/no_free_slots", 0))


@pytest.mark.parametrize("dut_type", ["vfwd", "vpp"])
def test_over_memif_trex_counts_equal_the_dut_own(trex_install, dut_type):
    """A user-space DUT on the lab's memif link, the memif slave; TRex its master
    (DPDK's memif PMD, server role) in the generator's namespace. TRex's tx is
    what the DUT counted in, its rx what the DUT counted out, with and without
    a latency stream; nothing of TRex is left after the run."""
    from fwdbench.testbed.netns import NetnsTestbed
    if dut_type == "vpp":
        from test_vpp_dut import need_vpp
        need_vpp()
    c = memif_campaign([{"type": dut_type, "link": "memif", "params": {"mode": "router"}}])
    sc = c.scenarios[0]
    assert sc.dut.link == "memif"
    with NetnsTestbed(c) as tb:
        run_id, gen = tb.lab.run_id, tb.generator
        assert tb.generator_info["memif"] is True
        with tb.scenario(sc) as (execute, record):
            r = execute(2.0, 20_000, 0, False)
            lat = execute(2.0, 20_000, 1, True)
            socks = [m["socket"] for m in record["memif"]]
            assert [os.path.basename(s) for s in socks] == ["tg0.sock", "tg1.sock"]
            assert all(stat.S_ISSOCK(os.stat(s).st_mode) for s in socks)
            cfg = gen.info["links"]["memif"]["trex_cfg"]
            assert f"net_memif0,role=server,socket={socks[0]},socket-abstract=no" in cfg
            assert [p["driver"] for p in gen.info["links"]["memif"]["ports"]] == \
                ["net_memif", "net_memif"]
            pids = trex_procs(tb.lab.tg_ns)
            assert pids
        prefix = gen.server.cfg.prefix
    for trial in (r, lat):
        assert trial.backend == "trex-memif" and trial.raw["link"] == "memif"
        assert trial.raw["memif"][0]["trex_role"] == "master"
        dut_in, dut_out, dut_dropped = dut_ports(dut_type, trial.dut_counters)
        ch = trial.raw["checks"]
        # every frame TRex's memif driver put into the ring, the DUT took in; every
        # frame the DUT sent, TRex counted in (load and latency streams together)
        assert ch["port0"]["trex_opackets"] == dut_in
        assert ch["port1"]["trex_ipackets"] == dut_out
        (s,) = trial.streams
        # TRex's drops at a full ring are flagged and not sent (below); how many
        # there are depends on how long the DUT's CPU was away (a shared host)
        assert s.tx_packets >= 0.9 * s.intended_packets, trial.warnings
        # frames lost on the way are the DUT's own drops and those it could not
        # put into TRex's full receive ring (none of a router's own here)
        assert dut_in - dut_out == trial.dut_counters.get("vfwd_drops_total", 0) + dut_dropped
    assert r.raw["server_started_for_trial"] and not lat.raw["server_started_for_trial"]
    (s,) = r.streams
    # the load alone: what TRex counted but its driver never put into the ring
    # (a full ring in low_end mode) is not sent; the rest the DUT took in
    assert s.tx_packets + r.raw["checks"]["port0"]["not_sent"] == \
        r.raw["checks"]["port0"]["trex_tx"]
    assert s.tx_packets == r.dut_counters["vfwd_port_input_packets" if dut_type == "vfwd"
                                          else "vpp_node.memif-input.vectors"]
    ls = lat.streams[0].latency
    rec = lat.raw["latency_streams"]["100"]
    assert ls is not None and ls.samples == rec["rx"] > 0.9 * 9000 * 2
    assert 0 < ls.min_ns <= ls.p50_ns <= ls.p99_ns <= ls.max_ns
    assert rec["err_cntrs"]["dup"] == 0 and rec["err_cntrs"]["out_of_order"] == 0
    # the run is over: no TRex, no socket, no DPDK runtime file, no lab directory
    assert all(proc_state(p) in (None, "Z") for p in pids)
    assert not os.path.exists(os.path.dirname(socks[0]))
    assert not os.path.exists(f"/var/run/dpdk/{prefix}") and not dpdk_leftovers(run_id)


def test_the_server_follows_the_link_from_scenario_to_scenario(trex_install):
    """vfwd (memif slave), a second vfwd (a new process reconnects to the same
    TRex), testpmd (the memif master: TRex restarts as its client), a second
    testpmd (TRex's client reconnects through a fresh server), the Linux router
    (veth: af_packet ports again), vfwd again: every trial forwards every frame
    TRex sent, on the right ports."""
    from fwdbench.testbed.netns import NetnsTestbed
    duts = [{"type": "vfwd", "link": "memif", "params": {"mode": "router"}},
            {"type": "vfwd", "link": "memif", "params": {"mode": "xconnect"}},
            {"type": "testpmd", "link": "memif", "params": {"mode": "mac"}},
            {"type": "testpmd", "link": "memif", "params": {"mode": "io"}},
            {"type": "linux", "params": {"mode": "router"}},
            {"type": "vfwd", "link": "memif", "params": {"mode": "router"}}]
    c = memif_campaign(duts, duration="1s")
    seen = []
    with NetnsTestbed(c) as tb:
        gen = tb.generator
        for sc in c.scenarios:
            with tb.scenario(sc) as (execute, record):
                before = gen.servers_started
                r = execute(1.0, 20_000, 0, False)
                (s,) = r.streams
                seen.append((sc.dut.type, r.backend, gen.servers_started - before,
                             r.raw["memif"][0]["trex_role"] if "memif" in r.raw else None))
                # (TRex sends one frame more than load x duration at times)
                assert s.intended_packets + 1 >= s.tx_packets >= s.rx_packets >= \
                    0.9 * s.intended_packets, (sc.name, r.warnings)
                if sc.dut.type == "testpmd":
                    assert os.path.basename(record["memif"][0]["socket"]) == "dut0.sock"
    assert seen == [("vfwd", "trex-memif", 1, "master"), ("vfwd", "trex-memif", 0, "master"),
                    ("testpmd", "trex-memif", 1, "slave"), ("testpmd", "trex-memif", 1, "slave"),
                    ("linux", "trex-af_packet", 1, None), ("vfwd", "trex-memif", 1, "master")]


@pytest.mark.parametrize("dut_role", ["slave", "master"])
def test_a_memif_peer_that_never_connects_names_the_side_and_the_socket(plain_lab, dut_role):
    """No DUT on the memif link: with TRex the master, its sockets wait for a slave
    that never comes; with TRex the slave, the DUT's socket is never there. The
    trial fails after memif_timeout saying which; nothing is left behind."""
    gen = TrexGenerator({"memif_timeout": 3}, plain_lab.tester_host())
    gen.check()
    prefix, workdir = gen._cfg().prefix, gen.workdir
    links = plain_lab.memif_links(dut_role)
    try:
        t0 = time.monotonic()
        with pytest.raises(GeneratorError) as e:
            gen.run(TrialRequest(profile=Profile(name="p"), trial=TrialSettings(warmup=0),
                                 load_pps=1000, duration_s=0.5, memif=links))
        took = time.monotonic() - t0
        msg = str(e.value)
        if dut_role == "slave":
            assert f"memif port 0 ({links[0].socket}) not connected after 3 s" in msg
            assert "TRex is the master" in msg and "never connected" in msg
            assert "(ports [0, 1] are down)" in msg
        else:
            assert f"no socket at {links[0].socket} after 3 s" in msg
            assert "the DUT is the master" in msg
        assert took < 3 + 30, took
    finally:
        gen.close()
    assert_nothing_left(plain_lab, gen, prefix, workdir)
    assert os.listdir(os.path.dirname(links[0].socket)) == []


CRASH_CHILD = r"""
import json, sys, time
from fwdbench.campaign import build_campaign
from fwdbench.testbed.netns import NetnsTestbed
c = build_campaign(json.loads(sys.argv[1]), "crash")
tb = NetnsTestbed(c).__enter__()
cm = tb.scenario(c.scenarios[0])
execute, record = cm.__enter__()
r = execute(0.5, 5000, 0, False)
print(json.dumps({"run_id": tb.lab.run_id, "tx": r.tx_packets, "rx": r.rx_packets,
                  "prefix": tb.generator.server.cfg.prefix,
                  "sockets": [m["socket"] for m in record["memif"]],
                  "pids": tb.generator.server.proc.pid}), flush=True)
time.sleep(600)
"""


def test_a_killed_run_on_memif_leaves_nothing_after_lab_down_all(trex_install):
    """A run killed mid-scenario (SIGKILL: no clean-up of its own) with TRex on the
    memif link and vfwd connected: `fwdbench lab down --all` leaves no TRex, no
    DUT, no socket, no DPDK runtime file or shared memory of the run."""
    cpus = sorted(os.sched_getaffinity(0))
    raw = {"campaign": {"name": "crash"},
           "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1]},
           "trial": {"duration": "1s", "warmup": "0s"}, "generator": {"type": "trex"},
           "dut": [{"name": "v", "type": "vfwd", "link": "memif",
                    "params": {"mode": "router"}}],
           "profile": [{"name": "p"}], "search": {"type": "sweep", "loads": [5000]}}
    child = subprocess.Popen([sys.executable, "-c", CRASH_CHILD, json.dumps(raw)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.poll() is not None else "no output"
        info = json.loads(line)
        rid = info["run_id"]
        assert info["tx"] >= 2500 and info["rx"] == info["tx"]
        procs = trex_procs(f"fb-{rid}-tg") + ns_pids(f"fb-{rid}-dut")
        assert procs and all(os.path.exists(s) for s in info["sockets"])
        assert os.path.exists(f"/var/run/dpdk/{info['prefix']}")
        child.kill()
        child.wait(10)
        down = subprocess.run([sys.executable, "-m", "fwdbench.cli", "lab", "down", "--all"],
                              capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert not os.path.exists(f"/run/netns/fb-{rid}-tg")
    assert all(proc_state(p) in (None, "Z") for p in procs)
    assert not any(os.path.exists(s) for s in info["sockets"])
    assert not os.path.exists(f"/run/fwdbench/{rid}.d")
    assert not dpdk_leftovers(rid)
