"""Helpers shared by the DUT driver tests for xdp and testpmd (no tests here).

The tests run in a real ``fwdbench.lab`` lab (one per test module);
``wire()`` sends frames with scapy inside the lab's tg namespace (in a child
process, so its sockets live there) and returns what came back on the tg
ports.
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager

import pytest

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def need_root() -> None:
    if not IS_ROOT:
        pytest.skip("needs root (network namespaces)")


@contextmanager
def lab_up():
    """A lab with the generator and the DUT on different CPUs (when there are two)."""
    from fwdbench.lab import Lab, LabConfig
    cpus = sorted(os.sched_getaffinity(0))
    with Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1])) as lab:
        settle(lab)
        yield lab


def settle(lab, quiet: float = 1.0, limit: float = 6.0) -> None:
    """Wait until no frame reached the DUT ports for ``quiet`` seconds (start-up MLD
    reports of the new links), so counter deltas see only the test's frames."""
    def rx() -> int:
        return sum(c["rx_packets"] for c in lab.interface_counters("dut").values())
    end = time.monotonic() + limit
    last, since = rx(), time.monotonic()
    while time.monotonic() < end and time.monotonic() - since < quiet:
        time.sleep(0.1)
        now = rx()
        if now != last:
            last, since = now, time.monotonic()


def xdp_prog_ids(lab) -> dict[str, int]:
    """ifname -> id of the XDP program attached in the DUT namespace."""
    r = lab.dut_exec.run(["ip", "-j", "-d", "link", "show"])
    out = {}
    for link in json.loads(r.stdout):
        xdp = link.get("xdp")
        if xdp and xdp.get("prog"):
            out[link["ifname"]] = int(xdp["prog"]["id"])
        elif xdp and xdp.get("attached"):
            out[link["ifname"]] = int(xdp["attached"][0]["prog"]["id"])
    return out


def wire(lab, tx: str, frames: list[bytes], rx: list[str], dport: int,
         wait: float = 0.6, inter: float = 0.0001) -> dict[str, list[bytes]]:
    """Send ``frames`` on tg port ``tx``; the frames seen on the ``rx`` tg ports that
    belong to the test (UDP to ``dport``, or ICMP/ICMPv6 errors).

    Frames are paced ``inter`` [s] apart: a burst must not overflow a veth's
    256-frame ring while a NAPI thread waits for its CPU on a busy host.
    """
    job = {"tx": tx, "rx": rx, "frames": [f.hex() for f in frames], "dport": dport,
           "wait": wait, "inter": inter}
    r = lab.tg_exec.run([sys.executable, "-c", _WIRE_SCRIPT], input=json.dumps(job),
                        timeout=60)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return {k: [bytes.fromhex(h) for h in v] for k, v in res.items()}


_WIRE_SCRIPT = r"""
import json, sys, threading, time
from scapy.all import AsyncSniffer, Ether, UDP, ICMP, conf, sendp
from scapy.layers.inet6 import ICMPv6TimeExceeded, ICMPv6DestUnreach
conf.verb = 0
job = json.load(sys.stdin)
dport = job["dport"]

def ours(p):
    if UDP in p and p[UDP].dport == dport:
        return True
    return ICMP in p or ICMPv6TimeExceeded in p or ICMPv6DestUnreach in p

sniffers, ready = {}, []
for ifname in job["rx"]:
    ev = threading.Event(); ready.append(ev)
    s = AsyncSniffer(iface=ifname, store=True, lfilter=ours, started_callback=ev.set)
    s.start(); sniffers[ifname] = s
for ev in ready:
    ev.wait(5)
time.sleep(0.1)
sendp([Ether(bytes.fromhex(h)) for h in job["frames"]], iface=job["tx"], inter=job["inter"])
time.sleep(job["wait"])
out = {k: [bytes(p).hex() for p in s.stop()] for k, s in sniffers.items()}
print(json.dumps(out))
"""


def wait_until(pred, timeout: float = 3.0, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())
