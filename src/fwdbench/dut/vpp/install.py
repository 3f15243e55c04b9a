"""Finding the VPP to run: FD.io's packages, a prefix, or fwdbench's own build.

Looked up in this order (the first that has a ``bin/vpp``):

1. the ``vpp_prefix`` DUT parameter (a directory holding bin/vpp, e.g. a
   ``make install`` prefix or fwdbench's build, /opt/fwdbench/vpp-26.06);
2. ``$FWDBENCH_VPP_PREFIX``;
3. FD.io's packages: ``vpp`` on $PATH (Debian/Ubuntu: /usr/bin/vpp, plugins in
   /usr/lib/<arch>/vpp_plugins, API definitions in /usr/share/vpp/api);
4. fwdbench's own build from the release source (scripts/build-vpp.sh),
   ``/opt/fwdbench/vpp-*`` (``$FWDBENCH_OPT``), the newest version first.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import DutError

OPT = os.environ.get("FWDBENCH_OPT", "/opt/fwdbench")
HOW_TO_GET = ("install FD.io's vpp and vpp-plugin-core packages, or let fwdbench build it "
              "once: `make demo VPP_SRC=<VPP release tarball>` (scripts/build-vpp.sh), or "
              "point the DUT param vpp_prefix at an install")


@dataclass(frozen=True)
class VppInstall:
    """Where one VPP's pieces are (paths on the DUT host)."""
    prefix: str
    vpp: str                  # the binary
    vppctl: str
    plugin_dir: str
    api_dir: str              # holds core/*.api.json and plugins/*.api.json
    version: str              # from the build stamp or the package, "" if unknown
    plugins: tuple[str, ...] = field(default=())   # names, e.g. "af_xdp"

    def api_files(self) -> list[str]:
        return sorted(glob.glob(os.path.join(self.api_dir, "**", "*.api.json"), recursive=True))

    def has_plugin(self, name: str) -> bool:
        return name in self.plugins


def _multiarch_dirs(prefix: str) -> list[str]:
    return sorted(glob.glob(os.path.join(prefix, "lib", "*-linux-gnu"))) + [
        os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")]


def _from_prefix(prefix: str) -> VppInstall | None:
    vpp = os.path.join(prefix, "bin", "vpp")
    if not os.access(vpp, os.X_OK):
        return None
    plugin_dir = next((os.path.join(d, "vpp_plugins") for d in _multiarch_dirs(prefix)
                       if os.path.isdir(os.path.join(d, "vpp_plugins"))), "")
    api_dir = os.path.join(prefix, "share", "vpp", "api")
    return VppInstall(prefix=prefix, vpp=vpp, vppctl=os.path.join(prefix, "bin", "vppctl"),
                      plugin_dir=plugin_dir, api_dir=api_dir, version=_version(prefix),
                      plugins=_plugins(plugin_dir))


def _plugins(plugin_dir: str) -> tuple[str, ...]:
    if not plugin_dir:
        return ()
    return tuple(sorted(p.removesuffix("_plugin.so") for p in os.listdir(plugin_dir)
                        if p.endswith("_plugin.so")))


def _version(prefix: str) -> str:
    stamp = Path(prefix, ".fwdbench-build")
    if stamp.is_file():
        for line in stamp.read_text().splitlines():
            if line.startswith("version="):
                return line.split("=", 1)[1]
    info = glob.glob("/usr/share/doc/vpp/changelog*") if prefix == "/usr" else []
    return "package" if info else ""


def _opt_builds() -> list[str]:
    def key(p: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", os.path.basename(p)))
    return sorted(glob.glob(os.path.join(OPT, "vpp-*")), key=key, reverse=True)


def find_vpp(prefix: str | None = None) -> VppInstall:
    """The VPP to use (see the module docstring); DutError saying how to get one."""
    if prefix:
        inst = _from_prefix(prefix)
        if inst is None:
            raise DutError(f"vpp: vpp_prefix {prefix!r} has no executable bin/vpp; "
                           f"{HOW_TO_GET}")
        return inst
    tried = []
    env = os.environ.get("FWDBENCH_VPP_PREFIX")
    candidates = [env] if env else []
    on_path = shutil.which("vpp")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent.parent))
    candidates += _opt_builds()
    for c in candidates:
        inst = _from_prefix(c)
        if inst is not None:
            return inst
        tried.append(c)
    raise DutError("vpp: no VPP found" + (f" (looked in {', '.join(tried)})" if tried else "")
                   + f"; {HOW_TO_GET}")
