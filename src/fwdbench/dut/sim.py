"""`dut = "sim"`: a simulated DUT (testbed.type = "sim"): no packets, a load-loss model.

It exists to test searches, statistics and reports without root; it never
stands in for a measurement that could be real.
"""
from __future__ import annotations

from typing import Any


from ..validation import parse_params
from . import register
from .base import DutDriver


@register
class SimDriver(DutDriver):
    name = "sim"
    modes = ("ideal", "realistic", "trashing", "noisy")

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        from ..sim import SimParams
        return parse_params(SimParams, params, where).model_dump(mode="json")

    def setup(self, host) -> None:
        pass

    def counters(self) -> dict[str, int]:
        return {}

    def teardown(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"dut": "sim", **self.params}
