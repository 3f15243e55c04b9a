#!/usr/bin/env python3
"""Latency through the Linux router at a low rate: fwdgen against the kernel's
own software timestamps on the same path, side by side in one run (root).

- fwdgen: fwdbench's latency trial without background load (the 0 % point of
  a latency search) at --rate-pps: TX stamped in fwdgen's XDP program, RX in
  its XDP program on tg1. Once as campaigns run it (the tg ports receive
  inline on the DUT CPU, docs/lab.md) and once with the tg ports' NAPI
  threads on the generator CPU (the lab as built).
- kernel timestamps (the peer, issue 3's "kernel RX-timestamp figure"): one
  frame at a time from an AF_PACKET socket on tg0, stamped by the kernel as
  veth transmits it (SO_TIMESTAMPING, TX software) and as tg1 receives it
  (RX software), tg ports inline as for fwdgen. Sequential and paced to at
  most --rate-pps; the rate it reached is printed.

Usage: sudo .venv/bin/python bench/latency.py [--rate-pps 10000] [--seconds 2] [--trials 3]
Target (issue 3): fwdgen's p50 within 2x of the kernel-timestamp p50.
"""
from __future__ import annotations

import argparse
import select
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fwdbench.campaign import build_campaign  # noqa: E402
from fwdbench.testbed.netns import NetnsTestbed  # noqa: E402

SO_TIMESTAMPING = 37
SOF_TX_SOFTWARE, SOF_RX_SOFTWARE, SOF_SOFTWARE, SOF_OPT_TSONLY = 1 << 1, 1 << 3, 1 << 4, 1 << 11
ETH_P_IP = 0x0800
MAGIC = b"fwdbench-latency"


def campaign(rate: float):
    return build_campaign({
        "campaign": {"name": "latency-bench"},
        "testbed": {"type": "netns", "max_load": "2Mpps"},
        "trial": {"duration": "1s", "warmup": "0.2s", "drain": "0.2s", "latency_rate": rate},
        "dut": [{"name": "linux-router", "type": "linux", "params": {"mode": "router"}}],
        "profile": [{"name": "udp4-64", "frame_size": 64, "flows": 1}],
        "search": {"type": "sweep", "loads": [rate]},
    }, "bench/latency.py")


def frames(lab, count: int) -> list[bytes]:
    """Frames 0..count-1, built before the measured loop (scapy is slow)."""
    from scapy.all import IP, UDP, Ether, Raw
    p0, p1 = lab.ports[0], lab.ports[1]
    src = p0.flows4.split("/")[0].rsplit(".", 1)[0] + ".1"
    dst = p1.flows4.split("/")[0].rsplit(".", 1)[0] + ".1"
    head = Ether(src=p0.tg.mac, dst=p0.dut.mac) / IP(src=src, dst=dst, ttl=64) / UDP(
        sport=1024, dport=1024)
    return [bytes(head / Raw(MAGIC + struct.pack("!I", seq) + b"\0" * 4)) for seq in range(count)]


def stamp(ancdata) -> float | None:
    """The software timestamp (first of SCM_TIMESTAMPING's three) [s]."""
    for level, typ, data in ancdata:
        if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPING and len(data) >= 16:
            sec, nsec = struct.unpack_from("qq", data, 0)
            if sec or nsec:
                return sec + nsec * 1e-9
    return None


def kernel_stamps(lab, count: int, rate: float) -> tuple[list[float], float]:
    """One-way latencies [us] of ``count`` frames sent one at a time, at most
    ``rate`` per second, and the rate they went at [pps]."""
    tx = lab.tg_exec.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    rx = lab.tg_exec.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    try:
        tx.bind((lab.ports[0].tg.ifname, 0))
        rx.bind((lab.ports[1].tg.ifname, ETH_P_IP))       # bind() takes host order
        tx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING,
                      SOF_TX_SOFTWARE | SOF_SOFTWARE | SOF_OPT_TSONLY)
        rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, SOF_RX_SOFTWARE | SOF_SOFTWARE)
        poll = select.poll()
        poll.register(rx, select.POLLIN)
        poll.register(tx, select.POLLERR)
        out = []
        todo = frames(lab, count)
        t0 = time.perf_counter()
        for seq, f in enumerate(todo):
            while time.perf_counter() < t0 + seq / rate:
                pass                              # spin: a sleep would add wake-ups
            tx.send(f)
            t_tx = t_rx = None
            deadline = time.perf_counter() + 0.05
            while (t_tx is None or t_rx is None) and time.perf_counter() < deadline:
                ev = dict(poll.poll(10))          # the TX stamp comes as POLLERR
                if ev.get(tx.fileno(), 0) & select.POLLERR and t_tx is None:
                    _d, anc, _f, _a = tx.recvmsg(256, 1024, socket.MSG_ERRQUEUE)
                    t_tx = stamp(anc)
                if ev.get(rx.fileno(), 0) & select.POLLIN:
                    data, anc, _f, _a = rx.recvmsg(2048, 1024)
                    i = data.find(MAGIC)
                    if i >= 0 and struct.unpack_from("!I", data, i + len(MAGIC))[0] == seq:
                        t_rx = stamp(anc)
            if t_tx is not None and t_rx is not None:
                out.append((t_rx - t_tx) * 1e6)
        return out, count / (time.perf_counter() - t0)
    finally:
        tx.close()
        rx.close()


def pct(v: list[float], q: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate-pps", type=float, default=10000.0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--frames", type=int, default=3000, help="kernel-timestamp frames per trial")
    args = ap.parse_args()
    c = campaign(args.rate_pps)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    rate_k: list[float] = []
    with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _d):
        lab = tb.lab
        as_built = lab.set_tg_rx
        for i in range(args.trials):        # rounds: the host's drift hits every row alike
            r = execute(args.seconds, 0, 2 * i, True)                    # tg inline
            lat = r.streams[0].latency
            rows.setdefault("fwdgen, tg inline (campaigns)", []).append(
                (lat.p50_ns / 1e3, lat.p90_ns / 1e3, lat.p99_ns / 1e3))
            lab.set_tg_rx = lambda _mode: None                        # keep NAPI threads
            try:
                as_built("napi")
                r = execute(args.seconds, 0, 2 * i + 1, True)
            finally:
                lab.set_tg_rx = as_built
            lat = r.streams[0].latency
            rows.setdefault("fwdgen, tg NAPI threads", []).append(
                (lat.p50_ns / 1e3, lat.p90_ns / 1e3, lat.p99_ns / 1e3))
            lab.set_tg_rx("inline")
            k, rate = kernel_stamps(lab, args.frames, args.rate_pps)
            rate_k.append(rate)
            rows.setdefault("kernel timestamps, tg inline", []).append(
                (pct(k, 0.5), pct(k, 0.9), pct(k, 0.99)))
            lab.set_tg_rx("napi")
    print(f"Linux router, 64 B, one flow; fwdgen at {args.rate_pps:g} pps x {args.seconds:g} s, "
          f"kernel timestamps at {statistics.median(rate_k):.0f} pps x {args.frames} frames; "
          f"{args.trials} rounds, median of each percentile [us]")
    print(f"  {'':34s} {'p50':>7s} {'p90':>7s} {'p99':>7s}")
    for name, v in rows.items():
        print(f"  {name:34s} " + " ".join(f"{statistics.median(x[j] for x in v):7.1f}"
                                          for j in range(3)))
    f = statistics.median(x[0] for x in rows["fwdgen, tg inline (campaigns)"])
    k = statistics.median(x[0] for x in rows["kernel timestamps, tg inline"])
    print(f"  fwdgen p50 / kernel-timestamp p50 = {f / k:.2f} (target <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
