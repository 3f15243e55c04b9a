"""Traffic generators: fwdgen (native, ours)."""
from fwdbench.traffic.fwdgen import (
    EXIT_BAD_INPUT,
    EXIT_RUNTIME,
    Fwdgen,
    check,
    find_binary,
    parse_result,
    run_trial,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_RUNTIME",
    "Fwdgen",
    "check",
    "find_binary",
    "parse_result",
    "run_trial",
]
