"""Consistency rules across a partition's files, as pure functions over what was read.

Each rule mirrors a check Kafka makes somewhere (cited per function) or a fact of how Kafka
writes (offsets only grow; the leader epoch of batches only grows; every index entry points at
the start of an append). The verify command gathers the inputs; nothing here does I/O.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from segtools.findings import Finding, Severity
from segtools.formats.checkpoints import EpochEntry
from segtools.model import Batch


@dataclass(frozen=True, slots=True)
class CompactionEvidence:
    """Signs that the log cleaner has rewritten this partition, which make offset gaps normal:
    a cleaner checkpoint, cleaner temp files, or batches only the cleaner writes."""

    cleaner_checkpoint: bool = False
    cleaner_leftovers: bool = False
    cleaned_batches: bool = False  # empty batches, delete horizons, records < offset span

    @property
    def any(self) -> bool:
        return self.cleaner_checkpoint or self.cleaner_leftovers or self.cleaned_batches


def batch_looks_cleaned(b: Batch) -> bool:
    """``MemoryRecords.filterTo`` keeps a batch's base/last offsets while dropping records,
    stamps delete horizons, and leaves empty headers (``DefaultRecordBatch.writeEmptyHeader``)."""
    if b.magic < 2:
        return False
    return b.has_delete_horizon or b.count == 0 or (
        b.count is not None and b.count < b.last_offset - b.base_offset + 1)


def classify_gap(path: str, prev_last: int, next_base: int, position: int | None,
                 evidence: CompactionEvidence, *, between_segments: bool) -> Finding | None:
    """Offsets must run on: ``next_base == prev_last + 1``. Higher is a gap, which the cleaner
    explains when there is evidence of it (``offset_gap_compaction``) and is a hole otherwise;
    lower is an overlap, which Kafka never writes (``LogSegment.append`` rejects it)."""
    where = "between segments" if between_segments else "between batches"
    if next_base == prev_last + 1:
        return None
    if next_base <= prev_last:
        return Finding("offset_overlap", Severity.ERROR, path,
                       f"offsets overlap {where}: {next_base} follows {prev_last}",
                       position=position, offset=next_base)
    missing = next_base - prev_last - 1
    if evidence.any:
        return Finding("offset_gap_compaction", Severity.INFO, path,
                       f"{missing} offset(s) {prev_last + 1}..{next_base - 1} absent {where}; "
                       "the partition shows signs of compaction", position=position,
                       offset=prev_last + 1)
    return Finding("offset_hole", Severity.WARNING, path,
                   f"{missing} offset(s) {prev_last + 1}..{next_base - 1} missing {where} "
                   "with no sign of compaction", position=position, offset=prev_last + 1)


@dataclass(frozen=True, slots=True)
class BatchTable:
    """The batches of one segment as parallel arrays (positions ascending): what the index
    checks need, at 32 bytes a batch instead of a Python object each."""

    position: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    max_timestamp: np.ndarray
    leader_epoch: np.ndarray

    @classmethod
    def of(cls, batches: Iterable[Batch]) -> BatchTable:
        cols: list[array] = [array("q") for _ in range(5)]
        for b in batches:
            cols[0].append(b.position)
            cols[1].append(b.base_offset)
            cols[2].append(b.last_offset)
            cols[3].append(b.max_timestamp)
            cols[4].append(b.partition_leader_epoch)
        return cls(*(np.frombuffer(c, dtype=np.int64) if len(c) else np.zeros(0, np.int64)
                     for c in cols))

    def index_at(self, position: int) -> int | None:
        i = int(np.searchsorted(self.position, position))
        return i if i < len(self.position) and self.position[i] == position else None


def offset_continuity(path: str, table: BatchTable, evidence: CompactionEvidence,
                      *, segment_base: int, previous_last: int | None) -> list[Finding]:
    """Gaps and overlaps inside one segment, and against the previous segment's end."""
    findings = []
    last = previous_last
    for i in range(len(table.position)):
        base, position = int(table.base_offset[i]), int(table.position[i])
        if base < segment_base:
            findings.append(Finding(
                "batch_below_segment_base", Severity.ERROR, path,
                f"batch base offset {base} is below the segment's base offset {segment_base} "
                "(its file name)", position=position, offset=base))
        if last is not None:
            f = classify_gap(path, last, base, position, evidence, between_segments=i == 0)
            if f is not None:
                findings.append(f)
        last = int(table.last_offset[i]) if last is None else max(last,
                                                                   int(table.last_offset[i]))
    return findings


#: How many batches after an entry's position a follower's single append may have spanned.
MAX_APPEND_BATCHES = 64


def offset_index_vs_log(path: str, entries: Iterable[tuple[int, int]],
                        table: BatchTable) -> list[Finding]:
    """Every ``.index`` entry must point at the start of a batch, and name that append's last
    offset (``LogSegment.append`` writes ``(largestOffset, physicalPosition)``; pre-2.0
    brokers wrote the first offset). ``DumpLogSegments`` compares with the first batch's last
    offset at the position (KAFKA-7487); a follower's multi-batch append can index a later
    batch's last offset, so an offset ending one of the next batches is accepted too."""
    findings = []
    for offset, position in entries:
        i = table.index_at(position)
        if i is None:
            findings.append(Finding(
                "index_entry_not_at_batch", Severity.ERROR, path,
                f"index entry for offset {offset} points at byte {position}, which is not the "
                "start of a batch", position=position, offset=offset))
            continue
        if offset in (table.last_offset[i], table.base_offset[i]) or \
                offset in table.last_offset[i:i + MAX_APPEND_BATCHES]:
            continue
        findings.append(Finding(
            "index_entry_mismatch", Severity.ERROR, path,
            f"index says offset {offset} starts at byte {position}, but the batch there holds "
            f"{table.base_offset[i]}..{table.last_offset[i]}", position=position,
            offset=offset))
    return findings


def time_index_vs_log(path: str, entries: Iterable[tuple[int, int]],
                      table: BatchTable) -> list[Finding]:
    """A ``.timeindex`` entry ``(T, O)`` says: the largest timestamp up to offset O is T, and
    O is the last offset of the batch holding it (``LogSegment.maxTimestampAndOffsetSoFar``).
    Checked as ``DumpLogSegments`` does (the batch ending at O has max timestamp T), plus the
    running-max meaning."""
    findings = []
    running = np.maximum.accumulate(table.max_timestamp) if len(table.max_timestamp) else None
    for ts, offset in entries:
        hits = np.flatnonzero(table.last_offset == offset)
        if not len(hits):
            findings.append(Finding(
                "timeindex_offset_not_in_log", Severity.ERROR, path,
                f"time index entry ({ts}, {offset}): no batch ends at offset {offset}",
                offset=offset))
            continue
        i = int(hits[0])
        if table.max_timestamp[i] != ts:
            findings.append(Finding(
                "timeindex_entry_mismatch", Severity.ERROR, path,
                f"time index says {ts} at offset {offset}; that batch's max timestamp is "
                f"{table.max_timestamp[i]}", position=int(table.position[i]), offset=offset))
        elif running is not None and running[i] != ts:
            findings.append(Finding(
                "timeindex_not_running_max", Severity.WARNING, path,
                f"time index says the largest timestamp up to offset {offset} is {ts}, the log "
                f"has {running[i]} there", offset=offset))
    return findings


def leader_epochs(path: str, tables: Sequence[BatchTable],
                  checkpoint: Sequence[EpochEntry] | None) -> list[Finding]:
    """Batch leader epochs only grow along the log, and each epoch's first batch starts where
    ``leader-epoch-checkpoint`` says the epoch started (``LeaderEpochFileCache.assign`` records
    the first offset appended in each new epoch). Legacy batches carry no epoch (-1); epochs
    whose start was deleted by retention only need to start at or before the log's first
    batch of that epoch."""
    findings = []
    first_offset: dict[int, int] = {}
    last_epoch = -1
    for table in tables:
        for i in np.flatnonzero(table.leader_epoch >= 0):
            epoch, base = int(table.leader_epoch[i]), int(table.base_offset[i])
            if epoch < last_epoch:
                findings.append(Finding(
                    "leader_epoch_decreasing", Severity.ERROR, path,
                    f"batch at offset {base} has leader epoch {epoch} after epoch "
                    f"{last_epoch}", position=int(table.position[i]), offset=base))
            last_epoch = max(last_epoch, epoch)
            first_offset.setdefault(epoch, base)
    if checkpoint is None:
        return findings
    start_of = {e.epoch: e.start_offset for e in checkpoint}
    for epoch, offset in sorted(first_offset.items()):
        if epoch not in start_of:
            findings.append(Finding(
                "leader_epoch_not_in_checkpoint", Severity.WARNING, path,
                f"epoch {epoch} (first at offset {offset}) is missing from "
                "leader-epoch-checkpoint", offset=offset))
        elif start_of[epoch] > offset:
            findings.append(Finding(
                "leader_epoch_start_mismatch", Severity.WARNING, path,
                f"leader-epoch-checkpoint says epoch {epoch} starts at {start_of[epoch]}, "
                f"but a batch of that epoch is at offset {offset}", offset=offset))
    return findings
