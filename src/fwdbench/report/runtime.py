"""Where a vector data plane's time goes: vfwd's and VPP's per-node runtime.

vfwd counts, per graph node, calls, packets, TSC clocks and idle calls (as
VPP's ``show runtime``), and the runner stores each trial's deltas in its
``dut_counters`` (``vfwd_<node>_{calls,packets,clocks,idle_calls}``); the
VPP driver stores VPP's own (``vpp_node.<node>.{calls,vectors,clocks,
suspends}``, from ``show runtime``: dut/vpp/runtime.py). From them this module takes two
trials of a scenario, the lowest offered load and the highest one at most
PDR loss, so that the report shows the seeds' point in the lab: vectors grow
with the load, and the cost per packet falls with them. Clocks of vfwd's
``port-output`` and VPP's ``<port>-tx`` include the kernel's transmit (the
``sendto()`` that copy-mode AF_XDP runs per frame), which is why they
dominate on veth.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

INPUT_NODES = ("port-input", "pg-input", "af_xdp-input", "af-packet-input", "memif-input",
               "dpdk-input")
# graph order as far as the names tell: input first, output and drop last
_ORDER = {**{n: 0 for n in INPUT_NODES}, "ethernet-input": 1, "port-output": 8, "drop": 9,
          "error-drop": 9}
_KEY = re.compile(r"vfwd_(.+?)_(idle_calls|calls|packets|clocks)")
_VPP_KEY = re.compile(r"vpp_node\.(.+)\.(calls|vectors|clocks|suspends)")


@dataclass
class RuntimeNode:
    node: str                        # vfwd's node name, e.g. "ip4-rewrite"
    packets: int
    clocks_per_packet: float | None
    vectors_per_call: float | None   # packets per call that had work


@dataclass
class RuntimePoint:
    load_pps: float                  # offered load of the trial [pps]
    loss_ratio: float
    nodes: list[RuntimeNode]
    path_clocks: float | None        # every node after the input node, per received frame
    ns_per_clock: float | None       # from vfwd's TSC frequency


def node_counters(counters: dict[str, Any]) -> dict[str, dict[str, int]]:
    """A trial's ``dut_counters`` -> {node: {calls, packets, clocks, idle_calls}}
    (vfwd's, or VPP's: its vectors are packets; it does not count idle calls)."""
    out: dict[str, dict[str, int]] = {}
    for k, v in counters.items():
        if not isinstance(v, (int, float)) or k.startswith("vfwd_drop"):
            continue
        m = _KEY.fullmatch(k)
        if m:
            out.setdefault(m.group(1).replace("_", "-"), {})[m.group(2)] = int(v)
            continue
        m = _VPP_KEY.fullmatch(k)
        if m and m.group(2) != "suspends":
            field = "packets" if m.group(2) == "vectors" else m.group(2)
            out.setdefault(m.group(1), {})[field] = int(v)
    return out


def _received(nodes: dict[str, dict[str, int]]) -> int:
    return sum(nodes.get(n, {}).get("packets", 0) for n in INPUT_NODES)


def runtime_point(load_pps: float, loss_ratio: float, counters: dict[str, Any],
                  tsc_hz: float | None) -> RuntimePoint | None:
    nodes = node_counters(counters)
    received = _received(nodes)
    if not received:
        return None
    rows = []
    for name, c in nodes.items():
        pk = c.get("packets", 0)
        if not pk:
            continue            # a node of another mode: not on this graph's path
        busy = c.get("calls", 0) - c.get("idle_calls", 0)
        rows.append(RuntimeNode(name, pk, c.get("clocks", 0) / pk,
                                pk / busy if busy > 0 else None))
    rows.sort(key=lambda r: (_ORDER.get(r.node, 5), r.node))
    # nodes that handled the traffic: VPP's process nodes (API, stats) and the
    # few packets of its own (an MLD report) are not on the path
    path = sum(c.get("clocks", 0) for n, c in nodes.items()
               if n not in INPUT_NODES and c.get("packets", 0) >= received / 100) / received
    return RuntimePoint(load_pps, loss_ratio, rows, path,
                        1e9 / tsc_hz if tsc_hz else None)


def scenario_runtime(trials: list[tuple[dict, Any]], describe: dict[str, Any] | None,
                     pdr_loss: float) -> list[RuntimePoint]:
    """The lowest-load search trial and the highest-load one with loss <=
    ``pdr_loss`` (one point if they are the same trial); [] without vfwd's or
    VPP's per-node counters."""
    rows = [(row, r) for row, r in trials
            if row["kind"] == "search" and _received(node_counters(r.dut_counters or {}))]
    if not rows:
        return []
    low = min(rows, key=lambda t: t[0]["intended_load_pps"])
    ok = [t for t in rows if t[0]["loss_ratio"] <= pdr_loss + 1e-15]
    high = max(ok, key=lambda t: t[0]["intended_load_pps"]) if ok else None
    tsc = (describe or {}).get("tsc_hz")
    pts = []
    for row, r in [low] + ([high] if high is not None and high is not low else []):
        p = runtime_point(row["intended_load_pps"], row["loss_ratio"], r.dut_counters,
                          float(tsc) if tsc else None)
        if p is not None:
            pts.append(p)
    return pts
