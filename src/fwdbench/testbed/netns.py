"""``[testbed] type = "netns"``: the local lab, two namespaces joined by two veth
pairs on this host (design.md, docs/lab.md)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Iterator

from ..errors import LabError
from ..trialrun import Arrangement, make_execute
from .base import Testbed, check_duts

#: fwdgen pacing period [us] when the DUT ports have the lab's ingress queue
INGRESS_BURST_PERIOD_US = 1000.0


class NetnsTestbed(Testbed):
    """The local lab: the generator in ``fb-<id>-tg``, the DUT in ``fb-<id>-dut``."""

    kind = "netns"

    def __init__(self, campaign):
        super().__init__(campaign)
        self.lab = None
        self.energy = None
        self.generator = None
        self.generator_info: dict[str, Any] = {}
        self.memif_fallback: str | None = None   # why testbed.link memif became veth

    def __enter__(self) -> "NetnsTestbed":
        from ..lab import Lab, LabConfig

        if os.geteuid() != 0:
            raise LabError("the netns testbed needs root (network namespaces, veth, XDP): "
                           "run with sudo, or use testbed.type = \"sim\" for simulated DUTs")
        tb = self.campaign.file.testbed
        self.unavailable = check_duts(self.campaign)
        self.lab = Lab.up(LabConfig(gen_cpu=tb.gen_cpu, dut_cpu=tb.dut_cpu,
                                    kernel_tuning=tb.kernel_tuning,
                                    napi_rt_priority=tb.napi_rt_priority))
        try:
            self.generator = self.campaign.make_generator(self.lab.tester_host())
            self.generator_info = self.generator.check()
            self._check_memif()
            self.energy = self._energy_session()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.generator is not None:
            generator, self.generator = self.generator, None
            generator.close()
        if self.lab is not None:
            self.lab.down()
            self.lab = None

    def _check_memif(self) -> None:
        """memif links need a generator built with libmemif (fwdgen: VPP's source
        tarball at build time). Without it, DUTs that are on memif only because
        testbed.link says so fall back to veth (noted once); a DUT that asks for
        memif itself stops the campaign here, before any trial."""
        wants = [sc for sc in self.campaign.scenarios if sc.dut.link == "memif"]
        if not wants or self.generator_info.get("memif", False):
            return
        why = (self.generator_info.get("errors") or {}).get("memif") or "not built with memif"
        explicit = sorted({sc.dut.name for sc in wants if not sc.link_from_testbed})
        if explicit:
            raise LabError(f"dut {explicit[0]!r}: link = \"memif\" but the generator has no "
                           f"memif support ({why}); rebuild with VPP_SRC=<VPP release tarball> "
                           f"(make ... VPP_SRC=...), or use link = \"veth\"")
        self.memif_fallback = why
        for sc in wants:
            sc.dut.link = "veth"

    def _energy_session(self):
        from ..meters import EnergySession, parse_energy_settings

        session = EnergySession(parse_energy_settings(self.campaign.file.energy),
                                dut_cpus=[self.lab.dut_cpu], gen_cpus=[self.lab.gen_cpu])
        session.check()
        if session.wants_baseline:
            session.baseline()
        return session

    def hosts(self) -> dict[str, Any]:
        return {"tester": self.lab.tester_host(), "dut": self.lab.dut_host()}

    def describe(self) -> dict:
        d = dict(self.lab.describe())
        if self.unavailable:
            d["skipped_duts"] = dict(self.unavailable)
        if self.memif_fallback:
            d["memif_fallback"] = (f"testbed.link = memif, but the generator has no memif "
                                   f"support ({self.memif_fallback}): the user-space DUTs "
                                   f"ran on veth")
        d["generator"] = self.generator.describe()
        d[self.generator.name] = self.generator_info      # e.g. "fwdgen": its check()
        if self.energy is not None:
            d["energy"] = self.energy.describe()
        return d

    @contextmanager
    def scenario(self, sc) -> Iterator[tuple[Any, dict]]:
        from ..dut import load_drivers

        driver = load_drivers()[sc.dut.type](sc.dut.params)
        lab = self.lab
        link = sc.dut.link or "veth"
        host = lab.dut_host(link, driver.memif_role, self.campaign.file.testbed.memif_ring_size)
        driver.check(host)
        try:
            qsize = self.campaign.file.testbed.dut_rx_queue
            mode = ("cpumap" if driver.kernel_stack else "afxdp" if driver.afxdp_rx
                    else "napi") if qsize and link == "veth" else "napi"
            lab.set_dut_ingress(mode, qsize)
            driver.setup(host)

            def prepare(request, latency: bool, idle: bool) -> Arrangement:
                # Behind the deep ingress queue, coarser bursts free the generator's
                # CPU (contracts.md, burst_period_us); latency trials keep fwdgen's
                # fine default so every DUT's latency is measured with one pattern.
                coarse = lab.dut_ingress == "cpumap" and not latency
                # Idle latency: stamp frames as the DUT sends them (Lab.set_tg_rx);
                # under load the generator's CPU receives, as the load needs.
                lab.set_tg_rx("inline" if idle and latency else "napi")
                notes = (["the generator's ports received inline on the DUT CPU "
                          "(RX stamped as the DUT sent)"] if lab.tg_rx == "inline" else [])
                return Arrangement(replace(request, memif=host.memif,
                                           burst_period_us=INGRESS_BURST_PERIOD_US
                                           if coarse and not host.memif else None), notes)

            execute = make_execute(sc, self.generator, driver, self.energy,
                                   driver.peer_macs(host), prepare)
            # the link and how this DUT's ports received (it differs per driver)
            record = {**driver.describe(), "link": link,
                      "lab_ingress": (lab.ingress_record() if link == "veth" else
                                      {"mode": "memif", "queue": 0, "napi_cpu": None})}
            if host.memif:
                record["memif"] = [m.as_dict() for m in host.memif]
            yield execute, record
        finally:
            driver.teardown()

