"""One running VPP: started from a startup.conf in a directory of its own, its API
and statistics segment connected, stopped and cleaned up.

``VppProcess.start(install, startup, exec)`` writes startup.conf into
``startup.run_dir``, starts ``vpp -c`` through the executor (on a DUT host
over SSH its API through the executor's socket bridge, its statistics with
vpp_get_stats there: stats_remote.py; in the lab's DUT
namespace, or on this host for the packet-generator bench), waits until the
API answers and connects the statistics segment. ``stop()`` closes both,
sends SIGTERM and, after STOP_TIMEOUT_S, SIGKILL (af_xdp TX on veth has been
seen spinning until killed), and removes VPP's shared-memory files; it
returns what went wrong, for the caller to report. ``log_tail()`` gives the
last lines of VPP's output and log for error messages.
"""
from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field

from ...errors import DutError, FwdbenchError
from .api import VppApi
from .install import VppInstall
from .startup import Startup
from .stats import VppStats

STOP_TIMEOUT_S = 10.0       # [s] after SIGTERM before SIGKILL


@dataclass
class VppProcess:
    install: VppInstall
    startup: Startup
    exec: object                        # lab.executor.Executor of the host VPP runs on
    proc: subprocess.Popen | None = None
    api: VppApi | None = None
    stats: VppStats | None = None
    version: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def out(self) -> str:
        return f"{self.startup.run_dir}/vpp.out"

    @classmethod
    def start(cls, install: VppInstall, startup: Startup, exec) -> "VppProcess":
        vp = cls(install, startup, exec)
        try:
            vp._start()
        except BaseException as e:
            tail = vp.log_tail()
            errors = vp.stop()
            if errors:
                e.add_note("(stopping it: " + "; ".join(errors) + ")")
            if isinstance(e, DutError) and tail:
                raise DutError(f"{e}\n{tail}") from None
            raise
        return vp

    def _start(self) -> None:
        st = self.startup
        conf = f"{st.run_dir}/startup.conf"
        self.exec.write_file(conf, st.render())
        self.proc = self.exec.popen_logged([self.install.vpp, "-c", conf], self.out)
        # on a remote DUT host: a socket here carried to VPP's (the executor's bridge)
        self.api = VppApi.connect(self.exec.unix_socket(st.api_socket),
                                  self.install.api_files(), alive=self.alive)
        self.version = self.api.call("show_version").version
        if self.exec.local:
            self.stats = VppStats(st.stats_socket)
        else:       # its shared memory cannot be mapped from here (stats_remote.py)
            from .stats_remote import RemoteVppStats
            self.stats = RemoteVppStats(self.exec, self.install.get_stats, st.stats_socket)
        self.stats.connect()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.alive() else None

    def stop(self) -> list[str]:
        """Stop VPP and remove its shared memory; what went wrong (empty: nothing)."""
        errors: list[str] = []
        for closer in (self.api, self.stats):
            if closer is not None:
                closer.close()
        self.api = self.stats = None
        if not self.exec.local:
            self.exec.close_socket(self.startup.api_socket)
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                errors.append(f"VPP did not stop within {STOP_TIMEOUT_S:g} s of SIGTERM: killed")
                proc.kill()
                proc.wait(5)
        self.exec.run(["find", "/dev/shm", "-maxdepth", "1", "-name",
                       f"{self.startup.shm_prefix}-*", "-delete"], check=False)
        if self.startup.dpdk is not None:       # the EAL's runtime directory
            self.exec.run(["rm", "-rf", self.startup.dpdk.run_dir], check=False)
        return errors

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of VPP's output and log, for error messages."""
        out = []
        for f in (self.out, self.startup.log):
            try:
                text = self.exec.read_file(f)
            except FwdbenchError:
                continue
            tail = [ln for ln in text.splitlines() if ln.strip()][-lines:]
            if tail:
                out.append(f"-- {f} (last {len(tail)} lines):\n" + "\n".join(tail))
        return "\n".join(out)
