"""NICs bound to a DPDK driver on the ssh testbed's DUT host (dut/pci.py): what sysfs
says about a PCI function, the decisions the testbed and the VPP driver take from it
before the first trial, and startup.conf's ``dev`` entries.

What is real and what is simulated: this machine's own PCI devices are read from its
real /sys (a virtio NIC bound to virtio-pci: the "wrong driver" case). No device of
this machine may be bound to vfio-pci or uio (its network would go away), so the
"bound to vfio-pci / uio_pci_generic" cases read a sysfs tree the tests build
(symlinks ``driver`` and ``iommu``, ``net/<if>``, ``numa_node``, the hugepage pool)
through the same executor calls (``find``, ``tail``) with the sysfs root pointed at it.
The rig's test (test_ssh_testbed.py) reads such a tree over a real SSH connection.
"""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from fwdbench.campaign import build_campaign
from fwdbench.dut import pci
from fwdbench.errors import DutError, LabError
from fwdbench.lab.addressing import PORTS
from fwdbench.lab.executor import Executor

VFIO, UIO, KERNEL, NOIOMMU = "0000:3b:00.0", "0000:3b:00.1", "0000:3c:00.0", "0000:3d:00.0"


def make_sysfs(root: Path, free_hugepages: int | None = 512) -> Path:
    """A sysfs tree as a DUT host with two NICs for DPDK would show it: 3b:00.0 on
    vfio-pci behind an IOMMU, 3b:00.1 on uio_pci_generic, 3c:00.0 on ixgbe with its
    kernel interface, 3d:00.0 on vfio-pci without an IOMMU (no-IOMMU mode)."""
    drivers = root / "bus" / "pci" / "drivers"
    for name, drv, iommu, net, numa in ((VFIO, "vfio-pci", True, None, "1"),
                                        (UIO, "uio_pci_generic", False, None, "1"),
                                        (KERNEL, "ixgbe", True, "enp60s0f0", "0"),
                                        (NOIOMMU, "vfio-pci", False, None, "-1")):
        dev = root / "bus" / "pci" / "devices" / name
        dev.mkdir(parents=True)
        (drivers / drv).mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../../../bus/pci/drivers/{drv}", dev / "driver")
        if iommu:
            os.symlink("../../../virtual/iommu/dmar0", dev / "iommu")
        if net:
            (dev / "net" / net).mkdir(parents=True)
            (dev / "net" / net / "address").write_text("00:1b:21:aa:bb:cc\n")
        (dev / "numa_node").write_text(numa + "\n")
        (dev / "vendor").write_text("0x8086\n")
        (dev / "device").write_text("0x10fb\n")
    if free_hugepages is not None:
        hp = root / "kernel" / "mm" / "hugepages" / "hugepages-2048kB"
        hp.mkdir(parents=True)
        (hp / "free_hugepages").write_text(f"{free_hugepages}\n")
    return root


def test_probe_reads_the_binding_the_iommu_and_the_interfaces():
    ex = Executor(None)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        root = str(make_sysfs(Path(d)))
        vfio, uio, kern, noio = (pci.probe(ex, a, root) for a in (VFIO, "3b:00.1", KERNEL,
                                                                   NOIOMMU))
        assert (vfio.driver, vfio.iommu, vfio.numa_node, vfio.netdevs) == \
            ("vfio-pci", True, 1, ())
        assert vfio.dpdk_bound and not vfio.needs_hugepages
        assert uio.address == UIO and uio.driver == "uio_pci_generic" and uio.needs_hugepages
        assert (kern.driver, kern.netdevs, kern.dpdk_bound) == ("ixgbe", ("enp60s0f0",), False)
        assert noio.dpdk_bound and noio.needs_hugepages and noio.numa_node is None
        assert not pci.probe(ex, "0000:99:00.0", root).present
        assert pci.free_hugepages(ex, root) == 512
        assert pci.free_hugepages(ex, root, 1048576) is None


def _real_nics() -> list[str]:
    """This machine's PCI network functions (class 0x02xxxx) bound to a kernel driver."""
    base = "/sys/bus/pci/devices"
    out = []
    for a in sorted(os.listdir(base)) if os.path.isdir(base) else ():
        try:
            cls = Path(base, a, "class").read_text().strip()
        except OSError:
            continue
        if cls.startswith("0x02") and os.path.islink(f"{base}/{a}/driver"):
            out.append(a)
    return out


def test_probe_of_this_machines_own_nic_matches_sysfs():
    nics = _real_nics()
    if not nics:
        pytest.skip("this machine has no PCI network function bound to a kernel driver")
    a = nics[0]
    fn = pci.probe(Executor(None), a)
    assert fn.present and fn.driver == os.path.basename(os.readlink(f"/sys/bus/pci/devices/{a}/driver"))
    assert not fn.dpdk_bound
    # its interfaces: net/<if>, or virtio<n>/net/<if> for a virtio NIC
    want = sorted(n for sub in ("", *[s for s in os.listdir(f"/sys/bus/pci/devices/{a}")
                                       if s.startswith("virtio")])
                  for n in (os.listdir(f"/sys/bus/pci/devices/{a}/{sub}/net")
                            if os.path.isdir(f"/sys/bus/pci/devices/{a}/{sub}/net") else ()))
    assert list(fn.netdevs) == want


# --- the testbed's decisions, with the sysfs root pointed at the tree ----------------------

def _campaign(dut: dict, ports=(VFIO, UIO)):
    raw = {"campaign": {"name": "t"},
           "testbed": {"type": "ssh", "host": "bench@dut1", "dut_cpus": [2, 3],
                       "ports": [{"dut": ports[0], "tg": "ens1f0"},
                                 {"dut": ports[1], "tg": "ens1f1"}]},
           "dut": [dut], "profile": [{"name": "p"}]}
    return build_campaign(raw, "c.toml")


def _testbed(campaign, root: Path):
    from fwdbench.testbed.ssh import SshTestbed
    t = SshTestbed(campaign)
    t.ex, t.conn, t.sysfs = Executor(None), SimpleNamespace(name="dut1"), str(root)
    return t


VPP_DPDK = {"name": "vd", "type": "vpp", "params": {"interface": "dpdk"}}
LINUX = {"name": "lr", "type": "linux", "params": {"mode": "router"}}


def test_a_dpdk_dut_takes_bound_nics_and_refuses_a_kernel_bound_one(tmp_path):
    root = make_sysfs(tmp_path)
    t = _testbed(_campaign(VPP_DPDK), root)
    name, fn = t._resolve_port(0, VFIO)
    assert fn.driver == "vfio-pci" and fn.dpdk_bound
    assert t._resolve_port(1, "enp1s0f1") == ("enp1s0f1", None)    # a name: a vdev on it
    with pytest.raises(LabError) as e:
        t._resolve_port(1, KERNEL)
    msg = str(e.value)
    assert msg.startswith(f"testbed.ports[1].dut: {KERNEL} on dut1 is bound to ixgbe, but DUT "
                          f"'vd' (vpp) drives it with DPDK")
    assert f"dpdk-devbind.py -b vfio-pci {KERNEL}" in msg and "\n" not in msg
    with pytest.raises(LabError, match=r"testbed.ports\[0\].dut: the DUT host dut1 has no PCI "
                                       r"device 0000:99:00.0"):
        t._resolve_port(0, "99:00.0")


def test_a_kernel_dut_refuses_a_nic_bound_for_dpdk(tmp_path):
    root = make_sysfs(tmp_path)
    t = _testbed(_campaign(LINUX), root)
    name, fn = t._resolve_port(0, KERNEL)        # a kernel NIC by address: its interface
    assert name == "enp60s0f0" and fn.driver == "ixgbe" and not fn.dpdk_bound
    with pytest.raises(LabError) as e:
        t._resolve_port(0, VFIO)
    msg = str(e.value)
    assert msg.startswith(f"testbed.ports[0].dut: {VFIO} on dut1 is bound to vfio-pci (no "
                          f"kernel interface), but DUT 'lr' (linux) needs a kernel interface")
    assert "dpdk-devbind.py -b <driver>" in msg and "\n" not in msg
    # VPP on AF_XDP needs the kernel's interface as much as the kernel does
    t = _testbed(_campaign({"name": "vx", "type": "vpp", "params": {}}), root)
    with pytest.raises(LabError, match="DUT 'vx' \\(vpp\\) needs a kernel interface"):
        t._resolve_port(0, UIO)


# --- VPP: memory for DPDK, startup.conf ----------------------------------------------------------

def _host(root: Path, *fns):
    from fwdbench.testbed.ssh_host import SshDutHost
    ex = Executor(None)
    ex.conn = SimpleNamespace(name="dut1")     # SshDutHost names the host by its connection
    return SshDutHost(ex, PORTS, (2, 3), True, "fb-x", "/tmp/x", {}, "/tmp/x/tools",
                      dpdk_pci=tuple(fns), sysfs=str(root))


def test_vpp_needs_hugepages_for_nics_without_iommu_and_enough_of_them(tmp_path):
    from fwdbench.dut.vpp.driver import VppDut
    ex = Executor(None)
    root = make_sysfs(tmp_path / "a", free_hugepages=0)
    vfio, uio, noio = (pci.probe(ex, a, str(root)) for a in (VFIO, UIO, NOIOMMU))
    # vfio-pci behind an IOMMU: IOVA as VA, VPP's 4 KiB pages do
    VppDut({"interface": "dpdk"})._check_dpdk_memory(_host(root, vfio, None))
    for fn, why in ((uio, "uio_pci_generic has no IOMMU support"),
                    (noio, "no IOMMU translates its DMA")):
        with pytest.raises(DutError) as e:
            VppDut({"interface": "dpdk"})._check_dpdk_memory(_host(root, vfio, fn))
        msg = str(e.value)
        assert msg.startswith(f"vpp: dut.params.page_size: {fn.address} on dut1 is bound to "
                              f"{fn.driver} and {why}")
        assert 'set page_size = "2M"' in msg and "\n" not in msg
    # page_size 2M: the free 2 MiB pages must hold heap, stats, buffers and DPDK's 16 MiB
    d = VppDut({"interface": "dpdk", "page_size": "2M"})
    need = pci.hugepages_for(d.dpdk_hugepage_bytes())
    assert need == -(-((256 << 20) + (4 * 1536) + (64 << 20) + (4 * 128) + 21 * (2 << 20)
                       + (16 << 20)) // (2 << 20))      # 16384 buffers: 21 pages of 819
    with pytest.raises(DutError, match=rf"needs about {need} free 2 MiB hugepages on dut1, it "
                                       rf"has 0: there, `dpdk-hugepages.py -p 2M --reserve "
                                       rf"{need * 2}M`"):
        d._check_dpdk_memory(_host(root, uio, None))
    enough = make_sysfs(tmp_path / "b", free_hugepages=need)
    d._check_dpdk_memory(_host(enough, uio, None))
    none = make_sysfs(tmp_path / "c", free_hugepages=None)
    with pytest.raises(DutError, match="it has no 2 MiB hugepage pool"):
        d._check_dpdk_memory(_host(none, uio, None))


def test_startup_conf_names_the_testbeds_nics_and_vdevs_on_kernel_ports(tmp_path):
    from fwdbench.dut.vpp.driver import VppDut
    from fwdbench.dut.vpp.startup import Startup, plugins_for
    root = make_sysfs(tmp_path)
    vfio = pci.probe(Executor(None), VFIO, str(root))
    d = VppDut({"interface": "dpdk", "page_size": "2M"})
    both = d._dpdk_ports(_host(root, vfio, pci.probe(Executor(None), UIO, str(root))), "fb-x-v1")
    assert both.pci == ((VFIO, "dut0"), (UIO, "dut1")) and both.vdevs == ()
    text = Startup(run_dir="/r", shm_prefix="fb-x-v1", plugin_dir="/p",
                   plugins=plugins_for("dpdk", "router"), main_core=2, workers=(),
                   main_heap=1 << 28, buffers=16384, page_size="2M", dpdk=both).render()
    section = text[text.index("dpdk {"):].splitlines()
    assert section == ["dpdk {", "  file-prefix fb-x-v1", f"  dev {VFIO} {{ name dut0 }}",
                       f"  dev {UIO} {{ name dut1 }}", "}"]
    # one NIC, one kernel port: a dev entry and a vdev, never no-pci with a NIC
    mixed = VppDut({"interface": "dpdk"})._dpdk_ports(_host(root, vfio, None), "fb-x-v2")
    assert mixed.pci == ((VFIO, "dut0"),) and mixed.vdevs == ("net_af_packet1,iface=dut1",)
    assert "no-pci" not in mixed.render() and "no-hugetlb" in mixed.render()
    # the host's kernel-only views leave the NIC out
    h = _host(root, vfio, None)
    assert [p.dut.ifname for p in h.kernel_ports()] == ["dut1"]
    assert all("dut0" not in ln for ln in h.baseline_lines())
