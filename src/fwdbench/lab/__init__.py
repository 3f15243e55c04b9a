"""The local netns lab (testbed ``netns``).

::

    netns fb-<id>-tg                           netns fb-<id>-dut
    tg0 02:fb:00:00:00:01                      dut0 02:fb:00:00:01:01
        198.18.0.1/24  2001:2::1/64  <== veth ==>  198.18.0.2/24  2001:2::2/64
    tg1 02:fb:00:00:00:02                      dut1 02:fb:00:00:01:02
        198.19.0.1/24  2001:2:0:1::1/64 <==veth==> 198.19.0.2/24  2001:2:0:1::2/64

Flow ranges (what the generator puts in packets):

- behind tg0: IPv4 198.18.128.0/17, IPv6 2001:2:0:10::/64
- behind tg1: IPv4 198.19.128.0/17, IPv6 2001:2:0:11::/64

Only RFC 2544/5180 benchmarking ranges (198.18.0.0/15, 2001:2::/48) are
used, and only inside the two namespaces; no lab interface ever exists in
the host namespace (the dut* peers are created directly in the DUT netns).
Neighbours are static (``nud permanent``) on both sides, IPv6 DAD, router
solicitations and link-local addresses are off, rp_filter is off, so no
ARP/ND or other control traffic crosses the links during trials.

Public API::

    lab = Lab.up(LabConfig(run_id=None, gen_cpu=0, dut_cpu=1, kernel_tuning=True, ipv6=True))
    lab.run_id, lab.tg_ns, lab.dut_ns, lab.ports, lab.gen_cpu, lab.dut_cpu
    lab.tg_exec / lab.dut_exec      # Executor: run(argv), popen(argv), sysctl_set(), ...
    lab.interface_counters("dut")   # {ifname: {rx_packets, ...}}
    lab.describe(); lab.down()      # or: with Lab.up(cfg) as lab: ...
    list_labs(); down_all(); down_lab(run_id); Lab.attach(run_id)

See docs/lab.md for tuning, crash safety and cleanup.
"""
from .addressing import BENCH_NET4, BENCH_NET6, BRIDGE_MAC, FLOW_NETS, PORTS, Endpoint, PortPair
from .cleanup import LabInfo, down_all, down_lab, list_labs
from .executor import CommandError, Executor
from .netns import Lab, LabConfig

__all__ = [
    "Lab", "LabConfig", "LabInfo", "Executor", "CommandError", "Endpoint", "PortPair",
    "PORTS", "FLOW_NETS", "BRIDGE_MAC", "BENCH_NET4", "BENCH_NET6", "list_labs", "down_all", "down_lab",
]
