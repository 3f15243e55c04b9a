"""DPDK's state on the host a DPDK program runs on, through that host's executor.

The testpmd driver (testpmd.py) asks here which PMDs and which DPDK are
installed, reserves hugepages for a run and gives them back, and removes
what crashed runs left: the same code for the netns lab (this machine,
``lab.executor.Executor(None)``: the host's mount namespace, not the lab
namespace's private view of it) and for a DUT host over SSH
(``remote.executor.RemoteExecutor``): every file read, sysctl and mount is
a call on the executor, never this machine's /proc or /sys.

Hugepages: ``reserve_hugepages`` raises ``vm.nr_hugepages`` by what is
missing and mounts a private hugetlbfs at HUGE_ROOT/<prefix>; it records
what it did in HUGE_ROOT/<prefix>.json, with its owner (the fwdbench
process: host name, boot id, pid and start time; on the SSH testbed the
tester's), so ``sweep_stale_hugepages`` undoes the reservation of a run
whose owner is gone: at the next testpmd setup on that host, and on a DUT
host over SSH also when a later run removes a crashed run's leftovers
(remote/leftovers.py). A record of another tester's run is left alone.

Runtime directories: DPDK keeps /var/run/dpdk/<file-prefix>/ with a
``config`` file its primary process holds a POSIX write lock on;
``sweep_stale_runtime_dirs`` removes ours (``fwdbench-*``) whose lock
nobody holds (/proc/locks of that host).
"""
from __future__ import annotations

import json
import re
import socket
from typing import Any

from ..errors import LabError

RUN_DIR = "/var/run/dpdk"
PREFIX_STEM = "fwdbench-"           # every --file-prefix fwdbench uses starts with it
HUGE_ROOT = "/run/fwdbench-dpdk"    # <prefix>/: private hugetlbfs mounts; <prefix>.json: state
PMD_GLOBS = ("/usr/lib/*/dpdk/pmds-*/librte_net_{name}.so*", "/usr/lib/dpdk/pmds-*/librte_net_{name}.so*",
             "/usr/local/lib*/dpdk/pmds-*/librte_net_{name}.so*",
             "/usr/lib/*/librte_net_{name}.so*")
PMDS = ("af_xdp", "af_packet", "memif")

# Fixed scripts (data arrives as "$@", never in the text).
#: find_pmds: glob patterns; prints the files each one matches
FIND_PMDS = 'for p; do for f in $p; do [ -e "$f" ] && echo "$f"; done; done; true'
#: sweep_runtime_dirs: run dir, prefix stem; removes our dirs whose config nobody
#: locks (a dir without config yet, younger than 2 min, may be starting now);
#: prints their names
SWEEP_RUN_DIRS = (
    'cd "$1" 2>/dev/null || exit 0; '
    'for d in "$2"*; do [ -d "$d" ] || continue; '
    'if [ -e "$d/config" ]; then ino=$(stat -c %i "$d/config") || continue; '
    'grep -Eq " [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks && continue; '
    'elif [ -n "$(find "$d" -maxdepth 0 -mmin -2)" ]; then continue; fi; '
    'rm -rf -- "$d" && echo "$d"; done; true')


def _ex(ex):
    if ex is None:
        from ..lab.executor import Executor
        return Executor(None)
    return ex


def _lost(e: BaseException) -> bool:
    """True for an SSH failure (the DUT host unreachable), which no fallback mends."""
    from ..remote.ssh import SshError
    return isinstance(e, SshError)


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)


# ---- what is installed ---------------------------------------------------------------

def available_pmds(ex=None, names: tuple[str, ...] = PMDS) -> set[str]:
    """Which of DPDK's net PMDs ``names`` are installed on the executor's host (one
    command)."""
    pats = [g.format(name=n) for n in names for g in PMD_GLOBS]
    cp = _ex(ex).run(["sh", "-c", FIND_PMDS, "sh", *pats], check=False, timeout=20)
    found = set()
    for line in _text(cp.stdout).split():
        m = re.search(r"librte_net_([a-z0-9_]+)\.so", line)
        if m:
            found.add(m.group(1))
    return found & set(names)


def dpdk_version(ex=None) -> str:
    """Version of the DPDK on the executor's host (dpkg's dpdk-dev, else pkg-config's
    libdpdk), '' if unknown."""
    ex = _ex(ex)
    for argv in (["dpkg-query", "-W", "-f", "${Version}", "dpdk-dev"],
                 ["pkg-config", "--modversion", "libdpdk"]):
        try:
            cp = ex.run(argv, check=False, timeout=10)
        except LabError as e:
            if _lost(e):                # the connection, not the tool
                raise
            continue
        if cp.returncode == 0 and _text(cp.stdout).strip():
            return _text(cp.stdout).strip()
    return ""


# ---- runtime directories ---------------------------------------------------------------

def sweep_stale_runtime_dirs(run_dir: str = RUN_DIR, ex=None) -> list[str]:
    """Remove <run_dir>/fwdbench-* left by crashed runs on the executor's host: those
    whose config no live DPDK process locks. Their names."""
    cp = _ex(ex).run(["sh", "-c", SWEEP_RUN_DIRS, "sh", run_dir, PREFIX_STEM], check=False,
                     timeout=30)
    return sorted(_text(cp.stdout).split())


# ---- hugepages ------------------------------------------------------------------------

def hugepage_meminfo(ex=None) -> tuple[int, int]:
    """(page size [KiB], free pages) of the default hugepage size on the executor's host."""
    text = _ex(ex).read_files(["/proc/meminfo"])["/proc/meminfo"] or ""
    size = free = 0
    for line in text.splitlines():
        if line.startswith("Hugepagesize:"):
            size = int(line.split()[1])
        elif line.startswith("HugePages_Free:"):
            free = int(line.split()[1])
    return size, free


def _mounts(ex) -> list[list[str]]:
    text = _ex(ex).read_files(["/proc/mounts"])["/proc/mounts"] or ""
    return [ln.split() for ln in text.splitlines() if len(ln.split()) >= 4]


def hugetlbfs_mount(size_kb: int, ex=None) -> str | None:
    """A mounted hugetlbfs of the default page size (not a private one of ours)."""
    for parts in _mounts(ex):
        if parts[2] != "hugetlbfs" or parts[1].startswith(HUGE_ROOT):
            continue
        opts = dict(o.split("=", 1) for o in parts[3].split(",") if "=" in o)
        ps = opts.get("pagesize", "")
        if ps in ("", f"{size_kb}k", f"{size_kb}K", f"{size_kb // 1024}M"):
            return parts[1]
    return None


def _nr_hugepages(ex) -> int:
    return int(_ex(ex).sysctl_get(["vm.nr_hugepages"])["vm.nr_hugepages"] or 0)


def boot_id() -> str:
    from ..remote.leftovers import boot_id as this_boot
    return this_boot()


def proc_start(pid: int) -> int | None:
    """Start time [clock ticks since boot] of a process of this machine (an owner)."""
    from ..lab.cleanup import proc_start_time
    return proc_start_time(pid)


def owner() -> dict[str, Any]:
    """This process as the owner of a reservation (it runs on the tester)."""
    import os
    pid = os.getpid()
    return {"owner_pid": pid, "owner_start": proc_start(pid), "owner_host": socket.gethostname(),
            "owner_boot": boot_id()}


def owner_gone(st: dict[str, Any]) -> bool:
    """True when the fwdbench process that made the record ``st`` has ended (on this
    tester); a record of another tester's is never gone from here."""
    host = st.get("owner_host")
    if host and host != socket.gethostname():
        return False
    boot = st.get("owner_boot")
    if boot and boot != boot_id():
        return True
    pid = int(st.get("owner_pid") or 0)
    start = st.get("owner_start")
    return not (pid and start and proc_start(pid) == start)


def _save(ex, state: dict[str, Any]) -> None:
    ex.write_file(state["state_file"], json.dumps(state, sort_keys=True) + "\n", 0o644)


def reserve_hugepages(prefix: str, need: int, size_kb: int, ex=None) -> dict[str, Any]:
    """Add hugepages on the executor's host until ``need`` are free, mount a private
    hugetlbfs for them; {"dir": mount, "state": record}. OSError when it cannot
    (everything it did undone)."""
    ex = _ex(ex)
    state: dict[str, Any] = {"prefix": prefix, **owner(), "added": 0,
                             "mount": f"{HUGE_ROOT}/{prefix}", "size_kb": size_kb,
                             "state_file": f"{HUGE_ROOT}/{prefix}.json"}
    try:
        ex.run(["mkdir", "-p", "-m", "0755", HUGE_ROOT], timeout=10)
        _save(ex, state)
        _, free = hugepage_meminfo(ex)
        if free < need:
            cur = _nr_hugepages(ex)
            state["added"] = need - free        # recorded before the write: a crash undoes it
            _save(ex, state)
            ex.sysctl_set({"vm.nr_hugepages": cur + need - free})
            state["added"] = max(0, _nr_hugepages(ex) - cur)    # what the kernel found
            _save(ex, state)
            _, free = hugepage_meminfo(ex)
            if free < need:
                raise OSError(f"only {free} of {need} free after raising vm.nr_hugepages")
        ex.run(["mkdir", "-p", "-m", "0700", state["mount"]], timeout=10)
        r = ex.run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={size_kb}K", "nodev",
                    state["mount"]], timeout=10, check=False)
        if r.returncode != 0:
            raise OSError(f"mount hugetlbfs: {_text(r.stderr).strip()}")
        state["mounted"] = True
        _save(ex, state)
    except (OSError, ValueError, LabError) as e:
        release_hugepages(state, ex)
        if _lost(e):
            raise                                   # the connection, not the reservation
        raise OSError(str(e)) from None
    return {"dir": state["mount"], "state": state}


def release_hugepages(state: dict[str, Any], ex=None) -> None:
    """Undo reserve_hugepages(): unmount, give the added pages back, forget the state."""
    ex = _ex(ex)
    mnt = state.get("mount")
    if mnt:
        if any(p[1] == mnt for p in _mounts(ex)):
            ex.run(["umount", "--", mnt], timeout=10, check=False)
        ex.run(["rmdir", "--", mnt], timeout=10, check=False)
    added = int(state.get("added") or 0)
    if added:
        try:
            cur = _nr_hugepages(ex)
            ex.sysctl_set({"vm.nr_hugepages": max(0, cur - added)})    # others' stay
        except (ValueError, LabError) as e:
            if _lost(e):
                raise
    sf = state.get("state_file")
    if sf:
        ex.run(["rm", "-f", "--", sf], timeout=10, check=False)
        ex.run(["rmdir", "--", sf.rsplit("/", 1)[0]], timeout=10, check=False)  # if unused


def sweep_stale_hugepages(root: str = HUGE_ROOT, ex=None) -> list[str]:
    """Undo the reservations on the executor's host whose owner is gone (crashed);
    their prefixes."""
    ex = _ex(ex)
    cp = ex.run(["find", root, "-maxdepth", "1", "-name", f"{PREFIX_STEM}*.json"], check=False,
                timeout=20)
    files = sorted(_text(cp.stdout).split())
    got = ex.read_files(files) if files else {}
    out = []
    for fn in files:
        try:
            st = json.loads(got.get(fn) or "")
        except ValueError:
            continue
        if not isinstance(st, dict) or not owner_gone(st):
            continue
        st["state_file"] = fn
        release_hugepages(st, ex)
        out.append(str(st.get("prefix")))
    return out
