"""A trial as TRex streams: the profile's traffic through TRex's field engine.

The same traffic fwdgen sends (trialspec.py, contracts.md 1): per direction
(tg0 -> tg1, and tg1 -> tg0 when bidirectional) Ethernet / IPv4 or IPv6 /
UDP frames from the flow net behind the sending port to the one behind the
receiving port, at the request's load. Flows: flow k uses offset k in every
varied field (the k-th address from the first of the prefix, the k-th port
after 1024); TRex's field engine gets one incrementing variable per varied
field, all of the same length, so they advance together frame by frame.
RFC 4814 ports come from TRex's repeatable random variable limited to
``flows`` values (pseudorandom per flow, in 1024..65535, a different sequence
than fwdgen's own). A field whose range is shorter than ``flows`` (a /17
holds 32768 sources) wraps after its range, not after ``flows`` (fwdgen:
f % range; the same whenever the range divides ``flows``).

IMIX is TRex's way: three streams per direction at 7:4:1 of the load
(64/570/1518 B; 82 B for IPv6's smallest), not fwdgen's interleaving of one.

Every load stream counts in TRex's per-stream statistics (a pg_id, software
counters on veth). Latency: a separate single-flow stream per direction at
the campaign's latency rate with TRex's latency statistics, when the trial
asks for it; a load stream no faster than the latency rate is itself a
latency stream (the latency trials without background load, whose only
stream runs at the latency rate: fwdgen measures every frame's latency
there, and so does TRex; an IMIX one on its smallest frames: three latency
streams at once fell 21 % behind their schedule here, in TRex's one-core
low_end mode, where one is on time).

The plan is plain JSON for the agent (agent.py), plus the ``StreamMap``
fwdbench keeps to read the answer back (result.py).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ...units import IMIX, parse_duration

#: IPv6's smallest IMIX frame (fwdgen's too: headers + its 16 B signature + FCS)
IMIX_MIN6 = 82
#: pg_ids: load streams 1 + 8 * direction + size index; latency streams 100 + direction
LATENCY_PG_BASE = 100


@dataclass(frozen=True)
class PlannedStream:
    """One TRex stream and what it stands for in fwdbench's result."""
    pg_id: int
    direction: int          # index of fwdbench's stream (0: port 0 -> 1, 1: port 1 -> 0)
    role: str               # "load" or "latency"
    tx_port: int            # TRex port ids
    rx_port: int
    frame_size: int         # [B] incl. FCS
    pps: float              # [pps]
    latency: bool           # TRex latency statistics (else flow statistics only)


@dataclass(frozen=True)
class StreamMap:
    """What fwdbench keeps of a plan: the streams, the ports and the trial's shape."""
    streams: tuple[PlannedStream, ...]
    ifnames: dict[int, str]          # the tester's interface of each TRex port id
    load_pps: float                  # per direction [pps]
    duration_s: float                # [s]
    directions: int

    def of(self, direction: int, role: str | None = None) -> list[PlannedStream]:
        return [s for s in self.streams
                if s.direction == direction and (role is None or s.role == role)]


def frame_sizes(frame_size: int | str, l3: str) -> list[tuple[int, int]]:
    """[(size [B] incl. FCS, weight)] of a profile's frames."""
    if frame_size == "imix":
        return [(IMIX_MIN6 if l3 == "ipv6" and s == 64 else s, w) for s, w in IMIX]
    return [(int(frame_size), 1)]


def _first(prefix: str) -> tuple[ipaddress._BaseAddress, int]:
    """The address a prefix (or an address) starts at, and how many follow it
    inside the prefix (fwdgen's fg_parse_prefix; IPv6: within the low 32 bits)."""
    addr_s, _, plen_s = prefix.partition("/")
    addr = ipaddress.ip_address(addr_s)
    bits = addr.max_prefixlen
    plen = int(plen_s) if plen_s else bits
    lo = int(addr) & 0xFFFFFFFF
    if bits - plen >= 32:
        hosts = (1 << 32) - lo if lo else (1 << 32) - 1
    else:
        span = 1 << (bits - plen)
        hosts = span - (lo & (span - 1))
    return addr, hosts


def flow_vars(profile, src_prefix: str, dst_prefix: str, src_port: int, dst_port: int,
              seed: int) -> list[dict[str, Any]]:
    """Field-engine variables for the profile's flows (none for a single flow)."""
    flows = int(profile.flows)
    if flows <= 1:
        return []
    out = []
    src, src_hosts = _first(src_prefix)
    dst, dst_hosts = _first(dst_prefix)
    for field in profile.vary:
        if field in ("src_ip", "dst_ip"):
            addr, hosts = (src, src_hosts) if field == "src_ip" else (dst, dst_hosts)
            lo = int(addr) & 0xFFFFFFFF
            count = min(flows, hosts)
            out.append({"field": field, "size": 4, "random": False,
                        "min": lo, "max": lo + count - 1})
        else:
            base = src_port if field == "src_port" else dst_port
            if profile.port_pattern == "rfc4814":
                salt = 1 if field == "src_port" else 2
                out.append({"field": field, "size": 2, "random": True, "min": 1024,
                            "max": 65535, "seed": (seed * 2 + salt) & 0xFFFFFFFF,
                            "limit": flows})
            else:
                count = min(flows, 65536 - base)
                out.append({"field": field, "size": 2, "random": False,
                            "min": base, "max": base + count - 1})
    return out


def build_plan(tester, request, *, trex_ports: tuple[int, int] = (0, 1),
               stall_s: float = 10.0) -> tuple[dict[str, Any], StreamMap]:
    """The agent's plan for ``request`` (traffic.base.TrialRequest) on ``tester``
    (its ports in order = TRex's ``trex_ports``), and the map to read the answer."""
    prof, trial = request.profile, request.trial
    p = tester.ports
    fam4 = prof.l3 == "ipv4"
    nets = [(pp.flows4 if fam4 else pp.flows6) for pp in p[:2]]
    ends = [(0, 1)] + ([(1, 0)] if prof.direction == "bi" else [])
    sizes = frame_sizes(prof.frame_size, prof.l3)
    weight = sum(w for _, w in sizes)
    lat_rate = float(trial.latency_rate)
    load = float(request.load_pps)
    # a load no faster than the latency rate is measured for latency frame by frame
    load_latency = 0 < load <= lat_rate
    extra_latency = (request.latency or trial.latency_stream) and not load_latency
    specs: list[dict[str, Any]] = []
    planned: list[PlannedStream] = []

    def add(direction, role, pg_id, size, pps, latency, vars_):
        a, b = ends[direction]
        src_mac = p[a].tg.mac
        dst_mac = (request.peer_macs or {}).get(p[a].tg.ifname, p[a].dut.mac)
        src, _ = _first(nets[a])
        dst, _ = _first(nets[b])
        specs.append({
            "name": f"{role}{direction}-{size}", "role": role, "pg_id": pg_id,
            "port": trex_ports[a], "l3": prof.l3, "frame_size": size, "pps": pps,
            "src_mac": src_mac, "dst_mac": dst_mac, "src_ip": str(src), "dst_ip": str(dst),
            "sport": 1024, "dport": 1024, "vars": vars_,
            "stats": "latency" if latency else "flow"})
        planned.append(PlannedStream(pg_id=pg_id, direction=direction, role=role,
                                     tx_port=trex_ports[a], rx_port=trex_ports[b],
                                     frame_size=size, pps=pps, latency=latency))

    for d, (a, b) in enumerate(ends):
        vars_ = flow_vars(prof, nets[a], nets[b], 1024, 1024, seed=0x4814 + d)
        if load > 0:
            for k, (size, w) in enumerate(sizes):
                add(d, "load", 1 + 8 * d + k, size, load * w / weight, load_latency and k == 0, vars_)
        if extra_latency:
            # the smallest frame of the profile, one flow (as fwdgen's latency stream)
            add(d, "latency", LATENCY_PG_BASE + d, min(s for s, _ in sizes), lat_rate,
                True, [])
    plan = {
        "streams": specs,
        "warmup_s": parse_duration(trial.warmup),
        "duration_s": float(request.duration_s),
        "drain_ms": int(round(parse_duration(trial.drain) * 1000)),
        "stall_s": stall_s,
        "kernel_ifaces": [pp.tg.ifname for pp in p[:2]],
    }
    smap = StreamMap(streams=tuple(planned),
                     ifnames={trex_ports[i]: p[i].tg.ifname for i in range(2)},
                     load_pps=load, duration_s=float(request.duration_s), directions=len(ends))
    return plan, smap
