"""Human units in explanations: times, durations and sizes as an operator reads them.

The analyses explain their verdicts in sentences ("newest record 2024-05-01T14:02:00Z, 6d 23h
old"); those sentences are part of the result every face shows (CLI, JSON, Spark, report), so
the formatting lives here, below the analyses, rather than in one face.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

#: 9999-12-31T23:59:59.999Z, the last millisecond ``datetime`` shows.
LAST_SHOWN_MS = 253_402_300_799_999


def format_time(ms: int | None) -> str:
    """UTC ISO-8601 to the second, or ``never`` / ``out-of-range``. A time from 1970 on is
    the C library's ``gmtime`` of its whole seconds (a large tree's tables show one or two
    per segment: half the cost of building a ``datetime``); an earlier or later one goes
    through ``datetime``, which says where it is out of range."""
    if ms is None:
        return "never"
    if 0 <= ms <= LAST_SHOWN_MS:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "out-of-range"


def format_duration(ms: int) -> str:
    """``7d 2h``, ``3h 05m``, ``42s``: two units at most, sign kept."""
    sign = "-" if ms < 0 else ""
    s = abs(ms) // 1000
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days >= 365 * 3:
        return f"{sign}{days // 365}y"
    if days:
        return f"{sign}{days}d {hours}h" if hours else f"{sign}{days}d"
    if hours:
        return f"{sign}{hours}h {minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m {seconds:02d}s"
    if s == 0 and ms:
        return f"{sign}{abs(ms)}ms"
    return f"{sign}{seconds}s"


def format_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_retention(ms: int) -> str:
    return "-1 (infinite)" if ms < 0 else f"{ms} ({format_duration(ms)})"


#: The units a duration may be written in (``--window 5m``, ``duplicates_window="90s"``).
DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """Milliseconds from ``120000``, ``90s``, ``2m``, ``1.5h`` or ``7d``; ValueError otherwise."""
    t = text.strip().lower()
    for suffix in ("ms", "s", "m", "h", "d"):
        number = t[: -len(suffix)]
        if t.endswith(suffix) and number.replace(".", "", 1).isdigit():
            return int(float(number) * DURATION_UNITS[suffix])
    if t.isdigit():
        return int(t)
    raise ValueError(f"not a duration: {text!r} (e.g. 120000 ms, 90s, 2m, 1h, 7d)")

