"""A sample campaign store from simulated DUTs (no root, no packets).

Used by the report's tests and its speed benchmark, and handy to look at the
report without a lab. Trials come from :class:`fwdbench.sim.SimDevice`
through the real searches (:func:`fwdbench.search.run_search`), and are
written with the real store API, exactly as the runner writes them.

Two additions the simulator does not make, both labelled in the store:
- a latency histogram (HdrHistogram, as fwdgen encodes it) drawn from the
  distribution the simulator's latency summary describes (a shifted
  exponential), so the latency CDFs have data;
- CPU and energy meter readings from a simple CPU model (energy source
  ``cpu-model``, ``measured: false``), so the CPU and energy section has
  data. Nothing here pretends to be measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..store import open_store
from ..trial import LatencySummary, TrialResult
from ..units import line_rate_pps

NOMINAL_HZ = 2.4e9                # sample host's nominal CPU frequency [Hz]
WATTS_PER_BUSY_CORE = 10.0        # cpu-model default [W]


@dataclass
class SampleDut:
    name: str
    model: str                    # sim model: ideal | realistic | trashing | noisy
    capacity_pps: float           # at 64 B frames [pps]
    poll_mode: bool = False       # busy at any load (DPDK, VPP) vs interrupt driven
    params: dict[str, Any] = field(default_factory=dict)


DEFAULT_DUTS = (
    SampleDut("vfwd", "realistic", 2.4e6, poll_mode=True),
    SampleDut("linux-router", "noisy", 1.1e6, params={"noise_cv": 0.03}),
    SampleDut("xdp-fwd", "trashing", 1.8e6),
)


def _hdr(lat: LatencySummary, rng: np.random.Generator, n: int = 4000) -> str:
    """An HdrHistogram (V2, compressed, base64) of the summary's distribution [ns]."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, 60_000_000_000, 3)
    spread = max(lat.mean_ns - lat.min_ns, 1.0)
    values = lat.min_ns + rng.exponential(spread, n)
    vals, counts = np.unique(np.maximum(values, 1).astype(np.int64), return_counts=True)
    scale = max(lat.samples, 1) / n
    for v, c in zip(vals.tolist(), counts.tolist()):
        h.record_value(v, max(1, int(round(c * scale))))
    return h.encode().decode("ascii")


def _meters(r: TrialResult, dut: SampleDut, capacity_pps: float) -> dict[str, Any]:
    """Modelled CPU and energy of one simulated trial."""
    rx_pps = r.rx_packets / r.duration_s if r.duration_s else 0.0
    util = 1.0 if dut.poll_mode else min(1.0, 0.03 + 0.97 * rx_pps / capacity_pps)
    busy_s = util * r.duration_s
    packets = max(r.rx_packets, 1)
    watts = WATTS_PER_BUSY_CORE * util
    joules = watts * r.duration_s
    return {
        "cpu": {"duration_s": r.duration_s, "dut_cpus": [1], "gen_cpus": [0],
                "dut": {"cpus": "1", "n": 1, "busy_cores": util, "utilisation": util,
                        "softirq_share": 0.0 if dut.poll_mode else 0.85, "irq_share": 0.02,
                        "steal": 0.0, "busy_s": busy_s},
                "cycles_per_packet_estimated": busy_s * NOMINAL_HZ / packets,
                "cycles_per_packet_basis": {"label": "estimated", "nominal_hz": NOMINAL_HZ},
                "notes": ["sample: CPU time modelled, not read from /proc/stat"]},
        "energy": {"source": "cpu-model", "measured": False, "label": "modelled",
                   "duration_s": r.duration_s, "joules": joules, "mean_watts": watts,
                   "packets_per_joule": packets / joules if joules else None,
                   "joules_per_mpkt": joules / (packets / 1e6),
                   "notes": ["sample: watts_per_busy_core x busy cores"]},
    }


def build_sample_store(path: Path | str, *, duts: tuple[SampleDut, ...] = DEFAULT_DUTS,
                       frame_sizes: tuple[int, ...] = (64, 512), repetitions: int = 3,
                       loads: int = 10, trial_duration_s: float = 1.0,
                       binary_dut: str | None = None, seed: int = 1,
                       question: str = "Which data plane forwards small frames fastest, "
                                       "and is PDR@0.5% a faithful summary for each?"
                       ) -> Path:
    """Write a finished sample campaign to ``path`` (which must not exist yet).

    Every DUT x frame size is a scenario with a load sweep of ``loads`` loads
    from 10 % to 150 % of its capacity; the DUT named ``binary_dut`` (if any)
    runs an RFC 2544 binary search with CSIT latency trials instead.
    """
    from ..intent import TrialIntent
    from ..runner import goals_for_store
    from ..search import run_search
    from ..search.settings import BinarySettings, LatencySettings, SweepSettings
    from ..sim import SimDevice

    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; the sample store is written to a new file")
    rng = np.random.default_rng(seed)
    store = open_store(path)
    line_rate = "10Gbps"
    config = {
        "campaign": {"name": "sample", "description": "Simulated DUTs (fwdbench.sim): "
                     "no packets were forwarded.", "question": question,
                     "repetitions": repetitions},
        "testbed": {"type": "sim", "gen_cpu": 0, "dut_cpu": 1, "line_rate": line_rate,
                    "max_load": None, "kernel_tuning": False},
        "trial": {"duration": f"{trial_duration_s:g}s", "warmup": "0.5s",
                  "warmup_trial": True, "drain": "0.2s", "latency_stream": True,
                  "latency_rate": 9000, "backend": "auto"},
        "dut": [{"name": d.name, "type": "sim", "params": {"model": d.model,
                 "capacity_pps": d.capacity_pps, **d.params}} for d in duts],
        "profile": [{"name": f"udp{fs}", "l3": "ipv4", "frame_size": fs, "flows": 1,
                     "vary": ["src_ip"], "port_pattern": "sequential", "direction": "uni"}
                    for fs in frame_sizes],
        "search": {"type": "sweep"}, "energy": {"meter": "cpu-model"}, "matrix": {},
    }
    text = "\n".join([
        "# sample campaign: simulated DUTs",
        "[campaign]", 'name = "sample"', f"question = {question!r}".replace("'", '"'),
        f"repetitions = {repetitions}", "", "[testbed]", 'type = "sim"', "",
        *[f'[[dut]]\nname = "{d.name}"\ntype = "sim"\nparams = {{ model = "{d.model}", '
          f'capacity_pps = {d.capacity_pps:g} }}\n' for d in duts],
        *[f'[[profile]]\nname = "udp{fs}"\nframe_size = {fs}\n' for fs in frame_sizes],
        '[search]', 'type = "sweep"', ""])
    cid = store.create_campaign(
        name="sample", source_path="sample.toml", config_text=text, config=config,
        host={"hostname": "sample", "kernel": "simulated", "cpu_model": "simulated",
              "nproc": 2, "gen_cpu": 0, "dut_cpu": 1, "virtualisation": "none (sim)"},
        tool_version=__version__)
    idx = 0
    for fs in frame_sizes:
        for di, d in enumerate(duts):
            # capacity falls with frame size only where the per-byte cost matters
            cap = d.capacity_pps * (64 / fs) ** 0.25
            max_pps = line_rate_pps(1e10, fs)
            cap = min(cap, 0.95 * max_pps)
            params = {"model": d.model, "capacity_pps": cap, "frame_size": fs,
                      "seed": seed * 1000 + idx, **d.params}
            if d.name == binary_dut:
                settings = BinarySettings(
                    loss_ratios=[0.0, 0.005], relative_width=0.01,
                    trial_duration_s=trial_duration_s, min_load_pps=0.05 * cap,
                    latency=LatencySettings(trial_duration_s=trial_duration_s))
            else:
                top = min(1.5 * cap, max_pps)
                grid = ([top * (0.1 + 0.9 * k / (loads - 1)) for k in range(loads)]
                        if loads > 1 else [0.5 * cap])      # one load: a fixed-rate test
                settings = SweepSettings(loads_pps=[float(int(x)) for x in grid],
                                         trial_duration_s=trial_duration_s)
            name = f"{d.name} udp{fs}"
            sid = store.add_scenario(
                cid, idx, name, d.name, "sim", params,
                {"name": f"udp{fs}", "l3": "ipv4", "frame_size": fs, "flows": 1,
                 "vary": ["src_ip"], "port_pattern": "sequential", "direction": "uni"},
                settings.model_dump(mode="json"), {"dut": d.name, "profile": f"udp{fs}"},
                max_pps)
            store.set_describe(sid, {"dut": "sim", "model": d.model,
                                     "capacity_pps": round(cap), "version": "sim 1"})
            device = SimDevice(d.model, cap, seed=seed * 1000 + idx, frame_size=fs,
                               **d.params)

            def run(rep: int, seq: int, intent: TrialIntent, dur: float,
                    load: float) -> TrialResult:
                tid = store.begin_trial(sid, rep, seq, intent, dur, load)
                r = device.measure(dur, load, intent)
                streams = []
                for st in r.streams:
                    lat = st.latency
                    if lat is not None:
                        lat = replace(lat, hdr=_hdr(lat, rng))
                    streams.append(replace(st, latency=lat))
                r.streams = streams
                r.meters = _meters(r, d, cap)
                store.finish_trial(tid, r)
                return r

            run(-1, -1, TrialIntent.warmup("warm-up trial after DUT setup (CSIT)"),
                max(0.5, trial_duration_s), 0.5 * cap)
            for rep in range(repetitions):
                seq = iter(range(1 << 30))

                def measure(duration_s: float, load_pps: float, intent: TrialIntent,
                            _rep: int = rep, _seq=seq) -> TrialResult:
                    return run(_rep, next(_seq), intent, duration_s, load_pps)

                result = run_search(settings, measure, max_pps)
                store.save_results(sid, rep, goals_for_store(result))
            idx += 1
    store.close()
    return path

