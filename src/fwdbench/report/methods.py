"""The report's methods paragraph: how the numbers were obtained, in words,
from the campaign's settings and what the trials recorded."""
from __future__ import annotations

from typing import Any

from .types import ReportModel, ScenarioReport


def _fmt_secs(v: Any) -> str:
    from ..units import UnitError, parse_duration
    try:
        return f"{parse_duration(v):g} s"
    except (UnitError, TypeError, ValueError):
        return str(v)


def _pct_list(v: Any) -> str:
    if not isinstance(v, list):
        return str(v)
    return ", ".join(f"{float(x) * 100:g} %" for x in v)


def _search_phrase(search: dict[str, Any]) -> str:
    """One search's settings in words (keys of fwdbench.search.settings)."""
    t = search.get("type", "sweep")
    lat = search.get("latency")
    if t == "sweep":
        loads = search.get("loads_pps")
        if loads:
            txt = (f"a load sweep over {len(loads)} offered loads from "
                   f"{min(loads) / 1e6:.3f} to {max(loads) / 1e6:.3f} Mpps")
        elif search.get("start_pps"):
            txt = (f"a load sweep from {search['start_pps'] / 1e6:.3f} to "
                   f"{search['stop_pps'] / 1e6:.3f} Mpps in steps of "
                   f"{search['step_pps'] / 1e6:.3f} Mpps")
        elif search.get("pdr_fractions"):
            txt = f"a load sweep at {_pct_list(search['pdr_fractions'])} of an earlier PDR"
        else:
            txt = "a load sweep"
        n = search.get("repetitions") or 1
        if n != 1:
            txt += f", {n} trials per load"
        if search.get("trial_duration_s"):
            txt += f", {search['trial_duration_s']:g} s trials"
    elif t == "binary":
        txt = "an RFC 2544 binary search"
        if search.get("relative_width") is not None:
            txt += f" to a relative width of {float(search['relative_width']) * 100:g} %"
        if search.get("loss_ratios") is not None:
            txt += f" for loss goals of {_pct_list(search['loss_ratios'])}"
        if search.get("trial_duration_s"):
            txt += f" with {search['trial_duration_s']:g} s trials"
        if search.get("verify"):
            txt += ", verifying each result with a final trial"
    elif t == "mlr":
        txt = "MLRsearch (FD.io CSIT)"
        if search.get("loss_ratios") is not None:
            txt += f" for loss goals of {_pct_list(search['loss_ratios'])}"
        if search.get("initial_trial_duration_s") is not None:
            txt += (f" with trials of {search['initial_trial_duration_s']:g} s to "
                    f"{search.get('final_trial_duration_s', '?'):g} s, a duration sum of "
                    f"{search.get('duration_sum_s', 0):g} s and an exceed ratio of "
                    f"{search.get('exceed_ratio', 0):g}")
    elif t == "latency":
        txt = f"latency trials at {_pct_list(search.get('fractions', []))} of the PDR"
    else:
        txt = f"a {t} search"
    if isinstance(lat, dict):
        txt += (f", then latency trials at {_pct_list(lat.get('fractions', []))} of the "
                f"PDR found ({lat.get('trial_duration_s', '?'):g} s each)")
    return txt


def _search_summary(scenarios: list[ScenarioReport]) -> list[str]:
    """Searches in words, sweeps of the same shape merged (their load ranges joined)."""
    out: dict[str, list[ScenarioReport]] = {}
    for s in scenarios:
        srch = dict(s.search)
        if srch.get("type") == "sweep" and srch.get("loads_pps"):
            srch["loads_pps"] = None          # merged below
            key = "sweep:" + _search_phrase(srch) + f":{len(s.search['loads_pps'])}"
        else:
            key = _search_phrase(srch)
        out.setdefault(key, []).append(s)
    phrases = []
    for key, scs in out.items():
        n = f" ({len(scs)} scenario{'s' if len(scs) != 1 else ''})" if len(out) > 1 else ""
        if key.startswith("sweep:"):
            loads = [x for s in scs for x in s.search["loads_pps"]]
            rest = _search_phrase({**scs[0].search, "loads_pps": None}).removeprefix(
                "a load sweep")
            phrases.append(f"a load sweep over {len(scs[0].search['loads_pps'])} offered loads "
                           f"(between {min(loads) / 1e6:.3f} and {max(loads) / 1e6:.3f} Mpps "
                           f"over all scenarios){rest}{n}")
        else:
            phrases.append(key + n)
    return phrases


def _span(values: list[float], fmt: str) -> str:
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def _ingress_text(m: ReportModel) -> str | None:
    """How each DUT's ports received, from the scenarios' ``lab_ingress``
    records (testbeds.py); None when a scenario has none (older stores)."""
    duts: dict[str, list[str]] = {}
    queues: dict[str, set[int]] = {}
    for s in m.scenarios:
        ing = (s.describe or {}).get("lab_ingress")
        if not isinstance(ing, dict) or ing.get("mode") not in ("napi", "cpumap", "afxdp"):
            return None
        names = duts.setdefault(ing["mode"], [])
        if s.dut_name not in names:
            names.append(s.dut_name)
        queues.setdefault(ing["mode"], set()).add(int(ing.get("queue") or 0))
    out = []
    if "cpumap" in duts:
        q = "/".join(str(x) for x in sorted(queues["cpumap"]))
        out.append(f"{', '.join(duts['cpumap'])} (kernel data planes) received through a "
                   f"{q}-frame queue in front of the DUT CPU (cpumap, as a NIC's RX ring), "
                   "filled on the generator's CPU: veth's receive and a redirect per frame.")
    if "afxdp" in duts:
        out.append(f"{', '.join(duts['afxdp'])} (AF_XDP data planes) received through their "
                   "sockets' RX rings, filled on the generator's CPU as well: veth's receive, "
                   "the data plane's redirect to its socket and the copy into the socket's "
                   "memory, which a zero-copy NIC does by DMA.")
    moved = [n for k in ("cpumap", "afxdp") for n in duts.get(k, [])]
    if "napi" in duts:
        out.append(f"{', '.join(duts['napi'])} received through veth's 256-frame ring with "
                   "threaded NAPI on the DUT CPU.")
        if moved:
            out.append("So the DUT CPU and energy figures of the data planes with a queue "
                       "leave veth's receive out, while those of "
                       f"{', '.join(duts['napi'])} include it.")
    elif moved:
        out.append("So the DUT CPU and energy figures leave veth's receive out.")
    return " ".join(out)


def _pacing_text(m: ReportModel) -> str:
    """How fwdgen paced the trials, from what each trial's result says."""
    kern = [b for b in m.pacing.get("kernel", []) if b[0] > 1]
    user = m.pacing.get("user", [])
    text = (f"fwdgen paced {m.pacers.get('kernel', 0)} trial(s) in its XDP program, frame by "
            "frame on a schedule")
    if kern:
        text += (f" ({len(kern)} of them in groups of {_span([b for b, _ in kern], '{:.0f}')} "
                 f"frames, {_span([u for _, u in kern], '{:.0f}')} us of traffic each, as a "
                 "NIC coalesces interrupts)")
    text += f", and {m.pacers.get('user', 0)} in bursts from user space"
    if user:
        text += (f" of {_span([b for b, _ in user], '{:.0f}')} frames, one per "
                 f"{_span([u for _, u in user], '{:.0f}')} us of traffic")
    return text + "."


def _ssh_text(m: ReportModel, tb: dict) -> str:
    """Where the traffic ran on an ssh testbed (testbed/ssh.py's record)."""
    rec = (m.host.get("testbed") or {}) if isinstance(m.host, dict) else {}
    dut = rec.get("dut_host") or {}
    tester = rec.get("tester") or {}
    links = []
    for p in rec.get("ports") or []:
        tg, du = p.get("tg") or {}, p.get("dut") or {}
        drv = ((dut.get("ports") or {}).get(du.get("ifname")) or {}).get("driver")
        links.append(f"{tg.get('ifname')}-{du.get('ifname')}" + (f" ({drv})" if drv else ""))
    return (f"The generator ran on CPU(s) {m.placement.get('gen_cpu')} of the tester "
            f"{tester.get('hostname') or '?'} and the DUT on CPU(s) {m.placement.get('dut_cpu')} "
            f"of the DUT host {dut.get('ssh') or tb.get('host')} ({dut.get('cpu_model') or '?'}, "
            f"kernel {dut.get('kernel') or '?'}), configured over SSH"
            + (f", joined by the links {', '.join(links)}" if links else "")
            + ". The DUT ports received through their NICs' own queues and IRQs as the DUT "
              "host had them; fwdbench tuned nothing there (the environment section lists "
              "its facts).")


def methodology_text(m: ReportModel) -> str:
    cfg = m.config
    trial = cfg.get("trial") or {}
    tb = cfg.get("testbed") or {}
    searches = _search_summary(m.scenarios)
    sizes = ", ".join(f"{f} B" if isinstance(f, int) else str(f).upper()
                      for f in m.frame_sizes)
    parts = [
        f"The campaign '{m.name}' measured {len(m.duts)} DUT(s) "
        f"({', '.join(m.duts)}) in {len(m.scenarios)} scenario(s) with frame sizes of "
        f"{sizes} (frame sizes include the 4-byte FCS).",
        f"Each scenario ran {m.repetitions} repetition(s) of {'; '.join(searches)}. "
        f"Every trial began with {_fmt_secs(trial.get('warmup', 0))} of warm-up traffic "
        "that was not counted"
        + (", and one discarded warm-up trial followed every DUT setup" if trial.get(
            "warmup_trial") else "") + ".",
        "A trial's packet loss ratio is (intended - received) / intended packets, so "
        "packets the generator did not send count as lost.",
        "NDR is the highest offered load with zero loss and PDR@0.5% the highest with a "
        "loss ratio of at most 0.5 %; where a sweep ran, both are read from its loads per "
        "repetition.",
        "Values are means over repetitions with 95 % confidence intervals from Student's t "
        "(n - 1 degrees of freedom); a load-loss curve is judged with PASTRAMI's throughput "
        "increase ratio (saturation entry below 0.3, kept below 0.1).",
    ]
    if tb.get("type") == "sim":
        parts.append("The DUTs were simulated (testbed 'sim'): no packets were forwarded.")
    elif tb.get("type") == "ssh":
        parts.append(_ssh_text(m, tb))
    elif m.placement.get("gen_cpu") is not None:
        parts.append(f"The generator ran on CPU {m.placement['gen_cpu']} and the DUT on CPU "
                     f"{m.placement['dut_cpu']} of the same host, joined by veth pairs "
                     "in network namespaces.")
        q = m.placement.get("dut_rx_queue")
        tuned = m.placement.get("kernel_tuning", True) is not False
        ingress = _ingress_text(m) if tuned else None
        if ingress:
            parts.append(ingress)
        elif q and tuned:
            # stores from before scenarios recorded their lab_ingress
            parts.append(f"Kernel data planes received through a {q}-frame queue in front "
                         "of the DUT CPU (cpumap, as a NIC's RX ring); the others through "
                         "veth's 256-frame ring with threaded NAPI on the DUT CPU. The "
                         "queue is filled on the generator's CPU (veth's receive and a "
                         "redirect per frame), as a NIC fills its ring, so the DUT CPU and "
                         "energy figures of kernel data planes leave that work out, while "
                         "those of the others include veth's receive.")
        if m.latency_any and tuned:
            parts.append("In latency trials without background load the generator's ports "
                         "received inline on the DUT CPU, so frames were stamped as the DUT "
                         "sent them; under load the generator's CPU received them, and its "
                         "wake-up is part of the latency.")
    if m.pacers:
        parts.append(_pacing_text(m))
    if m.energy_any:
        kinds = {mp.energy_measured for s in m.scenarios for mp in s.meters
                 if mp.joules is not None}
        scopes = sorted({r["energy_scope"] for r in m.trial_rows if r.get("energy_scope")})
        base = any(r.get("baseline_subtracted") for r in m.trial_rows)
        parts.append("Energy was " + (
            "measured" if kinds == {True} else "modelled from CPU time" if kinds == {False}
            else "measured where a meter existed and modelled elsewhere")
            + " for every trial" + (f" (scope: {'; '.join(scopes)})" if scopes else "")
            + (", with the idle baseline subtracted" if base else ", gross (no idle baseline "
               "subtracted)") + "; packets per joule count received packets.")
    return " ".join(parts)
