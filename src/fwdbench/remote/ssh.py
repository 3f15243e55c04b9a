"""One OpenSSH connection to a DUT host, as operators run it.

fwdbench does not speak SSH itself: it runs OpenSSH's client (``ssh``), so
the user's ``~/.ssh/config`` (ProxyJump, User, IdentityFile, ...) and
``known_hosts`` apply as they do for the operator. ``SshConnection.open()``
starts one ControlMaster for the run (its socket in a private directory of
this host), and every command of the run is a session multiplexed over it:
one TCP connection and one authentication per run. ``close()`` ends it.

Every ssh process is started in a session of its own, so a Ctrl-C in the
terminal reaches fwdbench (which then tears the DUT down over this
connection) and not the connection itself.

Failures become one line each (``classify``): the host unreachable, the key
refused, the host key unknown or changed, the connection lost.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from ..errors import LabError

#: ssh's own exit status for its errors (a remote command's status passes through)
SSH_FAILED = 255
#: options fwdbench sets itself; a campaign's ssh_options may not override them
OWN_OPTIONS = ("batchmode", "controlmaster", "controlpath", "controlpersist")


class SshError(LabError):
    """The DUT host could not be reached or used over SSH; the message says why and what to do."""


class SshConnectionLost(SshError):
    """The run's SSH connection to the DUT host ended while it was needed."""


@dataclass(frozen=True)
class SshTarget:
    """Where and how to connect (the campaign's ``[testbed]``; docs/testbeds.md)."""
    destination: str                    # user@host, or a Host alias of the ssh config
    port: int | None = None
    identity: str | None = None         # -i FILE (also IdentitiesOnly=yes)
    config: str | None = None           # -F FILE instead of ~/.ssh/config
    options: tuple[str, ...] = ()       # more -o Key=Value
    host_key_check: str = "strict"      # strict (StrictHostKeyChecking=yes) or accept-new
    connect_timeout_s: float = 10.0     # [s]
    ssh: str = "ssh"

    def base_argv(self) -> list[str]:
        """ssh and the options every ssh process of the run gets."""
        argv = [self.ssh, "-o", "BatchMode=yes",
                "-o", f"ConnectTimeout={max(1, math.ceil(self.connect_timeout_s))}",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                "-o", "StrictHostKeyChecking="
                + ("yes" if self.host_key_check == "strict" else "accept-new")]
        if self.config:
            argv += ["-F", os.path.expanduser(self.config)]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.identity:
            argv += ["-i", os.path.expanduser(self.identity), "-o", "IdentitiesOnly=yes"]
        for opt in self.options:
            argv += ["-o", opt]
        return argv


# --- what ssh's stderr means ------------------------------------------------------

_UNREACHABLE = re.compile(
    r"(Could not resolve hostname [^\n]*|connect to host [^\n]*|Connection timed out during "
    r"banner exchange|Network is unreachable|No route to host|kex_exchange_identification: "
    r"[^\n]*|Connection closed by [^\n]*port \d+|Connection reset by [^\n]*)")
_LOST = re.compile(r"(Timeout, server [^\n]* not responding|client_loop: [^\n]*|"
                   r"mux_client_[a-z_]*: [^\n]*|Control socket connect[^\n]*|"
                   r"Broken pipe|Connection to [^\n]* closed by remote host)")


def classify(stderr: str, target: SshTarget, during: str = "connect") -> SshError | None:
    """ssh's stderr (exit status 255) -> one clear error, or None when it is not ssh's."""
    dest = target.destination
    text = stderr.replace("\r", "")
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        m = re.search(r"Offending \S+ key in (\S+)", text)
        where = f" (recorded in {m.group(1)})" if m else ""
        return SshError(
            f"ssh {dest}: the DUT host's key CHANGED since it was recorded{where}: the host "
            f"was reinstalled, or someone is in between. Verify its fingerprint with its "
            f"administrator, then remove the old key (ssh-keygen -R HOST) and connect again")
    if "Host key verification failed" in text or "host key is known" in text:
        return SshError(
            f"ssh {dest}: the DUT host's key is not in known_hosts, and fwdbench checks host "
            f"keys strictly: verify its fingerprint and record it (connect once with `ssh "
            f"{dest}`, or ssh-keyscan HOST >> ~/.ssh/known_hosts after checking it), or set "
            f"testbed.host_key_check = \"accept-new\" to record it at first contact")
    if re.search(r"Permission denied \(", text):
        methods = re.search(r"Permission denied \(([^)]*)\)", text)
        return SshError(
            f"ssh {dest}: the DUT host refused the key (it accepts: "
            f"{methods.group(1) if methods else '?'}): add this tester's public key to the "
            f"DUT user's ~/.ssh/authorized_keys, or name the right key in testbed.identity "
            f"(fwdbench runs ssh in batch mode: no passwords, no passphrase prompts; use "
            f"ssh-agent for a key with a passphrase)")
    if "Too many authentication failures" in text:
        return SshError(f"ssh {dest}: too many authentication failures (ssh offered too many "
                        f"keys): set testbed.identity to the one key to use")
    if during != "connect":
        m = _LOST.search(text) or _UNREACHABLE.search(text)
        if m:
            return SshConnectionLost(f"ssh {dest}: the connection to the DUT host was lost "
                                     f"{during}: {m.group(1).strip()}")
    m = _UNREACHABLE.search(text)
    if m:
        return SshError(f"ssh {dest}: the DUT host is unreachable: {m.group(1).strip()} "
                        f"(check testbed.host and port, the network, and that sshd runs there)")
    return None


def last_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.replace("\r", "").splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


@dataclass
class SshConnection:
    """The run's ControlMaster connection to ``target``; its socket lives in
    ``private_dir`` (made here when not given, removed by ``close()``)."""
    target: SshTarget
    private_dir: str | None = None
    master: subprocess.Popen | None = None
    _made_dir: bool = False
    _log: str = ""
    opened_at: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def control_path(self) -> str:
        assert self.private_dir is not None
        return os.path.join(self.private_dir, "ctl")

    @property
    def name(self) -> str:
        return self.target.destination

    def open(self) -> "SshConnection":
        """Connect and authenticate once; SshError (one line) when it cannot."""
        if shutil.which(self.target.ssh) is None and not os.path.isfile(self.target.ssh):
            raise SshError(f"`{self.target.ssh}` (OpenSSH's client) is not installed on this "
                           f"host: apt-get install openssh-client")
        if self.private_dir is None:
            self.private_dir = tempfile.mkdtemp(prefix="fb-ssh-")
            self._made_dir = True
        self._log = os.path.join(self.private_dir, "master.log")
        t0 = time.monotonic()
        argv = self.target.base_argv() + [
            "-M", "-N", "-o", "ControlMaster=yes", "-o", f"ControlPath={self.control_path}",
            "-o", "ControlPersist=no", "--", self.target.destination]
        try:
            with open(self._log, "wb") as log:      # what ssh says, also much later
                self.master = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=log,
                                               start_new_session=True)
        except OSError as e:
            self.close()
            raise SshError(f"cannot run {argv[0]}: {e}") from None
        # authentication ends when the master listens on its socket
        deadline = t0 + self.target.connect_timeout_s + 30.0
        while True:
            if self.master.poll() is not None:
                err = self.log_text()
                self.close()
                raise classify(err, self.target) or SshError(
                    f"ssh {self.name}: could not connect (exit {self.master.returncode}): "
                    f"{last_lines(err) or 'no message'}")
            if os.path.exists(self.control_path) and self._check():
                break
            if time.monotonic() > deadline:
                self.close()
                raise SshError(f"ssh {self.name}: no connection within "
                               f"{deadline - t0:.0f} s (the DUT host does not answer)")
            time.sleep(0.02)
        self.opened_at = time.time()
        self.timings["connect_s"] = round(time.monotonic() - t0, 3)
        return self

    def _check(self) -> bool:
        cp = subprocess.run([self.target.ssh, "-S", self.control_path, "-O", "check", "--",
                             self.target.destination], capture_output=True, text=True,
                            timeout=10, start_new_session=True)
        return cp.returncode == 0

    def log_text(self) -> str:
        """What the master said (its stderr), e.g. why it ended."""
        try:
            with open(self._log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def alive(self, settle: float = 0.0) -> bool:
        """Whether the master runs. With ``settle``, a session that just failed
        without saying why (ssh's 255, no message) gives the master that long to
        notice a dropped connection and end: killed sessions fail first, and the
        master only learns of it when its socket closes."""
        if self.master is None:
            return False
        if settle > 0:
            try:
                self.master.wait(settle)
            except subprocess.TimeoutExpired:
                pass
        return self.master.poll() is None

    def ensure_alive(self, during: str) -> None:
        """SshConnectionLost when the master has ended (no silent reconnection:
        what the run configured on the DUT host is only known to this connection)."""
        if not self.alive():
            why = last_lines(self.log_text(), 1) if self.master is not None else "not connected"
            raise SshConnectionLost(f"ssh {self.name}: the connection to the DUT host was lost "
                                    f"{during}" + (f": {why}" if why else ""))

    def argv(self, remote_command: str) -> list[str]:
        """ssh argv running ``remote_command`` (one string for the remote shell,
        already quoted) as a session over the master."""
        return self.target.base_argv() + ["-S", self.control_path, "-o", "ControlMaster=no",
                                          "--", self.target.destination, remote_command]

    def close(self) -> None:
        """End the master (ssh -O exit, then SIGTERM) and remove the private directory."""
        master, self.master = self.master, None
        if master is not None:
            if master.poll() is None and self.private_dir and os.path.exists(self.control_path):
                try:
                    subprocess.run([self.target.ssh, "-S", self.control_path, "-O", "exit", "--",
                                    self.target.destination], capture_output=True, timeout=10,
                                   start_new_session=True)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if master.poll() is None:
                master.send_signal(signal.SIGTERM)
            try:
                master.wait(10)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait(5)
        if self._made_dir and self.private_dir:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self._made_dir = False
