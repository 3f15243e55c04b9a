"""How long does `fwdbench report` take for a 4,800-trial campaign? (target: < 30 s)

Builds a sample campaign from simulated DUTs (4 DUTs x 4 frame sizes = 16
scenarios, 10 repetitions of a 30-load sweep: 4,800 measured trials, each
with a latency histogram and CPU/energy readings), then times
``build_report`` on it, end to end: reading the store, statistics, every
figure as SVG and PDF, the HTML page and the CSV/Parquet exports.

    .venv/bin/python bench/report_speed.py [--keep DIR] [--jobs N]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 30.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="write the store and report here and keep them")
    ap.add_argument("--jobs", type=int, help="figure worker processes (default: CPUs)")
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--loads", type=int, default=30)
    args = ap.parse_args()
    if args.jobs:
        os.environ["FWDBENCH_REPORT_JOBS"] = str(args.jobs)

    from fwdbench.report import build_report, load_model
    from fwdbench.report.sample import DEFAULT_DUTS, SampleDut, build_sample_store

    base = args.keep or Path(tempfile.mkdtemp(prefix="fwdbench-report-speed-"))
    base.mkdir(parents=True, exist_ok=True)
    db = base / "speed.sqlite"
    duts = DEFAULT_DUTS + (SampleDut("vpp-4w", "realistic", 3.2e6, poll_mode=True),)
    if not db.exists():
        t0 = time.perf_counter()
        build_sample_store(db, duts=duts, frame_sizes=(64, 256, 512, 1518),
                           repetitions=args.repetitions, loads=args.loads,
                           trial_duration_s=1.0)
        print(f"built the sample store in {time.perf_counter() - t0:.1f} s: {db}")
    m = load_model(db)
    measured = sum(s.trials for s in m.scenarios)
    print(f"campaign: {len(m.scenarios)} scenarios, {measured} measured trials "
          f"(+{sum(s.warmup_trials for s in m.scenarios)} warm-up)")

    out = base / "out"
    t0 = time.perf_counter()
    c0 = time.process_time()
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    index = build_report(db, out)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = (k1.ru_utime - k0.ru_utime) + (k1.ru_stime - k0.ru_stime)
    figs = len(list((out / "figures").glob("*.svg")))
    size = index.stat().st_size / 1e6
    print(f"report: {index} ({size:.1f} MB, {figs} figures as SVG + PDF)")
    print(f"report generation: {wall:.1f} s wall (target < {TARGET_S:.0f} s); CPU: "
          f"{cpu:.1f} s main process + {kids:.1f} s figure workers")
    try:
        load = os.getloadavg()[0]
        print(f"load average (1 min) at the end: {load:.2f} on {os.cpu_count()} CPUs")
    except OSError:
        pass
    return 0 if wall < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
