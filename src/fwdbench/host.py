"""Facts about the host a campaign ran on (for the store and the report)."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_facts() -> dict:
    try:
        with open("/proc/sys/kernel/osrelease") as f:
            kernel = f.read().strip()
    except OSError:
        kernel = platform.release()
    virt = "unknown"
    try:
        flags = Path("/proc/cpuinfo").read_text()
        virt = "virtual machine" if " hypervisor" in flags else "bare metal"
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "kernel": kernel,
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "nproc": os.cpu_count(),
        "machine": platform.machine(),
        "virtualisation": virt,
        "python": platform.python_version(),
    }
