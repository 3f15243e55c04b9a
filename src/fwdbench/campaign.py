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
from .text import shown
from .units import (UnitError, line_rate_pps, parse_bitrate, parse_duration, parse_load,
                    parse_trial_duration)
from .validation import campaign_error

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
VARY_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")
MAX_FILE_BYTES = 10 * 2**20     # a campaign file is text: at most 10 MiB
MAX_DEPTH = 32                  # tables and arrays nested at most this deep
MAX_SCENARIOS = 10_000          # scenarios one campaign may expand to
WARN_SCENARIOS = 1_000          # more than this: plan/run say how many and how long
INT64 = (-2**63, 2**63 - 1)     # integers a campaign may hold (the store's range)


class Strict(BaseModel):
    # TOML is typed: no true for a number, no "5" for an integer, no nan or inf
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class CampaignInfo(Strict):
    name: str = Field(description="used for results/<name>.sqlite; letters, digits, _ . -")
    description: str = ""
    question: str = Field("", description="the question the campaign answers (report summary)")
    repetitions: int = Field(1, ge=1, le=1000, description="repetitions of every scenario")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{shown(v)} must be 1-64 letters, digits, '_', '.' or '-'")
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

    @field_validator("max_load")
    @classmethod
    def _max_load(cls, v):
        if v is None:
            return v
        if isinstance(v, str) and v.strip().endswith("%"):
            # a share of the line rate: (0, 100 %]
            try:
                pct = float(v.strip()[:-1])
            except ValueError:
                raise ValueError(f"{shown(v)} is not a load") from None
            if not 0 < pct <= 100:
                raise ValueError(f"{shown(v)} is not a share of the line rate in (0, 100 %]; "
                                 "give the cap in pps ('3Mpps') or as a share up to '100%'")
            return v
        try:
            parse_load(v, frame_size=64, max_pps=math.inf)
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
    link: Literal["veth", "memif"] = Field(
        "veth", description="how user-space DUTs (vfwd, testpmd, vpp) meet the generator: "
                            "veth, or memif (shared memory, no kernel on the path); kernel "
                            "and XDP DUTs always use veth")
    memif_ring_size: int | None = Field(
        None, description="slots per memif ring on the memif link (a power of two, 64 .. "
                           "16384), both directions, whichever side brings the rings (the "
                           "slave): the queue that rides out a stall of the side that polls "
                           "it. Unset: each side's own default (VPP, DPDK and fwdgen 1024, "
                           "vfwd 2048). A DUT param that sizes its own rings (vfwd's "
                           "ring_size, VPP's rxq_size) wins")

    @field_validator("memif_ring_size")
    @classmethod
    def _memif_ring_size(cls, v):
        if v is None:
            return v
        if not 64 <= v <= 16384 or v & (v - 1):
            raise ValueError(f"{v} is not a power of two in 64 .. 16384 (libmemif's and "
                             f"DPDK's largest ring: 2^14 slots)")
        return v


class SimTestbed(TestbedBase):
    """``type = "sim"``: simulated DUTs, no packets (tests of searches and reports)."""
    type: Literal["sim"]


IFNAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}$")
PCI_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}$")


class SshPort(Strict):
    """One link of the ssh testbed: a DUT host port and the tester port cabled to it."""
    dut: str = Field(description="the DUT host's port: an interface name (enp1s0f0) or its "
                                 "PCI address (0000:01:00.0)")
    dut_mac: str | None = Field(None, description="its MAC (default: read on the DUT host)")
    tg: str = Field(description="the tester's port (on this host) cabled to it: an "
                                "interface name")
    tg_mac: str | None = Field(None, description="its MAC (default: read on this host)")
    numa_node: int | None = Field(None, ge=0, description="NUMA node the DUT port must be on "
                                                          "(checked before the first trial)")

    @field_validator("dut")
    @classmethod
    def _dut(cls, v: str) -> str:
        if not (IFNAME_RE.match(v) or PCI_RE.match(v)):
            raise ValueError(f"{v!r} is neither an interface name (1-15 characters, no '/' "
                             f"or blanks) nor a PCI address such as 0000:01:00.0")
        return v

    @field_validator("tg")
    @classmethod
    def _tg(cls, v: str) -> str:
        if not IFNAME_RE.match(v):
            raise ValueError(f"{v!r} is not an interface name (1-15 characters, no '/' or "
                             f"blanks)")
        return v

    @field_validator("dut_mac", "tg_mac")
    @classmethod
    def _mac(cls, v: str | None) -> str | None:
        if v is not None and not MAC_RE.match(v):
            raise ValueError(f"{v!r} is not a MAC address such as 02:fb:00:00:01:01")
        return None if v is None else v.lower()


class SshTestbed(TestbedBase):
    """``type = "ssh"``: the generator on this host's (the tester's) ports, the DUT on
    another host reached with OpenSSH (docs/testbeds.md)."""
    type: Literal["ssh"]
    host: str = Field(description="the DUT host: user@host, or a Host alias of the ssh config")
    port: int | None = Field(None, ge=1, le=65535, description="sshd's port (default: the "
                                                               "ssh config's, or 22)")
    identity: str | None = Field(None, description="private key file (default: the ssh "
                                                   "config's / ssh-agent's keys)")
    ssh_config: str | None = Field(None, description="ssh config file instead of ~/.ssh/config")
    ssh_options: list[str] = Field(default_factory=list,
                                   description="more ssh -o options, e.g. \"ProxyJump=gw\"")
    host_key_check: Literal["strict", "accept-new"] = Field(
        "strict", description="strict: the host key must be in known_hosts; accept-new: "
                              "record an unknown one at first contact (never a changed one)")
    sudo: Literal["auto", "always", "never"] = Field(
        "auto", description="run the DUT host's commands with `sudo -n`: auto when the "
                            "login user is not root")
    connect_timeout: str | float = Field("10s", description="[s] to reach sshd")
    workdir: str = Field("/var/lib/fwdbench", description="directory on the DUT host for "
                                                         "fwdbench's programs and run files")
    dut_cpus: list[int] = Field(min_length=1, description="CPUs of the DUT host the data "
                                                          "plane may use")
    gen_cpus: list[int] = Field(default_factory=lambda: [0], min_length=1,
                                description="CPUs of this host for the generator")
    ports: list[SshPort] = Field(min_length=2, max_length=2,
                                 description="the two links, as cabled")
    ipv6: bool = Field(True, description="IPv6 addresses on the DUT ports")

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v or v.startswith("-") or any(c.isspace() for c in v):
            raise ValueError(f"{v!r} is not a user@host or ssh config alias (no blanks, "
                             f"no leading '-')")
        return v

    @field_validator("ssh_options")
    @classmethod
    def _opts(cls, v: list[str]) -> list[str]:
        from .remote.ssh import OWN_OPTIONS
        for o in v:
            key, eq, _val = o.partition("=")
            if not eq or not key.strip() or any(c.isspace() for c in key):
                raise ValueError(f"{o!r} must be Key=Value, e.g. \"ProxyJump=gw\"")
            if key.strip().lower() in OWN_OPTIONS:
                raise ValueError(f"{o!r}: fwdbench sets {key.strip()} itself (one "
                                 f"ControlMaster connection per run, batch mode)")
        return v

    @field_validator("connect_timeout")
    @classmethod
    def _timeout(cls, v):
        try:
            s = parse_duration(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        if s <= 0:
            raise ValueError(f"{v!r} must be above 0 s")
        return v

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if not v.startswith("/") or any(c.isspace() or c in ",:!'\"\\" for c in v) \
                or "/../" in v + "/" or v.rstrip("/") == "":
            raise ValueError(f"{v!r} must be an absolute path without blanks, quotes, "
                             f"',', ':', '!' or '..' (not /)")
        return v.rstrip("/")

    @field_validator("dut_cpus", "gen_cpus")
    @classmethod
    def _cpus(cls, v: list[int]) -> list[int]:
        if any(c < 0 for c in v) or len(set(v)) != len(v):
            raise ValueError(f"{v!r} must list distinct CPU numbers >= 0")
        return v

    @field_validator("ports")
    @classmethod
    def _distinct_ports(cls, v: list[SshPort]) -> list[SshPort]:
        for side in ("dut", "tg"):
            names = [getattr(p, side) for p in v]
            if len(set(names)) != len(names):
                raise ValueError(f"both links name {side} port {names[0]!r}; each link has "
                                 f"its own ports")
        return v


#: ``[testbed]``, one model per kind, chosen by ``type`` (netns when omitted)
Testbed = Annotated[Union[NetnsTestbed, SimTestbed, SshTestbed], Field(discriminator="type")]
TESTBED_TYPES = ("netns", "sim", "ssh")


class TrialSettings(Strict):
    duration: str | float = Field("2s", description="default measured trial duration [s]")
    warmup: str | float = Field("0.5s", description="traffic sent and discarded before each trial [s]")
    warmup_trial: bool = Field(True, description="one discarded trial per scenario before measuring (as CSIT)")
    drain: str | float = Field("0.2s", description="wait for in-flight frames after TX ends [s]")
    latency_stream: bool = Field(False, description="a low-rate latency stream beside the load")
    latency_rate: float = Field(9000, gt=0, le=100000, description="latency stream rate [pps]")
    backend: Literal["auto", "xdp", "afpacket", "afxdp"] = "auto"

    @field_validator("duration")
    @classmethod
    def _trial_dur(cls, v):
        try:
            parse_trial_duration(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("warmup", "drain")
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
    link: Literal["veth", "memif"] | None = Field(
        None, description="how the DUT meets the generator in the lab: veth (kernel ports) or "
                          "memif (shared-memory interfaces, user-space DUTs: vfwd, testpmd, "
                          "vpp); default: testbed.link for DUTs that can use it, else veth")


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
    #: the DUT's link came from testbed.link (memif there means "where it can":
    #: a lab without memif support falls back to veth, saying so)
    link_from_testbed: bool = True

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
    warnings: list[str] = Field(default_factory=list)   # valid, but maybe not what was meant

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
        if p.stat().st_size > MAX_FILE_BYTES:
            raise CampaignError(f"{p}: {p.stat().st_size:,} bytes; a campaign file is text of "
                                f"at most {MAX_FILE_BYTES // 2**20} MiB")
        data = p.read_bytes()
    except OSError as e:
        raise CampaignError(f"{p}: cannot read the campaign file: {e.strerror or e}") from None
    text = decode_text(data, str(p))
    return build_campaign(parse_toml(text, str(p)), str(p), text)


def decode_text(data: bytes, path: str) -> str:
    """The bytes of a campaign file as text: UTF-8 (a BOM is dropped), else an error
    naming the line and the byte."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise CampaignError(f"{path}: the file is UTF-16 text; campaign files are UTF-8: "
                            "save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CampaignError(f"{path}:{line}: byte 0x{data[e.start]:02x} at column {col} is not "
                            "UTF-8 (is this a text file?); save the campaign file as UTF-8") \
            from None


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """TOML -> tables; every failure is one line naming the file."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError(f"{path}: not valid TOML: {shown(str(e), 300)[1:-1]}") from None
    except RecursionError:
        raise CampaignError(f"{path}: not valid TOML: tables or arrays nested too deeply "
                            f"(a campaign nests at most {MAX_DEPTH} levels)") from None
    except ValueError as e:          # e.g. an integer of more than 4300 digits
        why = ("a number has more than 4300 digits" if "digits" in str(e)
               else shown(str(e), 300)[1:-1])
        raise CampaignError(f"{path}: not valid TOML: {why}") from None


def check_values(raw: Any, path: str, where: str = "", depth: int = 0) -> None:
    """Refuse what no campaign field takes, wherever it is: NaN and infinities,
    integers beyond 64 bits, nesting deeper than MAX_DEPTH."""
    at = where or "(top level)"
    if depth > MAX_DEPTH:
        raise CampaignError(f"{path}: {at}: nested more than {MAX_DEPTH} levels deep; "
                            "flatten it")
    if isinstance(raw, dict):
        for k, v in raw.items():
            check_values(v, path, f"{where}.{k}" if where else str(k), depth + 1)
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            check_values(v, path, f"{where}[{i}]", depth + 1)
    elif isinstance(raw, bool):
        return
    elif isinstance(raw, int) and not INT64[0] <= raw <= INT64[1]:
        raise CampaignError(f"{path}: {at}: {shown(raw)} is beyond the 64-bit integer range; "
                            "give a smaller number")
    elif isinstance(raw, float) and not math.isfinite(raw):
        raise CampaignError(f"{path}: {at}: {raw} is not a finite number; give a number "
                            "(nan and inf are not allowed)")


def build_campaign(raw: dict[str, Any], path: str = "<campaign>", text: str = "") -> Campaign:
    check_values(raw, path)
    try:
        cf = CampaignFile.model_validate(raw)
    except ValidationError as e:
        raise campaign_error(e, CampaignFile, file=path) from None
    _check_names(cf, path)
    from .meters import parse_energy_settings
    parse_energy_settings(cf.energy, file=path)
    gen_type, gen_settings = _generator(cf, path)
    warnings: list[str] = []
    scenarios = expand(cf, path, warnings,
                       generator_links=_generator_links(gen_type, gen_settings))
    return Campaign(path=path, text=text, file=cf, scenarios=scenarios,
                    generator_type=gen_type, generator_settings=gen_settings,
                    warnings=warnings)


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
                raise CampaignError(f"{path}: {kind}[{i}].name: {shown(it.name)} must be letters, "
                                    "digits, '_', '.' or '-' (at most 64)")
            if it.name in seen:
                raise CampaignError(f"{path}: {kind}[{i}].name: {shown(it.name)} is used twice; "
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


def _excludes(cf: CampaignFile, path: str, axes: list[tuple[str, list[Any]]]
              ) -> list[dict[str, Any]]:
    """matrix.exclude: partial points; scenarios matching every key of one are dropped.
    Each value must be one of its axis's values (a misspelt name would exclude nothing)."""
    values = dict(axes)
    out = []
    for i, ex in enumerate(cf.matrix.get("exclude", [])):
        where = f"{path}: matrix.exclude[{i}]"
        if not isinstance(ex, dict) or not ex:
            raise CampaignError(f"{where}: give a table of axis = value, "
                                "e.g. { dut = \"linux-nat\", profile = \"bi\" }")
        for k, v in ex.items():
            if k not in values:
                raise CampaignError(f"{where}.{shown(k)[1:-1]}: not an axis of this matrix "
                                    f"({', '.join(sorted(values))})")
            if not any(_same(v, x) for x in values[k]):
                raise CampaignError(
                    f"{where}.{k}: {shown(v)} is not a value of the axis {k} "
                    f"({', '.join(shown(x, 30) for x in values[k][:20])}"
                    f"{', ...' if len(values[k]) > 20 else ''}); it would exclude nothing")
        out.append(ex)
    return out


def _same(a: Any, b: Any) -> bool:
    """Axis values as TOML gives them: 1 and 1.0 match, true and 1 do not."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


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


def _generator_links(kind: str, settings: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The lab links the campaign's generator serves with these settings."""
    from .traffic import GENERATORS
    return GENERATORS[kind].links_for(settings or {})


def expand(cf: CampaignFile, path: str, warnings: list[str] | None = None,
           generator_links: tuple[str, ...] = ("veth", "memif")) -> list[Scenario]:
    from .dut import load_drivers
    from .search_config import validate_search

    warnings = warnings if warnings is not None else []
    drivers = load_drivers()
    axes = _axes(cf, path)
    duts = {d.name: d for d in cf.dut}
    profiles = {p.name: p for p in cf.profile}
    names = [k for k, _ in axes]
    if "dut" not in names:
        axes.insert(0, ("dut", list(duts)))
    if "profile" not in names:
        axes.insert(1, ("profile", list(profiles)))
    excludes = _excludes(cf, path, axes)
    points = math.prod(len(v) for _, v in axes)
    if points > MAX_SCENARIOS:
        sizes = " x ".join(f"{len(v)} {k}" for k, v in axes)
        raise CampaignError(
            f"{path}: matrix: {sizes} is {points:,} scenarios (before excludes), more than "
            f"the {MAX_SCENARIOS:,} one campaign may hold; split it into several campaigns "
            "or shorten the axes")

    out: list[Scenario] = []
    for combo in itertools.product(*(v for _, v in axes)):
        point = dict(zip((k for k, _ in axes), combo))
        if any(all(_same(point[k], v) for k, v in ex.items()) for ex in excludes):
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
                                f"{'sim' if dspec.type == 'sim' else 'netns or ssh'}")
        di = [d.name for d in cf.dut].index(dspec.name)
        explicit_link = dspec.link is not None
        dspec.link = _link(cf, dspec, drivers[dspec.type], f"{tag}: dut[{di}].link",
                           generator_links)
        try:
            dspec.params = drivers[dspec.type].validate(dspec.params, f"dut[{di}].params")
            # the netns lab gives the DUT one CPU (testbed.dut_cpu), ssh its dut_cpus
            drivers[dspec.type].fits_testbed(
                dspec.params, 1 if cf.testbed.type == "netns" else
                len(cf.testbed.dut_cpus) if cf.testbed.type == "ssh" else None,
                f"dut[{di}].params")
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
                            axes={k: v for k, v in point.items()}, max_load_pps=max_pps,
                            link_from_testbed=not explicit_link))
    if not out:
        raise CampaignError(f"{path}: matrix.exclude removes all {points:,} scenarios of the "
                            "matrix; nothing would run. Remove an exclude or widen an axis")
    if len(out) > WARN_SCENARIOS:
        warnings.append(f"{path}: the matrix expands to {len(out):,} scenarios; check the plan's "
                        "estimated duration before running it")
    _check_max_load(cf, path, warnings)
    return out


def _check_max_load(cf: CampaignFile, path: str, warnings: list[str]) -> None:
    """A max_load above the line rate of every frame size tested caps nothing."""
    tb = cf.testbed
    if tb.max_load is None or str(tb.max_load).strip().endswith("%"):
        return
    line = parse_bitrate(tb.line_rate)
    sizes = {p.frame_size for p in cf.profile}
    if "profile.frame_size" in cf.matrix:
        sizes |= {v for v in cf.matrix["profile.frame_size"] if isinstance(v, (int, str))}
    if all(_cap_pps(tb.max_load, fs) >= line_rate_pps(line, fs) for fs in sizes
           if fs == "imix" or isinstance(fs, int)):
        warnings.append(f"{path}: testbed.max_load {shown(tb.max_load)} is at or above the line "
                        f"rate ({shown(tb.line_rate)}) for every frame size here, so it caps "
                        "nothing; lower it to the generator's limit or remove it")


def _cap_pps(max_load: Any, frame_size: Any) -> float:
    try:
        return parse_load(max_load, frame_size=frame_size, max_pps=math.inf)
    except (UnitError, ValueError, TypeError):
        return math.inf


def _link(cf: CampaignFile, dspec: DutSpec, driver, where: str,
          generator_links: tuple[str, ...] = ("veth", "memif")) -> str | None:
    """The DUT's link in the lab: its own, else the testbed's where the driver and
    the generator can use it, else veth (None on the sim testbed, which has no links)."""
    if cf.testbed.type == "sim":
        if dspec.link is not None:
            raise CampaignError(f"{where}: the sim testbed has no links; remove it")
        return None
    if cf.testbed.type == "ssh":        # the DUT host's NIC ports, kernel interfaces
        if dspec.link not in (None, "veth"):
            raise CampaignError(f"{where}: {dspec.link!r}: memif is shared memory on one "
                                f"host; on the ssh testbed the DUT meets the generator "
                                f"through the DUT host's ports (remove it)")
        return "veth"
    if dspec.link is None:
        link = cf.testbed.link
        return link if link in driver.links and link in generator_links else "veth"
    if dspec.link not in driver.links:
        raise CampaignError(f"{where}: {dspec.link!r}: the {dspec.type} DUT runs on "
                            f"{', '.join(driver.links)} only")
    if dspec.link not in generator_links:
        raise CampaignError(f"{where}: {dspec.link!r}: this campaign's generator has "
                            f"{', '.join(generator_links)} ports only; memif needs fwdgen, "
                            f"or trex with a server fwdbench starts (no generator.host)")
    return dspec.link


def _max_load(cf: CampaignFile, profile: Profile, path: str) -> float:
    """The highest load per direction [pps]: the line rate at this frame size, capped by
    testbed.max_load (given in pps, as a bit rate, or as a share of the line rate)."""
    line = line_rate_pps(parse_bitrate(cf.testbed.line_rate), profile.frame_size)
    if cf.testbed.max_load is None:
        return line
    try:
        cap = parse_load(cf.testbed.max_load, frame_size=profile.frame_size, max_pps=line)
    except UnitError as e:
        if str(cf.testbed.max_load).strip().endswith("%"):
            raise CampaignError(f"{path}: testbed.max_load: {e}") from None
        return line          # above the line rate at this frame size: the line rate caps
    return min(line, cap)
