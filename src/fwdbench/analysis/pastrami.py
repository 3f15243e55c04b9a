"""PASTRAMI: is PDR@0.5% a faithful summary of this load-loss curve?

Implements methodology.md, "PASTRAMI: is PDR@0.5% representative here?":

1. past_PDR = first index whose mean PLR > 0.005. None, or the last index
   (the PDR is at or next to the highest load measured): no saturation in the
   measured range, which is BAD under both rules (below).
2. potential saturation index p = past_PDR + 1.
3. TIR[i+1] = (O[i+1](1-PLR[i+1]) - O[i](1-PLR[i])) / (O[i+1] - O[i]) for
   i >= past_PDR: the share of the added load that became throughput.
4. Walk from p: the curve enters saturation at the first index whose TIR is
   below the entry threshold 0.3 (3 x 0.1); it stays while TIR < 0.1; a
   TIR >= 0.1 leaves saturation and the walk goes on (entry is tested again
   from the next index). The actual saturation index is where the final
   saturated stretch began (None if the curve does not end saturated).
5. GOOD iff actual == potential; else BAD.

``rule="published-code"`` reproduces the labels of the authors' published
notebook, where the entry test is never applied (an operator-precedence
slip): the walk enters saturation at any index it tests for entry,
whatever the TIR. That labels more curves GOOD (a curve whose TIR at p is
0.3 or more but stays below 0.1 afterwards is GOOD there, BAD here).

No saturation in the measured range. The authors' code labels such a curve
BAD EXPERIMENT (its plot draws no saturation step and the GOOD/BAD flag is
false), so ``published-code`` says BAD. The paper's text has two labels: "the
experiment is deemed good if the saturation behavior starts at the potential
point and remains consistent thereafter" (section V-C); a curve whose loss
never saturates within the loads measured shows no such start, so it is not
good, which in the paper's two-way classification is BAD. ``paper`` follows
that too. Both give the reason "no saturation in the measured range"
(:data:`NO_SATURATION_REASON`, ``saturation_observed`` False) so the remedy,
extending the loads, is not lost (docs/analysis.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Literal, Sequence

import numpy as np

from fwdbench.analysis.stats import summarize_rows
from fwdbench.trial import TrialResult

PDR_LOSS_RATIO = 0.005        # PDR@0.5%
TIR_THRESHOLD = 0.1           # stay in saturation while TIR < this
ENTRY_FACTOR = 3.0            # enter saturation when TIR < ENTRY_FACTOR * TIR_THRESHOLD
PLR_LOG_FLOOR = 1e-6          # floor for log plots only
RULES = ("paper", "published-code")

Verdict = Literal["GOOD", "BAD"]
NO_SATURATION_REASON = "no saturation in the measured range"


@dataclass
class LoadLossCurve:
    """Offered loads (ascending) and the PLR of every repetition at each.

    ``flags`` lists data problems kept in the curve (e.g. rx > tx); the
    statistics are computed once, vectorised, on construction.
    """
    loads_pps: np.ndarray
    plr_runs: list[np.ndarray]
    name: str = ""
    flags: list[str] = field(default_factory=list)
    confidence: float = 0.95

    def __post_init__(self) -> None:
        self.loads_pps = np.asarray(self.loads_pps, dtype=float)
        if self.loads_pps.ndim != 1 or len(self.plr_runs) != self.loads_pps.size:
            raise ValueError(f"{self.loads_pps.size} loads but {len(self.plr_runs)} PLR groups")
        if self.loads_pps.size and np.any(np.diff(self.loads_pps) <= 0):
            raise ValueError("loads must be strictly ascending; sort and merge them first")
        self.plr_runs = [np.asarray(r, dtype=float) for r in self.plr_runs]
        s = summarize_rows(self.plr_runs, self.confidence) if self.plr_runs else {
            k: np.zeros(0) for k in ("n", "mean", "std", "ci_low", "ci_high", "norm_uncertainty")}
        self.n = s["n"]
        self.plr_mean = s["mean"]
        self.plr_std = s["std"]
        self.plr_ci_low = s["ci_low"]
        self.plr_ci_high = s["ci_high"]
        self.plr_norm_uncertainty = s["norm_uncertainty"]

    @property
    def dr_mean(self) -> np.ndarray:
        """Mean delivery ratio DR = 1 - PLR per load."""
        return 1.0 - self.plr_mean

    @property
    def throughput_pps(self) -> np.ndarray:
        """O (1 - mean PLR) per load [pps]."""
        return self.loads_pps * (1.0 - self.plr_mean)

    @property
    def repetitions(self) -> int:
        return int(self.n.min()) if self.n.size else 0

    @property
    def max_norm_uncertainty(self) -> float | None:
        """Worst normalised uncertainty of the mean PLR over loads (None if no
        load has 2 or more repetitions). Loads with no loss in any repetition
        count as 0; a load with tiny, rare losses reaches the cap of 2."""
        v = self.plr_norm_uncertainty
        v = v[~np.isnan(v)] if v.size else v
        return float(v.max()) if v.size else None

    @classmethod
    def from_counts(cls, loads_pps: Sequence[float], tx: Sequence[Sequence[int]],
                    rx: Sequence[Sequence[int]], name: str = "") -> "LoadLossCurve":
        """PLR = (tx - rx) / tx per repetition (tx is the intended count). A run that
        was to send nothing measured nothing: it counts as total loss (PLR 1)."""
        runs = []
        for t, r in zip(tx, rx):
            t_a = np.asarray(t, dtype=float)
            r_a = np.asarray(r, dtype=float)
            with np.errstate(invalid="ignore", divide="ignore"):
                runs.append(np.where(t_a > 0, (t_a - r_a) / t_a, 1.0))
        return cls(np.asarray(loads_pps, dtype=float), runs, name)

    @classmethod
    def from_trials(cls, trials: Iterable[TrialResult], name: str = "") -> "LoadLossCurve":
        """Group trials by intended load (per stream) and use their PLR."""
        groups: dict[float, list[float]] = {}
        for t in trials:
            groups.setdefault(float(t.intended_load_pps), []).append(t.loss_ratio)
        loads = sorted(groups)
        return cls(np.asarray(loads), [np.asarray(groups[x]) for x in loads], name)


@dataclass(frozen=True)
class Assessment:
    """PASTRAMI's verdict on one curve."""
    verdict: Verdict
    rule: str
    past_pdr_index: int | None
    potential_index: int | None
    actual_index: int | None
    pdr_pps: float | None              # PDR@0.5%: the load before past_PDR [pps]
    saturation_load_pps: float | None  # O[actual] [pps]
    tir: np.ndarray                    # TIR per index; NaN where not defined (i <= past_PDR)
    explanation: str
    saturation_observed: bool = True   # False: the loss never saturates in the loads measured

    @property
    def reason(self) -> str | None:
        """Why a BAD curve is BAD in a few words, where one phrase says it."""
        return None if self.saturation_observed else NO_SATURATION_REASON

    @property
    def label(self) -> str:
        return self.verdict if self.saturation_observed else f"{self.verdict} ({self.reason})"

    def to_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "label": self.label, "rule": self.rule,
                "reason": self.reason, "saturation_observed": self.saturation_observed,
                "past_pdr_index": self.past_pdr_index, "potential_index": self.potential_index,
                "actual_index": self.actual_index, "pdr_pps": self.pdr_pps,
                "saturation_load_pps": self.saturation_load_pps,
                "tir": [None if np.isnan(x) else float(x) for x in self.tir],
                "explanation": self.explanation}


def tir(loads_pps: Sequence[float], plr: Sequence[float]) -> np.ndarray:
    """Throughput increase ratio between consecutive loads; element i is
    TIR[i] = (O[i](1-PLR[i]) - O[i-1](1-PLR[i-1])) / (O[i] - O[i-1]), element 0 NaN."""
    o = np.asarray(loads_pps, dtype=float)
    p = np.asarray(plr, dtype=float)
    out = np.full(o.size, np.nan)
    if o.size >= 2:
        thr = o * (1.0 - p)
        out[1:] = np.diff(thr) / np.diff(o)
    return out


def assess(loads_pps: Sequence[float], plr: Sequence[float], rule: str = "paper", *,
           pdr_loss_ratio: float = PDR_LOSS_RATIO, tir_threshold: float = TIR_THRESHOLD,
           entry_factor: float = ENTRY_FACTOR) -> Assessment:
    """PASTRAMI's GOOD/BAD verdict on an ascending curve of mean PLR per load."""
    if rule not in RULES:
        raise ValueError(f"rule {rule!r} is not one of {', '.join(RULES)}")
    o = np.asarray(loads_pps, dtype=float)
    p = np.asarray(plr, dtype=float)
    n = o.size
    nan = np.full(n, np.nan)
    over = np.nonzero(p > pdr_loss_ratio)[0]
    if over.size == 0:
        return Assessment("BAD", rule, None, None, None,
                          float(o[-1]) if n else None, None, nan,
                          f"{NO_SATURATION_REASON}: PLR never exceeds {pdr_loss_ratio:g}, so "
                          "PDR is at least the highest load tested; extend the loads",
                          saturation_observed=False)
    past = int(over[0])
    pdr = float(o[past - 1]) if past >= 1 else None
    if past == n - 1:
        return Assessment("BAD", rule, past, None, None, pdr, None, nan,
                          f"{NO_SATURATION_REASON}: PLR exceeds {pdr_loss_ratio:g} only at the "
                          "highest load tested (PDR next to it); extend the loads",
                          saturation_observed=False)
    pot = past + 1
    t_all = tir(o, p)
    t = np.full(n, np.nan)
    t[pot:] = t_all[pot:]
    entry = entry_factor * tir_threshold
    saturated = False
    start: int | None = None
    for i in range(pot, n):
        if not saturated:
            if rule == "published-code" or t[i] < entry:
                saturated, start = True, i
        elif t[i] >= tir_threshold:
            saturated, start = False, None
    actual = start if saturated else None
    sat_load = float(o[actual]) if actual is not None else None
    if actual == pot:
        verdict: Verdict = "GOOD"
        why = (f"saturation starts right after PDR@{pdr_loss_ratio * 100:g}% "
               f"(index {pot}) and holds to the end: PDR is a faithful summary")
    elif actual is None:
        verdict = "BAD"
        why = ("the curve does not end in saturation (throughput keeps rising "
               f"past PDR@{pdr_loss_ratio * 100:g}%): PDR understates this DUT")
    else:
        verdict = "BAD"
        why = (f"saturation starts at index {actual}, not right after PDR (index {pot}): "
               "the DUT loses packets well before it saturates")
    if pdr is None:
        why += f"; PLR already exceeds {pdr_loss_ratio:g} at the lowest load, so PDR is below it"
    return Assessment(verdict, rule, past, pot, actual, pdr, sat_load, t, why)


def assess_curve(curve: LoadLossCurve, rule: str = "paper") -> Assessment:
    return assess(curve.loads_pps, curve.plr_mean, rule)
