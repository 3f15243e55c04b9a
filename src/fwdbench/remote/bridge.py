"""A UNIX socket on the tester that reaches a UNIX socket of the DUT host.

For clients that open a socket path themselves (vpp_papi, VPP's API): each
connection accepted on the local socket starts ``socat - UNIX-CONNECT:<path>``
on the DUT host as a session over the run's SSH connection (so through
``sudo -n`` as every command: the DUT's sockets are root's), and two threads
copy bytes both ways until either side closes. OpenSSH's own stream-local
forwarding (``-L local:remote``) would connect as the login user, who may
not open a socket made by root.
"""
from __future__ import annotations

import os
import socket
import subprocess
import threading

from .executor import RemoteExecutor


class UnixBridge:
    def __init__(self, ex: RemoteExecutor, remote_path: str, local_path: str):
        self.ex = ex
        self.remote_path = remote_path
        self.local_path = local_path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(local_path)
        os.chmod(local_path, 0o600)
        self.listener.listen(16)
        self._procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True,
                                        name=f"fwdbench-bridge-{os.path.basename(local_path)}")
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            argv = self.ex.argv(["socat", "-", f"UNIX-CONNECT:{self.remote_path}"])
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, bufsize=0,
                                        start_new_session=True)
            except OSError:
                conn.close()
                continue
            with self._lock:
                self._procs = [p for p in self._procs if p.poll() is None] + [proc]
            threading.Thread(target=self._up, args=(conn, proc), daemon=True).start()
            threading.Thread(target=self._down, args=(conn, proc), daemon=True).start()

    @staticmethod
    def _up(conn: socket.socket, proc: subprocess.Popen) -> None:
        """Client -> DUT host."""
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                proc.stdin.write(data)          # type: ignore[union-attr]
        except (OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()              # type: ignore[union-attr]
            except OSError:
                pass

    @staticmethod
    def _down(conn: socket.socket, proc: subprocess.Popen) -> None:
        """DUT host -> client; the client sees EOF when the remote side ends."""
        try:
            while True:
                data = proc.stdout.read(65536)      # type: ignore[union-attr]  # raw: what is there
                if not data:
                    break
                conn.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()

    def close(self) -> None:
        self._closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self._lock:
            procs, self._procs = self._procs, []
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        try:
            os.unlink(self.local_path)
        except OSError:
            pass
