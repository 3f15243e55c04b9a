"""Units of the campaign file: loads, bit rates, durations, frame sizes.

Loads are packets per second per direction (stream). A load may be given as
a number [pps], with a packet-rate unit ("1.5Mpps", "200kpps"), as an L1 bit
rate ("10Gbps": converted with the frame size plus 20 B of preamble and
inter-frame gap), or as a percentage of the scenario's maximum load ("50%").
"""
from __future__ import annotations

import math
import re

from .text import shown

IMIX = ((64, 7), (570, 4), (1518, 1))   # (frame size incl. FCS [B], weight)
L1_OVERHEAD_B = 20                      # preamble 8 B + inter-frame gap 12 B

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
_PPS = re.compile(rf"^\s*{_NUM}\s*([kKmMgG]?)pps\s*$")
_BPS = re.compile(rf"^\s*{_NUM}\s*([kKmMgG]?)(bps|bit/s)\s*$")
_PCT = re.compile(rf"^\s*{_NUM}\s*%\s*$")
_DUR = re.compile(rf"^\s*{_NUM}\s*(ms|s|m|min|h)?\s*$")
_MULT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}

# Bounds every campaign value is checked against (docs/campaign.md, "Limits").
MIN_LOAD_PPS = 100.0            # [pps] below this a trial sends too few packets to mean anything
MIN_TRIAL_DURATION_S = 0.1      # [s] shortest measured trial (fwdgen paces in 1 ms bursts)
MAX_DURATION_S = 86_400.0       # [s] longest duration of any kind: one day
MAX_BITRATE_BPS = 10e12         # [bit/s] 10 Tbit/s: above any Ethernet link there is


class UnitError(ValueError):
    """A value with a unit fwdbench does not understand; the message says what is allowed."""


def mean_frame_size(frame_size: int | str) -> float:
    """Mean frame size incl. FCS [B]; IMIX is 7:4:1 of 64/570/1518."""
    if frame_size == "imix":
        total = sum(w for _, w in IMIX)
        return sum(s * w for s, w in IMIX) / total
    return float(frame_size)


def line_rate_pps(bitrate_bps: float, frame_size: int | str) -> float:
    """Maximum frame rate of an Ethernet link at an L1 bit rate [pps]."""
    return bitrate_bps / ((mean_frame_size(frame_size) + L1_OVERHEAD_B) * 8)


def _number(value: str | float | int, what: str) -> float:
    """A bare number as a float, refusing booleans, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitError(f"{shown(value)} is not {what}")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise UnitError(f"{shown(value)} is not a finite number; give {what}")
    return x


def parse_bitrate(value: str | float | int) -> float:
    """'10Gbps' -> 1e10 [bit/s]; a bare number is bit/s. Above 0, at most 10 Tbit/s."""
    if isinstance(value, (int, float)) or isinstance(value, bool):
        bps = _number(value, "a bit rate")
    else:
        m = _BPS.match(str(value))
        if not m:
            raise UnitError(f"{shown(value)} is not a bit rate; write e.g. '10Gbps', '400Mbps'")
        bps = float(m.group(1)) * _MULT[m.group(2).lower()]
    if not bps > 0:
        raise UnitError(f"{shown(value)}: a bit rate must be above 0")
    if not bps <= MAX_BITRATE_BPS:
        raise UnitError(f"{shown(value)} is above {MAX_BITRATE_BPS / 1e12:g} Tbit/s, faster "
                        "than any link; write the link's nominal rate, e.g. '10Gbps'")
    return bps


def parse_load(value: str | float | int, *, frame_size: int | str,
               max_pps: float) -> float:
    """A load as the campaign gives it -> packets per second per direction.

    At least :data:`MIN_LOAD_PPS`, at most ``max_pps``."""
    if isinstance(value, (int, float)) or isinstance(value, bool):
        pps = _number(value, "a load")
    else:
        s = str(value)
        if m := _PPS.match(s):
            pps = float(m.group(1)) * _MULT[m.group(2).lower()]
        elif m := _PCT.match(s):
            pps = float(m.group(1)) / 100.0 * max_pps
        elif m := _BPS.match(s):
            pps = line_rate_pps(float(m.group(1)) * _MULT[m.group(2).lower()], frame_size)
        else:
            raise UnitError(
                f"{shown(value)} is not a load; write packets per second (250000, '250kpps', "
                f"'1.2Mpps'), an L1 bit rate ('1Gbps') or a share of the maximum ('50%')")
    if not math.isfinite(pps):
        raise UnitError(f"{shown(value)} is not a finite load")
    if pps <= 0:
        raise UnitError(f"{shown(value)}: a load must be above 0")
    if pps < MIN_LOAD_PPS:
        raise UnitError(
            f"{shown(value)} is {pps:.3g} pps, below the minimum of {MIN_LOAD_PPS:g} pps (a "
            "trial must send enough packets to measure a loss ratio); raise it")
    if pps > max_pps * (1 + 1e-9):
        raise UnitError(
            f"{shown(value)} is {pps:,.0f} pps, above the maximum of {max_pps:,.0f} pps for this "
            f"scenario (line rate / testbed.max_load); lower it or raise testbed.max_load")
    return pps


def parse_duration(value: str | float | int) -> float:
    """'500ms', '2s', '1min' or a number of seconds -> seconds (0 .. one day)."""
    if isinstance(value, (int, float)) or isinstance(value, bool):
        secs = _number(value, "a duration")
    else:
        m = _DUR.match(str(value))
        if not m:
            raise UnitError(f"{shown(value)} is not a duration; write seconds (2, '2s'), "
                            "'500ms' or '1min'")
        secs = float(m.group(1)) * {None: 1, "s": 1, "ms": 1e-3, "m": 60, "min": 60,
                                    "h": 3600}[m.group(2)]
    if secs < 0:
        raise UnitError(f"{shown(value)}: a duration cannot be negative")
    if not secs <= MAX_DURATION_S:
        raise UnitError(f"{shown(value)} is longer than one day ({MAX_DURATION_S:g} s), the "
                        "longest duration fwdbench takes; shorten it")
    return secs


def parse_trial_duration(value: str | float | int) -> float:
    """A measured trial's duration: :func:`parse_duration`, at least
    :data:`MIN_TRIAL_DURATION_S`."""
    secs = parse_duration(value)
    if secs < MIN_TRIAL_DURATION_S:
        raise UnitError(f"{shown(value)} is shorter than {MIN_TRIAL_DURATION_S:g} s, the "
                        "shortest trial fwdbench runs (shorter trials send too few packets "
                        "and are dominated by start-up); lengthen it")
    return secs


def fmt_pps(pps: float | None) -> str:
    if pps is None:
        return "-"
    if pps >= 1e6:
        return f"{pps / 1e6:.3f} Mpps"
    if pps >= 1e3:
        return f"{pps / 1e3:.1f} kpps"
    return f"{pps:.0f} pps"


def fmt_duration(secs: float) -> str:
    secs = int(round(secs))
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")
