"""The netns lab: addressing plan, config validation, and (root) build, tuning,
teardown that leaves nothing behind, crash cleanup that only touches dead runs."""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fwdbench.errors import LabError
from fwdbench.lab import (BENCH_NET4, BENCH_NET6, FLOW_NETS, PORTS, CommandError, Executor, Lab,
                          LabConfig, down_all, down_lab, list_labs)
from fwdbench.lab import cleanup, rt_throttling

CPUS = sorted(os.sched_getaffinity(0))
GEN, DUTC = CPUS[0], CPUS[-1]


# --- no root ----------------------------------------------------------------------
def test_addressing_plan_uses_only_benchmark_ranges():
    n4, n6 = ipaddress.ip_network(BENCH_NET4), ipaddress.ip_network(BENCH_NET6)
    nets = []
    for p in PORTS:
        for e in (p.tg, p.dut):
            assert ipaddress.ip_address(e.ip4) in n4 and ipaddress.ip_address(e.ip6) in n6
            assert e.mac.startswith("02:fb:")
            assert ipaddress.ip_interface(e.cidr4).network == ipaddress.ip_network(p.net4)
            assert ipaddress.ip_interface(e.cidr6).network == ipaddress.ip_network(p.net6)
        nets += [ipaddress.ip_network(x) for x in (p.net4, p.flows4, p.net6, p.flows6)]
    for i, a in enumerate(nets):          # link nets and flow ranges never overlap
        assert a.subnet_of(n4 if a.version == 4 else n6)
        for b in nets[i + 1:]:
            assert a.version != b.version or not a.overlaps(b)
    assert FLOW_NETS["ip4"] == ("198.18.128.0/17", "198.19.128.0/17")
    assert FLOW_NETS["ip6"] == ("2001:2:0:10::/64", "2001:2:0:11::/64")
    assert (PORTS[0].tg_ifname, PORTS[1].dut_ifname, PORTS[0].dut_mac) == ("tg0", "dut1", "02:fb:00:00:01:01")


@pytest.mark.parametrize("kw, words", [
    ({"run_id": "Bad_ID"}, "lab.run_id: 'Bad_ID'"),
    ({"run_id": "x" * 13}, "lab.run_id"),
    ({"gen_cpu": -1}, "lab.gen_cpu: -1"),
    ({"dut_cpu": True}, "lab.dut_cpu: True"),
    ({"mtu": 100}, "lab.mtu: 100"),
    ({"napi_rt_priority": 100}, "lab.napi_rt_priority: 100"),
])
def test_config_validates_on_construction(kw, words):
    with pytest.raises(LabError, match=words.replace("(", r"\(").replace("[", r"\[")):
        LabConfig(**kw)


def test_executor_builds_netns_argv_and_rejects_shell_strings():
    ex = Executor("fb-abc-tg")
    assert ex.argv(["ip", "link"]) == ["ip", "netns", "exec", "fb-abc-tg", "ip", "link"]
    assert Executor(None).argv(["true"]) == ["true"]
    with pytest.raises(TypeError):
        ex.argv("ip link show")
    with pytest.raises(TypeError):
        ex.argv([])


def test_command_error_names_command_and_stderr():
    with pytest.raises(CommandError) as e:
        Executor(None).run(["sh", "-c", "echo boom >&2; exit 3"])
    assert "exited with 3" in str(e.value) and "boom" in str(e.value) and e.value.returncode == 3
    assert Executor(None).run(["cat"], input="hi").stdout == "hi"
    assert Executor(None).run(["false"], check=False).returncode == 1
    with pytest.raises(LabError, match="not installed"):
        Executor(None).run(["fwdbench-no-such-tool"])
    with pytest.raises(LabError, match="within 0.2 s"):
        Executor(None).run(["sleep", "5"], timeout=0.2)


# --- root -------------------------------------------------------------------------
def _napi_pids(lab) -> list[int]:
    return [n["pid"] for t in lab.tuning for n in t.napi]


def _assert_gone(run_id: str, extra_pids=(), timeout: float = 10.0) -> None:
    """No namespace, state file, process (or NAPI thread) of run ``run_id`` is left."""
    names = (f"fb-{run_id}-tg", f"fb-{run_id}-dut")
    deadline = time.monotonic() + timeout
    while True:
        left = [n for n in names if os.path.exists(f"/run/netns/{n}")]
        pids = [p for p in extra_pids if cleanup.proc_start_time(p) is not None
                and not cleanup._is_zombie(p)]
        state = os.path.exists(cleanup.state_path(run_id))
        if not left and not pids and not state:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"left behind: namespaces {left}, pids {pids}, state file {state}")
        time.sleep(0.05)
    assert run_id not in [i.run_id for i in list_labs()]
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"fb-{run_id}-" not in out


def _host_links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


@pytest.mark.root
def test_lab_up_builds_the_drawing_and_down_leaves_nothing():
    # how fast is bench/lab_setup.py's to measure, not a test's
    lab = Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC))
    try:
        assert (lab.tg_ns, lab.dut_ns) == (f"fb-{lab.run_id}-tg", f"fb-{lab.run_id}-dut")
        st = json.loads(Path(cleanup.state_path(lab.run_id)).read_text())
        assert st["owner_pid"] == os.getpid() and st["namespaces"] == [lab.tg_ns, lab.dut_ns]
        tg_a = json.loads(lab.tg_exec.run(["ip", "-j", "addr"]).stdout)
        dut_a = json.loads(lab.dut_exec.run(["ip", "-j", "addr"]).stdout)
        for addrs, side in ((tg_a, "tg"), (dut_a, "dut")):
            by = {a["ifname"]: a for a in addrs}
            assert set(by) == {"lo", f"{side}0", f"{side}1"}
            for p in PORTS:
                e = getattr(p, side)
                a = by[e.ifname]
                assert a["address"] == e.mac and a["operstate"] == "UP"
                got = {(x["local"], x["prefixlen"]) for x in a["addr_info"]}
                assert got == {(e.ip4, 24), (e.ip6, 64)}          # no link-local address
        # static neighbours both ways, nothing to resolve during trials
        for ex, side, peer in ((lab.tg_exec, "tg", "dut"), (lab.dut_exec, "dut", "tg")):
            neigh = json.loads(ex.run(["ip", "-j", "neigh"]).stdout)
            want = {(getattr(p, peer).ip4, getattr(p, peer).mac) for p in PORTS} | \
                   {(getattr(p, peer).ip6, getattr(p, peer).mac) for p in PORTS}
            assert {(n["dst"], n["lladdr"]) for n in neigh} == want
            assert all("PERMANENT" in n["state"] for n in neigh)
        assert lab.dut_exec.sysctl_get(["net.ipv4.conf.all.rp_filter"]) == {"net.ipv4.conf.all.rp_filter": "0"}
        # no lab interface in the host namespace
        host = _host_links()
        for p in PORTS:
            assert f": {p.tg.ifname}@" not in host and f": {p.dut.ifname}@" not in host
        # tuning: GRO on, threaded NAPI pinned per side
        tun = {t.ifname: t for t in lab.tuning}
        assert set(tun) == {"dut0", "dut1", "tg0", "tg1"}
        for ifn, t in tun.items():
            cpu = DUTC if ifn.startswith("dut") else GEN
            assert t.gro and t.threaded and t.napi
            for n in t.napi:
                assert os.sched_getaffinity(n["pid"]) == {cpu}
                assert Path(f"/proc/{n['pid']}/comm").read_text().strip() == f"napi/{ifn}-{n['napi_id']}"
        assert "generic-receive-offload: on" in lab.dut_exec.run(["ethtool", "-k", "dut0"]).stdout
        assert lab.dut_exec.read_sysfs("/sys/class/net/dut1/threaded") in ("1", "enabled")
        d = lab.describe()
        assert d["placement"]["gen_cpu"] == GEN and d["placement"]["dut_cpu"] == DUTC
        assert d["kernel"]["release"] == os.uname().release and len(d["tuning"]) == 4
        napi = _napi_pids(lab)
        sleeper = lab.dut_exec.popen(["sleep", "300"])
    finally:
        lab.down()
    lab.down()                                                        # idempotent
    sleeper.wait(timeout=5)
    _assert_gone(lab.run_id, extra_pids=napi + [sleeper.pid])


@pytest.mark.root
def test_interface_counters_count_frames(lab):
    from scapy.all import IP, UDP, Ether, Raw, sendp
    from scapy.arch.linux import L2Socket
    from fwdbench.lab.netlink import in_netns
    time.sleep(0.2)                 # the MLD reports of lab up (10 ms interval) are out
    before = lab.interface_counters("dut")
    with in_netns(lab.tg_ns):
        s = L2Socket(iface="tg0")
    try:
        # 7 frames of an EtherType nobody handles, 3 IPv4 frames to a MAC that is not dut0's
        sendp(Ether(src=PORTS[0].tg.mac, dst=PORTS[0].dut.mac, type=0x88B5) / Raw(b"x" * 60),
              socket=s, count=7, verbose=False)
        sendp(Ether(src=PORTS[0].tg.mac, dst="02:fb:00:00:00:99") /
              IP(src="198.18.128.1", dst="198.19.128.1") / UDP() / Raw(b"y" * 18),
              socket=s, count=3, verbose=False)
    finally:
        s.close()
    after = lab.interface_counters(lab.dut_ns)
    delta = {k: after["dut0"][k] - before["dut0"][k] for k in after["dut0"]}
    assert delta["rx_packets"] == 10
    assert delta["rx_bytes"] == 7 * 74 + 3 * 60
    assert delta["rx_dropped"] == 7                 # no protocol handler
    assert delta["rx_otherhost_dropped"] == 3
    assert set(after) == {"dut0", "dut1"} and set(lab.interface_counters("tg")) == {"tg0", "tg1"}
    with pytest.raises(LabError):
        lab.interface_counters("fb-other-dut")


@pytest.mark.root
def test_executor_sysctl_is_per_namespace(lab):
    host = Executor(None).sysctl_get(["net.ipv4.ip_forward"])
    lab.dut_exec.sysctl_set({"net.ipv4.ip_forward": 1})
    assert lab.dut_exec.sysctl_get(["net.ipv4.ip_forward"])["net.ipv4.ip_forward"] == "1"
    assert lab.tg_exec.sysctl_get(["net.ipv4.ip_forward"])["net.ipv4.ip_forward"] == "0"
    assert Executor(None).sysctl_get(["net.ipv4.ip_forward"]) == host
    assert "dut0" in lab.dut_exec.read_proc_net("dev") and "tg0" not in lab.dut_exec.read_proc_net("dev")
    with pytest.raises(LabError, match=r"sysctl no.such=1 in netns fb-"):
        lab.dut_exec.sysctl_set({"no.such": 1})


@pytest.mark.root
def test_context_manager_tears_down_on_exception():
    with pytest.raises(RuntimeError, match="boom"):
        with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, kernel_tuning=False)) as lab:
            assert os.path.exists(f"/run/netns/{lab.tg_ns}")
            raise RuntimeError("boom")
    _assert_gone(lab.run_id)


@pytest.mark.root
def test_run_id_collision_is_refused_and_leaves_the_first_lab(lab):
    with pytest.raises(LabError, match="already exists"):
        Lab.up(LabConfig(run_id=lab.run_id, gen_cpu=GEN, dut_cpu=DUTC))
    assert os.path.exists(f"/run/netns/{lab.dut_ns}") and os.path.exists(cleanup.state_path(lab.run_id))


@pytest.mark.root
def test_unavailable_cpu_is_refused():
    with pytest.raises(LabError, match="lab.dut_cpu: CPU 4095 is not available"):
        Lab.up(LabConfig(dut_cpu=4095))


CHILD = r"""
import json, signal, sys, time
from fwdbench.lab import Lab, LabConfig
# as a shell starts a command: a parent that ignores SIGHUP (nohup) would
# pass that on, and the lab rightly leaves an ignored signal alone
for s in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_DFL)
lab = Lab.up(LabConfig(gen_cpu=int(sys.argv[1]), dut_cpu=int(sys.argv[2])))
p = lab.tg_exec.popen(["sleep", "300"])
napi = [n["pid"] for t in lab.tuning for n in t.napi]
print(json.dumps({"run_id": lab.run_id, "sleeper": p.pid, "napi": napi}), flush=True)
time.sleep(300)
"""


def _spawn_child():
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(GEN), str(DUTC)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        pytest.fail(f"child did not build a lab: {proc.stderr.read()}")
    return proc, json.loads(line)


@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_child_cleans_up_itself_on_signal(sig):
    proc, info = _spawn_child()
    try:
        assert os.path.exists(f"/run/netns/fb-{info['run_id']}-tg")
        proc.send_signal(sig)
        rc = proc.wait(timeout=15)
    finally:
        proc.kill()
    assert rc != 0
    _assert_gone(info["run_id"], extra_pids=[info["sleeper"]] + info["napi"])


@pytest.mark.root
def test_sigkilled_run_is_left_over_and_down_all_removes_only_it(lab):
    dead, dinfo = _spawn_child()
    live, linfo = _spawn_child()
    try:
        dead.kill()                                     # SIGKILL: no chance to clean up
        dead.wait(timeout=5)
        rid = dinfo["run_id"]
        labs = {i.run_id: i for i in list_labs()}
        assert labs[rid].leftover and not labs[rid].alive and labs[rid].namespaces
        assert labs[linfo["run_id"]].alive and not labs[linfo["run_id"]].leftover
        assert labs[lab.run_id].alive
        assert cleanup.proc_start_time(dinfo["sleeper"]) is not None   # still running in the netns
        ours = [rid, linfo["run_id"], lab.run_id]
        assert down_all(ours) == [rid]
        _assert_gone(rid, extra_pids=[dinfo["sleeper"]] + dinfo["napi"])
        # the live labs (another process's and ours) are untouched, also by an unrestricted call
        assert rid not in down_all()
        for r in (linfo["run_id"], lab.run_id):
            assert os.path.exists(f"/run/netns/fb-{r}-tg") and os.path.exists(f"/run/netns/fb-{r}-dut")
            assert os.path.exists(cleanup.state_path(r))
        assert cleanup.proc_start_time(linfo["sleeper"]) is not None
        assert lab.interface_counters("dut")["dut0"]["rx_packets"] >= 0
    finally:
        live.terminate()
        live.wait(timeout=15)
        dead.kill()
    _assert_gone(linfo["run_id"], extra_pids=[linfo["sleeper"]])


@pytest.mark.root
def test_down_all_ignores_foreign_fb_namespaces():
    name = f"fb-zz{os.getpid() % 100000}-tg"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        info = [i for i in list_labs() if name in i.namespaces]
        assert info and not info[0].has_state and not info[0].leftover
        down_all([info[0].run_id])
        assert os.path.exists(f"/run/netns/{name}")
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)


@pytest.mark.root
def test_persistent_lab_survives_down_all_until_down_lab():
    lab = Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, persistent=True, kernel_tuning=False))
    try:
        info = {i.run_id: i for i in list_labs()}[lab.run_id]
        assert info.persistent and not info.leftover and info.owner_pid is None
        down_all([lab.run_id])
        assert os.path.exists(f"/run/netns/{lab.dut_ns}")
        again = Lab.attach(lab.run_id)
        assert again.dut_ns == lab.dut_ns and again.interface_counters("dut")
    finally:
        down_lab(lab.run_id)
    _assert_gone(lab.run_id)
    with pytest.raises(LabError, match="no lab with run id"):
        down_lab(lab.run_id)


@pytest.mark.root
def test_lab_up_plus_linux_router_forwards_and_leaves_nothing():
    """The set-up bench/lab_setup.py times: a lab, the Linux router in it."""
    from fwdbench.dut.linux import LinuxDut
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC)) as lab:
        d = LinuxDut({"mode": "router"})
        d.setup(lab.dut_host())
        fwd = lab.dut_exec.run(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip()
        d.teardown()
        run_id = lab.run_id
    assert fwd == "1"
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"fb-{run_id}-" not in out


@pytest.mark.root
def test_foreign_namespace_with_our_name_is_not_touched():
    rid = f"zy{os.getpid() % 100000}"
    foreign = f"fb-{rid}-dut"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        with pytest.raises(LabError, match="already exists but has no lab of ours"):
            Lab.up(LabConfig(run_id=rid, gen_cpu=GEN, dut_cpu=DUTC))
        assert os.path.exists(f"/run/netns/{foreign}")
        assert not os.path.exists(f"/run/netns/fb-{rid}-tg")
        assert not os.path.exists(cleanup.state_path(rid))
    finally:
        subprocess.run(["ip", "netns", "del", foreign], check=True)


@pytest.mark.root
def test_ipv4_only_lab_without_tuning():
    from fwdbench.dut.linux import LinuxDut
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, ipv6=False, kernel_tuning=False)) as lab:
        a = json.loads(lab.dut_exec.run(["ip", "-j", "addr", "show", "dut0"]).stdout)[0]
        assert [x["family"] for x in a["addr_info"]] == ["inet"]
        assert lab.tuning == [] and lab.describe()["kernel_tuning"] is False
        assert lab.dut_exec.read_sysfs("/sys/class/net/dut0/threaded") in ("0", "disabled")
        for params in ({"mode": "router", "routes": 16}, {"mode": "nat"}, {"mode": "bridge"}):
            d = LinuxDut(params)
            d.setup(lab.dut_host())
            assert "ipv6" not in d.describe().get("fib", {})
            d.teardown()
    _assert_gone(lab.run_id)


@pytest.mark.root
def test_napi_threads_can_get_realtime_priority():
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, napi_rt_priority=50)) as lab:
        pids = _napi_pids(lab)
        assert len(pids) == 4
        for pid in pids:
            assert os.sched_getscheduler(pid) == os.SCHED_FIFO
            assert os.sched_getparam(pid).sched_priority == 50
        assert lab.describe()["napi_rt_priority"] == 50


RT_KNOB = rt_throttling.RT_RUNTIME
CHILD_RT = CHILD.replace("dut_cpu=int(sys.argv[2])", "dut_cpu=int(sys.argv[2]), napi_rt_priority=50")


@pytest.mark.root
@pytest.mark.skipif(not rt_throttling.kernel_has_fair_server(), reason="kernel < 6.12")
def test_rt_throttling_is_lifted_while_up_and_restored_even_after_a_crash():
    before = open(RT_KNOB).read().strip()
    assert before != "-1", "another lab (or the admin) lifted RT throttling already"
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC, napi_rt_priority=50)) as lab:
        assert open(RT_KNOB).read().strip() == "-1"
        assert cleanup.read_state(lab.run_id)[rt_throttling.KEY] == int(before)
        assert "lifted" in lab.describe()["rt_throttling"]
    assert open(RT_KNOB).read().strip() == before
    # a SIGKILLed run leaves it lifted; `lab down --all` restores it with the namespaces
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.Popen([sys.executable, "-c", CHILD_RT, str(GEN), str(DUTC)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline() or "{}")
        assert info, proc.stderr.read()
        proc.kill()
        proc.wait(timeout=5)
        assert open(RT_KNOB).read().strip() == "-1"
        assert down_all([info["run_id"]]) == [info["run_id"]]
    finally:
        proc.kill()
    assert open(RT_KNOB).read().strip() == before
    # without FIFO NAPI threads nothing is touched
    with Lab.up(LabConfig(gen_cpu=GEN, dut_cpu=DUTC)) as lab:
        assert open(RT_KNOB).read().strip() == before
        assert lab.describe()["rt_throttling"] == "left alone"
