"""The testbed interface: where a campaign's trials run.

A testbed is a context manager: entering it builds (or connects to) the
tester and the DUT host and probes what every scenario needs; leaving it
removes what the run made. ``scenario(sc)`` configures the scenario's DUT
on the DUT host and yields the shared trial routine (trialrun.py) bound to
it, with the scenario's record for the report. One module per kind
(netns.py, sim.py, ssh.py), one line in the registry (testbed/__init__.py).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..campaign import Campaign, Scenario
    from ..dut.host import DutHost
    from ..traffic.base import TesterHost
    from ..trialrun import Execute


class Testbed(ABC):
    """One campaign run's testbed (see the module docstring)."""

    kind: ClassVar[str]

    def __init__(self, campaign: "Campaign"):
        self.campaign = campaign
        #: optional DUTs that cannot run here: name -> why (their scenarios are skipped)
        self.unavailable: dict[str, str] = {}
        #: what entering the testbed found worth a line of progress (e.g. leftovers removed)
        self.notes: list[str] = []

    def __enter__(self) -> "Testbed":
        return self

    def __exit__(self, *exc) -> None:
        pass

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Where the traffic ran (hosts, CPU placement, tuning, generator) for the report."""

    @classmethod
    def probe(cls, campaign: "Campaign") -> list[str]:
        """For ``fwdbench plan``: reach the testbed's hosts without changing anything and
        say what was found (a testbed on this host says nothing)."""
        return []

    def hosts(self) -> dict[str, "TesterHost | DutHost | None"]:
        """The tester and the DUT host (None where the testbed has none)."""
        return {"tester": None, "dut": None}

    @abstractmethod
    def scenario(self, sc: "Scenario") -> AbstractContextManager[tuple["Execute", dict]]:
        """Configure ``sc``'s DUT; yield (execute, the scenario's record); tear it down."""


def check_duts(campaign: "Campaign", host: "DutHost | None" = None) -> dict[str, str]:
    """Probe every DUT's tools on the DUT host before anything is measured: no
    discovering mid-run that something is missing. A DUT that fails raises,
    unless it is ``optional``: then it is returned, name -> why."""
    from ..dut import load_drivers
    from ..errors import DutError
    drivers = load_drivers()
    seen: set[str] = set()
    unavailable: dict[str, str] = {}
    for sc in campaign.scenarios:
        if sc.dut.name not in seen:
            seen.add(sc.dut.name)
            try:
                drivers[sc.dut.type](sc.dut.params).check(host)
            except DutError as e:
                if not sc.dut.optional:
                    raise
                unavailable[sc.dut.name] = str(e)
    return unavailable


