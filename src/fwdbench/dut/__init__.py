"""DUT drivers; ``DRIVERS`` maps the campaign's ``dut`` name to its class."""
from __future__ import annotations

from .base import DutDriver

DRIVERS: dict[str, type[DutDriver]] = {}


def register(cls: type[DutDriver]) -> type[DutDriver]:
    DRIVERS[cls.name] = cls
    return cls


def load_drivers() -> dict[str, type[DutDriver]]:
    """Import the driver modules (they register themselves)."""
    import importlib
    for mod in ("sim", "linux", "xdp", "testpmd", "vfwd", "vpp"):
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise
    return DRIVERS
