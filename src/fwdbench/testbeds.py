"""Testbeds: where a campaign's trials run.

``NetnsTestbed`` builds the local veth lab, configures each scenario's DUT
and runs each trial with fwdgen, reading DUT counters and meters around it.
``SimTestbed`` runs simulated DUTs (no root, no packets) for tests and demos.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .campaign import Campaign, Scenario
from .trial import TrialResult

Execute = Callable[[float, float, int, bool], TrialResult]
"""execute(duration_s [s], load_pps [pps], key, latency) -> TrialResult (duration first,
as ``measure``); ``key`` is a
stable index of the trial within its scenario (the same on a resumed run);
``latency`` asks for the low-rate latency stream beside the load."""


def counter_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """after - before for every numeric counter (nested dicts too)."""
    out: dict[str, Any] = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, dict) and isinstance(b, dict):
            out[k] = counter_delta(b, v)
        elif isinstance(v, (int, float)) and isinstance(b, (int, float)) \
                and not isinstance(v, bool):
            out[k] = v - b
    return out


#: fwdgen pacing period [us] when the DUT ports have the lab's ingress queue
INGRESS_BURST_PERIOD_US = 1000.0

class SimTestbed:
    """Simulated DUTs. FWDBENCH_SIM_DELAY=<s> makes each trial take that long
    (used by tests that interrupt a run in the middle)."""

    def __init__(self, campaign: Campaign):
        self.campaign = campaign
        self.delay = float(os.environ.get("FWDBENCH_SIM_DELAY", "0") or 0)

    def describe(self) -> dict:
        return {"testbed": "sim", "note": "simulated DUTs: no packets were forwarded"}

    @contextmanager
    def scenario(self, sc: Scenario) -> Iterator[tuple[Execute, dict]]:
        from .sim import SimDevice, SimParams

        params = SimParams.model_validate(sc.dut.params)
        device = SimDevice.from_params(params)

        def execute(duration_s: float, load_pps: float, key: int,
                    latency: bool = False) -> TrialResult:
            if self.delay:
                time.sleep(self.delay)
            # The sim draws trial i from rng([seed, i]); a stable i makes a resumed
            # run draw exactly what the uninterrupted run drew.
            device.trials_run = key
            return device.measure(duration_s, load_pps)

        yield execute, {"dut": "sim", **params.model_dump(mode="json")}


class NetnsTestbed:
    """The local lab: two namespaces joined by two veth pairs (design.md)."""

    def __init__(self, campaign: Campaign):
        self.campaign = campaign
        self.lab = None
        self.energy = None
        self.fwdgen = None

    def __enter__(self) -> "NetnsTestbed":
        from .lab import Lab, LabConfig
        from .traffic import fwdgen

        from .dut import load_drivers
        from .errors import LabError

        if os.geteuid() != 0:
            raise LabError("the netns testbed needs root (network namespaces, veth, XDP): "
                           "run with sudo, or use testbed.type = \"sim\" for simulated DUTs")
        tb = self.campaign.file.testbed
        self.fwdgen = fwdgen
        self.fwdgen_info = fwdgen.check()
        # Probe every DUT's tools before anything is built: no discovering mid-run
        # that something is missing.
        drivers = load_drivers()
        seen = set()
        for sc in self.campaign.scenarios:
            if sc.dut.name not in seen:
                seen.add(sc.dut.name)
                drivers[sc.dut.type](sc.dut.params).check()
        self.lab = Lab.up(LabConfig(gen_cpu=tb.gen_cpu, dut_cpu=tb.dut_cpu,
                                    kernel_tuning=tb.kernel_tuning,
                                    napi_rt_priority=tb.napi_rt_priority))
        try:
            self.energy = self._energy_session()
        except BaseException:
            self.lab.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.lab is not None:
            self.lab.down()
            self.lab = None

    def _energy_session(self):
        from .meters import EnergySession, parse_energy_settings

        session = EnergySession(parse_energy_settings(self.campaign.file.energy),
                                dut_cpus=[self.lab.dut_cpu], gen_cpus=[self.lab.gen_cpu])
        session.check()
        if session.wants_baseline:
            session.baseline()
        return session

    def describe(self) -> dict:
        d = dict(self.lab.describe())
        d["fwdgen"] = self.fwdgen_info
        if self.energy is not None:
            d["energy"] = self.energy.describe()
        return d

    @contextmanager
    def scenario(self, sc: Scenario) -> Iterator[tuple[Execute, dict]]:
        from .dut import load_drivers
        from .trialspec import build_spec

        driver = load_drivers()[sc.dut.type](sc.dut.params)
        driver.check()
        lab = self.lab
        try:
            qsize = self.campaign.file.testbed.dut_rx_queue
            mode = ("cpumap" if driver.kernel_stack else "afxdp" if driver.afxdp_rx
                    else "napi") if qsize else "napi"
            lab.set_dut_ingress(mode, qsize)
            driver.setup(lab)
            peer_macs = driver.peer_macs(lab)

            def execute(duration_s: float, load_pps: float, key: int,
                        latency: bool = False) -> TrialResult:
                # A latency trial at 0 % of the PDR has no background load: the
                # stream itself runs at the latency rate and is the latency stream.
                idle = load_pps == 0
                # Behind the deep ingress queue, coarser bursts free the generator's
                # CPU (contracts.md, burst_period_us); latency trials keep fwdgen's
                # fine default so every DUT's latency is measured with one pattern.
                period = INGRESS_BURST_PERIOD_US if lab.dut_ingress == "cpumap" and not latency else None
                # Idle latency: stamp frames as the DUT sends them (Lab.set_tg_rx);
                # under load the generator's CPU receives, as the load needs.
                lab.set_tg_rx("inline" if idle and latency else "napi")
                spec = build_spec(lab, sc.profile, sc.trial,
                                  sc.trial.latency_rate if idle else load_pps, duration_s,
                                  peer_macs=peer_macs, latency=latency and not idle,
                                  burst_period_us=period)
                before = driver.counters()
                pids = getattr(driver, "pids", lambda: [])()
                self.energy.start(pids=pids)
                timeout = duration_s + spec["warmup_s"] + spec["drain_s"] + 30
                try:
                    result = self.fwdgen.run_trial(spec, netns=lab.tg_ns, timeout=timeout)
                except BaseException:
                    self.energy.abort()
                    raise
                result.meters = self.energy.stop(pids=pids, packets=result.rx_packets,
                                                 window_s=duration_s)
                if idle:
                    result.intended_load_pps = 0.0
                    result.warnings.append(
                        f"no background load: the only stream ran at the latency rate "
                        f"({sc.trial.latency_rate:g} pps) and its latency is reported"
                        + ("; the generator's ports received inline on the DUT CPU "
                           "(RX stamped as the DUT sent)" if lab.tg_rx == "inline" else ""))
                result.dut_counters = counter_delta(before, driver.counters())
                return result

            # how this DUT's ports received (it differs per driver): for the report
            yield execute, {**driver.describe(), "lab_ingress": lab.ingress_record()}
        finally:
            driver.teardown()
