"""The DUT host: where a data plane under test runs, as a testbed hands it over.

A DUT driver sees only this: an executor that makes every side effect on
that host (argv, files, sockets, netlink), the links to the tester (each a
``PortPair``: ``.dut`` is the DUT's port, ``.tg`` the tester's port facing
it, with the lab addressing plan's addresses and flow networks), the CPUs
the data plane may use, and how the testbed schedules the ports' receive.
The netns lab provides one (``fwdbench.lab.host.NetnsDutHost``); a remote
host reached over SSH provides another.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..lab.addressing import PortPair
from ..lab.executor import Executor
from .pci import PciFunction


@dataclass(frozen=True)
class MemifLink:
    """A DUT port that is a memif interface (the lab's ``memif`` link): its control
    socket, the interface id and the DUT's role (``slave``: the DUT connects and
    brings the shared memory, zero copy, the generator listens; ``master``: the
    other way round). The port's addresses and MACs stay the addressing plan's
    (``PortPair``)."""
    socket: str
    id: int = 0
    role: str = "slave"
    ring_size: int | None = None    # slots per ring, set by the slave (testbed.memif_ring_size;
                                    # None: the slave's own default)

    @property
    def peer_role(self) -> str:
        """The generator's role on this link."""
        return "master" if self.role == "slave" else "slave"

    def as_dict(self) -> dict[str, Any]:
        return {"socket": self.socket, "id": self.id, "dut_role": self.role,
                **({"ring_size": self.ring_size} if self.ring_size else {})}


@dataclass(frozen=True)
class PortRx:
    """How the DUT ports' receive runs, as the testbed arranged it.

    ``ingress``: ``napi`` (threaded NAPI, ``napi_cpu``), ``cpumap`` (a queue in
    front of the DUT CPU, for kernel data planes), ``afxdp`` (NAPI on the
    generator's CPU filling AF_XDP rings), ``memif`` (no kernel: shared-memory
    rings the data plane polls) or ``nic`` (a real NIC's IRQs, not managed by
    fwdbench). ``rt_priority``: SCHED_FIFO priority of the NAPI
    threads the testbed pinned (0: none pinned, or normal scheduling); on
    ``memif``, the priority the data plane's polling thread should run at
    (0: normal scheduling), so that this host's other work does not take its
    CPU in the middle of a trial (docs/lab.md).
    """
    ingress: str = "nic"
    queue: int = 0               # [frames] of the ingress queue (cpumap/afxdp)
    napi_cpu: int | None = None
    rt_priority: int = 0

    @property
    def managed(self) -> bool:
        """True when the testbed pins the ports' NAPI threads at ``rt_priority``."""
        return self.ingress not in ("nic", "memif") and self.rt_priority > 0

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.ingress, "queue": self.queue, "napi_cpu": self.napi_cpu}


class DutHost(ABC):
    """One DUT host for the scenarios of a testbed (see the module docstring)."""

    #: ``netns`` or ``ssh``
    kind: str
    #: for messages: "netns fb-ab12cd-dut", "bench@dut1"
    name: str
    exec: Executor
    ports: tuple[PortPair, ...]
    cpus: tuple[int, ...]
    ipv6: bool
    #: unique to this run (``fb-<run id>``): names of shared-memory files and
    #: sockets a DUT creates start with it, so a crashed run's are found too
    run_tag: str = "fb-run"
    #: memif interfaces instead of the kernel ports, one per port (None: the
    #: ports are kernel interfaces, ``ports[i].dut.ifname``)
    memif: tuple[MemifLink, ...] | None = None
    #: per port, the PCI function of a NIC bound to a DPDK driver (dut/pci.py):
    #: it has no kernel interface, ``ports[i].dut.ifname`` only names it; None:
    #: a kernel interface. Empty: every port is a kernel interface.
    dpdk_pci: tuple["PciFunction | None", ...] = ()
    #: where this host's sysfs is read (tests point it at a tree of their own)
    sysfs: str = "/sys"

    def dpdk_port(self, i: int) -> "PciFunction | None":
        """Port ``i``'s PCI function when a DPDK driver holds it, else None."""
        return self.dpdk_pci[i] if i < len(self.dpdk_pci) else None

    def kernel_ports(self) -> tuple[PortPair, ...]:
        """The ports that are kernel interfaces (all but the DPDK-bound NICs)."""
        return tuple(p for i, p in enumerate(self.ports) if self.dpdk_port(i) is None)

    @property
    def link(self) -> str:
        """How the DUT is linked to the tester: ``veth`` (kernel ports) or ``memif``."""
        return "memif" if self.memif else "veth"

    @property
    def system_exec(self) -> Executor:
        """The executor for this host's host-wide state (mounts, ``vm.*`` sysctls,
        /run and /var/run files, installed packages): ``exec`` unless that runs in a
        private view of the host (the lab's namespace)."""
        return self.exec

    @abstractmethod
    def rx(self) -> PortRx:
        """How the DUT ports receive now."""

    @abstractmethod
    def interface_counters(self) -> dict[str, dict[str, int]]:
        """Cumulative kernel counters of the DUT ports: ``{ifname: {rx_packets, ...}}``."""

    @abstractmethod
    def restore_ports(self) -> None:
        """Put the DUT ports back as the testbed set them up (addresses, static
        neighbours of the tester ports, up, no master); drivers call it in
        teardown. Idempotent."""

    def bounce_ports(self, down_s: float = 0.2) -> None:
        """Take the DUT ports down for ``down_s`` [s] and up again (ends a data
        plane's transmit that the kernel keeps answering EAGAIN), keeping the
        testbed's receive setup."""
        import time
        for p in self.kernel_ports():
            self.exec.run(["ip", "link", "set", "dev", p.dut.ifname, "down"])
        time.sleep(down_s)
        for p in self.kernel_ports():
            self.exec.run(["ip", "link", "set", "dev", p.dut.ifname, "up"])

    def napi_pids(self) -> list[int]:
        """PIDs of the DUT ports' NAPI threads the testbed pinned (XDP runs there)."""
        return []

    @abstractmethod
    def tool(self, name: str) -> str:
        """Path on this host of one of fwdbench's native programs (``fb-xdp``, ``vfwd``)."""

    @abstractmethod
    def make_dir(self, prefix: str) -> str:
        """A new private directory on this host for one DUT (configs, sockets)."""

    @abstractmethod
    def remove_dir(self, path: str) -> None:
        """Remove a directory made by ``make_dir`` and all in it."""

    def facts(self) -> dict[str, Any]:
        """What the report's environment section says about this host."""
        return {"kind": self.kind, "name": self.name, "cpus": list(self.cpus)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
