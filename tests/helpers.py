"""Test data shared by several test files (pytest puts tests/ on sys.path)."""
from fwdbench.trial import LatencySummary, StreamResult, TrialResult

#: a small two-DUT campaign on simulated devices; ``sim_campaign(name)`` names it
SIM_CAMPAIGN = """
[campaign]
name = "{name}"
repetitions = 2

[testbed]
type = "sim"
max_load = "2Mpps"

[trial]
duration = "1s"

[[dut]]
name = "realistic"
type = "sim"
params = { model = "realistic", capacity_pps = 1000000, seed = 7 }

[[dut]]
name = "noisy"
type = "sim"
params = { model = "noisy", capacity_pps = 600000, seed = 8 }

[[profile]]
name = "p"

[search]
type = "binary"
relative_width = 0.01
"""


def sim_campaign(name: str) -> str:
    return SIM_CAMPAIGN.replace("{name}", name)


def store_result(load=1000.0, rx=999, tx=1000):
    lat = LatencySummary(rx, 1000, 1500.5, 1400, 1900, 2500, 4000, 9000, 12.5, "HISTFAAA")
    return TrialResult(load, 1.0, [StreamResult(0, "tg0", "tg1", load, tx, tx, tx * 60, rx,
                                                rx * 60, reordered=1, duplicated=0,
                                                achieved_tx_pps=load, latency=lat)],
                       backend="xdp", warmup_s=0.5, raw={"ok": True},
                       dut_counters={"dut0": {"rx_packets": 1000}},
                       meters={"energy": {"joules": 1.5, "measured": False}})


def store_campaign(st):
    cid = st.create_campaign(name="c", source_path="c.toml", config_text="[campaign]\n",
                             config={"a": 1}, host={"kernel": "6"}, tool_version="0.1")
    return st.add_scenario(cid, 0, "s0", "d", "sim", {"m": 1}, {"l3": "ipv4"},
                           {"type": "sweep"}, {"dut": "d"}, 1e6)


def stolen(r) -> bool:
    """The cpu meter's own steal warning for the DUT CPUs (meters/cpu.py)."""
    from fwdbench.meters.cpu import STEAL_WARN_SHARE

    return _dut_steal(r) > STEAL_WARN_SHARE


def _dut_steal(r) -> float:
    return ((r.meters.get("cpu") or {}).get("dut") or {}).get("steal") or 0.0


def assert_all_forwarded(r, sent: int, name: str = "") -> None:
    """A lab trial sent ``sent`` frames and every one came back. The one
    excuse: a trial the CPU meter flags for steal may lose the frames that
    arrived while the hypervisor held the DUT CPU (steal share x frames
    sent); more than that, or any loss without steal, is the data plane's."""
    assert r.tx_packets == r.intended_packets == sent, name
    steal = _dut_steal(r)
    excused = int(steal * r.tx_packets) if stolen(r) else 0
    assert r.rx_packets + r.lost == r.tx_packets, name          # no duplicates
    assert r.lost <= excused, (name, r.lost, steal)


class PlainDutHost:
    """A DUT host over ``exec`` (an fwdbench Executor) for drivers tested
    outside fwdbench's lab: no NAPI threads of fwdbench's, no port baseline.
    Built lazily so modules that do not need it do not import the drivers."""

    def __new__(cls, exec, ports, cpus=(0,), ipv6=False):
        import shutil
        import tempfile

        from fwdbench.dut.host import DutHost, PortRx
        from fwdbench.lab.host import NetnsDutHost

        class _Host(DutHost):
            kind = "netns"

            def __init__(self):
                self.name = f"netns {exec.ns}" if exec.ns else "this host"
                self.exec, self.ports, self.cpus, self.ipv6 = exec, tuple(ports), tuple(cpus), ipv6

            def rx(self):
                return PortRx(ingress="napi")

            def interface_counters(self):
                return {}

            def restore_ports(self):
                pass

            tool = NetnsDutHost.tool

            def make_dir(self, prefix):
                return tempfile.mkdtemp(prefix=f"fwdbench-{prefix}-")

            def remove_dir(self, path):
                shutil.rmtree(path, ignore_errors=True)

        return _Host()


def intent(kind: str = "search", reason: str = ""):
    """A trial intent for tests that write trials by hand."""
    from fwdbench.intent import TrialIntent
    if kind == "warmup":
        return TrialIntent.warmup(reason)
    if kind == "latency":
        return TrialIntent.latency(0.5, "PDR", reason)
    return TrialIntent.search("sweep", reason)


def goal_rows(goals: dict):
    """{'ndr': (value, detail), 'pdr@0.005': ...} as save_results' rows."""
    def lr(key):
        return None if key == "search" else 0.0 if key == "ndr" else float(key.split("@")[1])
    return [(lr(k), v, d) for k, (v, d) in goals.items()]
