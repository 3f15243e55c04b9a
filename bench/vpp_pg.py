#!/usr/bin/env python3
"""vfwd against FD.io VPP in packet-generator mode (no I/O), on the same paths, same run.

For each path (ip4 1 route, L2 xconnect, L2 bridge with learning, ip6 1
route, ip4 with 2^20 random /24 routes and random destinations), in paired
rounds, runs vfwd's in-memory packet generator (bench/vfwd_nodes.py) and
VPP's (`packet-generator new`, on pg interfaces) with the same frames (64 B
with FCS, 1024 flows), the same FIB and one core, and reads each one's
per-node runtime: TSC clocks per packet as `show runtime` counts them,
summed over the forwarding path (every node after the input node that saw
packets, per input packet; VPP's from its statistics segment). Prints per
path the medians and the ratio vfwd/VPP per round with its range, and the
nodes of the last round side by side.

    .venv/bin/python bench/vpp_pg.py [--rounds 3] [--packets 10000000] [--cpu 1]
        [--only ip4-1route ...] [--json out.json]

VPP is the one fwdbench uses (FD.io's packages, or `make ... VPP_SRC=`); it
runs on this host (no namespace: pg interfaces are virtual), main thread
only, 4 KiB pages as in the lab. Clocks are measured (TSC); the ratio is of
medians of paired rounds on one machine.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

from fwdbench.dut.vpp import find_vpp  # noqa: E402
from fwdbench.dut.vpp.modes import (ADMIN_UP, NEIGHBOR_STATIC, NO_LABELS,  # noqa: E402
                                    route_base)
from fwdbench.dut.vpp.process import VppProcess  # noqa: E402
from fwdbench.dut.vpp.startup import Startup  # noqa: E402
from fwdbench.lab.executor import Executor  # noqa: E402
from fwdbench.lab.netlink import RouteSpec  # noqa: E402
from vfwd_nodes import SCENARIOS, config, run_once, summarize  # noqa: E402

PG_MAC = ("02:fb:00:00:01:01", "02:fb:00:00:01:02")
TG_MAC = ("02:fb:00:00:00:01", "02:fb:00:00:00:02")
INPUT = "pg-input"
#: bytes handed to the interface: vfwd_nodes' frame sizes (64 B, 78 B for IPv6) less the FCS
FRAME = {"ip6-1route": 74}
RANDOM_ROUTES = 1 << 20

#: path -> the stream's data lines (VPP's pg syntax: "a - b" increments, "a + b" random)
STREAMS = {
    "ip4-1route": ["IP4: {tg0} -> {pg0}", "UDP: 198.18.128.0 - 198.18.131.255 -> "
                   "198.19.128.0 - 198.19.131.255", "UDP: 1024 -> 1024"],
    "l2-xconnect": ["IP4: {tg0} -> {tg1}", "UDP: 198.18.128.0 - 198.18.131.255 -> "
                    "198.19.128.0 - 198.19.131.255", "UDP: 1024 -> 1024"],
    "l2-bridge": ["IP4: {tg0} -> {tg1}", "UDP: 198.18.128.0 - 198.18.131.255 -> "
                  "198.19.128.0 - 198.19.131.255", "UDP: 1024 -> 1024"],
    # VPP's pg parses no IPv6 address ranges (they come out as ::): one flow; the
    # lookup of one /64 route costs the same for every destination in it
    "ip6-1route": ["IP6: {tg0} -> {pg0}", "UDP: 2001:2:0:10::5 -> 2001:2:0:11::1",
                   "UDP: 1024 -> 1024"],
    "ip4-2^20-random": ["IP4: {tg0} -> {pg0}", "UDP: 198.18.128.1 -> 1.0.0.0 + 223.255.255.255",
                        "UDP: 1024 -> 1024"],
}


class VppPg:
    """One VPP with two pg interfaces, configured for one path."""

    def __init__(self, path: str, cpu: int):
        inst = find_vpp()
        self.dir = tempfile.mkdtemp(prefix="fwdbench-vpp-pg-")
        routes = RANDOM_ROUTES if path == "ip4-2^20-random" else 2
        st = Startup(run_dir=self.dir, shm_prefix=f"fb-pg{Path(self.dir).name[-6:]}",
                     plugin_dir=inst.plugin_dir, plugins=("ping",), main_core=cpu, workers=(),
                     main_heap=(256 << 20) + routes * 1536, buffers=32768,
                     stats_size=(64 << 20) + routes * 128,
                     stats_interval=0.1 if routes < 65536 else 1.5)
        self.vpp = VppProcess.start(inst, st, Executor(None))
        self.api = self.vpp.api
        self.path = path
        try:
            self._configure()
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        api, path = self.api, self.path
        self.sw = [api.call("pg_create_interface_v2", interface_id=i, gso_enabled=False,
                            gso_size=0, mode=0).sw_if_index for i in (0, 1)]
        for i, sw in enumerate(self.sw):
            api.call("sw_interface_set_mac_address", sw_if_index=sw, mac_address=PG_MAC[i])
            api.call("sw_interface_set_flags", sw_if_index=sw, flags=ADMIN_UP)
        pg0, pg1 = self.sw
        if path.startswith("ip"):
            v6 = path.startswith("ip6")
            addr = ("2001:2::2/64", "2001:2:0:1::2/64") if v6 else ("198.18.0.2/24", "198.19.0.2/24")
            gw = "2001:2:0:1::1" if v6 else "198.19.0.1"
            for sw, a in zip(self.sw, addr):
                if v6:
                    api.call("sw_interface_ip6_enable_disable", sw_if_index=sw, enable=True)
                    api.call("sw_interface_ip6nd_ra_config", sw_if_index=sw, suppress=1)
                api.call("sw_interface_add_del_address", sw_if_index=sw, is_add=True,
                         prefix=ipaddress.ip_interface(a))
            api.call("ip_neighbor_add_del", is_add=True, neighbor={
                "sw_if_index": pg1, "flags": NEIGHBOR_STATIC, "mac_address": TG_MAC[1],
                "ip_address": ipaddress.ip_address(gw)})
            fam = 10 if v6 else 2
            if path == "ip4-2^20-random":
                rng = random.Random(7)
                nets = set()
                while len(nets) < RANDOM_ROUTES:     # distinct random /24s (vfwd's kind)
                    nets.add(rng.getrandbits(24) << 8)
                prefixes = [((n).to_bytes(4, "big"), 24) for n in sorted(nets)] + \
                    [(bytes(4), 0)]
            else:
                net = ipaddress.ip_network("2001:2:0:11::/64" if v6 else "198.19.128.0/17")
                prefixes = [(net.network_address.packed, net.prefixlen)]
            spec = RouteSpec(fam, gw, "pg1", prefixes)
            api.bulk_prefixes("ip_route_add_del", route_base(spec, {"pg1": pg1}),
                              "route.prefix", spec.prefixes, v6=v6)
        elif path == "l2-xconnect":
            # both ways, as the driver: l2-output sends only to an interface in L2 mode
            for rx, tx in ((pg0, pg1), (pg1, pg0)):
                api.call("sw_interface_set_l2_xconnect", rx_sw_if_index=rx, tx_sw_if_index=tx,
                         enable=True)
        elif path == "l2-bridge":
            api.call("bridge_domain_add_del_v2", bd_id=1, flood=True, uu_flood=True,
                     forward=True, learn=True, arp_term=False, arp_ufwd=False, mac_age=0,
                     bd_tag="bench", is_add=True)
            for sw in self.sw:
                api.call("sw_interface_set_l2_bridge", rx_sw_if_index=sw, bd_id=1, port_type=0,
                         shg=0, enable=True)
            api.call("l2fib_add_del", mac=TG_MAC[1], bd_id=1, sw_if_index=pg1, is_add=True,
                     static_mac=True, filter_mac=False, bvi_mac=False)

    def run(self, packets: int) -> dict:
        """One stream of ``packets`` through the path; per-node clocks per packet."""
        data = "\n".join(line.format(tg0=TG_MAC[0], tg1=TG_MAC[1], pg0=PG_MAC[0])
                         for line in STREAMS[self.path])
        # streams have no API message: the CLI, through the API's cli_inband
        size = FRAME.get(self.path, 60)
        self.api.cli(f"packet-generator new {{ name s limit {packets} size {size}-{size} "
                     f"interface pg0 node ethernet-input data {{ {data} incrementing 18 }} }}")
        before = self.vpp.stats.counters()
        self.api.call("pg_enable_disable", is_enabled=True, stream_name="s")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.vpp.stats.counters()
            if now.get(f"vpp_node.{INPUT}.vectors", 0) - before.get(
                    f"vpp_node.{INPUT}.vectors", 0) >= packets:
                break
        time.sleep(2 * self.vpp.startup.stats_interval)
        after = self.vpp.stats.counters()
        self.api.cli("packet-generator delete s")
        nodes: dict[str, dict[str, int]] = {}
        for k, v in after.items():
            if k.startswith("vpp_node."):
                node, field = k[len("vpp_node."):].rsplit(".", 1)
                nodes.setdefault(node, {})[field] = v - before.get(k, 0)
        n_in = nodes.get(INPUT, {}).get("vectors", 0) or 1
        per = {n: c["clocks"] / c["vectors"] for n, c in nodes.items() if c.get("vectors")}
        # nodes on the path handle the stream's packets; VPP's own few (an MLD
        # report) are not the path
        path = sum(c["clocks"] for n, c in nodes.items()
                   if n != INPUT and c.get("vectors", 0) >= n_in / 100) / n_in
        return {"path": path, "nodes": per, "input_packets": n_in}

    def close(self) -> None:
        self.vpp.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds [1]")
    ap.add_argument("--packets", type=int, default=10_000_000, help="packets per run [1]")
    ap.add_argument("--cpu", type=int, default=1, help="the CPU both run on")
    ap.add_argument("--only", action="append", help="path(s) to run")
    ap.add_argument("--json", help="write all results here")
    a = ap.parse_args()
    inst = find_vpp()
    print(f"VPP {inst.version or '?'} from {inst.prefix}; vfwd from native/build; "
          f"CPU {a.cpu}, {a.packets:,} packets per run, {a.rounds} paired rounds")
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="vfwd-pg-") as td:
        for name in STREAMS:
            if a.only and name not in a.only:
                continue
            body = SCENARIOS[name][0]
            rows = []
            for r in range(a.rounds):
                v = summarize(run_once(config(body, 256, a.packets, a.cpu), Path(td)))
                pg = VppPg(name, a.cpu)
                try:
                    p = pg.run(a.packets)
                finally:
                    pg.close()
                rows.append({"vfwd": v["path"], "vpp": p["path"], "ratio": v["path"] / p["path"],
                             "vfwd_nodes": v["nodes"], "vpp_nodes": p["nodes"]})
            results[name] = rows
            report(name, rows)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


def report(name: str, rows: list[dict]) -> None:
    med = {k: statistics.median(r[k] for r in rows) for k in ("vfwd", "vpp", "ratio")}
    lo, hi = min(r["ratio"] for r in rows), max(r["ratio"] for r in rows)
    print(f"\n== {name}: path clocks/packet (vector 256, 64 B)")
    print(f"   vfwd {med['vfwd']:7.1f}  (runs {[round(r['vfwd'], 1) for r in rows]})")
    print(f"   VPP  {med['vpp']:7.1f}  (runs {[round(r['vpp'], 1) for r in rows]})")
    print(f"   vfwd / VPP: median {med['ratio']:.2f}, range {lo:.2f}-{hi:.2f} over "
          f"{len(rows)} paired rounds")
    last = rows[-1]
    print(f"   {'vfwd node':18s} {'clk/pkt':>8s}   {'VPP node':24s} {'clk/pkt':>8s}")
    vf = sorted((n, c) for n, c in last["vfwd_nodes"].items() if n not in ("pg-input", "port-input"))
    vp = sorted((n, c) for n, c in last["vpp_nodes"].items() if n != INPUT)
    for i in range(max(len(vf), len(vp))):
        left = f"{vf[i][0]:18s} {vf[i][1]:8.1f}" if i < len(vf) else " " * 27
        right = f"{vp[i][0]:24s} {vp[i][1]:8.1f}" if i < len(vp) else ""
        print(f"   {left}   {right}")


if __name__ == "__main__":
    sys.exit(main())
