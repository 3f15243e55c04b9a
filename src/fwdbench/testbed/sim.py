"""``[testbed] type = "sim"``: simulated DUTs, no packets (searches, statistics, reports).

FWDBENCH_SIM_DELAY=<s> makes each trial take that long (tests that interrupt
a run in the middle use it). It never stands in for a measurement that
could be real: the report says every number of it is simulated.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..trial import TrialResult
from .base import Testbed


class SimTestbed(Testbed):
    kind = "sim"

    def __init__(self, campaign):
        super().__init__(campaign)
        self.delay = float(os.environ.get("FWDBENCH_SIM_DELAY", "0") or 0)

    def describe(self) -> dict[str, Any]:
        return {"testbed": "sim", "note": "simulated DUTs: no packets were forwarded"}

    @contextmanager
    def scenario(self, sc) -> Iterator[tuple[Any, dict]]:
        from ..sim import SimDevice, SimParams

        params = SimParams.model_validate(sc.dut.params)
        device = SimDevice.from_params(params)

        def execute(duration_s: float, load_pps: float, key: int,
                    latency: bool = False) -> TrialResult:
            if self.delay:
                time.sleep(self.delay)
            # The sim draws trial i from rng([seed, i]); a stable i makes a resumed
            # run draw exactly what the uninterrupted run drew.
            device.trials_run = key
            return device.measure(duration_s, load_pps)

        yield execute, {"dut": "sim", **params.model_dump(mode="json")}
