"""fwdbench's side of the agent (agent.py): start it, ask it, stop it.

The agent runs on the tester host through the tester's executor (in the
lab: the generator's namespace), with the Python the ``python`` setting
names (default: the interpreter running fwdbench, whose standard library
TRex's bundled client needs; Debian's /usr/bin/python3 works as well). A
request that gets no answer within its deadline (a stalled server, a
client stuck in a call) ends the agent: the trial fails with that reason.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import time
from typing import Any

from ...errors import GeneratorError
from .install import TrexInstall

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py")


class AgentClient:
    def __init__(self, tester, install: TrexInstall, python: str):
        self.tester = tester
        self.install = install
        self.python = python
        self.proc: subprocess.Popen | None = None
        self.err_path: str | None = None
        self.info: dict[str, Any] = {}

    def start(self, workdir: str, timeout_s: float = 60.0) -> dict[str, Any]:
        self.err_path = os.path.join(workdir, "agent.err")
        env = {**os.environ, **self.install.agent_env}
        with open(self.err_path, "w") as err:
            self.proc = self.tester.exec.popen(
                [self.python, AGENT, self.install.client], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=env, text=True, bufsize=1)
        self.info = self._read(timeout_s, "start")
        return self.info

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def err_tail(self, lines: int = 8) -> str:
        if not self.err_path:
            return ""
        try:
            with open(self.err_path, errors="replace") as f:
                keep = [ln.rstrip() for ln in f if ln.strip()]
        except OSError:
            return ""
        return "\n".join(keep[-lines:])

    def _read(self, timeout_s: float, what: str) -> dict[str, Any]:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise GeneratorError(f"trex: no answer to {what} within {timeout_s:g} s "
                                     "(the server or its client stalled); stopped the client")
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
            if ready:
                line = proc.stdout.readline()
                if line:
                    break
            if proc.poll() is not None:
                tail = self.err_tail()
                raise GeneratorError(f"trex: the client process ended (code {proc.returncode}) "
                                     f"during {what}" + (f":\n{tail}" if tail else ""))
        try:
            ans = json.loads(line)
        except json.JSONDecodeError:
            raise GeneratorError(f"trex: the client answered {line[:200]!r} to {what}") from None
        if not ans.get("ok"):
            raise GeneratorError(f"trex: {what} failed: {ans.get('error', ans)}")
        return ans

    def call(self, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any]:
        if not self.alive():
            raise GeneratorError(f"trex: the client process is not running ({cmd})")
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise GeneratorError(f"trex: cannot reach the client process: {e}") from None
        return self._read(timeout_s, cmd)

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (proc.stdin, proc.stdout):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass

    def close(self) -> None:
        if self.alive():
            try:
                self.call("close", timeout_s=10)
            except GeneratorError:
                pass
        self.kill()
