"""TRex's STL client in a process of its own: JSON requests in, JSON answers out.

Run by fwdbench on the tester host (in the generator's namespace, through
the tester's executor) as ``PYTHON agent.py CLIENT_DIR``, where CLIENT_DIR is
the TRex install's ``automation/trex_control_plane/interactive``. It imports
nothing of fwdbench: TRex's client puts its own bundled libraries (scapy
2.4.3, PyYAML 3.11, a ctypes pyzmq) ahead of everything on ``sys.path`` and
evicts modules of the same names from ``sys.modules``, which inside
fwdbench's process would swap the venv's scapy for TRex's under fwdbench's
feet; here it only meets itself.

One request per line on stdin, one answer per line on the channel fd
(stdout as started; the client's own prints go to stderr):
``{"cmd": "connect", ...}``, ``{"cmd": "trial", "plan": {...}}``,
``{"cmd": "links"}`` (each port's link, as the server sees it now),
``{"cmd": "ping"}``, ``{"cmd": "close"}``. Answers are ``{"ok": true, ...}``
or ``{"ok": false, "error": "..."}``. The plan format is written by
fwdbench.traffic.trex.plan (build_plan); the answer to ``trial`` is read by
fwdbench.traffic.trex.result.
"""
import json
import os
import sys
import time
import traceback


def _channel():
    """Keep the real stdout for answers; everything else printed goes to stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def _plain(x):
    """JSON-able copy of TRex's stats (StatNotAvailable and other objects -> None)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, float)):
        return x
    return None


def _kernel(ifnames):
    """The kernel's counters of the tester's interfaces (sysfs of this namespace)."""
    out = {}
    for ifn in ifnames:
        d = {}
        for k in ("tx_packets", "tx_bytes", "tx_dropped", "tx_errors",
                  "rx_packets", "rx_dropped"):
            try:
                with open(f"/sys/class/net/{ifn}/statistics/{k}") as f:
                    d[k] = int(f.read())
            except (OSError, ValueError):
                d[k] = None
        out[ifn] = d
    return out


class Agent:
    def __init__(self, client_dir):
        sys.path.insert(0, client_dir)
        import trex.stl.api as api      # noqa: E402  (TRex's own path setup runs here)
        self.api = api
        self.c = None
        self.ports = []

    # ---- requests ----------------------------------------------------------

    def connect(self, req):
        api = self.api
        if self.c is not None:
            try:
                self.c.disconnect()
            except Exception:
                pass
        self.c = api.STLClient(server=req.get("server", "127.0.0.1"),
                               sync_port=int(req.get("sync_port", 4501)),
                               async_port=int(req.get("async_port", 4500)),
                               verbose_level="error")
        self.c.set_timeout(int(req.get("rpc_timeout_s", 5)))
        self.c.connect()
        self.ports = [int(p) for p in req.get("ports", [0, 1])]
        have = self.c.get_all_ports()
        missing = [p for p in self.ports if p not in have]
        if missing:
            raise RuntimeError(f"the TRex server has ports {list(have)}, not {missing}")
        # ports another user holds on an attached server are refused, not taken
        self.c.acquire(ports=self.ports, force=False)
        self.c.reset(ports=self.ports)
        info = self.c.get_server_version()
        sysinfo = self.c.get_server_system_info()
        ports = []
        for p in self.ports:
            attr = self.c.get_port_attr(p)
            pi = self.c.get_port_info(ports=[p])[0]
            ports.append({"port": p, "driver": pi.get("driver"), "description": pi.get("description"),
                          "src_mac": pi.get("src_mac") or pi.get("hw_mac"),
                          "link": attr.get("link"), "speed": pi.get("speed")})
        return {"server_version": _plain(info), "system": _plain(
            {k: sysinfo.get(k) for k in ("core_type", "dp_core_count",
                                          "dp_core_count_per_port", "hostname", "port_count")}),
                "ports": _plain(ports)}

    def links(self, req):
        return {"links": {str(p): self.c.get_port_attr(p).get("link") for p in self.ports}}

    def ping(self, req):
        self.c.ping_rpc_server()
        return {}

    def _streams(self, specs):
        api = self.api
        from scapy.layers.l2 import Ether
        from scapy.layers.inet import IP, UDP
        from scapy.layers.inet6 import IPv6
        out = {}
        for s in specs:
            if s["l3"] == "ipv4":
                l3 = IP(src=s["src_ip"], dst=s["dst_ip"], ttl=64)
                l3name, off = "IP", 0
            else:
                l3 = IPv6(src=s["src_ip"], dst=s["dst_ip"], hlim=64)
                l3name, off = "IPv6", 12           # the low 32 bits of an address vary
            base = Ether(src=s["src_mac"], dst=s["dst_mac"]) / l3 / UDP(
                sport=s["sport"], dport=s["dport"])
            pad = s["frame_size"] - 4 - len(base)
            pkt = base / (b"\x00" * max(pad, 0))
            ins = []
            for v in s.get("vars", []):
                name, field = v["field"], v["field"]
                if v["random"]:
                    ins.append(api.STLVmFlowVarRepeatableRandom(
                        name=name, size=v["size"], min_value=v["min"], max_value=v["max"],
                        seed=v["seed"], limit=v["limit"]))
                else:
                    ins.append(api.STLVmFlowVar(name=name, size=v["size"], op="inc",
                                                min_value=v["min"], max_value=v["max"]))
                where = {"src_ip": f"{l3name}.src", "dst_ip": f"{l3name}.dst",
                         "src_port": "UDP.sport", "dst_port": "UDP.dport"}[field]
                ins.append(api.STLVmWrFlowVar(fv_name=name, pkt_offset=where,
                                              offset_fixup=off if field.endswith("_ip") else 0))
            # IPv4 header and UDP checksums, in software where the port has no offload
            ins.append(api.STLVmFixChecksumHw(l3_offset=l3name, l4_offset="UDP",
                                              l4_type=api.CTRexVmInsFixHwCs.L4_TYPE_UDP))
            stats = None
            if s.get("stats") == "flow":
                stats = api.STLFlowStats(pg_id=s["pg_id"])
            elif s.get("stats") == "latency":
                stats = api.STLFlowLatencyStats(pg_id=s["pg_id"])
            st = api.STLStream(name=s["name"],
                               packet=api.STLPktBuilder(pkt=pkt, vm=api.STLScVmRaw(ins)),
                               mode=api.STLTXCont(pps=s["pps"]), flow_stats=stats,
                               mac_src_override_by_pkt=True,
                               mac_dst_override_mode=api.STLStreamDstMAC_PKT)
            out.setdefault(s["port"], []).append(st)
        return out

    def _run(self, streams, duration_s, drain_ms):
        c = self.c
        tx = sorted(streams)
        c.remove_all_streams(ports=self.ports)
        for port, sts in streams.items():
            c.add_streams(sts, ports=[port])
        c.clear_stats(ports=self.ports)
        return tx

    def trial(self, req):
        plan = req["plan"]
        c = self.c
        drain_ms = int(plan["drain_ms"])
        ifnames = plan["kernel_ifaces"]
        warmup = plan.get("warmup_s", 0) or 0
        if warmup > 0:
            warm = self._streams([dict(s, stats=None) for s in plan["streams"]
                                  if s["role"] == "load"])
            tx = self._run(warm, warmup, drain_ms)
            c.start(ports=tx, mult="1", duration=warmup, force=True)
            c.wait_on_traffic(ports=tx, timeout=warmup + plan["stall_s"], rx_delay_ms=drain_ms)
        streams = self._streams(plan["streams"])
        tx = self._run(streams, plan["duration_s"], drain_ms)
        k0 = _kernel(ifnames)
        t0 = time.monotonic()
        c.start(ports=tx, mult="1", duration=plan["duration_s"], force=True)
        t1 = time.monotonic()
        # TRex sends every frame of the duration, late if it falls behind (its DP
        # core's schedule slips): as fwdgen, it may catch up for 5 % of the
        # duration (0.1 s at least); then it is stopped and what it had not sent
        # is not sent. When its ports go idle (its async events) ends the span.
        T = plan["duration_s"]
        deadline = t1 + T + max(0.05 * T, 0.1)
        stopped = False
        while c.is_traffic_active(ports=tx):
            if time.monotonic() > deadline:
                stopped = True
                break
            time.sleep(0.002)
        t2 = time.monotonic()
        if stopped:
            c.stop(ports=tx, rx_delay_ms=drain_ms)
        if not stopped:
            c.wait_on_traffic(ports=tx, timeout=plan["stall_s"], rx_delay_ms=drain_ms)
        stats = c.get_stats(ports=self.ports)
        k1 = _kernel(ifnames)
        xstats = {}
        for p in self.ports:
            try:
                xstats[str(p)] = {k: v for k, v in c.get_xstats(p).items() if v}
            except Exception as e:          # not every driver has them
                xstats[str(p)] = {"error": str(e)}
        warnings = [str(w) for w in (c.get_warnings() or [])]
        c.remove_all_streams(ports=self.ports)
        return {"stats": _plain(stats), "xstats": _plain(xstats),
                "kernel": {"before": k0, "after": k1},
                "times": {"start_call_s": t1 - t0, "tx_s": t2 - t1, "stopped": stopped},
                "warnings": warnings}

    def close(self, req):
        if self.c is not None:
            try:
                self.c.stop(ports=self.ports)
            except Exception:
                pass
            self.c.disconnect()
            self.c = None
        return {}


def main():
    out = _channel()
    if len(sys.argv) != 2:
        out.write(json.dumps({"ok": False, "error": "usage: agent.py TREX_CLIENT_DIR"}) + "\n")
        return 2
    try:
        agent = Agent(sys.argv[1])
    except Exception as e:
        out.write(json.dumps({"ok": False, "error": f"cannot import TRex's STL client from "
                                                     f"{sys.argv[1]}: {type(e).__name__}: {e}"})
                  + "\n")
        return 3
    out.write(json.dumps({"ok": True, "ready": True, "python": sys.version.split()[0]}) + "\n")
    for line in sys.stdin:
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd not in ("connect", "links", "ping", "trial", "close"):
                raise ValueError(f"unknown command {cmd!r}")
            if cmd != "connect" and agent.c is None:
                raise RuntimeError("not connected")
            ans = {"ok": True, **getattr(agent, cmd)(req)}
        except Exception as e:
            ans = {"ok": False, "error": f"{type(e).__name__}: {e}".strip(),
                   "where": traceback.format_exc(limit=3)[-600:]}
        out.write(json.dumps(ans) + "\n")
        if req.get("cmd") == "close":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
