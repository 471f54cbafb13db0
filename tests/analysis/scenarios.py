"""Hand-built partitions: SegmentSummary values whose verdicts follow from Kafka's rules alone."""

from __future__ import annotations

from segtools.storage.summary import SegmentSummary

DAY = 86_400_000
HOUR = 3_600_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def seg(base: int, last: int | None, size: int, *, first_ts: int | None = None,
        max_ts: int = -1, mtime: int | None = None, source: str | None = None,
        active: bool = False) -> SegmentSummary:
    """One segment; ``max_ts`` -1 means no record timestamps (Kafka falls back to mtime)."""
    if source is None:
        source = "timeindex" if max_ts >= 0 else "mtime"
    return SegmentSummary(
        path=f"/logs/t-0/{base:020d}.log", base_offset=base, size=size, valid_bytes=size,
        is_active=active, mtime_ms=mtime if mtime is not None else max(max_ts, T0) + 250,
        batch_count=0 if last is None else 1,
        record_count=0 if last is None else last - base + 1,
        first_offset=None if last is None else base, last_offset=last,
        first_timestamp=first_ts if first_ts is not None else (max_ts if max_ts >= 0 else None),
        log_max_timestamp=max_ts, max_timestamp=max_ts, max_timestamp_source=source)


def daily(count: int, *, start: int = T0, size: int = 1000, records: int = 100,
          span: int = DAY - HOUR) -> list[SegmentSummary]:
    """``count`` segments, one a day from ``start``, each holding ``span`` ms of records."""
    out = []
    for i in range(count):
        first = start + i * DAY
        out.append(seg(i * records, i * records + records - 1, size, first_ts=first,
                       max_ts=first + span, active=i == count - 1))
    return out


def future_blocker() -> tuple[list[SegmentSummary], int]:
    """8 daily segments of 1 MiB; the 4th carries one record stamped 30 days in the future.
    At ``now`` (day 13.5) with retention 7d the first 3 are expired, the 4th is kept by its
    future timestamp, the 5th and 6th are expired but blocked, the 7th and 8th are young."""
    segs = daily(8, size=1 << 20)
    s3 = segs[3]
    segs[3] = seg(s3.base_offset, s3.last_offset, s3.size, first_ts=s3.first_timestamp,
                  max_ts=T0 + 40 * DAY)
    return segs, T0 + 13 * DAY + 12 * HOUR
