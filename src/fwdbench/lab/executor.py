"""Run commands and touch kernel state inside one lab namespace.

``Executor`` is the only way lab and DUT code changes a namespace: argv
lists (never shell strings) run through ``ip netns exec``, sysctls and
/proc/net files are read or written from a thread that setns()es into the
namespace (no process spawn). A remote (SSH) executor can implement the
same methods with commands.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import LabError
from .netlink import in_netns, netns_socket


class CommandError(LabError):
    """A command in a lab namespace failed; the message names it and its stderr."""

    def __init__(self, ns: str | None, argv: Sequence[str], returncode: int, stderr: str,
                 where: str | None = None):
        self.ns, self.argv, self.returncode, self.stderr = ns, list(argv), returncode, stderr
        where = where or (f"in netns {ns}" if ns else "on the host")
        tail = stderr.strip().splitlines()[-3:] if stderr else []
        super().__init__(f"`{shlex.join(argv)}` {where} exited with {returncode}"
                         + (": " + " | ".join(tail) if tail else ""))


class Executor:
    """Local executor bound to netns ``ns`` (``None``: the host namespace)."""

    #: True when the executor's host is this one (its files, sockets and shared
    #: memory are this process's to open); a RemoteExecutor's is not
    local = True

    def __init__(self, ns: str | None):
        self.ns = ns
        self.children: list[subprocess.Popen] = []     # started by popen()

    def __repr__(self) -> str:
        return f"Executor(ns={self.ns!r})"

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The full argv that runs ``argv`` in this namespace."""
        if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"argv must be a non-empty list of str, got {argv!r}")
        return (["ip", "netns", "exec", self.ns] if self.ns else []) + list(argv)

    def run(self, argv: Sequence[str], input: str | bytes | None = None,
            timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess:
        """Run to completion; stdout/stderr captured (text unless ``input`` is bytes).

        Raises CommandError when ``check`` and the exit code is not 0, and
        LabError on timeout.
        """
        full = self.argv(argv)
        text = not isinstance(input, bytes)
        try:
            cp = subprocess.run(full, input=input, capture_output=True, text=text,
                                timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise LabError(f"`{shlex.join(argv)}` in netns {self.ns} did not finish "
                           f"within {timeout:g} s") from None
        except (FileNotFoundError, PermissionError):
            raise LabError(f"`{full[0]}` is not installed or not executable "
                           f"(needed for `{shlex.join(argv)}`)") from None
        if check and cp.returncode != 0:
            err = cp.stderr if text else cp.stderr.decode(errors="replace")
            raise CommandError(self.ns, argv, cp.returncode, err)
        return cp

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """Start a long-running process in this namespace (Popen kwargs pass through).

        Returns once the process runs inside the namespace (or has ended), so a
        teardown right after cannot miss it. Processes left in a lab namespace
        are killed by ``Lab.down()``.
        """
        proc = subprocess.Popen(self.argv(argv), **kwargs)
        self.children.append(proc)
        if self.ns:
            try:
                target = os.stat(f"/run/netns/{self.ns}")
            except FileNotFoundError:
                return proc
            deadline = time.monotonic() + 2.0
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    st = os.stat(f"/proc/{proc.pid}/ns/net")
                    if (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev):
                        break
                except OSError:
                    pass
                time.sleep(0.001)
        return proc

    def popen_logged(self, argv: Sequence[str], log: str) -> subprocess.Popen:
        """Start a long-running process with stdout and stderr written to the file
        ``log`` on the executor's host (a data plane's own output, read back with
        ``read_file`` for error messages)."""
        with open(log, "w") as out:
            return self.popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=subprocess.STDOUT)

    def unix_socket(self, path: str) -> str:
        """A path on this host that reaches the UNIX socket ``path`` of the executor's
        host, for clients that open sockets themselves (vpp_papi): ``path`` itself
        here; a remote executor carries each connection over its link."""
        return path

    def local_copy(self, directory: str) -> str:
        """A directory on this host with the files of ``directory`` of the executor's
        host, to read there (e.g. a data plane's API definitions): itself here."""
        return directory

    # --- kernel state without spawning ---------------------------------------
    def sysctl_set(self, values: Mapping[str, int | str]) -> None:
        """Write sysctls (dotted names, e.g. ``net.ipv4.ip_forward``) in this netns."""
        with in_netns(self.ns):
            for key, val in values.items():
                path = "/proc/sys/" + key.replace(".", "/")
                try:
                    with open(path, "w") as f:
                        f.write(f"{val}\n")
                except OSError as e:
                    raise LabError(f"sysctl {key}={val} in netns {self.ns}: {e.strerror}") from None

    def sysctl_get(self, keys: Sequence[str]) -> dict[str, str]:
        """Read sysctls; missing ones map to ``None``."""
        out: dict[str, Any] = {}
        with in_netns(self.ns):
            for key in keys:
                try:
                    with open("/proc/sys/" + key.replace(".", "/")) as f:
                        out[key] = f.read().strip()
                except OSError:
                    out[key] = None
        return out

    def read_proc_net(self, name: str) -> str:
        """Contents of /proc/net/<name> as seen in this namespace (e.g. ``snmp``)."""
        with in_netns(self.ns), open(f"/proc/thread-self/net/{name}") as f:
            return f.read()

    def read_sysfs(self, path: str) -> str:
        """A sysfs file of this namespace, stripped (needs ip netns exec's /sys)."""
        return self.run(["cat", path]).stdout.strip()

    def write_sysfs(self, paths: Sequence[str], value: str) -> None:
        """Write ``value`` to sysfs files of this namespace (needs ip netns exec's /sys)."""
        self.run(["tee", *paths], input=value + "\n")

    def socket(self, family: int, type_: int, proto: int = 0):
        """A socket living in this namespace."""
        return netns_socket(self.ns, family, type_, proto)

    @contextlib.contextmanager
    def iproute(self) -> Iterator[Any]:
        """A pyroute2 IPRoute bound to this namespace (no multicast groups)."""
        from pyroute2 import IPRoute
        with in_netns(self.ns):
            ipr = IPRoute(groups=0)
        try:
            yield ipr
        finally:
            ipr.close()

    # --- files, tools and kernel facts of the host ------------------------------
    # (a netns shares this host's file system; a remote executor implements
    # these with commands on its host)
    def write_file(self, path: str, data: str, mode: int = 0o644) -> None:
        """Create or replace ``path`` on the executor's host."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(data)

    def read_file(self, path: str) -> str:
        """Text of ``path`` on the executor's host (LabError when it cannot be read)."""
        try:
            with open(path) as f:
                return f.read()
        except OSError as e:
            raise LabError(f"reading {path}: {e.strerror}") from None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read_files(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Text of several files of the executor's host at once (None: unreadable);
        e.g. /proc/stat and /proc/<pid>/stat for the CPU meters."""
        out: dict[str, str | None] = {}
        for p in paths:
            try:
                with open(p, errors="replace") as f:
                    out[p] = f.read()
            except OSError:
                out[p] = None
        return out

    def tools_for(self, operation: str) -> list[str]:
        """Commands this executor needs on its host for ``operation`` (a method
        name, e.g. ``unix_request``), for drivers' check(): none locally."""
        return []

    def missing_tools(self, names: Sequence[str]) -> list[str]:
        """Which of the commands ``names`` are not on the executor's PATH."""
        import shutil
        return [n for n in names if shutil.which(n) is None]

    def kernel_config(self) -> dict[str, str]:
        """``CONFIG_X -> y/m`` from /proc/config.gz; empty if the kernel does not expose it."""
        import gzip
        try:
            with gzip.open("/proc/config.gz", "rt") as f:
                return dict(ln.strip().split("=", 1) for ln in f
                            if ln.startswith("CONFIG_") and "=" in ln)
        except OSError:
            return {}

    def kernel_release(self) -> str:
        return os.uname().release

    def bulk_routes(self, specs: Any, delete: bool = False) -> int:
        """Add (or delete) many routes in this namespace over raw netlink (netlink.py)."""
        from .netlink import bulk_routes
        return bulk_routes(self.ns, specs, delete=delete)

    def conntrack_flush(self) -> None:
        """Forget the conntrack entries (NAT bindings) of this namespace."""
        from pyroute2 import Conntrack
        with in_netns(self.ns):         # pyroute2 opens the socket at the first request
            ct = Conntrack()
            try:
                ct.flush()
            finally:
                ct.close()

    def unix_request(self, path: str, request: bytes, timeout: float = 5.0) -> bytes:
        """Send ``request`` on the UNIX stream socket ``path`` of the executor's host
        and read the answer until the peer closes."""
        import socket
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(request)
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        return b"".join(chunks)

    def pids(self) -> list[int]:
        """PIDs (other than ours) of processes whose network namespace is this one."""
        if not self.ns:
            raise LabError("pids() needs a namespace")
        from .cleanup import ns_pids
        return ns_pids(self.ns)
