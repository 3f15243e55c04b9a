"""The `testpmd` DUT: parsers on recorded output, validation, and (root)
forwarding on the wire with scapy, counters and cleanup."""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys

import pytest

from fwdbench.dut.testpmd import (RUN_DIR, DpdkTestpmdDut, _channels, _proc_start,
                                  parse_fwd_stats, parse_port_stats, pmd_available,
                                  stats_complete, sweep_stale_hugepages,
                                  sweep_stale_runtime_dirs)
from fwdbench.errors import CampaignError

from test_xdp_dut_lab import lab_up, need_root, wait_until, wire

DPORT = 4792

# dpdk-testpmd 22.11.11 output (net_af_xdp on veth, prompt included), recorded with its
# spacing; counts edited to non-zero values (drops, misses, errors included).
RECORDED = """testpmd> show port stats all

  ######################## NIC statistics for port 0  ########################
  RX-packets: 257        RX-missed: 3          RX-bytes:  15420
  RX-errors: 0
  RX-nombuf:  0         
  TX-packets: 1          TX-errors: 0          TX-bytes:  60

  Throughput (since last show)
  Rx-pps:          120          Rx-bps:        57600
  Tx-pps:            0          Tx-bps:            0
  ############################################################################

  ######################## NIC statistics for port 1  ########################
  RX-packets: 1          RX-missed: 0          RX-bytes:  60
  RX-errors: 0
  RX-nombuf:  0         
  TX-packets: 257        TX-errors: 2          TX-bytes:  15420

  Throughput (since last show)
  Rx-pps:            0          Rx-bps:            0
  Tx-pps:          120          Tx-bps:        57600
  ############################################################################
testpmd> show fwd stats all

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 257            RX-dropped: 0             RX-total: 257
  TX-packets: 1              TX-dropped: 0             TX-total: 1
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 1              RX-dropped: 0             RX-total: 1
  TX-packets: 255            TX-dropped: 2             TX-total: 257
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 258            RX-dropped: 0             RX-total: 258
  TX-packets: 256            TX-dropped: 2             TX-total: 258
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
testpmd> """

ETHTOOL_L = """Channel parameters for dut0:
Pre-set maximums:
RX:\t\t2
TX:\t\t2
Other:\t\tn/a
Combined:\tn/a
Current hardware settings:
RX:\t\t1
TX:\t\t1
Other:\t\tn/a
Combined:\tn/a
"""


def test_parse_port_stats_recorded():
    s = parse_port_stats(RECORDED)
    assert s["port0.rx_packets"] == 257 and s["port0.rx_missed"] == 3
    assert s["port0.rx_bytes"] == 15420 and s["port1.tx_errors"] == 2
    assert s["port1.tx_packets"] == 257 and s["port0.rx_nombuf"] == 0
    assert not any(k.endswith(("pps", "bps")) for k in s)
    assert set(s) >= {"port0.rx_packets", "port0.rx_missed", "port1.tx_errors"}
    assert len(s) == 16


def test_parse_fwd_stats_recorded():
    s = parse_fwd_stats(RECORDED)
    assert s["port1.fwd.tx_dropped"] == 2 and s["port1.fwd.tx_packets"] == 255
    assert s["port0.fwd.rx_packets"] == 257
    assert s["fwd.rx_total"] == 258 and s["fwd.tx_dropped"] == 2


def test_stats_complete_waits_for_the_last_block():
    cut = RECORDED.index("TX-packets: 256")
    assert not stats_complete(RECORDED[:cut])
    assert stats_complete(RECORDED)


def test_channels_parse():
    assert _channels(ETHTOOL_L) == (2, 1)
    assert _channels("garbage") is None


def test_validate_defaults():
    p = DpdkTestpmdDut.validate({}, "dut[1].params")
    assert p["mode"] == "mac" and p["pmd"] == "auto" and p["burst"] == 32
    assert p["mbufs"] == 32768 and p["memory_mb"] == 1024


@pytest.mark.parametrize("params, field, words", [
    ({"mode": "csum"}, "dut[1].params.mode", ["'csum'", "io", "mac"]),
    ({"pmd": "vhost"}, "dut[1].params.pmd", ["af_xdp", "af_packet"]),
    ({"burst": 513}, "dut[1].params.burst", ["512"]),
    ({"rxd": 32}, "dut[1].params.rxd", ["64"]),
    ({"queues": 4096}, "dut[1].params.queues", ["64"]),
    ({"queues": (os.cpu_count() or 1) + 1}, "dut[1].params.queues", ["veth"]),
    ({"cores": 3, "queues": 1}, "dut[1].params", ["queues"]),
    ({"mbufs": 1 << 20, "memory_mb": 256}, "dut[1].params", ["memory_mb"]),
    ({"rings": 2}, "dut[1].params.rings", ["unknown key", "allowed keys: mode, pmd, cores"]),
    ({"pmd": "af_xdp", "queues": 2}, "dut[1].params.queues", ["af_packet"]),
])
def test_validate_rejects(params, field, words):
    with pytest.raises(CampaignError) as ei:
        DpdkTestpmdDut.validate(params, "dut[1].params")
    msg = str(ei.value)
    assert field in msg, msg
    for w in words:
        assert w in msg, msg


def test_sweep_stale_runtime_dirs(tmp_path):
    import fcntl
    stale = tmp_path / "fwdbench-dead"
    live = tmp_path / "fwdbench-live"
    other = tmp_path / "someone-else"
    for d in (stale, live, other):
        d.mkdir()
        (d / "config").write_bytes(b"\0" * 64)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(live / 'config')!r}, os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(30)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert sweep_stale_runtime_dirs(str(tmp_path)) == ["fwdbench-dead"]
        assert not stale.exists() and live.exists() and other.exists()
    finally:
        holder.kill()
        holder.wait()
    del fcntl


def test_sweep_stale_hugepages_only_touches_dead_owners(tmp_path):
    me = os.getpid()
    for name, pid, start in (("fwdbench-alive", me, _proc_start(me)),
                             ("fwdbench-dead", me, 1),             # pid reused: start differs
                             ("fwdbench-gone", 2 ** 22 + 7, 5)):
        (tmp_path / name).mkdir()
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"prefix": name, "owner_pid": pid, "owner_start": start, "added": 0,
             "mount": str(tmp_path / name)}))
    assert sweep_stale_hugepages(str(tmp_path)) == ["fwdbench-dead", "fwdbench-gone"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fwdbench-alive", "fwdbench-alive.json"]
    (tmp_path / "fwdbench-alive.json").write_text(json.dumps(
        {"prefix": "fwdbench-alive", "owner_pid": 2 ** 22 + 7, "owner_start": 5, "added": 0,
         "mount": str(tmp_path / "fwdbench-alive")}))
    assert sweep_stale_hugepages(str(tmp_path)) == ["fwdbench-alive"]
    assert not tmp_path.exists()                     # the emptied root goes too


# ---- root: forwarding on the wire ----------------------------------------------


@pytest.fixture(scope="module")
def lab():
    need_root()
    pytest.importorskip("scapy")
    drv = DpdkTestpmdDut({})
    try:
        drv.check()
    except Exception as e:
        pytest.skip(str(e))
    with lab_up() as lab:
        yield lab


@pytest.fixture
def testpmd(lab):
    made = []

    def make(**params):
        d = DpdkTestpmdDut(DpdkTestpmdDut.validate(params, "dut[0].params"))
        d.setup(lab.dut_host())
        made.append(d)
        return d

    yield make
    for d in made:
        d.teardown()
        _assert_clean(lab, d)


def _assert_clean(lab, d) -> None:
    prefix = d.describe()["file_prefix"]
    assert not os.path.exists(f"{RUN_DIR}/{prefix}")
    with open("/proc/mounts") as f:
        assert prefix not in f.read()                # private hugetlbfs unmounted
    assert not glob.glob(f"/run/fwdbench-dpdk/{prefix}*")
    assert subprocess.run(["pgrep", "-f", prefix], capture_output=True).returncode == 1
    links = json.loads(lab.dut_exec.run(["ip", "-j", "-d", "link", "show"]).stdout)
    for link in links:
        if link["ifname"] in ("dut0", "dut1"):
            assert "PROMISC" not in link["flags"], link["ifname"]
            assert not link.get("xdp"), f"{link['ifname']}: {link.get('xdp')}"
    assert "RX:\t\t1" in lab.dut_exec.run(["ethtool", "-l", "dut0"]).stdout.split("Current")[1]


def _udp4(lab, port_in: int, i: int = 0):
    from scapy.all import IP, UDP, Ether, Raw
    p = lab.ports[port_in]
    src, dst = ("198.18.128.1", "198.19.128.9") if port_in == 0 else \
        ("198.19.128.9", "198.18.128.1")
    f = Ether(src=p.tg_mac, dst=p.dut_mac) / IP(src=src, dst=dst, id=i) / \
        UDP(sport=1024, dport=DPORT)
    return bytes(f / Raw(b"\x33" * (60 - len(f))))


def _d(before, after, key):
    return after[key] - before[key]


@pytest.mark.root
@pytest.mark.parametrize("burst", [257, 2])
def test_io_forwards_unchanged(lab, testpmd, burst):
    d = testpmd(mode="io")
    assert d.describe()["pmd_used"] == ("af_xdp" if pmd_available("af_xdp") else "af_packet")
    assert d.describe()["peer_macs"] == {"tg0": lab.ports[1].tg_mac, "tg1": lab.ports[0].tg_mac}
    before = d.counters()
    frames = [_udp4(lab, 0, i) for i in range(burst)]
    got = wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"]
    assert got == frames
    back = [_udp4(lab, 1)]
    assert wire(lab, "tg1", back, ["tg0"], DPORT)["tg0"] == back
    after = d.counters()
    assert _d(before, after, "port0.rx_packets") == burst
    assert _d(before, after, "port1.tx_packets") == burst
    assert _d(before, after, "port1.rx_packets") == 1
    assert _d(before, after, "fwd.tx_dropped") == 0
    assert _d(before, after, "port0.rx_bytes") == 60 * burst


@pytest.mark.root
def test_mac_mode_rewrites_macs(lab, testpmd):
    from scapy.all import Ether
    d = testpmd(mode="mac", burst=64, hugepages="off", rxd=512, txd=1024)
    assert d.describe()["memory"]["hugepages"] is False
    assert {"--rxd=512", "--txd=1024"} <= set(d.describe()["argv"])
    before = d.counters()
    frames = [_udp4(lab, 0, i) for i in range(2)]
    got = wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"]
    assert len(got) == 2
    for sent, raw in zip(frames, got):
        assert Ether(raw).src == lab.ports[1].dut_mac
        assert Ether(raw).dst == lab.ports[1].tg_mac
        assert raw[12:] == sent[12:]
    assert _d(before, d.counters(), "port1.tx_packets") == 2
    assert d.pids() and all(isinstance(x, int) for x in d.pids())


@pytest.mark.root
def test_af_packet_two_queues(lab, testpmd):
    if not pmd_available("af_packet"):
        pytest.skip("net_af_packet not installed")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("two queues need two CPUs (veth queues)")
    d = testpmd(mode="io", queues=2)               # auto: net_af_packet for 2 queues
    assert d.describe()["pmd_used"] == "af_packet"
    assert "RX:\t\t2" in lab.dut_exec.run(["ethtool", "-l", "dut0"]).stdout.split("Current")[1]
    frames = [_udp4(lab, 0, i) for i in range(2)]
    assert wire(lab, "tg0", frames, ["tg1"], DPORT)["tg1"] == frames


_CRASH_CHILD = r"""
import json, os, sys, time
from fwdbench.dut.testpmd import DpdkTestpmdDut
from fwdbench.lab import Lab, LabConfig
cpus = sorted(os.sched_getaffinity(0))
lab = Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1]))
d = DpdkTestpmdDut(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {"mode": "io"})
d.setup(lab.dut_host())
print(json.dumps({"run_id": lab.run_id, "dut_ns": lab.dut_ns,
                  "prefix": d.describe()["file_prefix"], "pid": d.pids()[0]}), flush=True)
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return True
    return data[data.rindex(")") + 2] == "Z"


@pytest.mark.root
def test_testpmd_quits_with_a_crashed_driver(lab):
    from fwdbench.lab import Executor, down_all
    child = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD], stdout=subprocess.PIPE,
                             text=True)
    info = None
    try:
        info = json.loads(child.stdout.readline())
        assert not _gone(info["pid"])
        child.send_signal(signal.SIGKILL)            # the driver dies mid-run
        child.wait(timeout=10)
        # testpmd reads EOF on its stdin and quits cleanly by itself
        assert wait_until(lambda: _gone(info["pid"]), timeout=20), "testpmd outlived its driver"
        dut = Executor(info["dut_ns"])
        links = json.loads(dut.run(["ip", "-j", "-d", "link", "show"]).stdout)
        assert not any(link.get("xdp") for link in links if link["ifname"] in ("dut0", "dut1"))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if info:
            assert down_all([info["run_id"]]) == [info["run_id"]]   # crash cleanup of the lab
    # the next setup (here in the module's lab) removes the crashed run's runtime dir
    assert os.path.exists(f"{RUN_DIR}/{info['prefix']}")
    d = DpdkTestpmdDut({"mode": "io"})
    d.setup(lab.dut_host())
    try:
        assert not os.path.exists(f"{RUN_DIR}/{info['prefix']}")
        assert any(info["prefix"] in w for w in d.describe()["warnings"])
    finally:
        d.teardown()
    assert not os.path.exists(f"{RUN_DIR}/{d.describe()['file_prefix']}")


@pytest.mark.root
def test_lab_down_all_gives_back_a_crashed_runs_hugepages(lab):
    """A driver killed with hugepages reserved for its testpmd: `fwdbench lab down
    --all` removes its runtime directory, unmounts its hugetlbfs and gives the pages
    back, as the next testpmd setup would."""
    def nr() -> int:
        with open("/proc/sys/vm/nr_hugepages") as f:
            return int(f.read())
    params = {"mode": "io", "memory_mb": 128, "hugepages": "reserve"}
    before = nr()
    child = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD, json.dumps(params)],
                             stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(child.stdout.readline())
        prefix = info["prefix"]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert wait_until(lambda: _gone(info["pid"]), timeout=20)
        with open("/proc/mounts") as f:
            assert f"/run/fwdbench-dpdk/{prefix} " in f.read()
        with open(f"/run/fwdbench-dpdk/{prefix}.json") as f:
            added = json.load(f)["added"]
        assert os.path.exists(f"{RUN_DIR}/{prefix}") and nr() == before + added
        down = subprocess.run([sys.executable, "-m", "fwdbench.cli", "lab", "down", "--all"],
                              capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    out = " ".join(down.stdout.split())
    assert f"DPDK runtime directories {prefix}" in out and \
        f"the hugepages reserved for {prefix}" in out, out
    assert nr() == before
    with open("/proc/mounts") as f:
        assert prefix not in f.read()
    assert not glob.glob(f"/run/fwdbench-dpdk/{prefix}*")
    assert not os.path.exists(f"{RUN_DIR}/{prefix}")
    assert not os.path.exists(f"/run/netns/{info['dut_ns']}")

