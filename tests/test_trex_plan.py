"""The trex generator's pure parts: its config file, its streams, its settings.

No TRex needed: these check what fwdbench hands TRex (tests/test_trex_lab.py
runs a real TRex server in the lab).
"""
import pytest

from fwdbench.campaign import Profile, TrialSettings, build_campaign
from fwdbench.errors import CampaignError, GeneratorError
from fwdbench.lab.addressing import PORTS
from fwdbench.lab.executor import Executor
from fwdbench.traffic import GENERATORS, TrialRequest, base
from fwdbench.dut.host import MemifLink
from fwdbench.traffic.trex.config import CfgPort, TrexCfg, memif_device
from fwdbench.traffic.trex.plan import build_plan, flow_vars


def make_tester(cpus=(0,)):
    return base.TesterHost(name="test", exec=Executor(None), ports=PORTS, cpus=cpus,
                      run_tag="fb-abc123")


def request(load=100_000.0, latency=False, **prof):
    prof.setdefault("name", "p")
    return TrialRequest(profile=Profile(**prof), trial=TrialSettings(latency_rate=9000),
                        load_pps=load, duration_s=2.0, latency=latency)


def cfg(**kw):
    ports = (CfgPort("tg0", "02:fb:00:00:00:01", "02:fb:00:00:01:01"),
             CfgPort("tg1", "02:fb:00:00:00:02", "02:fb:00:00:01:02"))
    return TrexCfg(**{"ports": ports, "cpus": (0,), "prefix": "fb-abc123-trex", **kw})


def test_config_low_end_on_one_cpu():
    text = cfg(cpus=(1,)).render()
    assert "interfaces: ['tg0', 'tg1']" in text
    assert "low_end: true\n  low_end_core: 1\n" in text
    assert "prefix: fb-abc123-trex" in text and "platform" not in text
    assert "- src_mac: '02:fb:00:00:00:02'\n      dest_mac: '02:fb:00:00:01:02'" in text


def test_config_platform_with_three_cpus_or_more():
    text = cfg(cpus=(2, 3, 4, 5)).render()
    assert "low_end" not in text
    assert "master_thread_id: 2\n    latency_thread_id: 3\n" in text
    assert "threads: [4, 5]" in text and "  c: 2\n" in text


@pytest.mark.parametrize("kw, words", [
    ({"cpus": (0, 1)}, r"give one \(low_end\) or at least three"),
    ({"prefix": "a b"}, "file prefix"),
    ({"ports": (CfgPort("tg0", "02:FB:00:00:00:01", "02:fb:00:00:01:01"),
                CfgPort("tg1", "02:fb:00:00:00:02", "02:fb:00:00:01:02"))}, "not a MAC"),
    ({"ports": (CfgPort("tg0'; x", "02:fb:00:00:00:01", "02:fb:00:00:01:01"),
                CfgPort("tg1", "02:fb:00:00:00:02", "02:fb:00:00:01:02"))}, "not an interface"),
    ({"ports": (CfgPort("tg0", "02:fb:00:00:00:01", "02:fb:00:00:01:01"),)}, "in pairs"),
])
def test_config_refuses_what_would_break_it(kw, words):
    with pytest.raises(GeneratorError, match=words):
        cfg(**kw)


def test_memif_ports_are_dpdk_memif_vdevs_in_the_role_the_dut_leaves():
    slave_dut = MemifLink(socket="/run/fwdbench/ab12.d/memif/tg0.sock", id=0, role="slave")
    master_dut = MemifLink(socket="/run/fwdbench/ab12.d/memif/dut1.sock", id=3, role="master")
    a = memif_device(0, slave_dut, "02:fb:00:00:00:01")
    b = memif_device(1, master_dut, "02:fb:00:00:00:02")
    # DPDK's role names (TRex 3.08's DPDK calls master/slave deprecated); a path, not
    # DPDK's default abstract socket name
    assert a == ("--vdev=net_memif0,role=server,socket=/run/fwdbench/ab12.d/memif/tg0.sock,"
                 "socket-abstract=no,id=0,mac=02:fb:00:00:00:01")
    assert b.startswith("--vdev=net_memif1,role=client,socket=/run/fwdbench/ab12.d/memif/"
                        "dut1.sock,") and ",id=3," in b and "rsize" not in b
    # testbed.memif_ring_size: the client brings the rings, so only it says their size
    deep = dict(ring_size=8192)
    assert memif_device(1, MemifLink(socket="/s/dut1.sock", role="master", **deep),
                        "02:fb:00:00:00:02").endswith(",rsize=13")
    assert "rsize" not in memif_device(0, MemifLink(socket="/s/tg0.sock", **deep),
                                       "02:fb:00:00:00:01")
    text = cfg(ports=(CfgPort(a, "02:fb:00:00:00:01", "02:fb:00:00:01:01"),
                      CfgPort(b, "02:fb:00:00:00:02", "02:fb:00:00:01:02"))).render()
    assert f"interfaces: ['{a}', '{b}']" in text
    for bad in ("/run/x,role=client/tg0.sock", "relative.sock", "/run/" + "x" * 120):
        with pytest.raises(GeneratorError, match="memif socket"):
            memif_device(0, MemifLink(socket=bad), "02:fb:00:00:00:01")


def test_unidirectional_single_flow_is_one_counted_stream():
    plan, smap = build_plan(make_tester(), request())
    (s,) = plan["streams"]
    assert (s["port"], s["pg_id"], s["stats"], s["pps"], s["frame_size"]) == \
        (0, 1, "flow", 100_000.0, 64)
    assert (s["src_mac"], s["dst_mac"]) == (PORTS[0].tg.mac, PORTS[0].dut.mac)
    assert (s["src_ip"], s["dst_ip"]) == ("198.18.128.0", "198.19.128.0")
    assert s["vars"] == []
    assert plan["kernel_ifaces"] == ["tg0", "tg1"] and plan["drain_ms"] == 200
    assert (plan["warmup_s"], plan["duration_s"]) == (0.5, 2.0)
    assert smap.directions == 1 and smap.ifnames == {0: "tg0", 1: "tg1"}


def test_bidirectional_swaps_ports_and_nets():
    req = TrialRequest(profile=Profile(name="p", direction="bi", l3="ipv6", frame_size=128),
                       trial=TrialSettings(), load_pps=1000.0, duration_s=1.0,
                       peer_macs={"tg0": "02:fb:00:00:00:02", "tg1": "02:fb:00:00:00:01"})
    plan, smap = build_plan(make_tester(), req)
    a, b = plan["streams"]
    assert (a["port"], b["port"]) == (0, 1) and (a["pg_id"], b["pg_id"]) == (1, 9)
    assert (a["src_ip"], b["src_ip"]) == ("2001:2:0:10::", "2001:2:0:11::")
    assert (a["dst_mac"], b["dst_mac"]) == ("02:fb:00:00:00:02", "02:fb:00:00:00:01")
    assert [(s.tx_port, s.rx_port) for s in smap.streams] == [(0, 1), (1, 0)]


def test_imix_is_three_streams_at_7_4_1_of_the_load():
    plan, smap = build_plan(make_tester(), request(load=120_000.0, frame_size="imix"))
    got = [(s["frame_size"], s["pps"]) for s in plan["streams"]]
    assert got == [(64, 70_000.0), (570, 40_000.0), (1518, 10_000.0)]
    _, smap6 = build_plan(make_tester(), request(load=12.0, frame_size="imix", l3="ipv6"))
    assert [s.frame_size for s in smap6.streams] == [82, 570, 1518]
    # at the latency rate (no background load) the smallest frames measure latency
    assert [s.latency for s in smap6.streams] == [True, False, False]


def test_latency_stream_beside_the_load_and_the_idle_stream_measured_itself():
    plan, smap = build_plan(make_tester(), request(latency=True))
    load, lat = plan["streams"]
    assert (load["stats"], lat["stats"], lat["pg_id"], lat["pps"]) == \
        ("flow", "latency", 100, 9000.0)
    assert lat["vars"] == [] and lat["frame_size"] == 64
    # the latency trial without background load: the stream runs at the latency rate
    plan, smap = build_plan(make_tester(), request(load=9000.0))
    (only,) = plan["streams"]
    assert only["stats"] == "latency" and only["role"] == "load"
    assert smap.of(0, "latency") == []


def test_flows_move_every_varied_field_together():
    prof = Profile(name="p", flows=1000, vary=["src_ip", "dst_ip", "src_port", "dst_port"])
    v = {x["field"]: x for x in flow_vars(prof, "198.18.128.0/17", "198.19.128.0/17",
                                          1024, 1024, seed=1)}
    lo = (198 << 24) + (18 << 16) + (128 << 8)
    assert (v["src_ip"]["min"], v["src_ip"]["max"]) == (lo, lo + 999)
    assert v["dst_port"] == {"field": "dst_port", "size": 2, "random": False,
                             "min": 1024, "max": 2023}
    # a /17 holds 32768 sources: a longer flow list wraps there
    big = Profile(name="p", flows=100_000, vary=["src_ip"])
    (s,) = flow_vars(big, "198.18.128.0/17", "198.19.128.0/17", 1024, 1024, seed=1)
    assert s["max"] - s["min"] + 1 == 32768
    # IPv6: the low 32 bits of the /64 vary
    six = Profile(name="p", l3="ipv6", frame_size=82, flows=10, vary=["dst_ip"])
    (d,) = flow_vars(six, "2001:2:0:10::/64", "2001:2:0:11::/64", 1024, 1024, seed=1)
    assert (d["min"], d["max"]) == (0, 9)


def test_rfc4814_ports_are_a_repeatable_random_sequence_of_flows_values():
    prof = Profile(name="p", flows=64, vary=["src_port", "dst_port"], port_pattern="rfc4814")
    a, b = flow_vars(prof, "198.18.128.0/17", "198.19.128.0/17", 1024, 1024, seed=7)
    assert a["random"] and (a["min"], a["max"], a["limit"]) == (1024, 65535, 64)
    assert a["seed"] != b["seed"]


def base_campaign(generator):
    return {"campaign": {"name": "t"}, "testbed": {"type": "netns"},
            "dut": [{"name": "r", "type": "linux", "params": {"mode": "router"}}],
            "profile": [{"name": "p"}], "generator": generator}


def test_campaign_generator_trex_validates_its_settings(tmp_path):
    c = build_campaign(base_campaign({"type": "trex"}), "c.toml")
    assert (c.generator_type, c.generator_settings) == ("trex", {})
    assert GENERATORS["trex"].name == "trex"
    c = build_campaign(base_campaign({"type": "trex", "trex_prefix": str(tmp_path),
                                      "stall_timeout": 5.0}), "c.toml")
    assert c.generator_settings == {"trex_prefix": str(tmp_path), "stall_timeout": 5.0}
    for gen, words in [
        ({"type": "trex", "prefix": "/x"}, "c.toml: generator.prefix: unknown key"),
        ({"type": "trex", "trex_prefix": str(tmp_path / "no")}, "is not a folder"),
        ({"type": "trex", "ports": [2, 3]}, "generator.ports: a server fwdbench starts"),
        ({"type": "trex", "host": "10.0.0.1", "ports": [1, 1]}, "two different port ids"),
        ({"type": "trex", "sync_port": 4500}, "generator.async_port: equals sync_port"),
    ]:
        with pytest.raises(CampaignError) as e:
            build_campaign(base_campaign(gen), "c.toml")
        assert words in str(e.value) and "\n" not in str(e.value).strip(), str(e.value)
