"""``[testbed] type = "ssh"``: the generator on this host's (the tester's) ports, the
DUT on another host reached with OpenSSH (docs/testbeds.md).

Entering the testbed, before the first trial:

1. one ControlMaster connection to the DUT host (remote/ssh.py); the login
   user is found (``id``) and, when it is not root, ``sudo -n`` is checked;
2. the commands fwdbench itself needs there are looked up;
3. what earlier runs left on the DUT host (their owner gone: a lost
   connection, a crash) is removed (remote/leftovers.py);
4. this run's directory is made there, with its state file;
5. the ports are resolved (PCI address -> interface, MACs, NUMA node,
   checked against the campaign; a PCI address bound to a DPDK driver
   stays a NIC without an interface, for DUTs that drive it with DPDK:
   dut/pci.py), the tester's ports looked up on this host; the DUT's
   kernel ports get the lab's addressing plan (addresses, static
   neighbours of the tester ports, rp_filter off), the values they had are
   saved in the state file;
6. fwdbench's programs for DUTs are copied there, versioned by their
   SHA-256, or an earlier copy is checked and reused (remote/tools.py);
7. every DUT driver's check() runs on the DUT host, the generator's on this one;
8. the energy meters are picked: the DUT host's CPU accounting, cpu-model
   and RAPL are read over SSH (meters/session.py).

Leaving it (also on Ctrl-C) stops the run's programs there, puts the
ports and sysctls back, removes the run directory and closes the
connection. When the connection is lost, the state file stays and the next
run on that DUT host cleans up (``fwdbench run --resume`` reconnects).
"""
from __future__ import annotations

import re
import secrets
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any, Iterator

from ..errors import FwdbenchError, LabError
from ..lab.addressing import PORTS, PortPair
from ..lab.executor import Executor
from ..remote import leftovers, tools
from ..remote.executor import RemoteExecutor, sudo_password_message
from ..remote.facts import host_facts
from ..remote.ssh import SshConnection, SshConnectionLost, SshError, SshTarget
from ..trialrun import make_execute
from ..units import parse_duration
from ..dut import pci
from ..dut.pci import PciFunction
from .base import Testbed, check_duts
from .ssh_host import SshDutHost

#: commands fwdbench itself runs on the DUT host (drivers check their own)
BASE_TOOLS = {"ip": "iproute2", "find": "findutils", "mktemp": "coreutils",
              "sha256sum": "coreutils", "grep": "grep", "ethtool": "ethtool"}
_ID = re.compile(r"uid=(\d+)\(([^)]*)\)")


def target_of(tb) -> SshTarget:
    return SshTarget(destination=tb.host, port=tb.port, identity=tb.identity,
                     config=tb.ssh_config, options=tuple(tb.ssh_options),
                     host_key_check=tb.host_key_check,
                     connect_timeout_s=parse_duration(tb.connect_timeout))


def login(conn: SshConnection, mode: str) -> tuple[str, int, bool]:
    """(login user, its uid, whether commands run with sudo), sudo checked."""
    plain = RemoteExecutor(conn, sudo=False)
    out = plain.run(["id"]).stdout
    m = _ID.search(out)
    if not m:
        raise SshError(f"ssh {conn.name}: `id` printed {out.strip()!r}: is the login shell a "
                       f"POSIX shell that prints nothing of its own?")
    uid, user = int(m.group(1)), m.group(2)
    sudo = mode == "always" or (mode == "auto" and uid != 0)
    if uid != 0 and mode == "never":
        raise SshError(f"ssh {conn.name}: the login user {user} is not root and testbed.sudo "
                       f"= \"never\": log in as root, or let fwdbench use sudo (\"auto\")")
    if sudo:
        try:
            cp = plain.run(["sudo", "-n", "true"], check=False)
        except LabError as e:
            raise SshError(f"ssh {conn.name}: the login user {user} is not root and sudo is "
                           f"not installed there ({e}): install sudo, or log in as root") from None
        if cp.returncode != 0:
            if "password" in cp.stderr or "terminal" in cp.stderr:
                raise SshError(sudo_password_message(conn.name))
            raise SshError(f"ssh {conn.name}: `sudo -n true` as {user} failed: "
                           f"{cp.stderr.strip()}")
    return user, uid, sudo


class SshTestbed(Testbed):
    """The DUT host over SSH, the generator on this host (see the module docstring)."""

    kind = "ssh"

    def __init__(self, campaign):
        super().__init__(campaign)
        self.tb = campaign.file.testbed
        self.run_id = secrets.token_hex(3)
        self.tag = f"fb-{self.run_id}"
        self.conn: SshConnection | None = None
        self.ex: RemoteExecutor | None = None
        self.host: SshDutHost | None = None
        self.local = Executor(None)
        self.tester = None
        self.generator = None
        self.generator_info: dict[str, Any] = {}
        self.energy = None
        self.user, self.uid, self.sudo = "", -1, False
        self.state: dict[str, Any] = {}
        self.deployment = tools.Deployment()
        self.cleaned: dict[str, list[str]] = {}
        self.others: list[str] = []
        self.dut_facts: dict[str, Any] = {}
        self.tester_facts: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self._tester_links: dict[str, bool] = {}
        #: per port, the PCI function of a NIC bound to a DPDK driver (None: a kernel port)
        self.dpdk_pci: list[PciFunction | None] = []
        #: the DUT host's sysfs, where PCI ports and hugepages are read (tests: a tree)
        self.sysfs = "/sys"
        self._exited = False

    @property
    def workdir(self) -> str:
        return self.tb.workdir

    @property
    def run_dir(self) -> str:
        return leftovers.run_dir(self.workdir, self.tag)

    # --- entering ------------------------------------------------------------------------
    def __enter__(self) -> "SshTestbed":
        t0 = time.monotonic()
        try:
            self.conn = SshConnection(target_of(self.tb)).open()
            self.user, self.uid, self.sudo = login(self.conn, self.tb.sudo)
            self.ex = RemoteExecutor(self.conn, sudo=self.sudo, run_tag=self.tag,
                                     proc_dir=f"{self.run_dir}/proc")
            self._check_base_tools()
            self._clean_leftovers()
            self.ex.run(["mkdir", "-p", "-m", "0755", f"{self.workdir}/runs"])
            self.ex.run(["mkdir", "-m", "0700", self.run_dir])
            self.ex.run(["mkdir", "-m", "0700", f"{self.run_dir}/proc"])
            self.state = {"tag": self.tag, "owner": leftovers.owner_record(),
                          "created": time.time(), "ports": [], "saved": {}}
            leftovers.write_state(self.ex, self.workdir, self.state)
            ports = self._ports()
            self.timings["connect_s"] = self.conn.timings.get("connect_s", 0.0)
            t = time.monotonic()
            self.deployment = tools.deploy(self.ex, self.workdir)
            self.timings["tools_s"] = round(time.monotonic() - t, 3)
            self.host = SshDutHost(self.ex, ports, tuple(self.tb.dut_cpus), self.tb.ipv6,
                                   self.tag, self.run_dir, self.deployment.paths,
                                   self.deployment.directory or f"{self.workdir}/tools",
                                   {"user": self.user, "sudo": self.sudo},
                                   dpdk_pci=tuple(self.dpdk_pci), sysfs=self.sysfs)
            self._baseline()
            self.dut_facts = host_facts(self.ex, [p.dut.ifname for p in
                                                  self.host.kernel_ports()], self.tb.dut_cpus)
            for p, fn in zip(ports, self.dpdk_pci):
                if fn is not None:
                    self.dut_facts["ports"][p.dut.ifname] = {"mac": p.dut.mac, **fn.describe()}
            self._check_numa(ports)
            self.tester_facts = host_facts(self.local, [p.tg.ifname for p in ports],
                                           self.tb.gen_cpus)
            self.unavailable = check_duts(self.campaign, self.host)
            from ..traffic.base import TesterHost
            self.tester = TesterHost(name=socket.gethostname(), exec=self.local, ports=ports,
                                     cpus=tuple(self.tb.gen_cpus), facts=self.tester_facts)
            self.generator = self.campaign.make_generator(self.tester)
            self.generator_info = self.generator.check()
            self.energy = self._energy_session()
            self.timings["setup_s"] = round(time.monotonic() - t0, 3)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _check_base_tools(self) -> None:
        missing = self.ex.missing_tools(list(BASE_TOOLS))
        if missing:
            pkgs = sorted({BASE_TOOLS[m] for m in missing})
            raise LabError(f"the DUT host {self.conn.name} lacks {', '.join(missing)}, which "
                           f"fwdbench runs there (apt-get install {' '.join(pkgs)})")

    def _clean_leftovers(self) -> None:
        """Remove what earlier runs whose tester process is gone left on the DUT host."""
        for st in leftovers.list_states(self.ex, self.workdir):
            tag = st.get("tag", "?")
            owner = st.get("owner") or {}
            state = "gone" if st.get("corrupt") else leftovers.owner_state(owner)
            if state == "alive":
                raise LabError(f"the DUT host {self.conn.name} is in use by another fwdbench "
                               f"run of this tester (pid {owner.get('pid')}, run {tag}); wait "
                               f"for it to end")
            if state == "other":
                shared = sorted(set(st.get("ports") or []) & {p.dut for p in self.tb.ports})
                if shared:
                    raise LabError(
                        f"the DUT host {self.conn.name}: run {tag} of tester "
                        f"{owner.get('hostname')} (pid {owner.get('pid')}) uses "
                        f"{', '.join(shared)} too; if that run is over, remove "
                        f"{leftovers.run_dir(self.workdir, tag)} there (a run from this "
                        f"tester would clean it up, fwdbench does not touch another's)")
                self.others.append(f"run {tag} of tester {owner.get('hostname')} (pid "
                                   f"{owner.get('pid')}) has files in "
                                   f"{leftovers.run_dir(self.workdir, tag)}; it may still "
                                   f"run there")
                continue
            self.cleaned[tag] = leftovers.scrub(self.ex, self.workdir, st)
        for tag, found in self.cleaned.items():
            self.notes.append(f"removed what run {tag} left on the DUT host "
                              f"{self.conn.name}: " + ("; ".join(found) or "its run directory"))
        self.notes += [f"the DUT host {self.conn.name}: {o}" for o in self.others]

    def _ports(self) -> tuple[PortPair, ...]:
        """The campaign's links as PortPairs of the lab's plan, names and MACs checked.
        A port given as the PCI address of a NIC bound to a DPDK driver has no kernel
        interface: it keeps the plan's name (dut0, dut1) and its MAC is ``dut_mac``
        (default: the plan's), which the DPDK data plane gives the NIC."""
        out = []
        self.dpdk_pci = []
        for i, cp in enumerate(self.tb.ports):
            plan = PORTS[i]
            dut_if, fn = self._resolve_port(i, cp.dut)
            self.dpdk_pci.append(fn if fn is not None and fn.dpdk_bound else None)
            if fn is not None and fn.dpdk_bound:
                dut_if, mac = plan.dut.ifname, cp.dut_mac or plan.dut.mac
            else:
                got = self.ex.read_files([f"/sys/class/net/{dut_if}/address"])
                mac = (got[f"/sys/class/net/{dut_if}/address"] or "").strip().lower()
                if not mac:
                    raise LabError(f"testbed.ports[{i}].dut: the DUT host {self.conn.name} "
                                   f"has no interface {dut_if!r}")
                if cp.dut_mac and cp.dut_mac != mac:
                    raise LabError(f"testbed.ports[{i}].dut_mac: {cp.dut_mac} given, but "
                                   f"{dut_if} on {self.conn.name} has {mac}")
            tg_mac = self.local.read_files([f"/sys/class/net/{cp.tg}/address"])[
                f"/sys/class/net/{cp.tg}/address"]
            if not tg_mac:
                raise LabError(f"testbed.ports[{i}].tg: this host (the tester, "
                               f"{socket.gethostname()}) has no interface {cp.tg!r}")
            tg_mac = tg_mac.strip().lower()
            if cp.tg_mac and cp.tg_mac != tg_mac:
                raise LabError(f"testbed.ports[{i}].tg_mac: {cp.tg_mac} given, but {cp.tg} "
                               f"here has {tg_mac}")
            out.append(replace(plan, tg=replace(plan.tg, ifname=cp.tg, mac=tg_mac),
                               dut=replace(plan.dut, ifname=dut_if, mac=mac)))
        # the DPDK ports by their PCI address: what another run on this host names too
        self.state["ports"] = [fn.address if fn is not None else p.dut.ifname
                               for p, fn in zip(out, self.dpdk_pci)]
        leftovers.write_state(self.ex, self.workdir, self.state)
        return tuple(out)

    def _resolve_port(self, i: int, name: str) -> tuple[str, PciFunction | None]:
        """(kernel interface name, None) for a port given by name; for a PCI address,
        its function on the DUT host, checked against what the campaign's DUTs need:
        a DPDK driver's for DUTs that drive the NIC with DPDK, a kernel interface
        (its name returned) for the others. fwdbench never rebinds a NIC."""
        from ..campaign import PCI_RE
        if not PCI_RE.match(name):
            return name, None
        fn = pci.probe(self.ex, name, self.sysfs)
        where = f"testbed.ports[{i}].dut"
        if not fn.present:
            raise LabError(f"{where}: the DUT host {self.conn.name} has no PCI device "
                           f"{fn.address} (`lspci -D` there lists them)")
        dpdk, kernel = self._duts_by_port_need()
        if fn.dpdk_bound and kernel:
            raise LabError(
                f"{where}: {fn.address} on {self.conn.name} is bound to {fn.driver} (no "
                f"kernel interface), but DUT {kernel[0]} needs a kernel interface: bind it "
                f"back to its kernel driver there (dpdk-devbind.py -b <driver> {fn.address}) "
                f"or run the DPDK DUTs in a campaign of their own")
        if dpdk and not fn.dpdk_bound:
            raise LabError(
                f"{where}: {fn.address} on {self.conn.name} is bound to "
                f"{fn.driver or 'no driver'}, but DUT {dpdk[0]} drives it with DPDK, which "
                f"needs it bound to {' or '.join(pci.DPDK_DRIVERS)}: there, `dpdk-devbind.py "
                f"-b vfio-pci {fn.address}` (docs/testbeds.md), or give the port's interface "
                f"name for DPDK over the kernel port")
        if fn.dpdk_bound:
            return "", fn
        if not fn.netdevs:
            raise LabError(f"{where}: PCI device {fn.address} on {self.conn.name} has no "
                           f"network interface ({fn.driver or 'no driver'}): the linux, xdp "
                           f"and vfwd DUTs need it bound to its kernel driver "
                           f"(docs/testbeds.md)")
        return fn.netdevs[0], fn

    def _duts_by_port_need(self) -> tuple[list[str], list[str]]:
        """The campaign's DUTs that drive DPDK-bound NICs, and the others: 'name (type)'."""
        from ..dut import load_drivers
        drivers = load_drivers()
        dpdk, kernel = [], []
        for sc in self.campaign.scenarios:
            label = f"{sc.dut.name!r} ({sc.dut.type})"
            drv = drivers.get(sc.dut.type)
            side = dpdk if drv is not None and drv.drives_dpdk_pci(sc.dut.params) else kernel
            if label not in side:
                side.append(label)
        return dpdk, kernel

    def _check_numa(self, ports: tuple[PortPair, ...]) -> None:
        for i, cp in enumerate(self.tb.ports):
            if cp.numa_node is None:
                continue
            have = self.dut_facts["ports"][ports[i].dut.ifname].get("numa_node")
            if self.dpdk_pci[i] is not None:
                have = self.dpdk_pci[i].numa_node
            if have is None or int(have) != cp.numa_node:
                raise LabError(f"testbed.ports[{i}].numa_node: {cp.numa_node} expected, but "
                               f"{ports[i].dut.ifname} on {self.conn.name} is on "
                               f"{'no NUMA node (not a PCI device?)' if have is None else have}")

    def _baseline(self) -> None:
        """The DUT ports as the lab's are: the plan's addresses and neighbours, rp_filter
        off; the values before go into the state file first."""
        host = self.host
        sysctls: dict[str, int] = {"net.ipv4.ip_forward": 0, "net.ipv6.conf.all.forwarding": 0}
        kports = host.kernel_ports()        # a DPDK-bound NIC has no netdev to set up
        for p in kports:
            sysctls[f"net.ipv4.conf.{p.dut.ifname}.rp_filter"] = 0
            if self.tb.ipv6:
                sysctls |= {f"net.ipv6.conf.{p.dut.ifname}.disable_ipv6": 0,
                            f"net.ipv6.conf.{p.dut.ifname}.accept_dad": 0,
                            f"net.ipv6.conf.{p.dut.ifname}.accept_ra": 0}
        before = self.ex.sysctl_get([*sysctls, "net.ipv4.conf.all.rp_filter"])
        if before.get("net.ipv4.conf.all.rp_filter") not in (None, "0"):
            sysctls["net.ipv4.conf.all.rp_filter"] = 0   # the effective value is the larger
        links = {}
        got = self.ex.read_files([f"/sys/class/net/{p.dut.ifname}/{f}" for p in kports
                                  for f in ("flags", "mtu")])
        for p in kports:
            flags = got.get(f"/sys/class/net/{p.dut.ifname}/flags") or "0x0"
            links[p.dut.ifname] = {"up": bool(int(flags.strip(), 16) & 1),
                                   "mtu": (got.get(f"/sys/class/net/{p.dut.ifname}/mtu")
                                           or "").strip() or None}
        added = {p.dut.ifname: {"addresses": [p.dut.cidr4] + ([p.dut.cidr6] if self.tb.ipv6
                                                               else []),
                                "neighbours": [p.tg.ip4] + ([p.tg.ip6] if self.tb.ipv6 else [])}
                 for p in kports}
        self.state["saved"] = {"sysctls": {k: before.get(k) for k in sysctls},
                               "links": links, "added": added}
        leftovers.write_state(self.ex, self.workdir, self.state)
        self.ex.sysctl_set(sysctls)
        host.restore_ports()
        for p in host.ports:        # the tester's ports up (they are this host's)
            flags = self.local.read_files([f"/sys/class/net/{p.tg.ifname}/flags"])
            up = bool(int((flags[f"/sys/class/net/{p.tg.ifname}/flags"] or "0x0").strip(), 16) & 1)
            self._tester_links[p.tg.ifname] = up
            if not up:
                self.local.run(["ip", "link", "set", "dev", p.tg.ifname, "up"])

    def _energy_session(self):
        from ..meters import EnergySession, parse_energy_settings

        session = EnergySession(parse_energy_settings(self.campaign.file.energy),
                                dut_cpus=list(self.tb.dut_cpus), gen_cpus=list(self.tb.gen_cpus),
                                dut_exec=self.ex, dut_host=self.conn.name)
        session.check()
        if session.wants_baseline:
            session.baseline()
        return session

    # --- leaving -------------------------------------------------------------------------
    def __exit__(self, *exc) -> None:
        if self._exited:
            return
        self._exited = True
        main = threading.current_thread() is threading.main_thread()
        sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs) if main else None
        try:
            if self.generator is not None:
                generator, self.generator = self.generator, None
                generator.close()
            self._leave_dut_host()
            for ifn, up in self._tester_links.items():
                if not up:
                    self.local.run(["ip", "link", "set", "dev", ifn, "down"], check=False)
        finally:
            if self.ex is not None:         # the tester's ends of socket bridges
                for path in list(self.ex.bridges):
                    self.ex.close_socket(path)
            if self.conn is not None:
                self.conn.close()
            if main:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _leave_dut_host(self) -> None:
        ex = self.ex
        if ex is None or not self.state:
            return
        if not self.conn.alive():
            print(f"fwdbench: the connection to the DUT host {self.conn.name} was lost: the "
                  f"next run on it removes what this one left ({self.run_dir})",
                  file=sys.stderr)
            return
        try:
            ex.stop_children()
            leftovers.restore(ex, self.state)
            ex.run(["rm", "-rf", "--", self.run_dir], check=False)
        except SshError as e:
            print(f"fwdbench: {e}; the next run on {self.conn.name} removes what this one "
                  f"left ({self.run_dir})", file=sys.stderr)

    # --- the report ---------------------------------------------------------------------
    def hosts(self) -> dict[str, Any]:
        return {"tester": self.tester, "dut": self.host}

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "testbed": "ssh",
            "run_id": self.run_id,
            "dut_host": {"ssh": self.conn.name if self.conn else self.tb.host,
                         "user": self.user, "sudo": self.sudo,
                         "host_key_check": self.tb.host_key_check,
                         "run_dir": self.run_dir, **self.dut_facts},
            "tester": {"hostname": socket.gethostname(), **self.tester_facts},
            "placement": {"gen_cpus": list(self.tb.gen_cpus), "dut_cpus": list(self.tb.dut_cpus),
                          "shared_host": False},
            "ports": [asdict(p) for p in (self.host.ports if self.host else ())],
            "dut_rx": "the NICs' own receive (IRQs and queues as the DUT host has them; "
                      "fwdbench tunes nothing there)",
            "tools": self.deployment.describe(),
            "setup_s": dict(self.timings),
        }
        if self.cleaned:
            d["cleaned_leftovers"] = dict(self.cleaned)
        if self.others:
            d["other_runs"] = list(self.others)
        if self.unavailable:
            d["skipped_duts"] = dict(self.unavailable)
        if self.generator is not None:
            d["generator"] = self.generator.describe()
            d[self.generator.name] = self.generator_info
        if self.energy is not None:
            d["energy"] = self.energy.describe()
        return d

    # --- scenarios -------------------------------------------------------------------------
    @contextmanager
    def scenario(self, sc) -> Iterator[tuple[Any, dict]]:
        from ..dut import load_drivers

        driver = load_drivers()[sc.dut.type](sc.dut.params)
        host = self.host
        driver.check(host)
        try:
            driver.setup(host)
            inner = make_execute(sc, self.generator, driver, self.energy,
                                 driver.peer_macs(host))

            def execute(duration_s: float, load_pps: float, key: int, latency: bool = False):
                try:
                    return inner(duration_s, load_pps, key, latency)
                except SshError:
                    raise
                except Exception as e:
                    if not self.conn.alive():   # the real cause, not its symptom
                        raise SshConnectionLost(
                            f"ssh {self.conn.name}: the connection to the DUT host was lost "
                            f"during the trial ({type(e).__name__}: {e})") from e
                    raise

            # "veth": the kernel ports (dut/host.py's word), here the DUT host's NICs
            yield execute, {**driver.describe(), "dut_host": host.name, "link": host.link}
        except BaseException as e:
            self._teardown(driver, e)
            raise
        else:
            self._teardown(driver, None)

    def _teardown(self, driver, error: BaseException | None) -> None:
        """The driver's teardown on the DUT host; with an error in flight, a failing
        teardown is a note on it, not a new error."""
        try:
            driver.teardown()
        except Exception as te:
            lost = not self.conn.alive()
            note = (f"the DUT host {self.conn.name} keeps {driver.name}'s configuration until "
                    f"the next run there removes it" if lost else
                    f"tearing down {driver.name} on {self.conn.name} also failed: {te}")
            if error is not None:
                error.add_note(note)
                return
            if lost:
                raise SshConnectionLost(f"ssh {self.conn.name}: the connection to the DUT "
                                        f"host was lost: {note}") from te
            raise

    # --- before anything is set up (fwdbench plan) --------------------------------------------
    @classmethod
    def probe(cls, campaign) -> list[str]:
        """Reach the DUT host and look, changing nothing: lines saying what was found."""
        tb = campaign.file.testbed
        conn = SshConnection(target_of(tb)).open()
        lines = [f"ssh {conn.name}: connected in {conn.timings['connect_s']:.2f} s "
                 f"(host key {'checked strictly' if tb.host_key_check == 'strict' else 'accepted if new'})"]
        try:
            user, uid, sudo = login(conn, tb.sudo)
            lines.append(f"login user {user} (uid {uid}): commands run "
                         + ("with sudo -n, which needs no password" if sudo else "as root"))
            ex = RemoteExecutor(conn, sudo=sudo)
            t = cls(campaign)
            t.conn, t.ex = conn, ex
            missing = ex.missing_tools(list(BASE_TOOLS))
            if missing:
                lines.append(f"missing on the DUT host: {', '.join(missing)}")
            facts = host_facts(ex, [], tb.dut_cpus)
            lines.append(f"DUT host: {facts['hostname']}, {facts['os'] or '?'}, kernel "
                         f"{facts['kernel']}, CPUs online {facts['cpus_online']}, "
                         f"{facts['cpu_model'] or '?'}; DUT CPUs "
                         f"{','.join(map(str, tb.dut_cpus))}"
                         + (f"; isolated: {facts['isolated_cpus']}" if facts['isolated_cpus']
                            else ""))
            for i, p in enumerate(tb.ports):
                try:
                    dut_if, fn = t._resolve_port(i, p.dut)
                    if fn is not None and fn.dpdk_bound:
                        dut = (f"{fn.address} ({fn.driver}, "
                               f"{'IOMMU' if fn.iommu else 'no IOMMU'}, NUMA "
                               f"{'-' if fn.numa_node is None else fn.numa_node}: a DPDK port, "
                               f"MAC {p.dut_mac or PORTS[i].dut.mac})")
                    else:
                        f = host_facts(ex, [dut_if], [])["ports"][dut_if]
                        dut = (f"{dut_if} ({f['mac'] or 'missing'}, {f['driver'] or '?'}, "
                               f"NUMA {f['numa_node'] or '-'}, {f['operstate'] or '?'})")
                except FwdbenchError as e:
                    dut = f"{p.dut}: {e}"
                tg = Executor(None).read_files([f"/sys/class/net/{p.tg}/address"])[
                    f"/sys/class/net/{p.tg}/address"]
                lines.append(f"link {i}: DUT {dut} <-> tester {p.tg} "
                             f"({tg.strip() if tg else 'missing on this host'})")
            runs = leftovers.list_states(ex, tb.workdir) if ex.exists(
                f"{tb.workdir}/runs") else []
            if runs:
                lines.append(f"{len(runs)} earlier run(s) left files in {tb.workdir}/runs "
                             f"(removed by the next run when their tester process is gone)")
            need = tools.needed({sc.dut.type for sc in campaign.scenarios})
            if need:
                lines.append(f"fwdbench's programs for the DUTs ({', '.join(need)}) are "
                             f"copied to {tb.workdir}/tools/ at the start of the run")
        finally:
            conn.close()
        return lines
