"""Errors users see: each names what was wrong and how to fix it."""


class FwdbenchError(Exception):
    """Base of every error fwdbench reports to the user without a traceback."""


class CampaignError(FwdbenchError):
    """A campaign file (or a parameter in it) is invalid; names file and field path."""


class LabError(FwdbenchError):
    """The lab (namespaces, veths, tuning) could not be built or torn down."""


class GeneratorError(FwdbenchError):
    """The traffic generator failed at run time (not bad input)."""


class DutError(FwdbenchError):
    """A DUT driver could not configure or read its data plane."""
