"""Human units: the fast paths agree with what they stand for."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.units import LAST_SHOWN_MS, format_time


def _by_datetime(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@settings(max_examples=300, deadline=None)
@given(st.integers(0, LAST_SHOWN_MS))
def test_format_time_is_the_datetime_text(ms):
    """``gmtime`` of the whole seconds shows what ``datetime`` of the milliseconds shows
    (a second is never rounded up: the display truncates)."""
    assert format_time(ms) == _by_datetime(ms)


def test_format_time_edges():
    for ms in (0, 999, 1000, 1_700_000_005_999, LAST_SHOWN_MS, 951_782_399_999,
               951_782_400_000):  # 2000-02-28T23:59:59.999, 2000-02-29 (a leap day)
        assert format_time(ms) == _by_datetime(ms)
    assert format_time(LAST_SHOWN_MS) == "9999-12-31T23:59:59Z"
    assert format_time(-1) == "1969-12-31T23:59:59Z"
    assert format_time(LAST_SHOWN_MS + 1) == "out-of-range"
    assert format_time(None) == "never"
