"""Testbeds behind one interface (base.py); ``TESTBEDS`` maps ``[testbed] type``
to its class, one module per kind."""
from __future__ import annotations

import importlib

from .base import Testbed, check_duts

#: type -> "module:Class" (imported when used: the netns testbed needs root tools)
TESTBEDS: dict[str, str] = {
    "netns": "netns:NetnsTestbed",
    "sim": "sim:SimTestbed",
    "ssh": "ssh:SshTestbed",
}


def testbed_class(kind: str) -> type[Testbed]:
    module, _, cls = TESTBEDS[kind].partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def open_testbed(campaign) -> Testbed:
    """The campaign's testbed, not yet entered (use it as a context manager)."""
    return testbed_class(campaign.file.testbed.type)(campaign)


__all__ = ["TESTBEDS", "Testbed", "check_duts", "open_testbed", "testbed_class"]
