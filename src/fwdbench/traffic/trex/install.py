"""Finding the TRex to run: a release folder the user points at, or fwdbench's build.

A TRex install is the folder of Cisco's release package (or fwdbench's
build of the source, scripts/build-trex.sh, laid out the same way): the
server wrapper ``t-rex-64`` beside ``_t-rex-64``, and the STL Python client
under ``automation/trex_control_plane/interactive``. Looked up in this
order (the first that has an executable ``t-rex-64``):

1. the ``trex_prefix`` generator setting;
2. ``$FWDBENCH_TREX_PREFIX``;
3. ``t-rex-64`` on $PATH (its folder, links resolved);
4. fwdbench's build, ``/opt/fwdbench/trex-*`` (``$FWDBENCH_OPT``), the newest first.
"""
from __future__ import annotations

import glob
import mmap
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ...errors import GeneratorError

CLIENT_DIR = "automation/trex_control_plane/interactive"
HOW_TO_GET = ("unpack Cisco's TRex release and set [generator] trex_prefix to its folder, "
              "or put its t-rex-64 on $PATH, or build it once with "
              "`make trex TREX_SRC=<trex source tarball>` (scripts/build-trex.sh)")


def opt_dir() -> str:
    return os.environ.get("FWDBENCH_OPT", "/opt/fwdbench")


@dataclass(frozen=True)
class TrexInstall:
    """Where one TRex's pieces are (paths on the tester host)."""
    prefix: str
    server: str          # the wrapper t-rex-64 (runs from its own folder)
    client: str          # the folder holding TRex's `trex` Python package
    version: str         # from the build stamp or the folder name ("v3.08"), "" if unknown

    def has_memif(self) -> bool:
        """The server binary holds DPDK's memif PMD (``net_memif``)."""
        binary = os.path.join(self.prefix, "_t-rex-64")
        try:
            with open(binary, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"net_memif") >= 0
        except (OSError, ValueError):
            return False

    @property
    def agent_env(self) -> dict[str, str]:
        """Environment for the client: TRex's bundled libraries beside it."""
        return {"TREX_EXT_LIBS": os.path.join(self.prefix, "external_libs")}


def from_prefix(prefix: str) -> TrexInstall | None:
    server = os.path.join(prefix, "t-rex-64")
    if not (os.path.isfile(server) and os.access(server, os.X_OK)):
        return None
    client = os.path.join(prefix, CLIENT_DIR)
    return TrexInstall(prefix=os.path.abspath(prefix), server=server, client=client,
                       version=_version(prefix))


def _version(prefix: str) -> str:
    stamp = Path(prefix, ".fwdbench-build")
    if stamp.is_file():
        for line in stamp.read_text().splitlines():
            if line.startswith("version="):
                return line.split("=", 1)[1]
    m = re.search(r"v?(\d+\.\d+)", os.path.basename(os.path.normpath(prefix)))
    return f"v{m.group(1)}" if m else ""


def _opt_builds() -> list[str]:
    def key(p: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", os.path.basename(p)))
    return sorted(glob.glob(os.path.join(opt_dir(), "trex-*")), key=key, reverse=True)


def candidates() -> list[str]:
    out = []
    env = os.environ.get("FWDBENCH_TREX_PREFIX")
    if env:
        out.append(env)
    on_path = shutil.which("t-rex-64")
    if on_path:
        out.append(str(Path(on_path).resolve().parent))
    return out + [p for p in _opt_builds() if os.path.isdir(p)]


def find_trex(prefix: str | None = None) -> TrexInstall:
    """The TRex to use (see the module docstring); GeneratorError saying how to get one."""
    if prefix:
        inst = from_prefix(prefix)
        if inst is None:
            raise GeneratorError(f"trex: trex_prefix {prefix!r} has no executable t-rex-64; "
                                 f"{HOW_TO_GET}")
        return _with_client(inst)
    tried = []
    for c in candidates():
        inst = from_prefix(c)
        if inst is not None:
            return _with_client(inst)
        tried.append(c)
    raise GeneratorError("trex: no TRex found" + (f" (looked in {', '.join(tried)})"
                                                  if tried else "") + f"; {HOW_TO_GET}")


def _with_client(inst: TrexInstall) -> TrexInstall:
    if not os.path.isfile(os.path.join(inst.client, "trex", "stl", "api.py")):
        raise GeneratorError(f"trex: {inst.prefix} has no STL client under {CLIENT_DIR} "
                             "(an incomplete TRex release?)")
    return inst
