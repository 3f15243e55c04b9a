#!/usr/bin/env python3
"""The core issue's targets, measured through fwdbench's own testbed code (root).

- trial overhead: wall time of a trial minus its traffic (warm-up + duration +
  drain), through the Linux router; target < 300 ms.
- zero false loss: N trials at a low share of the router's capacity
  (default 10 % of 0.64 Mpps, 30 s each); target: loss exactly 0 in N of N.
  `--dut-rx-queue 0` measures the lab without its DUT ingress queue (veth's
  256-frame ring): 0 of 10 there on 2026-11-22, 10 of 10 with 4096.

Usage: sudo .venv/bin/python bench/core_targets.py [--trials 10] [--seconds 30]
       [--load-pps 64000] [--overhead-trials 10] [--dut linux|vfwd|vpp|testpmd]
       [--link veth|memif] [--memif-ring 8192]

`--dut`/`--link` measure the other data planes the same way (the memif issue's
"zero false loss over memif at 10 % of each DUT's PDR": give `--load-pps` as
10 % of that DUT's PDR).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fwdbench.campaign import build_campaign  # noqa: E402
from fwdbench.testbed.netns import NetnsTestbed  # noqa: E402


DUTS = {"linux": {"type": "linux", "params": {"mode": "router"}},
        "vfwd": {"type": "vfwd", "params": {"mode": "router"}},
        "vpp": {"type": "vpp", "params": {"mode": "router"}},
        "testpmd": {"type": "testpmd", "params": {"mode": "mac"}}}


def campaign(load_pps: float, napi_rt: int, rxq: int, dut: str = "linux", link: str = "veth",
             memif_ring: int | None = None):
    return build_campaign({
        "campaign": {"name": "core-targets"},
        "testbed": {"type": "netns", "max_load": "2Mpps", "napi_rt_priority": napi_rt,
                    "dut_rx_queue": rxq, "link": link,
                    **({"memif_ring_size": memif_ring} if memif_ring else {})},
        "trial": {"duration": "1s", "warmup": "0.2s", "drain": "0.2s"},
        "dut": [{"name": f"{dut}-router", **DUTS[dut]}],
        "profile": [{"name": "udp4-64", "frame_size": 64, "flows": 64,
                     "vary": ["src_ip", "src_port"]}],
        "search": {"type": "sweep", "loads": [load_pps]},
    }, "bench/core_targets.py")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10, help="false-loss trials")
    ap.add_argument("--seconds", type=float, default=30.0, help="false-loss trial duration [s]")
    ap.add_argument("--load-pps", type=float, default=64000.0,
                    help="false-loss load [pps] (10 %% of the 0.64 Mpps measured here)")
    ap.add_argument("--overhead-trials", type=int, default=10)
    ap.add_argument("--napi-rt", type=int, default=50, help="testbed.napi_rt_priority")
    ap.add_argument("--dut-rx-queue", type=int, default=4096,
                    help="testbed.dut_rx_queue (0: veth's own 256-frame ring, threaded NAPI)")
    ap.add_argument("--dut", choices=sorted(DUTS), default="linux")
    ap.add_argument("--link", choices=("veth", "memif"), default="veth")
    ap.add_argument("--memif-ring", type=int, default=None,
                    help="testbed.memif_ring_size (default: each side's own)")
    args = ap.parse_args()

    c = campaign(args.load_pps, args.napi_rt, args.dut_rx_queue, args.dut, args.link,
                 args.memif_ring)
    sc = c.scenarios[0]
    with NetnsTestbed(c) as tb, tb.scenario(sc) as (execute, _describe):
        print(f"lab {tb.lab.run_id}: built in {tb.lab.timings.get('total', 0):.3f} s; "
              f"generator CPU {tb.lab.gen_cpu}, DUT CPU {tb.lab.dut_cpu}, "
              f"NAPI FIFO priority {args.napi_rt}, DUT {args.dut} on {sc.dut.link}, "
              f"DUT ingress {tb.lab.dut_ingress if sc.dut.link == 'veth' else 'memif'}"
              + (f" ({args.memif_ring}-slot rings)" if args.memif_ring else "")
              + (f" ({args.dut_rx_queue} frames)" if tb.lab.dut_ingress == "cpumap" else ""))
        over = []
        for i in range(args.overhead_trials):
            dur = 0.5
            t0 = time.perf_counter()
            r = execute(dur, 10000.0, i, False)
            wall = time.perf_counter() - t0
            traffic = dur + r.warmup_s + 0.2
            over.append(wall - traffic)
        print(f"trial overhead (wall - warm-up - duration - drain), {len(over)} trials: "
              f"median {statistics.median(over) * 1e3:.0f} ms, max {max(over) * 1e3:.0f} ms "
              f"(target < 300 ms)")
        zero = 0
        for i in range(args.trials):
            r = execute(args.seconds, args.load_pps, 1000 + i, False)
            s = r.streams[0]
            lat = s.latency
            zero += r.lost == 0
            print(f"  trial {i + 1}/{args.trials}: {args.load_pps:.0f} pps x {args.seconds:g} s: "
                  f"tx {r.tx_packets} rx {r.rx_packets} lost {r.lost} reordered {s.reordered} "
                  f"dup {s.duplicated}"
                  + (f" p50 {lat.p50_ns / 1e3:.1f} us p99 {lat.p99_ns / 1e3:.1f} us" if lat else ""),
                  flush=True)
            for w in r.warnings:        # e.g. vfwd's stalls, fwdgen's full-ring drops
                print(f"    warning: {w[:200]}", flush=True)
        print(f"zero false loss: {zero} of {args.trials} trials lost exactly 0 packets "
              f"(target: {args.trials} of {args.trials})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
