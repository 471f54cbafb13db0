"""Driver-side planning: which bytes of which segments each Spark task reads.

Planning looks only at names, sizes and indexes (DESIGN.md §2), never at the records: the
walk lists partition directories, the offset index maps offsets to batch-start positions (an
entry ``(offset, position)`` is the last offset of the append that starts at ``position``,
``LogSegment.append``), and the time index maps timestamps to offsets
(``Log.fetchOffsetByTimestamp`` → ``LogSegment.findOffsetByTimestamp``: the index, then a short
forward scan of the batches after the indexed position, exactly as a broker answers
``ListOffsets``).

Work is cut so that big and small trees both keep every core busy. A Spark task costs ~40 ms of
fixed overhead here, so small segments are packed together, and a large segment is split at
positions taken from its offset index (each one a batch boundary, so no batch is guessed at or
cut). A task owns the batches whose *start* lies in its ``[start, end)`` byte range, which
keeps ownership exact even if an index lied about a boundary (see :mod:`.scan`).

Everything a task carries is plain data (paths, numbers, tuples): it is pickled to executors.
"""

from __future__ import annotations

import fnmatch
import math
import os
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, replace

from pyspark.sql.datasource import InputPartition

from pyspark_kafkalog.options import EARLIEST, LATEST, Level, OptionError, ReadOptions
from pyspark_kafkalog.pushdown import Constraints
from segtools.analysis.transactions import AbortedRange, aborted_ranges
from segtools.errors import SegtoolsError
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.logdirs import LogDir, walk
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.seek import seek_timestamp
from segtools.storage.segment import Segment

#: Below this many bytes of work per task, the ~40 ms task overhead dominates (notes §5).
MIN_TASK_BYTES = 8 * 1024 * 1024
#: A shallow walk (batch headers and CRCs) costs about this fraction of a deep decode per byte,
#: so segment and batch levels pack this many times more bytes into one task.
SHALLOW_COST_DIVISOR = 8
#: Opening a segment and its indexes, in byte equivalents: many tiny segments still spread.
RANGE_COST = 64 * 1024


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition directory and what its log dir's checkpoints say about it."""

    log_dir: str
    path: str
    topic: str
    partition: int
    high_watermark: int | None = None
    log_start_offset: int | None = None
    recovery_point: int | None = None
    cleaner_offset: int | None = None


@dataclass(frozen=True, slots=True)
class ByteRange:
    """The batches of one segment whose start position lies in ``[start, end)``.

    ``start_offset_hint`` is the offset-index entry found at ``start`` (the batch there must not
    begin after it); ``min_offset``/``max_offset`` (inclusive/exclusive) bound the rows;
    ``min_timestamp`` is a pushed-filter hint: batches whose max timestamp is below it are
    skipped. ``aborted`` holds the aborted transactions overlapping this segment.
    """

    partition: PartitionInfo
    files: SegmentFiles
    is_active: bool
    start: int
    end: int
    start_offset_hint: int | None = None
    min_offset: int | None = None
    max_offset: int | None = None
    min_timestamp: int | None = None
    aborted: tuple[AbortedRange, ...] = ()

    @property
    def size(self) -> int:
        return self.end - self.start


class ReadTask(InputPartition):
    """One Spark task: byte ranges to read, in order. Plain data, pickled to an executor."""

    def __init__(self, index: int, ranges: tuple[ByteRange, ...]):
        super().__init__(index)
        self.index = index
        self.ranges = ranges

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.ranges)

    def __repr__(self) -> str:
        return f"ReadTask({self.index}, {len(self.ranges)} ranges, {self.bytes} bytes)"


# ------------------------------------------------------------------------------ the tree


def walk_tree(opts: ReadOptions) -> list[LogDir]:
    """The log dirs under the given paths; a missing path or a tree without any partition is
    an error that names the path (the same rule as the CLI's ``open_tree``)."""
    log_dirs, loose = walk(opts.paths)
    for f in loose:
        if f.code == "path_not_found":
            raise SegtoolsError(f"kafkalog: {f.path}: no such file or directory", path=f.path)
    if not any(d.partitions for d in log_dirs):
        where = ", ".join(opts.paths)
        raise SegtoolsError(f"kafkalog: {where}: no Kafka partitions found here (expected "
                            f"log dirs, partition dirs or .log segment files)")
    return log_dirs


def partition_info(log_dir: LogDir, pdir: PartitionDir) -> PartitionInfo:
    """Name and checkpoints of a partition directory. The log dir's checkpoints describe the
    live replica only, so a ``-delete``/``-future``/``-stray`` directory gets none."""
    if pdir.name is not None:
        topic, partition = pdir.name.topic, pdir.name.partition
    else:  # Kafka refuses such a directory; keep its data visible under its raw name
        topic, partition = pdir.path.name, -1
    if pdir.name is None or pdir.name.state.value != "live":
        return PartitionInfo(str(log_dir.path), str(pdir.path), topic, partition)
    tp = (topic, partition)
    return PartitionInfo(str(log_dir.path), str(pdir.path), topic, partition,
                         log_dir.high_watermarks.get(tp), log_dir.log_start_offsets.get(tp),
                         log_dir.recovery_points.get(tp), log_dir.cleaner_offsets.get(tp))


def _selected(opts: ReadOptions, pdir: PartitionDir, info: PartitionInfo,
              constraints: Constraints | None) -> bool:
    state = pdir.name.state.value if pdir.name is not None else "live"
    if state not in opts.partition_states:
        return False
    if not any(fnmatch.fnmatchcase(info.topic, pattern) for pattern in opts.topics):
        return False
    return constraints is None or constraints.accepts(info.topic, info.partition)


# ------------------------------------------------------------------------ offset bounds


def _usable(index: OffsetIndex | TimeIndex | None) -> bool:
    return index is not None and index.trusted and index.valid_entries > 0


def _open_offset_index(files: SegmentFiles) -> OffsetIndex | None:
    return (OffsetIndex(files.index, files.base_offset, files.log_size)
            if files.index is not None else None)


def _open_time_index(files: SegmentFiles) -> TimeIndex | None:
    return TimeIndex(files.timeindex, files.base_offset) if files.timeindex is not None else None


def offset_for_timestamp(segments: tuple[SegmentFiles, ...], target_ms: int) -> int | None:
    """``Log.fetchOffsetByTimestamp``: the offset of the first record whose timestamp is at or
    after ``target_ms``, or None when no record is.

    Segments whose largest timestamp (the closed segment's final time-index entry) is below the
    target are skipped without being opened, as Kafka skips them; the last segment is always
    searched, since an active segment's index lags its data. Inside a segment,
    :func:`segtools.storage.seek.seek_timestamp` does the broker's index lookup and short scan.
    """
    for i, files in enumerate(segments):
        if files.log_size == 0:
            continue
        time_index = _open_time_index(files)
        offset_index = _open_offset_index(files)
        try:
            if (i < len(segments) - 1 and _usable(time_index)
                    and time_index.last_entry.timestamp < target_ms):
                continue
            with Segment(files.log) as segment:
                found = seek_timestamp(segment, offset_index if _usable(offset_index) else None,
                                       time_index if _usable(time_index) else None, target_ms)
            if found.record is not None:
                return found.record.offset
        finally:
            for index in (time_index, offset_index):
                if index is not None:
                    index.close()
    return None


def _lookup(mapping, topic: str, partition: int) -> int | None:
    return mapping.get(topic, {}).get(partition)


def offset_bounds(opts: ReadOptions, info: PartitionInfo, segments: tuple[SegmentFiles, ...],
                  constraints: Constraints | None) -> tuple[int | None, int | None] | None:
    """``[start, end)`` offsets to read from one partition (None = unbounded), or None when
    nothing can be read. Precedence as in Spark's Kafka source: a global timestamp, then the
    per-partition timestamp map, then the offset map."""
    t, p = info.topic, info.partition
    start = _lookup(opts.starting_offsets, t, p)
    start = None if start in (None, EARLIEST) else start
    start_ts = opts.starting_timestamp
    if start_ts is None:
        start_ts = _lookup(opts.starting_timestamps, t, p)
    if start_ts is not None:
        start = offset_for_timestamp(segments, start_ts)
        if start is None:  # no record at or after it: nothing to read (Spark: "latest")
            return None
    end = _lookup(opts.ending_offsets, t, p)
    end = None if end in (None, LATEST) else end
    end_ts = opts.ending_timestamp
    if end_ts is None:
        end_ts = _lookup(opts.ending_timestamps, t, p)
    if end_ts is not None:
        end = offset_for_timestamp(segments, end_ts)
    if constraints is not None:
        if constraints.offset_min is not None:
            start = constraints.offset_min if start is None else max(start, constraints.offset_min)
        if constraints.offset_max is not None:
            end = constraints.offset_max if end is None else min(end, constraints.offset_max)
    if start is not None and end is not None and start >= end:
        return None
    return start, end


def _check_named_partitions(opts: ReadOptions, found: set[tuple[str, int]]) -> None:
    """Spark's Kafka source fails on an offset map naming a partition it cannot find."""
    for name, mapping in (("startingOffsets", opts.starting_offsets),
                          ("endingOffsets", opts.ending_offsets),
                          ("startingOffsetsByTimestamp", opts.starting_timestamps),
                          ("endingOffsetsByTimestamp", opts.ending_timestamps)):
        for topic, parts in mapping.items():
            for part in parts:
                if (topic, part) not in found:
                    raise OptionError(f"kafkalog: option {name} names {topic}-{part}, which is "
                                      f"not under {', '.join(opts.paths)}")


# --------------------------------------------------------------------------- transactions


def _overlapping(aborted: tuple[AbortedRange, ...], low: int,
                 high: int | None) -> tuple[AbortedRange, ...]:
    """The aborted transactions a segment's batches can belong to. A transaction's entry
    sits in the ``.txnindex`` of the segment holding its ABORT marker and may start in an
    earlier segment, so the partition's whole list is read once (34 bytes per abort) and
    each segment gets the entries overlapping its offsets."""
    return tuple(a for a in aborted
                 if a.last_offset >= low and (high is None or a.first_offset < high))


# ------------------------------------------------------------------------------- ranges


def _first_slot_at_or_above(index: OffsetIndex, offset: int) -> int:
    """The first valid entry whose offset is >= ``offset`` (``valid_entries`` if none)."""
    entries = index.valid_entries
    return bisect_left(range(entries), offset, key=lambda slot: index.entry(slot).offset)


def _segment_range(info: PartitionInfo, files: SegmentFiles, is_active: bool,
                   next_base: int | None, start: int | None, end: int | None,
                   constraints: Constraints | None,
                   aborted: tuple[AbortedRange, ...]) -> ByteRange | None:
    """The byte range of one segment that can hold offsets in ``[start, end)``."""
    if start is not None and next_base is not None and next_base <= start:
        return None
    if end is not None and files.base_offset >= end:
        return None
    ts_min = constraints.timestamp_min_ms if constraints is not None else None
    time_index = _open_time_index(files) if ts_min is not None else None
    offset_index = _open_offset_index(files)
    try:
        low = start
        if _usable(time_index):
            if not is_active and time_index.last_entry.timestamp < ts_min:
                return None  # every record of this closed segment is older than the filter
            indexed = time_index.lookup(ts_min - 1)
            if indexed.timestamp >= 0:  # records up to indexed.offset are all older
                low = indexed.offset + 1 if low is None else max(low, indexed.offset + 1)
        position, hint, stop = 0, None, files.log_size
        if _usable(offset_index):
            if low is not None and low > files.base_offset:
                found = offset_index.lookup(low)
                if found.position > 0:
                    position, hint = found.position, found.offset
            if end is not None:
                slot = _first_slot_at_or_above(offset_index, end)
                if slot + 1 < offset_index.valid_entries:
                    stop = offset_index.entry(slot + 1).position
    finally:
        for index in (time_index, offset_index):
            if index is not None:
                index.close()
    if position >= stop:
        return None
    return ByteRange(info, files, is_active, position, stop, hint, low, end, ts_min,
                     _overlapping(aborted, files.base_offset, next_base))


def partition_ranges(opts: ReadOptions, info: PartitionInfo, pdir: PartitionDir,
                     constraints: Constraints | None) -> Iterator[ByteRange]:
    """The byte ranges of one partition's segments that the options let through."""
    segments = pdir.segments
    if opts.level is Level.SEGMENTS:  # summaries describe whole segments
        for i, files in enumerate(segments):
            yield ByteRange(info, files, i == len(segments) - 1, 0, files.log_size)
        return
    bounds = offset_bounds(opts, info, segments, constraints)
    if bounds is None:
        return
    start, end = bounds
    # the brokers' fetch path: aborted transactions from the .txnindex files, not the log
    aborted = tuple(aborted_ranges(pdir, from_txnindex=True)) if opts.read_committed else ()
    for i, files in enumerate(segments):
        if files.log_size == 0:
            continue
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        piece = _segment_range(info, files, i == len(segments) - 1, next_base, start, end,
                               constraints, aborted)
        if piece is not None:
            yield piece


# ------------------------------------------------------------------------------ packing


def _split(piece: ByteRange, wanted: list[int]) -> list[ByteRange]:
    """Cut a range near the byte positions in ``wanted``, each time at the first offset-index
    entry at or after it: the start of an append, so of a batch
    (``OffsetIndex.fetchUpperBoundOffset``)."""
    if not wanted or piece.files.index is None:
        return [piece]
    index = _open_offset_index(piece.files)
    try:
        if not _usable(index):
            return [piece]
        cuts: list[tuple[int, int]] = []
        for want in wanted:
            entry = index.fetch_upper_bound_offset(want)
            if entry is None or entry.position >= piece.end:
                break
            if entry.position > (cuts[-1][0] if cuts else piece.start):
                cuts.append((entry.position, entry.offset))
    finally:
        index.close()
    out = []
    start, hint = piece.start, piece.start_offset_hint
    for position, offset in cuts:
        out.append(replace(piece, start=start, end=position, start_offset_hint=hint))
        start, hint = position, offset
    out.append(replace(piece, start=start, start_offset_hint=hint))
    return out


def task_count(total_cost: int, opts: ReadOptions, cores: int) -> int:
    """How many tasks: ``minPartitions`` when given, one per ``maxPartitionBytes``, and, for a
    tree big enough to pay each task's overhead, two per core (so a slow task is not alone)."""
    wanted = max(opts.min_partitions or 1, math.ceil(total_cost / opts.max_partition_bytes))
    return max(wanted, min(2 * cores, math.ceil(total_cost / MIN_TASK_BYTES)))


def _cost(piece: ByteRange, level: Level) -> int:
    """A range's work in deep-decoded-byte equivalents: its bytes (cheaper per byte for the
    shallow levels) plus the fixed cost of opening a segment and its indexes."""
    per_byte = 1 if level is Level.RECORDS else SHALLOW_COST_DIVISOR
    return piece.size // per_byte + RANGE_COST


def pack(pieces: list[ByteRange], opts: ReadOptions, cores: int | None = None) -> list[ReadTask]:
    """Cut the ranges, in tree order (so a task reads neighbouring files), into tasks of
    about equal cost: the total is divided into equal shares, a range that crosses a share
    boundary is split at the index entry there, and each piece goes to the share its middle
    falls in. Segment summaries are whole-segment work and are never split."""
    if not pieces:
        return []
    level = opts.level
    total = sum(_cost(p, level) for p in pieces)
    tasks = task_count(total, opts, cores or os.cpu_count() or 1)
    share = total / tasks
    groups: list[list[ByteRange]] = [[] for _ in range(tasks)]
    done = 0.0
    for piece in pieces:
        parts = [piece]
        if level is not Level.SEGMENTS and piece.size:
            per_cost = piece.size / _cost(piece, level)  # bytes per unit of cost
            first = math.floor(done / share) + 1
            wanted = [piece.start + math.ceil((k * share - done) * per_cost)
                      for k in range(first, tasks) if k * share < done + _cost(piece, level)]
            parts = _split(piece, wanted)
        for part in parts:
            cost = _cost(part, level)
            groups[min(tasks - 1, int((done + cost / 2) // share))].append(part)
            done += cost
    return [ReadTask(i, tuple(g)) for i, g in enumerate(g for g in groups if g)]


def plan(opts: ReadOptions, constraints: Constraints | None = None,
         cores: int | None = None) -> list[ReadTask]:
    """The tasks of one read: walk, select, bound by offsets and times, split and pack."""
    pieces: list[ByteRange] = []
    found: set[tuple[str, int]] = set()
    for log_dir in walk_tree(opts):
        for pdir in log_dir.partitions:
            info = partition_info(log_dir, pdir)
            found.add((info.topic, info.partition))
            if _selected(opts, pdir, info, constraints):
                pieces.extend(partition_ranges(opts, info, pdir, constraints))
    _check_named_partitions(opts, found)
    return pack(pieces, opts, cores)
