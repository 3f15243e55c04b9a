"""TRex's platform config (``trex_cfg.yaml``) for a tester host.

One YAML document as TRex's manual describes it (trex_book, "Basic
Configuration"): the ports in order (Linux interfaces, PCI addresses or
DPDK ``--vdev=`` strings), their source and destination MACs, the
file prefix that keeps two TRex instances on one host apart, and the
cores. With one generator CPU TRex runs ``low_end`` (every thread on that
core, sleeping instead of busy-waiting); with three or more, the first is
the master thread, the second the latency/RX thread and the rest transmit.
The text is written by hand (the few keys are fixed; no YAML library is a
dependency), every value checked so none can break the document.

A lab port on the memif link is a ``net_memif`` vdev (``memif_device``): the
port's control socket (a path, not DPDK's default abstract name), TRex's
role on it (DPDK's names: ``server`` where the DUT is the memif slave and
connects, ``client`` where the DUT listens), the interface id and the
tester port's MAC of the addressing plan.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import GeneratorError

MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
#: a Linux interface name, a PCI address (0000:03:00.0, 03:00.0) or a DPDK vdev
PORT_RE = re.compile(r"^([A-Za-z0-9_.:@-]{1,15}|--vdev=[A-Za-z0-9_.,=/:-]{1,200})$")
SOCKET_RE = re.compile(r"^/[A-Za-z0-9_./-]{1,106}$")
PREFIX_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class CfgPort:
    """One TRex port: the device, its source MAC and the MAC it sends to."""
    device: str          # "tg0", "0000:03:00.0", "--vdev=net_memif0,..."
    src_mac: str
    dest_mac: str


#: DPDK's memif roles for fwdbench's (MemifLink.peer_role: the generator's role)
DPDK_MEMIF_ROLE = {"master": "server", "slave": "client"}


def memif_device(index: int, link, mac: str) -> str:
    """TRex's port ``index`` as DPDK's memif PMD on ``link`` (dut.host.MemifLink),
    in the role the DUT leaves the generator, sending from ``mac``."""
    role = DPDK_MEMIF_ROLE.get(link.peer_role)
    if role is None:
        raise GeneratorError(f"trex: memif role {link.peer_role!r}: master or slave")
    if not SOCKET_RE.match(link.socket):
        raise GeneratorError(f"trex: memif socket {link.socket!r}: an absolute path of at "
                             "most 107 letters, digits, _ . / - (DPDK's vdev arguments "
                             "split at , and =)")
    # the client brings the rings: their size (rsize, log2) is its to give
    rsize = (f",rsize={int(link.ring_size).bit_length() - 1}"
             if role == "client" and link.ring_size else "")
    return (f"--vdev=net_memif{index},role={role},socket={link.socket},socket-abstract=no,"
            f"id={int(link.id)},mac={mac}{rsize}")


@dataclass(frozen=True)
class TrexCfg:
    ports: tuple[CfgPort, ...]
    cpus: tuple[int, ...]           # the generator's CPUs (at least one)
    prefix: str                     # DPDK --file-prefix, unique per instance
    rpc_port: int = 4501            # [TCP port] ZMQ RPC
    pub_port: int = 4500            # [TCP port] ZMQ publisher (async events)

    def __post_init__(self):
        if not self.ports or len(self.ports) % 2:
            raise GeneratorError(f"trex: {len(self.ports)} ports; TRex needs them in pairs")
        for p in self.ports:
            if not PORT_RE.match(p.device):
                raise GeneratorError(f"trex: port {p.device!r} is not an interface name, "
                                     "PCI address or --vdev= string")
            for mac in (p.src_mac, p.dest_mac):
                if not MAC_RE.match(mac):
                    raise GeneratorError(f"trex: port {p.device}: {mac!r} is not a MAC "
                                         "address (aa:bb:cc:dd:ee:ff, lower case)")
        if not PREFIX_RE.match(self.prefix):
            raise GeneratorError(f"trex: file prefix {self.prefix!r}: letters, digits, _ and -")
        if not self.cpus or len(self.cpus) == 2 or any(c < 0 for c in self.cpus):
            raise GeneratorError(f"trex: CPUs {list(self.cpus)}: give one (low_end) or at "
                                 "least three (master, latency/RX, transmit)")
        if len(self.cpus) > 1 and (len(self.cpus) - 2) < len(self.ports) // 2:
            raise GeneratorError(f"trex: CPUs {list(self.cpus)}: each port pair needs a "
                                 "transmit CPU besides the master and latency ones")
        if self.rpc_port == self.pub_port:
            raise GeneratorError("trex: the RPC and publisher ports must differ")

    @property
    def low_end(self) -> bool:
        return len(self.cpus) == 1

    def render(self) -> str:
        lines = [
            "# written by fwdbench (traffic/trex/config.py)",
            f"- port_limit: {len(self.ports)}",
            "  version: 2",
            "  interfaces: [" + ", ".join(f"'{p.device}'" for p in self.ports) + "]",
            f"  prefix: {self.prefix}",
            f"  zmq_rpc_port: {self.rpc_port}",
            f"  zmq_pub_port: {self.pub_port}",
        ]
        if self.low_end:
            lines += ["  low_end: true", f"  low_end_core: {self.cpus[0]}"]
        else:
            pairs = len(self.ports) // 2
            per = (len(self.cpus) - 2) // pairs     # transmit threads per port pair
            lines += [f"  c: {per}",
                      "  platform:",
                      f"    master_thread_id: {self.cpus[0]}",
                      f"    latency_thread_id: {self.cpus[1]}",
                      "    dual_if:"]
            for i in range(pairs):
                tx = self.cpus[2 + i * per: 2 + (i + 1) * per]
                lines += ["      - socket: 0", f"        threads: [{', '.join(map(str, tx))}]"]
        lines.append("  port_info:")
        for p in self.ports:
            lines += [f"    - src_mac: '{p.src_mac}'", f"      dest_mac: '{p.dest_mac}'"]
        return "\n".join(lines) + "\n"
