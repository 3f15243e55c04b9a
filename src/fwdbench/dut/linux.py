"""The ``linux`` DUT: the kernel's own data planes on the DUT host.

Modes (``params.mode``):

- ``router``: IPv4 and IPv6 forwarding. ``routes`` (IPv4) and ``routes6``
  (IPv6) set the FIB size, 1 .. 2^20 each; see ``fib_layout()``.
- ``nat``: ``router`` plus source NAT with nftables (conntrack): packets
  from the flow range behind tg0 leaving dut1 get dut1's address
  (``nat = "snat"``, fixed address, or ``"masquerade"``); replies are de-NATed.
- ``bridge``: a Linux bridge ``fbbr0`` of dut0 + dut1; ``learning`` true
  (MAC learning) or false (learning off, static FDB entries for tg0/tg1).
  (Named for fwdbench: on a real DUT host ``br0`` may be the operator's.)
- ``xconnect``: tc ingress + mirred redirect dut0 <-> dut1 (frames unchanged).

Links, addresses, bridge and FDB are configured with ``ip -batch -`` and
``bridge -batch -``; the FIB in bulk through the executor's ``bulk_routes``
(raw netlink on the netns lab: 2^20 IPv4 routes in ~4.5 s; ``ip -batch``
on a DUT host over SSH); NAT with ``nft -f -``; tc with ``tc -batch -``; all
commands are argv lists run by the DUT host's executor, so every mode runs
the same on the netns lab and on a remote DUT host.

In ``bridge`` and ``xconnect`` modes the generator must address frames to
the other tg port's MAC (``peer_macs()``); in ``router`` and ``nat`` to the
DUT port's MAC.
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

from ..errors import CampaignError, DutError, FwdbenchError
from ..lab.addressing import BRIDGE_MAC, PORTS
from ..lab.executor import Executor
from ..lab.netlink import RTPROT_FWDBENCH, RouteSpec
from . import register
from .base import DutDriver

MAX_ROUTES = 1 << 20
#: routes per direction that split a flow range at most (a /17 into /32s)
MAX_SPLIT = 1 << 15
#: IPv4 filler prefixes (no traffic addresses them): /28s of 10.0.0.0/8, 2^20 of them
FILLER4 = ipaddress.ip_network("10.0.0.0/8")
FILLER4_PLEN = 28
#: IPv6 filler prefixes: /72s of 2001:2:0:1000::/52 (inside the benchmarking /48), 2^20 of them
FILLER6 = ipaddress.ip_network("2001:2:0:1000::/52")
FILLER6_PLEN = 72
NFT_TABLE = "fwdbench"
#: the bridge of mode ``bridge``
BRIDGE = "fbbr0"
#: nexthop object ids of the FIB: (family, port index behind which the flows live) -> id
NHIDS = {(socket.AF_INET, 0): 2510, (socket.AF_INET, 1): 2511,
         (socket.AF_INET6, 0): 2512, (socket.AF_INET6, 1): 2513}

MODES = ("router", "nat", "bridge", "xconnect")
#: param -> (modes it applies to, default)
PARAMS: dict[str, tuple[tuple[str, ...], Any]] = {
    "mode": (MODES, "router"),
    "routes": (("router", "nat"), 2),
    "routes6": (("router", "nat"), 2),
    "nat": (("nat",), "snat"),
    "learning": (("bridge",), True),
}
NAT_KINDS = ("snat", "masquerade")


def _split(net: ipaddress._BaseNetwork, parts: int) -> Iterator[tuple[bytes, int]]:
    """``net`` cut into ``parts`` (a power of two) equal prefixes."""
    extra = parts.bit_length() - 1
    plen = net.prefixlen + extra
    base = int(net.network_address)
    step = 1 << (net.max_prefixlen - plen)
    nbytes = net.max_prefixlen // 8
    for i in range(parts):
        yield (base + i * step).to_bytes(nbytes, "big"), plen


def _filler(net: ipaddress._BaseNetwork, plen: int, count: int) -> Iterator[tuple[bytes, int]]:
    base = int(net.network_address)
    step = 1 << (net.max_prefixlen - plen)
    nbytes = net.max_prefixlen // 8
    for i in range(count):
        yield (base + i * step).to_bytes(nbytes, "big"), plen


def fib_layout(routes: int, family: int, ports=PORTS) -> tuple[list[RouteSpec], dict[str, Any]]:
    """The routes for a FIB of ``routes`` entries and a description of them.

    - 1 route: the flow range behind tg1 via tg1 (tg0 -> tg1 traffic only).
    - >= 2: both flow ranges (behind tg0 via tg0, behind tg1 via tg1), each
      cut into ``split`` equal prefixes, ``split`` the largest power of two
      with 2 * split <= routes (at most 2^15: a /17 into /32s), so flows
      that vary the destination hit different routes;
    - the rest (routes - 2 * split) are filler prefixes no traffic addresses,
      all via tg1 (one next hop, as RFC 2544 setups do): IPv4 /28s from
      10.0.0.0/8 (198.18.0.0/15 cannot hold 2^20 distinct prefixes; the DUT
      namespace is isolated), IPv6 /72s from 2001:2:0:1000::/52.
    Routes to the link networks are the kernel's connected routes, not counted.
    Every route points at a nexthop object (NHIDS), so teardown removes the
    whole FIB in-kernel by deleting those objects.
    """
    if not 1 <= routes <= MAX_ROUTES:
        raise ValueError(f"routes {routes} outside 1..{MAX_ROUTES}")
    v6 = family == socket.AF_INET6
    p0, p1 = ports[:2]
    flows0 = ipaddress.ip_network(p0.flows6 if v6 else p0.flows4)
    flows1 = ipaddress.ip_network(p1.flows6 if v6 else p1.flows4)
    gw0 = p0.tg.ip6 if v6 else p0.tg.ip4
    gw1 = p1.tg.ip6 if v6 else p1.tg.ip4
    if routes == 1:
        split, fill = 1, 0
        specs = [RouteSpec(family, gw1, p1.dut.ifname, _split(flows1, 1), NHIDS[family, 1])]
    else:
        split = 1
        while split * 4 <= routes and split * 2 <= MAX_SPLIT:
            split *= 2
        fill = routes - 2 * split
        specs = [RouteSpec(family, gw1, p1.dut.ifname, _split(flows1, split), NHIDS[family, 1]),
                 RouteSpec(family, gw0, p0.dut.ifname, _split(flows0, split), NHIDS[family, 0])]
    fnet, fplen = (FILLER6, FILLER6_PLEN) if v6 else (FILLER4, FILLER4_PLEN)
    if fill:
        specs.append(RouteSpec(family, gw1, p1.dut.ifname, _filler(fnet, fplen, fill),
                               NHIDS[family, 1]))
    desc = {
        "routes": routes,
        "flow_routes": [f"{flows1} via {gw1} split into {split} /{flows1.prefixlen + split.bit_length() - 1}"]
        + ([f"{flows0} via {gw0} split into {split} /{flows0.prefixlen + split.bit_length() - 1}"]
           if routes > 1 else []),
        "filler_routes": f"{fill} x /{fplen} from {fnet} via {gw1}" if fill else "none",
    }
    return specs, desc


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@register
class LinuxDut(DutDriver):
    """Linux kernel forwarding on the DUT host (the lab's DUT namespace)."""

    name = "linux"
    kernel_stack = True
    modes = MODES

    def __init__(self, params: dict[str, Any]):
        super().__init__(self.validate(params, "params"))
        self.host = None
        self._done: list[str] = []      # setup steps applied, undone in reverse
        self._fib: dict[str, Any] = {}
        self._nft_ruleset = ""

    # --- plan time ------------------------------------------------------------
    @classmethod
    def validate(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise CampaignError(f"{where}: must be a table of parameters, got {params!r}")
        mode = params.get("mode", PARAMS["mode"][1])
        if mode not in MODES:
            raise CampaignError(f"{where}.mode: {mode!r} is not one of {', '.join(MODES)}")
        for key in params:
            if key not in PARAMS:
                raise CampaignError(f"{where}.{key}: unknown parameter of the linux DUT "
                                    f"(allowed: {', '.join(PARAMS)})")
            if mode not in PARAMS[key][0]:
                raise CampaignError(f"{where}.{key}: does not apply to mode {mode!r} "
                                    f"(only to {', '.join(PARAMS[key][0])})")
        out = {k: params.get(k, d) for k, (ms, d) in PARAMS.items() if mode in ms}
        for key in ("routes", "routes6"):
            if key in out:
                v = out[key]
                if not _is_int(v) or not 1 <= v <= MAX_ROUTES:
                    raise CampaignError(f"{where}.{key}: {v!r} must be an integer 1..{MAX_ROUTES} "
                                        f"(2^20)")
        if "nat" in out and out["nat"] not in NAT_KINDS:
            raise CampaignError(f"{where}.nat: {out['nat']!r} is not one of {', '.join(NAT_KINDS)}")
        if "learning" in out and not isinstance(out["learning"], bool):
            raise CampaignError(f"{where}.learning: {out['learning']!r} must be true or false")
        return out

    def check(self, host=None) -> None:
        ex = host.exec if host is not None else Executor(None)
        need = {"router": ["ip", "ethtool"], "nat": ["ip", "ethtool", "nft"],
                "bridge": ["ip", "ethtool", "bridge"],
                "xconnect": ["ip", "ethtool", "tc"]}[self.mode]
        if self.mode == "nat":          # what the executor needs to forget NAT bindings
            need += ex.tools_for("conntrack_flush")
        missing = ex.missing_tools(need)
        if missing:
            where = f" on {host.name}" if host is not None else ""
            raise DutError(f"linux DUT mode {self.mode}: missing tools {', '.join(missing)}"
                           f"{where} (apt-get install iproute2 nftables ethtool conntrack)")
        if host is None and os.geteuid() != 0:
            raise DutError("linux DUT: needs root (network namespaces); run with sudo")
        kcfg = ex.kernel_config()
        if kcfg:
            bad = [o for o in KERNEL_OPTIONS[self.mode] if kcfg.get(o) not in ("y", "m")]
            if bad:
                raise DutError(f"linux DUT mode {self.mode}: kernel {ex.kernel_release()} lacks "
                               f"{', '.join(bad)} (/proc/config.gz)")
        if self.mode == "nat":      # nft -c: the kernel evaluates the ruleset, nothing is applied
            cp = ex.run(["nft", "-c", "-f", "-"], input=self._ruleset(True, PORTS), check=False)
            if cp.returncode != 0:
                raise DutError(f"linux DUT mode nat: nftables NAT not usable: {cp.stderr.strip()}")

    @property
    def mode(self) -> str:
        return self.params["mode"]

    def peer_macs(self, host=None) -> dict[str, str]:
        """Destination MAC the generator writes on each tg port for this mode."""
        p0, p1 = host.ports[:2] if host is not None else PORTS
        if self.mode in ("bridge", "xconnect"):
            return {p0.tg.ifname: p1.tg.mac, p1.tg.ifname: p0.tg.mac}
        return {p0.tg.ifname: p0.dut.mac, p1.tg.ifname: p1.dut.mac}

    # --- setup / teardown --------------------------------------------------------
    @property
    def ports(self):
        return self.host.ports[:2]

    def setup(self, host) -> None:
        if self.host is not None:
            raise DutError("linux DUT: setup() called twice without teardown()")
        self.host = host
        try:
            getattr(self, f"_setup_{self.mode}")()
        except BaseException as e:      # also SIGINT/SIGTERM mid-setup: undo, then unwind
            try:
                self.teardown()
            except Exception as te:     # the setup error is the one to report
                e.add_note(f"(undoing the partial setup also failed: {te})")
            if isinstance(e, FwdbenchError) or not isinstance(e, Exception):
                raise
            if isinstance(e, OSError) or type(e).__name__ == "NetlinkError":   # ours / pyroute2's
                raise DutError(f"linux DUT mode {self.mode} in {host.name}: {e}") from e
            raise

    def _forwarding(self, on: bool) -> None:
        v = 1 if on else 0
        self.host.exec.sysctl_set({"net.ipv4.ip_forward": v,
                                   "net.ipv6.conf.all.forwarding": v})

    def _setup_router(self) -> None:
        ex = self.host.exec
        self._forwarding(True)
        self._done.append("forwarding")
        self._fib = {}
        families = [(socket.AF_INET, "routes", "ipv4")]
        if self.host.ipv6:
            families.append((socket.AF_INET6, "routes6", "ipv6"))
        self._done.append("routes")
        nh = []
        for fam, _k, _l in families:
            for idx, p in enumerate(self.ports):
                gw = p.tg.ip6 if fam == socket.AF_INET6 else p.tg.ip4
                nh.append(f"nexthop replace id {NHIDS[fam, idx]} via {gw} dev {p.dut.ifname} "
                          f"proto {RTPROT_FWDBENCH}")
        ex.run(["ip", "-batch", "-"], input="\n".join(nh) + "\n")
        for fam, key, label in families:
            specs, desc = fib_layout(self.params[key], fam, self.ports)
            t = time.perf_counter()
            desc["installed"] = ex.bulk_routes(specs)
            desc["install_s"] = round(time.perf_counter() - t, 3)
            self._fib[label] = desc

    def _ruleset(self, ipv6: bool, ports) -> str:
        p0, p1 = ports[:2]
        act4 = f"snat ip to {p1.dut.ip4}" if self.params["nat"] == "snat" else "masquerade"
        act6 = f"snat ip6 to {p1.dut.ip6}" if self.params["nat"] == "snat" else "masquerade"
        rules = [f'oifname "{p1.dut.ifname}" ip saddr {p0.flows4} counter {act4}']
        if ipv6:
            rules.append(f'oifname "{p1.dut.ifname}" ip6 saddr {p0.flows6} counter {act6}')
        return (f"table inet {NFT_TABLE} {{\n"
                f"  chain postrouting {{\n"
                f"    type nat hook postrouting priority srcnat; policy accept;\n"
                + "".join(f"    {r}\n" for r in rules)
                + "  }\n}\n")

    def _setup_nat(self) -> None:
        self._setup_router()
        self._nft_ruleset = self._ruleset(self.host.ipv6, self.ports)
        self._done.append("nft")
        self.host.exec.run(["nft", "-f", "-"], input=self._nft_ruleset)

    def _setup_bridge(self) -> None:
        ex = self.host.exec
        self._forwarding(False)
        self._done.append("bridge")
        ex.run(["ip", "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge",
                "stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"])
        ex.sysctl_set({f"net.ipv6.conf.{BRIDGE}.disable_ipv6": 1})
        learning = "on" if self.params["learning"] else "off"
        lines = []
        for p in self.ports:
            ifn = p.dut.ifname
            lines += [f"address flush dev {ifn}", f"link set dev {ifn} master {BRIDGE}",
                      f"link set dev {ifn} type bridge_slave learning {learning}"]
        ex.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n")
        if not self.params["learning"]:
            # static entries (NUD_NOARP): the other side's tester port behind each port
            ex.run(["bridge", "-batch", "-"], input="".join(
                f"fdb add {p.tg.mac} dev {p.dut.ifname} master static\n" for p in self.ports))
        ex.run(["ip", "link", "set", "dev", BRIDGE, "up"])

    def _setup_xconnect(self) -> None:
        ex = self.host.exec
        self._forwarding(False)
        self._done.append("tc")
        a, b = (p.dut.ifname for p in self.ports)
        lines = []
        for src, dst in ((a, b), (b, a)):
            lines += [f"qdisc add dev {src} ingress",
                      f"filter add dev {src} parent ffff: protocol all prio 1 u32 match u32 0 0 "
                      f"action mirred egress redirect dev {dst}"]
        ex.run(["tc", "-batch", "-"], input="\n".join(lines) + "\n")

    def teardown(self) -> None:
        host, self.host = self.host, None
        if host is None:
            return
        errors = []
        ex = host.exec
        for step in reversed(self._done):
            try:
                if step == "forwarding":
                    ex.sysctl_set({"net.ipv4.ip_forward": 0, "net.ipv6.conf.all.forwarding": 0})
                elif step == "routes":
                    self._flush_routes(ex)
                elif step == "nft":
                    ex.run(["nft", "delete", "table", "inet", NFT_TABLE], check=False)
                    ex.conntrack_flush()
                elif step == "bridge":
                    if ex.run(["ip", "link", "show", "dev", BRIDGE], check=False).returncode == 0:
                        ex.run(["ip", "link", "del", "dev", BRIDGE])
                elif step == "tc":
                    for p in host.ports[:2]:
                        ex.run(["tc", "qdisc", "del", "dev", p.dut.ifname, "ingress"], check=False)
            except Exception as e:      # keep undoing the rest
                errors.append(f"{step}: {e}")
        self._done = []
        try:
            host.restore_ports()
        except Exception as e:
            errors.append(f"baseline: {e}")
        if errors:
            raise DutError(f"linux DUT teardown ({self.mode}) in {host.name}: " + "; ".join(errors))

    @staticmethod
    def _flush_routes(ex: Executor) -> None:
        """Remove the FIB: deleting our nexthop objects drops every route using them."""
        ex.run(["ip", "-force", "-batch", "-"], check=False,
               input="".join(f"nexthop del id {i}\n" for i in NHIDS.values()))
        for fam in ("-4", "-6"):        # anything of ours not using them (none normally)
            ex.run(["ip", fam, "route", "flush", "proto", str(RTPROT_FWDBENCH)], check=False)

    # --- observation ---------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        if self.host is None:
            raise DutError("linux DUT: counters() before setup()")
        ex = self.host.exec
        out: dict[str, int] = {}
        for ifn, c in self.host.interface_counters().items():
            for k, v in c.items():
                out[f"{ifn}.{k}"] = v
        if self.mode in ("router", "nat"):
            snmp = ex.read_proc_net("snmp")
            out |= _snmp_fields(snmp, "Ip", {"ForwDatagrams": "ip4.forwarded",
                                              "InNoRoutes": "ip4.no_route",
                                              "InAddrErrors": "ip4.addr_errors",
                                              "OutDiscards": "ip4.out_discards"})
            if self.host.ipv6:
                snmp6 = ex.read_proc_net("snmp6")
                for line in snmp6.splitlines():
                    k, _, v = line.partition(" ")
                    name = {"Ip6OutForwDatagrams": "ip6.forwarded",
                            "Ip6InNoRoutes": "ip6.no_route",
                            "Ip6InAddrErrors": "ip6.addr_errors"}.get(k)
                    if name:
                        out[name] = int(v.strip())
        if self.mode == "nat":
            cp = ex.run(["nft", "-j", "list", "table", "inet", NFT_TABLE], check=False)
            if cp.returncode == 0:
                pk = by = 0
                for item in json.loads(cp.stdout).get("nftables", []):
                    for e in item.get("rule", {}).get("expr", []):
                        if "counter" in e:
                            pk += e["counter"]["packets"]
                            by += e["counter"]["bytes"]
                out["nat.packets"] = pk
                out["nat.bytes"] = by
            n = ex.sysctl_get(["net.netfilter.nf_conntrack_count"])
            if n["net.netfilter.nf_conntrack_count"] is not None:
                out["conntrack.entries"] = int(n["net.netfilter.nf_conntrack_count"])
        return out

    def describe(self) -> dict[str, Any]:
        host = self.host
        d: dict[str, Any] = {"dut": self.name, "mode": self.mode, "params": dict(self.params),
                             "peer_macs": self.peer_macs(host)}
        if host is None:
            d["kernel"] = os.uname().release
            return d
        ex = host.exec
        d["kernel"] = ex.kernel_release()
        ports = host.ports[:2]
        keys = ["net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding",
                "net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter",
                "net.ipv6.conf.all.accept_dad", "net.ipv4.fib_multipath_hash_policy"]
        for p in ports:
            keys.append(f"net.ipv4.conf.{p.dut.ifname}.rp_filter")
        if self.mode == "nat":
            keys += ["net.netfilter.nf_conntrack_max", "net.netfilter.nf_conntrack_buckets",
                     "net.netfilter.nf_conntrack_udp_timeout"]
        d["sysctls"] = ex.sysctl_get(keys)
        # global (not per namespace) sysctls: the host namespace's on a netns host
        d["sysctls"] |= (Executor(None) if host.kind == "netns" else ex).sysctl_get(
            ["net.core.netdev_budget", "net.core.netdev_budget_usecs", "net.core.dev_weight",
             "net.core.netdev_max_backlog"])
        offloads = {}
        for p in ports:
            cp = ex.run(["ethtool", "-k", p.dut.ifname], check=False)
            offloads[p.dut.ifname] = _parse_ethtool_k(cp.stdout) if cp.returncode == 0 else None
            try:
                offloads[p.dut.ifname + ".threaded"] = ex.read_sysfs(
                    f"/sys/class/net/{p.dut.ifname}/threaded")
            except FwdbenchError:
                pass
        d["offloads"] = offloads
        d["tools"] = {}
        for tool, argv in (("iproute2", ["ip", "-V"]), ("nftables", ["nft", "--version"])):
            try:
                d["tools"][tool] = ex.run(argv).stdout.strip()
            except FwdbenchError:
                d["tools"][tool] = None
        if self.mode in ("router", "nat"):
            d["fib"] = self._fib
        if self.mode == "nat":
            d["nft_ruleset"] = self._nft_ruleset
        if self.mode == "bridge":
            d["bridge"] = {"name": BRIDGE, "mac": BRIDGE_MAC, "stp": False, "mcast_snooping": False,
                           "learning": self.params["learning"],
                           "static_fdb": {} if self.params["learning"] else
                           {p.dut.ifname: p.tg.mac for p in ports}}
        if self.mode == "xconnect":
            d["xconnect"] = {"tc": "ingress u32 match-all, mirred egress redirect",
                             "pairs": [f"{ports[0].dut.ifname}->{ports[1].dut.ifname}",
                                       f"{ports[1].dut.ifname}->{ports[0].dut.ifname}"]}
        return d


#: kernel options each mode needs (checked when /proc/config.gz exists)
KERNEL_OPTIONS = {
    "router": ("CONFIG_VETH",),
    "nat": ("CONFIG_VETH", "CONFIG_NF_TABLES", "CONFIG_NFT_NAT", "CONFIG_NF_CONNTRACK"),
    "bridge": ("CONFIG_VETH", "CONFIG_BRIDGE"),
    "xconnect": ("CONFIG_VETH", "CONFIG_NET_CLS_U32", "CONFIG_NET_ACT_MIRRED"),
}


def _snmp_fields(text: str, section: str, want: dict[str, str]) -> dict[str, int]:
    """Pick fields of a /proc/net/snmp section (header line + value line)."""
    lines = [ln.split() for ln in text.splitlines() if ln.startswith(section + ":")]
    out = {}
    if len(lines) >= 2:
        for k, v in zip(lines[0][1:], lines[1][1:]):
            if k in want:
                out[want[k]] = int(v)
    return out


def _parse_ethtool_k(text: str) -> dict[str, str]:
    """``ethtool -k`` output -> {feature: "on"|"off"|"off [fixed]"...}."""
    out = {}
    for line in text.splitlines()[1:]:
        k, sep, v = line.strip().partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out
