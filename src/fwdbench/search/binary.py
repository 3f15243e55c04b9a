"""RFC 2544 binary search for NDR and PDR@x.

For each loss goal x (ascending, so NDR first) the search keeps a known-good
load ``lo`` (PLR <= x) and a known-bad load ``hi`` (PLR > x) and bisects
until (hi - lo) / hi <= relative_width. Trials already run for an earlier
goal seed the bracket of the next one (a trial good for NDR is good for every
PDR), so NDR and PDR share trials.

The first trial is at the maximum load. If it fails and
``forwarding_rate_hint`` is on, the next trial is at the load the failed
trial suggests, ``load * (1 - PLR) / (1 - x)`` (its forwarding rate, corrected
for the goal), and then one probe ``relative_width`` away from it on the
side the hint's result points to. On a device whose loss is sharp at
capacity this brackets the result to the goal width in two or three
trials; otherwise the probe just narrows the bracket and bisection goes on.
With the hint off it is the textbook bisection of [min_load, max_load].

Every decision depends only on the trial results, never on time.
"""
from __future__ import annotations

from fwdbench.goal import goal_label
from fwdbench.intent import TrialIntent
from fwdbench.search.result import GoalResult, SearchError, SearchResult, TrialLog
from fwdbench.search.settings import BinarySettings

_PROBE = 0.999   # probe this share of the goal width away, so the bracket lands inside it


def _fmt(load: float) -> str:
    return f"{load:.0f} pps"


class _Bracket:
    """lo/hi for one goal; ``lo is None`` means min_load has not been shown good."""

    def __init__(self, x: float, log: TrialLog, settings: BinarySettings, max_load: float) -> None:
        self.x = x
        self.log = log
        self.s = settings
        self.max_load = max_load
        self.min_load = settings.min_load_pps
        self.name = goal_label(x)
        self.lo: float | None = None
        self.hi: float | None = None
        self.hi_plr: float | None = None
        self.trials = 0
        # Seed from trials already run (for earlier goals); any duration counts.
        bad = [(t.load_pps, t.loss_ratio) for t in log.trials if t.used and t.loss_ratio > x]
        if bad:
            self.hi, self.hi_plr = min(bad)
        good = [t.load_pps for t in log.trials if t.used and t.loss_ratio <= x
                and (self.hi is None or t.load_pps < self.hi)]
        if good:
            self.lo = max(good)

    def good(self, plr: float) -> bool:
        return plr <= self.x

    def measure(self, load: float, step: str, why: str, duration: float | None = None) -> bool:
        if self.trials >= self.s.max_trials:
            raise _TooMany()
        self.trials += 1
        t = self.log.run(duration or self.s.trial_duration_s, load,
                         TrialIntent.search(step, f"binary {self.name}: {why}", self.x))
        ok = self.good(t.loss_ratio)
        if ok:
            if self.lo is None or load > self.lo:
                self.lo = load
        else:
            if self.hi is None or load < self.hi:
                self.hi, self.hi_plr = load, t.loss_ratio
            if self.lo is not None and self.lo >= load:
                # A load at or above lo failed (noise, or a failed verification):
                # fall back to the best good load below it.
                below = [u.load_pps for u in self.log.trials
                         if u.used and self.good(u.loss_ratio) and u.load_pps < load]
                self.lo = max(below) if below else None
        return ok

    def narrow(self) -> bool:
        lo = self.lo if self.lo is not None else self.min_load
        return self.hi is not None and (self.hi - lo) / self.hi <= self.s.relative_width


class _TooMany(Exception):
    pass


def _search_goal(b: _Bracket, result: SearchResult) -> GoalResult:
    s = b.s
    hint_used = False
    verifications = 0
    verified: bool | None = None
    try:
        while True:
            if b.hi is None:
                if b.lo is not None and b.lo >= b.max_load * (1 - 1e-12):
                    break                                   # max load passes
                b.measure(b.max_load, "first", "first trial at max load")
                continue
            if b.hi <= b.min_load * (1 + 1e-12):
                break                                       # even min load fails
            if not hint_used and s.forwarding_rate_hint and b.hi_plr is not None and b.hi_plr < 1.0:
                hint_used = True
                lo_eff = b.lo if b.lo is not None else b.min_load
                cand = b.hi * (1.0 - b.hi_plr) / (1.0 - b.x)
                if lo_eff < cand < b.hi and not b.narrow():
                    ok = b.measure(cand, "hint", f"forwarding-rate hint from the failed trial at {_fmt(b.hi)}")
                    if ok:
                        probe = cand / (1.0 - _PROBE * s.relative_width)
                        if probe < b.hi:
                            b.measure(probe, "probe", f"probe one goal width above the hint {_fmt(cand)}")
                    else:
                        probe = cand * (1.0 - _PROBE * s.relative_width)
                        if b.lo is None or probe > b.lo:
                            b.measure(max(probe, b.min_load), "probe",
                                      f"probe one goal width below the hint {_fmt(cand)}")
                    continue
            if b.narrow():
                if b.lo is None:
                    # The bracket reached min load without a good trial: try min load itself.
                    b.measure(b.min_load, "min-load", "check min load")
                    if b.lo is None:
                        break
                    continue
                if s.verify and verified is not True:
                    if verifications >= s.max_verifications:
                        verified = False
                        result.warnings.append(
                            f"binary {b.name}: {verifications} verification trials failed; "
                            f"reporting {_fmt(b.lo)} unverified. The DUT's loss depends on the "
                            "trial duration or is noisy: try longer trials or the mlr search.")
                        break
                    verifications += 1
                    ok = b.measure(b.lo, "verification", f"verification at {_fmt(b.lo)}",
                                   duration=s.verify_duration_s or s.trial_duration_s)
                    if ok:
                        verified = True
                        break
                    verified = None
                    continue
                break
            lo_eff = b.lo if b.lo is not None else b.min_load
            mid = (lo_eff + b.hi) / 2.0
            b.measure(mid, "bisect", f"bisect between {_fmt(lo_eff)} and {_fmt(b.hi)}")
    except _TooMany:
        result.warnings.append(
            f"binary {b.name}: stopped after max_trials={s.max_trials} trials without reaching "
            f"relative_width {s.relative_width}; the result is the bracket so far")
    width = None
    if b.lo is not None and b.hi is not None:
        width = (b.hi - b.lo) / b.hi
    if b.lo is None and b.hi is not None and b.hi <= b.min_load * (1 + 1e-12):
        result.warnings.append(
            f"binary {b.name}: even min_load_pps {_fmt(b.min_load)} fails the goal "
            f"(PLR > {b.x:g}); no {b.name} found. Lower min_load_pps or check the DUT.")
    reached = b.hi is None and b.lo is not None
    if reached:
        result.warnings.append(
            f"binary {b.name}: max load {_fmt(b.max_load)} passes; the DUT may be faster than "
            "the generator can show. Raise max load or report it as a lower bound.")
    return GoalResult(loss_ratio=b.x, load_pps=b.lo, upper_pps=b.hi, relative_width=width,
                      max_load_reached=reached, verified=verified if s.verify else None)


def run_binary(settings: BinarySettings, log: TrialLog) -> SearchResult:
    """Run the binary search for each loss goal; trials go through ``log``."""
    max_load = log.max_load_pps
    if settings.min_load_pps >= max_load:
        raise SearchError(f"binary: min_load_pps {settings.min_load_pps!r} is not below "
                          f"max load {max_load!r} pps")
    result = SearchResult(search="binary", max_load_pps=max_load,
                          settings=settings.model_dump())
    for x in settings.loss_ratios:
        result.goals.append(_search_goal(_Bracket(x, log, settings, max_load), result))
    return result
