"""`dut = "xdp"`: fwdbench's own XDP programs on the DUT ports.

Modes:
- ``xconnect``: every frame received on dut0 leaves through dut1 and back,
  through a devmap (``bpf_redirect_map``), unchanged.
- ``router``: IPv4 and IPv6 forwarding with ``bpf_fib_lookup`` against the
  DUT namespace's kernel FIB: TTL / hop limit decrement, incremental IPv4
  checksum, MAC rewrite from the lookup, redirect through the devmap.
  Frames the fast path cannot handle (TTL 1, no neighbour, local, not IP)
  go to the kernel stack (XDP_PASS) and are counted by reason. The FIB is
  installed by the linux router itself (a ``LinuxDut`` in mode router,
  ``routes``/``routes6``: forwarding on, nexthops, FIB); the lab's static
  neighbours make the lookups succeed from the first frame. The router does
  not check the destination MAC (as xdp-tools' xdp-forward): the generator
  addresses the DUT port (``peer_macs()``).

Public API: ``XdpDut(params)`` with ``validate``, ``check``, ``setup(host)``,
``counters()`` (``xdp.<reason>.packets|bytes``, ``xdp.rx_packets``,
``xdp.passed_packets``, ``xdp.dropped_packets``, ``xdp.cpu<N>.packets``,
``<dut port>.<rx|tx>_<packets|bytes|dropped|errors>``), ``teardown()``,
``describe()``, ``peer_macs(host)``, ``pids()`` (the DUT ports' NAPI threads)
and ``testrun(frame)`` (BPF_PROG_TEST_RUN: verdict, rewritten frame, [ns]).

The BPF object (native/bpf/xdp_fwd.bpf.c) is loaded and attached by the
``fb-xdp`` loader (native/xdpdut/fb_xdp.c), run in the DUT namespace through
the DUT host's executor; it prints JSON. Nothing is pinned: the programs are held
by the interfaces and vanish with them, so a crashed run leaves nothing once
its namespace is gone.

Note on CPUs: with veth, XDP runs in the receiving port's NAPI poll. The lab
pins the DUT ports' NAPI threads to the DUT CPU (testbed.kernel_tuning);
without threaded NAPI the programs run in the softirq of the sending CPU.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import native
from ..errors import CampaignError, DutError, FwdbenchError
from ..lab.executor import Executor
from ..validation import parse_params
from . import register
from .base import DutDriver

#: the same FIB size limit as the linux router
MAX_ROUTES = 1 << 20

#: Reason names printed by fb-xdp (FB_XDP_REASONS in xdp_fwd_shared.h).
PASS_PREFIX, DROP_PREFIX = "pass_", "drop_"


def fb_xdp_paths() -> tuple[Path, Path]:
    """(loader binary, BPF object beside it). The binary may also come from $PATH."""
    binary = native.tool("fb-xdp")
    return binary, binary.parent / "xdp_fwd.bpf.o"


def _paths_on(host) -> tuple[str, str]:
    """(loader, BPF object) on the DUT host: the object sits beside the loader."""
    binary = host.tool("fb-xdp")
    return binary, str(Path(binary).parent / "xdp_fwd.bpf.o")


class XdpParams(BaseModel):
    """Parameters of `dut.type = "xdp"` (campaign ``dut.params``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mode: Literal["xconnect", "router"] = Field(
        "router", description="xconnect: port to port via a devmap; router: IPv4/IPv6 FIB lookup")
    attach: Literal["native", "generic"] = Field(
        "native", description="XDP attach mode: native (veth driver) or generic (skb)")
    fib_lookup: Literal["full", "direct"] = Field(
        "full", description="bpf_fib_lookup flags: full (policy rules) or direct (main table)")
    routes: int = Field(
        2, ge=1, le=MAX_ROUTES,
        description="IPv4 FIB size [routes] (router), laid out as the linux router's (fib_layout)")
    routes6: int = Field(
        2, ge=1, le=MAX_ROUTES,
        description="IPv6 FIB size [routes] (router), laid out as the linux router's")


def parse_stats(doc: dict[str, Any]) -> dict[str, int]:
    """`fb-xdp stats` JSON -> flat counters: per reason, totals, per CPU."""
    out: dict[str, int] = {}
    rx = passed = dropped = 0
    for reason, c in doc["counters"].items():
        out[f"xdp.{reason}.packets"] = int(c["packets"])
        out[f"xdp.{reason}.bytes"] = int(c["bytes"])
        rx += int(c["packets"])
        if reason.startswith(PASS_PREFIX):
            passed += int(c["packets"])
        elif reason.startswith(DROP_PREFIX):
            dropped += int(c["packets"])
    out["xdp.rx_packets"] = rx
    out["xdp.passed_packets"] = passed
    out["xdp.dropped_packets"] = dropped
    for cpu, n in enumerate(doc.get("cpu_packets", [])):
        out[f"xdp.cpu{cpu}.packets"] = int(n)
    return out


@register
class XdpDut(DutDriver):
    name = "xdp"
    modes = ("xconnect", "router")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        self.p = XdpParams.model_validate(params)
        self.binary, self.obj = fb_xdp_paths()
        self.host = None
        self._ifaces: list[str] = []
        self._attach_info: dict[str, Any] = {}
        self._done: list[str] = []          # setup steps applied, undone in reverse
        self._fib_dut: Any = None           # the linux router that holds the FIB
        self._fib: dict[str, Any] = {}

    # ---- plan time ------------------------------------------------------------

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        p = parse_params(XdpParams, params, where)
        if p.mode == "xconnect":
            for key in ("routes", "routes6", "fib_lookup"):
                if key in params:
                    raise CampaignError(f"{where}.{key}: does not apply to mode 'xconnect' "
                                        f"(no FIB lookup; only to mode 'router')")
            return p.model_dump(mode="json", exclude={"routes", "routes6", "fib_lookup"})
        return p.model_dump(mode="json")

    def check(self, host=None) -> None:
        ex = host.exec if host is not None else Executor(None)
        binary, obj = _paths_on(host) if host is not None else (str(self.binary), str(self.obj))
        for path, what in ((binary, "loader"), (obj, "BPF object")):
            if not ex.exists(path):
                raise DutError(f"xdp: the {what} {path} is missing; build it with "
                               f"'make -C native/xdpdut' (needs clang, llvm, libbpf-dev)")
        try:
            r = ex.run([binary, "probe"], timeout=10, check=False)
        except FwdbenchError as e:
            raise DutError(f"xdp: {binary} probe failed: {e}") from None
        if r.returncode != 0:
            raise DutError(f"xdp: this kernel lacks a feature the XDP DUT needs (run as root?): "
                           f"{r.stderr.strip() or r.stdout.strip()}")

    def peer_macs(self, host=None) -> dict[str, str]:
        """Destination MAC the generator writes on each tg port for this mode."""
        host = host or self.host
        if host is None:
            from ..lab import PORTS as ports
        else:
            ports = list(host.ports)[:2]
        if self.p.mode == "xconnect":  # frames arrive unchanged at the other tg port
            return {ports[0].tg_ifname: ports[1].tg_mac, ports[1].tg_ifname: ports[0].tg_mac}
        return {p.tg_ifname: p.dut_mac for p in ports}

    # ---- lifecycle ------------------------------------------------------------

    def setup(self, host) -> None:
        if self.host is not None:
            raise DutError("xdp: setup() called twice without teardown()")
        self.host = host
        self._bin, self._obj = _paths_on(host)
        ports = list(host.ports)[:2]
        if len(ports) != 2:
            raise DutError(f"xdp: the DUT host has {len(ports)} ports, the XDP DUT needs 2")
        self._ifaces = [p.dut_ifname for p in ports]
        try:
            if self.p.mode == "router":
                self._setup_router(host)
            self._done.append("attach")
            self._attach_info = self._fb_xdp(
                ["attach", "--mode", self.p.mode, "--attach", self.p.attach,
                 "--fib", self.p.fib_lookup, "--obj", self._obj])
        except BaseException:
            self.teardown()
            raise

    def counters(self) -> dict[str, int]:
        """Cumulative: per-reason XDP packets/bytes and totals, DUT port counters."""
        if self.host is None:
            raise DutError("xdp: counters() before setup()")
        out = parse_stats(self._fb_xdp(["stats"]))
        out.update(self._link_counters())
        return out

    def pids(self) -> list[int]:
        """The DUT ports' NAPI threads (where XDP runs), as the testbed pinned them."""
        if self.host is None:
            return []
        return self.host.napi_pids()

    def teardown(self) -> None:
        host, self.host = self.host, None
        if host is None:
            return
        errors: list[str] = []
        for step in reversed(self._done):
            try:
                if step == "attach":
                    present = [i for i in self._ifaces if self._link_exists(host, i)]
                    if present:
                        self._fb_xdp(["detach"], ifaces=present, host=host)
                elif step == "fib" and self._fib_dut is not None:
                    fib_dut, self._fib_dut = self._fib_dut, None
                    fib_dut.teardown()          # FIB, forwarding off, the lab's baseline
            except Exception as e:  # keep undoing the rest
                errors.append(f"{step}: {e}")
        self._done = []
        if errors:
            raise DutError(f"xdp teardown ({self.p.mode}) in {host.name}: " + "; ".join(errors))

    def describe(self) -> dict[str, Any]:
        progs = [{k: i.get(k) for k in ("ifname", "attach_mode", "prog_id", "prog_name",
                                         "prog_tag", "xlated_insns", "jited")}
                 for i in self._attach_info.get("ifaces", [])]
        d: dict[str, Any] = {
            "dut": "xdp",
            "mode": self.p.mode,
            "params": self.p.model_dump(mode="json"),
            "kernel": self._attach_info.get("kernel") or os.uname().release,
            "libbpf": self._attach_info.get("libbpf", ""),
            "programs": progs,
            "loader": getattr(self, "_bin", str(self.binary)),
            "object": getattr(self, "_obj", str(self.obj)),
            "object_sha256": _sha256(self.obj),
            "fast_path": ("bpf_redirect_map dut0<->dut1 (devmap), frames unchanged"
                          if self.p.mode == "xconnect" else
                          "bpf_fib_lookup, TTL/hop limit -1, IPv4 checksum update, MAC rewrite, "
                          "bpf_redirect_map; other frames XDP_PASS to the kernel (counted)"),
        }
        if self.p.mode == "router":
            d["fib"] = self._fib
        if self.host is not None:
            d["peer_macs"] = self.peer_macs()
            threaded = {}
            for ifn in self._ifaces:
                r = self.host.exec.run(["cat", f"/sys/class/net/{ifn}/threaded"], timeout=10,
                                          check=False)
                threaded[ifn] = _out(r).strip() if _rc(r) == 0 else None
            d["napi_threaded"] = threaded
        return d

    def testrun(self, frame: bytes, repeat: int = 1, calls: int = 1,
                ingress: int = 0) -> dict[str, Any]:
        """Run a private copy of this DUT's program on ``frame`` (BPF_PROG_TEST_RUN) as
        if received on DUT port ``ingress``: verdict, rewritten frame, cost [ns].

        Each call rewrites the frame in place ``repeat`` times (the router
        lowers the TTL each time): keep ``repeat`` below the frame's TTL to
        time the fast path. Needs setup() (the namespace, its FIB).
        """
        if self.host is None:
            raise DutError("xdp: testrun() before setup()")
        ifaces = self._ifaces[ingress:] + self._ifaces[:ingress]
        args = ["testrun", "--mode", self.p.mode, "--attach", self.p.attach,
                "--fib", self.p.fib_lookup, "--obj", self._obj, "--frame", frame.hex(),
                "--repeat", str(repeat), "--calls", str(calls)]
        out = self._fb_xdp(args, ifaces=ifaces if self.p.mode == "router" else ifaces[:2])
        out["frame_out"] = bytes.fromhex(out["frame_out"])
        return out

    # ---- helpers --------------------------------------------------------------

    def _fb_xdp(self, args: list[str], ifaces: list[str] | None = None,
                host=None) -> dict[str, Any]:
        ex = (host or self.host).exec
        argv = [self._bin, *args, "--ifaces", ",".join(ifaces or self._ifaces)]
        r = ex.run(argv, timeout=30, check=False)
        if _rc(r) != 0:
            raise DutError(f"xdp: fb-xdp {' '.join(argv[1:])} failed (exit {_rc(r)}): "
                           f"{_err(r).strip() or _out(r).strip()}")
        try:
            return json.loads(_out(r))
        except ValueError:
            raise DutError(f"xdp: fb-xdp {args[0]} printed no JSON: {_out(r)[:200]!r}") from None

    @staticmethod
    def _link_exists(host, ifname: str) -> bool:
        r = host.exec.run(["ip", "link", "show", "dev", ifname], timeout=10, check=False)
        return _rc(r) == 0

    def _link_counters(self) -> dict[str, int]:
        return {f"{ifn}.{k}": v for ifn, c in self.host.interface_counters().items()
                for k, v in c.items()}

    def _setup_router(self, host) -> None:
        """The linux router's own setup (forwarding on, which bpf_fib_lookup checks;
        nexthops and FIB of ``routes``/``routes6``), without its data plane work:
        the XDP program does the forwarding, the kernel only sees what it passes."""
        from .linux import LinuxDut
        self._done.append("fib")
        self._fib_dut = LinuxDut({"mode": "router", "routes": self.p.routes,
                                  "routes6": self.p.routes6})
        self._fib_dut.setup(host)
        self._fib = self._fib_dut.describe().get("fib", {})


def _sha256(path: Path) -> str:
    import hashlib
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)


def _rc(r: Any) -> int:
    return int(getattr(r, "returncode", 0) or 0)


def _out(r: Any) -> str:
    return _text(getattr(r, "stdout", ""))


def _err(r: Any) -> str:
    return _text(getattr(r, "stderr", ""))
