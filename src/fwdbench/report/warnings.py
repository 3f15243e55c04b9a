"""The report's warnings: what makes a number doubtful, and what to do next."""
from __future__ import annotations

from collections import defaultdict

from ..analysis.pastrami import NO_SATURATION_REASON
from .types import NU_WARN, STEAL_WARN, ReportModel, ReportWarning


def report_warnings(m: ReportModel) -> list[ReportWarning]:
    out: list[ReportWarning] = []
    for s in m.scenarios:
        if s.generator_limited:
            loads = sorted({p.load_pps for p in s.curve if p.generator_limited})
            where = (f" (offered loads from {loads[0] / 1e6:.3f} Mpps)" if loads else "")
            out.append(ReportWarning(
                "generator-limited", s.name,
                f"In {s.generator_limited} of {s.trials} trials the generator, not the DUT, "
                f"was the limit: it sent more than 0.5 % below the intended rate{where}.",
                "Their loss belongs to the tester. Lower testbed.max_load below the rate the "
                "generator reaches, or give the generator its own CPU."))
        if s.pastrami.verdict == "BAD" and s.pastrami.detail.startswith(NO_SATURATION_REASON):
            out.append(ReportWarning(
                "pastrami-bad", s.name,
                f"PASTRAMI verdict BAD: {s.pastrami.detail}",
                "Sweep loads past the point where the loss saturates (raise the highest "
                "load, or testbed.max_load), so the verdict can say whether PDR@0.5% "
                "summarises this DUT."))
        elif s.pastrami.verdict == "BAD":
            out.append(ReportWarning(
                "pastrami-bad", s.name,
                f"PASTRAMI verdict BAD: {s.pastrami.detail}",
                "PDR@0.5% alone misrepresents this DUT here; report the load-loss curve "
                "with it, or find the noise source (pinning, ring sizes, other load)."))
        for gr in s.goals.values():
            nu = gr.estimate.normalised_uncertainty
            if nu is not None and nu > NU_WARN:
                out.append(ReportWarning(
                    "uncertainty", s.name,
                    f"{gr.label}: normalised uncertainty {nu * 100:.1f} % "
                    f"(95 % CI half-width over {gr.estimate.n} repetitions) is above "
                    f"{NU_WARN * 100:.0f} %.",
                    "Run more repetitions or longer trials, and check for background load."))
            if gr.estimate.missing:
                out.append(ReportWarning(
                    "not-found", s.name,
                    f"{gr.label} was not found in {gr.estimate.missing} repetition(s): "
                    "even the lowest load lost more than the goal allows.",
                    "Lower the search's minimum load, or look at the DUT's configuration."))
        if s.max_steal is not None and s.max_steal > STEAL_WARN:
            out.append(ReportWarning(
                "steal", s.name,
                f"CPU steal time up to {s.max_steal * 100:.1f} %: the hypervisor took CPU "
                "time from this host during trials.",
                "Results from a shared VM are noisy; use dedicated cores or bare metal, "
                "or repeat the campaign at a quieter time."))
    reps = {len(s.repetitions) for s in m.scenarios if s.trials}
    if reps and max(reps) < 2:
        out.append(ReportWarning(
            "repetitions", None,
            "Every scenario ran once: there are no confidence intervals.",
            "Set campaign.repetitions to 5 or more (PASTRAMI uses 30-50)."))
    bad = {k: v for k, v in m.trial_counts.items() if k in ("failed", "interrupted") and v}
    if bad:
        out.append(ReportWarning(
            "trials", None,
            "Trials that did not finish: " + ", ".join(f"{v} {k}" for k, v in bad.items())
            + ". They are kept in the store and excluded from every number here.",
            "See the 'error' column of the trial table; 'fwdbench run --resume' reruns "
            "interrupted trials."))
    msgs: dict[str, int] = defaultdict(int)
    for row in m.trial_rows:
        for w in filter(None, (row["warnings"] or "").split("; ")):
            msgs[w] += 1
    for w, n in sorted(msgs.items(), key=lambda kv: -kv[1])[:10]:
        out.append(ReportWarning("trial", None, f"{n} trial(s) reported: {w}",
                                 "See the trial table (data/trials.csv) for which ones."))
    return out
