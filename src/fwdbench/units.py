"""Units of the campaign file: loads, bit rates, durations, frame sizes.

Loads are packets per second per direction (stream). A load may be given as
a number [pps], with a packet-rate unit ("1.5Mpps", "200kpps"), as an L1 bit
rate ("10Gbps": converted with the frame size plus 20 B of preamble and
inter-frame gap), or as a percentage of the scenario's maximum load ("50%").
"""
from __future__ import annotations

import re

IMIX = ((64, 7), (570, 4), (1518, 1))   # (frame size incl. FCS [B], weight)
L1_OVERHEAD_B = 20                      # preamble 8 B + inter-frame gap 12 B

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
_PPS = re.compile(rf"^\s*{_NUM}\s*([kKmMgG]?)pps\s*$")
_BPS = re.compile(rf"^\s*{_NUM}\s*([kKmMgG]?)(bps|bit/s)\s*$")
_PCT = re.compile(rf"^\s*{_NUM}\s*%\s*$")
_DUR = re.compile(rf"^\s*{_NUM}\s*(ms|s|m|min|h)?\s*$")
_MULT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


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


def parse_bitrate(value: str | float | int) -> float:
    """'10Gbps' -> 1e10 [bit/s]; a bare number is bit/s."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _BPS.match(str(value))
    if not m:
        raise UnitError(f"{value!r} is not a bit rate; write e.g. '10Gbps', '400Mbps'")
    return float(m.group(1)) * _MULT[m.group(2).lower()]


def parse_load(value: str | float | int, *, frame_size: int | str,
               max_pps: float) -> float:
    """A load as the campaign gives it -> packets per second per direction."""
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a load")
    if isinstance(value, (int, float)):
        pps = float(value)
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
                f"{value!r} is not a load; write packets per second (250000, '250kpps', "
                f"'1.2Mpps'), an L1 bit rate ('1Gbps') or a share of the maximum ('50%')")
    if pps <= 0:
        raise UnitError(f"{value!r}: a load must be above 0")
    if pps > max_pps * (1 + 1e-9):
        raise UnitError(
            f"{value!r} is {pps:,.0f} pps, above the maximum of {max_pps:,.0f} pps for this "
            f"scenario (line rate / testbed.max_load); lower it or raise testbed.max_load")
    return pps


def parse_duration(value: str | float | int) -> float:
    """'500ms', '2s', '1min' or a number of seconds -> seconds."""
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        secs = float(value)
    else:
        m = _DUR.match(str(value))
        if not m:
            raise UnitError(f"{value!r} is not a duration; write seconds (2, '2s'), '500ms' or '1min'")
        secs = float(m.group(1)) * {None: 1, "s": 1, "ms": 1e-3, "m": 60, "min": 60,
                                    "h": 3600}[m.group(2)]
    if secs < 0:
        raise UnitError(f"{value!r}: a duration cannot be negative")
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
