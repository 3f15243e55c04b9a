"""``RemoteExecutor``: the Executor interface (lab/executor.py) on a host reached over SSH.

Every method is one command on the DUT host, run as a session over the
run's ControlMaster (ssh.py): the argv is quoted for the remote shell with
``shlex.join`` (so it arrives as the same argv), prefixed with ``sudo -n``
when the login user is not root and with ``env LC_ALL=C`` (messages in one
language, and a missing command exits 127 the same way with and without
sudo). Where the local executor reads kernel state directly (sysctls, /proc,
files, UNIX sockets, netlink), this one runs a command for it: a few fixed
``sh -c`` scripts take their data as positional arguments, never inside the
script text.

``popen`` starts a long-running program (vfwd, VPP) under a small watchdog:
the program's pid goes to a file in the run's directory on the DUT host, its
environment carries ``FWDBENCH_RUN=<run tag>`` (so a later run finds and
stops it after a crash), and it gets SIGTERM when its ssh session ends, be
it closed by fwdbench or lost with the connection. The returned
``RemoteProcess`` behaves as a Popen whose ``pid`` is the remote one.
With ``stdin=PIPE`` (a program driven on its console: testpmd) the
session's stdin is the program's own: what fwdbench writes to
``proc.stdin`` reaches it over the open session, and when that session
ends (closed, or the tester process gone: its end of the pipe closes and
ssh sends EOF; the connection lost: sshd closes it) the program reads EOF,
which such a program must take as the order to quit; the watchdog's own
reader is left out (it would take the program's input). One that would not
quit is stopped by the next run's sweep, by its tag (leftovers.py).
"""
from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import LabError
from ..lab.executor import CommandError, Executor
from .ssh import SSH_FAILED, SshConnection, SshConnectionLost, SshError, classify, last_lines

#: exit status of `env` when the program is missing (and of a shell's "command not found")
NOT_FOUND = 127
#: how long a session that failed with ssh's 255 and no message gives the master to
#: notice that the connection dropped (it learns of it after the sessions do)
_MASTER_SETTLE_S = 3.0

# Fixed scripts (data arrives as "$@", never in the text).
#: popen's watchdog: pid file, run tag, then the program's argv
WATCHDOG = ('pidfile=$1; tag=$2; shift 2; echo $$ > "$pidfile" || exit 126; exec 3<&0; '
            '(cat <&3 >/dev/null; kill -TERM $$ 2>/dev/null) >/dev/null 2>&1 & '
            'exec env FWDBENCH_RUN="$tag" LC_ALL=C "$@" </dev/null 3<&-')
#: popen(stdin=PIPE): the same without the reader; the program reads the session's stdin
WATCHDOG_STDIN = ('pidfile=$1; tag=$2; shift 2; echo $$ > "$pidfile" || exit 126; '
                  'exec env FWDBENCH_RUN="$tag" LC_ALL=C "$@"')
#: sysctl_set: pairs of /proc/sys path and value
SYSCTL_SET = ('while [ $# -gt 1 ]; do printf "%s\\n" "$2" > "$1" || exit 1; shift 2; done')
#: missing_tools: the names not found on PATH
MISSING = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
#: write_file: path, mode; the data on stdin
WRITE = 'umask 077 && cat > "$1" && chmod "$2" "$1"'

_HEADER = re.compile(r"\n==> (.+?) <==\n")
_TAIL_ERROR = re.compile(r"tail: (?:cannot open|error reading) '(.+?)'")
_ENV_NOT_FOUND = re.compile(r"env: [‘'`]?([^’'\s:]+)[’']?: No such file or directory")
_SUDO_PASSWORD = re.compile(r"sudo: (a password is required|a terminal is required)")


class RemoteExecutor(Executor):
    """Runs on the DUT host behind ``conn``; ``sudo``: prefix ``sudo -n`` (login user not root)."""

    local = False

    def __init__(self, conn: SshConnection, *, sudo: bool, run_tag: str = "fb-run",
                 proc_dir: str | None = None):
        super().__init__(None)
        self.conn = conn
        self.sudo = sudo
        self.run_tag = run_tag
        #: directory on the DUT host for popen's pid files (the run's directory)
        self.proc_dir = proc_dir
        self.children: list[RemoteProcess] = []     # type: ignore[assignment]
        self.bridges: dict[str, Any] = {}           # unix_socket(): remote path -> UnixBridge
        self.copies: dict[str, str] = {}            # local_copy(): remote dir -> local dir
        self.commands = 0                           # run() calls, for the report's timings

    @property
    def where(self) -> str:
        return f"on {self.conn.name}"

    def __repr__(self) -> str:
        return f"RemoteExecutor({self.conn.name!r}, sudo={self.sudo})"

    # --- commands ------------------------------------------------------------------
    def remote_command(self, argv: Sequence[str], env: bool = True) -> str:
        """The remote shell's command line for ``argv``: quoted with shlex.join."""
        self._check_argv(argv)
        pre = (["sudo", "-n", "--"] if self.sudo else []) + (["env", "LC_ALL=C"] if env else [])
        return shlex.join(pre + list(argv))

    @staticmethod
    def _check_argv(argv: Sequence[str]) -> None:
        if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"argv must be a non-empty list of str, got {argv!r}")

    def argv(self, argv: Sequence[str]) -> list[str]:
        return self.conn.argv(self.remote_command(argv))

    def run(self, argv: Sequence[str], input: str | bytes | None = None,
            timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess:
        during = f"while running `{_short(argv)}`"
        self.conn.ensure_alive(during)
        full = self.argv(argv)
        text = not isinstance(input, bytes)
        self.commands += 1
        try:
            cp = subprocess.run(full, input=input, capture_output=True, text=text,
                                timeout=timeout, check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise LabError(f"`{shlex.join(argv)}` {self.where} did not finish within "
                           f"{timeout:g} s") from None
        err = cp.stderr if text else cp.stderr.decode(errors="replace")
        self._raise_for(argv, cp.returncode, err, during)
        if check and cp.returncode != 0:
            raise CommandError(None, argv, cp.returncode, err, where=self.where)
        return cp

    def _raise_for(self, argv: Sequence[str], rc: int, err: str, during: str) -> None:
        """The failures that are not the command's own: ssh, sudo, a missing program."""
        if rc == SSH_FAILED:
            e = classify(err, self.conn.target, during)
            if e is not None:
                raise e
            if not self.conn.alive(settle=_MASTER_SETTLE_S):
                raise SshConnectionLost(f"ssh {self.conn.name}: the connection to the DUT host "
                                        f"was lost {during}: {last_lines(err, 1)}")
        if self.sudo and _SUDO_PASSWORD.search(err):
            raise SshError(sudo_password_message(self.conn.name))
        if rc == NOT_FOUND:
            m = _ENV_NOT_FOUND.search(err)
            if m:
                raise LabError(f"`{m.group(1)}` is not installed on the DUT host "
                               f"{self.conn.name} (needed for `{_short(argv)}`)")

    def popen(self, argv: Sequence[str], **kwargs: Any) -> "RemoteProcess":
        """Start ``argv`` on the DUT host under the watchdog (module docstring); returns
        once its remote pid is known. stdout/stderr kwargs apply to the local end."""
        self._check_argv(argv)
        stdin = kwargs.pop("stdin", None)
        if stdin not in (None, subprocess.PIPE, subprocess.DEVNULL):
            raise LabError(f"`{_short(argv)}`: its stdin on the DUT host {self.conn.name} is "
                           f"the SSH session's (PIPE) or none, not {stdin!r}")
        if self.proc_dir is None:
            raise LabError("RemoteExecutor.popen: no run directory on the DUT host yet")
        self.conn.ensure_alive(f"starting `{_short(argv)}`")
        pidfile = f"{self.proc_dir}/{secrets.token_hex(4)}.pid"
        pre = ["sudo", "-n", "--"] if self.sudo else []
        fed = stdin == subprocess.PIPE
        remote = shlex.join(pre + ["sh", "-c", WATCHDOG_STDIN if fed else WATCHDOG, "fwdbench",
                                   pidfile, self.run_tag, *argv])
        local = subprocess.Popen(self.conn.argv(remote), stdin=subprocess.PIPE,
                                 start_new_session=True, **kwargs)
        proc = RemoteProcess(local, self, list(argv), pidfile, fed=fed)
        self.children.append(proc)
        proc.wait_started()
        return proc

    def popen_logged(self, argv: Sequence[str], log: str) -> "RemoteProcess":
        """``argv`` with its output written to ``log`` on the DUT host (an exec'ing
        ``sh`` redirects it there, so the pid stays the program's)."""
        self._check_argv(argv)
        return self.popen(["sh", "-c", 'exec "$@" >"$0" 2>&1', log, *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def unix_socket(self, path: str) -> str:
        """A socket on this host (in the run's private directory) whose every
        connection reaches ``path`` on the DUT host (bridge.py)."""
        from .bridge import UnixBridge
        if path not in self.bridges:
            local = f"{self.conn.private_dir}/s{len(self.bridges)}.sock"
            self.bridges[path] = UnixBridge(self, path, local)
        return self.bridges[path].local_path

    def close_socket(self, path: str) -> None:
        """Stop carrying connections to ``path`` (unix_socket)."""
        bridge = self.bridges.pop(path, None)
        if bridge is not None:
            bridge.close()

    def local_copy(self, directory: str) -> str:
        """``directory`` of the DUT host copied (tar over the connection) into the run's
        private directory on this host, once per run."""
        import io
        import tarfile
        if directory not in self.copies:
            cp = self.run(["tar", "-C", directory, "-cf", "-", "."], input=b"", timeout=120,
                          check=False)
            if cp.returncode != 0:
                raise LabError(f"copying {directory} from {self.conn.name}: "
                               f"{last_lines(cp.stderr.decode(errors='replace'), 1)}")
            dest = f"{self.conn.private_dir}/copy{len(self.copies)}"
            with tarfile.open(fileobj=io.BytesIO(cp.stdout)) as tar:
                for m in tar.getmembers():      # regular files and directories, inside dest
                    parts = os.path.normpath(m.name).split(os.sep)
                    if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                        continue
                    target = os.path.join(dest, *parts)
                    if m.isdir():
                        os.makedirs(target, exist_ok=True)
                        continue
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    src = tar.extractfile(m)
                    with open(target, "wb") as f:
                        f.write(src.read() if src else b"")
            self.copies[directory] = dest
        return self.copies[directory]

    # --- kernel state through commands ------------------------------------------------
    def sysctl_set(self, values: Mapping[str, int | str]) -> None:
        if not values:
            return
        args = [a for k, v in values.items() for a in ("/proc/sys/" + k.replace(".", "/"), str(v))]
        cp = self.run(["sh", "-c", SYSCTL_SET, "sh", *args], check=False)
        if cp.returncode != 0:
            raise LabError(f"sysctl {', '.join(f'{k}={v}' for k, v in values.items())} "
                           f"{self.where}: {last_lines(cp.stderr, 1)}")

    def sysctl_get(self, keys: Sequence[str]) -> dict[str, str]:
        paths = {"/proc/sys/" + k.replace(".", "/"): k for k in keys}
        got = self.read_files(list(paths))
        return {k: (None if got.get(p) is None else got[p].strip())    # type: ignore[union-attr]
                for p, k in paths.items()}

    def read_proc_net(self, name: str) -> str:
        return self.read_file(f"/proc/net/{name}")

    def socket(self, family: int, type_: int, proto: int = 0):
        raise LabError(f"a socket on the DUT host {self.conn.name} cannot be opened from the "
                       f"tester: use a command (RemoteExecutor)")

    def iproute(self) -> Iterator[Any]:     # type: ignore[override]
        raise LabError(f"pyroute2 cannot reach the DUT host {self.conn.name}: use `ip` "
                       f"commands through the executor")

    def write_file(self, path: str, data: str, mode: int = 0o644) -> None:
        self.run(["sh", "-c", WRITE, "sh", path, f"{mode:o}"], input=data)

    def read_file(self, path: str) -> str:
        got = self.read_files([path])[path]
        if got is None:
            raise LabError(f"reading {path} {self.where}: not readable or missing")
        return got

    def read_files(self, paths: Sequence[str]) -> dict[str, str | None]:
        """All of ``paths`` with one process there: ``tail -v -n +1`` prints each
        file after a ``==> path <==`` line (a blank line between files); a file
        it cannot open or read is named on stderr and is None here. (Meant for
        /proc and /sys files, which hold no such header lines.)"""
        paths = list(dict.fromkeys(paths))
        if not paths:
            return {}
        cp = self.run(["tail", "-v", "-n", "+1", "--", *paths], check=False)
        out: dict[str, str | None] = {p: None for p in paths}
        parts = _HEADER.split("\n" + cp.stdout)
        for path, content in zip(parts[1::2], parts[2::2]):
            if path in out:
                out[path] = content
        for m in _TAIL_ERROR.finditer(cp.stderr):
            if m.group(1) in out:
                out[m.group(1)] = None
        return out

    def exists(self, path: str) -> bool:
        return self.run(["test", "-e", path], check=False).returncode == 0

    def missing_tools(self, names: Sequence[str]) -> list[str]:
        if not names:
            return []
        return self.run(["sh", "-c", MISSING, "sh", *names], check=False).stdout.split()

    def tools_for(self, operation: str) -> list[str]:
        return {"unix_request": ["socat"], "conntrack_flush": ["conntrack"],
                "bulk_routes": ["ip"]}.get(operation, [])

    def kernel_config(self) -> dict[str, str]:
        cp = self.run(["zcat", "/proc/config.gz"], check=False)
        if cp.returncode != 0:
            return {}
        return dict(ln.strip().split("=", 1) for ln in cp.stdout.splitlines()
                    if ln.startswith("CONFIG_") and "=" in ln)

    def kernel_release(self) -> str:
        return self.run(["uname", "-r"]).stdout.strip()

    def bulk_routes(self, specs: Any, delete: bool = False) -> int:
        """The routes as ``ip -batch -`` lines (route add|del PREFIX nhid N proto P),
        one command for all of them: what raw netlink does locally."""
        from ..lab.netlink import RTPROT_FWDBENCH
        import socket as _s
        verb = "del" if delete else "add"
        lines = []
        for spec in specs:
            tail = (f"nhid {spec.nhid}" if spec.nhid is not None
                    else f"via {spec.gateway} dev {spec.oif}")
            for net, plen in spec.prefixes:
                lines.append(f"route {verb} {_s.inet_ntop(spec.family, net)}/{plen} {tail} "
                             f"proto {RTPROT_FWDBENCH}")
        if lines:
            timeout = 60.0 + len(lines) / 20000.0
            self.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", timeout=timeout)
        return len(lines)

    def conntrack_flush(self) -> None:
        self.run(["conntrack", "-F"])

    def unix_request(self, path: str, request: bytes, timeout: float = 5.0) -> bytes:
        """``request`` to the UNIX socket ``path`` of the DUT host, through socat there."""
        if re.search(r"[,:!\s]", path):
            raise LabError(f"UNIX socket path {path!r}: socat cannot address it (',', ':', "
                           f"'!' or blanks)")
        cp = self.run(["socat", "-t", f"{timeout:g}", "-T", f"{timeout:g}", "-",
                       f"UNIX-CONNECT:{path}"], input=request, timeout=timeout + 10, check=False)
        if cp.returncode != 0:
            raise OSError(f"{path} {self.where}: "
                          f"{last_lines(cp.stderr.decode(errors='replace'), 1)}")
        return cp.stdout

    def pids(self) -> list[int]:
        raise LabError("pids(): the DUT host over SSH has no lab namespace; processes are "
                       "found by their FWDBENCH_RUN tag")

    # --- the run's processes ------------------------------------------------------------
    def stop_children(self) -> None:
        """Stop every program popen() started that still runs (SIGTERM, then SIGKILL),
        and every socket bridge."""
        for path in list(self.bridges):
            self.close_socket(path)
        for p in list(self.children):
            p.stop()
        self.children.clear()


def sudo_password_message(name: str) -> str:
    return (f"ssh {name}: sudo on the DUT host asks for a password: fwdbench runs `sudo -n` "
            f"and cannot answer one. Allow the login user's commands without a password (a "
            f"sudoers line `USER ALL=(root) NOPASSWD: ALL`, docs/testbeds.md), or log in as root")


def _short(argv: Sequence[str]) -> str:
    s = shlex.join(list(argv)[:6]) + (" ..." if len(argv) > 6 else "")
    return s if len(s) <= 160 else s[:157] + "..."


class RemoteProcess:
    """A program popen() started on the DUT host, as a Popen: ``pid`` is its pid
    there; ``stdout``/``stderr`` (when PIPE) read its output through ssh; signals
    are sent with ``kill`` over the connection; ``returncode`` is its exit status
    as ssh reports it (255 when a signal ended it)."""

    def __init__(self, local: subprocess.Popen, ex: RemoteExecutor, argv: list[str],
                 pidfile: str, fed: bool = False):
        self.local = local
        self.ex = ex
        self.args = argv
        self.pidfile = pidfile
        self.pid: int | None = None
        #: the program's stdin (popen's stdin=PIPE): the session's, written here
        self.stdin = local.stdin if fed else None
        self.stdout = local.stdout
        self.stderr = local.stderr

    @property
    def returncode(self) -> int | None:
        return self.local.returncode

    def wait_started(self, timeout: float = 15.0) -> None:
        """Wait until the watchdog wrote the remote pid (or the session ended)."""
        deadline = time.monotonic() + timeout
        while self.local.poll() is None:
            text = self.ex.read_files([self.pidfile])[self.pidfile]
            if text and text.strip().isdigit():
                self.pid = int(text.strip())
                return
            if time.monotonic() > deadline:
                self.stop()
                raise LabError(f"`{_short(self.args)}` on {self.ex.conn.name}: no pid "
                               f"within {timeout:g} s")
            time.sleep(0.05)
        # ended at once: stderr (when piped) says why; the driver reads it

    def poll(self) -> int | None:
        return self.local.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.local.wait(timeout)

    def send_signal(self, sig: int) -> None:
        if self.local.poll() is not None or self.pid is None:
            return
        name = signal.Signals(sig).name.removeprefix("SIG")
        try:
            self.ex.run(["kill", "-s", name, str(self.pid)], check=False, timeout=15)
        except SshError:
            # the connection is gone: ending the session makes the watchdog stop it
            # once sshd notices; a later run stops it by its FWDBENCH_RUN tag
            self._end_session()

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        self._end_session()

    def _end_session(self) -> None:
        if self.local.stdin is not None and not self.local.stdin.closed:
            try:
                self.local.stdin.close()
            except OSError:
                pass
        try:
            self.local.wait(5)
        except subprocess.TimeoutExpired:
            self.local.kill()
            self.local.wait(5)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, SIGKILL after ``timeout``; then the session ends."""
        if self.local.poll() is None:
            self.terminate()
            try:
                self.local.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._end_session()

    def __repr__(self) -> str:
        return f"RemoteProcess(pid={self.pid}, {_short(self.args)!r} on {self.ex.conn.name})"
