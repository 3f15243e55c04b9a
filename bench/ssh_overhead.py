#!/usr/bin/env python3
"""What a command on the DUT host costs over SSH, beside the same on the netns lab.

    sudo .venv/bin/python bench/ssh_overhead.py [--rounds 8] [--per-round 25] [--json]

On the test rig (tests/sshrig.py: sshd in a "DUT host" namespace of this
machine), in paired rounds, each round measuring both peers the same number
of times [ms per call, median of the round]:

- ``run(true)``: one command; RemoteExecutor over the run's ControlMaster
  against the lab's Executor (``ip netns exec`` into the DUT namespace);
- ``read_files``: /proc/stat and /proc/uptime (a CPU-meter snapshot);
- ``interface counters``: the DUT ports' counters (SshDutHost reads sysfs with
  one command; the lab reads IFLA_STATS64 over netlink, no process).

Prints the medians over rounds and the ratio ssh/lab with a 95 % interval of
the per-round log ratios (Student's t). On one machine the network hop is a
veth: a real management network adds its round-trip time to every call.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from fwdbench.analysis.stats import summarize  # noqa: E402
from fwdbench.lab import Lab, LabConfig  # noqa: E402
from fwdbench.lab.netlink import in_netns  # noqa: E402
from fwdbench.remote import RemoteExecutor, SshConnection, SshTarget  # noqa: E402


def per_call(fn, n: int) -> float:
    """Median [ms] of ``n`` calls."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--per-round", type=int, default=25)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("ssh_overhead: needs root (namespaces, sshd)", file=sys.stderr)
        return 2
    from sshrig import SshRig, available
    why = available()
    if why:
        print(f"ssh_overhead: {why}", file=sys.stderr)
        return 2
    from fwdbench.testbed.ssh_host import SshDutHost
    from fwdbench.lab.addressing import PORTS
    from dataclasses import replace

    rig = SshRig().up()
    cpus = sorted(os.sched_getaffinity(0))
    lab = Lab.up(LabConfig(gen_cpu=cpus[0], dut_cpu=cpus[-1]))
    try:
        with in_netns(rig.tg_ns):
            conn = SshConnection(SshTarget("dut-rig", config=str(rig.dir / "ssh_config"))).open()
        ex = RemoteExecutor(conn, sudo=False)
        ports = tuple(replace(p, dut=replace(p.dut, ifname=f"rd{i}"),
                              tg=replace(p.tg, ifname=f"rt{i}")) for i, p in enumerate(PORTS))
        host = SshDutHost(ex, ports, (1,), True, "fb-bench", str(rig.workdir), {}, "")
        lab_host = lab.dut_host()
        peers = {
            "run(true)": (lambda: ex.run(["true"]), lambda: lab.dut_exec.run(["true"])),
            "read_files": (lambda: ex.read_files(["/proc/stat", "/proc/uptime"]),
                           lambda: lab.dut_exec.read_files(["/proc/stat", "/proc/uptime"])),
            "interface counters": (host.interface_counters, lab_host.interface_counters),
        }
        rows = {k: {"ssh": [], "lab": []} for k in peers}
        for r in range(a.rounds):
            for name, (s, l) in peers.items():
                order = [("ssh", s), ("lab", l)] if r % 2 == 0 else [("lab", l), ("ssh", s)]
                for who, fn in order:
                    rows[name][who].append(per_call(fn, a.per_round))
        conn.close()
    finally:
        lab.down()
        rig.down()
    out = {}
    for name, d in rows.items():
        logs = [math.log(s / l) for s, l in zip(d["ssh"], d["lab"])]
        st = summarize(logs)
        out[name] = {"ssh_ms": statistics.median(d["ssh"]), "lab_ms": statistics.median(d["lab"]),
                     "ratio": math.exp(st.mean),
                     "ratio_ci95": [math.exp(st.ci_low), math.exp(st.ci_high)]
                     if st.ci_low is not None else None,
                     "rounds": a.rounds, "per_round": a.per_round}
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'per call [ms]':22} {'ssh':>8} {'netns lab':>10} {'ssh/lab':>8}  95 % CI")
    for name, o in out.items():
        ci = o["ratio_ci95"]
        print(f"{name:22} {o['ssh_ms']:8.2f} {o['lab_ms']:10.2f} {o['ratio']:8.1f}  "
              + (f"[{ci[0]:.1f}-{ci[1]:.1f}]" if ci else "-"))
    print(f"({a.rounds} paired rounds of {a.per_round} calls each, alternating order)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
