"""The one trial routine every testbed shares.

``execute(duration_s, load_pps, key, latency)`` for a scenario: read the
DUT driver's counters, start the meters, let the generator run the trial,
stop the meters, read the counters again, and return the ``TrialResult``
with the counter deltas and the meter readings. A testbed only supplies
its own per-trial arrangements through ``prepare`` (the netns lab's
generator receive mode and pacing granularity).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .errors import GeneratorError
from .trial import TrialResult
from .traffic.base import Generator, TrialRequest
from .units import parse_duration

Execute = Callable[[float, float, int, bool], TrialResult]
"""execute(duration_s [s], load_pps [pps], key, latency) -> TrialResult (duration first,
as ``measure``); ``key`` is a
stable index of the trial within its scenario (the same on a resumed run);
``latency`` asks for the low-rate latency stream beside the load."""


@dataclass
class Arrangement:
    """What a testbed changes for one trial: the request it hands the generator,
    and notes for the trial's warnings."""
    request: TrialRequest
    notes: list[str] = field(default_factory=list)


Prepare = Callable[[TrialRequest, bool, bool], Arrangement]
"""prepare(request, latency, idle) -> Arrangement; ``latency``: the search asked for a
latency trial; ``idle``: one without background load (the latency stream alone)."""


def counter_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """after - before for every numeric counter (nested dicts too); a counter that
    appeared during the trial (e.g. VPP's error counters show once non-zero)
    counts from 0."""
    out: dict[str, Any] = {}
    for k, v in after.items():
        b = before.get(k, {} if isinstance(v, dict) else 0)
        if isinstance(v, dict) and isinstance(b, dict):
            out[k] = counter_delta(b, v)
        elif isinstance(v, (int, float)) and isinstance(b, (int, float)) \
                and not isinstance(v, bool):
            out[k] = v - b
    return out


#: [s] a DUT's settle time below this is not worth a warm-up of its own
SETTLE_FLOOR_S = 0.01


def _settle(arr: Arrangement, driver, generator) -> tuple[Arrangement, str | None]:
    """Where the generator connects anew over memif each trial (fwdgen), a DUT that
    needs time after its link comes up (DutDriver.link_settle_s) gets it as warm-up:
    the trial's warm-up is raised to that, with a note."""
    if not arr.request.memif or not getattr(generator, "memif_per_trial", False):
        return arr, None
    settle = driver.link_settle_s()
    trial = arr.request.trial
    warmup = parse_duration(trial.warmup)
    if settle < SETTLE_FLOOR_S or settle <= warmup:
        return arr, None
    request = replace(arr.request, trial=trial.model_copy(update={"warmup": settle}))
    return replace(arr, request=request), (
        f"warm-up {settle:.2f} s instead of {warmup:g} s: the generator connects anew over "
        f"memif each trial, and the DUT needs that long after its link comes up "
        f"({driver.link_settle_why()})")


def make_execute(scenario, generator: Generator, driver, meters, peer_macs: dict[str, str],
                 prepare: Prepare | None = None) -> Execute:
    """The scenario's ``execute``: ``driver`` (configured), ``meters`` (an
    EnergySession, or None), ``peer_macs`` from the driver."""
    sc = scenario

    def execute(duration_s: float, load_pps: float, key: int,
                latency: bool = False) -> TrialResult:
        # A latency trial at 0 % of the PDR has no background load: the stream
        # itself runs at the latency rate and is the latency stream.
        idle = load_pps == 0
        request = TrialRequest(profile=sc.profile, trial=sc.trial,
                               load_pps=sc.trial.latency_rate if idle else load_pps,
                               duration_s=duration_s, latency=latency and not idle,
                               peer_macs=dict(peer_macs))
        arr = prepare(request, latency, idle) if prepare else Arrangement(request)
        arr, settled = _settle(arr, driver, generator)
        before = driver.counters()
        pids = driver.pids()
        if meters is not None:
            meters.start(pids=pids)
        recovered = None
        try:
            try:
                result = generator.run(arr.request)
            except GeneratorError as e:
                # a memif peer that stopped answering its control socket: the DUT may
                # restart its side, once, and the trial runs again (recover_link)
                recovered = driver.recover_link(str(e)) if arr.request.memif else None
                if recovered is None:
                    raise
                pids = driver.pids()        # the restarted DUT's processes
                if meters is not None:
                    meters.abort()
                    meters.start(pids=pids)
                before = driver.counters()
                result = generator.run(arr.request)
        except BaseException:
            if meters is not None:
                meters.abort()
            raise
        if recovered:
            result.warnings.append(recovered)
        if settled:
            result.warnings.append(settled)
        if meters is not None:
            result.meters = meters.stop(pids=pids, packets=result.rx_packets,
                                        window_s=duration_s)
        if idle:
            result.intended_load_pps = 0.0
            result.warnings.append(
                f"no background load: the only stream ran at the latency rate "
                f"({sc.trial.latency_rate:g} pps) and its latency is reported"
                + "".join(f"; {n}" for n in arr.notes))
        result.dut_counters = counter_delta(before, driver.counters())
        result.warnings += driver.take_warnings() + driver.trial_notes(result.dut_counters)
        return result

    return execute


__all__ = ["Arrangement", "Execute", "Prepare", "counter_delta", "make_execute"]
