"""The report's topology drawings: one per link the scenarios used, labels escaped."""
from types import SimpleNamespace

from fwdbench.report.topology import topologies


def sc(name, describe):
    return SimpleNamespace(dut_name=name, describe=describe)


def test_one_drawing_per_link_with_its_duts_and_roles():
    scen = [sc("linux-router", {"dut": "linux", "link": "veth"}),
            sc("vfwd (memif)", {"dut": "vfwd", "link": "memif",
                                "memif": [{"socket": "/run/x/tg0.sock", "id": 0,
                                           "dut_role": "slave"}] * 2}),
            sc("testpmd (memif)", {"dut": "testpmd", "link": "memif",
                                   "memif": [{"socket": "/run/x/dut0.sock", "id": 0,
                                              "dut_role": "master"}] * 2}),
            sc("never-set-up", None)]
    t = topologies(scen, {"testbed": "netns", "gen_cpu": 0, "dut_cpu": 1})
    assert [x["link"] for x in t] == ["veth", "memif"]
    assert t[0]["duts"] == ["linux-router"] and "198.18.0.1 ⇄ dut0 198.18.0.2" in t[0]["svg"]
    assert t[1]["duts"] == ["vfwd (memif)", "testpmd (memif)"]
    assert "tg0.sock / dut0.sock: shared memory (DUT master/slave)" in t[1]["svg"]
    assert "fwdgen, CPU 0" in t[1]["svg"] and "DUT, CPU 1" in t[1]["svg"]
    t = topologies(scen[1:2], {"testbed": "netns", "gen_cpu": 0, "generator": "trex"})
    assert "TRex, CPU 0" in t[0]["svg"] and "tg0.sock: shared memory (DUT slave)" in t[0]["svg"]


def test_labels_are_escaped_and_sim_has_no_topology():
    evil = '<script>alert(1)</script>&"'
    t = topologies([sc(evil, {"dut": "vfwd", "link": "veth"})], {"testbed": "netns"})
    assert "<script>" not in t[0]["svg"] and "&lt;script&gt;" in t[0]["svg"]
    assert topologies([sc("a", {"dut": "sim"})], {"testbed": "sim"}) == []
