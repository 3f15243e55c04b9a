"""The DUT driver interface every data plane implements (contracts.md, 4)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .host import DutHost


class DutDriver(ABC):
    """One data plane under test, configured on a DUT host (dut/host.py).

    Lifecycle: ``validate`` (plan time, no side effects) -> ``check(host)``
    (probe tools on the DUT host) -> ``setup(host)`` -> ``counters()`` around
    each trial -> ``teardown()``. ``describe()`` feeds the report. Every side
    effect goes through ``host.exec``, so a driver runs unchanged on the netns
    lab and on a remote DUT host.
    """

    name: ClassVar[str]
    modes: ClassVar[tuple[str, ...]]
    #: how the DUT can meet the generator in the lab: veth (kernel ports) and, for
    #: user-space data planes, memif (DutHost.memif: shared-memory interfaces)
    links: ClassVar[tuple[str, ...]] = ("veth",)
    #: the DUT's memif role on a memif link: ``slave`` (it connects, retrying, and
    #: its memory is the shared region: zero copy) or ``master`` (it listens)
    memif_role: ClassVar[str] = "slave"
    #: True when the kernel stack does all the work on the DUT ports (no XDP
    #: program or AF_XDP socket of the driver's own): the lab then puts its
    #: ingress queue (testbed.dut_rx_queue) in front of the DUT CPU.
    kernel_stack: ClassVar[bool] = False
    #: True when the driver receives through AF_XDP sockets on the DUT ports,
    #: its XDP program only redirecting to them: the lab then runs the ports'
    #: NAPI on the generator's CPU and the sockets' RX rings are the ingress
    #: queue (testbed.dut_rx_queue; lab/ingress.py, "afxdp").
    afxdp_rx: bool = False

    def __init__(self, params: dict[str, Any]):
        self.params = dict(params)

    @classmethod
    @abstractmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        """Return normalised params or raise CampaignError naming ``where``.<field>."""

    @classmethod
    def fits_testbed(cls, params: dict[str, Any], dut_cpus: int | None, where: str) -> None:
        """Plan time: raise CampaignError naming ``where``.<field> when the params ask
        for more than the testbed gives (``dut_cpus``: the DUT's CPUs, None: unknown)."""

    @classmethod
    def drives_dpdk_pci(cls, params: dict[str, Any]) -> bool:
        """True when, with these (normal form) params, the DUT drives NICs bound to a
        DPDK driver itself (PCI ports of a real testbed, dut/pci.py); the other DUTs
        need each port as a kernel interface."""
        return False

    def check(self, host: "DutHost | None" = None) -> None:
        """Raise DutError if a tool or kernel feature this DUT needs is missing on
        ``host`` (None: this machine, before any testbed exists)."""

    def peer_macs(self, host: "DutHost | None" = None) -> dict[str, str]:
        """Destination MAC the generator writes on each tester port: the DUT port's
        MAC (an L3 DUT); L2 modes (bridge, xconnect) override it with the other
        tester port's. ``host`` None: the lab's addressing plan."""
        return {p.tg.ifname: p.dut.mac for p in _ports(host)}

    def pids(self) -> list[int]:
        """Processes whose CPU time is the DUT's (for the CPU and energy meters)."""
        return []

    def take_warnings(self) -> list[str]:
        """What the driver noticed since it was last asked (e.g. a data plane it had
        to revive); the trial routine adds them to the trial's warnings."""
        return []

    def trial_notes(self, counters: dict[str, int]) -> list[str]:
        """Warnings the driver reads in one trial's counter deltas (``counters``:
        DutDriver.counters() after minus before), e.g. that the data plane lost
        its CPU during the trial."""
        return []

    def link_settle_s(self) -> float:
        """[s] this data plane needs after its memif link comes up before it forwards
        at its rate (e.g. VPP re-resolving its routes); where the generator connects
        anew each trial the trial's warm-up is at least this long (trialrun.py)."""
        return 0.0

    def link_settle_why(self) -> str:
        """What link_settle_s() waits for, for the trial's note."""
        return ""

    def recover_link(self, reason: str) -> str | None:
        """The generator could not meet this DUT on its memif link (``reason``: the
        generator's error). A driver that can restore the link (restart its side)
        does so and returns a warning for the trial, which is then run once more;
        None: nothing to do, the trial fails with ``reason``."""
        return None

    @abstractmethod
    def setup(self, host: "DutHost") -> None:
        """Configure the data plane on ``host`` (argv lists only, through host.exec)."""

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Cumulative counters (interfaces, drops); the runner takes deltas."""

    @abstractmethod
    def teardown(self) -> None:
        """Undo setup; must be safe to call twice and after a failed setup."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Versions and settings for the report."""


def _ports(host: "DutHost | None"):
    if host is None:
        from ..lab import PORTS
        return PORTS
    return host.ports
