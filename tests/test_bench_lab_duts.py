"""bench/lab_duts.py's issue-7 target line: vfwd over the best peer of the same round."""
import importlib.util
from pathlib import Path


def load_bench():
    path = Path(__file__).resolve().parents[1] / "bench" / "lab_duts.py"
    spec = importlib.util.spec_from_file_location("lab_duts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_target_pairs_rounds_and_ignores_non_peers(capsys):
    fwd = {"linux router (ingress queue)": [1.0, 0.5, 0.8],
           "testpmd mac (net_af_xdp)": [0.5, 0.6, 0.9],
           "linux router (veth ring)": [2.0, 2.0, 2.0],   # another ingress: not paired
           "xdp router": [1.5, 1.5, 1.5],          # for scale, not a peer of the target
           "vfwd router (AF_XDP)": [0.9, 0.66, 0.9]}
    load_bench().print_target(fwd)
    out = capsys.readouterr().out
    # rounds: 0.9/1.0, 0.66/0.6, 0.9/0.9 -> 0.90, 1.10, 1.00
    assert "vfwd router (AF_XDP)" in out and "best of 2 peers" in out
    assert "median 1.00 [0.90-1.10]" in out and ">= 1 in 2 of 3 rounds" in out


def test_target_pairs_like_ingress_with_like(capsys):
    fwd = {"linux router (ingress queue)": [9.0],
           "linux router (veth ring)": [1.0],
           "testpmd mac (veth ring)": [0.8],
           "vfwd router (veth ring)": [0.9]}
    load_bench().print_target(fwd)
    out = capsys.readouterr().out
    assert "vfwd router (veth ring)" in out and "best of 2 peers" in out
    assert "median 0.90 [0.90-0.90]" in out and ">= 1 in 0 of 1 rounds" in out


def test_target_is_silent_without_peers(capsys):
    load_bench().print_target({"vfwd router (AF_XDP)": [0.5], "xdp router": [1.5]})
    assert capsys.readouterr().out == ""


def test_target_verdict_from_a_ci_of_the_paired_ratios(capsys):
    peer = [1.0, 1.0, 1.0, 1.0]
    bench = load_bench()
    bench.print_target({"linux router (veth ring)": peer,
                        "vfwd router (veth ring)": [0.9, 1.1, 1.0, 1.05]})
    out = capsys.readouterr().out
    assert "paired t on log ratios, 4 rounds" in out and "cannot tell" in out
    bench.print_target({"linux router (veth ring)": peer,
                        "vfwd router (veth ring)": [1.2, 1.3, 1.25, 1.22]})
    assert "vfwd ahead" in capsys.readouterr().out
    bench.print_target({"linux router (veth ring)": peer,
                        "vfwd router (veth ring)": [0.7, 0.75, 0.8, 0.72]})
    assert "vfwd behind" in capsys.readouterr().out


def test_ratio_ci_is_a_t_interval_of_the_logs():
    import math
    gm, lo, hi = load_bench().ratio_ci([0.5, 2.0])
    # logs -ln2, +ln2: mean 0, s = ln2 * sqrt(2), t(0.975, 1) = 12.706
    half = 12.706 * math.log(2) * math.sqrt(2) / math.sqrt(2)
    assert math.isclose(gm, 1.0) and math.isclose(hi, math.exp(half), rel_tol=1e-3)
    assert math.isclose(lo * hi, 1.0)
    assert load_bench().ratio_ci([1.1]) is None


def test_target_says_when_the_generator_set_vfwds_peak(capsys):
    fwd = {"testpmd mac (net_af_xdp)": [1.0, 1.0, 1.0],
           "vfwd router (AF_XDP)": [0.6, 0.7, 1.1]}
    bench = load_bench()
    bench.print_target(fwd, {"vfwd router (AF_XDP)": [True, True, False],
                             "testpmd mac (net_af_xdp)": [True, True, True]})
    out = capsys.readouterr().out
    assert "the generator, not vfwd, was the limit at vfwd's peak in 2 of 3 rounds" in out
    bench.print_target(fwd, {"vfwd router (AF_XDP)": [False, False, False]})
    assert "the generator, not vfwd" not in capsys.readouterr().out


def test_memif_verdicts_pair_each_path_with_its_own_peers(capsys):
    """--link memif: per path, vfwd over the best other data plane of the same round,
    with the CI's verdict; a generator-limited peak is named."""
    b = load_bench()
    peaks = {"vfwd xconnect (memif)": [2.0, 2.2, 2.1, 2.0],
             "VPP xconnect (memif)": [1.0, 1.1, 1.0, 1.05],
             "testpmd io (memif)": [0.5, 0.5, 0.5, 0.5],
             "vfwd router (memif)": [1.0, 0.9, 1.1, 1.0],
             "VPP router (memif)": [1.0, 1.0, 1.0, 1.0]}
    paths = {k: ("xconnect" if "xconnect" in k or "testpmd" in k else "ip4 1 route")
             for k in peaks}
    b.print_memif_verdicts(peaks, paths, {"vfwd router (memif)": [True, False, False, False]})
    out = capsys.readouterr().out
    assert "xconnect: vfwd xconnect (memif) / best of VPP xconnect (memif), testpmd io" in out
    assert "median 2.00 [1.90-2.10]" in out and "vfwd ahead" in out
    assert "ip4 1 route" in out and "this run cannot tell" in out
    assert "vfwd router (memif): 1 of 4 rounds" in out


def test_memif_verdict_says_peaks_at_the_most_offered_are_lower_bounds(capsys):
    """Every data plane forwarded the 6 Mpps offered: the ratio 1.00 says nothing
    of which is faster, and the bench says why."""
    b = load_bench()
    peaks = {"vfwd xconnect (memif)": [6.0, 6.0, 5.999], "VPP xconnect (memif)": [6.0, 5.998, 6.0],
             "vfwd router (memif)": [6.0, 6.0, 6.0], "VPP router (memif)": [4.0, 4.1, 3.9]}
    paths = {k: "xconnect" if "xconnect" in k else "ip4 1 route" for k in peaks}
    b.print_memif_verdicts(peaks, paths, {}, top=6.0)
    out = capsys.readouterr().out
    x, r = out.split("ip4 1 route:")
    assert "cannot tell" in x and "their peaks are lower bounds, so their ratio says nothing" in x
    # VPP below the offer where vfwd forwarded all of it: that ranking stands
    assert "vfwd ahead" in r and "vfwd router (memif); their peaks are lower bounds\n" in r
