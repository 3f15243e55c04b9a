"""Campaign files (TOML): schema, validation and matrix expansion.

A campaign names a testbed, DUTs, traffic profiles, search settings and a
matrix whose axes (any parameter) expand into scenarios. Everything is
checked before anything is set up; errors name the file, the field path and
what is allowed.
"""
from __future__ import annotations

import copy
import itertools
import math
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from .errors import CampaignError
from .units import UnitError, line_rate_pps, parse_bitrate, parse_duration, parse_load
from .validation import campaign_error

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
VARY_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CampaignInfo(Strict):
    name: str = Field(description="used for results/<name>.sqlite; letters, digits, _ . -")
    description: str = ""
    question: str = Field("", description="the question the campaign answers (report summary)")
    repetitions: int = Field(1, ge=1, le=1000, description="repetitions of every scenario")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{v!r} must be 1-64 letters, digits, '_', '.' or '-'")
        return v


class TestbedBase(Strict):
    """What every testbed kind has: the nominal link rate and a load cap."""
    line_rate: str | float = Field(
        "10Gbps", description="nominal L1 rate of the lab links [bit/s]; caps loads")
    max_load: str | float | None = Field(
        None, description="cap on the load per direction [pps] (generator or lab limit); "
                          "'%' loads are shares of min(line rate, max_load)")

    @field_validator("line_rate")
    @classmethod
    def _line_rate(cls, v):
        try:
            parse_bitrate(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        return v


class NetnsTestbed(TestbedBase):
    """``type = "netns"``: the local veth lab on this host (root)."""
    type: Literal["netns"] = Field(
        "netns", description="netns: the local veth lab (root); sim: simulated DUTs only")
    gen_cpu: int = Field(0, ge=0, description="CPU of the generator (and its NAPI threads)")
    dut_cpu: int = Field(1, ge=0, description="CPU of the DUT (and its NAPI threads)")
    kernel_tuning: bool = Field(True, description="GRO + threaded NAPI pinned per side")
    # Measured here (shared 2-core VM, linux router, 64 B): with FIFO 50 the router
    # delivered 88-96 % at 100-400 kpps where plain CFS NAPI threads delivered 48-80 %.
    napi_rt_priority: int = Field(
        50, ge=0, le=99, description="SCHED_FIFO priority of the lab's NAPI threads (0: off), "
                                    "so a spinning generator or DUT cannot starve them")
    # Measured here (linux router, 64 kpps x 30 s): veth's own 256-frame ring lost
    # 5-1400 frames per trial to multi-ms vCPU stalls; a 4096-frame queue lost none.
    dut_rx_queue: int = Field(
        4096, ge=0, le=16384, description="frames queued in front of the DUT CPU, as a "
                                          "NIC's RX ring filled on the generator's CPU: a "
                                          "cpumap queue for kernel data planes, the AF_XDP "
                                          "rings of vfwd and testpmd (0: veth's own "
                                          "256-frame ring and threaded NAPI on the DUT CPU)")


class SimTestbed(TestbedBase):
    """``type = "sim"``: simulated DUTs, no packets (tests of searches and reports)."""
    type: Literal["sim"]


#: ``[testbed]``, one model per kind, chosen by ``type`` (netns when omitted)
Testbed = Annotated[Union[NetnsTestbed, SimTestbed], Field(discriminator="type")]
TESTBED_TYPES = ("netns", "sim")


class TrialSettings(Strict):
    duration: str | float = Field("2s", description="default measured trial duration [s]")
    warmup: str | float = Field("0.5s", description="traffic sent and discarded before each trial [s]")
    warmup_trial: bool = Field(True, description="one discarded trial per scenario before measuring (as CSIT)")
    drain: str | float = Field("0.2s", description="wait for in-flight frames after TX ends [s]")
    latency_stream: bool = Field(False, description="a low-rate latency stream beside the load")
    latency_rate: float = Field(9000, gt=0, le=100000, description="latency stream rate [pps]")
    backend: Literal["auto", "xdp", "afpacket", "afxdp"] = "auto"

    @field_validator("duration", "warmup", "drain")
    @classmethod
    def _dur(cls, v):
        try:
            parse_duration(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        return v


class Profile(Strict):
    name: str
    l3: Literal["ipv4", "ipv6"] = "ipv4"
    frame_size: int | Literal["imix"] = Field(64, description="bytes incl. 4 B FCS, 64..9000, or 'imix'")
    flows: int = Field(1, ge=1, le=1 << 24, description="distinct flows per direction")
    vary: list[str] = Field(default_factory=lambda: ["src_ip"],
                            description=f"fields varied across flows: {', '.join(VARY_FIELDS)}")
    port_pattern: Literal["sequential", "rfc4814"] = "sequential"
    direction: Literal["uni", "bi"] = "uni"

    @field_validator("frame_size")
    @classmethod
    def _fs(cls, v):
        if isinstance(v, int) and not 64 <= v <= 9000:
            raise ValueError(f"{v} is outside 64..9000 bytes (sizes include the 4 B FCS)")
        return v

    @model_validator(mode="after")
    def _ipv6_min(self) -> "Profile":
        if self.l3 == "ipv6" and isinstance(self.frame_size, int) and self.frame_size < 82:
            raise ValueError(f"frame_size: {self.frame_size} is below 82 B, the smallest IPv6 "
                             "UDP frame that holds fwdgen's 16 B signature (incl. FCS)")
        return self

    @field_validator("vary")
    @classmethod
    def _vary(cls, v):
        bad = [x for x in v if x not in VARY_FIELDS]
        if bad:
            raise ValueError(f"{bad[0]!r} is not one of {', '.join(VARY_FIELDS)}")
        return v


class DutSpec(Strict):
    name: str
    type: str = Field(description="driver: linux, xdp, testpmd, vfwd, vpp, sim")
    params: dict[str, Any] = Field(default_factory=dict)
    optional: bool = Field(False, description="where this DUT cannot run on the testbed "
                                              "(e.g. no VPP installed), skip its scenarios "
                                              "with a note instead of refusing the campaign")


class CampaignFile(Strict):
    campaign: CampaignInfo
    testbed: Testbed = Field(default_factory=NetnsTestbed)
    trial: TrialSettings = Field(default_factory=TrialSettings)
    dut: list[DutSpec] = Field(min_length=1)
    profile: list[Profile] = Field(min_length=1)
    generator: dict[str, Any] = Field(
        default_factory=dict, description="the traffic generator: type = \"fwdgen\" "
                                          "(default) and its settings")
    search: dict[str, Any] = Field(default_factory=lambda: {"type": "sweep", "loads": ["10%"]})
    energy: dict[str, Any] = Field(default_factory=dict)
    matrix: dict[str, list[Any]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _testbed_type(cls, data: Any) -> Any:
        # ``type`` picks the testbed model; a [testbed] table without it is netns
        if isinstance(data, dict) and isinstance(data.get("testbed"), dict) \
                and "type" not in data["testbed"]:
            data = {**data, "testbed": {**data["testbed"], "type": "netns"}}
        return data


class Scenario(BaseModel):
    """One expanded point of the matrix: dut x profile x search settings."""
    idx: int
    name: str
    dut: DutSpec
    profile: Profile
    search: dict[str, Any]          # validated search settings, loads in pps
    trial: TrialSettings
    axes: dict[str, Any]
    max_load_pps: float             # per direction

    @property
    def trial_duration_s(self) -> float:
        return parse_duration(self.trial.duration)


class Campaign(BaseModel):
    path: str
    text: str
    file: CampaignFile
    scenarios: list[Scenario]
    generator_type: str = "fwdgen"
    generator_settings: dict[str, Any] = Field(default_factory=dict)

    def make_generator(self, tester):
        """The campaign's generator on ``tester`` (traffic.base.TesterHost)."""
        from .traffic import GENERATORS
        return GENERATORS[self.generator_type](self.generator_settings, tester)

    @property
    def name(self) -> str:
        return self.file.campaign.name

    @property
    def repetitions(self) -> int:
        return self.file.campaign.repetitions


# -- loading ---------------------------------------------------------------

def load_campaign(path: str | Path) -> Campaign:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CampaignError(f"{p}: cannot read the campaign file: {e.strerror}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError(f"{p}: not valid TOML: {e}") from None
    return build_campaign(raw, str(p), text)


def build_campaign(raw: dict[str, Any], path: str = "<campaign>", text: str = "") -> Campaign:
    try:
        cf = CampaignFile.model_validate(raw)
    except ValidationError as e:
        raise campaign_error(e, CampaignFile, file=path) from None
    _check_names(cf, path)
    from .meters import parse_energy_settings
    parse_energy_settings(cf.energy, file=path)
    gen_type, gen_settings = _generator(cf, path)
    scenarios = expand(cf, path)
    return Campaign(path=path, text=text, file=cf, scenarios=scenarios,
                    generator_type=gen_type, generator_settings=gen_settings)


def _generator(cf: CampaignFile, path: str) -> tuple[str, dict[str, Any]]:
    """``[generator]``: its type (fwdgen when omitted) and validated settings."""
    from .traffic import GENERATORS
    settings = dict(cf.generator)
    kind = settings.pop("type", "fwdgen")
    if kind not in GENERATORS:
        raise CampaignError(f"{path}: generator.type: {kind!r} is not a generator "
                            f"({', '.join(sorted(GENERATORS))})")
    if cf.testbed.type == "sim" and (kind != "fwdgen" or settings):
        raise CampaignError(f"{path}: generator: the sim testbed has no generator "
                            f"(simulated DUTs answer trials themselves); remove [generator]")
    try:
        return kind, GENERATORS[kind].validate(settings, "generator")
    except CampaignError as e:
        raise CampaignError(f"{path}: {e}") from None


def _check_names(cf: CampaignFile, path: str) -> None:
    for kind, items in (("dut", cf.dut), ("profile", cf.profile)):
        seen: set[str] = set()
        for i, it in enumerate(items):
            if not NAME_RE.match(it.name):
                raise CampaignError(f"{path}: {kind}[{i}].name: {it.name!r} must be letters, "
                                    "digits, '_', '.' or '-' (at most 64)")
            if it.name in seen:
                raise CampaignError(f"{path}: {kind}[{i}].name: {it.name!r} is used twice; "
                                    "names must be unique")
            seen.add(it.name)
    if cf.testbed.type == "netns" and cf.testbed.gen_cpu == cf.testbed.dut_cpu:
        raise CampaignError(f"{path}: testbed.dut_cpu: the generator and the DUT must run on "
                            f"different CPUs (both are {cf.testbed.gen_cpu})")


# -- matrix expansion ------------------------------------------------------

AXIS_ROOTS = ("dut", "profile", "search", "trial")   # and "exclude" (a list of points)


def _set_path(d: dict, dotted: list[str], value: Any) -> None:
    for k in dotted[:-1]:
        d = d.setdefault(k, {})
    d[dotted[-1]] = value


def _excludes(cf: CampaignFile, path: str, axis_names: set[str]) -> list[dict[str, Any]]:
    """matrix.exclude: partial points; scenarios matching every key of one are dropped."""
    out = []
    for i, ex in enumerate(cf.matrix.get("exclude", [])):
        where = f"{path}: matrix.exclude[{i}]"
        if not isinstance(ex, dict) or not ex:
            raise CampaignError(f"{where}: give a table of axis = value, "
                                "e.g. { dut = \"linux-nat\", profile = \"bi\" }")
        for k in ex:
            if k not in axis_names:
                raise CampaignError(f"{where}.{k}: not an axis of this matrix "
                                    f"({', '.join(sorted(axis_names))})")
        out.append(ex)
    return out


def _axes(cf: CampaignFile, path: str) -> list[tuple[str, list[Any]]]:
    axes = []
    for key, values in cf.matrix.items():
        if key == "exclude":
            continue
        where = f"{path}: matrix.{key}"
        root = key.split(".")[0]
        if root not in AXIS_ROOTS:
            raise CampaignError(f"{where}: unknown axis; axes start with one of "
                                f"{', '.join(AXIS_ROOTS)} (e.g. 'profile.frame_size')")
        if not values:
            raise CampaignError(f"{where}: the axis is empty; give at least one value")
        if key in ("dut", "profile"):
            names = [x.name for x in getattr(cf, key)]
            for i, v in enumerate(values):
                if v not in names:
                    raise CampaignError(f"{where}[{i}]: {v!r} is not a {key} name of this "
                                        f"campaign ({', '.join(names)})")
        if key == "dut.params" or key == "profile.name" or key == "dut.name":
            raise CampaignError(f"{where}: use the axis '{key.split('.')[0]}' to list names")
        axes.append((key, list(values)))
    return axes


def expand(cf: CampaignFile, path: str) -> list[Scenario]:
    from .dut import load_drivers
    from .search_config import validate_search

    drivers = load_drivers()
    axes = _axes(cf, path)
    duts = {d.name: d for d in cf.dut}
    profiles = {p.name: p for p in cf.profile}
    names = [k for k, _ in axes]
    if "dut" not in names:
        axes.insert(0, ("dut", list(duts)))
    if "profile" not in names:
        axes.insert(1, ("profile", list(profiles)))
    excludes = _excludes(cf, path, {k for k, _ in axes})

    out: list[Scenario] = []
    for combo in itertools.product(*(v for _, v in axes)):
        point = dict(zip((k for k, _ in axes), combo))
        if any(all(point[k] == v for k, v in ex.items()) for ex in excludes):
            continue
        dut = duts[point["dut"]].model_dump()
        prof = profiles[point["profile"]].model_dump()
        search = copy.deepcopy(cf.search)
        trial = cf.trial.model_dump()
        parts = {"dut": dut, "profile": prof, "search": search, "trial": trial}
        for key, value in point.items():
            if key in ("dut", "profile"):
                continue
            root, *rest = key.split(".")
            _set_path(parts[root], rest, value)
        where_pt = ", ".join(f"{k}={v}" for k, v in point.items())
        idx = len(out)
        scenario = f"scenario {idx} ({where_pt})"
        tag = f"{path}: {scenario}"
        # validate every part of the point
        try:
            profile = Profile.model_validate(prof)
        except ValidationError as e:
            raise campaign_error(e, Profile, file=path, context=scenario,
                                 where="profile") from None
        try:
            trial_s = TrialSettings.model_validate(trial)
        except ValidationError as e:
            raise campaign_error(e, TrialSettings, file=path, context=scenario,
                                 where="trial") from None
        try:
            dspec = DutSpec.model_validate(dut)
        except ValidationError as e:
            raise campaign_error(e, DutSpec, file=path, context=scenario,
                                 where="dut") from None
        if dspec.type not in drivers:
            raise CampaignError(f"{tag}: dut.type: {dspec.type!r} is not a DUT driver "
                                f"({', '.join(sorted(drivers))})")
        if dspec.type == "sim" and cf.testbed.type != "sim" or \
                dspec.type != "sim" and cf.testbed.type == "sim":
            raise CampaignError(f"{tag}: dut.type: {dspec.type!r} needs testbed.type = "
                                f"{'sim' if dspec.type == 'sim' else 'netns'}")
        di = [d.name for d in cf.dut].index(dspec.name)
        try:
            dspec.params = drivers[dspec.type].validate(dspec.params, f"dut[{di}].params")
        except CampaignError as e:      # one line per problem, each names file and scenario
            raise CampaignError("\n".join(f"{tag}: {line}" for line in str(e).splitlines())) \
                from None
        max_pps = _max_load(cf, profile, path)
        search_v = validate_search(search, tag, frame_size=profile.frame_size,
                                   max_pps=max_pps, trial=trial_s)
        label = [dspec.name, profile.name] + [
            f"{k.split('.')[-1]}={v}" for k, v in point.items() if k not in ("dut", "profile")]
        out.append(Scenario(idx=idx, name=" ".join(label), dut=dspec, profile=profile,
                            search=search_v, trial=trial_s,
                            axes={k: v for k, v in point.items()}, max_load_pps=max_pps))
    return out


def _max_load(cf: CampaignFile, profile: Profile, path: str) -> float:
    line = line_rate_pps(parse_bitrate(cf.testbed.line_rate), profile.frame_size)
    if cf.testbed.max_load is None:
        return line
    try:
        cap = parse_load(cf.testbed.max_load, frame_size=profile.frame_size, max_pps=math.inf)
    except UnitError as e:
        raise CampaignError(f"{path}: testbed.max_load: {e}") from None
    return min(line, cap)
