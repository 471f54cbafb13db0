"""Human units in explanations: times, durations and sizes as an operator reads them.

The analyses explain their verdicts in sentences ("newest record 2024-05-01T14:02:00Z, 6d 23h
old"); those sentences are part of the result every face shows (CLI, JSON, Spark, report), so
the formatting lives here, below the analyses, rather than in one face.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(ms: int | None) -> str:
    """UTC ISO-8601 to the second, or ``never`` / ``out-of-range``."""
    if ms is None:
        return "never"
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
