"""The `vpp` DUT driver: validation, startup.conf, and (root, a real VPP) every mode
forwarding the right frames in the lab, checked on the wire with scapy; the FIB
at scale, per-trial statistics, a crashed and a wedged VPP, and no leftovers.

VPP comes from FD.io's packages or fwdbench's build (`make test VPP_SRC=...`).
Without one these tests skip, except under CI=true, where a missing VPP fails.
"""
from __future__ import annotations

import ipaddress
import os
import signal
import time

import pytest

from fwdbench.dut import load_drivers
from fwdbench.dut.vpp import VppDut, find_vpp
from fwdbench.dut.vpp.startup import Startup, plugins_for
from fwdbench.errors import CampaignError, DutError
from fwdbench.lab import PORTS, rt_throttling

P0, P1 = PORTS
MARK = b"fwdbench-test"


def need_vpp():
    try:
        return find_vpp()
    except DutError as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no VPP: {e}")
        pytest.skip(str(e))


# --- plan time (no root) -----------------------------------------------------
def test_registered():
    assert load_drivers()["vpp"] is VppDut


@pytest.mark.parametrize("params, words", [
    ({"mode": "nat6"}, "dut[0].params.mode: 'nat6' is not allowed"),
    ({"routes": 0}, "dut[0].params.routes: 0 is too small; allowed: 1..1048576"),
    ({"mode": "xconnect", "routes": 4}, "dut[0].params.routes: does not apply to mode 'xconnect'"),
    ({"mode": "router", "learning": False}, "dut[0].params.learning: does not apply to mode 'router'"),
    ({"mode": "router", "nat_sessions": 4096}, "dut[0].params.nat_sessions: does not apply"),
    ({"interface": "af_packet", "af_xdp_mode": "copy"}, "dut[0].params.af_xdp_mode: applies to"),
    ({"interface": "netmap"}, "dut[0].params.interface: 'netmap' is not allowed"),
    ({"rx_mode": "busy"}, "dut[0].params.rx_mode"),
    ({"workers": -1}, "dut[0].params.workers"),
    ({"bogus": 1}, "dut[0].params.bogus: unknown key"),
])
def test_validate_errors_name_the_field(params, words):
    with pytest.raises(CampaignError) as e:
        VppDut.validate(params, "dut[0].params")
    assert words in str(e.value)


def test_validate_normalises_and_is_idempotent():
    p = VppDut.validate({"mode": "nat", "routes": 8}, "p")
    assert p["mode"] == "nat" and p["routes"] == 8 and p["interface"] == "af_xdp"
    assert VppDut.validate(p, "p") == p


def test_startup_conf_is_private_to_the_scenario():
    s = Startup(run_dir="/run/fwdbench/x.d/vpp-1", shm_prefix="fb-x-vpp1",
                plugin_dir="/opt/v/lib/vpp_plugins", plugins=plugins_for("af_xdp", "nat"),
                main_core=1, workers=(1,), main_heap=300 << 20, buffers=16384)
    text = s.render()
    for line in ("runtime-dir /run/fwdbench/x.d/vpp-1", "cli-listen /run/fwdbench/x.d/vpp-1/cli.sock",
                 "socket-name /run/fwdbench/x.d/vpp-1/api.sock", "prefix fb-x-vpp1",
                 "main-core 1", "corelist-workers 1", "main-heap-size 300M",
                 "buffers-per-numa 16384", "plugin default { disable }",
                 "plugin af_xdp_plugin.so { enable }", "plugin nat_plugin.so { enable }",
                 "update-interval 86400"):
        assert line in text, line
    # the stats collector parked: its passes stall the main thread (runtime.py)
    assert "per-node-counters" not in text
    assert "af_packet" not in text and "memif" not in text
    assert plugins_for("af_packet", "bridge") == ("ping", "af_packet")
    assert "scheduler-policy" not in text
    # on the lab's memif link: the polling threads at the lab's FIFO priority
    fifo = Startup(run_dir="/r", shm_prefix="fb-x", plugin_dir="/p", plugins=("memif",),
                   main_core=1, workers=(), main_heap=1 << 28, buffers=16384,
                   fifo_priority=50).render()
    assert "main-core 1\n  scheduler-policy fifo\n  scheduler-priority 50\n" in fifo


def test_startup_conf_dpdk_section_for_vdevs_and_pci_devices():
    from fwdbench.dut.vpp.startup import DpdkPorts
    vdevs = DpdkPorts(file_prefix="fb-x-vpp1", vdevs=("net_af_packet0,iface=dut0",
                                                      "net_af_packet1,iface=dut1"))
    s = Startup(run_dir="/r", shm_prefix="fb-x-vpp1", plugin_dir="/p",
                plugins=plugins_for("dpdk", "router"), main_core=1, workers=(), main_heap=1 << 28,
                buffers=16384, dpdk=vdevs)
    text = s.render()
    assert "plugin dpdk_plugin.so { enable }" in text
    section = text[text.index("dpdk {"):]
    assert section.splitlines() == [
        "dpdk {", "  file-prefix fb-x-vpp1", "  no-hugetlb", "  no-shconf", "  no-pci",
        "  vdev net_af_packet0,iface=dut0", "  vdev net_af_packet1,iface=dut1", "}"]
    assert vdevs.run_dir == "/var/run/dpdk/fb-x-vpp1"
    # real NICs: PCI functions named as the ports, hugepages, ring sizes
    pci = DpdkPorts(file_prefix="fb-x-vpp1", pci=(("0000:3b:00.0", "dut0"), ("0000:3b:00.1", "dut1")),
                    hugepages=True, rx_desc=2048, tx_desc=1024).render()
    assert pci.splitlines() == [
        "dpdk {", "  file-prefix fb-x-vpp1", "  dev 0000:3b:00.0 { name dut0 }",
        "  dev 0000:3b:00.1 { name dut1 }", "  dev default { num-rx-desc 2048 num-tx-desc 1024 }", "}"]
    # no dpdk section, no dpdk plugin, for the other interfaces
    plain = Startup(run_dir="/r", shm_prefix="p", plugin_dir="/p", plugins=plugins_for("af_xdp", "router"),
                    main_core=1, workers=(), main_heap=1 << 28, buffers=16384).render()
    assert "dpdk" not in plain


def test_fib_sizes_the_heap_and_stats_segment():
    from fwdbench.dut.vpp import VppParams
    small, big = VppParams(), VppParams(routes=1 << 20)
    assert big.heap_bytes() > (1 << 30) > small.heap_bytes()
    assert big.stats_bytes() > small.stats_bytes()
    assert VppParams(mode="xconnect").heap_bytes() == 256 << 20


def test_check_names_a_missing_plugin(tmp_path):
    """A VPP without the plugin a scenario needs is refused before anything runs."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    vpp = bin_ / "vpp"
    vpp.write_text("#!/bin/sh\n")
    vpp.chmod(0o755)
    plugins = tmp_path / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    plugins.mkdir(parents=True)
    (plugins / "af_packet_plugin.so").write_text("")
    with pytest.raises(DutError, match=r"lacks the plugin\(s\) ping, af_xdp that interface"):
        VppDut({"vpp_prefix": str(tmp_path)}).check()
    with pytest.raises(DutError, match="has no executable bin/vpp"):
        VppDut({"vpp_prefix": str(tmp_path / "none")}).check()
    # a VPP built without the dpdk plugin: the field to change and how to add it
    (plugins / "ping_plugin.so").write_text("")
    with pytest.raises(DutError) as e:
        VppDut({"vpp_prefix": str(tmp_path), "interface": "dpdk"}).check()
    assert "lacks the plugin(s) dpdk" in str(e.value) and "dut.params.interface" in str(e.value)
    assert "VPP_SRC" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.root
def test_dpdk_interface_without_the_plugin_is_refused_before_vpp_starts(lab, tmp_path):
    """The installed VPP, its plugin directory without dpdk_plugin.so: a clear error."""
    inst = need_vpp()
    prefix = tmp_path / "vpp"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "vpp").symlink_to(inst.vpp)
    plugins = prefix / os.path.relpath(inst.plugin_dir, inst.prefix)
    plugins.mkdir(parents=True)
    for n in inst.plugins:
        if n != "dpdk":
            (plugins / f"{n}_plugin.so").symlink_to(os.path.join(inst.plugin_dir, f"{n}_plugin.so"))
    d = VppDut(VppDut.validate({"interface": "dpdk", "vpp_prefix": str(prefix)}, "params"))
    with pytest.raises(DutError, match=r"lacks the plugin\(s\) dpdk .*dut.params.interface"):
        d.setup(lab.dut_host())
    _assert_nothing_left(lab)


# --- on the wire (root, real VPP) ----------------------------------------------
def _udp4(src, dst, sport=1024, dport=1024, smac=P0.tg.mac, dmac=P0.dut.mac, ttl=64):
    from scapy.all import IP, UDP, Ether, Raw
    return Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, ttl=ttl) / \
        UDP(sport=sport, dport=dport) / Raw(MARK)


def _udp6(src, dst, smac=P0.tg.mac, dmac=P0.dut.mac, hlim=64):
    from scapy.all import UDP, Ether, IPv6, Raw
    # not port 53: scapy would dissect the payload as DNS and hide the mark
    return Ether(src=smac, dst=dmac) / IPv6(src=src, dst=dst, hlim=hlim) / \
        UDP(sport=1024, dport=1024) / Raw(MARK)


def _ours(p) -> bool:
    from scapy.all import Raw
    return Raw in p and bytes(p[Raw]).endswith(MARK)


def _ipv4_checksum_ok(pkt) -> bool:
    from scapy.all import IP, Ether
    q = Ether(bytes(pkt))
    want = q[IP].chksum
    del q[IP].chksum
    return Ether(bytes(q))[IP].chksum == want


@pytest.fixture
def dut(lab):
    need_vpp()
    made = []

    def make(**params):
        d = VppDut(VppDut.validate(params, "params"))
        d.check()
        d.setup(lab.dut_host())
        made.append(d)
        return d
    yield make
    for d in made:
        d.teardown()
    _assert_nothing_left(lab)


def _assert_nothing_left(lab):
    """No VPP process, shared memory, directory or XDP program of the run."""
    from fwdbench.lab import cleanup
    assert lab.dut_exec.pids() == [], "a process is left in the DUT namespace"
    pre = cleanup.shm_prefix(lab.run_id)
    assert [n for n in os.listdir("/dev/shm") if n.startswith(pre)] == []
    run_dir = cleanup.run_dir(lab.run_id)
    assert not os.path.isdir(run_dir) or os.listdir(run_dir) == []
    for p in lab.ports:
        link = lab.dut_exec.run(["ip", "-d", "link", "show", p.dut.ifname]).stdout
        assert " xdp" not in link and "prog/xdp" not in link, link
    # the dpdk interface: no EAL runtime directory, hugepage file or mount of the run
    assert [n for n in _listdir("/var/run/dpdk") if n.startswith(pre)] == []
    assert [n for n in _listdir("/dev/hugepages") if n.startswith(pre)] == []
    with open("/proc/mounts") as f:
        assert [m for m in f if " hugetlbfs " in m and pre in m] == []


def _listdir(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except FileNotFoundError:
        return []


@pytest.mark.root
@pytest.mark.parametrize("interface", ["af_xdp", "af_packet", "dpdk"])
def test_router_ipv4_forwards_with_ttl_checksum_and_macs(lab, dut, tg_wire, interface):
    """dpdk: VPP's dpdk plugin (linked against Debian's DPDK) on DPDK vdevs on the
    veth ports routes frame by frame as with its own interfaces, counters per port."""
    from scapy.all import IP, UDP, Ether
    if interface == "dpdk":
        _need_dpdk_plugin()
    d = dut(mode="router", interface=interface)
    tg_wire.listen("tg0", "tg1")
    before = d.counters()
    frames = [_udp4(f"198.18.128.{i}", f"198.19.{128 + i}.{i + 1}", ttl=64 - i) for i in range(5)]
    tg_wire.send("tg0", frames)
    got = tg_wire.sniff("tg1", count=5, timeout=3, match=_ours)
    assert len(got) == 5
    for sent, p in zip(frames, got):
        assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
        assert p[IP].ttl == sent[IP].ttl - 1
        assert p[IP].src == sent[IP].src and p[IP].dst == sent[IP].dst
        assert _ipv4_checksum_ok(p)
        assert p[UDP].sport == 1024 and p[UDP].dport == 1024
    after = d.counters()
    delta = {k: after[k] - before.get(k, 0) for k in after}
    # VPP's own interface counters (stats segment) and its per-node runtime (show
    # runtime); its stats collector did not run in between (parked: its passes
    # stall the main thread, which is the data path here)
    assert delta["dut0.rx_packets"] >= 5 and delta["dut1.tx_packets"] >= 5
    assert delta["vpp_node.ip4-lookup.vectors"] >= 5
    assert delta["vpp_node.ip4-rewrite.clocks"] > 0 and delta["vpp_node.ip4-rewrite.calls"] >= 1
    assert delta.get("vpp_node.statseg-collector-process.calls", 0) == 0
    # the reverse direction is routed via tg0 once the FIB has both flow ranges
    desc = d.describe()
    assert desc["version"].startswith("26.") or desc["version"]
    assert desc["interfaces"].keys() == {"dut0", "dut1"}
    assert "main-core" in desc["startup_conf"]
    if interface == "dpdk":
        assert delta["vpp_node.dpdk-input.vectors"] >= 5
        conf = desc["startup_conf"]
        assert "vdev net_af_packet0,iface=dut0" in conf and "no-pci" in conf and \
            "no-hugetlb" in conf
        assert "plugin dpdk_plugin.so { enable }" in conf and "af_xdp_plugin" not in conf


@pytest.mark.root
def test_router_ipv6_forwards_with_hop_limit_and_macs(lab, dut, tg_wire):
    from scapy.all import Ether, IPv6
    dut(mode="router")
    tg_wire.listen("tg1")
    frames = [_udp6("2001:2:0:10::5", f"2001:2:0:11::{i + 1}", hlim=10 + i) for i in range(3)]
    tg_wire.send("tg0", frames)
    got = tg_wire.sniff("tg1", count=3, timeout=3, match=_ours)
    assert len(got) == 3
    for sent, p in zip(frames, got):
        assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
        assert p[IPv6].hlim == sent[IPv6].hlim - 1 and p[IPv6].dst == sent[IPv6].dst


@pytest.mark.root
def test_router_large_fib_installs_and_covers_the_flow_range(lab, dut, tg_wire):
    """65,536 IPv4 routes through the bulk API path (bulk.py): every one installed,
    and destinations spread over the split flow range all arrive, both ways."""
    from scapy.all import IP
    d = dut(mode="router", routes=65536, routes6=64)
    fib = d.describe()["fib"]
    assert fib["ipv4"]["installed"] == 65536 and fib["ipv6"]["installed"] == 64
    # VPP's own count of what its FIB holds (the API's view, not ours)
    routes = d._api.call("ip_route_dump", table={"table_id": 0, "is_ip6": False})
    assert len(routes) >= 65536
    tg_wire.listen("tg0", "tg1")
    dsts = [str(ipaddress.ip_address("198.19.128.0") + k * 4099) for k in range(8)]
    tg_wire.send("tg0", [_udp4("198.18.128.1", a) for a in dsts])
    got = tg_wire.sniff("tg1", count=8, timeout=3, match=_ours)
    assert sorted(p[IP].dst for p in got) == sorted(dsts)
    tg_wire.send("tg1", _udp4("198.19.128.1", "198.18.200.2", smac=P1.tg.mac, dmac=P1.dut.mac))
    back = tg_wire.sniff("tg0", count=1, timeout=3, match=_ours)
    assert len(back) == 1 and back[0][IP].ttl == 63


@pytest.mark.root
def test_nat_rewrites_source_and_return_path(lab, dut, tg_wire):
    from scapy.all import IP, UDP, Ether
    d = dut(mode="nat")
    tg_wire.listen("tg0", "tg1")
    tg_wire.send("tg0", _udp4("198.18.128.7", "198.19.128.9", sport=5000, dport=6000))
    out = tg_wire.sniff("tg1", count=1, timeout=3, match=_ours)
    assert len(out) == 1
    p = out[0]
    assert p[IP].src == P1.dut.ip4 and p[IP].dst == "198.19.128.9"
    assert p[IP].ttl == 63 and _ipv4_checksum_ok(p)
    assert p[Ether].src == P1.dut.mac and p[Ether].dst == P1.tg.mac
    mapped = p[UDP].sport
    tg_wire.send("tg1", _udp4("198.19.128.9", P1.dut.ip4, sport=6000, dport=mapped,
                              smac=P1.tg.mac, dmac=P1.dut.mac))
    back = tg_wire.sniff("tg0", count=1, timeout=3, match=_ours)
    assert len(back) == 1
    r = back[0]
    assert (r[IP].src, r[IP].dst, r[UDP].sport, r[UDP].dport) == \
        ("198.19.128.9", "198.18.128.7", 6000, 5000)
    assert _ipv4_checksum_ok(r)
    assert d.describe()["nat"]["pool"] == P1.dut.ip4
    sessions = d._api.call("nat44_user_dump")
    assert len(sessions) >= 1


@pytest.mark.root
@pytest.mark.parametrize("learning", [True, False])
def test_bridge_passes_frames_unchanged(lab, dut, tg_wire, learning):
    d = dut(mode="bridge", learning=learning)
    tg_wire.listen("tg0", "tg1")
    f1 = _udp4("198.18.128.1", "198.19.128.1", dmac=P1.tg.mac)
    f2 = _udp4("198.19.128.1", "198.18.128.1", smac=P1.tg.mac, dmac=P0.tg.mac)
    stranger = _udp4("198.18.128.2", "198.19.128.2", smac="02:fb:00:00:00:99", dmac=P1.tg.mac)
    tg_wire.send("tg0", [f1, stranger])
    tg_wire.send("tg1", f2)
    got1 = tg_wire.sniff("tg1", count=2, timeout=3, match=_ours)
    got0 = tg_wire.sniff("tg0", count=1, timeout=3, match=_ours)
    assert [bytes(p) for p in got1] == [bytes(f1), bytes(stranger)]
    assert [bytes(p) for p in got0] == [bytes(f2)]
    fib = {str(e.mac).lower(): e for e in d._api.call("l2_fib_table_dump", bd_id=1)}
    if learning:
        assert "02:fb:00:00:00:99" in fib and not fib["02:fb:00:00:00:99"].static_mac
    else:
        assert "02:fb:00:00:00:99" not in fib
        assert fib[P0.tg.mac].static_mac and fib[P1.tg.mac].static_mac
    assert d.describe()["bridge"]["learning"] is learning


@pytest.mark.root
@pytest.mark.parametrize("interface", ["af_xdp", "dpdk"])
def test_xconnect_passes_any_frame_unchanged_both_ways(lab, dut, tg_wire, interface):
    from scapy.all import Ether, Raw
    if interface == "dpdk":
        _need_dpdk_plugin()
    d = dut(mode="xconnect", interface=interface)
    tg_wire.listen("tg0", "tg1")
    before = d.counters()
    odd = Ether(src="02:fb:00:00:00:77", dst="02:fb:00:00:00:78", type=0x88B5) / Raw(b"x" * 50 + MARK)
    f = _udp4("198.18.128.1", "198.19.128.1", dmac=P1.tg.mac, ttl=1)    # TTL 1: not routed
    tg_wire.send("tg0", [f, odd])
    tg_wire.send("tg1", f)
    assert [bytes(p) for p in tg_wire.sniff("tg1", count=2, timeout=3, match=_ours)] == \
        [bytes(f), bytes(odd)]
    assert [bytes(p) for p in tg_wire.sniff("tg0", count=1, timeout=3, match=_ours)] == [bytes(f)]
    after = d.counters()
    assert after["dut0.rx_packets"] - before.get("dut0.rx_packets", 0) >= 2
    assert after["dut1.tx_packets"] - before.get("dut1.tx_packets", 0) >= 2


def _need_dpdk_plugin():
    if "dpdk" not in need_vpp().plugins:
        msg = "the installed VPP has no dpdk plugin (make setup VPP_SRC=...)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {msg}")
        pytest.skip(msg)


@pytest.mark.root
def test_a_crashed_vpp_fails_the_trial_with_its_log_and_leaves_nothing(lab):
    need_vpp()
    d = VppDut(VppDut.validate({}, "p"))
    d.setup(lab.dut_host())
    try:
        os.kill(d._proc.pid, signal.SIGKILL)
        d._proc.wait(5)
        with pytest.raises(DutError, match=r"(?s)vpp: exited with -9 during the run.*vpp\.(out|log)"):
            d.counters()
    finally:
        d.teardown()
    _assert_nothing_left(lab)


@pytest.mark.root
def test_a_wedged_vpp_fails_the_trial_and_is_killed(lab):
    """A VPP that stops answering (here: stopped by SIGSTOP, so taking the ports
    down cannot revive it) fails the trial; teardown kills it (SIGTERM cannot
    stop it) and says so; nothing is left."""
    need_vpp()
    d = VppDut(VppDut.validate({}, "p"))
    d.setup(lab.dut_host())
    pid = d._proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(DutError, match="its API does not answer"):
            d.counters()
        assert d.take_warnings() == []
    finally:
        with pytest.raises(DutError, match="did not stop within .* killed"):
            d.teardown()
    assert not os.path.exists(f"/proc/{pid}") or \
        open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    _assert_nothing_left(lab)


@pytest.mark.root
def test_stats_per_trial_in_a_campaign(tmp_path):
    """The campaign path (testbed, trial routine, store): VPP forwards fwdgen's
    frames, each trial stores VPP's counter deltas, and the scenario records
    VPP's version and startup.conf."""
    need_vpp()
    from fwdbench.campaign import build_campaign
    from fwdbench.progress import Progress
    from fwdbench.runner import open_for_run, run_campaign
    cpus = sorted(os.sched_getaffinity(0))
    c = build_campaign({
        "campaign": {"name": "vpp-stats"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1]},
        "trial": {"duration": "1s", "warmup_trial": False},
        "dut": [{"name": "vpp", "type": "vpp", "params": {"mode": "router"}}],
        "profile": [{"name": "p64", "frame_size": 64, "flows": 16}],
        "search": {"type": "sweep", "loads": ["20kpps"]},
    }, "vpp.toml")
    store = open_for_run(c, tmp_path / "r.sqlite")
    try:
        run_campaign(c, store, progress=Progress(quiet=True))
        trials = [t for t in store.trials() if t.kind == "search"]
        desc = store.scenarios()[0]["describe"]
    finally:
        store.close()
    assert len(trials) == 1
    r = trials[0].result
    from helpers import assert_all_forwarded
    assert_all_forwarded(r, 20000, "vpp")
    cnt = r.dut_counters
    assert cnt["dut0.rx_packets"] >= r.rx_packets and cnt["dut1.tx_packets"] >= r.rx_packets
    assert cnt["vpp_node.ip4-lookup.vectors"] >= r.rx_packets
    assert cnt["vpp_node.ethernet-input.clocks"] > 0
    assert desc["dut"] == "vpp" and "main-core" in desc["startup_conf"]
    assert desc["lab_ingress"]["mode"] == "afxdp"


@pytest.mark.root
def test_an_optional_dut_that_cannot_run_is_skipped_with_a_note(tmp_path, capsys):
    """`optional = true`: a VPP that is not there skips its scenarios with one line
    saying why and how to add it; the other DUTs run (the demo without VPP)."""
    from fwdbench.campaign import build_campaign
    from fwdbench.progress import Progress
    from fwdbench.runner import open_for_run, run_campaign
    cpus = sorted(os.sched_getaffinity(0))
    c = build_campaign({
        "campaign": {"name": "opt"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1]},
        "trial": {"duration": "0.2s", "warmup_trial": False},
        "dut": [{"name": "linux", "type": "linux", "params": {"mode": "router"}},
                {"name": "vpp", "type": "vpp", "optional": True,
                 "params": {"vpp_prefix": str(tmp_path / "no-vpp")}}],
        "profile": [{"name": "p64"}],
        "search": {"type": "sweep", "loads": ["5kpps"]},
    }, "opt.toml")
    store = open_for_run(c, tmp_path / "r.sqlite")
    try:
        summary = run_campaign(c, store, progress=Progress(quiet=False, trial_lines=False))
        done = {s["dut_name"] for s in store.scenarios() if s["describe"]}
    finally:
        store.close()
    assert summary.repetitions_done == 1 and done == {"linux"}
    err = capsys.readouterr().err
    assert "skipping dut 'vpp' (optional, not available here): vpp: vpp_prefix" in err
    assert "VPP_SRC=" in err
    # a DUT that is not optional stops the campaign before anything is built
    c2 = build_campaign({**c.file.model_dump(mode="json"),
                         "dut": [{"name": "vpp", "type": "vpp",
                                  "params": {"vpp_prefix": str(tmp_path / "no-vpp")}}]}, "x.toml")
    with pytest.raises(DutError, match="has no executable bin/vpp"):
        run_campaign(c2, open_for_run(c2, tmp_path / "r2.sqlite"), progress=Progress(quiet=True))


def test_memif_link_falls_back_to_veth_only_where_the_testbed_asked():
    """testbed.link = memif is "where it can": a generator without memif support
    (fwdgen built without VPP's source) puts those DUTs on veth and says so; a DUT
    that asks for memif itself stops the campaign before any trial."""
    from fwdbench.campaign import build_campaign
    from fwdbench.errors import LabError
    from fwdbench.testbed.netns import NetnsTestbed
    raw = {"campaign": {"name": "m"}, "testbed": {"type": "netns", "link": "memif"},
           "dut": [{"name": "v", "type": "vfwd"}, {"name": "k", "type": "linux"}],
           "profile": [{"name": "p"}], "search": {"type": "sweep", "loads": ["1kpps"]}}
    c = build_campaign(raw, "m.toml")
    assert [sc.dut.link for sc in c.scenarios] == ["memif", "veth"]   # kernel DUTs keep veth
    tb = NetnsTestbed(c)
    tb.generator_info = {"memif": False, "errors": {"memif": "built without libmemif"}}
    tb._check_memif()
    assert [sc.dut.link for sc in c.scenarios] == ["veth", "veth"]
    assert "built without libmemif" in tb.memif_fallback
    raw["dut"][0]["link"] = "memif"
    c = build_campaign(raw, "m.toml")
    tb = NetnsTestbed(c)
    tb.generator_info = {"memif": False, "errors": {"memif": "built without libmemif"}}
    with pytest.raises(LabError, match=r"dut 'v': link = \"memif\" but the generator has no memif"):
        tb._check_memif()
    raw["dut"][1]["link"] = "memif"
    with pytest.raises(CampaignError, match=r"dut\[1\].link: 'memif': the linux DUT runs on veth only"):
        build_campaign(raw, "m.toml")


def _dut_thread_policies(exe: str) -> set[tuple[int, int]]:
    """(policy, priority) of every thread of the processes running ``exe``."""
    seen = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.basename(os.readlink(f"/proc/{pid}/exe")) != exe:
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                seen.add((os.sched_getscheduler(int(tid)),
                          os.sched_getparam(int(tid)).sched_priority))
        except OSError:
            continue
    return seen


@pytest.mark.root
@pytest.mark.parametrize("dut", [
    {"type": "vpp", "params": {"mode": "router"}},
    {"type": "vfwd", "params": {"mode": "router"}},
    {"type": "testpmd", "params": {"mode": "mac"}},
])
def test_user_space_duts_forward_over_memif(dut):
    """The lab's memif link: the generator and the DUT meet over shared memory
    (sockets in the lab's directory, gone with it); trials forward every frame;
    the scenario records its link; testbed.memif_ring_size sizes the rings
    whichever side brings them (the generator reports what each connection has)."""
    if dut["type"] == "vpp":
        need_vpp()
    from fwdbench.campaign import build_campaign
    from fwdbench.testbed.netns import NetnsTestbed
    from helpers import assert_all_forwarded
    cpus = sorted(os.sched_getaffinity(0))
    c = build_campaign({
        "campaign": {"name": "memif"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1], "link": "memif",
                    "memif_ring_size": 4096},
        "trial": {"duration": "1s", "warmup_trial": False},
        "dut": [{"name": "d", **dut}],
        "profile": [{"name": "p64", "frame_size": 64, "flows": 16}],
        "search": {"type": "sweep", "loads": ["20kpps"]},
    }, "memif.toml")
    sc = c.scenarios[0]
    assert sc.dut.link == "memif"
    with NetnsTestbed(c) as tb:
        run_dir = os.path.join("/run/fwdbench", f"{tb.lab.run_id}.d")
        with tb.scenario(sc) as (execute, record):
            r = execute(1.0, 20_000, 0, False)
            for attempt in range(2):     # a trial the hypervisor stole from: once more
                if r.lost == 0:
                    break
                r = execute(1.0, 20_000, attempt + 1, False)
            assert record["link"] == "memif" and len(record["memif"]) == 2
            assert r.raw["memif"] == {tg: {"rx_ring": 4096, "tx_ring": 4096}
                                      for tg in ("tg0", "tg1")}, r.raw["memif"]
            assert all(m["socket"].startswith(run_dir) for m in record["memif"])
            # the polling thread at the lab's FIFO priority where RT throttling is lifted
            if rt_throttling.lifted(tb.lab.rt_throttling):
                assert (os.SCHED_FIFO, tb.lab.cfg.napi_rt_priority) in _dut_thread_policies(
                    {"vpp": "vpp", "vfwd": "vfwd", "testpmd": "dpdk-testpmd"}[dut["type"]])
        assert_all_forwarded(r, 20_000, dut["type"])
    assert not os.path.exists(run_dir)


@pytest.mark.root
def test_testpmd_whose_memif_server_stops_answering_is_restarted_and_the_trial_runs_again(
        monkeypatch):
    """DPDK's memif server sometimes stops answering after a client left; provoked
    here by stopping testpmd (SIGSTOP): the generator's handshake times out, the
    driver restarts testpmd (a new process, its socket files replaced), the trial
    runs again and says so."""
    from fwdbench.campaign import build_campaign
    from fwdbench.dut.testpmd import DpdkTestpmdDut
    from fwdbench.testbed.netns import NetnsTestbed
    seen = []
    setup = DpdkTestpmdDut.setup
    monkeypatch.setattr(DpdkTestpmdDut, "setup", lambda self, host: (seen.append(self),
                                                                     setup(self, host))[1])
    cpus = sorted(os.sched_getaffinity(0))
    c = build_campaign({
        "campaign": {"name": "memif"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1], "link": "memif"},
        "trial": {"duration": "0.5s", "warmup_trial": False},
        "dut": [{"name": "d", "type": "testpmd", "params": {"mode": "io"}}],
        "profile": [{"name": "p64", "frame_size": 64, "flows": 16}],
        "search": {"type": "sweep", "loads": ["10kpps"]},
    }, "memif.toml")
    with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _record):
        first = execute(0.5, 10_000, 0, False)
        assert first.rx_packets == first.tx_packets > 0
        (d,) = seen
        old = d._proc.pid
        os.kill(old, signal.SIGSTOP)
        r = execute(0.5, 10_000, 1, False)
        assert d._proc.pid != old and d.describe()["memif_restarts"] == 1
        assert any(w.startswith("testpmd restarted: its memif server did not answer")
                   for w in r.warnings), r.warnings
        assert r.rx_packets == r.tx_packets > 0
    assert not os.path.exists(f"/proc/{old}")


def test_more_workers_than_the_labs_dut_cpus_is_a_campaign_error():
    from fwdbench.campaign import build_campaign
    raw = {"campaign": {"name": "w"}, "testbed": {"type": "netns"},
           "dut": [{"name": "v", "type": "vpp", "params": {"workers": 2}}],
           "profile": [{"name": "p"}], "search": {"type": "sweep", "loads": ["1kpps"]}}
    with pytest.raises(CampaignError, match=r"w.toml: .*dut\[0\].params.workers: 2 workers but "
                                            r"the testbed gives the DUT 1 CPU"):
        build_campaign(raw, "w.toml")
    raw["dut"][0]["params"]["workers"] = 1
    assert build_campaign(raw, "w.toml").scenarios[0].dut.params["workers"] == 1


def test_a_generator_without_memif_keeps_the_testbeds_memif_duts_on_veth():
    """TRex serves the memif link with a server fwdbench starts; attached to a
    server (generator.host), its ports are that server's: the testbed's memif
    DUTs stay on veth, a DUT that asks for memif is refused."""
    from fwdbench.campaign import build_campaign
    raw = {"campaign": {"name": "t"}, "testbed": {"type": "netns", "link": "memif"},
           "generator": {"type": "trex"},
           "dut": [{"name": "v", "type": "vfwd"}],
           "profile": [{"name": "p"}], "search": {"type": "sweep", "loads": ["1kpps"]}}
    assert build_campaign(raw, "t.toml").scenarios[0].dut.link == "memif"
    raw["generator"]["host"] = "127.0.0.1"
    assert build_campaign(raw, "t.toml").scenarios[0].dut.link == "veth"
    raw["dut"][0]["link"] = "memif"
    with pytest.raises(CampaignError, match=r"dut\[0\].link: 'memif': this campaign's generator "
                                            r"has veth ports only; memif needs fwdgen, or trex "
                                            r"with a server fwdbench starts"):
        build_campaign(raw, "t.toml")
    del raw["generator"]["host"]
    assert build_campaign(raw, "t.toml").scenarios[0].dut.link == "memif"


@pytest.mark.root
def test_vpp_with_a_big_fib_on_memif_gets_its_settle_time_as_warm_up():
    """The generator connects anew over memif each trial; VPP then re-resolves every
    route before it polls again (80 ms at 2^18 routes here): without a warm-up
    that long a trial at 0.2 Mpps lost ~16000 frames. The trial's warm-up is
    raised to the driver's settle time, with a note, and nothing is lost."""
    need_vpp()
    from fwdbench.campaign import build_campaign
    from fwdbench.testbed.netns import NetnsTestbed
    cpus = sorted(os.sched_getaffinity(0))
    c = build_campaign({
        "campaign": {"name": "settle"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1], "link": "memif"},
        "trial": {"duration": "1s", "warmup": "0s", "warmup_trial": False},
        "dut": [{"name": "d", "type": "vpp", "params": {"mode": "router", "routes": 1 << 18}}],
        "profile": [{"name": "p64", "frame_size": 64, "flows": 1024,
                     "vary": ["src_ip", "dst_ip"]}],
        "search": {"type": "sweep", "loads": ["200kpps"]},
    }, "settle.toml")
    with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _record):
        for attempt in range(3):     # a trial the hypervisor stole from: once more
            r = execute(1.0, 200_000, attempt, False)
            if r.lost == 0:
                break
    notes = [w for w in r.warnings if w.startswith("warm-up ")]
    assert notes and "instead of 0 s" in notes[0] and "re-resolves its 2621" in notes[0], r.warnings
    assert r.lost == 0 and r.rx_packets == r.tx_packets == 200_000, (r.lost, r.warnings)


def test_settle_time_is_warm_up_only_where_the_generator_reconnects_each_trial():
    """fwdgen connects anew over memif each trial, TRex once per scenario; a settle
    time below 10 ms (VPP's few routes) or under the warm-up changes nothing."""
    import dataclasses
    from types import SimpleNamespace as NS
    from fwdbench.campaign import TrialSettings
    from fwdbench.trialrun import Arrangement, _settle

    @dataclasses.dataclass(frozen=True)
    class Req:                      # the part of a TrialRequest _settle reads
        memif: tuple | None
        trial: TrialSettings

    def dut(s):
        return NS(link_settle_s=lambda: s, link_settle_why=lambda: "why")
    fwdgen, trex = NS(memif_per_trial=True), NS(memif_per_trial=False)
    arr = Arrangement(Req(("m0", "m1"), TrialSettings(warmup="0.2s")))
    out, note = _settle(arr, dut(1.05), fwdgen)
    assert out.request.trial.warmup == 1.05 and "warm-up 1.05 s instead of 0.2 s" in note
    assert arr.request.trial.warmup == "0.2s"           # the scenario's own is untouched
    for d, gen in ((dut(1.05), trex), (dut(0.005), fwdgen), (dut(0.1), fwdgen)):
        assert _settle(arr, d, gen) == (arr, None)
    assert _settle(Arrangement(Req(None, TrialSettings())), dut(1.05), fwdgen)[1] is None
