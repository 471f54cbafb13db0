"""Find a record by offset or by timestamp the way a broker does: index, then a short scan.

``LogSegment.translateOffset`` asks the offset index for the largest entry at or below the
target and scans batches forward from its position; ``LogSegment.findOffsetByTimestamp`` asks
the time index for the largest entry at or below the timestamp, translates its offset the same
way, and scans for the first batch whose max timestamp reaches the target. We do exactly that,
and fall back to a scan from byte 0 when an index is missing or not trusted (docs/architecture.md
§2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from segtools.findings import Finding
from segtools.model import Batch, Record
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.segment import Segment


@dataclass(frozen=True, slots=True)
class SeekResult:
    """Where a lookup landed. ``record`` is None when no record at or past the target exists
    in this segment; ``start_position`` is where the forward scan began (0 = no index help)."""

    batch: Batch | None
    record: Record | None
    start_position: int
    index_used: bool
    batches_scanned: int
    #: What the walk met on the way, up to the batch returned (all of it when none was):
    #: a torn tail, a corrupt length, a bad CRC, as ``verify`` reports them.
    findings: tuple[Finding, ...] = ()


def _usable(index) -> bool:
    return index is not None and index.trusted and index.valid_entries > 0


def start_position_for_offset(index: OffsetIndex | None, target: int) -> tuple[int, bool]:
    """``OffsetIndex.lookup``: largest indexed offset <= target, else the segment start."""
    if not _usable(index):
        return 0, False
    return index.lookup(target).position, True


def _first_record(segment: Segment, start: int, candidate, keep) -> tuple:
    """Walk from ``start``; decode the batches ``candidate(table)`` selects, in order, until
    one holds a record ``keep`` accepts. Returns (batch, record, batches walked, findings
    met up to that batch)."""
    walked = 0
    met: list[Finding] = []
    for chunk in segment.walk(start, verify_crc=True):
        t = chunk.table
        for row in np.flatnonzero(candidate(t)):
            one = t.take(slice(int(row), int(row) + 1))
            for br in segment.batch_records(one):
                for record in br.records:
                    if keep(record):
                        at = br.batch.position
                        met += [f for f in chunk.findings
                                if f.position is None or f.position <= at]
                        return br.batch, record, walked + int(row) + 1, tuple(met)
        walked += len(t)
        met += chunk.findings
    return None, None, walked, tuple(met)


def seek_offset(segment: Segment, index: OffsetIndex | None, target: int) -> SeekResult:
    """The first record with offset >= ``target`` (the target itself unless compaction or a
    control batch removed it), found via the index and a forward scan."""
    start, used = start_position_for_offset(index, target)
    batch, record, scanned, met = _first_record(segment, start,
                                                lambda t: t.last_offset >= target,
                                                lambda r: r.offset >= target)
    return SeekResult(batch, record, start, used, scanned, met)


def seek_timestamp(segment: Segment, offset_index: OffsetIndex | None,
                   time_index: TimeIndex | None, target: int) -> SeekResult:
    """``LogSegment.findOffsetByTimestamp``: the first record with timestamp >= ``target``."""
    start, used = 0, False
    if _usable(time_index):
        indexed = time_index.lookup(target)
        start, used = start_position_for_offset(offset_index, indexed.offset)
    batch, record, scanned, met = _first_record(segment, start,
                                                lambda t: t.max_timestamp >= target,
                                                lambda r: r.timestamp >= target)
    return SeekResult(batch, record, start, used, scanned, met)
