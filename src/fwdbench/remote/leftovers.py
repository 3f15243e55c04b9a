"""What a run leaves on the DUT host, and how a later run removes it.

Each run keeps a directory ``<workdir>/runs/<run tag>/`` on the DUT host:
``state.json`` (which tester process owns the run, the DUT ports, the
settings the run changed and their values before), ``proc/`` (pid files of
the programs it started) and one directory per DUT (configs, sockets). A
clean exit removes it. When a run ends without that (a lost connection, a
crash, kill -9), the next run on the same DUT host finds the directory,
sees that its owner is gone, and scrubs what fwdbench can have left, using
fwdbench's own markers only:

- processes whose environment carries ``FWDBENCH_RUN=<run tag>``;
- XDP programs and tc ingress qdiscs on the run's DUT ports, the ports'
  bridge membership, the bridge ``fbbr0`` (dut/linux.py), the nexthop
  objects and routes of protocol RTPROT_FWDBENCH, nftables table
  ``inet fwdbench`` and the conntrack entries;
- shared-memory files named ``<run tag>-*`` (VPP) and DPDK runtime
  directories ``/var/run/dpdk/<run tag>-*`` (VPP's dpdk plugin);
- testpmd's DPDK runtime directories nobody locks and its hugepage
  reservations whose owner is gone (their hugetlbfs mount unmounted, the
  pages given back: dut/dpdk_host.py);
- the run's addresses and neighbours on the ports, the sysctls it changed
  (back to the saved values), the run directory.
"""
from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

#: kill every process carrying the tag: the pids found
FIND_TAGGED = ('for e in /proc/[0-9]*/environ; do '
               'if grep -qzx "FWDBENCH_RUN=$1" "$e" 2>/dev/null; then '
               'p=${e#/proc/}; echo "${p%/environ}"; fi; done')


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def owner_record() -> dict[str, Any]:
    """This process, as the owner of a run: found alive again only if it is this one."""
    from ..lab.cleanup import proc_start_time
    pid = os.getpid()
    return {"hostname": socket.gethostname(), "boot_id": boot_id(), "pid": pid,
            "start": proc_start_time(pid)}


def owner_state(owner: dict[str, Any]) -> str:
    """``alive``, ``gone`` (its tester process ended, or the tester rebooted since) or
    ``other`` (another tester's)."""
    from ..lab.cleanup import proc_start_time
    if owner.get("hostname") != socket.gethostname():
        return "other"
    if owner.get("boot_id") != boot_id():
        return "gone"
    pid = owner.get("pid")
    if pid and proc_start_time(int(pid)) == owner.get("start"):
        return "alive"
    return "gone"


def run_dir(workdir: str, tag: str) -> str:
    return f"{workdir}/runs/{tag}"


def write_state(ex, workdir: str, state: dict[str, Any]) -> None:
    ex.write_file(f"{run_dir(workdir, state['tag'])}/state.json",
                  json.dumps(state, indent=1, sort_keys=True) + "\n", 0o644)


def list_states(ex, workdir: str) -> list[dict[str, Any]]:
    """The run states on the DUT host (a run directory without a readable state: its tag only)."""
    cp = ex.run(["find", f"{workdir}/runs", "-mindepth", "1", "-maxdepth", "1", "-type", "d"],
                check=False)
    dirs = [d for d in cp.stdout.split() if d]
    files = ex.read_files([f"{d}/state.json" for d in dirs])
    out = []
    for d in dirs:
        text = files.get(f"{d}/state.json")
        try:
            st = json.loads(text) if text else None
        except ValueError:
            st = None
        out.append(st if isinstance(st, dict) else {"tag": d.rsplit("/", 1)[-1], "corrupt": True})
    return out


def scrub(ex, workdir: str, state: dict[str, Any]) -> list[str]:
    """Remove what the run ``state`` left on the DUT host; what was found, for the record."""
    from ..dut.linux import BRIDGE, NFT_TABLE, NHIDS
    from ..lab.netlink import RTPROT_FWDBENCH

    tag = state["tag"]
    found: list[str] = []
    # 1. its processes (vfwd, VPP), by their tag
    pids = ex.run(["sh", "-c", FIND_TAGGED, "sh", tag], check=False).stdout.split()
    if pids:
        found.append(f"{len(pids)} process(es) still running ({_comms(ex, pids)})")
        ex.run(["kill", "-TERM", *pids], check=False)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            alive = ex.run(["sh", "-c", FIND_TAGGED, "sh", tag], check=False).stdout.split()
            if not alive:
                break
            time.sleep(0.2)
        else:
            ex.run(["kill", "-KILL", *alive], check=False)
    # 2. the data planes' kernel state on its ports
    ports = [p for p in state.get("ports", []) if isinstance(p, str)]
    links = _links(ex)
    lines = []
    for p in ports:
        info = links.get(p)
        if info is None:
            continue
        if info.get("xdp"):
            found.append(f"an XDP program on {p}")
        if info.get("master"):
            found.append(f"{p} in {info['master']}")
        lines += [f"link set dev {p} xdpgeneric off", f"link set dev {p} xdpdrv off",
                  f"link set dev {p} nomaster"]
    if BRIDGE in links:
        found.append(f"bridge {BRIDGE}")
        lines.append(f"link del {BRIDGE}")
    nh = ex.run(["ip", "nexthop", "show"], check=False).stdout
    ours = [i for i in NHIDS.values() if f"id {i} " in nh]
    if ours:
        found.append(f"nexthop objects {', '.join(map(str, ours))} (and their routes)")
    lines += [f"nexthop del id {i}" for i in ours]
    if lines:
        ex.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", check=False)
    for fam in ("-4", "-6"):
        r = ex.run(["ip", fam, "route", "show", "proto", str(RTPROT_FWDBENCH)], check=False)
        if r.stdout.strip():
            found.append(f"IP{fam[1]} routes of protocol {RTPROT_FWDBENCH}")
            ex.run(["ip", fam, "route", "flush", "proto", str(RTPROT_FWDBENCH)], check=False)
    for p in ports:
        if p in links:
            q = ex.run(["tc", "qdisc", "show", "dev", p, "ingress"], check=False).stdout
            if "ingress" in q:
                found.append(f"a tc ingress qdisc on {p}")
                ex.run(["tc", "qdisc", "del", "dev", p, "ingress"], check=False)
    if ex.run(["nft", "list", "table", "inet", NFT_TABLE], check=False).returncode == 0:
        found.append(f"nftables table inet {NFT_TABLE}")
        ex.run(["nft", "delete", "table", "inet", NFT_TABLE], check=False)
        if not ex.missing_tools(["conntrack"]):
            ex.run(["conntrack", "-F"], check=False)
    # 3. shared memory, addresses, settings, the run directory
    shm = ex.run(["find", "/dev/shm", "-maxdepth", "1", "-name", f"{tag}-*"],
                 check=False).stdout.split()
    if shm:
        found.append(f"{len(shm)} shared-memory file(s)")
        ex.run(["rm", "-f", "--", *shm], check=False)
    eal = ex.run(["find", "/var/run/dpdk", "-mindepth", "1", "-maxdepth", "1", "-name",
                  f"{tag}-*"], check=False).stdout.split()
    if eal:         # VPP's dpdk plugin: the EAL's runtime directory (file-prefix)
        found.append(f"{len(eal)} DPDK runtime directory(ies)")
        ex.run(["rm", "-rf", "--", *eal], check=False)
    found += sweep_dpdk(ex)
    restore(ex, state)
    ex.run(["rm", "-rf", "--", run_dir(workdir, tag)], check=False)
    return found


def sweep_dpdk(ex) -> list[str]:
    """testpmd's leftovers on the DUT host (dut/dpdk_host.py): what was found."""
    from ..dut.dpdk_host import sweep_stale_hugepages, sweep_stale_runtime_dirs
    found = []
    dirs = sweep_stale_runtime_dirs(ex=ex)
    if dirs:
        found.append(f"DPDK runtime directories {', '.join(dirs)}")
    huge = sweep_stale_hugepages(ex=ex)
    if huge:
        found.append(f"the hugepages reserved for {', '.join(huge)} (unmounted, given back)")
    return found


def restore(ex, state: dict[str, Any]) -> None:
    """Put back what the run changed on its ports and sysctls (its ``saved`` record)."""
    saved = state.get("saved") or {}
    lines = []
    for p, addrs in (saved.get("added") or {}).items():
        # flush, not del: `ip neigh del` of an absent entry ends the whole batch
        for n in addrs.get("neighbours", []):
            lines.append(f"neigh flush to {n} dev {p} nud permanent")
        for a in addrs.get("addresses", []):
            lines.append(f"address del {a} dev {p}")
    for p, link in (saved.get("links") or {}).items():
        if link.get("mtu"):
            lines.append(f"link set dev {p} mtu {int(link['mtu'])}")
        lines.append(f"link set dev {p} {'up' if link.get('up') else 'down'}")
    if lines:
        ex.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", check=False)
    sysctls = {k: v for k, v in (saved.get("sysctls") or {}).items() if v is not None}
    if sysctls:
        try:
            ex.sysctl_set(sysctls)
        except Exception:       # one gone with its port: set the others one by one
            for k, v in sysctls.items():
                try:
                    ex.sysctl_set({k: v})
                except Exception:
                    pass


def _links(ex) -> dict[str, dict[str, Any]]:
    cp = ex.run(["ip", "-j", "-d", "link", "show"], check=False)
    try:
        return {ln["ifname"]: ln for ln in json.loads(cp.stdout or "[]")}
    except (ValueError, KeyError, TypeError):
        return {}


def _comms(ex, pids: list[str]) -> str:
    got = ex.read_files([f"/proc/{p}/comm" for p in pids])
    names = sorted({(t or "?").strip() for t in got.values()})
    return ", ".join(names)
