"""A host's facts for the report's environment section, read through an executor
(the DUT host over SSH, or this host for the tester's ports).

CPU model, the frequency governor of the given CPUs, isolated and nohz_full
CPUs, kernel release and command line; per port the NIC driver, its version
and firmware (``ethtool -i``), PCI address, NUMA node, MAC, MTU, speed and
the CPUs each of its IRQs may run on. A fact that cannot be read is None.
"""
from __future__ import annotations

from typing import Any, Sequence


def _strip(v: str | None) -> str | None:
    return None if v is None else v.strip()


def cpu_model(cpuinfo: str | None) -> str | None:
    for line in (cpuinfo or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def parse_ethtool_i(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


def host_facts(ex, ports: Sequence[str], cpus: Sequence[int]) -> dict[str, Any]:
    """Facts of ``ex``'s host, its ports ``ports`` (interface names) and CPUs ``cpus``."""
    paths = ["/proc/cpuinfo", "/proc/cmdline", "/proc/sys/kernel/osrelease",
             "/proc/sys/kernel/version", "/proc/sys/kernel/hostname", "/etc/os-release",
             "/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full",
             "/sys/devices/system/cpu/online"]
    for c in cpus:
        base = f"/sys/devices/system/cpu/cpu{c}/cpufreq"
        paths += [f"{base}/scaling_governor", f"{base}/scaling_driver",
                  f"{base}/base_frequency", f"{base}/cpuinfo_max_freq"]
    for p in ports:
        base = f"/sys/class/net/{p}"
        paths += [f"{base}/address", f"{base}/mtu", f"{base}/speed",
                  f"{base}/device/numa_node", f"{base}/operstate"]
    got = ex.read_files(paths)
    osr = dict(line.partition("=")[::2] for line in (got["/etc/os-release"] or "").splitlines()
               if "=" in line)
    facts: dict[str, Any] = {
        "hostname": _strip(got["/proc/sys/kernel/hostname"]),
        "os": osr.get("PRETTY_NAME", "").strip('"') or None,
        "kernel": _strip(got["/proc/sys/kernel/osrelease"]),
        "kernel_version": _strip(got["/proc/sys/kernel/version"]),
        "cmdline": _strip(got["/proc/cmdline"]),
        "cpu_model": cpu_model(got["/proc/cpuinfo"]),
        "cpus_online": _strip(got["/sys/devices/system/cpu/online"]),
        "isolated_cpus": _strip(got["/sys/devices/system/cpu/isolated"]),
        "nohz_full_cpus": _strip(got["/sys/devices/system/cpu/nohz_full"]),
        "virtualisation": ("virtual machine" if " hypervisor" in (got["/proc/cpuinfo"] or "")
                           else "bare metal" if got["/proc/cpuinfo"] else None),
        "cpus": {},
        "ports": {},
    }
    for c in cpus:
        base = f"/sys/devices/system/cpu/cpu{c}/cpufreq"
        facts["cpus"][str(c)] = {
            "governor": _strip(got[f"{base}/scaling_governor"]),
            "freq_driver": _strip(got[f"{base}/scaling_driver"]),
            "base_khz": _strip(got[f"{base}/base_frequency"]),
            "max_khz": _strip(got[f"{base}/cpuinfo_max_freq"])}
    for p in ports:
        base = f"/sys/class/net/{p}"
        cp = ex.run(["ethtool", "-i", p], check=False, timeout=15)
        info = parse_ethtool_i(cp.stdout) if cp.returncode == 0 else {}
        numa = _strip(got[f"{base}/device/numa_node"])
        facts["ports"][p] = {
            "mac": _strip(got[f"{base}/address"]),
            "mtu": _strip(got[f"{base}/mtu"]),
            "speed_mbps": _strip(got[f"{base}/speed"]),
            "operstate": _strip(got[f"{base}/operstate"]),
            "numa_node": None if numa in (None, "-1") else numa,
            "driver": info.get("driver"), "driver_version": info.get("version"),
            "firmware": info.get("firmware-version"), "bus_info": info.get("bus-info") or None,
            "irq_affinity": irq_affinity(ex, p),
        }
    return facts


def irq_affinity(ex, ifname: str) -> dict[str, str | None]:
    """IRQ -> CPUs it may run on (smp_affinity_list), for the port's MSI IRQs."""
    cp = ex.run(["find", f"/sys/class/net/{ifname}/device/msi_irqs/", "-mindepth", "1",
                 "-maxdepth", "1"], check=False, timeout=15)
    irqs = sorted((ln.rsplit("/", 1)[-1] for ln in cp.stdout.split() if ln), key=_num)
    if not irqs:
        return {}
    got = ex.read_files([f"/proc/irq/{i}/smp_affinity_list" for i in irqs])
    return {i: _strip(got[f"/proc/irq/{i}/smp_affinity_list"]) for i in irqs}


def _num(s: str) -> int:
    return int(s) if s.isdigit() else 1 << 30
