"""Compare the binary and mlr searches on the simulated DUTs.

For each device model and seed, run each search and record the number of
trials, the total trial seconds (warm-ups included) and the NDR/PDR@0.5 %
found against the device's true values. Devices: capacity drawn per seed,
log-uniform in [0.5, 5] Mpps; max load 14.88 Mpps (10GbE line rate, 64 B).
The noisy device draws each trial's capacity with a 2 % CV; its true
NDR/PDR are those of its median capacity.

Searches compared:
- binary:   RFC 2544 bisection with the forwarding-rate hint, 1 s trials
            (MLRsearch's final trial duration), width 0.005
- binary-textbook: plain bisection of [min, max], 1 s trials
- mlr:      MLRsearch 1.2.1 with CSIT's defaults (1 s trials, 21 s duration
            sum, exceed ratio 0.5, width 0.005, 1 s warm-up)

Run: .venv/bin/python bench/search_compare.py [--seeds 50]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from fwdbench.search import BinarySettings, MlrSettings, run_search
from fwdbench.sim import SimDevice

MAX_LOAD = 14_880_952.0
SEARCHES = {
    "binary": BinarySettings(trial_duration_s=1.0),
    "binary-textbook": BinarySettings(trial_duration_s=1.0, forwarding_rate_hint=False),
    "mlr": MlrSettings(),
}
DEVICES = {
    "ideal": {},
    "noisy": {"noise_cv": 0.02},
    "realistic": {},
    "trashing": {},
}


def capacity(seed: int) -> float:
    rng = np.random.default_rng([12345, seed])
    return float(np.exp(rng.uniform(np.log(0.5e6), np.log(5e6))))


def run(model: str, name: str, seeds: int) -> dict[str, float]:
    trials, secs, e_ndr, e_pdr = [], [], [], []
    for seed in range(seeds):
        dev = SimDevice(model, capacity(seed), seed=seed, **DEVICES[model])
        r = run_search(SEARCHES[name], dev.measure, MAX_LOAD)
        trials.append(r.trial_count)
        secs.append(r.total_trial_s)
        e_ndr.append(r.ndr_pps / dev.true_ndr_pps() - 1.0)
        e_pdr.append(r.pdr_pps / dev.true_pdr_pps(0.005) - 1.0)
    a_ndr = np.abs(e_ndr) * 100
    a_pdr = np.abs(e_pdr) * 100
    return {"trials": statistics.mean(trials), "secs": statistics.mean(secs),
            "secs_max": max(secs),
            "ndr_mae": float(a_ndr.mean()), "ndr_max": float(a_ndr.max()),
            "ndr_bias": float(np.mean(e_ndr) * 100),
            "pdr_mae": float(a_pdr.mean()), "pdr_max": float(a_pdr.max()),
            "pdr_bias": float(np.mean(e_pdr) * 100)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"{args.seeds} seeds per device; errors are found/true - 1 in %, over seeds\n")
    head = (f"{'device':10s} {'search':16s} {'trials':>7s} {'trial s':>8s} {'max s':>6s} "
            f"{'NDR |err| mean':>14s} {'max':>6s} {'bias':>6s} "
            f"{'PDR |err| mean':>14s} {'max':>6s} {'bias':>6s}")
    print(head)
    print("-" * len(head))
    results = {}
    for model in DEVICES:
        for name in SEARCHES:
            r = run(model, name, args.seeds)
            results[(model, name)] = r
            print(f"{model:10s} {name:16s} {r['trials']:7.1f} {r['secs']:8.1f} {r['secs_max']:6.0f} "
                  f"{r['ndr_mae']:14.3f} {r['ndr_max']:6.2f} {r['ndr_bias']:+6.2f} "
                  f"{r['pdr_mae']:14.3f} {r['pdr_max']:6.2f} {r['pdr_bias']:+6.2f}")
        print()
    b, m = results[("ideal", "binary")], results[("ideal", "mlr")]
    ok = (b["ndr_max"] <= m["ndr_max"] and b["pdr_max"] <= m["pdr_max"]
          and b["secs_max"] <= m["secs"])
    print(f"ideal device: binary {'is' if ok else 'is NOT'} at least as accurate as mlr "
          f"(max |err| NDR {b['ndr_max']:.3f}% vs {m['ndr_max']:.3f}%, "
          f"PDR {b['pdr_max']:.3f}% vs {m['pdr_max']:.3f}%) at no more trial time "
          f"({b['secs_max']:.0f} s max vs {m['secs']:.1f} s mean)")
    print(f"(bench wall time {time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
