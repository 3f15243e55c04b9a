"""The netns lab's DUT host: the DUT namespace, its two veth ports, the DUT CPU."""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from .. import native
from . import cleanup, rt_throttling
from ..dut.host import DutHost, PortRx

if TYPE_CHECKING:
    from .netns import Lab


#: environment variables that point a program at another build (e.g. vfwd-asan)
TOOL_ENV = {"vfwd": "FWDBENCH_VFWD"}


class NetnsDutHost(DutHost):
    """``lab.dut_host()``: the DUT side of a running lab, as drivers see it."""

    kind = "netns"

    def __init__(self, lab: "Lab", memif=None):
        self.lab = lab
        self.memif = memif
        self.name = f"netns {lab.dut_ns}"
        self.exec = lab.dut_exec
        self.ports = tuple(lab.ports)
        self.cpus = (lab.dut_cpu,)
        self.ipv6 = lab.cfg.ipv6
        self.run_tag = cleanup.shm_prefix(lab.run_id).rstrip("-")

    @property
    def system_exec(self):
        """This machine's root namespace: a mount made through ``ip netns exec`` (the
        DUT executor) would stay in the private mount namespace of that one command."""
        from .executor import Executor
        return Executor(None)

    def rx(self) -> PortRx:
        lab = self.lab
        if self.memif:          # no kernel on the path: the data plane polls its rings
            # ... at the NAPI threads' SCHED_FIFO priority where the lab lifted RT
            # throttling (a spinning FIFO thread is else idled 50 ms a second)
            off = rt_throttling.lifted(lab.rt_throttling)
            prio = lab.cfg.napi_rt_priority if lab.cfg.kernel_tuning and off else 0
            return PortRx(ingress="memif", rt_priority=prio)
        if not lab.cfg.kernel_tuning:
            return PortRx(ingress="napi", napi_cpu=None, rt_priority=0)
        return PortRx(ingress=lab.dut_ingress, queue=lab.dut_queue,
                      napi_cpu=lab.dut_napi_cpu(), rt_priority=lab.cfg.napi_rt_priority)

    def interface_counters(self) -> dict[str, dict[str, int]]:
        return self.lab.interface_counters("dut")

    def restore_ports(self) -> None:
        self.lab.dut_baseline()

    def bounce_ports(self, down_s: float = 0.2) -> None:
        super().bounce_ports(down_s)
        # veth's NAPI threads are made anew when a port comes up: pin them again
        self.lab.repin_dut_napi()

    def napi_pids(self) -> list[int]:
        dut_ifs = {p.dut.ifname for p in self.ports}
        return [int(n["pid"]) for t in self.lab.tuning if t.ifname in dut_ifs for n in t.napi]

    def tool(self, name: str) -> str:
        return os.environ.get(TOOL_ENV.get(name, ""), "") or str(native.tool(name))

    def make_dir(self, prefix: str) -> str:
        # the DUT namespace shares this host's file system; the lab's directory
        # goes with the lab, also after a crash (cleanup.remove_run_files)
        base = cleanup.run_dir(self.lab.run_id)
        os.makedirs(base, mode=0o700, exist_ok=True)
        return tempfile.mkdtemp(prefix=f"{prefix}-", dir=base)

    def remove_dir(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), "namespace": self.lab.dut_ns, "rx": self.rx().as_dict(),
                "link": self.link}
