"""fwdbench.validation.campaign_error: every pydantic error of a campaign file reads the
same way, names the file and the full field path, what was wrong and what is allowed."""
import pytest
from pydantic import BaseModel, Field, ValidationError

from fwdbench.campaign import build_campaign
from fwdbench.errors import CampaignError
from fwdbench.meters import parse_energy_settings
from fwdbench.validation import campaign_error

FILE = "lab.toml"


def sim_campaign(**over):
    c = {
        "campaign": {"name": "t"},
        "testbed": {"type": "sim", "max_load": "2Mpps"},
        "dut": [{"name": "s1", "type": "sim", "params": {"model": "ideal", "capacity_pps": 1e6}}],
        "profile": [{"name": "p64", "frame_size": 64}],
        "search": {"type": "sweep", "loads": ["10%"]},
    }
    c.update(over)
    return c


def netns_campaign(dut_type, params):
    c = sim_campaign(testbed={"type": "netns", "max_load": "1Mpps"})
    c["dut"] = [{"name": "r0", "type": "linux"}, {"name": "r1", "type": dut_type, "params": params}]
    return c


def error_of(raw) -> str:
    with pytest.raises(CampaignError) as ei:
        build_campaign(raw, FILE)
    return str(ei.value)


def check(msg, path, needles):
    assert msg.startswith(FILE + ": "), msg
    assert all(line.startswith(FILE + ": ") for line in msg.splitlines()), msg
    assert f"{path}: " in msg, f"{path!r} not in {msg!r}"
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"


# (kind of error, raw campaign, field path, what the message must say)
CASES = [
    # -- top-level campaign fields ---------------------------------------------------------
    ("dym", lambda: sim_campaign(campaign={"name": "t", "repetitons": 3}), "campaign.repetitons",
     ["unknown key; did you mean 'repetitions'?",
      "(allowed keys: name, description, question, repetitions)"]),
    ("dym", lambda: {**sim_campaign(), "energi": {}}, "energi",
     ["unknown key; did you mean 'energy'?", "campaign, testbed, trial, dut, profile"]),
    ("keys", lambda: sim_campaign(testbed={"type": "netns", "colour": "red"}), "testbed.colour",
     ["unknown key (allowed keys: line_rate, max_load, type, gen_cpu, dut_cpu"]),
    ("keys", lambda: sim_campaign(testbed={"type": "sim", "gen_cpu": 0}), "testbed.gen_cpu",
     ["unknown key (allowed keys: line_rate, max_load, type)"]),
    ("type", lambda: sim_campaign(campaign={"name": "t", "repetitions": "two"}),
     "campaign.repetitions", ["'two' is not an integer", "allowed: 1..1000"]),
    ("range", lambda: sim_campaign(campaign={"name": "t", "repetitions": 0}),
     "campaign.repetitions", ["0 is too small", "allowed: 1..1000"]),
    ("range", lambda: sim_campaign(testbed={"type": "netns", "napi_rt_priority": 120}),
     "testbed.napi_rt_priority", ["120 is too large", "allowed: 0..99"]),
    ("value", lambda: sim_campaign(testbed={"type": "netns", "memif_ring_size": 1000}),
     "testbed.memif_ring_size", ["1000 is not a power of two in 64 .. 16384"]),
    ("enum", lambda: sim_campaign(testbed={"type": "vm"}), "testbed.type",
     ["'vm' is not allowed (allowed values: 'netns', 'sim', 'ssh')"]),
    ("enum", lambda: sim_campaign(trial={"backend": "afxpd"}), "trial.backend",
     ["'afxpd' is not allowed; did you mean 'afxdp'?", "'auto', 'xdp', 'afpacket', 'afxdp'"]),
    ("union", lambda: sim_campaign(profile=[{"name": "p", "frame_size": "big"}]),
     "profile[0].frame_size", ["'big' is not valid; expected an integer or 'imix'"]),
    # -- search (per scenario) -----------------------------------------------------------
    ("dym", lambda: sim_campaign(search={"type": "binary", "relative_widht": 0.1}),
     "search.relative_widht", ["scenario 0 (dut=s1, profile=p64)",
                               "did you mean 'relative_width'?"]),
    ("range", lambda: sim_campaign(search={"type": "binary", "relative_width": 2}),
     "search.relative_width", ["2 is too large", "allowed: > 0 and < 1"]),
    # -- sim DUT params ------------------------------------------------------------------
    ("dym", lambda: sim_campaign(dut=[{"name": "s1", "type": "sim", "params": {
        "model": "ideal", "capacity_pps": 1e6, "capcity": 1}}]), "dut[0].params.capcity",
     ["unknown key; did you mean 'capacity_pps'?", "allowed keys: model, capacity_pps, seed"]),
    ("keys", lambda: sim_campaign(dut=[{"name": "s1", "type": "sim", "params": {
        "model": "ideal", "capacity_pps": 1e6, "colour": 1}}]), "dut[0].params.colour",
     ["unknown key (allowed keys: model, capacity_pps, seed"]),
    ("type", lambda: sim_campaign(dut=[{"name": "s1", "type": "sim", "params": {
        "model": "ideal", "capacity_pps": "fast"}}]), "dut[0].params.capacity_pps",
     ["'fast' is not a number", "allowed: 100.."]),
    ("range", lambda: sim_campaign(dut=[{"name": "s1", "type": "sim", "params": {
        "model": "noisy", "capacity_pps": 1e6, "noise_cv": 0.7}}]), "dut[0].params.noise_cv",
     ["0.7 is too large", "allowed: >= 0 and < 0.5"]),
    ("enum", lambda: sim_campaign(dut=[{"name": "s1", "type": "sim", "params": {
        "model": "perfect", "capacity_pps": 1e6}}]), "dut[0].params.model",
     ["'perfect' is not allowed", "'ideal', 'realistic', 'trashing', 'noisy'"]),
    # -- xdp DUT params ------------------------------------------------------------------
    ("dym", lambda: netns_campaign("xdp", {"rotes": 4}), "dut[1].params.rotes",
     ["scenario 1 (dut=r1, profile=p64)", "unknown key; did you mean 'routes'?",
      "(allowed keys: mode, attach, fib_lookup, routes, routes6)"]),
    ("keys", lambda: netns_campaign("xdp", {"queues": 2}), "dut[1].params.queues",
     ["unknown key (allowed keys: mode, attach, fib_lookup, routes, routes6)"]),
    ("type", lambda: netns_campaign("xdp", {"routes": "many"}), "dut[1].params.routes",
     ["'many' is not an integer", "allowed: 1..1048576"]),
    ("range", lambda: netns_campaign("xdp", {"routes6": 1 << 21}), "dut[1].params.routes6",
     ["2097152 is too large", "allowed: 1..1048576"]),
    ("enum", lambda: netns_campaign("xdp", {"mode": "routr"}), "dut[1].params.mode",
     ["'routr' is not allowed; did you mean 'router'?", "'xconnect', 'router'"]),
    # -- testpmd DUT params --------------------------------------------------------------
    ("dym", lambda: netns_campaign("testpmd", {"brust": 64}), "dut[1].params.brust",
     ["unknown key; did you mean 'burst'?", "allowed keys: mode, pmd, cores, queues, burst"]),
    ("keys", lambda: netns_campaign("testpmd", {"rings": 2}), "dut[1].params.rings",
     ["unknown key (allowed keys: mode, pmd, cores, queues, burst"]),
    ("type", lambda: netns_campaign("testpmd", {"cores": True}), "dut[1].params.cores",
     ["true is not an integer", "allowed: 1..64"]),
    ("range", lambda: netns_campaign("testpmd", {"burst": 513}), "dut[1].params.burst",
     ["513 is too large", "allowed: 1..512"]),
    ("enum", lambda: netns_campaign("testpmd", {"pmd": "vhost"}), "dut[1].params.pmd",
     ["'vhost' is not allowed", "'auto', 'af_xdp', 'af_packet'"]),
    # -- vfwd DUT params -----------------------------------------------------------------
    ("dym", lambda: netns_campaign("vfwd", {"work": {"hsh": "crc32"}}), "dut[1].params.work.hsh",
     ["unknown key; did you mean 'hash'?", "allowed keys: lookups, hashes, hash"]),
    ("keys", lambda: netns_campaign("vfwd", {"bogus": 1}), "dut[1].params.bogus",
     ["unknown key (allowed keys: mode, max_vector, workers"]),
    ("type", lambda: netns_campaign("vfwd", {"cpus": ["a"]}), "dut[1].params.cpus[0]",
     ["'a' is not an integer"]),
    ("range", lambda: netns_campaign("vfwd", {"ring_size": 10}), "dut[1].params.ring_size",
     ["10 is too small", "allowed: 64..16384"]),
    ("enum", lambda: netns_campaign("vfwd", {"work": {"hash": "md5"}}), "dut[1].params.work.hash",
     ["'md5' is not allowed", "'crc32', 'jhash'"]),
    # -- [energy] ------------------------------------------------------------------------
    ("dym", lambda: sim_campaign(energy={"meterz": "auto"}), "energy.meterz",
     ["unknown key; did you mean 'meters'?",
      "(allowed keys: meters, baseline, baseline_s, cpu-model, rapl, ipmi, command)"]),
    ("keys", lambda: sim_campaign(energy={"rapl": {"colour": 1}}), "energy.rapl.colour",
     ["unknown key (allowed keys: root, domains, sample_interval_s)"]),
    ("type", lambda: sim_campaign(energy={"cpu-model": {"idle_watts": "a"}}),
     "energy.cpu-model.idle_watts", ["'a' is not a number", "allowed: >= 0"]),
    ("range", lambda: sim_campaign(energy={"baseline_s": 0}), "energy.baseline_s",
     ["0 is too small", "allowed: > 0"]),
    ("enum", lambda: sim_campaign(energy={"ipmi": {"interface": "lanplsu"}}),
     "energy.ipmi.interface", ["'lanplsu' is not allowed; did you mean 'lanplus'?",
                               "'open', 'lanplus'"]),
    ("union", lambda: sim_campaign(energy={"meters": 5}), "energy.meters",
     ["5 is not valid; expected 'auto' or a list"]),
]


@pytest.mark.parametrize("kind, raw, path, needles", CASES,
                         ids=[f"{c[2]}-{c[0]}" for c in CASES])
def test_campaign_errors_name_file_path_problem_and_allowed(kind, raw, path, needles):
    check(error_of(raw()), path, needles)


def test_every_kind_is_covered_for_every_model():
    kinds = {}
    for kind, _, path, _ in CASES:
        kinds.setdefault(path.split(".")[0], set()).add(kind)
    every = {"dym", "keys", "type", "range", "enum"}
    assert every <= kinds["energy"]
    assert every <= kinds["dut[0]"]                                       # sim
    top = kinds["campaign"] | kinds["testbed"] | kinds["trial"] | kinds["energi"]
    assert every <= top
    for dut in ("xdp", "testpmd", "vfwd"):
        assert every <= {k for k, raw, path, _ in CASES if path.startswith("dut[1]")
                         and raw()["dut"][1]["type"] == dut}


def test_several_problems_one_line_each_all_naming_the_file():
    msg = error_of(sim_campaign(energy={"meterz": "auto", "baseline_s": 0, "ipmi": {"x": 1}}))
    lines = msg.splitlines()
    assert len(lines) == 3, msg
    assert all(line.startswith("lab.toml: energy.") for line in lines), msg


def test_matrix_scenario_is_named():
    raw = sim_campaign(matrix={"dut.params.capacity_pps": [1e6, -1]})
    check(error_of(raw), "dut[0].params.capacity_pps",
          ["scenario 1 (dut=s1, profile=p64, dut.params.capacity_pps=-1)", "-1 is too small"])


def test_missing_and_list_length():
    raw = sim_campaign()
    raw["campaign"].pop("name")
    check(error_of(raw), "campaign.name", ["required but missing"])
    check(error_of(sim_campaign(dut=[])), "dut", ["has 0 item(s); give at least 1"])


def test_without_file_the_path_comes_first():
    with pytest.raises(CampaignError) as ei:
        parse_energy_settings({"baseline": "yes please"})
    assert str(ei.value) == "energy.baseline: 'yes please' is not true or false"


def test_direct_use_with_file_context_and_where():
    class M(BaseModel, extra="forbid"):
        n: int = Field(0, ge=0)

    with pytest.raises(ValidationError) as ei:
        M.model_validate({"n": -2, "m": 1})
    e = campaign_error(ei.value, M, where="x", file="f.toml", context="here")
    assert isinstance(e, CampaignError)
    assert str(e).splitlines() == [
        "f.toml: here: x.n: -2 is too small; allowed: >= 0",
        "f.toml: here: x.m: unknown key (allowed keys: n)",
    ]


def test_without_model_the_message_still_names_the_path():
    class M(BaseModel, extra="forbid"):
        n: int = Field(0, le=3)

    with pytest.raises(ValidationError) as ei:
        M.model_validate({"n": 5, "zz": 1})
    assert str(campaign_error(ei.value, where="t")).splitlines() == [
        "t.n: 5 is too large; allowed: <= 3",
        "t.zz: unknown key (check the spelling)",
    ]
