"""VPP's statistics segment -> cumulative integer counters (the runner takes deltas).

Read through vpp_papi's ``VPPStats`` (the segment is mapped read-only; VPP
does not stop for it), as CSIT records ``show interface`` per trial:

- ``<ifname>.{rx,tx}_{packets,bytes}``, ``<ifname>.{drops,rx_miss,rx_error,
  tx_error,rx_no_buf}`` from ``/if/*`` (summed over threads);
- ``vpp_err.<node>.<reason>`` from ``/err/<node>/<reason>``, every non-zero one.

VPP's data path writes these into the segment itself, so they are current
without VPP's stats collector, which the driver parks (its passes stall the
main thread: runtime.py, which also gives the per-node counters).
"""
from __future__ import annotations

from typing import Any

from ...errors import DutError

IF_COMBINED = {"/if/rx": "rx", "/if/tx": "tx"}
IF_SIMPLE = {"/if/drops": "drops", "/if/rx-miss": "rx_miss", "/if/rx-error": "rx_error",
             "/if/tx-error": "tx_error", "/if/rx-no-buf": "rx_no_buf"}


def total(x: Any) -> int:
    """Sum a counter over threads (nested lists/tuples of numbers)."""
    if isinstance(x, (int, float)):
        return int(x)
    if isinstance(x, (list, tuple)):
        return sum(total(v) for v in x)
    return 0


class VppStats:
    def __init__(self, socket: str):
        try:
            from vpp_papi.vpp_stats import VPPStats
        except ImportError:
            raise DutError("vpp: the Python package vpp-papi is missing") from None
        self.socket = socket
        self.stats = VPPStats(socketname=socket, timeout=5)

    def connect(self) -> None:
        try:
            self.stats.connect()
        except (OSError, Exception) as e:
            raise DutError(f"vpp: statistics segment {self.socket}: {e}") from None

    def close(self) -> None:
        try:
            self.stats.disconnect()
        except Exception:
            pass

    def counters(self) -> dict[str, int]:
        try:
            return self._read()
        except DutError:
            raise
        except Exception as e:      # vpp_papi raises bare Exceptions on a bad segment
            raise DutError(f"vpp: reading the statistics segment {self.socket}: "
                           f"{type(e).__name__}: {e}") from None

    def _read(self) -> dict[str, int]:
        return read_counters(self.stats)


def read_counters(s) -> dict[str, int]:
    """The counters from ``s``, a statistics view: ``s[path]`` gives a name vector
    (list of names), a simple counter vector ([thread][index] -> count) or a
    combined one ([thread][index] -> (packets, bytes)); ``s.ls(patterns)`` the
    paths matching regular expressions (vpp_papi's VPPStats, or the view of
    vpp_get_stats's output in stats_remote.py)."""
    out: dict[str, int] = {}
    names = list(s["/if/names"])
    for path, field in IF_COMBINED.items():
        data = s[path]                      # [thread][sw_if_index] -> (packets, bytes)
        for i, name in enumerate(names):
            if name and name != "local0":
                out[f"{name}.{field}_packets"] = sum(int(t[i][0]) for t in data if i < len(t))
                out[f"{name}.{field}_bytes"] = sum(int(t[i][1]) for t in data if i < len(t))
    for path, field in IF_SIMPLE.items():
        try:
            data = s[path]                  # [thread][sw_if_index]
        except KeyError:
            continue
        for i, name in enumerate(names):
            if name and name != "local0":
                out[f"{name}.{field}"] = sum(int(t[i]) for t in data if i < len(t))
    for path in s.ls(["^/err/"]):
        try:
            n = total(list(s[path]))
        except (KeyError, TypeError):
            continue
        if n:
            node, _, reason = path[len("/err/"):].partition("/")
            out[f"vpp_err.{node}.{reason}"] = n
    return out
