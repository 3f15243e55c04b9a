"""fwdbench's native programs on the DUT host: copied there, versioned, checked.

The programs DUTs run on the DUT host (``fb-xdp`` with the BPF object
``xdp_fwd.bpf.o`` beside it, ``vfwd``) are built on the tester (`make -C
native`) and copied over the run's SSH connection, all of them whatever the
campaign's DUTs (about 1 MB), into ``<workdir>/tools/<version>/``, where
``version`` is the first 16 hex digits of a SHA-256 over the files' names
and SHA-256s: one directory per build of fwdbench. A directory already there is
reused after ``sha256sum -c`` confirms it; a new one is uploaded under a
temporary name, checked the same way and renamed into place, so a half
copied directory is never used. The binaries are dynamically linked: the DUT
host needs the libraries they were built against (libbpf, libxdp, libjansson
of the same Debian release); each driver's check() runs them there before
the first trial and says so when they do not start.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import native
from ..errors import LabError

#: what each DUT type runs on the DUT host (the object sits beside its loader)
TOOLS_FOR_DUT: dict[str, tuple[str, ...]] = {
    "xdp": ("fb-xdp", "xdp_fwd.bpf.o"),
    "vfwd": ("vfwd",),
}
#: environment variables that point a program at another build (as on the netns lab)
TOOL_ENV = {"vfwd": "FWDBENCH_VFWD"}


def local_path(name: str) -> Path:
    """Where the tester has ``name`` (native/build, $PATH, or the override)."""
    env = os.environ.get(TOOL_ENV.get(name, ""), "")
    if env:
        return Path(env)
    if name == "xdp_fwd.bpf.o":
        return native.tool("fb-xdp").parent / name
    return native.tool(name)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class Deployment:
    """The programs on the DUT host: name -> remote path, in ``directory``."""
    directory: str = ""
    version: str = ""
    paths: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    uploaded: bool = False          # False: an earlier run's copy was reused
    missing_locally: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict:
        return {"directory": self.directory, "version": self.version,
                "files": dict(self.sha256), "uploaded": self.uploaded,
                **({"not_built_on_tester": dict(self.missing_locally)}
                   if self.missing_locally else {})}


#: every program copied
ALL_TOOLS = tuple(sorted({n for names in TOOLS_FOR_DUT.values() for n in names}))


def needed(dut_types: set[str]) -> list[str]:
    """The programs DUTs of these types run on the DUT host."""
    return sorted({n for t in dut_types for n in TOOLS_FOR_DUT.get(t, ())})


def deploy(ex, workdir: str, names: tuple[str, ...] | list[str] = ALL_TOOLS) -> Deployment:
    """Copy ``names`` to ``<workdir>/tools/<version>/`` on ``ex``'s host (or reuse
    the checked copy there); a program not built here is left out (its driver's
    check() then names it)."""
    dep = Deployment()
    files: dict[str, Path] = {}
    for n in names:
        p = local_path(n)
        if p.is_file():
            files[n] = p
        else:
            dep.missing_locally[n] = str(p)
    if not files:
        return dep
    dep.sha256 = {n: sha256_file(p) for n, p in sorted(files.items())}
    manifest = "".join(f"{h}  {n}\n" for n, h in dep.sha256.items())
    dep.version = hashlib.sha256(manifest.encode()).hexdigest()[:16]
    base = f"{workdir}/tools"
    dep.directory = f"{base}/{dep.version}"
    dep.paths = {n: f"{dep.directory}/{n}" for n in files}
    if _verified(ex, dep.directory):
        return dep
    ex.run(["mkdir", "-p", "-m", "0755", base])
    tmp = ex.run(["mktemp", "-d", "-p", base, ".upload-XXXXXX"]).stdout.strip()
    try:
        for n, p in files.items():
            ex.run(["sh", "-c", 'cat > "$1" && chmod 0755 "$1"', "sh", f"{tmp}/{n}"],
                   input=p.read_bytes(), timeout=120)
        ex.write_file(f"{tmp}/SHA256SUMS", manifest)
        ex.run(["chmod", "0755", tmp])
        if not _verified(ex, tmp):
            raise LabError(f"copying fwdbench's programs to {ex.conn.name}:{tmp}: their "
                           f"SHA-256 did not match after the copy")
        ex.run(["rm", "-rf", "--", dep.directory])    # a stale, unverified one
        ex.run(["mv", "-T", "--", tmp, dep.directory])
    except BaseException:
        ex.run(["rm", "-rf", "--", tmp], check=False)
        raise
    dep.uploaded = True
    return dep


def _verified(ex, directory: str) -> bool:
    cp = ex.run(["sh", "-c", 'cd "$1" && sha256sum --quiet -c SHA256SUMS', "sh", directory],
                check=False)
    return cp.returncode == 0
