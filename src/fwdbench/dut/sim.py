"""`dut = "sim"`: a simulated DUT (testbed.type = "sim"): no packets, a load-loss model.

It exists to test searches, statistics and reports without root; it never
stands in for a measurement that could be real.
"""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..validation import campaign_error
from . import register
from .base import DutDriver


@register
class SimDriver(DutDriver):
    name = "sim"
    modes = ("ideal", "realistic", "trashing", "noisy")

    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        from ..sim import SimParams
        try:
            return SimParams.model_validate(params).model_dump(mode="json")
        except ValidationError as e:
            raise campaign_error(e, SimParams, where=where) from None

    def setup(self, lab) -> None:
        pass

    def counters(self) -> dict[str, int]:
        return {}

    def teardown(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"dut": "sim", **self.params}
