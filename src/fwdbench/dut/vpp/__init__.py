"""FD.io VPP as a DUT (``dut.type = "vpp"``): driver.py, with the VPP install
(install.py), its startup.conf (startup.py), its binary API (api.py), its
statistics segment (stats.py) and the modes (modes.py)."""
from .driver import VppDut, VppParams
from .install import VppInstall, find_vpp

__all__ = ["VppDut", "VppParams", "VppInstall", "find_vpp"]
