"""Time the analysis of a 4,800-trial campaign (the thesis's size).

The thesis matrix: 3 operations x 4 DUT configurations x 5 frame sizes = 60
load-loss curves, each at 4 rates x 20 repetitions = 80 trials: 4,800 trials.
Trials come from the simulated DUT (not timed). Timed: grouping the trials
into experiments, PLR statistics per load (mean, sample std, Student's t CI,
normalised uncertainty), PASTRAMI's verdict under both rules, forwarding-rate
statistics per load, and a Fieller/Welch comparison of each configuration
against the first one at every rate. Figures are timed separately (they are
report work, one per curve).

Run: .venv/bin/python bench/analysis_speed.py [--figures N]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from fwdbench.analysis import analyze_trials, compare, summarize
from fwdbench.sim import SimDevice

OPERATIONS = ("xconnect", "bridge", "router")
CONFIGS = (1, 2, 4, 8)                  # workers
FRAMES = (64, 128, 512, 1024, 1518)
RATES = (0.25, 0.5, 1.0, 1.5)           # fractions of the device capacity
REPS = 20
BUDGET_S = 2.0


def campaign() -> dict[str, list]:
    groups: dict[str, list] = {}
    seed = 0
    for op in OPERATIONS:
        for workers in CONFIGS:
            for frame in FRAMES:
                seed += 1
                cap = 1e6 * workers * (1.0 + 0.3 * OPERATIONS.index(op)) * 64 / frame ** 0.5 / 8
                model = ("realistic", "noisy", "trashing", "ideal")[seed % 4]
                dev = SimDevice(model, cap, seed=seed, frame_size=frame)
                trials = [dev.measure(10.0, r * cap) for r in RATES for _ in range(REPS)]
                groups[f"{op}/w{workers}/{frame}B"] = trials
    return groups


def analyse(groups: dict[str, list]) -> tuple[int, int]:
    verdicts = 0
    for rule in ("paper", "published-code"):
        results = analyze_trials(groups, rule)
        verdicts += len(results)
    # forwarding-rate statistics per scenario and rate
    fr: dict[tuple[str, float], list[float]] = {}
    for name, trials in groups.items():
        for t in trials:
            fr.setdefault((name, t.intended_load_pps), []).append(t.forwarding_rate_pps)
    summaries = {k: summarize(v) for k, v in fr.items()}
    # compare each configuration against 1 worker at the same op, frame and rate index
    comparisons = 0
    for op in OPERATIONS:
        for frame in FRAMES:
            base = groups[f"{op}/w1/{frame}B"]
            for workers in CONFIGS[1:]:
                other = groups[f"{op}/w{workers}/{frame}B"]
                for i in range(len(RATES)):
                    a = [t.forwarding_rate_pps for t in base[i * REPS:(i + 1) * REPS]]
                    b = [t.forwarding_rate_pps for t in other[i * REPS:(i + 1) * REPS]]
                    compare(a, b)
                    comparisons += 1
    return verdicts + len(summaries), comparisons


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", type=int, default=5, help="figures to time (0: none)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    groups = campaign()
    n = sum(len(v) for v in groups.values())
    gen_s = time.perf_counter() - t0
    analyse(groups)                               # warm caches (imports, t quantiles)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        items, comps = analyse(groups)
        runs.append(time.perf_counter() - t0)
    best, worst = min(runs), max(runs)
    print(f"campaign: {len(groups)} curves, {n} trials (simulated in {gen_s:.2f} s)")
    print(f"analysis: {items} verdicts and summaries, {comps} comparisons")
    print(f"analysis time over 5 runs: best {best:.3f} s, worst {worst:.3f} s "
          f"(budget {BUDGET_S:.1f} s): {'OK' if worst < BUDGET_S else 'OVER BUDGET'}")
    if args.figures:
        from fwdbench.analysis.figures import plot_curve
        results = analyze_trials(dict(list(groups.items())[:args.figures]))
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            for i, r in enumerate(results):
                plot_curve(r.curve, r.assessment, Path(d) / f"{i}.svg")
            per = (time.perf_counter() - t0) / len(results)
        print(f"figures: {per:.3f} s each (not part of the analysis budget; "
              f"{per * len(groups):.1f} s for all {len(groups)} curves)")
    return 0 if worst < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
