"""Build fwdgen's trial spec (contracts.md, 1) from the tester, a profile and a load."""
from __future__ import annotations

from typing import Any

from .campaign import Profile, TrialSettings
from .units import parse_duration


def build_spec(tester, profile: Profile, trial: TrialSettings, load_pps: float,
               duration_s: float, *, peer_macs: dict[str, str] | None = None,
               warmup: bool = True, latency: bool = False,
               burst_period_us: float | None = None, memif=None) -> dict[str, Any]:
    """Streams: tg0 -> tg1 (and tg1 -> tg0 for bidirectional), flows in the lab's flow nets.

    ``tester``: where fwdgen runs (traffic.base.TesterHost, or a Lab's
    ``tester_host()``): its ports (tester side ``.tg``) and CPUs.

    ``peer_macs`` (from the DUT driver) is the destination MAC per tg port: the DUT
    port's for L3 data planes, the other tg port's for L2 modes. ``burst_period_us``
    sets fwdgen's pacing granularity (None: fwdgen's default; contracts.md, 1).
    ``memif`` (one dut.host.MemifLink per port): the ports are memif interfaces,
    fwdgen in the role the DUT leaves it (contracts.md, "memif ports")."""
    p0, p1 = tester.ports[0], tester.ports[1]
    if profile.l3 == "ipv4":
        net0, net1 = p0.flows4, p1.flows4
    else:
        net0, net1 = p0.flows6, p1.flows6
    ports = [
        {"ifname": p.tg.ifname, "mac": p.tg.mac,
         "peer_mac": (peer_macs or {}).get(p.tg.ifname, p.dut.mac), "backend": trial.backend}
        for p in (p0, p1)
    ]
    if burst_period_us:
        for port in ports:
            port["burst_period_us"] = burst_period_us
    for port, link in zip(ports, memif or ()):
        del port["backend"]
        port["memif"] = {"socket": link.socket, "id": link.id, "role": link.peer_role}
        if link.ring_size:
            port["memif"]["ring_size"] = link.ring_size
    streams = [{"id": 0, "tx_port": 0, "rx_port": 1, "src": net0, "dst": net1,
                "src_port": 1024, "dst_port": 1024}]
    if profile.direction == "bi":
        streams.append({"id": 1, "tx_port": 1, "rx_port": 0, "src": net1, "dst": net0,
                        "src_port": 1024, "dst_port": 1024})
    return {
        "ports": ports,
        "streams": streams,
        "profile": {"l3": profile.l3, "frame_size": profile.frame_size, "flows": profile.flows,
                    "vary": list(profile.vary), "port_pattern": profile.port_pattern},
        "load_pps": load_pps,
        "duration_s": duration_s,
        "warmup_s": parse_duration(trial.warmup) if warmup else 0.0,
        "drain_s": parse_duration(trial.drain),
        "latency": {"enabled": trial.latency_stream or latency, "rate_pps": trial.latency_rate},
        "cpus": {"tx": [tester.cpus[0]], "rx": [tester.cpus[0]]},
        "samples": True,
    }
