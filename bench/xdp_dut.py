#!/usr/bin/env python3
"""Forwarding rate of the xdp and testpmd DUTs (and linux for reference) in the lab.

    sudo .venv/bin/python bench/xdp_dut.py [--loads 0.5M,1M,2M,3M] [--duration 2]
                                           [--frame 64] [--duts xdp-xconnect,xdp-router,...]
                                           [--json]

For each DUT: one lab, the driver set up, one fwdgen trial per offered load
(unidirectional tg0 -> tg1, IPv4 UDP, one flow), and the DUT's own counter
deltas. Prints offered / sent / received [pps] and loss per trial.

    sudo .venv/bin/python bench/xdp_dut.py --cost [--routes 2,1048576]

instead times the XDP programs alone (BPF_PROG_TEST_RUN, no veth, no
generator): [ns] per frame for xconnect, and for the router on IPv4 and
IPv6 with each FIB size and both fib_lookup settings.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fwdbench.campaign import Profile, TrialSettings  # noqa: E402
from fwdbench.dut import load_drivers  # noqa: E402
from fwdbench.lab import Lab, LabConfig  # noqa: E402
from fwdbench.traffic import fwdgen  # noqa: E402
from fwdbench.trialspec import build_spec  # noqa: E402

DUTS = {
    "xdp-xconnect": ("xdp", {"mode": "xconnect"}),
    "xdp-router": ("xdp", {"mode": "router"}),
    "testpmd-mac": ("testpmd", {"mode": "mac"}),
    "testpmd-io": ("testpmd", {"mode": "io"}),
    "linux-router": ("linux", {"mode": "router"}),
}
#: counters worth showing per DUT type (deltas over the trial)
SHOW = {"xdp": ("xdp.forwarded.packets", "xdp.passed_packets", "xdp.dropped_packets",
                "dut0.rx_packets", "dut0.rx_dropped", "dut1.tx_packets", "dut1.tx_dropped"),
        "testpmd": ("port0.rx_packets", "port0.rx_missed", "port1.tx_packets", "fwd.tx_dropped"),
        "linux": ("ip4.forwarded",)}


def parse_load(s: str) -> float:
    s = s.strip().lower().removesuffix("pps")
    mult = {"k": 1e3, "m": 1e6}.get(s[-1:], 1.0)
    return float(s[:-1] if s[-1:] in "km" else s) * mult


def program_cost(routes: list[int], as_json: bool) -> int:
    from scapy.all import IP, UDP, Ether, IPv6

    from fwdbench.dut.xdp import XdpDut
    cpus = sorted(os.sched_getaffinity(0))
    rows = []
    with Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1])) as lab:
        p0 = lab.ports[0]
        eth = Ether(src=p0.tg_mac, dst=p0.dut_mac)
        v4 = bytes(eth / IP(src="198.18.128.1", dst="198.19.128.7", ttl=255) /
                   UDP(sport=1024, dport=1024) / (b"\0" * 18))
        v6 = bytes(eth / IPv6(src="2001:2:0:10::1", dst="2001:2:0:11::9", hlim=255) /
                   UDP(sport=1024, dport=1024) / (b"\0" * 18))
        configs = [({"mode": "xconnect"}, "-", v4)]
        for n in routes:
            for fib in ("full", "direct"):
                configs += [({"mode": "router", "routes": n, "routes6": n, "fib_lookup": fib},
                             "ipv4", v4),
                            ({"mode": "router", "routes": n, "routes6": n, "fib_lookup": fib},
                             "ipv6", v6)]
        for params, fam, frame in configs:
            d = XdpDut(XdpDut.validate(params, "bench"))
            d.setup(lab.dut_host())
            try:
                # 200 runs per call (below the TTL of 255), 50 calls
                r = d.testrun(frame, repeat=200, calls=50)
            finally:
                d.teardown()
            row = {**params, "family": fam, "ns_per_frame": r["duration_ns"],
                   "verdicts": r["counters"]}
            rows.append(row)
            if not as_json:
                print(f"{params['mode']:8s} {fam:4s} routes={params.get('routes', '-'):>8} "
                      f"fib={params.get('fib_lookup', '-'):6s} {r['duration_ns']:7.1f} ns/frame "
                      f"({1e3 / r['duration_ns']:6.2f} Mpps program-bound) {r['counters']}",
                      flush=True)
    if as_json:
        print(json.dumps(rows, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="0.5M,1M,2M,3M", help="offered loads [pps], comma list")
    ap.add_argument("--duration", type=float, default=2.0, help="trial duration [s]")
    ap.add_argument("--frame", type=int, default=64, help="frame size incl. FCS [bytes]")
    ap.add_argument("--duts", default=",".join(DUTS), help=f"subset of {', '.join(DUTS)}")
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    ap.add_argument("--cost", action="store_true",
                    help="time the XDP programs alone (BPF_PROG_TEST_RUN)")
    ap.add_argument("--routes", default="2,1048576", help="--cost: FIB sizes, comma list")
    ap.add_argument("--napi-fifo", type=int, default=0, metavar="PRIO",
                    help="run the lab's pinned NAPI threads SCHED_FIFO at PRIO (1..99): "
                         "their wake-up then preempts other work on a shared host")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("xdp_dut: needs root (network namespaces)", file=sys.stderr)
        return 2
    if a.cost:
        return program_cost([int(x) for x in a.routes.split(",")], a.json)
    loads = [parse_load(x) for x in a.loads.split(",")]
    drivers = load_drivers()
    cpus = sorted(os.sched_getaffinity(0))
    profile = Profile(name="bench", frame_size=a.frame)
    trial = TrialSettings(warmup_trial=False)
    rows = []
    for name in a.duts.split(","):
        kind, params = DUTS[name]
        cls = drivers[kind]
        with Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1])) as lab:
            if a.napi_fifo:
                for t in lab.tuning:
                    for n in t.napi:
                        os.sched_setscheduler(n["pid"], os.SCHED_FIFO,
                                              os.sched_param(a.napi_fifo))
            drv = cls(cls.validate(params, name))
            drv.check()
            t0 = time.perf_counter()
            drv.setup(lab.dut_host())
            setup_s = time.perf_counter() - t0
            try:
                peers = drv.peer_macs(lab.dut_host()) if hasattr(drv, "peer_macs") else {}
                for load in loads:
                    spec = build_spec(lab.tester_host(), profile, trial, load, a.duration)
                    for port in spec["ports"]:
                        port["peer_mac"] = peers.get(port["ifname"], port["peer_mac"])
                    before = drv.counters()
                    res = fwdgen.run_trial(spec, netns=lab.tg_ns)
                    after = drv.counters()
                    s = res.streams[0]
                    row = {"dut": name, "offered_pps": load, "napi_fifo": a.napi_fifo,
                           "sent_pps": s.tx_packets / a.duration,
                           "received_pps": s.rx_packets / a.duration,
                           "loss_ratio": (s.intended_packets - s.rx_packets) / max(1, s.intended_packets),
                           "setup_s": round(setup_s, 2),
                           "counters": {k: after.get(k, 0) - before.get(k, 0)
                                        for k in SHOW[kind] if k in after}}
                    rows.append(row)
                    if not a.json:
                        cs = " ".join(f"{k}={v}" for k, v in row["counters"].items())
                        print(f"{name:13s} offered {load / 1e6:5.2f} Mpps  sent "
                              f"{row['sent_pps'] / 1e6:5.3f}  received "
                              f"{row['received_pps'] / 1e6:5.3f} Mpps  loss "
                              f"{row['loss_ratio'] * 100:5.1f} %  {cs}", flush=True)
            finally:
                drv.teardown()
    if a.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
