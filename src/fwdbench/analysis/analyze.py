"""Analysis of one load-loss experiment: curve statistics plus PASTRAMI's verdict."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from fwdbench.analysis.external import Experiment, experiment_from_trials
from fwdbench.analysis.pastrami import Assessment, LoadLossCurve, assess_curve
from fwdbench.trial import TrialResult


@dataclass(frozen=True)
class ExperimentAnalysis:
    source: str
    curve: LoadLossCurve
    assessment: Assessment
    warnings: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def max_norm_uncertainty(self) -> float | None:
        return self.curve.max_norm_uncertainty

    def to_json_dict(self) -> dict[str, object]:
        """The object ``fwdbench analyze --json`` prints for this experiment."""
        a = self.assessment
        return {"file": self.source, "pdr_0p5_pps": a.pdr_pps,
                "saturation_load_pps": a.saturation_load_pps, "verdict": a.verdict,
                "reason": a.reason, "rule": a.rule,
                "max_norm_uncertainty": self.max_norm_uncertainty}


def analyze_experiment(exp: Experiment, rule: str = "paper") -> ExperimentAnalysis:
    curve = exp.curve()
    return ExperimentAnalysis(exp.source, curve, assess_curve(curve, rule),
                              tuple(exp.warnings), tuple(exp.flags))


def analyze_trials(groups: Mapping[str, Iterable[TrialResult]],
                   rule: str = "paper") -> list[ExperimentAnalysis]:
    """Analyse many experiments of fwdbench trials (e.g. every scenario of a
    campaign's sweeps), keyed by a name such as the scenario id."""
    return [analyze_experiment(experiment_from_trials(name, trials), rule)
            for name, trials in groups.items()]
