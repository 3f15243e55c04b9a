"""Campaign validation: every error path names the file and the field; matrix expansion."""
import pytest

from fwdbench.campaign import build_campaign, load_campaign
from fwdbench.errors import CampaignError


def base(**over):
    c = {
        "campaign": {"name": "t", "repetitions": 2},
        "testbed": {"type": "sim", "max_load": "2Mpps"},
        "dut": [{"name": "a", "type": "sim", "params": {"model": "ideal", "capacity_pps": 1e6}},
                {"name": "b", "type": "sim", "params": {"model": "trashing", "capacity_pps": 5e5}}],
        "profile": [{"name": "p64", "frame_size": 64}, {"name": "p6", "l3": "ipv6",
                                                         "frame_size": 86}],
        "search": {"type": "sweep", "loads": ["10%", "1Mpps", 250000]},
    }
    for k, v in over.items():
        c[k] = v
    return c


def err(raw) -> str:
    with pytest.raises(CampaignError) as e:
        build_campaign(raw, "c.toml")
    return str(e.value)


def test_default_matrix_is_every_dut_times_every_profile():
    c = build_campaign(base(), "c.toml")
    assert [(s.dut.name, s.profile.name) for s in c.scenarios] == [
        ("a", "p64"), ("a", "p6"), ("b", "p64"), ("b", "p6")]
    assert c.scenarios[0].search["loads_pps"] == [200000.0, 1e6, 250000.0]
    assert c.scenarios[0].max_load_pps == 2e6


def test_axes_on_any_parameter_expand_as_cartesian_product():
    raw = base(matrix={"dut": ["a"], "profile.frame_size": [128, 512, 1518],
                       "dut.params.capacity_pps": [1e5, 2e5]},
               search={"type": "sweep", "loads": ["10%", "50%"]})
    c = build_campaign(raw, "c.toml")
    assert len(c.scenarios) == 2 * 3 * 2   # profiles x sizes x capacities
    sizes = {(s.profile.name, s.profile.frame_size, s.dut.params["capacity_pps"])
             for s in c.scenarios}
    assert ("p6", 1518, 2e5) in sizes
    assert all("frame_size=" in s.name for s in c.scenarios)
    # at 1518 B the 10 Gbit/s line rate (812,743 pps) is below max_load 2 Mpps
    big = [s for s in c.scenarios if s.profile.frame_size == 1518][0]
    assert big.max_load_pps == pytest.approx(10e9 / ((1518 + 20) * 8))


def test_load_above_line_rate_names_scenario_and_field():
    raw = base(matrix={"profile.frame_size": [1518]})
    msg = err(raw)   # 1 Mpps is above 812,743 pps at 1518 B
    assert "c.toml" in msg and "search.loads" in msg and "above the maximum" in msg
    assert "frame_size=1518" in msg


@pytest.mark.parametrize("mutate,needles", [
    (lambda c: c["campaign"].update(repetitons=3), ["campaign.repetitons", "unknown key"]),
    (lambda c: c["profile"][0].update(frame_size=40), ["profile[0].frame_size", "64..9000"]),
    (lambda c: c["profile"][1].update(l3="ipx"), ["profile[1].l3", "'ipx'", "ipv4"]),
    (lambda c: c["profile"][0].update(vary=["ttl"]), ["profile[0].vary", "src_ip"]),
    (lambda c: c["profile"][1].update(frame_size=64), ["profile[1]", "82 B"]),
    (lambda c: c.update(matrix={"profile.frame_size": [64]}),
     ["profile=p6", "profile.frame_size", "82 B"]),
    (lambda c: c.update(matrix={"profile.frame_size": []}), ["matrix.profile.frame_size", "empty"]),
    (lambda c: c.update(matrix={"colour": [1]}), ["matrix.colour", "unknown axis"]),
    (lambda c: c.update(matrix={"dut": ["zz"]}), ["matrix.dut[0]", "'zz'", "a, b"]),
    (lambda c: c["dut"][0].update(type="vpp9"), ["dut.type", "'vpp9'", "sim"]),
    (lambda c: c["dut"][0]["params"].update(model="perfect"), ["dut[0].params.model", "perfect"]),
    (lambda c: c["search"].update(loads=["fast"]), ["search.loads", "not a load"]),
    (lambda c: c["search"].update(type="golden"), ["search.type", "'golden'"]),
    (lambda c: c["search"].update(relative_widht=0.1), ["search.relative_widht", "unknown key"]),
    (lambda c: c["testbed"].update(line_rate="10 gigs"), ["testbed.line_rate", "bit rate"]),
    (lambda c: c["trial"] if "trial" in c else c.update(trial={"duration": "soon"}),
     ["trial.duration", "not a duration"]),
    (lambda c: c.update(dut=[]), ["dut", "at least 1"]),
    (lambda c: c["dut"].append(dict(c["dut"][0])), ["dut[2].name", "used twice"]),
    (lambda c: c["campaign"].update(name="../etc"), ["campaign.name", "letters"]),
    (lambda c: c["campaign"].pop("name"), ["campaign.name", "missing"]),
])
def test_every_error_names_file_and_field(mutate, needles):
    raw = base()
    mutate(raw)
    msg = err(raw)
    assert msg.startswith("c.toml") or "c.toml" in msg
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"


def test_netns_testbed_refuses_same_cpu_and_sim_duts():
    raw = base(testbed={"type": "netns", "gen_cpu": 1, "dut_cpu": 1})
    assert "testbed.dut_cpu" in err(raw)
    raw = base(testbed={"type": "netns"})
    msg = err(raw)
    assert "dut.type" in msg and "testbed.type" in msg


def test_toml_syntax_error_and_missing_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[campaign\nname='x'")
    with pytest.raises(CampaignError, match="bad.toml: not valid TOML"):
        load_campaign(p)
    with pytest.raises(CampaignError, match="cannot read"):
        load_campaign(tmp_path / "nope.toml")


def test_units_in_search_are_converted_per_scenario():
    raw = base(search={"type": "binary", "trial_duration": "500ms", "min_load": "1%",
                       "relative_width": 0.01})
    c = build_campaign(raw, "c.toml")
    s = c.scenarios[0].search
    assert s["trial_duration_s"] == 0.5 and s["min_load_pps"] == pytest.approx(20000)


def test_trial_duration_is_the_default_of_searches():
    raw = base(trial={"duration": "3s"})
    assert build_campaign(raw, "c.toml").scenarios[0].search["trial_duration_s"] == 3.0


def test_examples_all_validate():
    from pathlib import Path
    for p in sorted(Path(__file__).parent.parent.joinpath("examples").glob("*.toml")):
        c = load_campaign(p)
        assert c.scenarios, p


def test_matrix_exclude_drops_matching_points():
    raw = base(matrix={"profile.frame_size": [128, 512],
                       "exclude": [{"dut": "b", "profile": "p6"}, {"profile.frame_size": 512,
                                                                   "dut": "a"}]})
    c = build_campaign(raw, "c.toml")
    pts = {(s.dut.name, s.profile.name, s.profile.frame_size) for s in c.scenarios}
    assert pts == {("a", "p64", 128), ("a", "p6", 128), ("b", "p64", 128), ("b", "p64", 512)}
    raw = base(matrix={"exclude": [{"colour": 1}]})
    assert "matrix.exclude[0].colour" in err(raw)


def test_testbed_kind_picks_its_model_and_module():
    """[testbed] type selects one model (its own fields) and one testbed module;
    a table without type is the netns lab."""
    from fwdbench.campaign import NetnsTestbed, SimTestbed
    from fwdbench.testbed import TESTBEDS, testbed_class
    from fwdbench.testbed.netns import NetnsTestbed as NetnsKind
    from fwdbench.testbed.sim import SimTestbed as SimKind

    sim = build_campaign(base(), "c.toml")
    assert isinstance(sim.file.testbed, SimTestbed)
    assert testbed_class(sim.file.testbed.type) is SimKind
    raw = base()
    raw["testbed"] = {"gen_cpu": 0, "dut_cpu": 1}
    raw["dut"] = [{"name": "r", "type": "linux", "params": {"mode": "router"}}]
    raw.pop("matrix", None)
    lab = build_campaign(raw, "c.toml")
    assert isinstance(lab.file.testbed, NetnsTestbed) and lab.file.testbed.type == "netns"
    assert testbed_class("netns") is NetnsKind and set(TESTBEDS) == {"netns", "sim", "ssh"}


def test_generator_table_names_type_and_settings():
    raw = base()
    raw["testbed"] = {"type": "netns"}
    raw["dut"] = [{"name": "r", "type": "linux", "params": {}}]
    raw.pop("matrix", None)
    c = build_campaign(raw, "c.toml")
    assert (c.generator_type, c.generator_settings) == ("fwdgen", {})
    raw["generator"] = {"type": "ixia"}
    assert "c.toml: generator.type: 'ixia' is not a generator (fwdgen, trex)" in err(raw)
    raw["generator"] = {"type": "fwdgen", "speed": 3}
    assert "c.toml: generator.speed: unknown setting of generator 'fwdgen'" in err(raw)
    sim = base()
    sim["generator"] = {"type": "fwdgen", "speed": 3}
    assert "the sim testbed has no generator" in err(sim)
