"""A two-host testbed on one machine, for the ``ssh`` testbed's tests.

- "tester host": network namespace ``fbrig-<id>-tg``; fwdbench runs in it
  (``rig.fwdbench(...)``: ``ip netns exec ... .venv/bin/fwdbench``), as on a tester.
- "DUT host": network namespace ``fbrig-<id>-dut`` running a real OpenSSH
  server (Debian's ``/usr/sbin/sshd``) on a management veth, 198.19.255.2/24
  (the tester has 198.19.255.1/24). The DUT host has a mount namespace of its
  own (held by a ``sleep``, so it outlives sshd restarts) where /etc/passwd,
  /etc/shadow, /etc/group and /etc/sudoers.d are copies
  made by the rig: root's home is a fresh directory (no shell start-up files
  of this machine), and two users exist only there: ``fbrig`` (sudo without
  a password) and ``fbrigpw`` (no sudo rule: sudo asks for a password).
  fwdbench's directory there (the campaign's ``workdir``) is a tmpfs of that
  mount namespace: the tester cannot see the DUT host's files, as on two
  machines, so code that touched them locally would fail here too.
- data ports: veth pairs ``rt0``/``rt1`` (tester) <-> ``rd0``/``rd1`` (DUT).
- a throwaway host key and user keys made with ssh-keygen, an ssh config
  (``Host dut-rig`` as root, ``dut-rig-sudo`` as fbrig, ``dut-rig-pw`` as
  fbrigpw, ``dut-rig-stranger`` as root with a key sshd does not know) and
  known_hosts files (right, empty, with another key), all in the rig's
  temporary directory.

``down()`` kills every process in the DUT namespace (sshd and what it
started), deletes both namespaces and the directory with the keys. Only
198.18.0.0/15 addresses are used.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FWDBENCH = REPO / ".venv" / "bin" / "fwdbench"
SSHD = "/usr/sbin/sshd"
MGMT_TG, MGMT_DUT = "198.19.255.1", "198.19.255.2"
RIG_UID = 64123
#: the DUT host's own mounts (users, sudoers, fwdbench's directory), held by a process
#: that outlives sshd restarts, as a real host's disks do
HOLD_SCRIPT = ('mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/shadow && '
               'mount --bind "$3" /etc/group && mount --bind "$4" /etc/sudoers.d && '
               'mount -t tmpfs -o mode=0755,size=64m fbrig "$5" && echo $$ > "$6" && '
               'exec sleep infinity')


def available() -> str | None:
    """None when the rig can be built here, else why not."""
    for tool in (SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keygen", "/usr/bin/sudo",
                 "/usr/bin/socat", "/usr/bin/unshare"):
        if not os.path.exists(tool):
            return f"{tool} is missing (make deps installs openssh-server, sudo, socat)"
    if not FWDBENCH.exists():
        return f"{FWDBENCH} is missing (make setup)"
    return None


def run(argv, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("check", True)
    return subprocess.run(argv, capture_output=True, text=True, **kw)


class SshRig:
    def __init__(self) -> None:
        self.id = secrets.token_hex(3)
        self.tg_ns = f"fbrig-{self.id}-tg"
        self.dut_ns = f"fbrig-{self.id}-dut"
        self.dir = Path(tempfile.gettempdir()) / f"fbrig-{self.id}"     # made by up()
        self.sshd: subprocess.Popen | None = None
        self.holder: subprocess.Popen | None = None
        self.holder_pid = 0
        self.made_run_sshd = False
        self.ports = [("rt0", "rd0"), ("rt1", "rd1")]

    # --- building -------------------------------------------------------------------------
    def up(self) -> "SshRig":
        self.dir.mkdir(mode=0o700)
        try:
            self._namespaces()
            self._keys_and_users()
            self._hold_mounts()
            self.start_sshd()
        except BaseException:
            self.down()
            raise
        return self

    def _namespaces(self) -> None:
        for ns in (self.tg_ns, self.dut_ns):
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "link", "add", "rm0", "netns", self.tg_ns, "type", "veth",
             "peer", "name", "rm1", "netns", self.dut_ns])
        run(["ip", "-n", self.tg_ns, "addr", "add", f"{MGMT_TG}/24", "dev", "rm0"])
        run(["ip", "-n", self.dut_ns, "addr", "add", f"{MGMT_DUT}/24", "dev", "rm1"])
        run(["ip", "-n", self.tg_ns, "link", "set", "rm0", "up"])
        run(["ip", "-n", self.dut_ns, "link", "set", "rm1", "up"])
        for tg, dut in self.ports:
            run(["ip", "link", "add", tg, "netns", self.tg_ns, "type", "veth",
                 "peer", "name", dut, "netns", self.dut_ns])
            # veth delivers frames sent by XDP (the generator's, XDP DUTs') only into a
            # peer with NAPI, which GRO turns on: what a NIC's receive ring is
            run(["ip", "netns", "exec", self.tg_ns, "ethtool", "-K", tg, "gro", "on"])
            run(["ip", "netns", "exec", self.dut_ns, "ethtool", "-K", dut, "gro", "on"])
            run(["ip", "-n", self.dut_ns, "link", "set", dut, "up"])   # as a host's NICs are

    def _keys_and_users(self) -> None:
        d = self.dir
        os.chmod(d, 0o755)          # sshd reads the users' keys as those users
        keys = d / "keys"
        keys.mkdir(mode=0o755)
        for name in ("host", "user", "stranger", "otherhost"):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fbrig-{name}",
                 "-f", str(keys / name)])
        pub = (keys / "user.pub").read_text()
        auth = d / "authorized"
        auth.mkdir(mode=0o755)
        for user in ("root", "fbrig", "fbrigpw"):
            (auth / user).write_text(pub)
            os.chmod(auth / user, 0o644)
        home = d / "home"
        home.mkdir(mode=0o755)
        for user, uid in (("root", 0), ("fbrig", RIG_UID), ("fbrigpw", RIG_UID + 1)):
            (home / user).mkdir(mode=0o755)
            os.chown(home / user, uid, uid)
        etc = d / "etc"
        etc.mkdir(mode=0o755)
        passwd = [ln for ln in Path("/etc/passwd").read_text().splitlines()
                  if not ln.startswith("root:")]
        passwd = [f"root:x:0:0:root:{home}/root:/bin/sh"] + passwd + [
            f"fbrig:x:{RIG_UID}:{RIG_UID}:fwdbench rig:{home}/fbrig:/bin/sh",
            f"fbrigpw:x:{RIG_UID + 1}:{RIG_UID + 1}:fwdbench rig:{home}/fbrigpw:/bin/sh"]
        (etc / "passwd").write_text("\n".join(passwd) + "\n")
        shadow = Path("/etc/shadow").read_text().rstrip("\n").splitlines() + [
            "fbrig:*:19000:0:99999:7:::", "fbrigpw:*:19000:0:99999:7:::"]
        (etc / "shadow").write_text("\n".join(shadow) + "\n")
        os.chmod(etc / "shadow", 0o640)
        group = Path("/etc/group").read_text().rstrip("\n").splitlines() + [
            f"fbrig:x:{RIG_UID}:", f"fbrigpw:x:{RIG_UID + 1}:"]
        (etc / "group").write_text("\n".join(group) + "\n")
        sudoers = etc / "sudoers.d"
        sudoers.mkdir(mode=0o755)
        (sudoers / "fbrig").write_text("fbrig ALL=(root) NOPASSWD: ALL\n")
        os.chmod(sudoers / "fbrig", 0o440)
        (d / "sshd_config").write_text(
            f"ListenAddress {MGMT_DUT}\nPort 22\nHostKey {keys / 'host'}\n"
            f"AuthorizedKeysFile {auth}/%u\nPidFile {d / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "AllowUsers root fbrig fbrigpw\nMaxSessions 64\nMaxStartups 64\nLogLevel INFO\n")
        hostpub = (keys / "host.pub").read_text().split()[:2]
        (d / "known_hosts").write_text(f"{MGMT_DUT} {' '.join(hostpub)}\n")
        other = (keys / "otherhost.pub").read_text().split()[:2]
        (d / "known_hosts.changed").write_text(f"{MGMT_DUT} {' '.join(other)}\n")
        (d / "known_hosts.empty").write_text("")
        cfg = []
        for alias, user, key in (("dut-rig", "root", "user"), ("dut-rig-sudo", "fbrig", "user"),
                                 ("dut-rig-pw", "fbrigpw", "user"),
                                 ("dut-rig-stranger", "root", "stranger")):
            cfg += [f"Host {alias}", f"  HostName {MGMT_DUT}", f"  User {user}",
                    f"  IdentityFile {keys / key}", "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {d / 'known_hosts'}", "  LogLevel ERROR", ""]
        (d / "ssh_config").write_text("\n".join(cfg))
        self.workdir = d / "dutwork"
        self.workdir.mkdir(mode=0o755)     # a tmpfs of the DUT host's mounts covers it

    def _hold_mounts(self) -> None:
        d = self.dir
        self.holder = subprocess.Popen(
            ["ip", "netns", "exec", self.dut_ns, "unshare", "--mount", "--propagation",
             "private", "--", "sh", "-c", HOLD_SCRIPT, "sh", str(d / "etc" / "passwd"),
             str(d / "etc" / "shadow"), str(d / "etc" / "group"), str(d / "etc" / "sudoers.d"),
             str(self.workdir), str(d / "holder.pid")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        deadline = time.monotonic() + 10
        while not (d / "holder.pid").exists():
            if self.holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the rig's DUT mounts failed: "
                                   f"{self.holder.communicate()[1].decode()[-500:]}")
            time.sleep(0.02)
        self.holder_pid = int((d / "holder.pid").read_text())

    def enter(self) -> list[str]:
        """argv prefix that runs a command on the DUT host as its operator (its
        network and mounts: nsenter into the rig's holder process)."""
        return ["nsenter", "-t", str(self.holder_pid), "-m", "-n", "--"]

    def start_sshd(self) -> None:
        """Start (or restart) the DUT host's sshd and wait until it answers."""
        if not os.path.isdir("/run/sshd"):      # sshd's privilege separation directory
            os.makedirs("/run/sshd", mode=0o755)
            self.made_run_sshd = True
        d = self.dir
        self.sshd = subprocess.Popen(
            self.enter() + [SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(d / "sshd.log", "ab"), start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            cp = self.ssh("dut-rig", ["true"], check=False)
            if cp.returncode == 0:
                return
            if self.sshd.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the rig's sshd did not come up: {cp.stderr.strip()} | "
                                   f"{(d / 'sshd.log').read_text()[-500:]}")
            time.sleep(0.1)

    def stop_sshd(self) -> None:
        """Kill the DUT host's sshd and every session of it: the connection drops."""
        for pid in self.dut_pids():
            if _comm(pid) == "sshd":
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.sshd is not None:
            self.sshd.wait(10)
            self.sshd = None

    # --- using ------------------------------------------------------------------------------
    def ssh(self, alias: str, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        import shlex
        return run(["ip", "netns", "exec", self.tg_ns, "ssh", "-F", str(self.dir / "ssh_config"),
                    "-o", "BatchMode=yes", alias, shlex.join(argv)], check=check, timeout=60)

    def dut(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        """A command in the DUT namespace, as its operator would run it there."""
        return run(["ip", "netns", "exec", self.dut_ns, *argv], check=check, timeout=60)

    def testbed_toml(self, host: str = "dut-rig", **extra) -> str:
        """The [testbed] table of a campaign on this rig."""
        lines = ["[testbed]", 'type = "ssh"', f'host = "{host}"',
                 f'ssh_config = "{self.dir / "ssh_config"}"', f'workdir = "{self.workdir}"',
                 "dut_cpus = [1]", "gen_cpus = [0]", 'line_rate = "10Gbps"',
                 'max_load = "3Mpps"']
        for k, v in extra.items():
            lines.append(f"{k} = {v}")
        for tg, dut in self.ports:
            lines += ["[[testbed.ports]]", f'dut = "{dut}"', f'tg = "{tg}"']
        return "\n".join(lines) + "\n"

    def fwdbench(self, args: list[str], **kw) -> subprocess.Popen:
        """fwdbench on the tester host (in its namespace), started in its own process group."""
        env = dict(os.environ, COLUMNS="160")
        return subprocess.Popen(["ip", "netns", "exec", self.tg_ns, str(FWDBENCH), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=env, **kw)

    def fwdbench_run(self, args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
        p = self.fwdbench(args)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            raise AssertionError(f"fwdbench {args} hung: {err[-2000:]}")
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def dut_pids(self) -> list[int]:
        from fwdbench.lab.cleanup import ns_pids
        return ns_pids(self.dut_ns)

    def dut_programs(self) -> list[str]:
        """Names of the processes in the DUT namespace other than sshd's."""
        return sorted(c for c in (_comm(p) for p in self.dut_pids()) if c and c != "sshd")

    def dut_state(self) -> dict[str, str]:
        """What a data plane could leave on the DUT host, as text to compare."""
        ports = " ".join(d for _, d in self.ports)
        import json
        links = {}
        for ln in json.loads(self.dut(["ip", "-j", "-d", "addr", "show"]).stdout):
            # carrier (LOWER_UP, NO-CARRIER) follows the tester's port with a delay: left out
            links[ln["ifname"]] = {
                "admin_up": "UP" in ln["flags"], "mtu": ln["mtu"], "master": ln.get("master"),
                "xdp": ln.get("xdp"), "kind": (ln.get("linkinfo") or {}).get("info_kind"),
                "addresses": sorted(f"{a['local']}/{a['prefixlen']}" for a in ln["addr_info"]
                                    if a.get("scope") != "link")}
        return {
            "links": json.dumps(links, sort_keys=True),
            "neighbours": self.dut(["ip", "neigh", "show", "nud", "permanent"]).stdout,
            "routes4": self.dut(["ip", "-4", "route", "show", "proto", "251"]).stdout,
            "routes6": self.dut(["ip", "-6", "route", "show", "proto", "251"]).stdout,
            "nexthops": self.dut(["ip", "nexthop", "show"], check=False).stdout,
            "nft": self.dut(["nft", "list", "tables"]).stdout,
            "tc": "".join(self.dut(["tc", "qdisc", "show", "dev", d]).stdout
                          for _, d in self.ports),
            "forwarding": self.dut(["sysctl", "-n", "net.ipv4.ip_forward",
                                    "net.ipv6.conf.all.forwarding"]).stdout,
            "programs": " ".join(self.dut_programs()),
            "ports": ports,
        }

    def dut_ls(self, path: Path | str) -> list[str]:
        """The names in a directory of the DUT host's workdir (seen only there)."""
        cp = run(self.enter() + ["find", str(path), "-mindepth", "1", "-maxdepth", "1",
                                 "-printf", "%f\\n"], check=False)
        return sorted(cp.stdout.split())

    def run_dirs(self) -> list[str]:
        return self.dut_ls(self.workdir / "runs")

    # --- removing -----------------------------------------------------------------------------
    def down(self) -> None:
        from fwdbench.lab.cleanup import ns_pids
        for ns in (self.dut_ns, self.tg_ns):
            for _ in range(3):
                pids = ns_pids(ns)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.2)
        for proc in (self.sshd, self.holder):
            if proc is not None:
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        for ns in (self.tg_ns, self.dut_ns):
            run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def trials(db: Path) -> list[sqlite3.Row]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return list(con.execute("SELECT * FROM trial ORDER BY id"))
    finally:
        con.close()
