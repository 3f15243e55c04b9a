"""TRex's counters after a trial -> fwdbench's ``TrialResult``.

Per direction, as fwdgen reports it (contracts.md 2): intended packets
(load x duration), tx and rx from TRex's per-stream statistics of the load
streams (``flow_stats``, pg_ids of plan.py), bytes as L2 frame bytes
without FCS (packets x (frame size - 4): each TRex stream has one size),
achieved rate, ``tx_limited``, and latency from the direction's latency
stream.

What TRex counts as sent is not always what left the tester. In its
low_end mode (one core) TRex drops a frame its port's transmit queue has no
room for and still counts it in the per-stream statistics; on memif ports the
queue is the ring the DUT reads, and TRex sends in bursts after each sleep, so
frames are dropped there well below the DUT's capacity. Without kernel ports
(memif, an attached server) each port's own driver count (``opackets``: what
the memif PMD put into the ring) is the check: a shortfall is taken off the
direction's tx and flags it as below.

On Linux interfaces (TRex's af_packet ports) a frame counts as sent once it is in
the socket's TX ring; frames the kernel then never took from the ring do not
reach the DUT. So every trial on kernel ports is checked against the
kernel's own counters of the tester's ports (read by the agent right
before and after the measured phase): a port whose kernel transmit count
(``tx_packets`` + ``tx_dropped``: frames the link took, or dropped at the
veth's ring toward the DUT, which the lab counts as the DUT's receive
ring overflowing, as for fwdgen) falls short of TRex's count has the
shortfall taken off the direction's tx, and the direction is flagged
``tx_limited``: the frames were never offered to the DUT, and the search and
the report treat the trial as generator-limited, not as DUT loss. The
same flag is set when TRex's own transmit error and drop counters, or its
receive misses (the kernel delivered frames to the receiving port that
TRex's receive did not count) exceed 0.5 % of the intended packets, and
when the achieved rate falls 0.5 % short of the intended one (fwdgen's
rule). TRex, unlike fwdgen, does not skip what it cannot send in time: its
transmit core falls behind its schedule and sends every frame late (5 Mpps
asked for 2 s into an XDP sink here: all 10 M frames, over 18 s). So the
achieved rate is tx over the time TRex took (start to its ports going idle),
and, as fwdgen, TRex may catch up for 5 % of the duration (0.1 s at least);
then the agent stops it, and the frames it had not sent count as lost and
flag the trial, as fwdgen's unsent frames do.

Not measured by TRex, so ``None`` (never 0): reordered and duplicated
frames of the load streams (fwdgen counts them from per-frame sequence
numbers; TRex numbers only its latency streams' frames, whose counts are
in ``raw``).
"""
from __future__ import annotations

import math
from typing import Any

from ...errors import GeneratorError
from ...trial import LatencySummary, StreamResult, TrialResult
from .plan import PlannedStream, StreamMap

#: a shortfall above this share of the intended packets flags the direction
LIMIT_SHARE = 0.005
#: [s] how far the span TRex took to send (start() returned -> its ports idle, from
#: its async events) can exceed the true one: measured -9..+4 ms over 24 on-time trials
SPAN_SLACK_S = 0.010


def _get(d: Any, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict):
            return default
        d = d.get(str(k), d.get(k) if not isinstance(k, str) else None)
        if d is None:
            return default
    return d


def _num(x: Any) -> int:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0


def _kernel_delta(answer: dict[str, Any], ifname: str) -> dict[str, int] | None:
    before = _get(answer, "kernel", "before", ifname)
    after = _get(answer, "kernel", "after", ifname)
    if not before or not after:
        return None
    out = {}
    for k, v in after.items():
        b = before.get(k)
        if v is None or b is None:
            return None
        out[k] = int(v) - int(b)
    return out


def latency_summary(lat_stats: list[dict[str, Any]]) -> tuple[LatencySummary | None, list[str]]:
    """One summary from the TRex latency records of one direction (several for an
    IMIX idle trial, merged). TRex's HdrHistogram (``--hdrh``, in us) gives the
    percentiles and the mean; without it, TRex's coarse histogram does."""
    notes: list[str] = []
    lats = [s.get("latency") or {} for s in lat_stats]
    hdrs = [l.get("hdrh") for l in lats if l.get("hdrh")]
    jitters = [float(l["jitter"]) for l in lats if isinstance(l.get("jitter"), (int, float))]
    mins = [float(l["total_min"]) for l in lats
            if isinstance(l.get("total_min"), (int, float)) and l["total_min"] > 0]
    maxs = [float(l["total_max"]) for l in lats if isinstance(l.get("total_max"), (int, float))]
    if hdrs:
        from hdrh.histogram import HdrHistogram
        ns = HdrHistogram(1, 60_000_000_000, 3)
        for b64 in hdrs:
            h = HdrHistogram.decode(b64)
            for it in h.get_recorded_iterator():
                ns.record_value(int(it.value_iterated_to) * 1000, it.count_at_value_iterated_to)
        n = ns.get_total_count()
        if n == 0:
            return None, notes
        return LatencySummary(
            samples=int(n), min_ns=float(ns.get_min_value()), mean_ns=float(ns.get_mean_value()),
            p50_ns=float(ns.get_value_at_percentile(50)),
            p90_ns=float(ns.get_value_at_percentile(90)),
            p99_ns=float(ns.get_value_at_percentile(99)),
            p999_ns=float(ns.get_value_at_percentile(99.9)),
            max_ns=float(ns.get_max_value()),
            jitter_ns=max(jitters) * 1000 if jitters else math.nan,
            hdr=ns.encode().decode() if isinstance(ns.encode(), bytes) else ns.encode(),
        ), notes
    # TRex's own histogram: key k [us] counts frames in [k, next bucket); "0": below 10 us
    buckets: dict[int, int] = {}
    for l in lats:
        for k, v in (l.get("histogram") or {}).items():
            buckets[int(k)] = buckets.get(int(k), 0) + int(v)
    n = sum(buckets.values())
    if n == 0:
        return None, notes
    keys = sorted(buckets)

    def upper(k: int) -> float:
        if k == 0:
            return 10.0
        decade = 10 ** int(math.log10(k))
        return float(k + decade)

    def pct(p: float) -> float:
        want, acc = p / 100 * n, 0
        for k in keys:
            acc += buckets[k]
            if acc >= want:
                return upper(k) * 1000
        return upper(keys[-1]) * 1000

    notes.append("latency percentiles are the upper bounds of TRex's coarse histogram "
                 "buckets (10 us, then decades): start the server with --hdrh for 1 us")
    lo = min(mins) if mins else 0.0
    hi = max(maxs) if maxs else upper(keys[-1])
    mean = sum(float(l["average"]) for l in lats if isinstance(l.get("average"), (int, float)))
    mean = mean / len(lats) if lats else 0.0
    return LatencySummary(samples=n, min_ns=lo * 1000, mean_ns=mean * 1000, p50_ns=pct(50),
                          p90_ns=pct(90), p99_ns=pct(99), p999_ns=pct(99.9), max_ns=hi * 1000,
                          jitter_ns=max(jitters) * 1000 if jitters else math.nan), notes


def parse_trial(answer: dict[str, Any], smap: StreamMap, *, warmup_s: float,
                kernel_ports: bool, version: str = "", backend: str = "trex") -> TrialResult:
    """Build the TrialResult of one trial from the agent's answer (see the module
    docstring). ``kernel_ports``: the tester's ports are Linux interfaces whose
    kernel counters the agent read (af_packet), so they are checked."""
    stats = answer.get("stats")
    if not isinstance(stats, dict) or "flow_stats" not in stats:
        raise GeneratorError(f"trex: the trial's statistics are missing: {str(answer)[:200]}")
    fs, lat = stats.get("flow_stats") or {}, stats.get("latency") or {}
    T = smap.duration_s
    times = answer.get("times") or {}
    span = float(times.get("tx_s") or T)        # [s] from start() to TRex's ports idle
    stopped = bool(times.get("stopped"))
    warnings: list[str] = []
    checks: dict[str, Any] = {}

    def pg_count(s: PlannedStream, what: str, port: int) -> int:
        return _num(_get(fs, s.pg_id, what, port))

    # per TRex port: what TRex counted out of it, what the kernel took
    port_short: dict[int, int] = {}
    port_sent: dict[int, int] = {}
    for port in sorted({s.tx_port for s in smap.streams}):
        sent = sum(pg_count(s, "tx_pkts", port) for s in smap.streams if s.tx_port == port)
        port_sent[port] = sent
        rec: dict[str, Any] = {"trex_tx": sent,
                               "trex_opackets": _num(_get(stats, port, "opackets")),
                               "trex_oerrors": _num(_get(stats, port, "oerrors"))}
        if kernel_ports:
            ifn = smap.ifnames[port]
            kd = _kernel_delta(answer, ifn)
            if kd is None:
                raise GeneratorError(f"trex: no kernel counters of {ifn} in the agent's answer")
            took = kd["tx_packets"] + kd["tx_dropped"]
            rec.update(kernel_tx=kd["tx_packets"], kernel_tx_dropped=kd["tx_dropped"])
            short = max(sent - took, 0)
            port_short[port] = short
            rec["not_sent"] = short
            if short:
                warnings.append(
                    f"TRex counted {sent} frames sent on {ifn}, the kernel took {took} "
                    f"({kd['tx_packets']} sent, {kd['tx_dropped']} dropped at the veth's ring "
                    f"toward the DUT): {short} never left the tester (af_packet's TX ring); "
                    "they are not counted as sent, nor as the DUT's loss")
        elif isinstance(_get(stats, port, "opackets"), (int, float)):
            # no kernel: the port driver's own count of what it took (memif: what
            # went into the ring the DUT reads)
            took = rec["trex_opackets"]
            short = max(sent - took, 0)
            port_short[port] = short
            rec["not_sent"] = short
            if short:
                warnings.append(
                    f"TRex counted {sent} frames sent on {smap.ifnames[port]}, its port driver "
                    f"sent {took}: {short} were dropped inside TRex at a full transmit queue "
                    "(TRex's low_end mode drops there instead of waiting; on memif the queue "
                    "is the ring the DUT reads); they never reached the DUT and are not "
                    "counted as sent, nor as the DUT's loss")
        checks[f"port{port}"] = rec

    # receive: frames the kernel handed the receiving port that TRex did not count
    rx_missed: dict[int, int] = {}
    for port in sorted({s.rx_port for s in smap.streams}):
        ipk = _num(_get(stats, port, "ipackets"))
        ierr = _num(_get(stats, port, "ierrors"))
        missed = ierr
        rec = checks.setdefault(f"port{port}", {})
        rec.update(trex_ipackets=ipk, trex_ierrors=ierr)
        if kernel_ports:
            kd = _kernel_delta(answer, smap.ifnames[port])
            if kd is not None:
                rec["kernel_rx"] = kd["rx_packets"]
                missed = max(missed, kd["rx_packets"] - ipk)
        rx_missed[port] = missed
        rec["rx_missed"] = missed

    gl = stats.get("global") or {}
    streams: list[StreamResult] = []
    raw_lat: dict[str, Any] = {}
    for d in range(smap.directions):
        loads = smap.of(d, "load")
        lat_streams = smap.of(d, "latency") or [s for s in loads if s.latency]
        if loads:
            tx_port, rx_port = loads[0].tx_port, loads[0].rx_port
        else:
            tx_port, rx_port = lat_streams[0].tx_port, lat_streams[0].rx_port
        intended_pps = smap.load_pps
        intended = int(round(intended_pps * T))
        trex_tx = sum(pg_count(s, "tx_pkts", s.tx_port) for s in loads)
        rx = sum(pg_count(s, "rx_pkts", s.rx_port) for s in loads)
        # the port's shortfall, shared over its streams by what TRex says each sent
        short = port_short.get(tx_port, 0)
        if short and port_sent.get(tx_port):
            short = int(round(short * trex_tx / port_sent[tx_port]))
        tx = max(trex_tx - short, 0)
        if rx > tx:                 # frames TRex counted twice cannot arrive; keep rx <= tx
            warnings.append(f"direction {d}: TRex received {rx} frames of {tx} sent "
                            "(duplicates, or frames in flight at the last trial)")
        tx_bytes = sum(round(pg_count(s, "tx_pkts", s.tx_port) * (tx / trex_tx if trex_tx else 0))
                       * (s.frame_size - 4) for s in loads)
        rx_bytes = sum(pg_count(s, "rx_pkts", s.rx_port) * (s.frame_size - 4) for s in loads)
        achieved = tx / max(T, span - SPAN_SLACK_S) if T > 0 else 0.0
        reasons = []
        if intended and tx < intended * (1 - LIMIT_SHARE):
            reasons.append(f"sent {tx} of {intended} intended frames within the trial"
                           + (" (stopped after its catch-up time; the rest count as lost, "
                              "as fwdgen's unsent frames)" if stopped else ""))
        elif intended and achieved < intended_pps * (1 - LIMIT_SHARE):
            reasons.append(f"sending took {span:.3f} s for a {T:g} s trial "
                           f"({achieved:,.0f} of {intended_pps:,.0f} pps)")
        oerr = _num(_get(stats, tx_port, "oerrors"))
        if intended and oerr > intended * LIMIT_SHARE:
            reasons.append(f"TRex counted {oerr} transmit errors on port {tx_port}")
        miss = rx_missed.get(rx_port, 0)
        if intended and miss > intended * LIMIT_SHARE:
            reasons.append(f"TRex's receive on port {rx_port} missed {miss} frames the "
                           "kernel delivered")
        limited = bool(reasons)
        if limited:
            warnings.append(f"direction {d} generator-limited: " + "; ".join(reasons))
        summary = None
        if lat_streams:
            recs = [lat.get(str(s.pg_id)) or {} for s in lat_streams]
            summary, notes = latency_summary(recs)
            warnings += notes
            for s, r in zip(lat_streams, recs):
                raw_lat[str(s.pg_id)] = {
                    "tx": pg_count(s, "tx_pkts", s.tx_port),
                    "rx": pg_count(s, "rx_pkts", s.rx_port),
                    "err_cntrs": r.get("err_cntrs"),
                    "jitter_us": _get(r, "latency", "jitter"),
                    "trex_average_us": _get(r, "latency", "average")}
        streams.append(StreamResult(
            stream_id=d, tx_port=smap.ifnames[tx_port], rx_port=smap.ifnames[rx_port],
            intended_pps=intended_pps, intended_packets=intended, tx_packets=tx,
            tx_bytes=int(tx_bytes), rx_packets=min(rx, tx) if tx else rx,
            rx_bytes=int(rx_bytes), reordered=None, duplicated=None,
            achieved_tx_pps=achieved, tx_limited=limited, latency=summary))
    for key, what in (("rx_err", "frames with a TRex stream id it could not place"),
                      ("tx_err", "transmit errors of the per-stream statistics")):
        n = _num(_get(fs, "global", key))
        if n:
            warnings.append(f"TRex's per-stream statistics counted {n} {what} ({key})")
    bad = _num(_get(lat, "global", "bad_hdr"))
    if bad:
        warnings.append(f"{bad} latency frames came back with a damaged TRex header (bad_hdr)")
    warnings += [f"TRex: {w}" for w in answer.get("warnings") or []]
    raw = {"generator": "trex", "trex_version": version, "checks": checks,
           "latency_streams": raw_lat, "xstats": answer.get("xstats"),
           "global": {k: gl.get(k) for k in sorted(gl)
                      if isinstance(gl.get(k), (int, float, str))},
           "times": answer.get("times"),
           "streams": [s.__dict__ for s in smap.streams]}
    return TrialResult(intended_load_pps=smap.load_pps, duration_s=T, streams=streams,
                       backend=backend, warmup_s=warmup_s, raw=raw, warnings=warnings)
