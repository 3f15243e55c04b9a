#!/usr/bin/env python3
"""TRex against fwdgen, peers in the same run, in paired rounds (root).

1. Maximum rate into the same sink: the lab's tg0 -> dut0 veth, dut0 an
   XDP-drop sink (`fwdgen xdp-path --drop-all`, NAPI on the DUT CPU), 64 B,
   one flow. fwdgen: its own "max" load (xdp backend). TRex: asked for
   10 Mpps (it sends what it can, late; see docs/trex.md). The rate is what
   the sink counted over the middle of the run; TRex's own claim
   (opackets / duration, what the issue quotes) is printed beside it.
2. The same DUT's NDR, PDR@0.5 % (RFC 2544 binary search, 1 s trials,
   relative width 0.01) and latency p50/p99 at a fixed load (a latency
   stream beside it), measured with fwdgen and with TRex through the
   campaign path (testbed, DUT driver, trial routine), fresh lab for each.
   The DUT: the Linux router with a 300-rule nftables forward chain by
   default, so its capacity is within TRex's reach (the plain router and
   vfwd forward more than TRex sends on af_packet here: their "NDR" would
   be the generators' limits, not theirs).

With ``--link memif`` both parts run on the lab's memif link instead:

1. the sink is ``fwdgen sink --count-only`` (a memif slave busy-polling on the
   DUT CPU, counting descriptors) on tg0's socket, the generator the master:
   fwdgen (its memif backend, "max") or TRex (DPDK's memif PMD, asked for
   --trex-load, 40 Mpps: more than it sends). TRex needs both its ports connected, so tg1's socket gets a
   second sink that is stopped (SIGSTOP) once connected: its link stays up,
   it takes no CPU. The rate is what the sink counted over the middle of
   the time frames flowed (snapshots every 0.25 s); TRex's per-stream claim
   and its memif driver's own count (opackets: what went into the ring;
   low_end TRex drops at a full ring and still counts the frame) beside it.
2. the DUT is vfwd (or VPP) on memif, the memif slave.

Each round runs both generators (order alternating by round), so a drift of
the shared host hits both; the per-round difference (TRex - fwdgen) gets a
95 % Student's t interval.

Usage: sudo .venv/bin/python bench/trex_vs_fwdgen.py [--rounds 5] [--seconds 3]
       [--link veth|memif] [--dut linux-fw|linux|vfwd|vpp] [--rules 300]
       [--latency-load 50000] [--ring 1024] [--only rate|search]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fwdbench import native  # noqa: E402
from fwdbench.dut.host import MemifLink  # noqa: E402
from fwdbench.analysis.stats import summarize  # noqa: E402
from fwdbench.campaign import Profile, TrialSettings, build_campaign  # noqa: E402
from fwdbench.lab import Lab, LabConfig  # noqa: E402
from fwdbench.search import run_search  # noqa: E402
from fwdbench.search.settings import BinarySettings  # noqa: E402
from fwdbench.testbed.netns import NetnsTestbed  # noqa: E402
from fwdbench.traffic.base import TrialRequest  # noqa: E402
from fwdbench.traffic.fwdgen import run_trial  # noqa: E402
from fwdbench.traffic.trex import TrexGenerator  # noqa: E402
from fwdbench.trialspec import build_spec  # noqa: E402

DUTS = {"linux-fw": {"type": "linux", "params": {"mode": "router"}},
        "linux": {"type": "linux", "params": {"mode": "router"}},
        "vfwd": {"type": "vfwd", "params": {"mode": "router"}},
        "vpp": {"type": "vpp", "params": {"mode": "router"}}}
MEMIF_DUTS = ("vfwd", "vpp")


def firewall(n: int) -> str:
    """An nftables forward chain of ``n`` rules no lab frame matches (each frame
    is checked against all of them): a router whose capacity is within TRex's
    reach on af_packet (300 rules: ~0.15 Mpps here, where the plain Linux
    router and vfwd forward more than TRex can send)."""
    rules = "\n".join(f"  ip daddr 198.19.0.{i % 250 + 1} udp dport {1 + i} drop"
                      for i in range(n))
    return f"table inet fw {{\n chain forward {{\n  type filter hook forward priority 0;\n" \
           f"{rules}\n }}\n}}\n"
GENERATORS = ("fwdgen", "trex")


# ---- 1. maximum rate into one sink -----------------------------------------------------

class Sink:
    """An XDP-drop sink on dut0 that counts what the veth delivered."""

    def __init__(self, lab: Lab):
        self.p = lab.dut_exec.popen([str(native.tool("fwdgen")), "xdp-path", "--in", "dut0",
                                     "--drop-all"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"sink did not start: {self.p.stderr.read()}")

    def count(self) -> tuple[int, float]:
        self.p.send_signal(signal.SIGUSR1)
        d = json.loads(self.p.stdout.readline())
        return d["received"], d["t_ns"] / 1e9

    def close(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.communicate(timeout=10)


def windowed(sink: Sink, seconds: float, start) -> tuple[float, object]:
    """Start a sender (``start()`` -> a thread running it), and return the sink's
    rate over the middle of the run [pps] and what the sender returned."""
    box: dict = {}
    th = threading.Thread(target=lambda: box.setdefault("r", start()))
    th.start()
    time.sleep(0.6)
    n0, t0 = sink.count()
    time.sleep(max(seconds - 1.0, 0.5))
    n1, t1 = sink.count()
    th.join()
    return (n1 - n0) / (t1 - t0), box.get("r")


def max_rate(gen: str, seconds: float, cpus) -> dict:
    with Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1], napi_rt_priority=50)) as lab:
        sink = Sink(lab)
        t = lab.tester_host()
        prof = Profile(name="p")
        trial = TrialSettings(warmup=0)
        try:
            if gen == "fwdgen":
                spec = build_spec(t, prof, trial, 1.0, seconds, warmup=False)
                spec["load_pps"] = "max"
                spec["streams"][0]["rx_port"] = None
                rate, r = windowed(sink, seconds, lambda: run_trial(spec, lab.tg_ns))
                return {"sink_pps": rate, "claimed_pps": r.streams[0].tx_packets / seconds}
            g = TrexGenerator({}, t)
            g.check()
            try:
                req = TrialRequest(profile=prof, trial=trial, load_pps=10e6, duration_s=seconds)
                rate, r = windowed(sink, seconds, lambda: g.run(req))
            finally:
                g.close()
            ch = r.raw["checks"]["port0"]
            return {"sink_pps": rate, "claimed_pps": ch["trex_opackets"] / seconds,
                    "trex_tx_over_time": r.streams[0].achieved_tx_pps}
        finally:
            sink.close()


class MemifSink:
    """``fwdgen sink`` on a memif socket (the slave), counting descriptors."""

    def __init__(self, lab: Lab, socket: str, cpu: int, ring: int):
        self.p = lab.dut_exec.popen([str(native.tool("fwdgen")), "sink", "--memif", socket,
                                     "--cpu", str(cpu), "--ring-size", str(ring),
                                     "--connect-timeout", "120", "--stay", "--count-only"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stopped = False
        self.up = False

    def _line(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"memif sink ended: {self.p.stderr.read()}")
        d = json.loads(line)
        self.up = self.up or d.get("event") == "up"
        return d

    def wait_up(self) -> None:
        """Until the peer connected (a signal before that ends the sink)."""
        while not self.up:
            self._line()

    def count(self) -> tuple[int, float]:
        self.p.send_signal(signal.SIGUSR1)
        while True:
            d = self._line()
            if "t_ns" in d and "frames" in d:
                return d["frames"], d["t_ns"] / 1e9

    def stop_when_up(self) -> threading.Thread:
        """SIGSTOP the sink once connected (in a thread): its link stays up, it takes
        no CPU (the second port a TRex trial needs connected but sends nothing on)."""
        def go():
            while self._line().get("event") != "up":
                pass
            self.p.send_signal(signal.SIGSTOP)
            self.stopped = True
        th = threading.Thread(target=go, daemon=True)
        th.start()
        return th

    def close(self):
        if self.stopped:
            self.p.send_signal(signal.SIGCONT)
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()


def flowing_rate(sink: MemifSink, start) -> tuple[float, object]:
    """Start a sender (``start()``), snapshot the sink every 0.25 s until it
    returns; the rate over the middle of the time frames flowed [pps] (the first
    and last flowing intervals left out) and what the sender returned."""
    box: dict = {}
    th = threading.Thread(target=lambda: box.setdefault("r", start()))
    th.start()
    sink.wait_up()
    samples = []
    while th.is_alive():
        samples.append(sink.count())
        time.sleep(0.25)
    th.join()
    samples.append(sink.count())
    flowing = [i for i in range(1, len(samples)) if samples[i][0] > samples[i - 1][0]]
    if len(flowing) < 4:
        raise RuntimeError(f"frames flowed in {len(flowing)} of {len(samples)} snapshots")
    a, b = samples[flowing[1] - 1], samples[flowing[-2]]
    return (b[0] - a[0]) / (b[1] - a[1]), box.get("r")


def max_rate_memif(gen: str, seconds: float, cpus, ring: int, trex_load: float) -> dict:
    with Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1], napi_rt_priority=50)) as lab:
        links = lab.memif_links("slave")            # the generator is the master
        t = lab.tester_host()
        prof = Profile(name="p")
        trial = TrialSettings(warmup=0)
        sink = MemifSink(lab, links[0].socket, cpus[-1], ring)
        try:
            if gen == "fwdgen":
                spec = build_spec(t, prof, trial, 1.0, seconds, warmup=False, memif=links)
                spec["ports"] = spec["ports"][:1]       # one memif port, tg0's
                spec["ports"][0]["memif"]["connect_timeout_s"] = 30
                spec["load_pps"] = "max"
                spec["streams"][0]["rx_port"] = None
                rate, r = flowing_rate(sink, lambda: run_trial(spec, lab.tg_ns))
                return {"sink_pps": rate, "claimed_pps": r.streams[0].tx_packets / seconds}
            idle = MemifSink(lab, links[1].socket, cpus[-1], ring)
            idle.stop_when_up()
            g = TrexGenerator({}, t)
            g.check()
            try:
                # the server on the memif sockets, both ports connected, before measuring
                g.run(TrialRequest(profile=prof, trial=trial, load_pps=1000, duration_s=0.2,
                                   memif=links))
                req = TrialRequest(profile=prof, trial=trial, load_pps=trex_load,
                                   duration_s=seconds, memif=links)
                rate, r = flowing_rate(sink, lambda: g.run(req))
            finally:
                g.close()
                idle.close()
            ch = r.raw["checks"]["port0"]
            return {"sink_pps": rate, "claimed_pps": ch["trex_tx"] / seconds,
                    "driver_pps": ch["trex_opackets"] / seconds,
                    "trex_tx_over_time": r.streams[0].achieved_tx_pps}
        finally:
            sink.close()


# ---- 2. the same DUT's NDR, PDR and latency ------------------------------------------------

def dut_figures(gen: str, dut_name: str, rules: int, latency_load: float, cpus,
                link: str = "veth") -> dict:
    dut = dict(DUTS[dut_name], **({"link": "memif"} if link == "memif" else {}))
    c = build_campaign({
        "campaign": {"name": "trex-vs-fwdgen"},
        "testbed": {"type": "netns", "gen_cpu": cpus[0], "dut_cpu": cpus[-1],
                    "max_load": "1.5Mpps"},
        "trial": {"duration": "1s", "warmup": "0.3s", "drain": "0.2s"},
        "generator": {"type": gen},
        "dut": [{"name": "d", **dut}],
        "profile": [{"name": "udp4-64", "frame_size": 64, "flows": 64,
                     "vary": ["src_ip", "src_port"]}],
        "search": {"type": "sweep", "loads": [latency_load]}}, "bench/trex_vs_fwdgen.py")
    sc = c.scenarios[0]
    limited = 0
    with NetnsTestbed(c) as tb, tb.scenario(sc) as (execute, _d):
        if dut_name == "linux-fw":
            tb.lab.dut_exec.run(["nft", "-f", "-"], input=firewall(rules))
        execute(1.0, latency_load, 0, False)            # warm-up, discarded

        def measure(duration_s, load_pps, reason=""):
            nonlocal limited
            r = execute(duration_s, load_pps, 1, False)
            limited += r.generator_limited
            return r
        res = run_search(BinarySettings(trial_duration_s=1.0, relative_width=0.01,
                                        loss_ratios=[0.0, 0.005]), measure, sc.max_load_pps)
        lat = execute(3.0, latency_load, 2, True)
    p50 = max((s.latency.p50_ns for s in lat.streams if s.latency), default=math.nan)
    p99 = max((s.latency.p99_ns for s in lat.streams if s.latency), default=math.nan)
    return {"ndr": res.ndr_pps, "pdr": res.pdr_pps, "trials": len(res.trials),
            "limited": limited, "p50_us": p50 / 1e3, "p99_us": p99 / 1e3,
            "lat_loss": lat.loss_ratio, "lat_limited": lat.generator_limited}


# ---- output ---------------------------------------------------------------------------------

def pressure() -> float | None:
    """CPU pressure, some avg10 [%]: how much of the time runnable work waited
    (other work on this shared host moves the figures more than anything here)."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return float(first.split("avg10=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


def interval(diffs: list[float]) -> str:
    if len(diffs) < 2:
        return "(one round: no interval)"
    s = summarize(diffs)
    return f"mean {s.mean:+.3f}, 95 % CI [{s.ci_low:+.3f}, {s.ci_high:+.3f}]"


def spread(xs: list[float], scale: float = 1.0, fmt: str = ".3f") -> str:
    xs = [x / scale for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return "-"
    return f"{statistics.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="max-rate runs [s]")
    ap.add_argument("--dut", choices=sorted(DUTS), default="linux-fw")
    ap.add_argument("--rules", type=int, default=300, help="firewall rules of linux-fw")
    ap.add_argument("--latency-load", type=float, default=50_000.0, help="[pps]")
    ap.add_argument("--only", choices=("rate", "search"))
    ap.add_argument("--link", choices=("veth", "memif"), default="veth")
    ap.add_argument("--trex-load", type=float, default=40e6,
                    help="memif: the rate TRex is asked for [pps] (more than it can send)")
    ap.add_argument("--ring", type=int, default=1024,
                    help="memif: the sink's ring size [slots] (it is the slave: its choice)")
    ap.add_argument("--json", help="also write every round's figures to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("trex_vs_fwdgen: needs root (network namespaces, XDP)", file=sys.stderr)
        return 2
    if args.link == "memif" and args.dut not in MEMIF_DUTS:
        if "--dut" in sys.argv:
            print(f"trex_vs_fwdgen: --dut {args.dut} has no memif link; use "
                  f"{' or '.join(MEMIF_DUTS)}", file=sys.stderr)
            return 2
        args.dut = "vfwd"
    cpus = sorted(os.sched_getaffinity(0))
    rounds: list[dict] = []
    t_start = time.monotonic()
    for i in range(args.rounds):
        order = GENERATORS if i % 2 == 0 else GENERATORS[::-1]
        row: dict = {"rate": {}, "dut": {}, "pressure": [pressure()]}
        for gen in order:
            if args.only != "search":
                row["rate"][gen] = (max_rate_memif(gen, args.seconds, cpus, args.ring,
                                                   args.trex_load)
                                    if args.link == "memif" else
                                    max_rate(gen, args.seconds, cpus))
            if args.only != "rate":
                row["dut"][gen] = dut_figures(gen, args.dut, args.rules, args.latency_load, cpus,
                                              args.link)
        row["pressure"].append(pressure())
        rounds.append(row)
        print(f"round {i + 1}/{args.rounds} done ({time.monotonic() - t_start:.0f} s): "
              + json.dumps(row, default=lambda x: round(x, 1)), flush=True)
    print(f"\n{args.rounds} paired rounds on {args.link}, generator CPU {cpus[0]}, "
          f"DUT CPU {cpus[-1]}; "
          "median [min-max]; differences TRex - fwdgen per round")
    if args.only != "search":
        print("1. maximum rate into " + (
            f"a memif sink (fwdgen sink --count-only, ring {args.ring}) (64 B) [Mpps]"
            if args.link == "memif" else "an XDP-drop sink on veth (64 B) [Mpps]"))
        for gen in GENERATORS:
            rs = [r["rate"][gen] for r in rounds]
            extra = ""
            if gen == "trex" and args.link == "memif":
                extra = (f"; TRex's per-stream claim / duration "
                         f"{spread([r['claimed_pps'] for r in rs], 1e6)}, its memif "
                         f"driver's (opackets / duration) "
                         f"{spread([r['driver_pps'] for r in rs], 1e6)}")
            elif gen == "trex":
                extra = (f"; TRex's own claim (opackets / duration) "
                         f"{spread([r['claimed_pps'] for r in rs], 1e6)}")
            print(f"   {gen:7s} sink counted {spread([r['sink_pps'] for r in rs], 1e6)}{extra}")
        ratio = [r["rate"]["trex"]["sink_pps"] / r["rate"]["fwdgen"]["sink_pps"] for r in rounds]
        print(f"   TRex / fwdgen per round: {spread(ratio)}")
    if args.only != "rate":
        what = (f"Linux router with {args.rules} nftables rules" if args.dut == "linux-fw"
                else f"{args.dut} router" + (" on memif" if args.link == "memif" else ""))
        print(f"2. the {what}: NDR and PDR@0.5 % [Mpps], latency at "
              f"{args.latency_load / 1e3:g} kpps [us]")
        for key, label, scale in (("ndr", "NDR", 1e6), ("pdr", "PDR@0.5%", 1e6),
                                  ("p50_us", "latency p50", 1), ("p99_us", "latency p99", 1)):
            vals = {g: [r["dut"][g][key] for r in rounds] for g in GENERATORS}
            diffs = [(t - f) / scale for t, f in zip(vals["trex"], vals["fwdgen"])
                     if t is not None and f is not None]
            print(f"   {label:12s} fwdgen {spread(vals['fwdgen'], scale)}  "
                  f"TRex {spread(vals['trex'], scale)}  difference {interval(diffs)}")
        for g in GENERATORS:
            lim = sum(r["dut"][g]["limited"] for r in rounds)
            n = sum(r["dut"][g]["trials"] for r in rounds)
            print(f"   {g}: {lim} of {n} search trials generator-limited")
    press = [p for r in rounds for p in r["pressure"] if p is not None]
    if press:
        print(f"CPU pressure around the rounds (other work waiting for a CPU, avg10): "
              f"{min(press):.0f}-{max(press):.0f} %")
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
