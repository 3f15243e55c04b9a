import math

import pytest

from fwdbench.units import (UnitError, line_rate_pps, mean_frame_size, parse_bitrate,
                            parse_duration, parse_load)


def test_line_rate_of_10g_at_64b_is_14_88_mpps():
    assert line_rate_pps(10e9, 64) == pytest.approx(14_880_952.38, rel=1e-9)
    assert line_rate_pps(10e9, 1518) == pytest.approx(812_743.82, rel=1e-6)


def test_imix_mean_is_7_4_1_of_64_570_1518():
    assert mean_frame_size("imix") == pytest.approx((7 * 64 + 4 * 570 + 1518) / 12)


@pytest.mark.parametrize("value,expected", [
    (250000, 250000.0), ("250kpps", 250000.0), ("1.5Mpps", 1.5e6), ("50%", 1000000.0),
    ("1Gbps", 1e9 / (84 * 8)), (" 2 kpps ", 2000.0),
])
def test_parse_load_units(value, expected):
    assert parse_load(value, frame_size=64, max_pps=2e6) \
        == pytest.approx(expected)


@pytest.mark.parametrize("value,needle", [
    ("fast", "not a load"), ("2Mpps", "above the maximum"), (0, "above 0"), (-5, "above 0"),
    ("10 furlongs", "not a load"), (True, "not a load"),
])
def test_parse_load_rejects_with_a_fix(value, needle):
    with pytest.raises(UnitError, match=needle):
        parse_load(value, frame_size=64, max_pps=1e6)


def test_parse_duration_and_bitrate():
    assert parse_duration("500ms") == pytest.approx(0.5)
    assert parse_duration("2s") == 2.0
    assert parse_duration("1min") == 60.0
    assert parse_duration(3) == 3.0
    assert parse_bitrate("400Mbps") == 4e8
    with pytest.raises(UnitError, match="bit rate"):
        parse_bitrate("10 gigs")
    with pytest.raises(UnitError, match="duration"):
        parse_duration("soon")
    assert not math.isnan(parse_duration("1e-3s"))
