"""Traffic generators behind one interface (base.py); ``GENERATORS`` maps the
campaign's ``[generator] type`` to its class."""
from fwdbench.traffic.base import Generator, TesterHost, TrialRequest
from fwdbench.traffic.fwdgen import (
    EXIT_BAD_INPUT,
    EXIT_RUNTIME,
    Fwdgen,
    FwdgenGenerator,
    check,
    find_binary,
    parse_result,
    run_trial,
)
from fwdbench.traffic.trex import TrexGenerator

GENERATORS: dict[str, type[Generator]] = {
    FwdgenGenerator.name: FwdgenGenerator,
    TrexGenerator.name: TrexGenerator,
}

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_RUNTIME",
    "GENERATORS",
    "Fwdgen",
    "FwdgenGenerator",
    "Generator",
    "TesterHost",
    "TrexGenerator",
    "TrialRequest",
    "check",
    "find_binary",
    "parse_result",
    "run_trial",
]
