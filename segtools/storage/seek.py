"""Find a record by offset or by timestamp the way a broker does: index, then a short scan.

``LogSegment.translateOffset`` asks the offset index for the largest entry at or below the
target and scans batches forward from its position; ``LogSegment.findOffsetByTimestamp`` asks
the time index for the largest entry at or below the timestamp, translates its offset the same
way, and scans for the first batch whose max timestamp reaches the target. We do exactly that,
and fall back to a scan from byte 0 when an index is missing or not trusted (DESIGN.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _usable(index) -> bool:
    return index is not None and index.trusted and index.valid_entries > 0


def start_position_for_offset(index: OffsetIndex | None, target: int) -> tuple[int, bool]:
    """``OffsetIndex.lookup``: largest indexed offset <= target, else the segment start."""
    if not _usable(index):
        return 0, False
    return index.lookup(target).position, True


def seek_offset(segment: Segment, index: OffsetIndex | None, target: int) -> SeekResult:
    """The first record with offset >= ``target`` (the target itself unless compaction or a
    control batch removed it), found via the index and a forward scan."""
    start, used = start_position_for_offset(index, target)
    scanned = 0
    for item in segment.batches(start, verify_crc=False):
        if not isinstance(item, Batch):
            continue
        scanned += 1
        if item.last_offset < target:
            continue
        for br in segment.batch_records([item]):
            for record in br.records:
                if record.offset >= target:
                    return SeekResult(item, record, start, used, scanned)
    return SeekResult(None, None, start, used, scanned)


def seek_timestamp(segment: Segment, offset_index: OffsetIndex | None,
                   time_index: TimeIndex | None, target: int) -> SeekResult:
    """``LogSegment.findOffsetByTimestamp``: the first record with timestamp >= ``target``."""
    start, used = 0, False
    if _usable(time_index):
        indexed = time_index.lookup(target)
        start, used = start_position_for_offset(offset_index, indexed.offset)
    scanned = 0
    for item in segment.batches(start, verify_crc=False):
        if not isinstance(item, Batch):
            continue
        scanned += 1
        if item.max_timestamp < target:
            continue
        for br in segment.batch_records([item]):
            for record in br.records:
                if record.timestamp >= target:
                    return SeekResult(item, record, start, used, scanned)
    return SeekResult(None, None, start, used, scanned)
