"""VPP's per-node runtime (``show runtime``) as cumulative counters.

VPP's statistics segment holds per-node counters only when its collector
process copies them there (``statseg { per-node-counters on }``), every
``update-interval``. Each pass of that collector also walks VPP's heaps for
their usage gauges, and it runs on VPP's main thread: 2.2 M clocks (~0.85 ms)
with 1 route, 38 M with 2^20 (measured with ``show runtime``). On the lab's
one-CPU DUT the main thread is also the data path, and its 1024-frame memif
ring overflowed at every pass: VPP lost 0.3-0.7 % of 2-6 Mpps and 0 with the
collector parked (measured 2026-11-26, 3 s trials). So the driver parks the
collector (startup.py) and reads the nodes' counters the way CSIT's teardown
does, ``show runtime`` through the API, only at trial boundaries, followed by
``clear runtime``: each read covers exactly the time since the last one, and
the sums here are the cumulative counters the runner takes deltas of.

``show runtime`` prints calls, vectors and suspends as integers, and per node
one figure of clocks (per vector, else per call, else per suspend) to three
digits: ``clocks`` here is that figure times its count, three digits per
interval.
"""
from __future__ import annotations

import re
from typing import Any

FIELDS = ("calls", "vectors", "suspends", "clocks")

#: a node's line: name, state (may hold spaces and quotes), calls, vectors,
#: suspends, clocks per vector (call, suspend), vectors per call
_LINE = re.compile(r'^(?P<name>[^\s"]+)\s*(?P<state>.*?)\s+(?P<calls>\d+)\s+(?P<vectors>\d+)\s+'
                   r'(?P<suspends>\d+)\s+(?P<per>[0-9.]+(?:e[-+]?\d+)?)\s+[0-9.]+\s*$')


def parse(text: str) -> dict[str, dict[str, int]]:
    """Per node, summed over VPP's threads: calls, vectors, suspends, clocks."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        calls, vectors, suspends = int(m["calls"]), int(m["vectors"]), int(m["suspends"])
        per = float(m["per"])
        clocks = round(per * (vectors or calls or suspends))
        acc = out.setdefault(m["name"], dict.fromkeys(FIELDS, 0))
        for f, v in zip(FIELDS, (calls, vectors, suspends, clocks)):
            acc[f] += v
    return out


class NodeRuntime:
    """Cumulative ``vpp_node.<node>.{calls,vectors,clocks,suspends}`` of one VPP,
    for every node that was ever called."""

    def __init__(self) -> None:
        self.totals: dict[str, dict[str, int]] = {}

    def read(self, api: Any) -> dict[str, int]:
        """Add what ran since the last read (``api``: a VppApi) and return the sums."""
        text = api.cli("show runtime")
        api.cli("clear runtime")
        for node, f in parse(text).items():
            if f["calls"] or node in self.totals:
                acc = self.totals.setdefault(node, dict.fromkeys(FIELDS, 0))
                for k in FIELDS:
                    acc[k] += f[k]
        return {f"vpp_node.{node}.{k}": v for node, f in self.totals.items()
                for k, v in f.items()}
