"""CPU accounting around a trial: where did the CPU time go?

Sources (all read before and after the trial, deltas reported):
- ``/proc/stat`` per-CPU lines: user, nice, system, idle, iowait, irq,
  softirq, steal [USER_HZ ticks]. Busy = user + nice + system + irq +
  softirq (``user`` already includes guest time, so guest is not added).
  Steal (time the hypervisor gave this vCPU to someone else) is neither busy
  nor idle and is reported on its own. Shares are fractions of all ticks the
  CPU accounted in the interval.
- ``/proc/<pid>/stat`` utime + stime of the processes given (user-space DUTs:
  vfwd, testpmd, VPP), summed over all their threads by the kernel.
- The CPU's nominal frequency, for cycles per packet: busy seconds of the
  DUT's CPUs x nominal Hz / packets. This is an estimate (labelled so): it
  ignores turbo, frequency scaling and idle states inside "busy" time.

Accounting granularity is one tick (1/USER_HZ = 10 ms), so a 2 s trial
resolves utilisation to about 0.5 %.

On a DUT host reached over SSH (testbed ``ssh``) the DUT's files are read
there, all of one snapshot in one command (``dut_files``: an executor's
``read_files``), with the host's own uptime as the clock of its processes'
start times; the generator's CPUs are this host's.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .base import MeterError, sig

USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
# steal share of the CPUs' time above which a trial's figures get a warning
STEAL_WARN_SHARE = 0.02


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative times of one CPU [ticks of 1/USER_HZ s]."""
    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0

    @property
    def busy(self) -> int:
        return self.user + self.nice + self.system + self.irq + self.softirq

    @property
    def total(self) -> int:
        return sum(getattr(self, f) for f in STAT_FIELDS)

    def __sub__(self, other: "CpuTimes") -> "CpuTimes":
        # Counters only grow, but idle/iowait can step back by a tick on NO_HZ
        # kernels; clamp so a share is never negative.
        return CpuTimes(*(max(getattr(self, f.name) - getattr(other, f.name), 0)
                          for f in fields(self)))


def parse_cpu_list(spec: str | Iterable[int] | None) -> list[int]:
    """'0-3,6' or [0, 1] -> sorted unique CPU numbers; None or '' -> []."""
    if spec is None:
        return []
    if isinstance(spec, str):
        out: set[int] = set()
        for part in spec.replace(" ", "").split(","):
            if not part:
                continue
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ValueError(f"{spec!r} is not a CPU list; write e.g. '0-3,6' or [0, 1]")
            lo = int(m.group(1))
            hi = int(m.group(2)) if m.group(2) is not None else lo
            if hi < lo:
                raise ValueError(f"{spec!r}: range {part!r} runs backwards")
            out.update(range(lo, hi + 1))
        return sorted(out)
    cpus = []
    for c in spec:
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise ValueError(f"{c!r} in {list(spec)!r} is not a CPU number")
        cpus.append(c)
    return sorted(set(cpus))


#: reads several files of a host at once: path -> text, None when unreadable
FileReader = Callable[[Sequence[str]], "dict[str, str | None]"]


def read_proc_stat(path: str | os.PathLike = "/proc/stat") -> dict[int, CpuTimes]:
    """Per-CPU cumulative times from /proc/stat (the aggregate 'cpu' line is skipped)."""
    with open(path, encoding="ascii") as f:
        return parse_proc_stat(f.read(), str(path))


def parse_proc_stat(text: str, where: str = "/proc/stat") -> dict[int, CpuTimes]:
    out: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        parts = line.split()
        n = int(parts[0][3:])
        vals = [int(v) for v in parts[1:1 + len(STAT_FIELDS)]]
        vals += [0] * (len(STAT_FIELDS) - len(vals))   # very old kernels lack steal
        out[n] = CpuTimes(*vals)
    if not out:
        raise MeterError(f"{where}: no per-CPU lines; is this a Linux /proc?")
    return out


def remote_proc_stat(files: FileReader, where: str) -> dict[int, CpuTimes]:
    """/proc/stat of another host, through ``files``."""
    text = files(["/proc/stat"]).get("/proc/stat")
    if text is None:
        raise MeterError(f"/proc/stat of {where} could not be read")
    return parse_proc_stat(text, f"/proc/stat of {where}")


def _fmt_cpus(cpus: Iterable[int]) -> str:
    cpus = sorted(cpus)
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def check_cpus(cpus: Iterable[int], stat: dict[int, CpuTimes], what: str) -> None:
    missing = [c for c in cpus if c not in stat]
    if missing:
        raise MeterError(
            f"{what} CPU(s) {_fmt_cpus(missing)} are not in /proc/stat (offline or not "
            f"present); this host has CPUs {_fmt_cpus(stat)}")


def cpu_shares(d: CpuTimes) -> dict[str, float]:
    """Fractions of the ticks one CPU accounted over an interval."""
    tot = d.total
    if tot <= 0:
        return {"busy": 0.0, **{f: 0.0 for f in STAT_FIELDS}}
    return {"busy": d.busy / tot, **{f: getattr(d, f) / tot for f in STAT_FIELDS}}


def aggregate(deltas: dict[int, CpuTimes], cpus: list[int], wall_s: float) -> dict[str, Any]:
    """Summary of a CPU set over an interval.

    busy_cores: sum of the CPUs' busy shares (1.0 = one core fully busy).
    utilisation: busy_cores / number of CPUs.
    softirq_share: softirq ticks / busy ticks (how much of the work was
    softirq, i.e. the kernel's packet path); steal: steal ticks / all ticks.
    """
    if not cpus:
        return {"cpus": "", "n": 0, "busy_cores": 0.0, "utilisation": None,
                "softirq_share": None, "irq_share": None, "steal": None, "busy_s": 0.0}
    tot = sum(deltas[c].total for c in cpus)
    busy = sum(deltas[c].busy for c in cpus)
    soft = sum(deltas[c].softirq for c in cpus)
    irq = sum(deltas[c].irq for c in cpus)
    steal = sum(deltas[c].steal for c in cpus)
    busy_cores = sum(cpu_shares(deltas[c])["busy"] for c in cpus)
    return {
        "cpus": _fmt_cpus(cpus),
        "n": len(cpus),
        "busy_cores": busy_cores,
        "utilisation": busy_cores / len(cpus),
        "softirq_share": soft / busy if busy else 0.0,
        "irq_share": irq / busy if busy else 0.0,
        "steal": steal / tot if tot else 0.0,
        # busy time in seconds: busy share x wall time, so that ticks lost to
        # steal or to tick jitter do not inflate it
        "busy_s": busy_cores * wall_s,
    }


# ---- processes -------------------------------------------------------------

@dataclass(frozen=True)
class ProcTimes:
    pid: int
    comm: str
    utime: int          # [ticks]
    stime: int          # [ticks]
    starttime: int      # [ticks] after boot
    processor: int      # CPU it last ran on
    threads: int


def read_proc_pid(pid: int, proc_root: str | os.PathLike = "/proc") -> ProcTimes | None:
    """utime/stime of one process, or None if it is gone."""
    try:
        raw = Path(proc_root, str(pid), "stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    return parse_proc_pid(pid, raw)


def parse_proc_pid(pid: int, raw: str | None) -> ProcTimes | None:
    """/proc/<pid>/stat text -> ProcTimes (None: no text, the process is gone)."""
    if not raw:
        return None
    # comm sits in parentheses and may itself contain spaces or ')'
    lp, rp = raw.index("("), raw.rindex(")")
    comm = raw[lp + 1:rp]
    rest = raw[rp + 2:].split()
    # rest[0] is field 3 (state); field n is rest[n - 3]
    return ProcTimes(pid=pid, comm=comm, utime=int(rest[11]), stime=int(rest[12]),
                     threads=int(rest[17]), starttime=int(rest[19]),
                     processor=int(rest[36]) if len(rest) > 36 else -1)


def boot_ticks_now() -> float:
    """Now, in ticks since boot (the clock of /proc/<pid>/stat starttime)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) * USER_HZ


# ---- frequency -------------------------------------------------------------

_GHZ_IN_NAME = re.compile(r"@\s*([0-9.]+)\s*GHz", re.I)


def nominal_frequency(cpu: int, *, sys_root: str | os.PathLike = "/sys/devices/system/cpu",
                      cpuinfo: str | os.PathLike = "/proc/cpuinfo",
                      files: FileReader | None = None) -> tuple[float | None, str]:
    """(nominal frequency [Hz], where it came from) for one CPU.

    Preference: cpufreq base_frequency (the nominal, non-turbo clock, from
    intel_pstate/amd-pstate) > the '@ 2.60GHz' in an Intel model name >
    /proc/cpuinfo 'cpu MHz' (the current clock; on VMs, the host's TSC rate) >
    cpufreq cpuinfo_max_freq (may include turbo).
    """
    freq_dir = Path(sys_root, f"cpu{cpu}", "cpufreq")
    base, top, info = (str(freq_dir / "base_frequency"), str(freq_dir / "cpuinfo_max_freq"),
                       str(cpuinfo))
    if files is not None:       # another host's files: all at once
        got = files([base, info, top])

        def read(path: str) -> str:
            text = got.get(path)
            if text is None:
                raise OSError(f"{path}: unreadable")
            return text
    else:
        def read(path: str) -> str:
            return Path(path).read_text(errors="replace")
    try:
        khz = int(read(base).strip())
        if khz > 0:
            return khz * 1e3, f"{freq_dir}/base_frequency"
    except (OSError, ValueError):
        pass
    model_hz = mhz = None
    try:
        block = _cpuinfo_block(read(info), cpu)
        if m := _GHZ_IN_NAME.search(block.get("model name", "")):
            model_hz = float(m.group(1)) * 1e9
        if "cpu MHz" in block:
            mhz = float(block["cpu MHz"]) * 1e6
    except (OSError, ValueError):
        pass
    if model_hz:
        return model_hz, "/proc/cpuinfo model name"
    if mhz:
        return mhz, "/proc/cpuinfo cpu MHz (current clock)"
    try:
        khz = int(read(top).strip())
        if khz > 0:
            return khz * 1e3, f"{freq_dir}/cpuinfo_max_freq (may include turbo)"
    except (OSError, ValueError):
        pass
    return None, "unknown (no cpufreq, no 'cpu MHz' in /proc/cpuinfo)"


def _cpuinfo_block(text: str, cpu: int) -> dict[str, str]:
    blocks = [b for b in text.split("\n\n") if b.strip()]
    parsed = []
    for b in blocks:
        kv = {}
        for line in b.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                kv[k.strip()] = v.strip()
        parsed.append(kv)
    for kv in parsed:
        if kv.get("processor") == str(cpu):
            return kv
    return parsed[0] if parsed else {}


# ---- the accounting object -------------------------------------------------

class CpuAccounting:
    """Per-trial CPU accounting of the DUT's and the generator's CPU sets.

    ``start(pids)`` snapshots /proc/stat and the given processes;
    ``stop(pids, packets)`` returns the JSON-safe ``cpu`` part of
    ``TrialResult.meters``. A pid first named at stop() is accounted from the
    trial start if it was born after it, otherwise over its whole life (and
    marked so).

    ``dut_files`` (an executor's ``read_files``): the DUT CPUs and processes
    are another host's (``dut_host`` names it), read through it; the
    generator's CPUs stay this host's, and ``per_cpu`` names them
    ``tester:<n>``.
    """

    def __init__(self, dut_cpus: Iterable[int] | str | None, gen_cpus: Iterable[int] | str | None = None,
                 *, proc_root: str | os.PathLike = "/proc",
                 sys_cpu_root: str | os.PathLike = "/sys/devices/system/cpu",
                 dut_files: FileReader | None = None, dut_host: str = ""):
        self.proc_root = Path(proc_root)
        self.sys_cpu_root = Path(sys_cpu_root)
        self.stat_path = self.proc_root / "stat"
        self.dut_files = dut_files
        self.dut_host = dut_host
        self.dut_cpus = parse_cpu_list(dut_cpus)
        self.gen_cpus = parse_cpu_list(gen_cpus)
        self.notes: list[str] = []
        dstat = (remote_proc_stat(dut_files, dut_host) if dut_files is not None
                 else read_proc_stat(self.stat_path))
        gstat = read_proc_stat(self.stat_path) if dut_files is not None else dstat
        if not self.dut_cpus:
            self.dut_cpus = sorted(dstat)
            self.notes.append(f"DUT CPUs not given: accounted over all CPUs {_fmt_cpus(dstat)}")
        check_cpus(self.dut_cpus, dstat, "DUT" + (f" host {dut_host}'s" if dut_files else ""))
        check_cpus(self.gen_cpus, gstat, "generator")
        overlap = set(self.dut_cpus) & set(self.gen_cpus)
        if overlap and dut_files is None:
            self.notes.append(f"DUT and generator share CPU(s) {_fmt_cpus(overlap)}; "
                              "their busy time cannot be told apart")
        self._freq: dict[int, tuple[float | None, str]] = {}
        self._t0 = self._boot0 = 0.0
        self._stat0: dict[int, CpuTimes] = {}
        self._gstat0: dict[int, CpuTimes] = {}
        self._procs0: dict[int, ProcTimes] = {}
        self._started = False

    @property
    def remote(self) -> bool:
        return self.dut_files is not None

    # The snapshot is split out so the cpu-model meter can share it.
    def snapshot(self) -> tuple[float, dict[int, CpuTimes]]:
        """(monotonic time, the DUT host's /proc/stat)."""
        if self.dut_files is not None:
            return time.monotonic(), remote_proc_stat(self.dut_files, self.dut_host)
        return time.monotonic(), read_proc_stat(self.stat_path)

    def _read_dut(self, pids: Iterable[int]) -> tuple[dict[int, CpuTimes],
                                                      dict[int, ProcTimes | None], float]:
        """The DUT host's /proc/stat, the processes, and its clock [ticks since boot]."""
        pids = list(pids)
        if self.dut_files is None:
            procs = {pid: read_proc_pid(pid, self.proc_root) for pid in pids}
            return read_proc_stat(self.stat_path), procs, boot_ticks_now()
        want = ["/proc/stat", "/proc/uptime", *(f"/proc/{pid}/stat" for pid in pids)]
        got = self.dut_files(want)
        if got.get("/proc/stat") is None or got.get("/proc/uptime") is None:
            raise MeterError(f"/proc/stat or /proc/uptime of {self.dut_host} could not be read")
        stat = parse_proc_stat(got["/proc/stat"] or "", f"/proc/stat of {self.dut_host}")
        boot = float((got["/proc/uptime"] or "0").split()[0]) * USER_HZ
        return stat, {pid: parse_proc_pid(pid, got[f"/proc/{pid}/stat"]) for pid in pids}, boot

    def start(self, pids: Iterable[int] = ()) -> None:
        self._procs0 = {}
        stat, procs, boot = self._read_dut(pids)
        self._procs0 = {pid: p for pid, p in procs.items() if p is not None}
        self._boot0 = boot
        self._t0 = time.monotonic()
        self._stat0 = stat
        self._gstat0 = read_proc_stat(self.stat_path) if self.remote else stat
        self._started = True

    def stop(self, pids: Iterable[int] = (), packets: int | None = None) -> dict[str, Any]:
        if not self._started:
            raise MeterError("CPU accounting stopped before it was started")
        all_pids = list(dict.fromkeys([*self._procs0, *pids]))
        stat1, procs1, _ = self._read_dut(all_pids)
        t1 = time.monotonic()
        gstat1 = read_proc_stat(self.stat_path) if self.remote else stat1
        self._started = False
        wall = t1 - self._t0
        deltas = {c: stat1[c] - self._stat0[c] for c in stat1 if c in self._stat0}
        gdeltas = ({c: gstat1[c] - self._gstat0[c] for c in gstat1 if c in self._gstat0}
                   if self.remote else deltas)
        procs = {str(pid): self._proc_delta(pid, procs1.get(pid), wall) for pid in all_pids}
        dut = aggregate(deltas, self.dut_cpus, wall)
        gen = aggregate(gdeltas, self.gen_cpus, wall)
        if self.remote:
            per_cpu = {str(c): {k: round(v, 5) for k, v in cpu_shares(deltas[c]).items()}
                       for c in self.dut_cpus}
            per_cpu |= {f"tester:{c}": {k: round(v, 5) for k, v in cpu_shares(gdeltas[c]).items()}
                        for c in self.gen_cpus}
        else:
            per_cpu = {str(c): {k: round(v, 5) for k, v in cpu_shares(deltas[c]).items()}
                       for c in sorted(set(self.dut_cpus) | set(self.gen_cpus))}
        notes = list(self.notes)
        if dut["steal"] and dut["steal"] > STEAL_WARN_SHARE:
            notes.append(f"steal time {dut['steal']:.1%} on the DUT CPUs: the hypervisor ran "
                         "other guests there; throughput and energy figures are less reliable")
        cpp, basis = self._cycles_per_packet(dut["busy_s"], packets)
        out = {
            "duration_s": sig(wall),
            "user_hz": USER_HZ,
            "dut_cpus": self.dut_cpus,
            "gen_cpus": self.gen_cpus,
            "per_cpu": per_cpu,
            "dut": _round(dut),
            "gen": _round(gen),
            "processes": procs,
            "cycles_per_packet_estimated": sig(cpp, 6),
            "cycles_per_packet_basis": basis,
            "notes": notes,
        }
        if self.remote:
            out["dut_host"] = self.dut_host
        return out

    def _proc_delta(self, pid: int, p1: ProcTimes | None, wall: float) -> dict[str, Any]:
        p0 = self._procs0.get(pid)
        if p1 is None:
            return {"interval": "gone", "comm": p0.comm if p0 else None, "cpu_s": None,
                    "note": "the process exited before the trial ended; its time is unknown"}
        if p0 is not None and p0.starttime == p1.starttime:
            interval, base_u, base_s = "trial", p0.utime, p0.stime
        elif p1.starttime >= self._boot0 - 1:
            interval, base_u, base_s = "trial", 0, 0       # born during the trial
        else:
            interval, base_u, base_s = "process-lifetime", 0, 0
        user_s = (p1.utime - base_u) / USER_HZ
        sys_s = (p1.stime - base_s) / USER_HZ
        out = {"comm": p1.comm, "interval": interval, "user_s": round(user_s, 3),
               "system_s": round(sys_s, 3), "cpu_s": round(user_s + sys_s, 3),
               "threads": p1.threads, "last_cpu": p1.processor,
               "utilisation": round((user_s + sys_s) / wall, 5) if wall > 0 and interval == "trial" else None}
        if interval == "process-lifetime":
            out["note"] = "not snapshotted at trial start: CPU time over the whole process life"
        return out

    def nominal_hz(self) -> tuple[float | None, str]:
        """Mean nominal frequency of the DUT CPUs [Hz] and its source."""
        vals = []
        src = ""
        for c in self.dut_cpus:
            if c not in self._freq:
                if self.dut_files is not None:
                    hz, where = nominal_frequency(c, sys_root="/sys/devices/system/cpu",
                                                  cpuinfo="/proc/cpuinfo", files=self.dut_files)
                    self._freq[c] = hz, f"{where} of {self.dut_host}"
                else:
                    self._freq[c] = nominal_frequency(c, sys_root=self.sys_cpu_root,
                                                      cpuinfo=self.proc_root / "cpuinfo")
            hz, src = self._freq[c]
            if hz is None:
                return None, src
            vals.append(hz)
        return (sum(vals) / len(vals) if vals else None), src

    def _cycles_per_packet(self, busy_s: float, packets: int | None) -> tuple[float | None, dict]:
        hz, src = self.nominal_hz()
        basis = {"label": "estimated", "busy_s": sig(busy_s), "packets": packets,
                 "nominal_hz": hz, "frequency_source": src,
                 "formula": "busy seconds of the DUT CPUs x nominal Hz / packets"}
        if not packets or packets <= 0 or hz is None:
            return None, basis
        return busy_s * hz / packets, basis


def _round(d: dict[str, Any]) -> dict[str, Any]:
    return {k: sig(v) if isinstance(v, float) else v for k, v in d.items()}
