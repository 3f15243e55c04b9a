"""Helpers shared by the fwdgen tests (no tests here): native build, test namespaces."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NATIVE = REPO / "native"
BUILD = NATIVE / "build"


def build_native(*targets: str) -> None:
    """make -C native TARGETS (quietly); raises with make's output on failure."""
    proc = subprocess.run(["make", "-s", "-C", str(NATIVE), *targets],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"make -C native {' '.join(targets)} failed:\n{proc.stdout}{proc.stderr}")


def is_root() -> bool:
    return os.geteuid() == 0


def sh(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, **kw)


class FwdgenNet:
    """Namespaces fb-t<random>-<name> with veth pairs, removed by close()."""

    def __init__(self) -> None:
        self.prefix = "fb-t" + secrets.token_hex(3)
        self.namespaces: list[str] = []

    def ns(self, name: str) -> str:
        full = f"{self.prefix}-{name}"
        if full not in self.namespaces:
            sh("ip", "netns", "add", full)
            self.namespaces.append(full)
            sh("ip", "-n", full, "link", "set", "lo", "up")
        return full

    def veth(self, ns_a: str, a: str, ns_b: str, b: str, mac_a: str | None = None,
             mac_b: str | None = None) -> None:
        """A veth pair a (in ns_a) <-> b (in ns_b), both up, created inside ns_a."""
        argv = ["ip", "-n", ns_a, "link", "add", a]
        if mac_a:
            argv += ["address", mac_a]
        argv += ["type", "veth", "peer", "name", b, "netns", ns_b]
        if mac_b:
            argv += ["address", mac_b]
        sh(*argv)
        sh("ip", "-n", ns_a, "link", "set", a, "up")
        sh("ip", "-n", ns_b, "link", "set", b, "up")

    def close(self) -> None:
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        self.namespaces.clear()


@contextmanager
def fwdgen_net():
    net = FwdgenNet()
    try:
        yield net
    finally:
        net.close()


def fwdgen_argv(ns: str | None, *args: str) -> list[str]:
    """argv running fwdgen ($FWDGEN, else native/build/fwdgen) in netns ns."""
    pre = ["ip", "netns", "exec", ns] if ns else []
    return pre + [os.environ.get("FWDGEN") or str(BUILD / "fwdgen"), *args]


def run_spec(ns: str, spec: dict, timeout: float = 60.0, extra: tuple[str, ...] = ()):
    """Run fwdgen trial in ns; returns (returncode, result dict or None, stderr)."""
    proc = subprocess.run(fwdgen_argv(ns, "trial", "--spec", "-", *extra), input=json.dumps(spec),
                          capture_output=True, text=True, timeout=timeout, check=False)
    doc = json.loads(proc.stdout) if proc.returncode == 0 else None
    return proc.returncode, doc, proc.stderr


def loop_spec(load_pps: float, duration_s: float = 1.0, *, l3: str = "ipv4",
              frame_size: int | str = 64, flows: int = 16, bidir: bool = False,
              backend: str = "xdp", warmup_s: float = 0.2, **extra) -> dict:
    """Spec for a veth loop p0 <-> p1 in one namespace."""
    v6 = l3 == "ipv6"
    a = ("2001:2::100/64", "2001:2:0:1::100/64") if v6 else ("198.18.128.0/17",
                                                              "198.19.128.0/17")
    streams = [{"id": 0, "tx_port": 0, "rx_port": 1, "src": a[0], "dst": a[1]}]
    if bidir:
        streams.append({"id": 1, "tx_port": 1, "rx_port": 0, "src": a[1], "dst": a[0]})
    spec = {
        "ports": [
            {"ifname": "p0", "peer_mac": "02:fb:00:00:01:01", "backend": backend},
            {"ifname": "p1", "peer_mac": "02:fb:00:00:00:01", "backend": backend},
        ],
        "streams": streams,
        "profile": {"l3": l3, "frame_size": frame_size, "flows": flows, "vary": ["src_ip"]},
        "load_pps": load_pps,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
        "drain_s": 0.2,
        "samples": True,
    }
    spec.update(extra)
    return spec
