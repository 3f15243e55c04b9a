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

    @property
    def get_stats(self) -> str:
        """VPP's statistics dumper (bin/vpp_get_stats), for a DUT host over SSH."""
        return os.path.join(self.prefix, "bin", "vpp_get_stats")

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


def find_vpp_on(ex, prefix: str | None = None) -> VppInstall:
    """The VPP of the DUT host behind the (remote) executor ``ex``, looked up there in
    the module docstring's order; its API definitions are copied to this host
    (``ex.local_copy``), where vpp_papi reads them, so the tester needs no VPP."""
    where = f"on the DUT host {ex.conn.name}"
    if prefix:
        candidates = [prefix]
    else:
        candidates = []
        found = ex.run(["sh", "-c", 'command -v vpp || true'], check=False).stdout.strip()
        if found:
            real = ex.run(["readlink", "-f", found], check=False).stdout.strip() or found
            candidates.append(str(Path(real).parent.parent))
        opt = ex.run(["find", OPT, "-mindepth", "1", "-maxdepth", "1", "-name", "vpp-*"],
                     check=False).stdout.split()
        candidates += sorted(opt, key=lambda p: tuple(int(x) for x in re.findall(
            r"\d+", os.path.basename(p))), reverse=True)
    for c in candidates:
        if not ex.run(["test", "-x", f"{c}/bin/vpp"], check=False).returncode == 0:
            continue
        dirs = ex.run(["find", f"{c}/lib", f"{c}/lib64", "-mindepth", "1", "-maxdepth", "2",
                       "-type", "d", "-name", "vpp_plugins"], check=False).stdout.split()
        plugin_dir = sorted(dirs)[0] if dirs else ""
        plugins: tuple[str, ...] = ()
        if plugin_dir:
            names = ex.run(["find", plugin_dir, "-maxdepth", "1", "-name", "*_plugin.so"],
                           check=False).stdout.split()
            plugins = tuple(sorted(os.path.basename(n).removesuffix("_plugin.so")
                                   for n in names))
        stamp = ex.read_files([f"{c}/.fwdbench-build"])[f"{c}/.fwdbench-build"] or ""
        version = next((ln.split("=", 1)[1] for ln in stamp.splitlines()
                        if ln.startswith("version=")), "")
        api_dir = f"{c}/share/vpp/api"
        if not ex.exists(api_dir):
            raise DutError(f"vpp: {c} {where} has no API definitions in {api_dir}")
        if not ex.exists(f"{c}/bin/vpp_get_stats"):
            raise DutError(f"vpp: {c} {where} has no bin/vpp_get_stats, which reads VPP's "
                           f"counters there (FD.io's vpp package ships it)")
        return VppInstall(prefix=c, vpp=f"{c}/bin/vpp", vppctl=f"{c}/bin/vppctl",
                          plugin_dir=plugin_dir, api_dir=ex.local_copy(api_dir),
                          version=version, plugins=plugins)
    raise DutError(f"vpp: no VPP found {where}" + (f" (looked in {', '.join(candidates)})"
                                                   if candidates else "") + f"; {HOW_TO_GET}")
