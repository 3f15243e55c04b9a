#!/usr/bin/env python3
"""memif against XDP on veth: fwdgen's 64 B transmit rate into a drop sink on
the other CPU, the two paths side by side in paired rounds (issue 23).

  memif  fwdgen (memif backend, the master, TX on --gen-cpu) -> `fwdgen sink`
         (the slave, busy-polling on --sink-cpu): no kernel on the path. The
         sink counts the signed frames of the measured phase, so "exact" is
         sink count == fwdgen's tx_packets. Two runs a round: paced at --load
         (offered = fwdgen's achieved rate; frames the sink's full ring refused
         are lost, as on a wire) and as fast as possible (a full ring holds
         fwdgen back, so every frame sent is counted).
  xdp    fwdgen (xdp backend, BPF_PROG_RUN live frames, as fast as possible,
         TX on --gen-cpu) -> veth -> an XDP-drop sink (`fwdgen xdp-path
         --drop-all`) whose NAPI kthread is pinned to --sink-cpu: the lab's
         path for kernel data planes (bench/fwdgen_peers.py's topology);
         accepted = what the sink counted over the middle of the run.

The ratio is memif's counted rate (as fast as possible) over xdp's accepted
rate, per round, with the geometric mean and its 95 % CI (Student's t on the
log ratios, as bench/lab_duts.py). Target (issue 23): memif >= 10 Mpps offered
and counted exactly at --load 10M, and >= 1.5x xdp in the same run.

    sudo .venv/bin/python bench/memif_sink.py [--rounds 5] [--seconds 3] [--load 10M]

Needs root (the veth lab, BPF) and native/build/fwdgen with memif (make -C
native with VPP's source tarball). The host's CPU pressure (/proc/pressure/cpu:
other work wanting the CPUs) is printed beside the figures: on a shared host
it moves them more than anything measured here.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from fwdgen_peers import FWDGEN, S_MAC, Lab, fwdgen_spec, measure  # noqa: E402

from fwdbench.analysis.stats import summarize  # noqa: E402

V4 = ("198.18.128.0/17", "198.19.128.0/17")


def parse_load(s: str) -> float:
    s = s.strip().lower().removesuffix("pps")
    mult = {"k": 1e3, "m": 1e6}.get(s[-1:], 1.0)
    return float(s[:-1] if s[-1:] in "km" else s) * mult


def pressure() -> float | None:
    """CPU pressure, some avg10 [%]: how much of the time runnable work waited."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return float(first.split("avg10=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


def schedstat(tid: int) -> tuple[int, int]:
    """(CPU time, time runnable but waiting for a CPU) of a thread [ns]."""
    try:
        run, wait, _ = Path(f"/proc/{tid}/schedstat").read_text().split()
        return int(run), int(wait)
    except (OSError, ValueError):
        return 0, 0


def memif_run(tmp: Path, load: float | str, args) -> dict:
    """One fwdgen trial into the memif sink; the sink's count beside fwdgen's."""
    sock = tmp / "sink.sock"
    spec = {
        "ports": [{"ifname": "g0", "peer_mac": S_MAC,
                   "memif": {"socket": str(sock), "ring_size": args.ring,
                             "connect_timeout_s": 10}}],
        "streams": [{"id": 0, "tx_port": 0, "rx_port": None, "src": V4[0], "dst": V4[1]}],
        "profile": {"l3": "ipv4", "frame_size": 64, "flows": 1024, "vary": ["src_ip"]},
        "load_pps": load, "duration_s": args.seconds, "warmup_s": 1.0, "drain_s": 0.1,
        "cpus": {"tx": [args.gen_cpu]},
    }
    sink = subprocess.Popen([str(FWDGEN), "sink", "--memif", str(sock), "--cpu",
                             str(args.sink_cpu), "--ring-size", str(args.ring),
                             "--connect-timeout", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        gen = subprocess.run([str(FWDGEN), "trial", "--spec", "-"],
                             input=json.dumps(spec), capture_output=True, text=True,
                             timeout=args.seconds + 60, check=False)
        out, err = sink.communicate(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.communicate()
    if gen.returncode != 0:
        raise RuntimeError(f"fwdgen memif failed: {gen.stderr.strip()}")
    if sink.returncode != 0:
        raise RuntimeError(f"fwdgen sink failed: {err.strip()}")
    doc = json.loads(gen.stdout)
    end = json.loads(out.splitlines()[-1])
    s = doc["streams"][0]
    full = sum(int(w.split()[1]) for w in doc["warnings"] if "RX ring full" in w)
    return {"offered": s["achieved_tx_pps"], "tx": s["tx_packets"],
            "counted": end["measured_frames"] / args.seconds,
            "sink_frames": end["measured_frames"], "ring_full": full,
            "exact": end["measured_frames"] == s["tx_packets"],
            "tx_limited": s["tx_limited"],
            # the receive side's cost, whatever share of its CPU it got
            # (its busy passes: a poller's CPU time is all the time it had)
            "sink_ns_per_frame": end["busy_s"] * 1e9 / end["frames"] if end["frames"] else None,
            "sink_wait": end["cpu_wait_s"] / end["connected_s"] if end["connected_s"] else None}


def napi_threads(lab: Lab) -> list[int]:
    p = subprocess.run(["pgrep", f"^napi/{lab.sif}-"], capture_output=True, text=True,
                       check=False)
    return [int(x) for x in p.stdout.split()]


def xdp_run(lab: Lab, tmp: Path, args) -> dict:
    spec = tmp / "spec-xdp.json"
    spec.write_text(json.dumps(fwdgen_spec(lab.gif, "xdp", args.seconds, args.gen_cpu)))
    argv = ["ip", "netns", "exec", lab.gen, str(FWDGEN), "trial", "--spec", str(spec)]
    napi = napi_threads(lab)
    before = [schedstat(t) for t in napi]
    t0 = time.monotonic()
    accepted, res = measure(lab, argv, 1.0, args.seconds)
    wall = time.monotonic() - t0
    after = [schedstat(t) for t in napi]
    if res["rc"] != 0:
        raise RuntimeError(f"fwdgen xdp failed: {res['err']}")
    s = json.loads(res["out"])["streams"][0]
    run = sum(a[0] - b[0] for a, b in zip(after, before))
    wait = sum(a[1] - b[1] for a, b in zip(after, before))
    return {"offered": s["achieved_tx_pps"], "accepted": accepted,
            "sink_ns_per_frame": run / (accepted * (wall - 0.5)) if accepted else None,
            "sink_wait": wait / 1e9 / wall if napi else None}


def ratio_ci(ratios: list[float]) -> tuple[float, float, float] | None:
    """Geometric mean of paired ratios and its 95 % CI (Student's t on the logs)."""
    if len(ratios) < 2 or min(ratios) <= 0:
        return None
    s = summarize([math.log(r) for r in ratios])
    return math.exp(s.mean), math.exp(s.ci_low), math.exp(s.ci_high)


def mpps(x: float) -> str:
    return f"{x / 1e6:6.3f}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def ns(rows: list[dict], key: str) -> str:
    vals = [r[key] for r in rows if r.get(key)]
    return f"{statistics.median(vals):.0f}" if vals else "-"


def interval(values: list[float]) -> str:
    s = summarize(values)
    if s.ci_low is None:
        return f"{mpps(s.mean)} (one round)"
    return f"{mpps(s.mean)} [{mpps(s.ci_low).strip()}-{mpps(s.ci_high).strip()}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="paired rounds")
    ap.add_argument("--seconds", type=float, default=3.0, help="measured time per run [s]")
    ap.add_argument("--load", type=parse_load, default=10e6, help="memif paced load [pps]")
    ap.add_argument("--ring", type=int, default=16384,
                    help="memif ring size [slots]: the largest, 1.6 ms at 10 Mpps, rides out "
                    "the sink's short absences")
    ap.add_argument("--gen-cpu", type=int, default=0, help="CPU of fwdgen's TX thread")
    ap.add_argument("--sink-cpu", type=int, default=1, help="CPU of the sinks")
    ap.add_argument("--json", help="also write the rounds to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("memif_sink: needs root (veth lab, BPF)", file=sys.stderr)
        return 2
    check = json.loads(subprocess.run([str(FWDGEN), "check"], capture_output=True,
                                      text=True, check=False).stdout or "{}")
    if not check.get("memif"):
        print(f"memif_sink: fwdgen has no memif: {check.get('errors', {}).get('memif')}",
              file=sys.stderr)
        return 2
    rounds = []
    lab = Lab(args.sink_cpu)
    try:
        lab.up()
        with tempfile.TemporaryDirectory(prefix="fb-memif-bench-") as td:
            tmp = Path(td)
            for r in range(args.rounds):
                row = {"pressure_before": pressure()}
                order = ("xdp", "memif") if r % 2 else ("memif", "xdp")
                for which in order:
                    if which == "xdp":
                        row["xdp"] = xdp_run(lab, tmp, args)
                    else:
                        row["memif_paced"] = memif_run(tmp, args.load, args)
                        row["memif_max"] = memif_run(tmp, "max", args)
                row["pressure_after"] = pressure()
                rounds.append(row)
                m, p, x = row["memif_max"], row["memif_paced"], row["xdp"]
                print(f"round {r + 1}: memif paced {mpps(p['offered'])} offered "
                      f"{mpps(p['counted'])} counted ({'exact' if p['exact'] else 'NOT exact'}"
                      f", ring full {p['ring_full']}, sink waited {pct(p['sink_wait'])}); "
                      f"memif max {mpps(m['counted'])} "
                      f"({'exact' if m['exact'] else 'NOT exact'}, sink waited "
                      f"{pct(m['sink_wait'])}); xdp {mpps(x['offered'])} offered "
                      f"{mpps(x['accepted'])} accepted (NAPI waited {pct(x['sink_wait'])}); "
                      f"ratio {m['counted'] / x['accepted']:.2f}; CPU pressure "
                      f"{row['pressure_before']}-{row['pressure_after']} %", flush=True)
    finally:
        lab.down()

    print(f"\n64 B UDP/IPv4, fwdgen TX on CPU {args.gen_cpu}, sinks on CPU {args.sink_cpu}, "
          f"{args.rounds} paired rounds of {args.seconds:g} s, Mpps: mean [95 % CI]")
    paced_off = [r["memif_paced"]["offered"] for r in rounds]
    paced_cnt = [r["memif_paced"]["counted"] for r in rounds]
    print(f"  memif paced at {args.load / 1e6:g} Mpps  offered  {interval(paced_off)}")
    print(f"  {'':25s} counted  {interval(paced_cnt)}  exact in "
          f"{sum(r['memif_paced']['exact'] for r in rounds)} of {len(rounds)} rounds")
    print(f"  memif as fast as possible counted  "
          f"{interval([r['memif_max']['counted'] for r in rounds])}  exact in "
          f"{sum(r['memif_max']['exact'] for r in rounds)} of {len(rounds)} rounds")
    print(f"  xdp on veth (max)         offered  "
          f"{interval([r['xdp']['offered'] for r in rounds])}")
    print(f"  {'':25s} accepted {interval([r['xdp']['accepted'] for r in rounds])}")
    print("  the receiving sink's CPU per frame [ns] (the memif sink's busy passes; the veth "
          "sink's NAPI kthread, which sleeps when idle) and the time it was runnable but "
          "waited for its CPU (other work), medians:")
    for name, rows in (("memif paced", [r["memif_paced"] for r in rounds]),
                       ("memif max", [r["memif_max"] for r in rounds]),
                       ("xdp on veth", [r["xdp"] for r in rounds])):
        waits = [x["sink_wait"] for x in rows if x["sink_wait"] is not None]
        print(f"    {name:12s} {ns(rows, 'sink_ns_per_frame'):>5s} ns/frame, waited "
              f"{pct(statistics.median(waits) if waits else None)}")
    ratios = [r["memif_max"]["counted"] / r["xdp"]["accepted"] for r in rounds]
    ci = ratio_ci(ratios)
    if ci:
        gm, lo, hi = ci
        print(f"  memif / xdp per round: {' '.join(f'{x:.2f}' for x in ratios)}; geometric "
              f"mean {gm:.2f}, 95 % CI [{lo:.2f}-{hi:.2f}] (target >= 1.5)")
    ok10 = [r["memif_paced"]["offered"] >= 0.995 * args.load and r["memif_paced"]["exact"]
            for r in rounds]
    print(f"  target: >= {args.load / 1e6:g} Mpps offered and counted exactly in "
          f"{sum(ok10)} of {len(rounds)} rounds; ratio >= 1.5 in "
          f"{sum(x >= 1.5 for x in ratios)} of {len(rounds)}")
    press = [p for r in rounds for p in (r["pressure_before"], r["pressure_after"])
             if p is not None]
    if press:
        print(f"  CPU pressure during the run (other work waiting for a CPU, avg10): "
              f"{min(press):.0f}-{max(press):.0f} %")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rounds,
                                               "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
