"""Where fwdbench finds its native programs (built by `make -C native`)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def build_dir() -> Path:
    """native/build of this checkout, or $FWDBENCH_NATIVE_BUILD."""
    env = os.environ.get("FWDBENCH_NATIVE_BUILD")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "native" / "build"


def tool(name: str) -> Path:
    """build_dir()/name; else ``name`` on $PATH; else the (missing) built path,
    so that an error names where it was expected."""
    built = build_dir() / name
    if not built.exists():
        found = shutil.which(name)
        if found:
            return Path(found)
    return built
