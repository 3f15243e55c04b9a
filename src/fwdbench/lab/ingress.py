"""The DUT ingress queue for kernel data planes (docs/lab.md, "DUT ingress").

A veth's receive ring holds 256 frames, fixed. On these VMs the hypervisor
takes a busy vCPU away for 4-33 ms at a time (measured with both vCPUs busy:
35 gaps over 1 ms in 20 s, accounted as steal); at 64 kpps a 4 ms gap
overflows 256 frames, so the Linux router "lost" 5-1400 frames per 30 s
trial at 10 % of its capacity. A physical NIC's RX ring (512-8192
descriptors) absorbs such gaps. ``cpumap`` mode gives the DUT ports one:
the veth's NAPI runs where the frame was sent (the generator's CPU) and only
runs a 3-instruction XDP program that queues the frame on the DUT CPU's
cpumap entry (``qsize`` frames); the cpumap kthread on the DUT CPU builds the
skb and runs the whole kernel path (GRO, forwarding, netfilter, bridge, tc)
there. Measured: 0 lost in 10 of 10 trials (see bench/core_targets.py).

``napi`` mode is the other tuning of this lab: GRO + threaded NAPI pinned to
the DUT CPU (lab/tuning.py). The xdp DUT needs it: its whole data plane is
the XDP program that NAPI runs. ``afxdp`` mode is the same threaded NAPI
pinned to the *generator's* CPU, for DUTs that receive through AF_XDP
sockets (testpmd, vfwd): there NAPI only runs the driver's redirect to its
socket and copies the frame into the socket's memory (what a zero-copy NIC
does by DMA), and the socket's RX ring is the DUT's receive queue.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, asdict
from typing import Any

from .. import native
from ..errors import LabError
from .executor import Executor

MODES = ("napi", "cpumap", "afxdp")
#: cpumap's own limit on a queue [frames]
MAX_QSIZE = 16384


def fb_ingress_binary() -> str:
    """native/build/fb-ingress of this checkout ($FWDBENCH_NATIVE_BUILD overrides), or $PATH."""
    p = native.tool("fb-ingress")
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise LabError(f"fb-ingress not found in {native.build_dir()}: build it with "
                       f"`make -C native`")
    return str(p)


@dataclass
class IngressQueue:
    ifname: str
    cpu: int
    qsize: int
    prog_id: int
    map_id: int
    kthread_pid: int        # -1: not found
    rt_priority: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def attach(ex: Executor, ifname: str, cpu: int, qsize: int, rt_priority: int) -> IngressQueue:
    """Threaded NAPI off and the cpumap ingress program on ``ifname`` (in ``ex``'s netns)."""
    if not 1 <= qsize <= MAX_QSIZE:
        raise LabError(f"testbed.dut_rx_queue: {qsize} must be 1..{MAX_QSIZE} frames (or 0: off)")
    ex.write_sysfs([f"/sys/class/net/{ifname}/threaded"], "0")
    r = ex.run([fb_ingress_binary(), "attach", ifname, str(cpu), str(qsize)])
    try:
        return _queue(r.stdout, ifname, cpu, qsize, rt_priority)
    except LabError:
        detach(ex, ifname)          # attached but unusable: leave the port as it was
        raise


def _queue(out: str, ifname: str, cpu: int, qsize: int, rt_priority: int) -> IngressQueue:
    """The queue fb-ingress reported, its kthread checked and given its priority."""
    try:
        info = json.loads(out)
    except json.JSONDecodeError:
        raise LabError(f"fb-ingress attach {ifname}: unexpected output {out!r}") from None
    q = IngressQueue(ifname, cpu, qsize, int(info["prog_id"]), int(info["map_id"]),
                     int(info["kthread_pid"]), rt_priority)
    if q.kthread_pid > 0:
        try:
            # the kernel binds it to its CPU itself (and refuses to move it)
            if os.sched_getaffinity(q.kthread_pid) != {cpu}:
                raise LabError(f"cpumap kthread of {ifname} (pid {q.kthread_pid}) is not on CPU {cpu}")
            if rt_priority:
                os.sched_setscheduler(q.kthread_pid, os.SCHED_FIFO, os.sched_param(rt_priority))
        except OSError as e:
            raise LabError(f"cpumap kthread of {ifname} (pid {q.kthread_pid}): {e.strerror}") from None
    elif rt_priority:
        raise LabError(f"cpumap kthread for {ifname} (CPU {cpu}, map {q.map_id}) not found; "
                       f"cannot give it SCHED_FIFO {rt_priority}")
    return q

def detach(ex: Executor, ifname: str) -> None:
    ex.run([fb_ingress_binary(), "detach", ifname])
