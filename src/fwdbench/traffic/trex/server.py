"""TRex's stateless server on the tester host: started, awaited, stopped.

``t-rex-64 -i`` (interactive: the STL server) runs from its own folder
through the tester's executor (in the lab: the generator's namespace, whose
``lo`` carries the client's connection to 127.0.0.1), with the generated
``trex_cfg.yaml`` (config.py), its output in a log beside it. ``--hdrh``:
latency as an HdrHistogram (1 us resolution) besides TRex's coarse one;
``--iom 0``: no periodic screen; ``--no-scapy-server``: no second process.
On Linux interfaces TRex needs no hugepages (``--no-pci --no-huge`` are
implied for vdev-only ports).

On the lab's memif link, where TRex is the memif master (DPDK's ``server``),
it creates the ports' control sockets; a stale file at such a path (a
killed TRex's) is removed before it starts, and the sockets go when it
stops (DPDK leaves them behind on SIGINT too).

Stopping: SIGINT to the server's process group (the wrapper script and
``_t-rex-64``), SIGKILL after ``STOP_TIMEOUT_S``; then what DPDK may have
left under the instance's file prefix is removed (``/var/run/dpdk/<prefix>``,
``/dev/shm`` and hugepage files named after it).
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time

from ...errors import GeneratorError
from .config import TrexCfg
from .install import TrexInstall

STOP_TIMEOUT_S = 10.0        # [s] after SIGINT before SIGKILL
LOG_TAIL_LINES = 12


class TrexServer:
    """One TRex server process on ``tester`` (traffic.base.TesterHost)."""

    def __init__(self, tester, install: TrexInstall, cfg: TrexCfg, workdir: str,
                 listen_sockets: tuple[str, ...] = ()):
        self.tester = tester
        self.install = install
        self.cfg = cfg
        #: memif control sockets this server listens on (it is their master)
        self.listen_sockets = tuple(listen_sockets)
        self.workdir = workdir
        self.cfg_path = os.path.join(workdir, "trex_cfg.yaml")
        self.log_path = os.path.join(workdir, "trex.log")
        self.proc: subprocess.Popen | None = None
        self._made_bird_dir = False

    def argv(self) -> list[str]:
        return [self.install.server, "-i", "--cfg", self.cfg_path, "--no-scapy-server",
                "--iom", "0", "--hdrh"]

    def start(self) -> None:
        ex = self.tester.exec
        ex.write_file(self.cfg_path, self.cfg.render())
        for path in self.listen_sockets:       # DPDK's bind() fails on an existing file
            if os.path.lexists(path):
                os.unlink(path)
        # the wrapper makes /tmp/trex-bird for TRex's BIRD service; it goes when we go
        self._made_bird_dir = not os.path.exists("/tmp/trex-bird")
        with open(self.log_path, "w") as log:
            self.proc = ex.popen(self.argv(), cwd=self.install.prefix, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """TRex's own last words (its log), for error messages."""
        try:
            with open(self.log_path, errors="replace") as f:
                text = f.read()
        except OSError:
            return ""
        keep = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
        return "\n".join(keep[-lines:])

    def died(self) -> GeneratorError:
        code = self.proc.returncode if self.proc is not None else None
        tail = self.log_tail()
        return GeneratorError(f"trex: the server exited (code {code})"
                              + (f"; its output ends:\n{tail}" if tail else ""))

    def stop(self) -> list[str]:
        """Stop the server and remove what it left; returns what had to be forced."""
        notes: list[str] = []
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                notes.append(f"the TRex server did not stop within {STOP_TIMEOUT_S:g} s of "
                             "SIGINT: killed")
        if proc is not None:
            # the wrapper may be gone while _t-rex-64 still runs: the whole group goes,
            # and is waited for (a killed _t-rex-64 takes a moment to exit)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                notes.append("the TRex wrapper did not exit after SIGKILL")
            deadline = time.monotonic() + 5
            while _group_exists(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            if _group_exists(proc.pid):
                notes.append(f"TRex's process group {proc.pid} still exists after SIGKILL")
        notes += self.remove_leftovers()
        return notes

    def leftovers(self) -> list[str]:
        """Files a TRex instance with this file prefix leaves behind, if any."""
        pre = self.cfg.prefix
        found = [p for p in (f"/var/run/dpdk/{pre}", *self.listen_sockets)
                 if os.path.lexists(p)]
        for pattern in (f"/dev/shm/{pre}*", f"/dev/hugepages/{pre}*",
                        f"/dev/hugepages*/{pre}map_*"):
            found += glob.glob(pattern)
        return found

    def remove_leftovers(self) -> list[str]:
        notes = []
        for p in self.leftovers():
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                try:
                    os.unlink(p)
                except OSError as e:
                    notes.append(f"could not remove {p}: {e.strerror}")
        if self._made_bird_dir:
            try:
                os.rmdir("/tmp/trex-bird")
            except OSError:
                pass
        return notes


def _group_exists(pgid: int) -> bool:
    """A live process is in group ``pgid``. Killed members orphaned to init stay
    zombies until init reaps them, which it may do late; a zombie whose threads
    have all exited holds nothing any more."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and (fields[0] != "Z" or _threads_left(d)):
            return True
    return False


def _threads_left(pid: str) -> bool:
    """A zombie group leader whose other threads still exit (and hold its files)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except OSError:
            continue
    return False


def wait_answering(server: TrexServer | None, attempt, timeout_s: float) -> dict:
    """Call ``attempt()`` (the client's connect) until it answers, while the server
    lives; GeneratorError with TRex's own message when it dies or stays silent."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        if server is not None and not server.alive():
            raise server.died()
        try:
            return attempt()
        except GeneratorError as e:
            last = str(e)
        if time.monotonic() >= deadline:
            tail = server.log_tail() if server is not None else ""
            raise GeneratorError(f"trex: the server did not answer within {timeout_s:g} s "
                                 f"({last})" + (f"; its output ends:\n{tail}" if tail else ""))
        time.sleep(0.5)
