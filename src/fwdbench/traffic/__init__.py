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

GENERATORS: dict[str, type[Generator]] = {
    FwdgenGenerator.name: FwdgenGenerator,
}

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_RUNTIME",
    "GENERATORS",
    "Fwdgen",
    "FwdgenGenerator",
    "Generator",
    "TesterHost",
    "TrialRequest",
    "check",
    "find_binary",
    "parse_result",
    "run_trial",
]
