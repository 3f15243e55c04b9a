"""`dut = "testpmd"`: DPDK's testpmd forwarding between the two DUT ports.

testpmd (Debian ``dpdk-dev``) runs on the DUT host (the lab's DUT namespace,
or a DUT host over SSH) on ``net_af_xdp`` vdevs bound to its two ports
(``net_af_packet`` as fallback), pinned to the DUT CPU with its main lcore,
in interactive mode: the driver talks to it on its console
(``start``, ``show port stats all``, ``show fwd stats all``, ``quit``).
Forward modes: ``io`` (frames unchanged) and ``mac`` (source MAC = egress
port, destination MAC = the generator port behind it).

The console is testpmd's stdin and stdout, on both testbeds one code path
(``_Console``): the host's executor starts it with ``stdin=PIPE``. On the
lab that is a pipe of this process; on a DUT host over SSH it is the stdin
of testpmd's own session over the run's ControlMaster connection
(remote/executor.py): each command is a line written into the open session
(no new SSH session per command), its answer read from the session's
stdout, so the per-trial counters come from the same commands and the same
parser on both. When the driver's process dies, or the connection drops,
testpmd reads EOF and quits by itself (closing its ports detaches the
AF_XDP program): no FIFO or keeper process is needed on the DUT host, so
none can be left there. testpmd carries the run's tag in its environment
there, so a later run would also stop one that did not quit.

Host state: everything on the DUT host goes through its executors
(dpdk_host.py): the PMDs installed and the DPDK version, the tools,
hugepages, the hugetlbfs mount and the DPDK runtime directories through
``host.system_exec`` (the DUT host itself; on the lab this machine's root
namespace, since ``ip netns exec`` would keep a mount private), the ports'
promiscuous mode, queues (ethtool) and XDP leftovers through ``host.exec``.

Memory: hugepages when a hugetlbfs with enough free pages is mounted or they
can be reserved for the run (vm.nr_hugepages raised by what is missing, a
private hugetlbfs mount; both undone in teardown, or after a crash by the
next testpmd setup on that host, and on a DUT host over SSH by the next
run's sweep of a crashed run, remote/leftovers.py), otherwise ``--no-huge``
with a small mbuf pool (--total-num-mbufs=32768 -m 1024).

Counters (cumulative): ``port<N>.<rx_packets|rx_missed|rx_bytes|rx_errors|
rx_nombuf|tx_packets|tx_errors|tx_bytes>`` (ethdev; rx_missed is the AF_XDP
socket's ring overflow), ``port<N>.fwd.<rx|tx>_<packets|dropped|total>`` and
``fwd.*`` (testpmd's forwarding stats). ``pids()`` is testpmd's pid (on the
DUT host). net_af_xdp takes one queue per veth port (a veth has no combined
channels); more queues use net_af_packet.

Cleanup (teardown, also after a failed start): quit testpmd (EOF on its
stdin makes it quit too, so it does not outlive a crashed driver), then
remove /var/run/dpdk/<file-prefix>, its hugepage files, undo promiscuous mode
and queue (channel) changes on the ports, detach an AF_XDP program left
behind and give back reserved hugepages.
"""
from __future__ import annotations

import glob
import os
import re
import secrets
import subprocess
import threading
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import CampaignError, DutError
from ..validation import parse_params
from . import register
from .base import DutDriver
from .dpdk_host import (HUGE_ROOT, PMD_GLOBS, PREFIX_STEM, RUN_DIR, available_pmds,  # noqa: F401
                        dpdk_version, hugepage_meminfo, hugetlbfs_mount, release_hugepages,
                        reserve_hugepages, sweep_stale_hugepages, sweep_stale_runtime_dirs)
from .dpdk_host import proc_start as _proc_start  # noqa: F401

TESTPMD = "dpdk-testpmd"
PROMPT = "testpmd> "
NO_HUGE_MBUFS = 32768
MAX_BURST = 512  # testpmd's MAX_PKT_BURST


class TestpmdParams(BaseModel):
    """Parameters of `dut.type = "testpmd"` (campaign ``dut.params``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mode: Literal["io", "mac"] = Field(
        "mac", description="testpmd forward mode: io (unchanged) or mac (MAC rewrite)")
    pmd: Literal["auto", "af_xdp", "af_packet"] = Field(
        "auto", description="port driver: af_xdp, af_packet, or auto (af_xdp, else af_packet)")
    cores: int = Field(1, ge=1, le=64, description="forwarding lcores (each on a DUT CPU)")
    queues: int = Field(1, ge=1, le=64, description="RX and TX queues per port")
    burst: int = Field(32, ge=1, le=MAX_BURST, description="packets per RX/TX burst [packets]")
    rxd: int | None = Field(None, ge=64, le=16384,
                            description="RX descriptors per queue (--rxd; net_af_xdp: also the "
                                        "buffers it keeps in the fill ring); none: the PMD's "
                                        "default")
    txd: int | None = Field(None, ge=64, le=16384,
                            description="TX descriptors per queue (--txd); none: the PMD's default")
    hugepages: Literal["auto", "reserve", "off"] = Field(
        "auto", description="auto: free mounted hugepages, else reserve them for the run "
                            "(vm.nr_hugepages), else --no-huge; reserve: hugepages or fail; "
                            "off: --no-huge")
    memory_mb: int = Field(1024, ge=64, le=65536, description="EAL memory (-m) [MiB]")
    mbufs: int = Field(NO_HUGE_MBUFS, ge=2048, le=1 << 22,
                       description="mbuf pool size (--total-num-mbufs) [mbufs]")
    af_xdp_busy_budget: int | None = Field(
        None, ge=0, le=1024,
        description="net_af_xdp busy_budget (0 disables preferred busy polling) [packets]")

    @model_validator(mode="after")
    def _fits(self) -> "TestpmdParams":
        if self.cores > 2 * self.queues:
            raise ValueError(f"cores: {self.cores} forwarding cores need at least "
                             f"{(self.cores + 1) // 2} queues per port (2 ports x queues "
                             f"streams); queues is {self.queues}")
        if self.mbufs * 2.5 / 1024 > self.memory_mb:  # ~2.2 KiB per mbuf plus caches
            raise ValueError(f"mbufs: {self.mbufs} mbufs do not fit in memory_mb = "
                             f"{self.memory_mb} MiB (about 2.5 KiB each)")
        return self


def pmd_available(name: str) -> bool:
    """This machine has DPDK's net_<name> (plan time, and the lab's ingress choice;
    on a DUT host the driver asks dpdk_host.available_pmds through its executor)."""
    for pattern in PMD_GLOBS:
        if glob.glob(pattern.format(name=name)):
            return True
    return False


# ---- parsing testpmd's output (tested on recorded output) ------------------------

_NIC_BLOCK = re.compile(r"NIC statistics for port (\d+)\s*#+\s*\n(.*?)\n\s*#{20,}", re.S)
_FWD_BLOCK = re.compile(r"Forward statistics for port (\d+)\s*-+\s*\n(.*?)\n\s*-{20,}", re.S)
_ACC_BLOCK = re.compile(r"Accumulated forward statistics for all ports\+*\s*\n(.*?)\n\s*\+{20,}",
                        re.S)
_PAIR = re.compile(r"([A-Za-z][A-Za-z-]*):\s*(\d+)")


def _pairs(text: str) -> dict[str, int]:
    out = {}
    for key, val in _PAIR.findall(text):
        k = key.lower().replace("-", "_")
        if k.endswith("pps") or k.endswith("bps"):
            continue  # "Throughput (since last show)" is a rate, not a counter
        out[k] = int(val)
    return out


def parse_port_stats(text: str) -> dict[str, int]:
    """`show port stats all` -> {"port0.rx_packets": n, "port0.rx_missed": n, ...}."""
    out = {}
    for port, body in _NIC_BLOCK.findall(text):
        body = body.split("Throughput")[0]
        for k, v in _pairs(body).items():
            out[f"port{port}.{k}"] = v
    return out


def parse_fwd_stats(text: str) -> dict[str, int]:
    """`show fwd stats all` -> {"port0.fwd.rx_packets": n, ..., "fwd.tx_dropped": n}."""
    out = {}
    for port, body in _FWD_BLOCK.findall(text):
        for k, v in _pairs(body).items():
            out[f"port{port}.fwd.{k}"] = v
    m = _ACC_BLOCK.search(text)
    if m:
        for k, v in _pairs(m.group(1)).items():
            out[f"fwd.{k}"] = v
    return out


def stats_complete(text: str) -> bool:
    """Both command outputs fully arrived (the accumulated block is last)."""
    return _ACC_BLOCK.search(text) is not None


# ---- the driver ------------------------------------------------------------------


class _Console:
    """testpmd's stdin/stdout: a reader thread collects output; `expect` waits."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.buf = ""
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, name="testpmd-console", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            with self.cond:
                if not chunk:
                    self.cond.notify_all()
                    return
                self.buf += chunk.decode(errors="replace")
                if len(self.buf) > (4 << 20):  # keep memory bounded on long runs
                    self.buf = self.buf[-(1 << 20):]
                self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.buf)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, pred, since: int, timeout: float) -> str | None:
        """Wait until pred(text since `since`) holds; the text, or None on timeout/exit."""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                text = self.buf[since:]
                if pred(text):
                    return text
                left = end - time.monotonic()
                if left <= 0 or (not self.thread.is_alive()):
                    return None
                self.cond.wait(min(left, 0.2))

    def tail(self, n: int = 25) -> str:
        with self.cond:
            lines = [ln for ln in self.buf.splitlines()
                     if not ln.startswith(("libbpf: elf: skipping", "  RX threshold",
                                           "  TX threshold"))]
        return "\n".join(lines[-n:])


@register
class DpdkTestpmdDut(DutDriver):
    name = "testpmd"
    links = ("veth", "memif")
    # DPDK's memif client connects once, at port start, and does not retry; the
    # generator starts per trial, so testpmd listens (copies: DPDK's zero copy is
    # the client's) and the generator connects, retrying every 20 ms
    memif_role = "master"
    modes = ("io", "mac")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        self.p = TestpmdParams.model_validate(params)
        # net_af_xdp first (setup's order): the lab then receives for it on the
        # generator's CPU, into the PMD's UMEM (lab/ingress.py, "afxdp")
        self.afxdp_rx = (self.p.pmd == "af_xdp" or self.p.pmd == "auto" and self.p.queues == 1
                         and pmd_available("af_xdp"))
        self._exec = None
        self._sys = None        # executor of the host-wide state (DutHost.system_exec)
        self._host = None
        self._memif = None
        self._dut_macs: list[str] = []
        self._proc: subprocess.Popen | None = None
        self._console: _Console | None = None
        self._lock = threading.Lock()
        self._prefix = ""
        self._ifaces: list[str] = []
        self._promisc_before: dict[str, bool] = {}
        self._channels_before: dict[str, int] = {}
        self._huge: dict[str, Any] = {}
        self._pmd_used = ""
        self._argv: list[str] = []
        self._cpus: list[int] = []
        self._warnings: list[str] = []
        self._version = ""
        self._peer_macs: dict[str, str] = {}
        self._memory: dict[str, Any] = {}
        self._tg_macs: list[str | None] = []
        self._restarts = 0

    # ---- plan time ------------------------------------------------------------

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        p = parse_params(TestpmdParams, params, where)
        # a veth has as many queues as the host has CPUs (its default maximum)
        ncpu = os.cpu_count() or 1
        if p.queues > ncpu:
            raise CampaignError(f"{where}.queues: {p.queues} queues is more than the "
                                f"lab's veth ports have ({ncpu}, one per CPU); allowed 1..{ncpu}")
        if p.pmd == "af_xdp" and p.queues > 1:
            raise CampaignError(f"{where}.queues: net_af_xdp takes one queue per port on a veth "
                                f"(a veth has no combined channels); use queues = 1, or "
                                f"pmd = \"af_packet\" (or \"auto\") for {p.queues} queues")
        return p.model_dump(mode="json")

    @classmethod
    def fits_testbed(cls, params: dict[str, Any], dut_cpus: int | None, where: str) -> None:
        if dut_cpus is not None and params.get("cores", 1) > dut_cpus:
            raise CampaignError(f"{where}.cores: {params['cores']} forwarding cores but the "
                                f"testbed gives the DUT {dut_cpus} CPU(s); at most {dut_cpus}")

    def peer_macs(self, host=None) -> dict[str, str]:
        """Destination MAC the generator writes on each tg port for this mode."""
        host = host or self._host
        if host is None:
            from ..lab import PORTS as ports
        else:
            ports = list(host.ports)[:2]
        if self.p.mode == "io":  # frames arrive unchanged at the other tg port
            return {ports[0].tg_ifname: ports[1].tg_mac, ports[1].tg_ifname: ports[0].tg_mac}
        return {p.tg_ifname: p.dut_mac for p in ports}

    def check(self, host=None) -> None:
        """testpmd, its helpers and a port PMD on the DUT host (None: this machine),
        each looked up through the host's executor."""
        ex, sysx = _executors(host)
        where = f" on {host.name}" if host is not None else ""
        missing = ex.missing_tools([TESTPMD, "env", "taskset", "stdbuf", "ethtool"])
        if TESTPMD in missing:
            raise DutError(f"testpmd: {TESTPMD} not found{where}; install Debian's dpdk-dev "
                           f"(apt-get install --no-install-recommends dpdk-dev)")
        if missing:
            raise DutError(f"testpmd: {', '.join(missing)} not found{where} (coreutils, "
                           f"util-linux, ethtool)")
        have = available_pmds(sysx)
        if host is not None and host.memif:
            if "memif" not in have:
                raise DutError(f"testpmd: DPDK's net_memif driver is not installed{where} "
                               f"(Debian: librte-net-memif23)")
        elif self.p.pmd != "auto" and self.p.pmd not in have:
            raise DutError(f"testpmd: DPDK's net_{self.p.pmd} driver is not installed{where} "
                           f"(Debian: librte-net-{self.p.pmd.replace('_', '-')}23); use pmd = "
                           f"\"auto\" to take what is there")
        elif not {"af_xdp", "af_packet"} & have:
            raise DutError(f"testpmd: neither net_af_xdp nor net_af_packet is installed{where} "
                           f"(Debian: librte-net-af-xdp23, librte-net-af-packet23)")

    # ---- lifecycle ------------------------------------------------------------

    def setup(self, host) -> None:
        if self._exec is not None:
            raise DutError("testpmd: setup() called twice without teardown()")
        self._exec = host.exec
        self._sys = host.system_exec
        self._host = host
        self._peer_macs = self.peer_macs(host)
        ports = list(host.ports)[:2]
        if len(ports) != 2:
            raise DutError(f"testpmd: the DUT host has {len(ports)} ports, testpmd needs 2")
        self._ifaces = [p.dut.ifname for p in ports]
        self._memif = host.memif
        self._dut_macs = [p.dut.mac for p in ports]
        tg_macs = [p.tg.mac for p in ports]
        self._tg_macs = tg_macs
        dut_cpus = list(host.cpus)
        if self.p.cores > len(dut_cpus):
            raise DutError(f"testpmd: cores = {self.p.cores} but the testbed gives the DUT "
                           f"{len(dut_cpus)} CPU(s) ({dut_cpus}); lower cores")
        self._cpus = dut_cpus[:self.p.cores]
        self._prefix = f"{PREFIX_STEM}{secrets.token_hex(4)}"
        self._version = dpdk_version(self._sys)
        swept = (sweep_stale_runtime_dirs(ex=self._sys)
                 + sweep_stale_hugepages(ex=self._sys))
        if swept:
            self._warnings.append(f"removed runtime dirs of crashed runs: {', '.join(swept)}")
        try:
            if not self._memif:
                self._save_port_state()
                self._set_queues()
            pmds = ["af_xdp", "af_packet"] if self.p.pmd == "auto" else [self.p.pmd]
            if self._memif:
                if self.p.queues > 1:
                    raise DutError(f"testpmd: queues = {self.p.queues} on memif ports: one "
                                   f"queue pair per memif interface here; use queues = 1")
                pmds = ["memif"]
            elif self.p.pmd == "auto" and self.p.queues > 1:
                pmds = ["af_packet"]  # net_af_xdp: one queue per port on a veth
                self._warnings.append(f"queues = {self.p.queues}: net_af_packet (net_af_xdp "
                                      f"takes one queue per veth port)")
            have = available_pmds(self._sys)
            pmds = [x for x in pmds if x in have] or pmds
            self._prepare_memory()
            self._memory = {"hugepages": bool(self._huge.get("dir")),
                            "huge_dir": self._huge.get("dir"),
                            "reserved_pages": int(self._huge.get("state", {}).get("added", 0)),
                            "memory_mb": self.p.memory_mb, "mbufs": self.p.mbufs}
            for pmd in pmds:
                try:
                    self._start(pmd, tg_macs)
                    self._pmd_used = pmd
                    break
                except DutError as e:
                    last_error = str(e)
                    self._stop_process()
                    self._cleanup_files()
                    self._restore_ports(promisc_only=True)
                    if pmd != pmds[-1]:
                        self._warnings.append(f"net_{pmd} failed, fell back: {last_error[:200]}")
            else:
                raise DutError(last_error)
        except BaseException:
            self.teardown()
            raise

    def counters(self) -> dict[str, int]:
        """Cumulative ethdev port stats and testpmd forwarding stats. On memif
        ports none: DPDK's memif PMD counts per connection and the generator
        connects anew each trial (measured: a trial's counters read 0 once the
        peer had gone, the next trial's went negative), so no delta would be
        the trial's; the generator's counts stand alone there."""
        if self._console is None:
            raise DutError("testpmd: counters() before setup() (or testpmd is gone)")
        if self._memif:
            if self._proc is None or self._proc.poll() is not None:
                raise DutError(f"testpmd: exited during the run:\n{self._console.tail()}")
            return {}
        with self._lock:
            since = self._console.mark()
            self._console.send("show port stats all")
            self._console.send("show fwd stats all")
            text = self._console.expect(stats_complete, since, timeout=10)
        if text is None:
            raise DutError(f"testpmd: no statistics within 10 s (alive: "
                           f"{self._proc is not None and self._proc.poll() is None}); "
                           f"last output:\n{self._console.tail()}")
        out = parse_port_stats(text)
        out.update(parse_fwd_stats(text))
        return out

    def pids(self) -> list[int]:
        """Processes whose CPU time is the DUT's (for the energy meters)."""
        return [self._proc.pid] if self._proc is not None and self._proc.poll() is None else []

    def teardown(self) -> None:
        if self._exec is None:
            return
        errors: list[str] = []
        try:
            self._stop_process()
        except Exception as e:  # keep cleaning up
            errors.append(str(e))
        self._cleanup_files()
        if not self._memif:
            self._detach_leftover_xdp()
            self._restore_ports()
        self._release_memory()
        self._exec = None
        self._sys = None
        self._host = None
        if errors:
            raise DutError("; ".join(errors))

    def describe(self) -> dict[str, Any]:
        return {
            "dut": "testpmd",
            **self.p.model_dump(mode="json"),
            "pmd_used": self._pmd_used,
            **({"counters": "none on memif: DPDK's memif PMD counts per connection, and "
                            "the generator connects anew each trial"} if self._memif else {}),
            "dpdk": self._version,
            "cpus": self._cpus,
            "memory": self._memory,
            **({"memif_restarts": self._restarts} if self._memif else {}),
            "file_prefix": self._prefix,
            "argv": self._argv,
            "peer_macs": self._peer_macs,
            "warnings": list(self._warnings),
        }

    # ---- start / stop ---------------------------------------------------------

    def _vdev(self, pmd: str, i: int, ifname: str) -> str:
        if pmd == "memif":
            m = self._memif[i]
            # a path in the file system (DPDK's default is the abstract namespace)
            return ",".join([f"net_memif{i}", "role=server", f"socket={m.socket}",
                             "socket-abstract=no", f"id={m.id}", f"mac={self._dut_macs[i]}"])
        if pmd == "af_xdp":
            args = [f"net_af_xdp{i}", f"iface={ifname}", "start_queue=0",
                    f"queue_count={self.p.queues}"]
            if self.p.af_xdp_busy_budget is not None:
                args.append(f"busy_budget={self.p.af_xdp_busy_budget}")
        else:
            args = [f"net_af_packet{i}", f"iface={ifname}", f"qpairs={self.p.queues}"]
        return ",".join(args)

    def _start(self, pmd: str, tg_macs: list[str | None]) -> None:
        cpus = self._cpus
        main_cpu = cpus[0]  # the main lcore only reads stdin: it shares the first DUT CPU
        lcores = ",".join([f"0@{main_cpu}"] + [f"{i + 1}@{c}" for i, c in enumerate(cpus)])
        eal = ["--lcores", lcores, "--file-prefix", self._prefix, "--no-pci",
               "--log-level", "lib.eal:notice"]
        for i, ifname in enumerate(self._ifaces):
            eal += ["--vdev", self._vdev(pmd, i, ifname)]
        if self._huge.get("dir"):
            eal += ["--huge-dir", self._huge["dir"], "--huge-unlink", "-m", str(self.p.memory_mb)]
        else:
            eal += ["--no-huge", "-m", str(self.p.memory_mb)]
        app = ["-i", f"--forward-mode={self.p.mode}", f"--nb-cores={self.p.cores}",
               f"--rxq={self.p.queues}", f"--txq={self.p.queues}", f"--burst={self.p.burst}",
               f"--total-num-mbufs={self.p.mbufs}"]
        app += [f"--{k}={v}" for k, v in (("rxd", self.p.rxd), ("txd", self.p.txd)) if v]
        for i, mac in enumerate(tg_macs):
            if mac:
                app.append(f"--eth-peer={i},{mac}")
        # SIGPIPE ignored: if the driver dies, testpmd sees EOF / EPIPE and quits
        # cleanly (closing its ports detaches the AF_XDP program) instead of dying
        self._argv = ["env", "--ignore-signal=PIPE", "taskset", "-c", ",".join(str(c) for c in sorted(set(cpus))),
                      "stdbuf", "-oL", "-eL", TESTPMD, *eal, "--", *app]
        self._proc = self._exec.popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT)
        self._console = _Console(self._proc)
        since = 0
        text = self._console.expect(lambda t: PROMPT in t, since, timeout=60)
        if text is None or self._proc.poll() is not None:
            try:        # over SSH its session ends a moment after testpmd
                rc = self._proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                rc = None
            raise DutError(f"testpmd did not start with net_{pmd} "
                           f"({'still running, no prompt within 60 s' if rc is None else f'exit {rc}'})"
                           f":\n{self._console.tail()}")
        if re.search(r"Fail to configure port|No probed ethernet devices|Cannot init|"
                     r"failed to create|Fail to start port", text):
            raise DutError(f"testpmd: net_{pmd} ports failed:\n{self._console.tail()}")
        since = self._console.mark()
        self._console.send("start")
        started = self._console.expect(
            lambda t: re.search(r"packet forwarding - ports=\d+", t) is not None
            and t.rstrip().endswith(PROMPT.rstrip()) or "Fail" in t, since, timeout=20)
        if started is None or "Fail" in started:
            raise DutError(f"testpmd: 'start' failed with net_{pmd}:\n{self._console.tail()}")

    def recover_link(self, reason: str) -> str | None:
        """DPDK's memif server (22.11 here) sometimes stops answering a client after
        the previous one left: the next trial's generator connects and gets no
        handshake (measured: 1-2 trials of 30, each a fresh testpmd, 3 trials
        each). A restarted testpmd listens afresh; once per trial."""
        # only a handshake that never completed (fwdgen's or TRex's words for it)
        if (not self._memif or self._proc is None
                or not re.search(r"memif.*(no master answered|did not accept it)", reason)):
            return None
        self._stop_process()
        self._cleanup_files()
        # DPDK leaves its listeners' socket files; a new server cannot bind beside them
        self._exec.run(["rm", "-f", "--", *(m.socket for m in self._memif)], timeout=10,
                       check=False)
        self._start("memif", self._tg_macs)
        self._restarts += 1
        first = reason.splitlines()[0][:300]
        return (f"testpmd restarted: its memif server did not answer the generator "
                f"({first}); the trial ran again")

    def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        console, self._console = self._console, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.stdin.write(b"stop\nquit\n")
                proc.stdin.flush()
            except (OSError, ValueError):
                pass
        try:
            proc.stdin.close()  # EOF: testpmd quits even if it missed "quit"
        except (OSError, ValueError):
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if console is not None:
            console.thread.join(timeout=2)
        if proc.stdout:
            proc.stdout.close()

    # ---- host state -----------------------------------------------------------

    def _save_port_state(self) -> None:
        import json
        r = self._exec.run(["ip", "-j", "link", "show"], timeout=10, check=False)
        for link in json.loads(_text(r.stdout) or "[]"):
            if link.get("ifname") in self._ifaces:
                self._promisc_before[link["ifname"]] = "PROMISC" in link.get("flags", [])

    def _set_queues(self) -> None:
        """Enable as many veth queues (channels) as asked; undone in teardown."""
        for ifname in self._ifaces:
            r = self._exec.run(["ethtool", "-l", ifname], timeout=10, check=False)
            cur = _channels(_text(r.stdout))
            if cur is None:
                if self.p.queues > 1:
                    raise DutError(f"testpmd: cannot read the queues of {ifname} (ethtool -l)")
                continue
            max_rx, cur_rx = cur
            if self.p.queues > max_rx:
                raise DutError(f"testpmd: queues = {self.p.queues} but {ifname} has at most "
                               f"{max_rx}; lower queues")
            if self.p.queues != cur_rx:
                w = self._exec.run(["ethtool", "-L", ifname, "rx", str(self.p.queues), "tx",
                                    str(self.p.queues)], timeout=10, check=False)
                if w.returncode != 0:
                    raise DutError(f"testpmd: ethtool -L {ifname} rx/tx {self.p.queues}: "
                                   f"{_text(w.stderr).strip()}")
                self._channels_before[ifname] = cur_rx

    def _restore_ports(self, promisc_only: bool = False) -> None:
        for ifname, was in self._promisc_before.items():
            if not was:
                self._exec.run(["ip", "link", "set", "dev", ifname, "promisc", "off"],
                               timeout=10, check=False)
        if promisc_only:
            return
        for ifname, n in self._channels_before.items():
            self._exec.run(["ethtool", "-L", ifname, "rx", str(n), "tx", str(n)], timeout=10,
                           check=False)
        self._channels_before = {}
        self._promisc_before = {}

    def _detach_leftover_xdp(self) -> None:
        """net_af_xdp detaches its program on close; after a crash it may remain."""
        import json
        r = self._exec.run(["ip", "-j", "-d", "link", "show"], timeout=10, check=False)
        for link in json.loads(_text(r.stdout) or "[]"):
            if link.get("ifname") not in self._ifaces or not link.get("xdp"):
                continue
            prog = (link["xdp"].get("prog") or {}).get("name", "")
            if prog.startswith("xsk_def_prog") or prog.startswith("xdp_dispatcher"):
                for m in ("xdp", "xdpgeneric"):
                    self._exec.run(["ip", "link", "set", "dev", link["ifname"], m, "off"],
                                   timeout=10, check=False)

    def _cleanup_files(self) -> None:
        if not self._prefix:
            return
        run_dir = f"{RUN_DIR}/{self._prefix}"
        self._sys.run(["rm", "-rf", "--", run_dir], timeout=10, check=False)
        hdir = self._huge.get("dir")
        if hdir:  # --huge-unlink leaves none; a crash before unlinking might
            self._sys.run(["find", hdir, "-maxdepth", "1", "-name", f"{self._prefix}map_*",
                           "-delete"], timeout=10, check=False)

    # Hugepages are host-wide: inspected and reserved through the host's system executor
    # (the lab's: this machine's root namespace; over SSH: the DUT host's).
    def _prepare_memory(self) -> None:
        """Hugepages for -m memory_mb: free ones on a mounted hugetlbfs, or reserved
        for this run (vm.nr_hugepages + a private mount, undone in teardown), or
        --no-huge ("auto" falls back, "reserve" insists)."""
        self._huge = {}
        if self.p.hugepages == "off":
            return
        size_kb, free = hugepage_meminfo(self._sys)
        if not size_kb:
            return self._no_huge("the kernel has no hugepages")
        need = -(-self.p.memory_mb * 1024 // size_kb)
        mount = hugetlbfs_mount(size_kb, self._sys)
        if mount and free >= need:
            self._huge = {"dir": mount}
            return
        try:
            self._huge = reserve_hugepages(self._prefix, need, size_kb, self._sys)
        except OSError as e:
            if self.p.hugepages == "reserve":
                raise DutError(f"testpmd: cannot reserve {need} hugepages of {size_kb} KiB: {e} "
                               f"(use hugepages = \"auto\" to fall back to --no-huge)") from None
            self._no_huge(f"cannot reserve {need} x {size_kb} KiB ({e})")

    def _no_huge(self, why: str) -> None:
        self._warnings.append(f"hugepages: {why}; using --no-huge")

    def _release_memory(self) -> None:
        h, self._huge = self._huge, {}
        if "state" in h:
            release_hugepages(h["state"], self._sys)


def _executors(host) -> tuple[Any, Any]:
    """(the DUT's executor, the executor of its host-wide state) of ``host``; this
    machine's when None (before any testbed exists)."""
    if host is None:
        from ..lab.executor import Executor
        return Executor(None), Executor(None)
    return host.exec, host.system_exec


def _channels(text: str) -> tuple[int, int] | None:
    """`ethtool -l` -> (max RX, current RX) queues, or None."""
    m = re.search(r"Pre-set maximums:.*?RX:\s*(\d+).*?Current hardware settings:.*?RX:\s*(\d+)",
                  text, re.S)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)
