"""PCI functions of a DUT host, as DPDK sees them: which driver holds a NIC, whether
an IOMMU stands in front of it, and the host's free hugepages, all read from
sysfs over the host's executor (so the same code reads a DUT host over SSH).

A NIC that a DPDK data plane drives directly is bound to one of
``DPDK_DRIVERS`` and has no kernel interface; fwdbench never binds or unbinds
a device (docs/testbeds.md says how the operator does it).

What DPDK needs memory for (DPDK 22.11's EAL, VPP 26.06's dpdk plugin,
src/plugins/dpdk/buffer.c): a NIC DMAs into VPP's buffers at their IO
virtual addresses. Behind an IOMMU (vfio-pci with an ``iommu`` link in
sysfs) those are the virtual addresses (IOVA as VA), which 4 KiB pages give:
VPP maps its buffer pages into the vfio container itself. Without one
(uio_pci_generic, igb_uio, or vfio-pci in no-IOMMU mode) they are physical
addresses, which DPDK refuses to use without hugepages (``--no-huge`` has no
physical addresses): VPP then needs its memory on hugepages (``page_size =
"2M"``) and that many free 2 MiB pages. ``sysfs`` is a parameter so tests can
point the reads at a tree of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: kernel drivers that hand a PCI NIC to a user-space DPDK driver
DPDK_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")
HUGEPAGE_KB = 2048
#: [B] hugepage memory VPP's dpdk plugin preallocates per NUMA node for DPDK's own
#: use (device/init.c: "preallocate at least 16MB of hugepages per socket")
DPDK_PREALLOC = 16 << 20


def full_address(pci: str) -> str:
    """0000:01:00.0 from 01:00.0 (sysfs names functions with their domain)."""
    return pci.lower() if pci.count(":") == 2 else f"0000:{pci.lower()}"


@dataclass(frozen=True)
class PciFunction:
    """One PCI function of the DUT host, as sysfs shows it."""
    address: str                      # 0000:01:00.0
    present: bool                     # a device of that address exists
    driver: str | None = None         # bound driver (None: unbound)
    netdevs: tuple[str, ...] = ()     # its kernel interfaces (X/net/*, X/virtio*/net/*)
    iommu: bool = False               # an IOMMU translates its DMA (sysfs ``iommu`` link)
    numa_node: int | None = None
    vendor: str | None = None         # 0x8086
    device: str | None = None

    @property
    def dpdk_bound(self) -> bool:
        return self.driver in DPDK_DRIVERS

    @property
    def needs_hugepages(self) -> bool:
        """DMA at physical addresses: DPDK needs hugepages (see the module docstring)."""
        return self.dpdk_bound and not (self.driver == "vfio-pci" and self.iommu)

    def describe(self) -> dict[str, Any]:
        return {"pci": self.address, "driver": self.driver, "iommu": self.iommu,
                "numa_node": self.numa_node, "vendor": self.vendor, "device": self.device,
                "dma": "IOVA as VA (IOMMU)" if not self.needs_hugepages
                else "physical addresses (hugepages)"}


def probe(ex, pci: str, sysfs: str = "/sys") -> PciFunction:
    """The function ``pci`` of ``ex``'s host: two commands there."""
    addr = full_address(pci)
    base = f"{sysfs}/bus/pci/devices/{addr}"
    # driver, iommu: symlinks (%l their target); net/<if> or virtio<n>/net/<if>
    cp = ex.run(["find", f"{base}/", "-maxdepth", "3", "(", "-path", f"{base}/driver", "-o",
                 "-path", f"{base}/iommu", "-o", "-path", "*/net/*", ")", "-printf", "%P %l\\n",
                 "-prune"], check=False)
    if cp.returncode != 0 and not cp.stdout:
        return PciFunction(address=addr, present=False)
    driver, iommu, netdevs = None, False, []
    for line in cp.stdout.splitlines():
        rel, _, target = line.partition(" ")
        if rel == "driver":
            driver = target.rstrip("/").rsplit("/", 1)[-1] or None
        elif rel == "iommu":
            iommu = bool(target)
        elif "/" in rel and rel.split("/")[-2] == "net":
            netdevs.append(rel.rsplit("/", 1)[-1])
    got = ex.read_files([f"{base}/{f}" for f in ("numa_node", "vendor", "device")])
    numa = (got.get(f"{base}/numa_node") or "").strip()
    return PciFunction(
        address=addr, present=True, driver=driver, netdevs=tuple(sorted(netdevs)), iommu=iommu,
        numa_node=int(numa) if numa.lstrip("-").isdigit() and int(numa) >= 0 else None,
        vendor=(got.get(f"{base}/vendor") or "").strip() or None,
        device=(got.get(f"{base}/device") or "").strip() or None)


def free_hugepages(ex, sysfs: str = "/sys", size_kb: int = HUGEPAGE_KB) -> int | None:
    """Free hugepages of ``size_kb`` on ``ex``'s host (None: the kernel has no such size)."""
    path = f"{sysfs}/kernel/mm/hugepages/hugepages-{size_kb}kB/free_hugepages"
    text = ex.read_files([path]).get(path)
    return int(text.strip()) if text and text.strip().isdigit() else None


def hugepages_for(nbytes: int, size_kb: int = HUGEPAGE_KB) -> int:
    """Hugepages of ``size_kb`` that hold ``nbytes`` [B]."""
    size = size_kb << 10
    return -(-nbytes // size)
