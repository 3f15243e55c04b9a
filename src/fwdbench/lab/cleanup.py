"""Crash-safe bookkeeping of labs: state files, ownership, teardown of leftovers.

Every lab writes ``/run/fwdbench/<run_id>.json`` *before* it creates its
namespaces and removes it only *after* they are gone, so a namespace of
ours without a state file cannot exist. The file holds the owner's pid and
that process's start time (so a recycled pid does not look alive).

``down_all()`` removes labs whose owner is dead (crashed or killed runs),
never a live one, a persistent (``fwdbench lab up``) one, or a namespace
without a state file (not ours, even if named ``fb-*``).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import LabError
from . import rt_throttling

STATE_DIR = "/run/fwdbench"
#: DPDK's runtime directories, one per --file-prefix
DPDK_RUN_DIR = "/var/run/dpdk"
RUN_ID_RE = re.compile(r"^[a-z0-9]{1,12}$")
NS_RE = re.compile(r"^fb-([a-z0-9]{1,12})-(tg|dut)$")


def state_path(run_id: str) -> str:
    return os.path.join(STATE_DIR, f"{run_id}.json")


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` [clock ticks since boot], None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    # the comm field may contain spaces and parentheses: split after the last ')'
    rest = data[data.rindex(")") + 2:].split()
    return int(rest[19])


def owner_alive(state: dict[str, Any]) -> bool:
    pid = state.get("owner_pid")
    if not pid:
        return False
    st = proc_start_time(int(pid))
    return st is not None and st == state.get("owner_start")


def write_state(state: dict[str, Any]) -> str:
    """Create the state file atomically; LabError if the run id is taken."""
    os.makedirs(STATE_DIR, mode=0o755, exist_ok=True)
    final = state_path(state["run_id"])
    tmp = f"{final}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, final)          # fails if a lab with this run id exists
    except FileExistsError:
        raise LabError(f"a lab with run id {state['run_id']!r} already exists "
                       f"({final}); pick another id or `fwdbench lab down`") from None
    finally:
        os.unlink(tmp)
    return final


def update_state(state: dict[str, Any]) -> None:
    final = state_path(state["run_id"])
    tmp = f"{final}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, final)


def read_state(run_id: str) -> dict[str, Any] | None:
    try:
        with open(state_path(run_id)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"run_id": run_id, "corrupt": True}


def remove_state(run_id: str) -> None:
    try:
        os.unlink(state_path(run_id))
    except FileNotFoundError:
        pass


def netns_names() -> list[str]:
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def ns_pids(ns: str) -> list[int]:
    """PIDs (other than ours) whose network namespace is ``ns``."""
    try:
        target = os.stat(f"/run/netns/{ns}")
    except FileNotFoundError:
        return []
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            st = os.stat(f"/proc/{d}/ns/net")
        except OSError:
            continue
        if (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev):
            out.append(int(d))
    return out


def kill_ns_processes(namespaces: list[str], timeout: float = 3.0) -> list[int]:
    """SIGKILL every process in ``namespaces`` and wait until they are gone."""
    victims = [p for ns in namespaces for p in ns_pids(ns)]
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    left = list(victims)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                os.waitpid(pid, os.WNOHANG)    # reap if it is our child
            except ChildProcessError:
                pass
            if proc_start_time(pid) is None or _is_zombie(pid):
                left.remove(pid)
        if left:
            time.sleep(0.01)
    if left:
        raise LabError(f"processes {left} in {', '.join(namespaces)} survived SIGKILL")
    return victims


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
        return data[data.rindex(")") + 2] == "Z"
    except OSError:
        return True


def delete_netns(ns: str) -> None:
    """Remove a named namespace (its veths go with it); missing is fine."""
    if not os.path.exists(f"/run/netns/{ns}"):
        return
    cp = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
    if cp.returncode != 0 and os.path.exists(f"/run/netns/{ns}"):
        raise LabError(f"`ip netns del {ns}` failed: {cp.stderr.strip()}")


def run_dir(run_id: str) -> str:
    """The lab's own directory (DUT configs, API and memif sockets), removed with it."""
    return os.path.join(STATE_DIR, f"{run_id}.d")


def shm_prefix(run_id: str) -> str:
    """Names of the shared-memory files a lab's data planes create start with it
    (e.g. VPP's API segment), so teardown finds them after a crash too."""
    return f"fb-{run_id}-"


def remove_run_files(run_id: str) -> None:
    """The lab's directory, its /dev/shm files and DPDK runtime directories of its
    processes' file prefixes (a TRex generator's; killed with the namespaces)."""
    import shutil
    shutil.rmtree(run_dir(run_id), ignore_errors=True)
    pre = shm_prefix(run_id)
    try:
        dpdk = [n for n in os.listdir(DPDK_RUN_DIR) if n.startswith(pre)]
    except OSError:
        dpdk = []
    for n in dpdk:
        shutil.rmtree(os.path.join(DPDK_RUN_DIR, n), ignore_errors=True)
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for n in names:
        if n.startswith(pre):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join("/dev/shm", n))


def remove_lab(run_id: str, namespaces: list[str] | None = None) -> None:
    """Kill processes in, and delete, the lab's namespaces, its directory and
    shared-memory files; then its state file."""
    if namespaces is None:
        namespaces = [f"fb-{run_id}-tg", f"fb-{run_id}-dut"]
    for ns in namespaces:
        if not NS_RE.match(ns):
            raise LabError(f"refusing to remove {ns!r}: not a fwdbench lab namespace")
    kill_ns_processes(namespaces)
    for ns in namespaces:
        delete_netns(ns)
    remove_run_files(run_id)
    with rt_lock():     # another lab's restore must see this state or its absence, not both
        rt_throttling.restore(read_state(run_id), other_states(run_id))
        remove_state(run_id)


@contextlib.contextmanager
def rt_lock():
    """Serialises the RT throttling lift and restore of labs on this host."""
    os.makedirs(STATE_DIR, mode=0o755, exist_ok=True)
    fd = os.open(os.path.join(STATE_DIR, ".rt_throttling.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def all_states() -> Iterator[tuple[str, dict[str, Any]]]:
    """(run id, state) of every lab state file on this host, by run id."""
    try:
        files = sorted(os.listdir(STATE_DIR))
    except FileNotFoundError:
        return
    for fn in files:
        run_id = fn[:-5]
        if fn.endswith(".json") and RUN_ID_RE.match(run_id):
            st = read_state(run_id)
            if st is not None:
                yield run_id, st


def other_states(run_id: str) -> list[dict[str, Any]]:
    """Readable state files of every lab on this host but ``run_id``."""
    return [st for rid, st in all_states() if rid != run_id and not st.get("corrupt")]


@dataclass
class LabInfo:
    """One lab on this host, as ``fwdbench lab status`` shows it."""
    run_id: str
    owner_pid: int | None
    alive: bool                 # owner process still running
    persistent: bool            # made by `fwdbench lab up`, lives until `lab down`
    namespaces: list[str] = field(default_factory=list)   # those that exist now
    created: float | None = None    # [s since epoch]
    has_state: bool = True      # False: fb-* namespaces without a state file (not ours)

    @property
    def leftover(self) -> bool:
        """Removable by down_all(): ours, not persistent, owner dead."""
        return self.has_state and not self.persistent and not self.alive


def list_labs() -> list[LabInfo]:
    present = netns_names()
    out: list[LabInfo] = []
    seen: set[str] = set()
    for run_id, st in all_states():
        nss = [n for n in (f"fb-{run_id}-tg", f"fb-{run_id}-dut") if n in present]
        seen.update(nss)
        out.append(LabInfo(run_id=run_id, owner_pid=st.get("owner_pid"),
                           alive=owner_alive(st), persistent=bool(st.get("persistent")),
                           namespaces=nss, created=st.get("created")))
    orphans: dict[str, list[str]] = {}
    for n in present:
        m = NS_RE.match(n)
        if m and n not in seen:
            orphans.setdefault(m.group(1), []).append(n)
    for rid, nss in sorted(orphans.items()):
        out.append(LabInfo(run_id=rid, owner_pid=None, alive=False, persistent=False,
                           namespaces=nss, has_state=False))
    return out


def down_all(run_ids: Iterable[str] | None = None) -> list[str]:
    """Remove leftovers of crashed runs (owner dead, not persistent); returns their run ids.

    ``run_ids`` limits it to those labs (tests use it so they only touch their own).
    """
    only = None if run_ids is None else set(run_ids)
    removed = []
    for info in list_labs():
        if not info.leftover or (only is not None and info.run_id not in only):
            continue
        st = read_state(info.run_id)
        if st is None or (not st.get("corrupt") and owner_alive(st)):
            continue            # gone meanwhile, or (pid race) alive after all
        remove_lab(info.run_id)
        removed.append(info.run_id)
    return removed


def down_lab(run_id: str) -> None:
    """Remove one lab by run id (e.g. a persistent one); LabError if unknown."""
    if not RUN_ID_RE.match(run_id):
        raise LabError(f"{run_id!r} is not a lab run id (1-12 lowercase letters/digits)")
    st = read_state(run_id)
    if st is None:
        raise LabError(f"no lab with run id {run_id!r} (see `fwdbench lab status`)")
    remove_lab(run_id)
