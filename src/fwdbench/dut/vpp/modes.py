"""Configuring VPP's data plane for each mode through the binary API.

The same modes, addresses and FIB layout as the ``linux`` DUT, so the two
are measured on the same terms:

- ``router``: addresses on both ports, static neighbours of the tester ports,
  and the FIB of ``linux.fib_layout`` (1 .. 2^20 routes per family);
- ``nat``: ``router`` plus NAT44 endpoint-dependent (nat44-ed) with dut1's
  address as the pool, dut0 inside, dut1 outside: the counterpart of the
  Linux DUT's masquerade (IPv6 is routed, not translated: nat44 is IPv4);
- ``bridge``: one bridge domain of both ports, MAC learning on or off
  (static L2 FIB entries for the tester MACs when off);
- ``xconnect``: L2 cross-connect dut0 <-> dut1.
"""
from __future__ import annotations

import ipaddress
import socket
import time
from typing import Any

from ..linux import fib_layout
from .api import VppApi

ADMIN_UP = 1
NEIGHBOR_STATIC = 1
NH_PROTO = {socket.AF_INET: 0, socket.AF_INET6: 1}
NAT_IS_OUTSIDE, NAT_IS_INSIDE = 16, 32
BD_ID = 1
#: fib_path.label_stack is a fixed array of 16 MPLS labels (none used)
NO_LABELS = [{"is_uniform": 0, "label": 0, "ttl": 0, "exp": 0}] * 16


def route_base(spec, sw_if: dict[str, int]) -> dict[str, Any]:
    """ip_route_add_del arguments of the routes of ``spec`` (linux.RouteSpec), but
    the prefix: one path via the spec's gateway on its port."""
    v6 = spec.family == socket.AF_INET6
    path = {"sw_if_index": sw_if[spec.oif], "table_id": 0, "rpf_id": 0, "weight": 1,
            "preference": 0, "type": 0, "flags": 0, "proto": NH_PROTO[spec.family],
            "nh": {"address": {"ip6" if v6 else "ip4": ipaddress.ip_address(spec.gateway)},
                   "via_label": 0, "obj_id": 0, "classify_table_index": 0},
            "n_labels": 0, "label_stack": NO_LABELS}
    return {"is_add": True, "is_multipath": False,
            "route": {"table_id": 0, "stats_index": 0, "n_paths": 1, "paths": [path]}}


def setup_router(api: VppApi, ports, sw_if: dict[str, int], params: dict[str, Any],
                 ipv6: bool) -> dict[str, Any]:
    """Addresses, static neighbours and the FIB; returns the FIB's description."""
    for p in ports:
        i = sw_if[p.dut.ifname]
        api.call("sw_interface_add_del_address", sw_if_index=i, is_add=True,
                 prefix=ipaddress.ip_interface(p.dut.cidr4))
        api.call("ip_neighbor_add_del", is_add=True, neighbor={
            "sw_if_index": i, "flags": NEIGHBOR_STATIC, "mac_address": p.tg.mac,
            "ip_address": ipaddress.ip_address(p.tg.ip4)})
        if ipv6:
            api.call("sw_interface_ip6_enable_disable", sw_if_index=i, enable=True)
            # no router advertisements onto the tester's ports (the lab is static)
            api.call("sw_interface_ip6nd_ra_config", sw_if_index=i, suppress=1)
            api.call("sw_interface_add_del_address", sw_if_index=i, is_add=True,
                     prefix=ipaddress.ip_interface(p.dut.cidr6))
            api.call("ip_neighbor_add_del", is_add=True, neighbor={
                "sw_if_index": i, "flags": NEIGHBOR_STATIC, "mac_address": p.tg.mac,
                "ip_address": ipaddress.ip_address(p.tg.ip6)})
    fib: dict[str, Any] = {}
    families = [(socket.AF_INET, "routes", "ipv4")]
    if ipv6:
        families.append((socket.AF_INET6, "routes6", "ipv6"))
    for fam, key, label in families:
        specs, desc = fib_layout(params[key], fam, ports)
        t = time.perf_counter()
        desc["installed"] = sum(
            api.bulk_prefixes("ip_route_add_del", route_base(spec, sw_if), "route.prefix",
                              spec.prefixes, v6=fam == socket.AF_INET6) for spec in specs)
        desc["install_s"] = round(time.perf_counter() - t, 3)
        fib[label] = desc
    return fib


def setup_nat(api: VppApi, ports, sw_if: dict[str, int], params: dict[str, Any]) -> dict:
    inside, outside = ports[0], ports[1]
    api.call("nat44_ed_plugin_enable_disable", enable=True, sessions=params["nat_sessions"],
             inside_vrf=0, outside_vrf=0)
    pool = ipaddress.ip_address(outside.dut.ip4)
    api.call("nat44_add_del_address_range", first_ip_address=pool, last_ip_address=pool,
             vrf_id=0xFFFFFFFF, is_add=True, flags=0)
    api.call("nat44_interface_add_del_feature", is_add=True, flags=NAT_IS_INSIDE,
             sw_if_index=sw_if[inside.dut.ifname])
    api.call("nat44_interface_add_del_feature", is_add=True, flags=NAT_IS_OUTSIDE,
             sw_if_index=sw_if[outside.dut.ifname])
    return {"kind": "nat44-ed", "pool": str(pool), "inside": inside.dut.ifname,
            "outside": outside.dut.ifname, "sessions": params["nat_sessions"]}


def setup_bridge(api: VppApi, ports, sw_if: dict[str, int], learning: bool) -> dict:
    api.call("bridge_domain_add_del_v2", bd_id=BD_ID, flood=True, uu_flood=True, forward=True,
             learn=learning, arp_term=False, arp_ufwd=False, mac_age=0, bd_tag="fwdbench",
             is_add=True)
    for p in ports:
        api.call("sw_interface_set_l2_bridge", rx_sw_if_index=sw_if[p.dut.ifname],
                 bd_id=BD_ID, port_type=0, shg=0, enable=True)
    static = {}
    if not learning:
        for p in ports:
            api.call("l2fib_add_del", mac=p.tg.mac, bd_id=BD_ID,
                     sw_if_index=sw_if[p.dut.ifname], is_add=True, static_mac=True,
                     filter_mac=False, bvi_mac=False)
            static[p.dut.ifname] = p.tg.mac
    return {"bd_id": BD_ID, "learning": learning, "static_fib": static}


def setup_xconnect(api: VppApi, ports, sw_if: dict[str, int]) -> dict:
    a, b = (sw_if[p.dut.ifname] for p in ports)
    for rx, tx in ((a, b), (b, a)):
        api.call("sw_interface_set_l2_xconnect", rx_sw_if_index=rx, tx_sw_if_index=tx,
                 enable=True)
    return {"pairs": [f"{ports[0].dut.ifname}->{ports[1].dut.ifname}",
                      f"{ports[1].dut.ifname}->{ports[0].dut.ifname}"]}
