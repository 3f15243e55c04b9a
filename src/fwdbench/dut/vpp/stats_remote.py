"""VPP's statistics on a DUT host reached over SSH: ``vpp_get_stats`` run there.

VPP's statistics segment is shared memory whose file descriptor VPP hands a
client over its stats socket (SCM_RIGHTS), so vpp_papi's reader maps it; no
descriptor crosses an SSH connection. On a remote DUT host the driver runs
VPP's own ``vpp_get_stats socket-name <stats.sock> dump <patterns>`` there
instead (one command per read, over the run's connection) and reads its
lines back into the same structure the segment gives (``DumpView``), so
stats.read_counters() yields the same counters on both testbeds:

    5.00 /sys/heartbeat                          scalar
    [3 @ 1]: 120 packets /if/drops               simple counter, index 3, thread 1
    [3 @ 1]: 120 packets, 7680 bytes /if/rx      combined counter
    [3]: rd0 /if/names                           name vector, index 3

Each read is a few hundred kB of text for a VPP with all its plugins' error
counters; reading it costs the DUT host a few ms of one CPU (the DUT's CPUs
are the ones listed in the campaign; the reader runs where the kernel puts it).
"""
from __future__ import annotations

import re
from collections import defaultdict

from ...errors import DutError, FwdbenchError
from .stats import read_counters

#: what counters() reads (the paths stats.read_counters needs)
PATTERNS = ("^/if/", "^/err/")

_SCALAR = re.compile(r"^(-?[0-9.]+(?:e[-+]?\d+)?) (/\S.*)$")
_COMBINED = re.compile(r"^\[(\d+) @ (\d+)\]: (\d+) packets, (\d+) bytes (/.*)$")
_SIMPLE = re.compile(r"^\[(\d+) @ (\d+)\]: (\d+) packets (/.*)$")
_NAME = re.compile(r"^\[(\d+)\]: (\S*) (/\S*)$")


class DumpView:
    """vpp_get_stats output as vpp_papi's VPPStats presents the segment."""

    def __init__(self, text: str):
        scal: dict[str, float] = {}
        simple: dict[str, dict[int, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
        comb: dict[str, dict[int, dict[int, tuple[int, int]]]] = defaultdict(
            lambda: defaultdict(dict))
        names: dict[str, dict[int, str]] = defaultdict(dict)
        for line in text.splitlines():
            if m := _COMBINED.match(line):
                comb[m.group(5)][int(m.group(2))][int(m.group(1))] = (int(m.group(3)),
                                                                      int(m.group(4)))
            elif m := _SIMPLE.match(line):
                simple[m.group(4)][int(m.group(2))][int(m.group(1))] = int(m.group(3))
            elif m := _NAME.match(line):
                names[m.group(3)][int(m.group(1))] = m.group(2)
            elif m := _SCALAR.match(line):
                scal[m.group(2)] = float(m.group(1))
        self.data: dict[str, object] = {}
        for path, by_thread in simple.items():
            self.data[path] = _vector(by_thread, 0)
        for path, by_thread in comb.items():
            self.data[path] = _vector(by_thread, (0, 0))
        for path, by_index in names.items():
            n = max(by_index) + 1 if by_index else 0
            self.data[path] = [by_index.get(i) for i in range(n)]
        self.data.update(scal)

    def __getitem__(self, path: str):
        return self.data[path]

    def ls(self, patterns: list[str]) -> list[str]:
        return [p for p in self.data if any(re.search(pat, p) for pat in patterns)]


def _vector(by_thread: dict[int, dict[int, object]], zero: object) -> list[list[object]]:
    """{thread: {index: value}} -> [thread][index], gaps filled with ``zero``."""
    width = max((max(ix) + 1 for ix in by_thread.values() if ix), default=0)
    threads = max(by_thread) + 1 if by_thread else 0
    return [[by_thread.get(t, {}).get(i, zero) for i in range(width)] for t in range(threads)]


class RemoteVppStats:
    """The counters of a VPP on a remote DUT host (the module docstring); the
    interface of stats.VppStats."""

    def __init__(self, exec, tool: str, socket: str):
        self.exec = exec
        self.tool = tool                # vpp_get_stats on the DUT host
        self.socket = socket            # VPP's stats socket there

    def _dump(self, patterns: tuple[str, ...]) -> DumpView:
        try:
            cp = self.exec.run([self.tool, "socket-name", self.socket, "dump", *patterns],
                               timeout=30, check=False)
        except FwdbenchError as e:
            raise DutError(f"vpp: reading its statistics with {self.tool}: {e}") from None
        if cp.returncode != 0:
            raise DutError(f"vpp: {self.tool} socket-name {self.socket} failed (exit "
                           f"{cp.returncode}): {cp.stderr.strip()[-300:] or cp.stdout[-300:]}")
        return DumpView(cp.stdout)

    def connect(self) -> None:
        try:
            self._dump(("^/sys/heartbeat$",))["/sys/heartbeat"]
        except KeyError:
            raise DutError(f"vpp: {self.tool} on {self.exec.conn.name} printed no heartbeat "
                           f"from {self.socket}") from None

    def close(self) -> None:
        pass

    def counters(self) -> dict[str, int]:
        view = self._dump(PATTERNS)
        try:
            return read_counters(view)
        except KeyError as e:
            raise DutError(f"vpp: {self.tool} printed no {e.args[0]}") from None
