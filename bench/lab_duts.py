#!/usr/bin/env python3
"""Forwarding rate of every lab data plane, side by side in one run (root).

Offers each data plane a few loads of 64 B frames (default 0.6, 0.9, 1.2
and 1.5 Mpps, 64 flows, tg0 -> tg1) for a few seconds each and prints the
rate that came out at each, and its peak: the highest forwarding rate over
the offered loads (RFC 2285's maximum forwarding rate). The peak, not the
rate at one high load, is what a data plane can forward: beyond their peak
these data planes forward *less* the more they are offered (receive
livelock; e.g. the Linux router 0.96 Mpps when the generator also received
and analysed every frame, 0.61 when it only sent, at 1.5 Mpps), and the
generator reaches a high offered load for some data planes and not for
others. Also the DUT CPU's busy share and what the generator sent. Peers of
issue 7 (vfwd): the Linux router, DPDK testpmd on net_af_xdp and the xdp
DUT, each as campaigns run it (behind the lab's DUT ingress: a cpumap queue
for the Linux router, NAPI on the generator's CPU filling the AF_XDP rings
of testpmd and vfwd; lab/ingress.py), and the Linux router and vfwd also on
veth's own ring with threaded NAPI on the DUT CPU (testbed.dut_rx_queue = 0,
as the issue measured the Linux router).

Usage: sudo .venv/bin/python bench/lab_duts.py [--loads 0.6e6,0.9e6,1.2e6,1.5e6]
       [--seconds 3] [--trials 3] [--link memif]

With --link memif the peers are the user-space data planes on the lab's memif
link (shared memory, no kernel on the path; the memif issue): vfwd, VPP and
testpmd, per path (L2 cross-connect; IPv4 router with 1 route and with 2^20
routes), and the verdict is vfwd's peak over the best other's per path.

Each round runs every peer in turn (a fresh lab each, all loads), so a
drift of the shared host's speed hits all peers alike.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fwdbench.analysis.stats import summarize  # noqa: E402
from fwdbench.campaign import build_campaign  # noqa: E402
from fwdbench.errors import FwdbenchError  # noqa: E402
from fwdbench.testbed.netns import NetnsTestbed  # noqa: E402

PEERS = [
    ("linux router (ingress queue)", {"type": "linux", "params": {"mode": "router"}}, 4096),
    ("linux router (veth ring)", {"type": "linux", "params": {"mode": "router"}}, 0),
    ("testpmd mac (net_af_xdp)", {"type": "testpmd", "params": {"mode": "mac"}}, 4096),
    ("testpmd mac (veth ring)", {"type": "testpmd", "params": {"mode": "mac"}}, 0),
    ("vfwd router (AF_XDP)", {"type": "vfwd", "params": {"mode": "router"}}, 4096),
    ("vfwd router (veth ring)", {"type": "vfwd", "params": {"mode": "router"}}, 0),
    ("xdp router", {"type": "xdp", "params": {"mode": "router"}}, 4096),
]


#: the memif link's peers: (label, DUT, the path it is compared on)
BIG = 1 << 20
MEMIF_PEERS = [
    ("vfwd xconnect (memif)", {"type": "vfwd", "params": {"mode": "xconnect"}}, "xconnect"),
    ("VPP xconnect (memif)", {"type": "vpp", "params": {"mode": "xconnect"}}, "xconnect"),
    ("testpmd io (memif)", {"type": "testpmd", "params": {"mode": "io"}}, "xconnect"),
    ("vfwd router (memif)", {"type": "vfwd", "params": {"mode": "router"}}, "ip4 1 route"),
    ("VPP router (memif)", {"type": "vpp", "params": {"mode": "router", "routes": 1}},
     "ip4 1 route"),
    # 2^20 routes: the flow range cut into /32s plus filler prefixes, each its way
    ("vfwd router 2^20 (memif)", {"type": "vfwd", "params": {
        "mode": "router", "routes": 1 << 15, "random_routes": BIG - (1 << 16)}},
     "ip4 2^20 routes"),
    ("VPP router 2^20 (memif)", {"type": "vpp", "params": {"mode": "router", "routes": BIG}},
     "ip4 2^20 routes"),
]


def campaign(dut: dict, rxq: int | str, loads: list[float]):
    link = rxq if isinstance(rxq, str) else "veth"
    return build_campaign({
        "campaign": {"name": "lab-duts"},
        "testbed": {"type": "netns", "link": link,
                    # memif reaches beyond what veth's kernel paths can be offered
                    "max_load": "12Mpps" if link == "memif" else "3Mpps",
                    "dut_rx_queue": rxq if isinstance(rxq, int) else 4096},
        "trial": {"duration": "1s", "warmup": "0.3s", "drain": "0.2s"},
        "dut": [{"name": "d", **dut}],
        # many destinations, so a large FIB is looked up all over
        "profile": [{"name": "udp4-64", "frame_size": 64, "flows": 1 << 15,
                     "vary": ["src_ip", "dst_ip"]} if link == "memif" else
                    {"name": "udp4-64", "frame_size": 64, "flows": 64,
                     "vary": ["src_ip", "src_port"]}],
        "search": {"type": "sweep", "loads": loads},
    }, "bench/lab_duts.py")


def _loads(text: str) -> list[float]:
    try:
        loads = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give loads in pps, e.g. 0.6e6,1.5e6")
    if not loads or min(loads) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one load > 0 pps")
    return sorted(loads)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=_loads, default=_loads("0.6e6,0.9e6,1.2e6,1.5e6"),
                    help="offered loads [pps], comma-separated")
    ap.add_argument("--load-pps", type=float, help="one offered load only [pps]")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--only", default="", help="run only peers whose label contains this")
    ap.add_argument("--link", choices=("veth", "memif"), default="veth",
                    help="veth: the peers on the kernel's paths; memif: the user-space ones "
                         "on the lab's memif link")
    args = ap.parse_args()
    loads = [args.load_pps] if args.load_pps else args.loads
    if args.link == "memif":
        paths = {label: path for label, _d, path in MEMIF_PEERS}
        peers = [(label, dut, "memif") for label, dut, _p in MEMIF_PEERS if args.only in label]
    else:
        peers = [p for p in PEERS if args.only in p[0]]
    print(f"offered {', '.join(f'{x / 1e6:.2f}' for x in loads)} Mpps x {args.seconds:g} s "
          f"each, {args.trials} rounds (each round: every peer in turn); median [min-max]",
          flush=True)
    # per peer, per round: forwarded [Mpps] at each load; sent and busy at the peak
    fwd: dict[str, list[list[float]]] = {p[0]: [] for p in peers}
    tx: dict[str, list[float]] = {p[0]: [] for p in peers}
    busy: dict[str, list[float]] = {p[0]: [] for p in peers}
    limited: dict[str, list[bool]] = {p[0]: [] for p in peers}   # generator-limited peak
    ingress: dict[str, str] = {}
    # Rounds, not one peer after the other: this shared VM's speed drifts by
    # tens of percent within minutes, which would otherwise be read as a
    # difference between data planes.
    failed: dict[str, list[str]] = {p[0]: [] for p in peers}
    for _round in range(args.trials):
        for label, dut, rxq in peers:
            c = campaign(dut, rxq, loads)
            try:
                with NetnsTestbed(c) as tb, tb.scenario(c.scenarios[0]) as (execute, _d):
                    execute(1.0, loads[0], 0, False)        # warm-up, discarded
                    row, best = [], None
                    for load in loads:
                        r = execute(args.seconds, load, 1, False)
                        row.append(r.rx_packets / args.seconds / 1e6)
                        if best is None or row[-1] >= best[0]:
                            cpu = (r.meters.get("cpu") or {}).get("per_cpu", {}).get(
                                str(tb.lab.dut_cpu), {})
                            best = (row[-1], r.tx_packets / args.seconds / 1e6,
                                    cpu.get("busy", float("nan")), r.generator_limited)
                    ingress[label] = tb.lab.dut_ingress if rxq != "memif" else "memif"
            except FwdbenchError as e:       # one peer's failure is its round's, not the run's
                failed[label].append(str(e).splitlines()[0][:200])
                print(f"  round {_round + 1}: {label} failed: {failed[label][-1]}", flush=True)
                continue
            fwd[label].append(row)
            tx[label].append(best[1])
            busy[label].append(best[2])
            limited[label].append(best[3])
    med = statistics.median
    for label, _dut, _rxq in peers:
        if not fwd[label]:
            print(f"  {label:30s} failed in every round: {failed[label][0]}")
            continue
        peak = [max(row) for row in fwd[label]]
        per_load = ", ".join(f"{load / 1e6:.2f}: {med(row[i] for row in fwd[label]):.3f}"
                             for i, load in enumerate(loads))
        print(f"  {label:30s} peak {med(peak):.3f} [{min(peak):.3f}-{max(peak):.3f}] Mpps "
              f"(generator sent {med(tx[label]):.3f}, DUT CPU {med(busy[label]) * 100:.0f} % "
              f"busy there); by offered load: {per_load}; ingress {ingress[label]}")
    peaks = {label: [max(row) for row in rows] for label, rows in fwd.items()}
    if args.link == "memif":
        print_memif_verdicts(peaks, paths, limited, max(loads) / 1e6)
    else:
        print_target(peaks, limited)
    return 0


def print_memif_verdicts(peaks: dict[str, list[float]], paths: dict[str, str],
                         limited: dict[str, list[bool]], top: float = math.inf) -> None:
    """Per path, vfwd's peak over the best other data plane's in the same round,
    with the 95 % CI of the paired ratios' geometric mean: ahead, behind, or this
    run cannot tell (and why: the generator at its limit, or every one forwarded
    the most that was offered, ``top`` [Mpps], so each peak is a lower bound)."""
    for path in dict.fromkeys(paths.values()):
        mine = [k for k in peaks if paths[k] == path and k.startswith("vfwd")]
        others = [k for k in peaks if paths[k] == path and not k.startswith("vfwd")]
        if not mine or not others:
            continue
        v = mine[0]
        others = [o for o in others if len(peaks[o]) == len(peaks[v])]
        if not others or not peaks[v]:
            print(f"  {path}: no round where vfwd and a peer both ran: no verdict")
            continue
        ratios = [peaks[v][i] / max(peaks[o][i] for o in others)
                  for i in range(len(peaks[v]))]
        print(f"  {path}: {v} / best of {', '.join(others)}, per round: median "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]")
        ci = ratio_ci(ratios)
        if ci:
            gm, lo, hi = ci
            verdict = ("vfwd ahead" if lo > 1 else "vfwd behind" if hi < 1 else
                       "this run cannot tell")
            print(f"    geometric mean {gm:.2f}, 95 % CI [{lo:.2f}-{hi:.2f}] ({len(ratios)} "
                  f"rounds): {verdict}")
        at_top = [k for k in mine + others if all(p >= 0.995 * top for p in peaks[k])]
        if at_top:
            print(f"    forwarded (nearly) all of the most offered, {top:.2f} Mpps, in every "
                  f"round: {', '.join(at_top)}; their peaks are lower bounds"
                  + (", so their ratio says nothing" if v in at_top and len(at_top) > 1 else ""))
        gl = {k: sum(limited.get(k, [])) for k in mine + others}
        if any(gl.values()):
            print("    the generator was the limit at the peak in "
                  + ", ".join(f"{k}: {n} of {len(ratios)} rounds" for k, n in gl.items() if n)
                  + " (there the peak is a lower bound)")


def print_target(fwd: dict[str, list[float]],
                 limited: dict[str, list[bool]] | None = None) -> None:
    """Issue 7's target, paired by round: vfwd's peak over the best peak of the
    Linux router and testpmd *in the same round* and the same lab ingress (the
    campaigns' default, or veth's ring for all). A ratio of two trials a minute
    apart is far steadier on this drifting host than a ratio of two medians."""
    for label in (k for k in fwd if k.startswith("vfwd")):
        ring = "veth ring" in label
        peers = [k for k in fwd if k.startswith(("linux", "testpmd")) and
                 ("veth ring" in k) == ring]
        if not peers:
            continue
        ratios = [v / max(fwd[p][i] for p in peers) for i, v in enumerate(fwd[label])]
        print(f"  {label:30s} / best of {len(peers)} peers, per round: median "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}], "
              f">= 1 in {sum(r >= 1 for r in ratios)} of {len(ratios)} rounds (target: >= 1)")
        ci = ratio_ci(ratios)
        if ci:
            gm, lo, hi = ci
            verdict = ("vfwd ahead" if lo > 1 else "vfwd behind" if hi < 1 else
                       "this run cannot tell vfwd from the best peer")
            print(f"  {'':30s}   geometric mean {gm:.2f}, 95 % CI [{lo:.2f}-{hi:.2f}] "
                  f"(paired t on log ratios, {len(ratios)} rounds): {verdict}")
        # a peak the generator could not offer more to says nothing of the DUT
        gl = sum((limited or {}).get(label, []))
        if gl:
            print(f"  {'':30s}   the generator, not vfwd, was the limit at vfwd's peak in "
                  f"{gl} of {len(ratios)} rounds: there its ratio is a lower bound")


def ratio_ci(ratios: list[float]) -> tuple[float, float, float] | None:
    """Geometric mean of paired ratios and its 95 % CI (Student's t on the
    logs), or None below 2 rounds: the ratio's drift between rounds on this
    host decides whether a run can rank two data planes at all."""
    if len(ratios) < 2 or min(ratios) <= 0:
        return None
    s = summarize([math.log(r) for r in ratios])
    return math.exp(s.mean), math.exp(s.ci_low), math.exp(s.ci_high)


if __name__ == "__main__":
    sys.exit(main())
