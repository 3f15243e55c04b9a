#!/usr/bin/env python3
"""Peer benchmark: 64 B TX rate of fwdgen (xdp backend) against DPDK testpmd
txonly on net_af_xdp and an AF_PACKET sendmmsg loop, measured side by side in
the same run (the machine is shared, so only ratios within one run compare).
The AF_PACKET sendmmsg loop is fwdgen's afpacket backend (sendmmsg of 64
prebuilt frames, PACKET_QDISC_BYPASS); fwdgen's afxdp backend is listed too.

Topology: netns <p>-gen holds g0, netns <p>-sink holds s0 (a veth pair). s0
carries an XDP-drop sink (`fwdgen xdp-path --drop-all`) whose NAPI runs in a
kthread pinned to the other CPU; every peer sends from CPU --tx-cpu. The sink
counts what the veth accepted; the peers report what they offered.

    sudo .venv/bin/python bench/fwdgen_peers.py [--seconds 5] [--reps 3]

Needs root, native/build/fwdgen (make -C native); dpdk-testpmd is optional
(the row says "skipped" without it). Target (issue 3): fwdgen >= 5.0 Mpps,
>= 4x testpmd, >= 6x AF_PACKET.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FWDGEN = os.environ.get("FWDGEN", str(REPO / "native" / "build" / "fwdgen"))
G_MAC, S_MAC = "02:fb:00:00:00:10", "02:fb:00:00:01:10"


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


class Lab:
    def __init__(self, sink_cpu: int) -> None:
        tag = secrets.token_hex(3)
        self.prefix = "fb-t" + tag
        self.gen, self.sink = f"{self.prefix}-gen", f"{self.prefix}-sink"
        self.gif, self.sif = f"g{tag}", f"s{tag}"   # unique: napi thread names
        self.sink_cpu = sink_cpu
        self.sink_proc: subprocess.Popen | None = None

    def up(self) -> None:
        for ns in (self.gen, self.sink):
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "-n", self.gen, "link", "add", self.gif, "address", G_MAC, "type", "veth",
            "peer", "name", self.sif, "netns", self.sink, "address", S_MAC)
        run("ip", "-n", self.gen, "link", "set", self.gif, "up")
        run("ip", "-n", self.sink, "link", "set", self.sif, "up")
        self.sink_proc = subprocess.Popen(
            ["ip", "netns", "exec", self.sink, FWDGEN, "xdp-path", "--in", self.sif,
             "--drop-all"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.sink_proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"sink did not start: {self.sink_proc.stderr.read()}")
        # the sink's NAPI in a kthread on the other CPU
        run("ip", "netns", "exec", self.sink, "sh", "-c",
            f"echo 1 > /sys/class/net/{self.sif}/threaded")
        pinned = 0
        for pid in run("pgrep", f"^napi/{self.sif}-", check=False).stdout.split():
            if run("taskset", "-pc", str(self.sink_cpu), pid, check=False).returncode == 0:
                pinned += 1
        self.napi_threads = pinned

    def snapshot(self) -> dict:
        assert self.sink_proc is not None
        self.sink_proc.send_signal(signal.SIGUSR1)
        return json.loads(self.sink_proc.stdout.readline())

    def down(self) -> None:
        if self.sink_proc and self.sink_proc.poll() is None:
            self.sink_proc.send_signal(signal.SIGTERM)
            try:
                self.sink_proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.sink_proc.kill()
        for ns in (self.gen, self.sink):
            run("ip", "netns", "del", ns, check=False)


def perf_prefix(use_perf: bool, out: str) -> list[str]:
    if use_perf and shutil.which("perf"):
        return ["perf", "stat", "-x,", "-o", out, "-e", "task-clock,context-switches"]
    return []


def perf_task_ms(path: str) -> float | None:
    try:
        for line in Path(path).read_text().splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2] == "task-clock":
                return float(parts[0])
    except (OSError, ValueError):
        pass
    return None


def measure(lab: Lab, argv: list[str], warmup: float, seconds: float) -> tuple[float, dict]:
    """Start a sender, return (sink-accepted pps over the middle window, sender output)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(warmup + 0.3)
        a = lab.snapshot()
        time.sleep(max(seconds - 0.6, 0.5))
        b = lab.snapshot()
    finally:
        if proc.poll() is None and "dpdk-testpmd" in " ".join(argv):
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    accepted = (b["received"] - a["received"]) / ((b["t_ns"] - a["t_ns"]) / 1e9)
    return accepted, {"rc": proc.returncode, "out": out, "err": err}


def fwdgen_spec(gif: str, backend: str, seconds: float, cpu: int) -> dict:
    return {
        "ports": [{"ifname": gif, "peer_mac": S_MAC, "backend": backend}],
        "streams": [{"id": 0, "tx_port": 0, "rx_port": None, "src": "198.18.128.0/17",
                     "dst": "198.19.128.0/17"}],
        "profile": {"l3": "ipv4", "frame_size": 64, "flows": 1024, "vary": ["src_ip"]},
        "load_pps": "max", "duration_s": seconds, "warmup_s": 1.0, "drain_s": 0.1,
        "cpus": {"tx": [cpu]},
    }


def run_fwdgen(lab: Lab, backend: str, args, tmp: str) -> dict:
    spec = Path(tmp) / f"spec-{backend}.json"
    spec.write_text(json.dumps(fwdgen_spec(lab.gif, backend, args.seconds, args.tx_cpu)))
    perf_out = str(Path(tmp) / f"perf-{backend}.txt")
    argv = ["ip", "netns", "exec", lab.gen, *perf_prefix(args.perf, perf_out), FWDGEN, "trial",
            "--spec", str(spec)]
    accepted, res = measure(lab, argv, 1.0, args.seconds)
    if res["rc"] != 0:
        raise RuntimeError(f"fwdgen {backend} failed: {res['err']}")
    s = json.loads(res["out"])["streams"][0]
    cpu_ms = perf_task_ms(perf_out)
    return {"offered": s["achieved_tx_pps"], "accepted": accepted,
            "ns_per_pkt": cpu_ms * 1e6 / s["tx_packets"] if cpu_ms and s["tx_packets"] else None}


def run_testpmd(lab: Lab, args, tmp: str) -> dict | None:
    tp = shutil.which("dpdk-testpmd")
    if not tp:
        return None
    other = 1 - args.tx_cpu if args.tx_cpu in (0, 1) else 0
    perf_out = str(Path(tmp) / "perf-testpmd.txt")
    argv = ["ip", "netns", "exec", lab.gen, *perf_prefix(args.perf, perf_out), "timeout", "-s",
            "INT", str(args.seconds + 2), tp, "-l", f"{args.tx_cpu},{other}", "--main-lcore",
            str(other), "--no-huge", "-m", "1024", "--no-pci", "--file-prefix", lab.prefix,
            "--vdev", f"net_af_xdp0,iface={lab.gif}", "--", "--forward-mode=txonly", "--txpkts=60",
            "--auto-start", "--stats-period=1", "--nb-cores=1", f"--eth-peer=0,{S_MAC}"]
    accepted, res = measure(lab, argv, 2.0, args.seconds)
    rates = [int(x) for x in re.findall(r"Tx-pps:\s+(\d+)", res["out"])]
    if not rates:
        return {"offered": None, "accepted": accepted, "ns_per_pkt": None,
                "note": f"no Tx-pps in testpmd output (rc {res['rc']}): {res['err'][-300:]}"}
    steady = rates[2:-1] or rates
    return {"offered": statistics.mean(steady), "accepted": accepted, "ns_per_pkt": None}


def mpps(x: float | None) -> str:
    return "   -  " if x is None else f"{x / 1e6:6.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="measured time per run [s]")
    ap.add_argument("--reps", type=int, default=3, help="runs per peer (interleaved)")
    ap.add_argument("--tx-cpu", type=int, default=0, help="CPU of every sender")
    ap.add_argument("--sink-cpu", type=int, default=1, help="CPU of the sink's NAPI thread")
    ap.add_argument("--no-perf", dest="perf", action="store_false",
                    help="do not wrap senders in perf stat")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("fwdgen_peers: needs root (network namespaces, BPF)", file=sys.stderr)
        return 2
    if not os.access(FWDGEN, os.X_OK):
        print(f"fwdgen_peers: {FWDGEN} missing: run make -C native", file=sys.stderr)
        return 2
    lab = Lab(args.sink_cpu)
    results: dict[str, list[dict]] = {"fwdgen-xdp": [], "testpmd-af_xdp": [],
                                      "afpacket-sendmmsg": [], "fwdgen-afxdp": []}
    try:
        lab.up()
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.reps):
                results["fwdgen-xdp"].append(run_fwdgen(lab, "xdp", args, tmp))
                tp = run_testpmd(lab, args, tmp)
                if tp is not None:
                    results["testpmd-af_xdp"].append(tp)
                results["afpacket-sendmmsg"].append(run_fwdgen(lab, "afpacket", args, tmp))
                results["fwdgen-afxdp"].append(run_fwdgen(lab, "afxdp", args, tmp))
    finally:
        lab.down()

    def med(rows: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    base = med(results["fwdgen-xdp"], "accepted")
    base_off = med(results["fwdgen-xdp"], "offered")
    print(f"64 B frames, sender on CPU {args.tx_cpu}, XDP-drop sink NAPI on CPU "
          f"{args.sink_cpu} ({lab.napi_threads} napi thread(s) pinned); median of "
          f"{args.reps} x {args.seconds:g} s; Mpps. offered: what the sender reports; "
          f"accepted: what the sink counted (the sink's CPU can be the limit); ratios: "
          f"fwdgen / peer")
    print(f"{'peer':<20} {'offered':>8} {'accepted':>9} {'CPU ns/pkt':>11} "
          f"{'ratio acc.':>11} {'ratio off.':>11}  runs (accepted)")
    summary = {}
    for name, rows in results.items():
        if not rows:
            print(f"{name:<20} skipped (dpdk-testpmd not installed)")
            continue
        acc, off, ns = med(rows, "accepted"), med(rows, "offered"), med(rows, "ns_per_pkt")
        ratio = base / acc if base and acc else None
        ratio_off = base_off / off if base_off and off else None
        runs = " ".join(mpps(r["accepted"]).strip() for r in rows)
        print(f"{name:<20} {mpps(off):>8} {mpps(acc):>9} "
              f"{(f'{ns:.0f}' if ns else '-'):>11} {(f'{ratio:.2f}x' if ratio else '-'):>11} "
              f"{(f'{ratio_off:.2f}x' if ratio_off else '-'):>11}  {runs}")
        for r in rows:
            if r.get("note"):
                print(f"  note: {r['note']}")
        summary[name] = {"offered_pps": off, "accepted_pps": acc, "cpu_ns_per_pkt": ns,
                         "fwdgen_ratio_accepted": ratio, "fwdgen_ratio_offered": ratio_off,
                         "runs": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
