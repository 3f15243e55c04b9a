#!/usr/bin/env python3
"""Time the lab and the linux DUT's configuration (issue 2 targets).

    sudo .venv/bin/python bench/lab_setup.py [--reps 5] [--routes 1048576] [--json]

Measures [s]: lab up, linux router configured (routes=2), lab down (each
``--reps`` times; median and max), then one install and removal of a FIB of
``--routes`` IPv4 routes. Targets: lab up + router < 2 s; 2^20 routes < 60 s.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fwdbench.dut.linux import LinuxDut  # noqa: E402
from fwdbench.lab import Lab, LabConfig  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--reps", type=int, default=5, help="lab up/down repetitions")
    ap.add_argument("--routes", type=int, default=1 << 20, help="FIB size for the bulk install")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("lab_setup: needs root (network namespaces)", file=sys.stderr)
        return 2
    cpus = sorted(os.sched_getaffinity(0))
    cfg = LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1])
    up, router, total, down = [], [], [], []
    steps: dict[str, list[float]] = {}
    for _ in range(a.reps):
        t0 = time.perf_counter()
        lab = Lab.up(cfg)
        t1 = time.perf_counter()
        d = LinuxDut({"mode": "router"})
        lab.set_dut_ingress("cpumap", 4096)     # as the testbed does for kernel DUTs
        d.setup(lab.dut_host())
        t2 = time.perf_counter()
        d.teardown()
        t3 = time.perf_counter()
        lab.down()
        t4 = time.perf_counter()
        up.append(t1 - t0)
        router.append(t2 - t1)
        total.append(t2 - t0)
        down.append(t4 - t3)
        for k, v in lab.timings.items():
            steps.setdefault(k, []).append(v)
    with Lab.up(cfg) as lab:
        d = LinuxDut({"mode": "router", "routes": a.routes, "routes6": 2})
        t0 = time.perf_counter()
        d.setup(lab.dut_host())
        t_install = time.perf_counter() - t0
        n = lab.dut_exec.run(["ip", "-4", "route", "show", "proto", "251"]).stdout.count("\n")
        t0 = time.perf_counter()
        d.teardown()
        t_remove = time.perf_counter() - t0
        t0 = time.perf_counter()
    t_down_big = time.perf_counter() - t0

    def stat(xs):
        return {"median_s": round(statistics.median(xs), 4), "max_s": round(max(xs), 4)}
    res = {
        "kernel": os.uname().release, "reps": a.reps,
        "lab_up": stat(up), "router_config": stat(router), "lab_up_plus_router": stat(total),
        "lab_down": stat(down), "lab_up_steps": {k: stat(v) for k, v in steps.items()},
        "fib": {"routes": a.routes, "installed": n, "install_s": round(t_install, 2),
                "remove_s": round(t_remove, 2), "lab_down_after_s": round(t_down_big, 3)},
        "targets": {"lab_up_plus_router_lt_2s": max(total) < 2.0,
                    "routes_2_20_lt_60s": t_install < 60.0},
    }
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"kernel {res['kernel']}, {a.reps} repetitions (median / max) [s]")
    for k in ("lab_up", "router_config", "lab_up_plus_router", "lab_down"):
        print(f"  {k:<20} {res[k]['median_s']:8.4f} {res[k]['max_s']:8.4f}")
    for k, v in res["lab_up_steps"].items():
        print(f"    up: {k:<14} {v['median_s']:8.4f} {v['max_s']:8.4f}")
    f = res["fib"]
    print(f"  FIB {f['routes']} IPv4 routes: installed {f['installed']} in {f['install_s']} s, "
          f"removed in {f['remove_s']} s")
    print(f"  targets met: {res['targets']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
