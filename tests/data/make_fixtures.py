"""Regenerate the synthetic load-loss fixtures in this directory.

Curves follow PASTRAMI's equations (section IV-B): ideal (eq. 3), realistic
(small losses below saturation, constant throughput beyond it: eq. 4 with
f = 1) and trashing (eq. 4-5, stepwise-linear f). Each line of a PASTRAMI
file is ``[[rate_pps, rx_discards_at_start], [tx, rx, rx_discards], ...]``.
Run: ``.venv/bin/python tests/data/make_fixtures.py`` (deterministic).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DURATION_S = 10.0


def plr_ideal(o: float, sat: float) -> float:
    return 0.0 if o <= sat else 1.0 - sat / o


def plr_realistic(o: float, sat: float, plr_sat: float = 0.01, low: float = 1e-5,
                  onset: float = 0.2, shape: float = 6.0) -> float:
    if o < onset * sat:
        return 0.0
    if o <= sat:
        u = (o - onset * sat) / (sat - onset * sat)
        return low * (plr_sat / low) ** (u ** shape)
    return 1.0 - sat * (1.0 - plr_sat) / o


def plr_trashing(o: float, sat: float, o_t: float, k: float) -> float:
    if o <= sat:
        return 0.0
    f = 1.0 if o <= o_t else max(0.0, 1.0 - (o - o_t) / k)
    return 1.0 - sat * f / o


def runs(o: float, plr: float, n: int, rng: np.random.Generator, noisy: bool,
         sat: float) -> list[list[int]]:
    """Counts of n runs; below saturation a noisy curve's small losses vary
    from run to run (lognormal, sigma 0.5), beyond it only binomially."""
    tx = int(round(o * DURATION_S))
    out = []
    for _ in range(n):
        spread = noisy and plr > 0 and o < sat
        q = plr * float(np.exp(0.5 * rng.standard_normal() - 0.125)) if spread else plr
        lost = int(rng.binomial(tx, min(q, 1.0))) if noisy else int(round(tx * plr))
        out.append([tx, tx - lost, 0])
    return out


def write_pastrami(name: str, loads: list[float], plr_fn, n: int, seed: int, noisy: bool,
                   sat: float) -> None:
    rng = np.random.default_rng(seed)
    with open(HERE / name, "w") as fh:
        for o in loads:
            fh.write(json.dumps([[o, 0]] + runs(o, plr_fn(o), n, rng, noisy, sat)) + "\n")


def main() -> None:
    mpps = 1e6
    grid = [round(x * 0.1 * mpps) for x in range(1, 16)]           # 0.1 .. 1.5 Mpps
    # Ideal, saturation at 1 Mpps: GOOD under both rules.
    write_pastrami("pastrami_ideal.txt", grid, lambda o: plr_ideal(o, 1.0 * mpps), 5, 1, False,
                   1.0 * mpps)
    # Realistic, saturation 1.1 Mpps, 3 % loss there, slow rise (shape 1.5):
    # PLR passes 0.5 % at 1.0 Mpps while throughput still grows to 1.1 Mpps
    # (TIR about 0.75 at p), flat after: BAD by the paper's rule (saturation
    # enters one load late), GOOD by the published code (no entry test).
    sat = 1.1 * mpps
    write_pastrami("pastrami_realistic_rules_differ.txt", grid,
                   lambda o: plr_realistic(o, sat, plr_sat=0.03, shape=1.5), 10, 2, True, sat)
    # Realistic with losses past 0.5 % well before saturation (1.4 Mpps, 5 %
    # loss there, log-linear rise): BAD under both rules.
    sat = 1.4 * mpps
    write_pastrami("pastrami_realistic_early.txt", grid,
                   lambda o: plr_realistic(o, sat, plr_sat=0.05, shape=1.0), 10, 3, True, sat)
    # Trashing from 1.1 Mpps, K = 2 Mpps: GOOD under both rules.
    write_pastrami("pastrami_trashing.txt", grid,
                   lambda o: plr_trashing(o, 1.0 * mpps, 1.1 * mpps, 2.0 * mpps), 5, 4, False,
                   1.0 * mpps)
    # CSV: realistic with a steep rise at saturation 0.8 Mpps, 8 repetitions: GOOD.
    rng = np.random.default_rng(5)
    sat = 0.8 * mpps
    with open(HERE / "realistic.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["load", "repetition", "tx", "rx"])
        for o in grid:
            for r, (tx, rx, _) in enumerate(runs(o, plr_realistic(o, sat), 8, rng, True, sat)):
                w.writerow([o, r, tx, rx])

if __name__ == "__main__":
    main()
