"""Consistency rules across a partition's files, as pure functions over batch-table chunks.

Each rule mirrors a check Kafka makes somewhere (cited per function) or a fact of how Kafka
writes (offsets only grow; the leader epoch of batches only grows; every index entry points at
the start of an append). The rules take the walk's table one chunk at a time and carry what
they need from chunk to chunk, so a segment of millions of small batches is checked in flat
memory; the verify assembly (:mod:`segtools.analysis.verify`) feeds them, nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from segtools.decode.table import BatchTable
from segtools.findings import Finding, finding
from segtools.formats.checkpoints import EpochEntry


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


def cleaned(table: BatchTable) -> np.ndarray:
    """Batches only the cleaner writes: ``MemoryRecords.filterTo`` keeps a batch's base/last
    offsets while dropping records, stamps delete horizons, and leaves empty headers
    (``DefaultRecordBatch.writeEmptyHeader``)."""
    span = table.last_offset - table.base_offset + 1
    return table.is_v2 & (table.has_delete_horizon | (table.count == 0) | (table.count < span))


def classify_gap(path: str, prev_last: int, next_base: int, position: int | None,
                 evidence: CompactionEvidence, *, between_segments: bool) -> Finding | None:
    """Offsets must run on: ``next_base == prev_last + 1``. Higher is a gap, which the cleaner
    explains when there is evidence of it (``offset_gap_compaction``) and is a hole otherwise;
    lower is an overlap, which Kafka never writes (``LogSegment.append`` rejects it)."""
    where = "between segments" if between_segments else "between batches"
    if next_base == prev_last + 1:
        return None
    if next_base <= prev_last:
        return finding("offset_overlap", path,
                       f"offsets overlap {where}: {next_base} follows {prev_last}",
                       position=position, offset=next_base)
    missing = next_base - prev_last - 1
    if evidence.any:
        return finding("offset_gap_compaction", path,
                       f"{missing} offset(s) {prev_last + 1}..{next_base - 1} absent {where}; "
                       "the partition shows signs of compaction", position=position,
                       offset=prev_last + 1)
    return finding("offset_hole", path,
                   f"{missing} offset(s) {prev_last + 1}..{next_base - 1} missing {where} "
                   "with no sign of compaction", position=position, offset=prev_last + 1)


@dataclass
class OffsetSteps:
    """Where one segment's offsets do not run on (gaps and overlaps, classified once the
    whole partition's compaction evidence is known), and batches below the segment's base."""

    path: str
    segment_base: int
    previous_last: int | None  # the previous segment's last offset (running max)
    below_base: list[Finding] = field(default_factory=list)
    segment_last: int | None = None  # the largest last offset of this segment's batches
    _steps: list[np.ndarray] = field(default_factory=list)  # rows: prev_last, next, pos, first
    _first: bool = True

    def add(self, table: BatchTable) -> None:
        n = len(table)
        if not n:
            return
        for i in np.flatnonzero(table.base_offset < self.segment_base):
            base = int(table.base_offset[i])
            self.below_base.append(finding(
                "batch_below_segment_base", self.path,
                f"batch base offset {base} is below the segment's base offset "
                f"{self.segment_base} (its file name)", position=int(table.position[i]),
                offset=base))
        running = np.maximum.accumulate(table.last_offset)
        prev = np.empty(n, np.int64)
        prev[1:] = running[:-1]
        known = np.ones(n, bool)
        if self.previous_last is None:
            known[0] = False
            prev[0] = 0
        else:
            prev[0] = self.previous_last
            prev[1:] = np.maximum(prev[1:], self.previous_last)
        odd = known & (table.base_offset != prev + 1)
        if odd.any():
            rows = np.flatnonzero(odd)
            first = np.zeros(len(rows), np.int64)
            if self._first:
                first[rows == 0] = 1
            self._steps.append(np.stack([prev[rows], table.base_offset[rows],
                                         table.position[rows], first]))
        last = int(running[-1])
        self.segment_last = last if self.segment_last is None else max(self.segment_last, last)
        self.previous_last = last if self.previous_last is None else max(self.previous_last,
                                                                         last)
        self._first = False

    def add_steps(self, steps: Sequence[tuple[int, int, int, int]]) -> None:
        """Steps found elsewhere (the compiled check of a small segment): ``(previous last,
        base, position, 1 for the segment's first batch)`` each, in file order."""
        self._steps.append(np.array(steps, np.int64).T)

    def findings(self, evidence: CompactionEvidence) -> list[Finding]:
        out = list(self.below_base)
        for steps in self._steps:
            for prev, nxt, position, first in steps.T.tolist():
                f = classify_gap(self.path, prev, nxt, position, evidence,
                                 between_segments=bool(first))
                if f is not None:
                    out.append(f)
        out.sort(key=lambda f: (f.position or 0, f.code != "batch_below_segment_base"))
        return out


class OffsetIndexCheck:
    """Every ``.index`` entry ``(O, P)`` must point at the start of a batch, and a lookup of O
    that starts reading at P must find it. ``LogSegment.append(largestOffset, ..., records)``
    writes ``(largestOffset, position of the append)``: for a leader's one-batch append that is
    the batch's last offset (before 2.0 its first offset). An append of several batches names
    a later batch: a follower's fetch, and the log cleaner, whose ``cleanInto`` appends each
    chunk it read with ``MemoryRecords.FilterResult.maxOffset()``, the largest offset it kept.
    For a batch the cleaner rebuilt that is the last record it kept, which can lie inside the
    batch, below its last offset (``filterTo`` keeps the batch's last offset in the header).
    So an entry may name the batch at P (its first or last offset, or an offset inside it) or
    an offset inside any later batch; lookups stay correct (``OffsetIndex.lookup`` returns the
    greatest entry at or below the target and the read scans forward from its position).
    ``DumpLogSegments --verify-index`` compares only with the first batch at P (KAFKA-7487), so
    it reports the cleaner's and followers' entries as mismatches; segtools does not.

    Entries are in position order (an index whose positions do not increase is not trusted,
    and not checked); each chunk's entries are checked when the next chunk arrives, and an
    entry naming an offset past its batch waits, in flat memory, for the batch that holds it."""

    def __init__(self, path: str, offsets: np.ndarray, positions: np.ndarray):
        self.path = path
        self.offsets = offsets
        self.positions = positions
        self.done = 0
        self.pending: BatchTable | None = None
        self.ahead: list[tuple[int, int, int, int]] = []  # offset, position, base, last at P
        self.found: list[Finding] = []

    def add(self, table: BatchTable) -> None:
        if not len(table):
            return
        if self.pending is not None:
            self._check(self.pending, int(table.position[0]))
        self.ahead = self._resolve(self.ahead, table)
        self.pending = table

    def finish(self) -> list[Finding]:
        if self.pending is not None:
            self._check(self.pending, None)
        elif self.done < len(self.offsets):
            self._check(BatchTable.empty(), None)
        for offset, position, base, last in self.ahead:
            self._mismatch(offset, position, base, last, "; no batch after it reaches that offset")
        self.ahead = []
        return self.found

    def _mismatch(self, offset: int, position: int, base: int, last: int, why: str = "") -> None:
        self.found.append(finding(
            "index_entry_mismatch", self.path,
            f"index says offset {offset} starts at byte {position}, but the batch there holds "
            f"{base}..{last}{why}", position=position, offset=offset))

    def _resolve(self, entries: list[tuple[int, int, int, int]], t: BatchTable,
                 after: np.ndarray | None = None) -> list[tuple[int, int, int, int]]:
        """Match entries naming an offset past their own batch with the first batch of ``t``
        (after row ``after[e]`` for entry ``e``, when given) that reaches the offset: it must
        hold it (an offset in no batch at all is not one Kafka writes). Returns the entries
        still waiting for a later batch."""
        if not entries or not len(t):
            return entries
        want = np.fromiter((e[0] for e in entries), np.int64, len(entries))
        k = np.searchsorted(np.maximum.accumulate(t.last_offset), want, side="left")
        found = k < len(t)
        rows = np.where(found, k, 0)
        bad = found & (t.base_offset[rows] > want)
        if after is not None:
            bad |= found & (rows <= after)
        for e in np.flatnonzero(bad).tolist():
            self._mismatch(*entries[e], f"; offset {entries[e][0]} is in no batch after it")
        return [entries[e] for e in np.flatnonzero(~found).tolist()]

    def _check(self, t: BatchTable, before: int | None) -> None:
        stop = len(self.positions) if before is None else int(
            np.searchsorted(self.positions, before, side="left", sorter=None))
        stop = max(stop, self.done)
        offsets, positions = self.offsets[self.done:stop], self.positions[self.done:stop]
        self.done = stop
        if not len(offsets):
            return
        i = np.searchsorted(t.position, positions)
        inside = i < len(t)
        at = np.zeros(len(i), bool)
        at[inside] = t.position[i[inside]] == positions[inside]
        j = np.where(at, i, 0)
        ok = at & ((offsets >= t.base_offset[j]) & (offsets <= t.last_offset[j])
                   if len(t) else False)
        later: list[tuple[int, int, int, int]] = []
        rows: list[int] = []
        for k in np.flatnonzero(~ok).tolist():
            offset, position = int(offsets[k]), int(positions[k])
            if not at[k]:
                self.found.append(finding(
                    "index_entry_not_at_batch", self.path,
                    f"index entry for offset {offset} points at byte {position}, which is "
                    "not the start of a batch", position=position, offset=offset))
                continue
            row = int(i[k])
            base, last = int(t.base_offset[row]), int(t.last_offset[row])
            if offset < base:
                self._mismatch(offset, position, base, last)
                continue
            later.append((offset, position, base, last))
            rows.append(row)
        self.ahead += self._resolve(later, t, np.asarray(rows, np.int64))


class TimeIndexCheck:
    """A ``.timeindex`` entry ``(T, O)`` says: the largest timestamp up to offset O is T, and
    O is the last offset of the batch holding it (``LogSegment.maxTimestampAndOffsetSoFar``).
    Checked as ``DumpLogSegments`` does (the batch ending at O has max timestamp T), plus the
    running-max meaning. Entries are matched to the first batch ending at their offset, chunk
    by chunk; what never matches is reported at the end.

    The cleaner writes a new time index for the segment it builds, from the batches it kept
    (``LogCleaner.cleanInto`` appends with ``FilterResult.shallowOffsetOfMaxTimestamp``, the
    kept batch's last offset): a batch it rebuilt keeps its original last offset
    (``overrideLastOffset``) even when that record is gone, so the entry still ends a batch
    and is matched here like any other.

    Two kinds of entries are healthy although no batch ends at their offset. Leaders up to 3.6
    recorded the offset of the first *record* holding an uncompressed batch's largest timestamp
    (``LogValidator.assignOffsetsNonCompressed``; 3.7 names the batch's last offset, apache/kafka
    e905ef1edfb, kept by KAFKA-16310), which lies inside its batch. And on a compacted partition
    an entry naming an offset no batch covers is harmless: a broker looking the timestamp up
    scans forward from the indexed position (``LogSegment.findOffsetByTimestamp``) and finds the
    next batch (Kafka's own cleaner does not write such entries). Only an entry past the last
    batch points at data that is not there."""

    def __init__(self, path: str, timestamps: np.ndarray, offsets: np.ndarray):
        self.path = path
        self.timestamps = timestamps
        self.offsets = offsets
        self.open = np.arange(len(offsets))
        self.running = -(2**63)
        self.last_offset = -1
        self.inside = 0  # entries in the older, record-offset convention
        self.found: list[tuple[int, Finding]] = []

    def add(self, t: BatchTable) -> None:
        if not len(t):
            return
        running = np.maximum(np.maximum.accumulate(t.max_timestamp), self.running)
        self.running = int(running[-1])
        self.last_offset = max(self.last_offset, int(t.last_offset.max()))
        if not len(self.open):
            return
        self._inside(t)
        if not len(self.open):
            return
        order = np.argsort(t.last_offset, kind="stable")
        ends = t.last_offset[order]
        want = self.offsets[self.open]
        j = np.searchsorted(ends, want)
        hit = j < len(ends)
        hit[hit] = ends[j[hit]] == want[hit]
        for k in np.flatnonzero(hit).tolist():
            entry = int(self.open[k])
            row = int(order[j[k]])
            ts, offset = int(self.timestamps[entry]), int(self.offsets[entry])
            if t.max_timestamp[row] != ts:
                self.found.append((entry, finding(
                    "timeindex_entry_mismatch", self.path,
                    f"time index says {ts} at offset {offset}; that batch's max timestamp is "
                    f"{t.max_timestamp[row]}", position=int(t.position[row]), offset=offset)))
            elif running[row] != ts:
                self.found.append((entry, finding(
                    "timeindex_not_running_max", self.path,
                    f"time index says the largest timestamp up to offset {offset} is {ts}, the "
                    f"log has {running[row]} there", offset=offset)))
        self.open = self.open[~hit]

    def _inside(self, t: BatchTable) -> None:
        """Entries naming an offset inside a batch (not its last) whose max timestamp is the
        entry's: the older convention."""
        order = np.argsort(t.base_offset, kind="stable")
        bases = t.base_offset[order]
        want = self.offsets[self.open]
        j = np.searchsorted(bases, want, side="right") - 1
        ok = j >= 0
        rows = order[np.where(ok, j, 0)]
        ok &= (want < t.last_offset[rows]) & (t.max_timestamp[rows] == self.timestamps[self.open])
        self.inside += int(ok.sum())
        self.open = self.open[~ok]

    def finish(self, compacted: bool = False) -> list[Finding]:
        """``compacted``: the partition shows the cleaner's work, which explains entries that
        name removed offsets."""
        removed = []
        for entry in self.open.tolist():
            ts, offset = int(self.timestamps[entry]), int(self.offsets[entry])
            if offset > self.last_offset:
                self.found.append((entry, finding(
                    "timeindex_offset_not_in_log", self.path,
                    f"time index entry ({ts}, {offset}) points past the last batch (offset "
                    f"{self.last_offset}): a lookup of that time finds no data", offset=offset)))
            elif compacted:
                removed.append(offset)
            else:
                self.found.append((entry, finding(
                    "timeindex_offset_missing", self.path,
                    f"time index entry ({ts}, {offset}): no batch holds offset {offset} and "
                    "nothing shows the cleaner removed it; a lookup still scans forward to the "
                    "next batch", offset=offset)))
        self.found.sort(key=lambda item: item[0])
        out = [f for _, f in self.found]
        if removed:
            out.append(finding(
                "timeindex_offset_cleaned", self.path,
                f"{len(removed)} time index entr{'y names' if len(removed) == 1 else 'ies name'}"
                f" offsets the cleaner removed ({', '.join(map(str, removed[:5]))}"
                f"{', ...' if len(removed) > 5 else ''}); a lookup scans forward from the "
                "indexed position to the next batch, as the broker does: harmless",
                offset=removed[0]))
        if self.inside:
            out.append(record_offset_convention(self.path, self.inside))
        return out


def record_offset_convention(path: str, entries: int) -> Finding:
    """``entries`` time index entries of one file in the older record-offset convention
    (:class:`TimeIndexCheck`)."""
    return finding(
        "timeindex_record_offset_convention", path,
        f"{entries} time index entr{'y names' if entries == 1 else 'ies name'} "
        "the offset of the record holding its batch's largest timestamp rather than "
        "the batch's last offset, as older brokers wrote them: healthy")


class LeaderEpochs:
    """Batch leader epochs only grow along the log, and each epoch's first batch starts where
    ``leader-epoch-checkpoint`` says the epoch started (``LeaderEpochFileCache.assign`` records
    the first offset appended in each new epoch). Legacy batches carry no epoch (-1); epochs
    whose start was deleted by retention only need to start at or before the log's first
    batch of that epoch."""

    def __init__(self, path: str):
        self.path = path
        self.last_epoch = -1
        self.first_offset: dict[int, int] = {}
        self.found: list[Finding] = []

    def add(self, t: BatchTable) -> None:
        rows = np.flatnonzero(t.leader_epoch >= 0)
        if not len(rows):
            return
        epochs = t.leader_epoch[rows].astype(np.int64)
        before = np.empty(len(rows), np.int64)
        before[0] = self.last_epoch
        before[1:] = np.maximum(np.maximum.accumulate(epochs)[:-1], self.last_epoch)
        for k in np.flatnonzero(epochs < before).tolist():
            i = int(rows[k])
            base = int(t.base_offset[i])
            self.found.append(finding(
                "leader_epoch_decreasing", self.path,
                f"batch at offset {base} has leader epoch {int(epochs[k])} after epoch "
                f"{int(before[k])}", position=int(t.position[i]), offset=base))
        self.last_epoch = max(self.last_epoch, int(epochs.max()))
        unique, first = np.unique(epochs, return_index=True)
        for epoch, k in zip(unique.tolist(), first.tolist(), strict=True):
            self.first_offset.setdefault(epoch, int(t.base_offset[rows[k]]))

    def finish(self, checkpoint: Sequence[EpochEntry] | None) -> list[Finding]:
        findings = list(self.found)
        if checkpoint is None:
            return findings
        start_of = {e.epoch: e.start_offset for e in checkpoint}
        # When the log start offset moves (DeleteRecords, retention, a KRaft snapshot), Kafka
        # truncates the checkpoint from the start (LeaderEpochFileCache.truncateFromStart):
        # epochs that ended below the new start are dropped and the first kept entry is moved
        # up to it, while the batches below stay until their segment is deleted.
        first = min(checkpoint, key=lambda e: e.start_offset, default=None)
        below: list[tuple[int, int]] = []
        for epoch, offset in sorted(self.first_offset.items()):
            if first is not None and offset < first.start_offset and (
                    (epoch < first.epoch and epoch not in start_of)
                    or (epoch == first.epoch and start_of[epoch] > offset)):
                below.append((epoch, offset))
                continue
            if epoch not in start_of:
                findings.append(finding(
                    "leader_epoch_not_in_checkpoint", self.path,
                    f"epoch {epoch} (first at offset {offset}) is missing from "
                    "leader-epoch-checkpoint", offset=offset))
            elif start_of[epoch] > offset:
                findings.append(finding(
                    "leader_epoch_start_mismatch", self.path,
                    f"leader-epoch-checkpoint says epoch {epoch} starts at {start_of[epoch]}, "
                    f"but a batch of that epoch is at offset {offset}", offset=offset))
        if below:
            epochs = ", ".join(str(e) for e, _ in below)
            findings.append(finding(
                "leader_epoch_checkpoint_truncated", self.path,
                f"batches from offset {below[0][1]} up to {first.start_offset} carry epoch(s) "
                f"{epochs}, which leader-epoch-checkpoint dropped or moved when the log start "
                f"offset advanced to {first.start_offset} (truncateFromStart); normal until "
                "those batches' segment is deleted", offset=below[0][1]))
        return findings


def offset_index_vs_log(path: str, offsets: np.ndarray, positions: np.ndarray,
                        table: BatchTable) -> list[Finding]:
    """:class:`OffsetIndexCheck` over one whole table (``dump --verify-index``)."""
    check = OffsetIndexCheck(path, offsets, positions)
    check.add(table)
    return check.finish()


def time_index_vs_log(path: str, timestamps: np.ndarray, offsets: np.ndarray,
                      table: BatchTable) -> list[Finding]:
    """:class:`TimeIndexCheck` over one whole table (``dump --verify-index``)."""
    check = TimeIndexCheck(path, timestamps, offsets)
    check.add(table)
    return check.finish()
