"""The ssh testbed without a DUT host: campaign validation, argv quoting, what ssh's
messages mean. (tests/test_ssh_testbed.py runs it against a real sshd.)"""
import shlex

import pytest

from fwdbench.campaign import build_campaign
from fwdbench.errors import CampaignError
from fwdbench.remote.executor import RemoteExecutor
from fwdbench.remote.ssh import SshConnection, SshConnectionLost, SshError, SshTarget, classify

#: argv a remote shell would mangle if it were not quoted
HOSTILE = ["printf", "%s\\n", "; rm -rf /tmp/x", "$(id)", "`id`", "a b", "'", '"', "\\",
           "*", "-x", "", "&&", "|", "a\nb", "$HOME", "~", "#c", "!x", "%s"]


def camp(**tb):
    testbed = {"type": "ssh", "host": "bench@dut1", "dut_cpus": [2, 3],
               "ports": [{"dut": "enp1s0f0", "tg": "ens1f0"},
                         {"dut": "0000:01:00.1", "tg": "ens1f1"}]}
    testbed.update(tb)
    return {"campaign": {"name": "t"}, "testbed": testbed,
            "dut": [{"name": "r", "type": "linux", "params": {"mode": "router"}}],
            "profile": [{"name": "p"}]}


def err(raw) -> str:
    with pytest.raises(CampaignError) as e:
        build_campaign(raw, "c.toml")
    return str(e.value)


def test_ssh_testbed_validates_with_defaults():
    c = build_campaign(camp(), "c.toml")
    tb = c.file.testbed
    assert tb.type == "ssh" and tb.sudo == "auto" and tb.host_key_check == "strict"
    assert tb.gen_cpus == [0] and tb.workdir == "/var/lib/fwdbench"
    assert [p.dut for p in tb.ports] == ["enp1s0f0", "0000:01:00.1"]


@pytest.mark.parametrize("tb,needles", [
    ({"host": "-oProxyCommand=sh"}, ["testbed.host", "leading '-'"]),
    ({"host": "a b"}, ["testbed.host", "no blanks"]),
    ({"ssh_options": ["ControlPath=/tmp/x"]}, ["testbed.ssh_options", "sets ControlPath itself"]),
    ({"ssh_options": ["ProxyJump"]}, ["testbed.ssh_options", "Key=Value"]),
    ({"workdir": "relative/dir"}, ["testbed.workdir", "absolute"]),
    ({"workdir": "/"}, ["testbed.workdir"]),
    ({"dut_cpus": []}, ["testbed.dut_cpus"]),
    ({"dut_cpus": [1, 1]}, ["testbed.dut_cpus", "distinct"]),
    ({"sudo": "maybe"}, ["testbed.sudo", "'auto'", "'never'"]),
    ({"host_key_check": "no"}, ["testbed.host_key_check", "'strict'", "'accept-new'"]),
    ({"connect_timeout": "0s"}, ["testbed.connect_timeout", "above 0"]),
    ({"ports": [{"dut": "a", "tg": "b"}]}, ["testbed.ports"]),
    ({"ports": [{"dut": "eth/1", "tg": "t0"}, {"dut": "e2", "tg": "t1"}]},
     ["testbed.ports[0].dut", "PCI address"]),
    ({"ports": [{"dut": "e1", "tg": "t0", "dut_mac": "zz"}, {"dut": "e2", "tg": "t1"}]},
     ["testbed.ports[0].dut_mac", "MAC address"]),
    ({"ports": [{"dut": "e1", "tg": "t0"}, {"dut": "e1", "tg": "t1"}]},
     ["testbed.ports", "both links name dut port 'e1'"]),
    ({"gen_cpu": 0}, ["testbed.gen_cpu", "unknown key"]),
])
def test_ssh_testbed_errors_name_the_field(tb, needles):
    msg = err(camp(**tb))
    assert msg.startswith("c.toml: ")
    for n in needles:
        assert n in msg, (n, msg)


def test_netns_only_fields_and_missing_host_are_refused():
    raw = camp()
    del raw["testbed"]["host"]
    assert "testbed.host" in err(raw)
    assert "testbed.kernel_tuning" in err(camp(kernel_tuning=True))


def test_argv_is_quoted_for_the_remote_shell():
    conn = SshConnection(SshTarget("bench@dut1"), private_dir="/tmp/none")
    for sudo in (False, True):
        ex = RemoteExecutor(conn, sudo=sudo)
        line = ex.remote_command(HOSTILE)
        pre = (["sudo", "-n", "--"] if sudo else []) + ["env", "LC_ALL=C"]
        assert shlex.split(line) == pre + HOSTILE
        full = ex.argv(HOSTILE)
        # one argument for the remote shell, after the destination and "--"
        assert full[-3:] == ["--", "bench@dut1", line]
        assert "BatchMode=yes" in full and "StrictHostKeyChecking=yes" in full
    with pytest.raises(TypeError):
        ex.remote_command("ip link")        # a shell string is refused


def test_target_options():
    t = SshTarget("dut", port=2222, identity="~/k", config="/c", options=("ProxyJump=gw",),
                  host_key_check="accept-new", connect_timeout_s=2.5)
    argv = t.base_argv()
    assert argv[0] == "ssh"
    assert ["-p", "2222"] == argv[argv.index("-p"):argv.index("-p") + 2]
    assert "StrictHostKeyChecking=accept-new" in argv and "ConnectTimeout=3" in argv
    assert ["-F", "/c"] == argv[argv.index("-F"):argv.index("-F") + 2]
    assert "ProxyJump=gw" in argv and "IdentitiesOnly=yes" in argv
    assert not any(a.startswith("~") for a in argv)


# OpenSSH 9.2's own words (the rig test provokes each of them for real)
@pytest.mark.parametrize("stderr,kind,needle", [
    ("ssh: connect to host 10.0.0.1 port 22: Connection refused\r\n", SshError, "unreachable"),
    ("ssh: Could not resolve hostname nope: Name or service not known\r\n", SshError,
     "unreachable"),
    ("root@10.0.0.1: Permission denied (publickey).\r\n", SshError, "refused the key"),
    ("No ED25519 host key is known for 10.0.0.1 and you have requested strict checking.\r\n"
     "Host key verification failed.\r\n", SshError, "not in known_hosts"),
    ("@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n"
     "Offending ED25519 key in /root/.ssh/known_hosts:3\r\n", SshError, "CHANGED"),
])
def test_classify_connect_errors(stderr, kind, needle):
    e = classify(stderr, SshTarget("root@10.0.0.1"))
    assert type(e) is kind and needle in str(e)
    assert "\n" not in str(e)


def test_classify_a_lost_connection_and_foreign_text():
    e = classify("Timeout, server 10.0.0.1 not responding.\r\n", SshTarget("d"),
                 during="while running `ip link`")
    assert isinstance(e, SshConnectionLost) and "lost while running `ip link`" in str(e)
    assert classify("RTNETLINK answers: File exists\n", SshTarget("d")) is None


def test_a_local_bmc_is_not_the_dut_hosts():
    """On the ssh testbed IPMI's local interface would read the tester's BMC."""
    from fwdbench.meters.session import build_meter
    from fwdbench.meters.settings import parse_energy_settings
    settings = parse_energy_settings({"meters": ["ipmi"]})
    m = build_meter("ipmi", settings, [1], dut_exec=object(), dut_host="bench@dut1")
    ok, why = m.available()
    assert not ok and "the tester's" in why and "lanplus" in why and "bench@dut1" in why
    lan = parse_energy_settings({"meters": ["ipmi"], "ipmi": {
        "interface": "lanplus", "host": "bmc1", "user": "u", "password_file": "/p"}})
    assert type(build_meter("ipmi", lan, [1], dut_exec=object())).__name__ == "IpmiMeter"


def test_a_runs_owner_is_alive_only_if_it_is_the_same_process():
    from fwdbench.remote.leftovers import owner_record, owner_state
    me = owner_record()
    assert owner_state(me) == "alive"
    assert owner_state({**me, "start": (me["start"] or 0) + 1}) == "gone"   # a reused pid
    assert owner_state({**me, "hostname": me["hostname"] + "-other"}) == "other"
    assert owner_state({**me, "boot_id": "0"}) == "gone"      # the tester rebooted since


def test_dut_links_and_cpus_on_the_ssh_testbed():
    raw = camp()
    raw["dut"] = [{"name": "v", "type": "vfwd", "link": "memif"}]
    msg = err(raw)
    assert "dut[0].link" in msg and "memif is shared memory on one host" in msg
    raw["dut"] = [{"name": "v", "type": "vpp", "params": {"workers": 3}}]
    msg = err(raw)      # the testbed gives the DUT 2 CPUs
    assert "dut[0].params.workers" in msg and "2 CPU(s)" in msg
    raw["dut"] = [{"name": "v", "type": "vfwd"}]
    assert build_campaign(raw, "c.toml").scenarios[0].dut.link == "veth"


class _DroppingConnection(SshConnection):
    """A master (a real process) that ends shortly after its sessions fail with
    ssh's 255 and no message: what a killed sshd looks like to the tester, the
    sessions learning of it before the master does. The "session" is a local
    shell that exits 255."""

    def __init__(self, master_lives: float):
        import subprocess
        super().__init__(SshTarget("bench@dut1"))
        self.master = subprocess.Popen(["sleep", str(master_lives)])

    def argv(self, remote_command: str) -> list[str]:
        return ["sh", "-c", "exit 255"]


def test_a_session_that_fails_silently_while_the_master_dies_is_a_lost_connection():
    """Not a missing file: a meter reading /proc/net/snmp when the DUT host's sshd
    was killed once reported "not readable or missing" (CI, stop 27)."""
    conn = _DroppingConnection(master_lives=0.5)
    ex = RemoteExecutor(conn, sudo=False)
    with pytest.raises(SshConnectionLost, match="lost while running `tail"):
        ex.read_file("/proc/net/snmp")
    conn.master.wait()


def test_a_commands_own_255_with_the_master_alive_is_the_commands():
    conn = _DroppingConnection(master_lives=30)
    try:
        cp = RemoteExecutor(conn, sudo=False).run(["false"], check=False)
        assert cp.returncode == 255
    finally:
        conn.master.kill()
        conn.master.wait()
