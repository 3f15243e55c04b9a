"""Shared fixtures. Tests marked ``root`` skip cleanly without root or iproute2."""
from __future__ import annotations

import os
import shutil
import signal

import pytest

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# Some tests press Ctrl-C on a child (SIGINT). A shell that starts this run
# in the background (`cmd &` in a script) ignores SIGINT, children inherit
# that, and fwdbench rightly keeps an ignored SIGINT ignored: give the
# children the default, as a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    reason = None
    if not IS_ROOT:
        reason = "needs root (network namespaces); CI runs as root"
    elif not shutil.which("ip"):
        reason = "needs iproute2 (`ip`)"
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if "root" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def lab():
    """A fresh netns lab (fwdbench.lab), torn down after the test."""
    from fwdbench.lab import Lab, LabConfig
    cpus = sorted(os.sched_getaffinity(0))
    cfg = LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1])
    with Lab.up(cfg) as lb:
        yield lb


class Wire:
    """Send and capture frames with scapy on sockets that live in one netns.

    The scapy L2 sockets are opened by a thread that setns()es into the
    namespace, so ``sendp``/``sniff`` act on the lab's interfaces there;
    outgoing frames are not captured.
    """

    def __init__(self, ns: str):
        self.ns = ns
        self._socks = {}

    def sock(self, ifname: str):
        from scapy.arch.linux import L2Socket
        from fwdbench.lab.netlink import in_netns
        if ifname not in self._socks:
            with in_netns(self.ns):
                self._socks[ifname] = L2Socket(iface=ifname)
        return self._socks[ifname]

    def listen(self, *ifnames: str) -> None:
        """Open capture sockets before sending (frames queue until sniffed)."""
        for i in ifnames:
            self.sock(i)

    def send(self, ifname: str, frames) -> None:
        from scapy.all import sendp
        sendp(frames, socket=self.sock(ifname), verbose=False)

    def sniff(self, ifname: str, count: int = 0, timeout: float = 1.0, match=None) -> list:
        """Frames received on ``ifname`` that satisfy ``match`` (stops after ``count``)."""
        from scapy.all import sniff
        return list(sniff(opened_socket=self.sock(ifname), count=count, timeout=timeout,
                          lfilter=match))

    def close(self) -> None:
        for s in self._socks.values():
            s.close()
        self._socks.clear()


@pytest.fixture
def tg_wire(lab):
    """A Wire on the lab's generator namespace (tg0, tg1)."""
    w = Wire(lab.tg_ns)
    yield w
    w.close()
