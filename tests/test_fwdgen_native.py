"""fwdgen's native building blocks checked from Python: frames decoded by scapy,
histograms decoded by the `hdrhistogram` package, the CLI's help and input errors.
No root needed."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from test_fwdgen_helpers import BUILD, build_native, fwdgen_argv

scapy_all = pytest.importorskip("scapy.all")
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

MAGIC_HI = 0x6667


@pytest.fixture(scope="module", autouse=True)
def built():
    build_native("all", "build/test_common")


def frames() -> dict[str, list[tuple[int, bytes]]]:
    out = subprocess.run([str(BUILD / "test_common"), "frames"], capture_output=True, text=True,
                         check=True).stdout
    res: dict[str, list[tuple[int, bytes]]] = {}
    for line in out.splitlines():
        name, seq, hx = line.split()
        res.setdefault(name, []).append((int(seq), bytes.fromhex(hx)))
    return res


def _check_common(pkt, raw: bytes, seq: int, size: int) -> None:
    assert len(raw) == size - 4            # sizes include the FCS
    assert pkt[Ether].src == "02:fb:00:00:00:01"
    assert pkt[Ether].dst == "02:fb:00:00:01:01"
    udp = pkt[UDP]
    payload = bytes(udp.payload)
    assert int.from_bytes(payload[0:4], "big") >> 16 == MAGIC_HI
    assert payload[4] == 3 and payload[5] == 2          # stream 3, measured phase
    assert int.from_bytes(payload[8:12], "big") == seq
    assert int.from_bytes(payload[12:16], "big") == 1000000 + seq
    assert set(payload[16:]) <= {0}                    # padding is zero
    assert udp.len == len(payload) + 8


def _recomputed(pkt, layer):
    """scapy's own checksum for the packet (delete and rebuild)."""
    clone = pkt.copy()
    del clone[layer].chksum
    if layer is UDP and IP in clone:
        del clone[IP].chksum
    return clone.__class__(bytes(clone))


def test_ipv4_frames_decode_with_valid_checksums():
    fr = frames()
    for name, size in (("v4_64", 64), ("v4_1518", 1518)):
        for seq, raw in fr[name]:
            pkt = Ether(raw)
            assert IP in pkt and pkt[IP].proto == 17 and pkt[IP].ttl == 64
            assert pkt[IP].len == len(raw) - 14
            _check_common(pkt, raw, seq, size)
            rebuilt = _recomputed(pkt, UDP)
            assert pkt[IP].chksum == rebuilt[IP].chksum
            assert pkt[UDP].chksum == rebuilt[UDP].chksum
            flow = seq % 10
            assert pkt[IP].src == f"198.18.128.{flow}"
            expect_dst = f"198.19.128.{flow}" if name == "v4_1518" else "198.19.128.0"
            assert pkt[IP].dst == expect_dst


def test_ipv6_frames_decode_with_valid_checksums():
    fr = frames()
    for name, size in (("v6_82", 82), ("v6_1518", 1518)):
        for seq, raw in fr[name]:
            pkt = Ether(raw)
            assert IPv6 in pkt and pkt[IPv6].nh == 17 and pkt[IPv6].hlim == 64
            assert pkt[IPv6].plen == len(raw) - 54
            _check_common(pkt, raw, seq, size)
            rebuilt = _recomputed(pkt, UDP)
            assert pkt[UDP].chksum == rebuilt[UDP].chksum != 0
            flow = seq % 10
            if name == "v6_82":
                assert pkt[IPv6].src == f"2001:2::{0x100 + flow:x}"
            else:
                assert pkt[IPv6].dst == f"2001:2:0:1::{0x100 + flow:x}"
                assert 1024 <= pkt[UDP].dport <= 65535


def test_imix_frames_follow_7_4_1():
    fr = frames()
    sizes4 = [len(raw) + 4 for _, raw in fr["v4_imix"]]
    assert sorted(sizes4) == sorted([64] * 7 + [570] * 4 + [1518])
    sizes6 = [len(raw) + 4 for _, raw in fr["v6_imix"]]
    assert sorted(sizes6) == sorted([82] * 7 + [570] * 4 + [1518])
    for seq, raw in fr["v4_imix"]:
        pkt = Ether(raw)
        assert pkt[IP].len == len(raw) - 14
        rebuilt = _recomputed(pkt, UDP)
        assert pkt[UDP].chksum == rebuilt[UDP].chksum
    # RFC 4814 pseudorandom source ports: distinct per flow, not sequential
    ports = [Ether(raw)[UDP].sport for _, raw in fr["v4_imix"][:10]]
    assert len(set(ports)) == 10 and ports != sorted(ports)


@pytest.mark.parametrize("samples", [
    [(1000, 1)],
    [(5000, 900), (9000, 90), (20000, 9), (1_000_000, 1)],
    [(v, 1) for v in range(1, 3000, 7)],
    [(4_000_000_000, 3), (1, 5)],
])
def test_hdr_encoding_round_trip(samples):
    hdrh = pytest.importorskip("hdrh.histogram")
    args = [f"{v}:{n}" for v, n in samples]
    out = subprocess.run([str(BUILD / "test_common"), "hdr", *args], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    enc, pct = out[0], [int(x) for x in out[1].split()]
    assert enc.startswith("HISTF")
    h = hdrh.HdrHistogram.decode(enc)
    assert h.get_total_count() == sum(n for _, n in samples)
    ref = hdrh.HdrHistogram(1, 2**32 - 1, 3)
    for v, n in samples:
        ref.record_value(v, n)
    for p, mine in zip((50, 90, 99, 99.9, 100), pct):
        assert h.get_value_at_percentile(p) == ref.get_value_at_percentile(p) == mine
    assert h.get_max_value() == ref.get_max_value()
    assert h.get_min_value() == ref.get_min_value()


def test_help_documents_every_option():
    out = subprocess.run(fwdgen_argv(None, "--help"), capture_output=True, text=True,
                         check=True).stdout
    for opt in ("--spec", "--backend", "--load-pps", "--duration", "--warmup", "--pretty",
                "--in", "--out", "--drop-every", "--version", "trial", "check", "xdp-path",
                "xdp", "afxdp", "afpacket", "auto", "--drop-all"):
        assert opt in out, opt
    sub = subprocess.run(fwdgen_argv(None, "trial", "--help"), capture_output=True, text=True,
                         check=True).stdout
    assert "--spec FILE|-" in sub
    # every key the spec parser accepts (its `keys[]` tables) is named in the help
    src = (Path(__file__).resolve().parents[1] / "native" / "fwdgen" / "spec.c").read_text()
    tables = re.findall(r"keys\[\] = \{(.*?)NULL\}", src, re.S)
    keys = {k for t in tables for k in re.findall(r'"(\w+)"', t)}
    assert len(keys) > 25 and "burst_period_us" in keys
    missing = sorted(k for k in keys if not re.search(rf"\b{k}\b", sub))
    assert not missing, f"spec keys missing from `fwdgen trial --help`: {missing}"


@pytest.mark.parametrize("mutate,field", [
    (lambda s: s["profile"].update(frame_size=40), "spec.profile.frame_size: 40 is below 64"),
    (lambda s: s.update(load_pps=-5), "spec.load_pps"),
    (lambda s: s["streams"][0].update(rx_port=7), "spec.streams[0].rx_port"),
    (lambda s: s["ports"][0].update(ifname="nosuchif0"), "spec.ports[0].ifname"),
    (lambda s: s.update(extra=1), "spec.extra: unknown field"),
    (lambda s: s.update(pacer="tsc"), 'spec.pacer: "tsc" is not auto, kernel or user'),
])
def test_bad_spec_exits_2_naming_the_field(mutate, field):
    spec = {
        "ports": [{"ifname": "lo", "peer_mac": "02:fb:00:00:01:01"}, {"ifname": "lo"}],
        "streams": [{"id": 0, "tx_port": 0, "rx_port": 1, "src": "198.18.0.1",
                     "dst": "198.19.0.1"}],
        "profile": {"frame_size": 64},
        "load_pps": 1000, "duration_s": 1,
    }
    mutate(spec)
    proc = subprocess.run(fwdgen_argv(None, "trial", "--spec", "-"), input=json.dumps(spec),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert field in proc.stderr
    assert proc.stderr.startswith("fwdgen: ")
    assert proc.stdout == ""
