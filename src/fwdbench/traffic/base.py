"""The generator interface: one module per traffic generator, one registry line.

A generator runs on the tester host (``TesterHost``: its executor, its ports
facing the DUT, its CPUs) and turns a ``TrialRequest`` into a
``TrialResult`` (trial.py): per direction tx, rx, loss, achieved rate,
``tx_limited``, latency. Searches, the store and the report only ever see
``TrialResult``s, so they do not know which generator measured.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..lab.addressing import PortPair
from ..lab.executor import Executor

if TYPE_CHECKING:
    from ..campaign import Profile, TrialSettings
    from ..trial import TrialResult


@dataclass(frozen=True)
class TesterHost:
    """Where the generator runs: the lab's generator namespace, or a tester's own NICs.

    ``ports[i].tg`` is the tester's port of link i (name, MAC, addresses),
    ``ports[i].dut`` the DUT port it faces; ``cpus`` are the generator's.
    ``run_dir``: a directory on the tester host removed with the run (also
    after a crash; None: none), for a generator's config files, logs and
    sockets; ``run_tag``: names of shared-memory files and the like start
    with it, so a crashed run's are found too (as DutHost.run_tag)."""
    name: str
    exec: Executor
    ports: tuple[PortPair, ...]
    cpus: tuple[int, ...]
    facts: dict[str, Any] = field(default_factory=dict)
    run_dir: str | None = None
    run_tag: str = "fb-run"


@dataclass(frozen=True)
class TrialRequest:
    """One trial, as every generator must run it.

    ``load_pps`` [pps] per direction; ``duration_s`` [s] measured (warm-up and
    drain come from ``trial``); ``latency``: a latency stream at
    ``trial.latency_rate`` beside the load; ``peer_macs``: the destination
    MAC per tester port (the DUT driver's choice); ``burst_period_us``: the
    pacing granularity a testbed asks for (None: the generator's default);
    ``memif``: the links of this trial when the DUT meets the tester over memif
    (dut.host.MemifLink per port, the generator their master; None: the tester's
    kernel ports)."""
    profile: "Profile"
    trial: "TrialSettings"
    load_pps: float
    duration_s: float
    latency: bool = False
    peer_macs: dict[str, str] = field(default_factory=dict)
    burst_period_us: float | None = None
    memif: tuple | None = None


class Generator(ABC):
    """A traffic generator bound to a tester host for one campaign run."""

    name: ClassVar[str]
    #: the lab links it can send on: veth (the tester's kernel ports) and memif
    #: (TrialRequest.memif)
    links: ClassVar[tuple[str, ...]] = ("veth",)
    #: memif: it connects anew for every trial (fwdgen: a process per trial), so
    #: the DUT's link comes up each trial (DutDriver.link_settle_s)
    memif_per_trial: ClassVar[bool] = False

    def __init__(self, settings: dict[str, Any], tester: TesterHost):
        self.settings = dict(settings)
        self.tester = tester

    @classmethod
    def links_for(cls, settings: dict[str, Any]) -> tuple[str, ...]:
        """The links it serves with these (validated) settings."""
        return cls.links

    @classmethod
    def validate(cls, settings: dict[str, Any], where: str) -> dict[str, Any]:
        """Normalised ``[generator]`` settings, or CampaignError naming ``where``.<field>."""
        if settings:
            key = next(iter(settings))
            from ..errors import CampaignError
            raise CampaignError(f"{where}.{key}: unknown setting of generator {cls.name!r}")
        return {}

    @abstractmethod
    def check(self) -> dict[str, Any]:
        """Probe the generator before the first trial (GeneratorError if unusable);
        returns what it found (versions, backends) for the report."""

    @abstractmethod
    def run(self, request: TrialRequest) -> "TrialResult":
        """Run one trial; CampaignError for a request it refuses, GeneratorError when it
        fails at run time (the trial fails, the campaign can resume)."""

    def describe(self) -> dict[str, Any]:
        return {"generator": self.name, **self.settings}

    def close(self) -> None:
        """Stop whatever the generator started (servers, processes)."""

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
