"""Which bytes of which segments a read needs: selection, offset and time bounds, cut points.

Planning looks only at names, sizes and indexes, never at the records: the walk lists
partition directories, the offset index maps offsets to batch-start positions (an entry
``(offset, position)`` is the last offset of the append that starts at ``position``,
``LogSegment.append``), and the time index maps timestamps to offsets
(``Log.fetchOffsetByTimestamp`` -> ``LogSegment.findOffsetByTimestamp``: the index, then a short
forward scan of the batches after the indexed position, as a broker answers ``ListOffsets``).

A read owns the batches whose *start* lies in its ``[start, end)`` byte range, which keeps
ownership exact when a range is cut in two, even if an index lied about a boundary
(:mod:`segtools.fetch.rows`). Everything here is plain data: Spark pickles it to executors.
"""

from __future__ import annotations

import fnmatch
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import TYPE_CHECKING, Protocol

import lazy_loader

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import NothingToReadError, SegtoolsError
from segtools.fetch.arguments import EARLIEST, LATEST, PartitionMap
from segtools.fetch.columns import Level
from segtools.findings import Finding
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.logdirs import LogDir, walk
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.seek import seek_timestamp
from segtools.storage.segment import Segment

if TYPE_CHECKING:
    from segtools.analysis.remote_input import CopiedSegment
    from segtools.analysis.transactions import AbortedRange

#: The transactions analysis (a tenth of a second to import) only for a read_committed read:
#: every Spark executor imports this module before its first task.
_transactions = lazy_loader.load("segtools.analysis.transactions", suppress_warning=True)
#: The remote store's client (zstandard, a thread pool, an object store's SDK) likewise, only
#: for a read with a remote store.
_remote_store = lazy_loader.load("segtools.storage.remote_store", suppress_warning=True)


@dataclass(frozen=True, slots=True)
class Selection:
    """What to read: the same selectors for the Python API and the Spark source's options.

    Offsets: ``starting_offsets`` inclusive, ``ending_offsets`` exclusive (per topic and
    partition; :data:`EARLIEST`/:data:`LATEST` as in Spark's Kafka source). Timestamps: the
    offset of the first record at or after the time, found the way a broker answers
    ``ListOffsets``; a global timestamp wins over the per-partition maps."""

    paths: tuple[str, ...]
    level: Level = Level.RECORDS
    topics: tuple[str, ...] = ("*",)
    partitions: tuple[int, ...] | None = None
    partition_states: tuple[str, ...] = ("live",)
    starting_offsets: PartitionMap = field(default_factory=dict)
    ending_offsets: PartitionMap = field(default_factory=dict)
    starting_timestamps: PartitionMap = field(default_factory=dict)
    ending_timestamps: PartitionMap = field(default_factory=dict)
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_offset: int | None = None  # for every partition the maps do not name
    ending_offset: int | None = None
    include_control: bool = False
    read_committed: bool = False
    verify_crc: bool = True
    #: ``__cluster_metadata`` values as stored, sensitive configs and SCRAM credentials in
    #: them (by default they are re-encoded with those hidden, as every face shows them)
    reveal_sensitive: bool = False
    max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT
    storage_options: Mapping[str, object] | None = None  # where the paths live (locations)
    #: Kafka's LocalTieredStorage directory: a tiered partition's remote part is read too
    remote_store: str | None = None


class SelectionError(SegtoolsError, ValueError):
    """A selection naming something the tree does not have. ``field`` is the
    :class:`Selection` field at fault, so each face can name it as its caller spelled it
    (``start_offset`` in Python, ``startingOffsets`` in Spark)."""

    def __init__(self, field_name: str, what: str):
        super().__init__(f"{field_name}: {what}")
        self.field = field_name
        self.what = what


class Narrowing(Protocol):
    """Hints that can only narrow a read (Spark's pushed filters): never skip a row that
    could pass them."""

    offset_min: int | None  # inclusive
    offset_max: int | None  # exclusive
    timestamp_min_ms: int | None  # rows with an earlier timestamp cannot pass

    def accepts(self, topic: str | None, partition: int | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition directory and what its log dir's checkpoints say about it. ``topic`` and
    ``partition`` are None when the directory's name is not ``<topic>-<partition>`` (a segment
    file copied out of its partition directory): the bytes do not say which partition they
    were, so nothing here guesses."""

    log_dir: str
    path: str
    topic: str | None
    partition: int | None
    high_watermark: int | None = None
    log_start_offset: int | None = None
    recovery_point: int | None = None
    cleaner_offset: int | None = None


@dataclass(frozen=True, slots=True)
class ByteRange:
    """The batches of one segment whose start position lies in ``[start, end)``.

    ``start_offset_hint`` is the offset-index entry found at ``start`` (the batch there must not
    begin after it); ``min_offset``/``max_offset`` (inclusive/exclusive) bound the rows;
    ``min_timestamp`` is a hint: batches whose max timestamp is below it are skipped.
    ``aborted`` holds the aborted transactions overlapping this segment."""

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
    tier: str = "local"  # "remote": a segment of a tiered partition read from its store

    @property
    def size(self) -> int:
        return self.end - self.start


# ------------------------------------------------------------------------------ the tree


def walk_tree(paths: tuple[str, ...],
              storage_options: Mapping[str, object] | None = None) -> list[LogDir]:
    """The log dirs under the given paths (local, object storage or archives); a missing path
    or a tree without any partition is an error that names the path."""
    log_dirs, loose = walk(paths, storage_options)
    for f in loose:
        if f.code == "path_not_found":
            # the path in the message, which is all the API and Spark show; so not as .path too
            raise SegtoolsError(f"{f.path}: no such file or directory")
    return with_partitions(log_dirs, paths, loose)


def with_partitions(log_dirs: list[LogDir], paths: tuple[str, ...],
                    loose: Sequence[Finding] = ()) -> list[LogDir]:
    """``log_dirs``, refused when they hold no partition at all (naming the paths, and why
    nothing could be read there when a listing failed)."""
    if not any(d.partitions for d in log_dirs):
        why = NothingToReadError.of([*loose, *(f for d in log_dirs for f in d.findings)], paths)
        # the path inside the message: Spark's and the API's exceptions show only the message
        raise NothingToReadError(f"{why.path}: {why.message}")
    return log_dirs


def partition_info(log_dir: LogDir, pdir: PartitionDir) -> PartitionInfo:
    """Name and checkpoints of a partition directory. The log dir's checkpoints describe the
    live replica only, so a ``-delete``/``-future``/``-stray`` directory gets none."""
    if pdir.name is None:  # Kafka refuses such a directory; its data stays readable, unnamed
        return PartitionInfo(str(log_dir.path), str(pdir.path), None, None)
    topic, partition = pdir.name.topic, pdir.name.partition
    if pdir.name.state.value != "live":
        return PartitionInfo(str(log_dir.path), str(pdir.path), topic, partition)
    tp = (topic, partition)
    return PartitionInfo(str(log_dir.path), str(pdir.path), topic, partition,
                         log_dir.high_watermarks.get(tp), log_dir.log_start_offsets.get(tp),
                         log_dir.recovery_points.get(tp), log_dir.cleaner_offsets.get(tp))


def partition_state(pdir: PartitionDir) -> str:
    """The directory's state (``PartitionState`` value); an unnamed directory holds data the
    user pointed at, so it is read as live."""
    return pdir.name.state.value if pdir.name is not None else "live"


def selected(sel: Selection, pdir: PartitionDir, info: PartitionInfo,
             narrowing: Narrowing | None = None) -> bool:
    """Whether the selection reads this partition directory. A directory without a partition
    name (a lone segment file's) is read by a selection that names no topic nor partition:
    its topic is unknown, so no pattern but ``*`` can match it."""
    if partition_state(pdir) not in sel.partition_states:
        return False
    if info.topic is None:
        if "*" not in sel.topics or sel.partitions is not None:
            return False
    elif not any(fnmatch.fnmatchcase(info.topic, pattern) for pattern in sel.topics):
        return False
    if sel.partitions is not None and info.partition not in sel.partitions:
        return False
    return narrowing is None or narrowing.accepts(info.topic, info.partition)


# ------------------------------------------------------------------------ offset bounds


def _usable(index: OffsetIndex | TimeIndex | None) -> bool:
    return index is not None and index.trusted and index.valid_entries > 0


def _open_offset_index(files: SegmentFiles) -> OffsetIndex | None:
    return (OffsetIndex(files.index, files.base_offset, files.log_size, sealed=files.sealed)
            if files.index is not None else None)


def _open_time_index(files: SegmentFiles) -> TimeIndex | None:
    return (TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed)
            if files.timeindex is not None else None)


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
            with Segment.open(files) as segment:
                found = seek_timestamp(segment, offset_index if _usable(offset_index) else None,
                                       time_index if _usable(time_index) else None, target_ms)
            if found.record is not None:
                return found.record.offset
        finally:
            for index in (time_index, offset_index):
                if index is not None:
                    index.close()
    return None


def _lookup(mapping: PartitionMap, topic: str, partition: int) -> int | None:
    return mapping.get(topic, {}).get(partition)


def offset_bounds(sel: Selection, info: PartitionInfo, segments: tuple[SegmentFiles, ...],
                  narrowing: Narrowing | None = None) -> tuple[int | None, int | None] | None:
    """``[start, end)`` offsets to read from one partition (None = unbounded), or None when
    nothing can be read. Precedence as in Spark's Kafka source: a global timestamp, then the
    per-partition timestamp map, then the offset map."""
    t, p = info.topic, info.partition
    start = _lookup(sel.starting_offsets, t, p)
    start = sel.starting_offset if start is None else start
    start = None if start in (None, EARLIEST) else start
    start_ts = sel.starting_timestamp
    if start_ts is None:
        start_ts = _lookup(sel.starting_timestamps, t, p)
    if start_ts is not None:
        start = offset_for_timestamp(segments, start_ts)
        if start is None:  # no record at or after it: nothing to read (Spark: "latest")
            return None
    end = _lookup(sel.ending_offsets, t, p)
    end = sel.ending_offset if end is None else end
    end = None if end in (None, LATEST) else end
    end_ts = sel.ending_timestamp
    if end_ts is None:
        end_ts = _lookup(sel.ending_timestamps, t, p)
    if end_ts is not None:
        end = offset_for_timestamp(segments, end_ts)
    if narrowing is not None:
        if narrowing.offset_min is not None:
            start = narrowing.offset_min if start is None else max(start, narrowing.offset_min)
        if narrowing.offset_max is not None:
            end = narrowing.offset_max if end is None else min(end, narrowing.offset_max)
    if start is not None and end is not None and start >= end:
        return None
    return start, end


def check_named_partitions(sel: Selection, found: set[tuple[str | None, int | None]]) -> None:
    """Spark's Kafka source fails on an offset map naming a partition it cannot find; a topic
    glob or a partition number that matches no directory fails the same way here, since a read
    that silently returns nothing is a wrong answer to a typo."""
    where = ", ".join(sel.paths)
    topics = sorted({t for t, _ in found if t is not None})
    for pattern in sel.topics:
        if not any(t is not None and fnmatch.fnmatchcase(t, pattern) for t, _ in found) \
                and not (pattern == "*" and found):
            listed = ", ".join(topics[:12]) + (", ..." if len(topics) > 12 else "")
            raise SelectionError("topics", f"no topic matches {pattern!r} under {where} "
                                           f"(topics: {listed or 'none'})")
    if sel.partitions is not None:
        have = {p for t, p in found if t is not None
                and any(fnmatch.fnmatchcase(t, pattern) for pattern in sel.topics)}
        missing = [p for p in sel.partitions if p not in have]
        if missing:
            raise SelectionError("partitions", f"no partition {missing[0]} of the selected "
                                               f"topics under {where} (partitions: "
                                               f"{', '.join(map(str, sorted(have))) or 'none'})")
    for name, mapping in (("starting_offsets", sel.starting_offsets),
                          ("ending_offsets", sel.ending_offsets),
                          ("starting_timestamps", sel.starting_timestamps),
                          ("ending_timestamps", sel.ending_timestamps)):
        for topic, parts in mapping.items():
            for part in parts:
                if (topic, part) not in found:
                    raise SelectionError(name, f"names {topic}-{part}, which is not under "
                                               f"{where}")


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
                   narrowing: Narrowing | None,
                   aborted: tuple[AbortedRange, ...]) -> ByteRange | None:
    """The byte range of one segment that can hold offsets in ``[start, end)``. An index is
    opened only when a bound needs it: a whole read of a large tree opens none."""
    if start is not None and next_base is not None and next_base <= start:
        return None
    if end is not None and files.base_offset >= end:
        return None
    ts_min = narrowing.timestamp_min_ms if narrowing is not None else None
    low = start
    if ts_min is not None:
        time_index = _open_time_index(files)
        try:
            if _usable(time_index):
                if not is_active and time_index.last_entry.timestamp < ts_min:
                    return None  # every record of this closed segment is older than the filter
                indexed = time_index.lookup(ts_min - 1)
                if indexed.timestamp >= 0:  # records up to indexed.offset are all older
                    low = indexed.offset + 1 if low is None else max(low, indexed.offset + 1)
        finally:
            if time_index is not None:
                time_index.close()
    position, hint, stop = 0, None, files.log_size
    if (low is not None and low > files.base_offset) or end is not None:
        offset_index = _open_offset_index(files)
        try:
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
            if offset_index is not None:
                offset_index.close()
    if position >= stop:
        return None
    return ByteRange(info, files, is_active, position, stop, hint, low, end, ts_min,
                     _overlapping(aborted, files.base_offset, next_base) if aborted else ())


def partition_ranges(sel: Selection, info: PartitionInfo, pdir: PartitionDir,
                     narrowing: Narrowing | None = None,
                     remote: tuple[SegmentFiles, ...] = ()) -> Iterator[ByteRange]:
    """The byte ranges of one partition's segments that the selection lets through; with
    ``remote`` (:func:`remote_part`) the log starts with those segments of the store."""
    for piece in _log_ranges(sel, info, remote + pdir.segments, pdir, narrowing):
        yield replace(piece, tier="remote") if any(piece.files is r for r in remote) else piece


def remote_part(copied: Sequence[CopiedSegment], local: tuple[SegmentFiles, ...],
                level: Level) -> tuple[SegmentFiles, ...]:
    """The remote part of a tiered partition's log as files in the store, from the copied
    segments ``scan`` and ``tiered`` list too (:func:`~segtools.analysis.remote_input.
    copied_segments`). The segments level lists every one of them, as ``scan`` does; a read
    of batches or records takes those that end below the first local offset, each after the
    last, so the two tiers read as one log with no offset twice."""
    if level is Level.SEGMENTS:
        return tuple(c.files for c in copied)
    first_local = local[0].base_offset if local else None
    out: list[SegmentFiles] = []
    last = -1
    for c in copied:
        s = c.segment
        if s.start_offset <= last or (first_local is not None and s.end_offset >= first_local):
            continue
        out.append(c.files)
        last = s.end_offset
    return tuple(out)


def _log_ranges(sel: Selection, info: PartitionInfo, segments: tuple[SegmentFiles, ...],
                pdir: PartitionDir, narrowing: Narrowing | None) -> Iterator[ByteRange]:
    """The ranges of one log's ``segments``, in offset order (aborted transactions from
    ``pdir``'s transaction indexes)."""
    if sel.level is Level.SEGMENTS:  # summaries describe whole segments
        for i, files in enumerate(segments):
            yield ByteRange(info, files, i == len(segments) - 1, 0, files.log_size)
        return
    bounds = offset_bounds(sel, info, segments, narrowing)
    if bounds is None:
        return
    start, end = bounds
    # the brokers' fetch path: aborted transactions from the .txnindex files, not the log
    aborted = tuple(_transactions.aborted_ranges(pdir, from_txnindex=True)) \
        if sel.read_committed else ()
    for i, files in enumerate(segments):
        if files.log_size == 0:
            continue
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        piece = _segment_range(info, files, i == len(segments) - 1, next_base, start, end,
                               narrowing, aborted)
        if piece is not None:
            yield piece


def ranges(sel: Selection, narrowing: Narrowing | None = None,
           listed: list[LogDir] | None = None) -> list[ByteRange]:
    """Every byte range a read of ``sel`` needs, in tree order. ``listed``: the log dirs of
    ``sel.paths`` as a caller walked them a moment ago (a dataset opened to be read at
    once); None: walked now, so a read sees the segments rolled since any earlier listing."""
    pieces: list[ByteRange] = []
    found: set[tuple[str, int]] = set()
    log_dirs: Iterable[LogDir] = (walk_tree(sel.paths, sel.storage_options) if listed is None
                                  else with_partitions(listed, sel.paths))
    tiered: dict[tuple[str, int], tuple[CopiedSegment, ...]] = {}
    partitions: list[tuple[LogDir, PartitionDir]] = []
    if sel.remote_store is not None:  # the metadata may be in any of the log dirs
        log_dirs = list(log_dirs)
        tiered, partitions = _remote_tier(sel, log_dirs)
    for log_dir, pdir in chain(((d, p) for d in log_dirs for p in d.partitions), partitions):
        info = partition_info(log_dir, pdir)
        found.add((info.topic, info.partition))
        if selected(sel, pdir, info, narrowing):
            copied = tiered.get((info.topic, info.partition), ()) \
                if partition_state(pdir) == "live" else ()
            remote = remote_part(copied, pdir.segments, sel.level)
            pieces.extend(partition_ranges(sel, info, pdir, narrowing, remote))
    check_named_partitions(sel, found)
    return pieces


def _remote_tier(sel: Selection, log_dirs: list[LogDir]
                 ) -> tuple[dict[tuple[str, int], tuple[CopiedSegment, ...]],
                            list[tuple[LogDir, PartitionDir]]]:
    """The copied segments in the store of each tiered partition the log dirs'
    ``__remote_log_metadata`` names (a segment the store lacks is left out: ``scan`` and
    ``tiered`` report it), and the tiered partitions no log dir holds a directory of (their
    log is only in the store: :func:`~segtools.analysis.remote_input.remote_only_partitions`).

    The metadata replay is imported here, only for a read with a remote store: its modules
    cost about as much to import as the rest of the planner, and every Spark executor
    imports the planner to unpickle its task."""
    from segtools.analysis.remote_input import (
        copied_segments,
        remote_metadata,
        remote_only_partitions,
    )
    from segtools.analysis.tiered import remote_by_partition

    store = _remote_store.segment_store(sel.remote_store, sel.storage_options)
    if sel.read_committed:
        raise SelectionError("readCommitted cannot be used with a remote store (the remote "
                             "segments' transaction indexes are not read)")
    remote = remote_by_partition(remote_metadata(log_dirs))
    return ({key: copied_segments(rp, store)[0] for key, rp in remote.items()},
            remote_only_partitions(log_dirs, remote))


# ------------------------------------------------------------------------------ cutting


def cut_points(piece: ByteRange, wanted: list[int]) -> list[tuple[int, int | None]]:
    """Batch starts near the byte positions in ``wanted`` (each the first at or after it),
    with the offset-index entry there when there is one: from the offset index
    (``OffsetIndex.fetchUpperBoundOffset``: the start of an append, so of a batch), or, for a
    segment without a usable index (copied without it, or failing its sanity check), from the
    batch table of a shallow walk."""
    if not wanted:
        return []
    index = _open_offset_index(piece.files)
    try:
        if _usable(index):
            cuts: list[tuple[int, int | None]] = []
            for want in wanted:
                entry = index.fetch_upper_bound_offset(want)
                if entry is None or entry.position >= piece.end:
                    break
                if entry.position > (cuts[-1][0] if cuts else piece.start):
                    cuts.append((entry.position, entry.offset))
            return cuts
    finally:
        if index is not None:
            index.close()
    out: list[tuple[int, int | None]] = []
    todo = sorted(wanted)
    with Segment.open(piece.files) as segment:
        for chunk in segment.walk(piece.start, until=piece.end, verify_crc=False):
            starts = chunk.table.position
            while todo and len(starts) and todo[0] <= starts[-1]:
                position = int(starts[int(starts.searchsorted(todo.pop(0)))])
                if position > (out[-1][0] if out else piece.start):
                    out.append((position, None))
            if not todo:
                break
    return out


def split(piece: ByteRange, wanted: list[int]) -> list[ByteRange]:
    """Cut a range at the batch starts nearest after the byte positions in ``wanted``."""
    cuts = cut_points(piece, wanted)
    out = []
    start, hint = piece.start, piece.start_offset_hint
    for position, offset in cuts:
        out.append(replace(piece, start=start, end=position, start_offset_hint=hint))
        start, hint = position, offset
    out.append(replace(piece, start=start, start_offset_hint=hint))
    return out
