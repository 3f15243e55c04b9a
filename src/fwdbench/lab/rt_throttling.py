"""RT throttling is lifted while a lab is up, and restored when the last one goes.

The lab runs the NAPI threads at SCHED_FIFO, and a poll-mode data plane
(vfwd) spins at their priority. With the kernel's RT throttling
(``kernel.sched_rt_runtime_us`` = 950000 of every 1000000 us) the DUT CPU
then sits idle 50 ms of every second: measured here, vfwd at 0.6 Mpps lost
4.8 % of the frames with the DUT CPU 5.6 % idle, and 0.008 % with the
throttling lifted. Since Linux 6.12 a deferred "fair server" gives starved
normal tasks their 5 % only when they have work, so nothing starves without
the old throttling; on older kernels the lab leaves it alone.

The value found is written to the lab's state file before the change, so a
crashed run's leftover is restored by ``fwdbench lab down --all`` too; labs
up at the same time share the first one's saved value.
"""
from __future__ import annotations

import os
import re
from typing import Any

RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
KEY = "sched_rt_runtime_us_saved"
FAIR_SERVER_SINCE = (6, 12)


def kernel_has_fair_server(release: str | None = None) -> bool:
    m = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
    return bool(m) and (int(m[1]), int(m[2])) >= FAIR_SERVER_SINCE


def _read() -> int | None:
    try:
        with open(RT_RUNTIME) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _write(value: int) -> bool:
    try:
        with open(RT_RUNTIME, "w") as f:
            f.write(str(value))
        return True
    except OSError:
        return False


def lift(state: dict[str, Any], others: list[dict[str, Any]], save) -> str:
    """Lift RT throttling for the lab of ``state``; ``save(state)`` persists it first.

    ``others``: state files of the other labs on this host. Returns what was done
    (for the lab's description).
    """
    if not kernel_has_fair_server():
        return f"left alone (kernel {os.uname().release} has no fair server)"
    current = _read()
    if current is None:
        return f"left alone ({RT_RUNTIME} unreadable)"
    shared = [o[KEY] for o in others if o.get(KEY) is not None]
    saved = shared[0] if shared else current
    if saved == -1:
        return "already unlimited (-1)"
    state[KEY] = saved
    save(state)                     # before the change: a crash stays restorable
    if current != -1 and not _write(-1):
        state.pop(KEY)
        save(state)
        return f"left alone (cannot write {RT_RUNTIME})"
    return f"lifted (-1; {saved} restored at teardown)"


def lifted(status: str) -> bool:
    """True when ``status`` (what lift() returned) says RT throttling is off now."""
    return status.startswith(("lifted", "already unlimited"))


def restore(state: dict[str, Any] | None, others: list[dict[str, Any]]) -> None:
    """Put the saved value back unless another lab still relies on the lift."""
    if not state or state.get(KEY) is None:
        return
    if any(o.get(KEY) is not None for o in others):
        return
    _write(int(state[KEY]))
