"""Kernel tuning of the lab veths, as measured best on these VMs (issue 2, part 3).

A veth has no NAPI of its own: without GRO or an XDP program, the receive
work of a frame runs on the *sender's* CPU, so generator and DUT compete
for one core (measured: 0.22 Mpps forwarded). With GRO on, the veth gets
a NAPI instance; made threaded (``/sys/class/net/X/threaded``) its
``napi/X-<id>`` kernel thread can be pinned to the receiver's CPU
(measured: 0.64 Mpps forwarded by the Linux router). We do this for the
DUT's ingress veths (pinned to the DUT CPU) and for the generator's
(pinned to the generator CPU, where its XDP RX program then runs; with GRO
already on, attaching XDP keeps the same NAPI instance and thread).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, asdict
from typing import Any

from ..errors import LabError
from .executor import Executor
from .netlink import NetlinkError, ifindex, napi_threads


@dataclass
class IfaceTuning:
    ifname: str
    gro: bool = False
    threaded: bool = False
    napi: list[dict[str, int]] = field(default_factory=list)   # {napi_id, pid, cpu, rt_priority}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _find_napi_by_name(ifname: str, before: set[int]) -> list[tuple[int, int]]:
    """Fallback when the netdev netlink family is missing: new napi/<ifname>-* kthreads."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in before:
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(f"napi/{ifname}-"):
            try:
                out.append((int(comm.rsplit("-", 1)[1]), int(d)))
            except ValueError:
                pass
    return out


def _napi_pids() -> set[int]:
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().startswith("napi/"):
                        out.add(int(d))
            except OSError:
                pass
    return out


def tune_rx(ex: Executor, ifnames: list[str], cpu: int, rt_priority: int = 0) -> list[IfaceTuning]:
    """GRO on + threaded NAPI on ``ifnames`` (in ``ex``'s netns), threads pinned to ``cpu``.

    ``rt_priority`` > 0 also gives the threads SCHED_FIFO at that priority, so
    they preempt a busy generator (or other load) on their CPU. Interfaces
    must be up. Returns what was applied, for describe().
    """
    before = _napi_pids()
    for ifn in ifnames:
        ex.run(["ethtool", "-K", ifn, "gro", "on"])
    ex.write_sysfs([f"/sys/class/net/{ifn}/threaded" for ifn in ifnames], "1")
    idx = {ifindex(ex.ns, ifn): ifn for ifn in ifnames}
    by_if: dict[str, list[tuple[int, int]]] = {ifn: [] for ifn in ifnames}
    try:
        for t in napi_threads(ex.ns, idx):
            by_if[idx[t.ifindex]].append((t.napi_id, t.pid))
    except NetlinkError:
        pass                    # no netdev family: fall back to thread names below
    for ifn in ifnames:
        if not by_if[ifn]:      # (also kernels whose NAPI_GET has no thread pid)
            by_if[ifn] = _find_napi_by_name(ifn, before)
    out = []
    for ifn in ifnames:
        if not by_if[ifn]:
            raise LabError(f"threaded NAPI on {ifn} in netns {ex.ns}: no napi thread appeared "
                           f"(is the interface up and GRO on?)")
        rec = IfaceTuning(ifn, gro=True, threaded=True)
        for napi_id, pid in by_if[ifn]:
            try:
                os.sched_setaffinity(pid, {cpu})
            except OSError as e:
                raise LabError(f"pinning napi/{ifn}-{napi_id} (pid {pid}) to CPU {cpu}: "
                               f"{e.strerror}") from None
            if rt_priority:
                try:
                    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(rt_priority))
                except OSError as e:
                    raise LabError(f"SCHED_FIFO {rt_priority} for napi/{ifn}-{napi_id} "
                                   f"(pid {pid}): {e.strerror}") from None
            rec.napi.append({"napi_id": napi_id, "pid": pid, "cpu": cpu,
                             "rt_priority": rt_priority})
        out.append(rec)
    return out


def napi_affinity(rec: IfaceTuning) -> dict[int, list[int]]:
    """Current CPU affinity of the NAPI threads recorded in ``rec`` (pid -> CPUs)."""
    out = {}
    for n in rec.napi:
        try:
            out[n["pid"]] = sorted(os.sched_getaffinity(n["pid"]))
        except OSError:
            out[n["pid"]] = []
    return out
