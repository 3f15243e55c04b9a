"""fwdgen's memif backend, its drop sink and vfwd's memif ports, with real
frames through real processes (memif needs no namespace and no root: a UNIX
socket in a private directory and shared memory).

fwdgen <-> fwdgen (a master and a slave port in one trial), fwdgen <-> vfwd
(xconnect, ip4 router; vfwd the zero-copy slave, or the copying master),
fwdgen -> sink: exact counting, induced loss, latency, IMIX and chained
jumbo frames; the errors (socket in use, no peer, refused memory, a peer
killed mid-trial); and nothing left behind (socket files, processes,
/dev/shm files, vfwd's fds and mappings across reconnections).

Loads are modest (20-100 kpps) and the generator and vfwd sit on
different CPUs where there are two: this host's other work can take a CPU
for milliseconds, and memif, like a wire, loses what a full ring cannot
take. A trial that lost frames to a full ring (the result's warning says
so), fell behind its schedule, or lost frames where none may be lost is run
again, at most twice. Every run must account for every frame (received, or
lost where it was counted: fwdgen's full-ring warning, vfwd's drops); exact
counts are asserted on an undisturbed run (three disturbed runs in a row: a
warning says the exact counts were not asserted)."""
from __future__ import annotations

import json
import os
import signal
import warnings
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from fwdbench.traffic.fwdgen import parse_result
from test_fwdgen_helpers import BUILD, build_native

FWDGEN = BUILD / "fwdgen"
VFWD = BUILD / "vfwd"
TWO_CPUS = (os.cpu_count() or 1) >= 2
GEN_CPU, DUT_CPU = (0, 1) if TWO_CPUS else (0, 0)
V4 = ("198.18.128.0/17", "198.19.128.0/17")
RX_MODE = os.environ.get("MEMIF_TEST_RX_MODE", "interrupt")


@pytest.fixture(scope="module", autouse=True)
def built():
    build_native("all")
    info = json.loads(subprocess.run([str(FWDGEN), "check"], capture_output=True, text=True,
                                     check=False).stdout)
    if not info["memif"]:
        # the VPP source tarball was missing at build time: say why, loudly
        pytest.skip(f"fwdgen has no memif: {info['errors']['memif']}")
    return info


@pytest.fixture
def sockdir(tmp_path):
    """A private directory for the sockets; it must be empty at the end."""
    d = tmp_path / "s"
    d.mkdir()
    shm = set(os.listdir("/dev/shm"))
    yield d
    assert sorted(p.name for p in d.iterdir()) == [], "socket files left behind"
    # memif memory is memfd (no file); other work on this host may come and go there
    ours = [n for n in set(os.listdir("/dev/shm")) - shm
            if any(w in n.lower() for w in ("memif", "fwdgen", "vfwd"))]
    assert ours == [], "/dev/shm files left behind"


def port(name: str, sock: Path, *, peer_mac: str = "02:fb:76:66:00:01", **memif) -> dict:
    return {"ifname": name, "peer_mac": peer_mac,
            "memif": {"socket": str(sock), "connect_timeout_s": 5, **memif}}


def spec_for(ports: list[dict], load, duration: float = 1.0, *, bidir: bool = False,
             frame_size: int | str = 64, l3: str = "ipv4", flows: int = 16,
             streams: list[dict] | None = None, **extra) -> dict:
    a = ("2001:2::100/64", "2001:2:0:1::100/64") if l3 == "ipv6" else V4
    if streams is None:
        streams = [{"id": 0, "tx_port": 0, "rx_port": 1, "src": a[0], "dst": a[1]}]
        if bidir:
            streams.append({"id": 1, "tx_port": 1, "rx_port": 0, "src": a[1], "dst": a[0]})
    spec = {"ports": ports, "streams": streams,
            "profile": {"l3": l3, "frame_size": frame_size, "flows": flows},
            "load_pps": load, "duration_s": duration, "warmup_s": 0.2, "drain_s": 0.2,
            "latency": {"enabled": True, "rate_pps": 2000},
            "cpus": {"tx": [GEN_CPU], "rx": [GEN_CPU]}}
    spec.update(extra)
    return spec


def fwdgen(spec: dict, *, binary: Path = FWDGEN, timeout: float = 60, env=None,
           pre: tuple[str, ...] = ()) -> tuple[int, dict | None, str]:
    proc = subprocess.run([*pre, str(binary), "trial", "--spec", "-"], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=timeout, env=env, check=False)
    doc = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout else None
    return proc.returncode, doc, proc.stderr


def ring_full(doc: dict) -> bool:
    return any("RX ring full" in w for w in doc["warnings"])


def disturbed(doc: dict, exact: bool) -> bool:
    """This host's other work shows: a full ring lost frames, the generator
    fell behind, or (where none may be lost) frames were lost."""
    return ring_full(doc) or any(s["tx_limited"] or (exact and s["lost"])
                                 for s in doc["streams"])


def trial(spec: dict, **kw) -> tuple[dict, bool]:
    """A trial between fwdgen's own ports: every frame sent arrives or was
    refused by a full ring (the warning's count), on every run. Run again
    (twice at most) while disturbed; returns the last result and whether it
    was disturbed (then exact counts are not asserted, the accounting is)."""
    for _ in range(3):
        rc, doc, err = fwdgen(spec, **kw)
        assert rc == 0, err
        tx, rx = sent_and_received(doc)
        assert rx + full_drops(doc) == tx, (tx, rx, doc["warnings"])
        if not disturbed(doc, exact=True):
            return doc, False
    shaken_warning(doc)
    return doc, True


def shaken_warning(doc: dict) -> None:
    warnings.warn(f"memif trial disturbed 3 times by this host's other work: exact counts "
                  f"not asserted, the accounting was ({doc['warnings']})")


def full_drops(doc: dict) -> int:
    """Measured frames fwdgen found a full ring for (its warnings)."""
    return sum(int(w.split()[1]) for w in doc["warnings"] if "RX ring full" in w)


def sent_and_received(doc: dict) -> tuple[int, int]:
    """Frames sent and received, load and latency streams."""
    tx = rx = 0
    for s in doc["streams"]:
        tx += s["tx_packets"]
        rx += s["rx_packets"]
        if s["latency_stream"]:
            tx += s["latency_stream"]["tx_packets"]
            rx += s["latency_stream"]["rx_packets"]
    return tx, rx


def dut_trial(v: "Vfwd", spec: dict, exact: bool = True, **kw) -> tuple[dict, bool]:
    """A trial through vfwd (no warm-up: vfwd's counters then cover exactly
    the measured frames). Every frame is accounted for on every run, received
    or lost where it was counted: a full ring at fwdgen (its warning), vfwd's
    TX drops, vfwd's drop nodes. Run again (twice at most) while this host's
    other work disturbs it; returns the last result and whether it was
    disturbed (then its exact counts are not asserted, the accounting is)."""
    spec = dict(spec, warmup_s=0)
    for _ in range(3):
        before = v.dropped()
        rc, doc, err = fwdgen(spec, **kw)
        assert rc == 0, err     # (a sanitizer's report ends the process non-zero)
        dropped = v.dropped() - before
        tx, rx = sent_and_received(doc)
        assert rx + full_drops(doc) + dropped == tx, (tx, rx, full_drops(doc), dropped,
                                                      doc["warnings"])
        if not disturbed(doc, exact):
            return doc, False
    shaken_warning(doc)
    return doc, True


def assert_exact(s: dict, latency: bool = True) -> None:
    assert s["tx_packets"] == s["intended_packets"], s
    assert s["rx_packets"] == s["tx_packets"], s
    assert s["rx_bytes"] == s["tx_bytes"], s
    assert s["lost"] == 0 and s["reordered"] == 0 and s["duplicated"] == 0, s
    assert s["tx_backend"] == "memif" and s["rx_backend"] == "memif"
    if latency:
        assert s["latency"]["samples"] == s["rx_packets"]
        assert 0 < s["latency"]["min_ns"] <= s["latency"]["p50_ns"] <= s["latency"]["max_ns"]
        ls = s["latency_stream"]
        assert ls["rx_packets"] == ls["tx_packets"] == ls["intended_packets"] > 0, ls
        assert ls["latency"]["samples"] == ls["rx_packets"]


# ---- fwdgen <-> fwdgen -----------------------------------------------------

def loop_ports(sockdir: Path, **memif) -> list[dict]:
    """Port 0 the master, port 1 the slave of the same socket: a memif loop."""
    sock = sockdir / "loop.sock"
    return [port("m0", sock, peer_mac="02:fb:6d:00:00:02"),
            port("m1", sock, peer_mac="02:fb:6d:00:00:01", role="slave", **memif)]


@pytest.mark.parametrize("frame_size,l3", [(64, "ipv4"), (1518, "ipv4"), ("imix", "ipv4"),
                                            (82, "ipv6"), ("imix", "ipv6")])
def test_loop_counts_exactly(sockdir, frame_size, l3):
    doc, shaken = trial(spec_for(loop_ports(sockdir), 50_000, frame_size=frame_size, l3=l3,
                                 bidir=True))
    assert doc["backends"] == {"m0": "memif", "m1": "memif"}
    if shaken:
        return
    for s in doc["streams"]:
        assert_exact(s)
    small = 60 if l3 == "ipv4" else 78
    size = {64: 60, 82: 78, 1518: 1514}.get(frame_size)
    if size:
        assert doc["streams"][0]["tx_bytes"] == size * 50_000
    else:   # IMIX: 7:4:1 of small/570/1518 (with FCS), 12 frames a cycle
        per_cycle = 7 * small + 4 * 566 + 1514
        s = doc["streams"][0]
        assert abs(s["tx_bytes"] - per_cycle * 50_000 / 12) < 1514


def test_jumbo_frames_come_chained_through_small_buffers(sockdir):
    """9000 B frames through the slave's 2048 B buffers: chains of 5, counted
    whole (bytes exact), and said so; with 9216 B buffers, one buffer each."""
    doc, shaken = trial(spec_for(loop_ports(sockdir), 10_000, frame_size=9000, latency=None))
    s = doc["streams"][0]
    assert s["rx_packets"] > 0 and s["rx_bytes"] == 8996 * s["rx_packets"]   # whole frames
    assert any("more than one buffer" in w for w in doc["warnings"]), doc["warnings"]
    if not shaken:
        assert_exact(s, latency=False)
    doc, shaken = trial(spec_for(loop_ports(sockdir, buffer_size=9216), 10_000,
                                 frame_size=9000, latency=None))
    s = doc["streams"][0]
    assert s["rx_bytes"] == 8996 * s["rx_packets"]
    assert not any("more than one buffer" in w for w in doc["warnings"])
    if not shaken:
        assert_exact(s, latency=False)


def test_the_result_says_each_ports_ring_size_from_the_connection(sockdir):
    """The slave's ring_size makes the rings; the master learns it in the
    handshake: both ends report what the connection has, not what was asked."""
    for ring in (256, 4096):
        doc, _shaken = trial(spec_for(loop_ports(sockdir, ring_size=ring), 5_000,
                                      latency=None))
        assert doc["memif"] == {"m0": {"rx_ring": ring, "tx_ring": ring},
                                "m1": {"rx_ring": ring, "tx_ring": ring}}, doc["memif"]


def test_python_wrapper_parses_a_memif_result(sockdir):
    spec = spec_for(loop_ports(sockdir), 20_000)
    doc, shaken = trial(spec)
    r = parse_result(doc, spec)
    assert r.backend == "fwdgen-memif"
    assert r.streams[0].rx_packets == doc["streams"][0]["rx_packets"] > 0
    assert r.streams[0].latency is not None
    assert r.streams[0].latency.samples == r.streams[0].rx_packets
    if not shaken:
        assert r.streams[0].rx_packets == r.streams[0].tx_packets == 20_000


# ---- fwdgen -> sink -------------------------------------------------------

@contextmanager
def sink(sock: Path, *args: str):
    p = subprocess.Popen([str(FWDGEN), "sink", "--memif", str(sock), "--cpu", str(DUT_CPU),
                          *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def test_sink_counts_what_fwdgen_sent(sockdir):
    sock = sockdir / "sink.sock"
    spec = spec_for([port("g0", sock)], 100_000, latency=None,
                    streams=[{"id": 0, "tx_port": 0, "rx_port": None, "src": V4[0],
                              "dst": V4[1]}])
    for _ in range(3):          # (disturbed: see the module's docstring)
        with sink(sock) as p:
            rc, doc, err = fwdgen(spec)
            out, serr = p.communicate(timeout=30)
        assert rc == 0, err
        if not disturbed(doc, exact=False):
            break
    lines = out.splitlines()
    assert json.loads(lines[0]) == {"event": "up", "connects": 1}
    end = json.loads(lines[-1])
    assert p.returncode == 0, serr
    assert end["ended"] == "peer"               # it stops when fwdgen goes
    s = doc["streams"][0]
    assert s["rx_backend"] == "none"
    # every frame sent is counted by the sink or was refused by its full ring
    assert end["measured_frames"] + full_drops(doc) == s["tx_packets"]
    if not disturbed(doc, exact=False):
        assert end["measured_frames"] == s["tx_packets"] == 100_000
    assert end["streams"] == [{"stream": 0, "measured": end["measured_frames"]}]
    # every frame is signed: warm-up and measured phase
    assert end["signed_frames"] == end["frames"] >= end["measured_frames"]
    assert end["bytes"] == 60 * end["frames"]
    assert 0 < end["busy_s"] <= end["cpu_s"] <= end["connected_s"] + 0.01
    assert end["cpu_wait_s"] >= 0


def test_sink_times_out_saying_where_it_looked(sockdir):
    p = subprocess.run([str(FWDGEN), "sink", "--memif", str(sockdir / "none.sock"),
                        "--connect-timeout", "0.2"], capture_output=True, text=True,
                       timeout=30, check=False)
    assert p.returncode == 3
    assert "no master answered within 0.2 s" in p.stderr
    assert "no socket file at" in p.stderr and "none.sock" in p.stderr


def test_sink_bad_options(sockdir):
    for args, words in ((["--ring-size", "1000"], "not a power of two"),
                        (["--role", "client"], "is not master or slave"),
                        ([], "--memif SOCKET is required")):
        argv = [str(FWDGEN), "sink", *(["--memif", str(sockdir / "x.sock")] if args else []),
                *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        assert p.returncode == 2 and words in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1


# ---- fwdgen <-> vfwd ------------------------------------------------------

class Vfwd:
    def __init__(self, proc: subprocess.Popen, ctl: Path):
        self.proc, self.ctl = proc, ctl

    def stats(self) -> dict:
        import socket
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.ctl))
            s.sendall(b"stats\n")
            buf = b""
            while chunk := s.recv(65536):
                buf += chunk
        return json.loads(buf)

    def dropped(self) -> int:
        """Frames vfwd dropped: TX (full ring, cap) and drop nodes, cumulative."""
        st = self.stats()
        return st["drops_total"] + sum(p["tx_dropped"] + p["kernel_rx_dropped"]
                                       for p in st["ports"])

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def memfd_maps(self) -> int:
        return Path(f"/proc/{self.proc.pid}/maps").read_text().count("memfd:")


@contextmanager
def vfwd(sockdir: Path, body: str, *, binary: Path = VFWD, env=None):
    conf = sockdir.parent / "vfwd.conf"
    ctl = sockdir.parent / "vfwd.ctl"
    conf.write_text(f"cpus {DUT_CPU}\nrx-mode {RX_MODE}\nring-size 4096\n" + body)
    p = subprocess.Popen([str(binary), "-c", str(conf), "-s", str(ctl), "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ready = json.loads(p.stdout.readline())
        assert ready["event"] == "ready", ready
        assert [x["driver"] for x in ready["ports"]][:2] == ["memif", "memif"]
        yield Vfwd(p, ctl)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        assert "Sanitizer" not in err and "runtime error" not in err, err


def dut_ports(sockdir: Path) -> list[dict]:
    return [port("g0", sockdir / "d0.sock", peer_mac="02:fb:76:66:00:01"),
            port("g1", sockdir / "d1.sock", peer_mac="02:fb:76:66:00:02")]


XCONNECT = ("mode xconnect\nport 0 d0 driver memif socket {s}/d0.sock\n"
            "port 1 d1 driver memif socket {s}/d1.sock\nxconnect 0 1\nxconnect 1 0\n")
ROUTER = ("mode router\n"
          "port 0 d0 driver memif socket {s}/d0.sock ip4 198.18.0.2\n"
          "port 1 d1 driver memif socket {s}/d1.sock ip4 198.19.0.2\n"
          "neighbor 198.18.0.1 02:fb:6d:00:00:01 port 0\n"
          "neighbor 198.19.0.1 02:fb:6d:00:00:02 port 1\n"
          "route 198.19.128.0/18 via 198.19.0.1\n"      # half of 198.19.128.0/17: no route
          "route 198.18.128.0/17 via 198.18.0.1\n")


def test_vfwd_xconnect_zero_copy_counts_exactly_and_leaks_nothing(sockdir):
    with vfwd(sockdir, XCONNECT.format(s=sockdir)) as v:
        fds = maps = None
        for k in range(3):       # a connection per trial: nothing grows
            doc, shaken = dut_trial(v, spec_for(dut_ports(sockdir), 40_000, bidir=True))
            for s in doc["streams"]:
                if not shaken:
                    assert_exact(s)
            st = v.stats()
            if k == 0:
                fds, maps = v.fds(), v.memfd_maps()
        assert (v.fds(), v.memfd_maps()) == (fds, maps)
        assert maps == 1                       # the pool; libmemif's rings unmapped
        for p in st["ports"]:
            m = p["memif"]
            assert m["role"] == "slave" and m["zero_copy"] is True
            assert m["connects"] == m["disconnects"] >= 3 and m["connected"] is False
            assert m["chained_dropped"] == 0
        w = st["workers_detail"][0]
        assert w["buffers_free"] == w["buffers"] == 2 * 4096   # every buffer is back
        assert st["nodes"]["l2-xconnect"]["packets"] == sum(p["rx_packets"]
                                                             for p in st["ports"])


def test_vfwd_router_imix_loss_is_exact(sockdir):
    """IMIX both ways through the router; then half of the destinations have
    no route: exactly those frames are lost, and vfwd's drop counter says so."""
    with vfwd(sockdir, ROUTER.format(s=sockdir)) as v:
        spec = spec_for(dut_ports(sockdir), 30_000, bidir=True, frame_size="imix", flows=64,
                        latency=None)
        spec["profile"]["vary"] = ["dst_ip"]
        # 198.19.128.0/17 + k, k < 64: all in the routed /18
        doc, shaken = dut_trial(v, spec)
        if not shaken:
            for s in doc["streams"]:
                assert_exact(s, latency=False)
        # flow 0 to 198.19.191.255 (routed), flow 1 to 198.19.192.0 (no route)
        spec["streams"] = [{"id": 0, "tx_port": 0, "rx_port": 1, "src": V4[0],
                            "dst": "198.19.191.255/17"}]
        spec["profile"].update(flows=2, vary=["dst_ip"])
        before = v.stats()["drops"].get("ip4-lookup: no route", 0)
        doc, shaken = dut_trial(v, spec, exact=False)
        no_route = v.stats()["drops"].get("ip4-lookup: no route", 0) - before
    s = doc["streams"][0]
    assert s["reordered"] == 0 and s["duplicated"] == 0
    # no warm-up: the trial's own frames, every second one (flow 1)
    assert no_route == (s["tx_packets"] - full_drops(doc)) // 2 or shaken
    if not shaken:
        assert s["tx_packets"] == 30_000
        assert s["rx_packets"] == 15_000 and s["lost"] == 15_000 and no_route == 15_000


def test_vfwd_as_master_copies(sockdir):
    """vfwd the master (it copies), fwdgen the slaves."""
    body = ("mode xconnect\nport 0 d0 driver memif socket {s}/d0.sock role master\n"
            "port 1 d1 driver memif socket {s}/d1.sock role master\n"
            "xconnect 0 1\nxconnect 1 0\n").format(s=sockdir)
    with vfwd(sockdir, body) as v:
        ports = dut_ports(sockdir)
        for p in ports:
            p["memif"]["role"] = "slave"
        doc, shaken = dut_trial(v, spec_for(ports, 20_000, bidir=True, frame_size="imix"))
        for s in doc["streams"]:
            if not shaken:
                assert_exact(s)
        for p in v.stats()["ports"]:
            assert p["memif"]["role"] == "master" and p["memif"]["zero_copy"] is False
    # vfwd removed the socket files it bound (the fixture checks the directory)


@contextmanager
def background_trial(sockdir: Path, spec: dict):
    """fwdgen trial running while the test acts; killed if the test fails."""
    path = sockdir.parent / "spec.json"
    path.write_text(json.dumps(spec))
    g = subprocess.Popen([str(FWDGEN), "trial", "--spec", str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        yield g
    finally:
        if g.poll() is None:
            g.kill()
            g.communicate()


def test_peer_killed_mid_trial_ends_the_trial(sockdir):
    with vfwd(sockdir, XCONNECT.format(s=sockdir)) as v, \
            background_trial(sockdir, spec_for(dut_ports(sockdir), 20_000, duration=20.0)) as g:
        time.sleep(1.5)
        v.proc.kill()
        t0 = time.monotonic()
        out, err = g.communicate(timeout=15)
        quit_s = time.monotonic() - t0
    assert g.returncode == 3, err
    assert out == ""
    assert "mid-trial" in err and "d0.sock" in err and "fwdgen master" in err, err
    assert quit_s < 10, f"fwdgen took {quit_s:.1f} s to notice"   # not a 20 s trial


def test_sigterm_mid_trial_removes_the_sockets(sockdir):
    with vfwd(sockdir, XCONNECT.format(s=sockdir)), \
            background_trial(sockdir, spec_for(dut_ports(sockdir), 20_000, duration=20.0)) as g:
        time.sleep(1.0)
        g.send_signal(signal.SIGTERM)
        out, err = g.communicate(timeout=15)
    assert g.returncode == 3 and out == "", err
    assert "interrupted by a signal" in err


@pytest.mark.parametrize("which", ["fwdgen", "vfwd"])
def test_asan_builds_run_clean(sockdir, which):
    build_native("build/asan/fwdgen")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    gen = BUILD / "asan" / "fwdgen" if which == "fwdgen" else FWDGEN
    dut = BUILD / "vfwd-asan" if which == "vfwd" else VFWD
    with vfwd(sockdir, XCONNECT.format(s=sockdir), binary=dut, env=env) as v:
        doc, shaken = dut_trial(v, spec_for(dut_ports(sockdir), 5_000, 0.5, bidir=True,
                                            frame_size="imix"), binary=gen, env=env)
    for s in doc["streams"]:
        assert s["intended_packets"] == 2_500 and s["rx_packets"] > 0
        if not shaken:
            assert_exact(s)
    # (vfwd's own sanitizer report fails the vfwd context's exit check)


# ---- errors ---------------------------------------------------------------

def one_port(sock: Path, **memif) -> dict:
    return spec_for([port("g0", sock, **memif)], 1000, latency=None,
                    streams=[{"id": 0, "tx_port": 0, "rx_port": None, "src": V4[0],
                              "dst": V4[1]}])


def test_no_peer_names_the_side_and_the_socket(sockdir):
    rc, _, err = fwdgen(one_port(sockdir / "a.sock", id=4, connect_timeout_s=0.2))
    assert rc == 3
    assert err.strip().splitlines() == [
        f"fwdgen: memif spec.ports[0] (g0): no peer connected within 0.2 s: this side is the "
        f"master and listens on {sockdir}/a.sock for interface id 4; start the slave there"]
    rc, _, err = fwdgen(one_port(sockdir / "a.sock", role="slave", connect_timeout_s=0.2))
    assert rc == 3
    assert "no master answered within 0.2 s: this side is the slave and connects to" in err
    assert "no socket file at" in err


def test_socket_in_use_and_not_a_socket(sockdir):
    sock = sockdir / "busy.sock"
    with sink(sock, "--role", "master", "--connect-timeout", "30") as p:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.02)
        rc, _, err = fwdgen(one_port(sock))
        assert rc == 3
        assert f"socket {sock} is in use: another process listens on it" in err
        # a slave with the wrong id is told the master did not take it
        rc, _, err = fwdgen(one_port(sock, role="slave", id=9, connect_timeout_s=0.3))
        assert rc == 3 and "interface id 9" in err, err
        p.send_signal(signal.SIGTERM)
        _, serr = p.communicate(timeout=10)
        assert p.returncode == 3 and "interrupted while waiting for the peer" in serr, serr
    assert not sock.exists()                    # the sink removed its socket file
    plain = sockdir / "plain"
    plain.write_text("")
    rc, _, err = fwdgen(one_port(plain, connect_timeout_s=0.2))
    assert rc == 3 and "exists and is not a socket" in err
    plain.unlink()


def test_stale_socket_file_is_replaced(sockdir):
    import socket
    sock = sockdir / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.bind(str(sock))                       # a file nobody listens on
    assert sock.exists()
    rc, _, err = fwdgen(one_port(sock, connect_timeout_s=0.2))
    assert rc == 3 and "no peer connected" in err, err   # it listened: the file was replaced
    assert not sock.exists()


def test_refused_shared_memory(sockdir):
    """A slave whose region (16384 x 65535 B x 2, 2 GiB) the address-space
    limit refuses: said before libmemif would have crashed on it."""
    spec = one_port(sockdir / "big.sock", role="slave", ring_size=16384, buffer_size=65535)
    rc, _, err = fwdgen(spec, pre=("prlimit", "--as=1000000000"))
    assert rc == 3
    assert "the shared memory of ring size 16384 x buffer size 65535" in err
    assert "is refused: Cannot allocate memory" in err


@pytest.mark.parametrize("memif,field,words", [
    ({"ring_size": 1000}, "ring_size", "is not a power of two"),
    ({"buffer_size": 64}, "buffer_size", "64 is below 128"),
    ({"role": "client"}, "role", "is not master or slave"),
])
def test_bad_memif_fields_exit_2_naming_them(sockdir, memif, field, words):
    rc, _, err = fwdgen(one_port(sockdir / "x.sock", **memif))
    assert rc == 2
    assert err.startswith(f"fwdgen: spec.ports[0].memif.{field}: ") and words in err
    assert len(err.strip().splitlines()) == 1


def test_vfwd_memif_config_errors(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("mode router\nworkers 2\nport 0 d0 driver memif socket /tmp/x.sock\n")
    p = subprocess.run([str(VFWD), "-c", str(conf)], capture_output=True, text=True,
                       timeout=10, check=False)
    assert p.returncode == 2
    assert "bad.conf:2: workers 2: memif ports run one worker" in p.stderr
