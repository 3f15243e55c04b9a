"""Wrapper of the native generator `fwdgen` (native/fwdgen, docs/contracts.md 1-2).

`run_trial(spec, netns, timeout)` runs ``ip netns exec NS fwdgen trial --spec -``
(an argv list, the spec on stdin) and turns its JSON result into a
`fwdbench.trial.TrialResult`; `parse_result` does the same for a recorded
result, and `check()` probes the binary and the kernel before a campaign.
"""
from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from fwdbench import native
from fwdbench.errors import CampaignError, GeneratorError
from fwdbench.trial import LatencySummary, StreamResult, TrialResult
from fwdbench.traffic.base import Generator, TrialRequest

EXIT_OK = 0
EXIT_BAD_INPUT = 2   # the spec was wrong; stderr names the field
EXIT_RUNTIME = 3     # a backend failed at run time


def find_binary() -> str:
    """Locate fwdgen: $FWDGEN, else the native build dir (native/build of this
    checkout or $FWDBENCH_NATIVE_BUILD, as for fwdbench's other programs), else PATH."""
    env = os.environ.get("FWDGEN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise GeneratorError(f"FWDGEN={env} is not an executable file")
        return env
    p = native.tool("fwdgen")
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    raise GeneratorError(
        f"fwdgen not found in {native.build_dir()} or on $PATH: build it with "
        f"`make -C native`, or set FWDGEN=/path/to/fwdgen")


def _netns_argv(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def check(netns: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """Probe fwdgen and the kernel: returns {"fwdgen_version", "xdp", "afpacket", "errors"}.

    Raises GeneratorError if the binary is missing or no backend works here.
    """
    binary = find_binary()
    argv = _netns_argv(netns) + [binary, "check"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GeneratorError(f"fwdgen check failed: {exc}") from exc
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise GeneratorError(
            f"fwdgen check printed no JSON (exit {proc.returncode}): {proc.stderr.strip()}"
        ) from exc
    if proc.returncode != EXIT_OK:
        raise GeneratorError(
            f"fwdgen has no working backend here: {info.get('errors')}; run as root "
            "(CAP_BPF, CAP_NET_RAW, CAP_NET_ADMIN)")
    return info


def _latency(doc: dict[str, Any] | None) -> LatencySummary | None:
    if not doc:
        return None
    return LatencySummary(
        samples=int(doc["samples"]),
        min_ns=float(doc["min_ns"]),
        mean_ns=float(doc["mean_ns"]),
        p50_ns=float(doc["p50_ns"]),
        p90_ns=float(doc["p90_ns"]),
        p99_ns=float(doc["p99_ns"]),
        p999_ns=float(doc["p999_ns"]),
        max_ns=float(doc["max_ns"]),
        jitter_ns=float(doc["jitter_ns"]),
        hdr=doc.get("hdr"),
    )


def parse_result(doc: dict[str, Any], spec: dict[str, Any]) -> TrialResult:
    """Build a TrialResult from fwdgen's JSON result and the spec that produced it."""
    if not isinstance(doc, dict) or not doc.get("ok"):
        raise GeneratorError(f"fwdgen result is not ok: {str(doc)[:200]}")
    try:
        streams = []
        for s in doc["streams"]:
            streams.append(StreamResult(
                stream_id=int(s["id"]),
                tx_port=str(s["tx_port"]),
                rx_port=s["rx_port"] or "",          # null: a send-only stream
                intended_pps=float(s["intended_pps"]),
                intended_packets=int(s["intended_packets"]),
                tx_packets=int(s["tx_packets"]),
                tx_bytes=int(s["tx_bytes"]),
                rx_packets=int(s["rx_packets"]),
                rx_bytes=int(s["rx_bytes"]),
                reordered=int(s["reordered"]),
                duplicated=int(s["duplicated"]),
                achieved_tx_pps=float(s["achieved_tx_pps"]),
                tx_limited=bool(s["tx_limited"]),
                latency=_latency(s.get("latency")),
            ))
        backends = sorted(set(doc["backends"].values()))
        load = spec.get("load_pps")
        return TrialResult(
            intended_load_pps=float(load) if isinstance(load, (int, float)) else
            (streams[0].intended_pps if streams else 0.0),
            duration_s=float(doc["duration_s"]),
            streams=streams,
            backend="fwdgen-" + "+".join(backends),
            warmup_s=float(doc.get("warmup_s", 0.0)),
            raw=doc,
            warnings=list(doc.get("warnings", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise GeneratorError(f"fwdgen result is malformed ({exc!r}): {str(doc)[:200]}") from exc


def run_trial(spec: dict[str, Any], netns: str | None = None,
              timeout: float | None = None) -> TrialResult:
    """Run one trial; raises CampaignError for a bad spec, GeneratorError otherwise."""
    binary = find_binary()
    if timeout is None:
        timeout = (float(spec.get("warmup_s", 0)) + float(spec.get("duration_s", 0))
                   + float(spec.get("drain_s", 0.2)) + 30.0)
    argv = _netns_argv(netns) + [binary, "trial", "--spec", "-"]
    try:
        proc = subprocess.run(argv, input=json.dumps(spec), capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise GeneratorError(f"fwdgen trial did not finish within {timeout:.0f} s") from exc
    except OSError as exc:
        raise GeneratorError(f"cannot run {argv[0]}: {exc}") from exc
    message = proc.stderr.strip() or f"fwdgen exited with {proc.returncode}"
    if proc.returncode == EXIT_BAD_INPUT:
        raise CampaignError(message)
    if proc.returncode != EXIT_OK:
        raise GeneratorError(message)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise GeneratorError(f"fwdgen printed no JSON result: {proc.stdout[:200]!r}") from exc
    return parse_result(doc, spec)


class Fwdgen:
    """A generator bound to a namespace: `measure(duration_s, load_pps, intent)` for
    searches (fwdbench.search.result.Measure; the intent is not the generator's business)."""

    def __init__(self, spec_template: dict[str, Any], netns: str | None = None):
        self.spec_template = spec_template
        self.netns = netns

    def check(self) -> dict[str, Any]:
        return check(self.netns)

    def measure(self, duration_s: float, load_pps: float, intent: object = None) -> TrialResult:
        spec = dict(self.spec_template, duration_s=float(duration_s), load_pps=float(load_pps))
        return run_trial(spec, self.netns)


class FwdgenGenerator(Generator):
    """``[generator] type = "fwdgen"`` (the default): fwdbench's native generator,
    run on the tester host through its executor, one process per trial."""

    name = "fwdgen"
    links = ("veth", "memif")
    memif_per_trial = True          # a fwdgen process per trial

    def check(self) -> dict[str, Any]:
        return check(self.tester.exec.ns)

    def run(self, request: TrialRequest) -> TrialResult:
        from fwdbench.trialspec import build_spec

        spec = build_spec(self.tester, request.profile, request.trial, request.load_pps,
                          request.duration_s, peer_macs=request.peer_macs,
                          latency=request.latency, burst_period_us=request.burst_period_us,
                          memif=request.memif)
        timeout = request.duration_s + spec["warmup_s"] + spec["drain_s"] + 30
        return run_trial(spec, netns=self.tester.exec.ns, timeout=timeout)
