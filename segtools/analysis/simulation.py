"""What a partition would look like under another config: Kafka's log lifecycle stepped from
the segments on disk, with an ingest model for the future.

Today's verdicts (:mod:`segtools.analysis.retention`) and the no-new-data forecast
(:mod:`segtools.analysis.forecast`) answer for the segments on disk. The operator's next question
is what a different ``segment.bytes`` or ``segment.ms`` would do; that needs the whole
lifecycle, because the segment boundaries themselves change. A run from the disk (what the
what-if does) starts at ``now`` with the segments as they are, every record in them with its
own timestamp, and appends the future (:func:`extend`: the partition's recent window, repeated)
at each batch's *append clock* (the running maximum of the batch timestamps: a broker appends
in time order). A replay (the rules' own test against Kafka-written fixtures) appends the
history itself from its first batch instead. Kafka's rules apply as it goes:

* **Rolling** (``LogSegment.shouldRoll``, called from ``UnifiedLog.maybeRoll`` on every append):
  a new segment starts before a batch when the segment holds data and the batch would take it
  past ``segment.bytes`` (``size > maxSegmentBytes - messagesSize``); or when the batch's max
  timestamp is more than ``segment.ms - rollJitterMs`` after the segment's first batch's max
  timestamp (``timeWaitedForRoll`` measures from ``rollingBasedTimestamp``); or when its time
  index would be full (one entry per ``index.interval.bytes`` appended, at most
  ``segment.index.bytes / 12`` of them, ``AbstractIndex.isFull``). ``rollJitterMs`` is drawn per
  segment as ``LogConfig.randomSegmentJitter`` does, from a generator seeded by the partition's
  name, so a run is repeatable. Nothing rolls without an append: a quiet partition keeps its
  active segment until its next batch.
* **Deletion**, at each ``log.retention.check.interval.ms`` (``LogManager.cleanupLogs``) for
  delete-only topics and after each cleaner iteration for compacted ones
  (``LogCleaner.cleanFilthiestLog`` then ``deleteOldSegments`` of ``deletableLogs``): the state at
  that tick is summarised into :class:`~segtools.storage.summary.SegmentSummary` values and
  handed to :func:`segtools.analysis.retention.explain_retention`, the same rule function that
  gives today's verdicts. When it deletes every segment, Kafka first rolls a new empty active
  segment (``UnifiedLog.deleteSegments``), so the next batch starts a fresh one.
* **Cleaning** (compacted topics): whether the cleaner takes the log now is
  ``LogCleanerManager``'s rule (first dirty offset, first uncleanable offset with
  ``min.compaction.lag.ms``, dirty ratio against ``min.cleanable.dirty.ratio``,
  ``max.compaction.lag.ms``), asked of :mod:`segtools.analysis.compaction`; the groups are
  ``LogCleaner.groupSegmentsBySize`` (same module); a group becomes one segment at its first
  member's base offset (``LogCleaner.cleanSegments``) holding the latest record of each key,
  tombstones until their delete horizon (stamped ``now + delete.retention.ms`` by the first
  clean that keeps them, ``MemoryRecords.filterTo``), and its largest timestamp is the largest
  of the records it kept (a rebuilt batch's max timestamp is its retained records'). That is how
  never-repeated keys ride forward: an old segment merged with a young one takes the young
  one's timestamp, and time retention waits for it.

Each run yields what was rolled, deleted and cleaned and when, and the partition's size and
oldest record over time; the oldest record is a record's own timestamp (each unit carries its
oldest, :attr:`History.oldest_ts`), so a record merged under a younger segment's largest
timestamp keeps its age, as ``segtools retention``'s stale records do. Apart from the calls
into the rule functions at the few ticks where something can change, the work is numpy over
the batch arrays, so a month of a thousand partitions takes seconds.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from segtools.analysis import compaction as comp
from segtools.analysis.config import DEFINITIONS, ConfigValue, TopicConfig
from segtools.analysis.retention import explain_retention
from segtools.storage.summary import SegmentSummary
from segtools.units import format_duration

#: ``index.interval.bytes`` (``LogConfig`` default): an index entry per this many bytes appended.
INDEX_INTERVAL_BYTES = 4096
#: ``log.retention.check.interval.ms`` (``ServerLogConfigs`` default).
RETENTION_CHECK_INTERVAL_MS = 300_000
#: ``log.cleaner.backoff.ms``: how long an idle cleaner thread sleeps between looks.
CLEANER_BACKOFF_MS = 15_000
#: Buckets of a ``series`` (two rows each, its peak and its trough, and the first and last rows).
SERIES_BUCKETS = 120
#: Replayed batches per partition at most (see :func:`extend`).
MAX_REPLAY_BATCHES = 20_000
#: Replayed batches at most when a compacted log would hold more segments than this at once
#: (a rate far above what the segment size was chosen for): the cleaner's passes weigh every
#: segment in Python, so a run's cost grows with the square of its segments (20,000 took
#: minutes per partition, 2,000 a few seconds, with the same sizes and ages to 0.2 %).
MAX_CLEANED_SEGMENTS = 2_000
_NEVER = 2**62

ROLL_SEGMENT_BYTES = "segment.bytes"
ROLL_SEGMENT_MS = "segment.ms"
ROLL_INDEX_FULL = "index_full"
ROLL_LOG_EMPTIED = "log_emptied"  # every segment was deleted; the next batch starts one
ROLL_FIRST = "first_batch"


# --------------------------------------------------------------------------- input


@dataclass(frozen=True, slots=True)
class History:
    """One partition's appends in offset order. A *unit* is what the cleaner keeps or drops:
    a record for compacted topics, a whole batch otherwise (``unit_batch`` then is
    ``arange``). Units carry their share of their batch's bytes."""

    batch_offset: np.ndarray  # base offset
    batch_last: np.ndarray  # last offset
    batch_ts: np.ndarray  # max timestamp
    batch_size: np.ndarray  # bytes on disk
    unit_batch: np.ndarray  # index of the unit's batch
    unit_offset: np.ndarray
    unit_ts: np.ndarray
    unit_size: np.ndarray  # float bytes
    unit_key: np.ndarray  # key id, -1: none (delete-only topics: every unit)
    unit_tombstone: np.ndarray
    unit_horizon: np.ndarray  # delete horizon of the unit's batch, -1: none
    #: the base offsets of the segments on disk (ascending; empty: not known, the history is
    #: replayed from its first batch instead of starting from the disk)
    segment_bases: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: each of those segments' file mtime in epoch ms (-1, or empty: not known): its
    #: ``lastModified`` until something is appended to it, which ``largestTimestamp`` falls
    #: back on when its records carry no timestamp (magic 0)
    segment_mtimes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: batches read from disk; the rest were added by :func:`extend` (-1: all of them)
    disk_batches: int = -1
    #: how many of the history's batches one replayed batch stands for (1: the replay is at
    #: full scale; more when :data:`MAX_REPLAY_BATCHES` binds)
    replay_scale: int = 1
    #: the oldest record timestamp in each unit (a batch's first record, from its header;
    #: empty: the same as ``unit_ts``, a unit being one record): what "oldest record" means,
    #: where ``unit_ts`` (the largest) is what retention weighs a segment by
    unit_oldest: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the segment files' bytes on disk (-1: not known, the batches' bytes are): a torn tail
    #: or garbage after the last batch counts in a partition's size until Kafka's recovery
    #: truncates it
    disk_bytes: int = -1

    @property
    def oldest_ts(self) -> np.ndarray:
        return self.unit_oldest if self.unit_oldest.size else self.unit_ts

    def with_oldest(self, oldest: np.ndarray) -> History:
        """This history with each unit's oldest record timestamp (never above its largest)."""
        return replace(self, unit_oldest=np.minimum(np.asarray(oldest, np.int64), self.unit_ts))

    @property
    def on_disk(self) -> int:
        """Batches that were read from disk (the rest are the ingest model's)."""
        return self.batches if self.disk_batches < 0 else self.disk_batches

    def with_segments(self, bases: Sequence[int],
                      mtimes: Sequence[int] | None = None) -> History:
        """This history starting from the segments on disk at these base offsets (and, when
        known, their files' mtimes in epoch ms, in the same order)."""
        unique, first = np.unique(np.asarray(bases, np.int64), return_index=True)
        known = np.full(len(bases), -1, np.int64) if mtimes is None else \
            np.asarray(mtimes, np.int64)
        return replace(self, segment_bases=unique, segment_mtimes=known[first])

    @property
    def batches(self) -> int:
        return int(self.batch_offset.shape[0])

    @property
    def units(self) -> int:
        return int(self.unit_offset.shape[0])

    @classmethod
    def from_batches(cls, offset, last, ts, size) -> History:
        """A delete-only partition: one unit per batch."""
        offset = np.asarray(offset, np.int64)
        n = offset.shape[0]
        size = np.asarray(size, np.int64)
        return cls(offset, np.asarray(last, np.int64), np.asarray(ts, np.int64), size,
                   np.arange(n, dtype=np.int64), offset.copy(), np.asarray(ts, np.int64),
                   size.astype(np.float64), np.full(n, -1, np.int64), np.zeros(n, np.bool_),
                   np.full(n, -1, np.int64))

    @classmethod
    def from_records(cls, batch_offset, batch_last, batch_ts, batch_size, unit_batch,
                     unit_offset, unit_ts, unit_size, unit_key, unit_tombstone,
                     unit_horizon) -> History:
        a = np.asarray
        return cls(a(batch_offset, np.int64), a(batch_last, np.int64), a(batch_ts, np.int64),
                   a(batch_size, np.int64), a(unit_batch, np.int64), a(unit_offset, np.int64),
                   a(unit_ts, np.int64), a(unit_size, np.float64), a(unit_key, np.int64),
                   a(unit_tombstone, np.bool_), a(unit_horizon, np.int64))


def _append_clock(batch_ts: np.ndarray) -> np.ndarray:
    """The time each batch is appended: the running max of batch timestamps (a broker's clock
    does not run backwards; a late CreateTime does not make an append earlier)."""
    return np.maximum.accumulate(batch_ts) if batch_ts.size else batch_ts


#: The ingest model's default look-back: the last day of a partition's history is "the topic as
#: it is now" (a history's old days may be a burst long since followed by silence, or records
#: the cleaner has thinned out, neither of which says how the topic is written today).
RECENT_WINDOW_MS = 86_400_000
#: A history shorter than this has no rate worth extrapolating: seconds or hours of writes
#: repeated for a month make a forecast of nothing but the arithmetic, and a history shorter
#: than the window has no day's shape to repeat.
MIN_HISTORY_MS = RECENT_WINDOW_MS


@dataclass(frozen=True, slots=True)
class Ingest:
    """The future appends: the last ``window_ms`` of each partition's history (its recent rate
    and shape: sizes, gaps, keys), repeated after the evaluation time to the horizon's end;
    ``bytes_per_s`` respaces that window to a given rate for the whole topic (split evenly
    over its partitions)."""

    bytes_per_s: float | None = None
    window_ms: int = RECENT_WINDOW_MS

    def to_json(self) -> object:
        return "auto" if self.bytes_per_s is None else self.bytes_per_s

    def describe(self) -> str:
        """The model in words, for a header."""
        shape = f"each partition's last {format_duration(self.window_ms)} of history"
        if self.bytes_per_s is None:
            return f"{shape} (its recent rate), repeated to the horizon"
        return f"{shape}, respaced to {self.bytes_per_s:,.0f} B/s per topic"


#: The default ingest model: each partition's recent history, replayed.
AUTO = Ingest()


@dataclass(frozen=True, slots=True)
class RecentWindow:
    """What :func:`extend` repeats: the history's batches from ``first_batch`` on, whose
    append clocks lie ``rel`` ms into a period of ``period_ms`` (each in ``(0, period]``)."""

    first_batch: int
    rel: np.ndarray
    period_ms: int
    span_ms: int  # from the window's first batch to its last
    history_ms: int  # the time the history covers: its span, plus a mean gap when short


def recent_window(h: History, window_ms: int = RECENT_WINDOW_MS) -> RecentWindow | None:
    """The last ``window_ms`` of the history, or all of it when it is shorter (then the period
    is its span plus one mean gap, so copies follow each other as the batches did). None when
    fewer than two batches with a timestamp fall in it: a v0 message has none
    (``RecordBatch.NO_TIMESTAMP``, -1), and counting it as 1970 would make seconds of an
    upgraded log's writes look like decades of history."""
    n = h.on_disk
    clock = _append_clock(h.batch_ts[:n])
    timed = int(np.searchsorted(clock, 0, side="left"))  # the clock never runs backwards
    if n - timed < 2:
        return None
    last = int(clock[-1])
    if last - int(clock[timed]) >= window_ms:
        first = int(np.searchsorted(clock, last - window_ms, side="right"))
        if n - first < 2:
            return None
        return RecentWindow(first, (clock[first:] - (last - window_ms)).astype(np.int64),
                            window_ms, last - int(clock[first]), last - int(clock[timed]))
    span = last - int(clock[timed])
    gap = max(span // (n - timed - 1), 1)
    # n evenly spaced batches stand for span + one gap of time (a batch every 5 minutes for
    # a day is 288 batches 23 h 55 min apart)
    return RecentWindow(timed, (clock[timed:] - int(clock[timed]) + gap).astype(np.int64),
                        span + gap, span, span + gap)


def too_short(h: History, window_ms: int = RECENT_WINDOW_MS) -> bool:
    """Whether the history is too short to extrapolate (see :data:`MIN_HISTORY_MS`)."""
    w = recent_window(h, window_ms)
    return w is None or w.history_ms < MIN_HISTORY_MS


def roll_bytes(config: TopicConfig) -> int:
    """The bytes a segment takes before it rolls: ``segment.bytes``, or what a full time
    index allows (an entry per ``index.interval.bytes``, ``segment.index.bytes / 12`` of them,
    ``AbstractIndex.isFull``) when that binds first."""
    entries = max(config.segment_index_bytes // 12, 1)  # TimeIndex entry: 12 bytes
    return max(min(config.segment_bytes, entries * INDEX_INTERVAL_BYTES), 1)


@dataclass(frozen=True, slots=True)
class CleanedSegments:
    """What bounds a compacted replay (:data:`MAX_CLEANED_SEGMENTS`): the smallest roll size
    of its configs (:func:`roll_bytes`) and the longest their logs keep data (their local
    retention, or without one the whole horizon)."""

    roll_bytes: int
    kept_ms: int

    @classmethod
    def of(cls, configs: Sequence[TopicConfig]) -> CleanedSegments | None:
        compacted = [c for c in configs if c.compact]
        if not compacted:
            return None
        kept = [c.local_retention_ms_effective if c.delete and
                c.local_retention_ms_effective >= 0 else _NEVER for c in compacted]
        return cls(min(roll_bytes(c) for c in compacted), max(kept))


def extend(h: History, *, now_ms: int, end_ms: int, ingest: Ingest = AUTO,
           partitions: int = 1, cleaned: CleanedSegments | None = None) -> History:
    """The history followed by copies of its recent window (:func:`recent_window`) from
    ``now_ms`` to ``end_ms``: copy ``c`` covers ``now + c * period`` to ``now + (c + 1) *
    period``, each batch at its place in the window, every offset moved past the previous
    copy. Keys written once in the history stay unique in each copy (a fresh id per copy);
    keys written more than once keep their ids, so updates keep superseding: the key *shape*
    is replayed, not the keys. A history too short to extrapolate (:func:`too_short`) gets no
    copies unless a rate is given. ``cleaned``: the compacted configs the replay is for; when
    the appends a log keeps at once would fill more of their segments than
    :data:`MAX_CLEANED_SEGMENTS`, the replay keeps to that many batches.
    """
    w = recent_window(h, ingest.window_ms)
    if w is None:
        return h
    n = h.on_disk
    wb = np.arange(w.first_batch, n)  # the window's batches
    u0 = int(np.searchsorted(h.unit_batch, w.first_batch))
    u1 = int(np.searchsorted(h.unit_batch, n))
    units = u1 - u0
    sizes = h.batch_size[wb]
    scale = 1.0  # the window's time, stretched (>1) or squeezed (<1) to a given rate
    if ingest.bytes_per_s is not None:
        rate = ingest.bytes_per_s / max(partitions, 1) / 1000.0  # bytes per ms
        if rate <= 0:
            return h
        scale = float(sizes.sum()) / rate / w.period_ms
    elif w.history_ms < MIN_HISTORY_MS:
        return h
    if end_ms <= now_ms:
        return h
    copies = -(-(end_ms - now_ms) // max(int(w.period_ms * scale), 1))
    # memory stays bounded: past MAX_REPLAY_BATCHES, one replayed batch stands for ``k`` of
    # the window's (k times the bytes, k times the period), which keeps the rate; the history
    # says so (``replay_scale``) and every face with it. Times are rounded to the millisecond
    # only after scaling, so a squeezed window keeps its rate.
    most = MAX_REPLAY_BATCHES
    if cleaned is not None:
        kept_ms = min(cleaned.kept_ms, end_ms - now_ms)
        per_ms = float(sizes.sum()) / max(w.period_ms * scale, 1.0)
        if per_ms * kept_ms > MAX_CLEANED_SEGMENTS * cleaned.roll_bytes:
            most = MAX_CLEANED_SEGMENTS
    k = max(1, -(-int(copies) * max(len(wb), units) // most))
    rel = np.maximum(np.rint(w.rel * scale * k).astype(np.int64), 1)
    period = max(round(w.period_ms * scale * k), int(rel[-1]), 1)
    copies = int(-(-(end_ms - now_ms) // period))
    nb = len(wb)
    c_b = np.repeat(np.arange(copies, dtype=np.int64), nb)  # the copy of each replayed batch
    c_u = np.repeat(np.arange(copies, dtype=np.int64), units)
    span_offsets = int(h.batch_last[n - 1]) + 1 - int(h.batch_offset[w.first_batch])
    shift_b, shift_u = (c_b + 1) * span_offsets, (c_u + 1) * span_offsets
    clock = _append_clock(h.batch_ts[:n])[wb]
    # each batch keeps its lateness against the clock; a record its place in its batch
    bts = now_ms + c_b * period + np.tile(rel + (h.batch_ts[wb] - clock), copies)
    ub_w = h.unit_batch[u0:u1] - w.first_batch
    ub = np.tile(ub_w, copies) + c_u * nb  # within the replay
    uts = bts[ub] - np.tile(h.batch_ts[h.unit_batch[u0:u1]] - h.unit_ts[u0:u1], copies)
    ub += h.batches  # after the history's own batches
    unit_key = h.unit_key[u0:u1]
    keys = np.tile(unit_key, copies)
    keyed = h.unit_key >= 0
    if keyed.any():
        top = int(h.unit_key.max()) + 1
        counts = np.bincount(h.unit_key[keyed], minlength=top)
        once = np.tile((unit_key >= 0) & (counts[np.maximum(unit_key, 0)] == 1), copies)
        keys = np.where(once, keys + (c_u + 1) * top, keys)
    more = (np.tile(h.batch_offset[wb], copies) + shift_b,
            np.tile(h.batch_last[wb], copies) + shift_b, bts, np.tile(sizes, copies) * k, ub,
            np.tile(h.unit_offset[u0:u1], copies) + shift_u, uts,
            np.tile(h.unit_size[u0:u1], copies) * k, keys,
            np.tile(h.unit_tombstone[u0:u1], copies), np.full(copies * units, -1, np.int64))
    own = (h.batch_offset, h.batch_last, h.batch_ts, h.batch_size, h.unit_batch,
           h.unit_offset, h.unit_ts, h.unit_size, h.unit_key, h.unit_tombstone, h.unit_horizon)
    joined = (np.concatenate([o, m]) for o, m in zip(own, more, strict=True))
    oldest = np.zeros(0, np.int64)
    if h.unit_oldest.size:  # each replayed unit keeps its spread below its largest timestamp
        # a unit without one (-1: no record timestamp) has none in the replay either; its
        # spread to -1 made its copies decades old (sample's edge-cases: 53 years)
        timed = h.unit_oldest[u0:u1] >= 0
        spread = np.tile(np.where(timed, h.unit_ts[u0:u1] - h.unit_oldest[u0:u1], 0), copies)
        oldest = np.concatenate([h.unit_oldest,
                                 np.where(np.tile(timed, copies), uts - spread, -1)])
    return History(*joined, segment_bases=h.segment_bases, segment_mtimes=h.segment_mtimes,
                   disk_batches=n, replay_scale=k, unit_oldest=oldest, disk_bytes=h.disk_bytes)


# --------------------------------------------------------------------------- output


@dataclass(frozen=True, slots=True)
class Roll:
    at_ms: int
    base_offset: int
    reason: str

    def to_json(self) -> dict:
        return {"at_ms": self.at_ms, "base_offset": self.base_offset, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Deletion:
    at_ms: int
    base_offsets: tuple[int, ...]
    bytes: int
    reason: str

    def to_json(self) -> dict:
        return {"at_ms": self.at_ms, "base_offsets": list(self.base_offsets),
                "bytes": self.bytes, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Cleaning:
    """One cleaner pass: the groups it merged (``groupSegmentsBySize``), each group's largest
    timestamp after the clean, the bytes it removed, and the bytes it read (every member of
    every group is read and rewritten, ``LogCleaner.cleanSegments``: the cleaner's work)."""

    at_ms: int
    groups: tuple[tuple[int, ...], ...]
    largest_timestamps: tuple[int, ...]
    removed_bytes: int
    end_offset: int
    read_bytes: int = 0

    def to_json(self) -> dict:
        return {"at_ms": self.at_ms, "groups": [list(g) for g in self.groups],
                "largest_timestamps": list(self.largest_timestamps),
                "removed_bytes": self.removed_bytes, "end_offset": self.end_offset}


@dataclass(frozen=True, slots=True)
class Run:
    """One partition under one config: the events, and the numbers behind its series.

    ``removals`` are ``(at_ms, bytes removed, oldest record timestamp left or -1, units
    appended by then)``; with the appends they give the size and oldest record at any time.
    The oldest record is always a record's own timestamp (the smallest of the records left on
    disk, each record's kept through every clean), never a segment's largest timestamp or its
    age: the same measure ``segtools retention`` gives its stale records.
    """

    config: TopicConfig
    start_ms: int
    now_ms: int
    end_ms: int
    rolls: tuple[Roll, ...]
    deletions: tuple[Deletion, ...]
    cleanings: tuple[Cleaning, ...]
    at_now: tuple[SegmentSummary, ...]  # the segments on disk at now_ms, as simulated
    unit_clock: np.ndarray = field(repr=False)
    unit_cum: np.ndarray = field(repr=False)  # bytes appended before unit i
    unit_ts: np.ndarray = field(repr=False)  # each unit's oldest record timestamp
    removals: tuple[tuple[int, int, int, int], ...] = ()
    #: segments on disk when the run starts (a run from the disk starts with the disk's)
    initial_segments: int = 0
    #: the oldest record timestamp on disk at ``now_ms`` before any rule ran (-1: empty)
    oldest_at_now: int = -1
    replay_scale: int = 1
    start_bytes: int = 0  # the partition's bytes at now_ms, before any rule ran

    def size_at(self, times: np.ndarray) -> np.ndarray:
        appended = self.unit_cum[np.searchsorted(self.unit_clock, times, side="right")]
        if not self.removals:
            return np.rint(appended).astype(np.int64)
        at = np.array([r[0] for r in self.removals], np.int64)
        gone = np.concatenate([[0.0], np.cumsum([r[1] for r in self.removals])])
        return np.rint(appended - gone[np.searchsorted(at, times, side="right")]).astype(np.int64)

    def oldest_at(self, times: np.ndarray) -> np.ndarray:
        """The oldest record timestamp on disk (-1: the log is empty): before the first removal
        the smallest timestamp appended so far; after one, the smallest it left, or when it
        left nothing the first record appended since (records appended after a removal are
        taken as newer than what it left: true when timestamps follow the append clock)."""
        appended = np.searchsorted(self.unit_clock, times, side="right")
        ts = np.where(self.unit_ts >= 0, self.unit_ts, _NEVER)
        low = np.minimum.accumulate(ts) if ts.size else ts
        low = np.where(low >= _NEVER, -1, low)
        first_ts = np.where(appended > 0, low[np.maximum(appended - 1, 0)] if low.size else -1,
                            -1)
        if not self.removals:
            return first_ts
        at = np.array([r[0] for r in self.removals], np.int64)
        left = np.array([r[2] for r in self.removals], np.int64)
        j = np.array([r[3] for r in self.removals], np.int64)
        k = np.searchsorted(at, times, side="right") - 1
        kk = np.maximum(k, 0)
        after = np.where(appended > j[kk], self.unit_ts[np.minimum(j[kk], self.unit_ts.size - 1)],
                         -1)
        mine = np.where(left[kk] >= 0, left[kk], after)
        return np.where(k >= 0, mine, first_ts)


# --------------------------------------------------------------------------- rolling


@dataclass(slots=True)
class _Roller:
    """``LogSegment.shouldRoll`` over the batch arrays: where the segment starting at a batch
    ends, by searchsorted on cumulative sizes and the running max of timestamps."""

    ts: np.ndarray
    cum: np.ndarray  # bytes before batch i (length n + 1)
    prefmax: np.ndarray
    cap: int  # segment.bytes, or what a full time index allows, whichever binds first
    cap_reason: str
    segment_ms: int
    jitter_ms: int
    seed: int
    rng: np.random.Generator | None = None  # made at the first jitter (most configs have none)

    @classmethod
    def build(cls, h: History, config: TopicConfig, seed: int,
              clock: np.ndarray | None = None) -> _Roller:
        cap = roll_bytes(config)
        reason = ROLL_SEGMENT_BYTES if cap == config.segment_bytes else ROLL_INDEX_FULL
        cum = np.concatenate([[0], np.cumsum(h.batch_size)]).astype(np.int64)
        return cls(h.batch_ts, cum, _append_clock(h.batch_ts) if clock is None else clock, cap,
                   reason, config.segment_ms, config.segment_jitter_ms, seed)

    def jitter(self) -> int:
        """``LogConfig.randomSegmentJitter``: uniform below min(segment.jitter.ms, segment.ms)."""
        if self.jitter_ms <= 0:
            return 0
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed)
        return int(self.rng.integers(0, max(min(self.jitter_ms, self.segment_ms), 1)))

    def end(self, start: int) -> tuple[int, str]:
        """The first batch after ``start`` that rolls a new segment, and why (n: none)."""
        n = self.ts.shape[0]
        if start + 1 >= n:
            return n, ""
        # size: roll before j when cum[j] - cum[start] > cap - size_j, i.e. cum[j+1] > X
        limit = int(self.cum[start]) + self.cap
        j_size = max(int(np.searchsorted(self.cum, limit, side="right")) - 1, start + 1)
        j_time = n
        first = int(self.ts[start])
        allowed = self.segment_ms - self.jitter()
        if first >= 0 and allowed < _NEVER:
            threshold = first + allowed
            k = int(np.searchsorted(self.prefmax, threshold, side="right"))
            if k > start:
                j_time = max(k, start + 1)
            else:  # an earlier batch is already past it: find the first later one that is
                later = np.flatnonzero(self.ts[start + 1:] > threshold)
                j_time = start + 1 + int(later[0]) if later.size else n
        if j_size >= n and j_time >= n:
            return n, ""
        return (j_size, self.cap_reason) if j_size <= j_time else (j_time, ROLL_SEGMENT_MS)


# --------------------------------------------------------------------------- one run


@dataclass(slots=True)
class _Seg:
    base: int  # base offset
    start: int  # first unit index of its offset range
    first_batch: int
    mtime: int | None = None  # set when a clean merged it: the last member's lastModified
    #: the file's mtime when the run started from the disk: its lastModified until an append
    disk_mtime: int | None = None


def simulate(h: History, config: TopicConfig, *, start_ms: int | None = None, now_ms: int,
             end_ms: int, seed: str = "", cleaner_offset: int | None = None,
             tick_ms: int | None = None, from_disk: bool = False,
             highest_remote_offset: int | None = None) -> Run:
    """Run ``h`` under ``config`` to ``end_ms``. With ``from_disk`` (and the history's
    ``segment_bases``), the run starts at ``now_ms`` from the segments on disk as they are,
    every record in them with its own timestamp, and only the appends the history gained from
    :func:`extend` come after: what the log will do from here. Without it the history is
    replayed from its first batch, rolls and all (how the rules are held to the segments
    Kafka itself wrote). ``highest_remote_offset``: a tiered partition's
    ``highestOffsetInRemoteStorage`` at ``now_ms`` (from ``__remote_log_metadata``), which the
    first retention check of a run from the disk respects as ``segtools retention`` does;
    later checks take the copy task as keeping up (every sealed segment copied)."""
    return _Simulation(h, config, now_ms, end_ms, seed, cleaner_offset, tick_ms,
                       start_ms, from_disk and h.segment_bases.size > 0,
                       highest_remote_offset).run()


class _Simulation:
    """One run's state: the segments (:class:`_Seg`, each a slice of the history's units),
    which units are still live, and the events so far. Every question about a segment (its
    size, its largest timestamp, its records' timestamps) is answered from the live units in
    its slice, so a clean that merges segments keeps each record's own timestamp."""

    def __init__(self, h: History, config: TopicConfig, now_ms: int, end_ms: int, seed: str,
                 cleaner_offset: int | None, tick_ms: int | None,
                 start_ms: int | None, from_disk: bool = False,
                 highest_remote_offset: int | None = None) -> None:
        history = self.history = h
        self.config = config
        self.now = now_ms
        self.end = end_ms
        self.tick = tick_ms or (CLEANER_BACKOFF_MS if config.compact else
                                RETENTION_CHECK_INTERVAL_MS)
        self.bclock = _append_clock(history.batch_ts)
        on_disk = history.on_disk
        if from_disk:  # what is on disk is there at now, whatever its timestamps say
            self.bclock = self.bclock.copy()
            self.bclock[:on_disk] = np.minimum(self.bclock[:on_disk], now_ms)
        # a delete-only history has one unit per batch (unit_batch is arange)
        first = np.arange(history.batches)
        per_batch = history.units == history.batches and np.array_equal(history.unit_batch,
                                                                           first)
        self.uclock = self.bclock if per_batch else \
            self.bclock[history.unit_batch] if history.units else np.zeros(0, np.int64)
        self.ucum = np.concatenate([[0.0], np.cumsum(history.unit_size)])
        self.batch_first_unit = np.r_[first if per_batch else
                                      np.searchsorted(history.unit_batch, first), history.units]
        self.roller = _Roller.build(h, config, zlib.crc32(seed.encode()), self.bclock)
        self.alive = np.ones(history.units, np.bool_)
        self.horizon = history.unit_horizon.copy()
        self.origin = int(self.bclock[0]) if history.batches else now_ms
        if start_ms is not None:
            self.origin = min(self.origin, start_ms)
        self.segs: list[_Seg] = []
        self.next_start: int | None = 0 if history.batches else None  # batch that starts a segment
        self.next_reason = ROLL_FIRST
        self.checkpoint = cleaner_offset
        self.rolls: list[Roll] = []
        self.deletions: list[Deletion] = []
        self.cleanings: list[Cleaning] = []
        self.removals: list[tuple[int, int, int, int]] = []
        self.at_now: tuple[SegmentSummary, ...] = ()
        # every segment's first unit in creation order: segs is a suffix of it until a clean
        self.created_starts = np.zeros(history.batches + history.segment_bases.size + 1,
                                       np.int64)
        self.created = 0
        self.merged = False
        self.sealed: dict[int, SegmentSummary] = {}  # summaries of sealed segments, until cleaned
        # a tick asks appended() and stats() several times; the answers hold until the next
        # tick or the next change of the log (a roll, a deletion, a clean)
        self._appended: tuple[int, tuple[int, int]] = (-1, (0, 0))
        self._stats: tuple[tuple, tuple[np.ndarray, np.ndarray]] | None = None
        self.from_disk = from_disk
        self.highest_remote_offset = highest_remote_offset
        self.oldest_at_now = -1
        if from_disk:
            self._start_from_disk(on_disk)
        self.initial_segments = len(self.segs)

    def _start_from_disk(self, on_disk: int) -> None:
        """The segments on disk become the run's first segments (a sealed segment with no
        batch left is dropped: it holds nothing a rule could weigh), the last one active; the
        active segment's next roll is ``LogSegment.shouldRoll`` from its first batch, and
        when the rule says it is already due (a proposed smaller segment), the next append
        rolls."""
        history = self.history
        self.origin = self.now
        bases = history.segment_bases
        firsts = np.searchsorted(history.batch_offset[:on_disk], bases, side="left")
        keep = np.r_[firsts[:-1] < firsts[1:], True] if bases.size else np.zeros(0, np.bool_)
        mtimes = history.segment_mtimes[keep].tolist() if history.segment_mtimes.size \
            else [-1] * int(keep.sum())
        for base, fb, mtime in zip(bases[keep].tolist(), firsts[keep].tolist(), mtimes,
                                   strict=True):
            self.segs.append(_Seg(base, int(self.batch_first_unit[fb]), fb,
                                  disk_mtime=mtime if mtime >= 0 else None))
            self.created_starts[self.created] = self.batch_first_unit[fb]
            self.created += 1
        active = self.segs[-1].first_batch
        if active >= history.batches:
            self.next_start = None
            return
        end, reason = self.roller.end(active)
        if active >= on_disk:  # an empty active segment takes the first append
            end, reason = self.roller.end(on_disk)
        elif end < on_disk:
            end = on_disk
        self.next_start = end if end < history.batches else None
        self.next_reason = reason

    # -- time ---------------------------------------------------------------------------

    def ceil_tick(self, t: int) -> int:
        if t <= self.origin:
            return self.origin
        k = -(-(t - self.origin) // self.tick)
        return self.origin + k * self.tick

    def appended(self, t: int) -> tuple[int, int]:
        """Batches and units appended by ``t``."""
        if self._appended[0] == t:
            return self._appended[1]
        b = int(np.searchsorted(self.bclock, t, side="right"))
        u = int(self.batch_first_unit[b]) if b < self.history.batches else self.history.units
        self._appended = (t, (b, u))
        return b, u

    # -- segments -----------------------------------------------------------------------

    def advance(self, t: int) -> None:
        """Apply every roll caused by appends up to ``t``."""
        b_done, _ = self.appended(t)
        while self.next_start is not None and self.next_start < b_done:
            s = self.next_start
            at = int(self.bclock[s])
            self.segs.append(_Seg(int(self.history.batch_offset[s]), int(self.batch_first_unit[s]),
                                  s))
            self.created_starts[self.created] = self.batch_first_unit[s]
            self.created += 1
            self.rolls.append(Roll(at, int(self.history.batch_offset[s]), self.next_reason))
            end, reason = self.roller.end(s)
            self.next_start = end if end < self.history.batches else None
            self.next_reason = reason

    def stats(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's size and ``largestTimestamp`` at ``t``, in one numpy pass."""
        key = (t, len(self.segs), len(self.rolls), len(self.deletions), len(self.cleanings))
        if self._stats is not None and self._stats[0] == key:
            return self._stats[1]
        out = self._stats_now(t)
        self._stats = (key, out)
        return out

    def _stats_now(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        _, u_done = self.appended(t)
        if not self.segs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if self.merged:  # a clean merged segments: rebuild (compacted logs have few)
            starts = np.fromiter((s.start for s in self.segs), np.int64, len(self.segs))
        else:
            starts = self.created_starts[self.created - len(self.segs):self.created]
        lo = int(starts[0])
        rel = starts - lo
        if u_done <= lo:
            return np.zeros(len(starts), np.int64), np.full(len(starts), -1, np.int64)
        if self.config.compact:
            live = self.alive[lo:u_done]
            sizes = np.add.reduceat(np.where(live, self.history.unit_size[lo:u_done], 0.0), rel)
            mx = np.maximum.reduceat(np.where(live, self.history.unit_ts[lo:u_done], -1), rel)
        else:  # only a prefix is ever removed: every unit from the first segment on is live
            ends = np.minimum(np.append(starts[1:], u_done), u_done)
            sizes = self.ucum[ends] - self.ucum[np.minimum(starts, u_done)]
            mx = np.maximum.reduceat(self.history.unit_ts[lo:u_done],
                                     np.minimum(rel, u_done - lo - 1))
        empty_tail = rel >= u_done - lo  # segments with nothing appended yet
        sizes = np.where(empty_tail, 0.0, sizes)
        mx = np.where(empty_tail, -1, mx)
        b_done, _ = self.appended(t)
        for i in np.flatnonzero(mx < 0):
            mx[i] = self.mtime(int(i), b_done)
        return np.rint(sizes).astype(np.int64), mx

    def summaries(self, t: int, upto: int | None = None) -> list[SegmentSummary]:
        """The segments at ``t`` (the first ``upto`` of them) as the retention and cleaner
        rules read them."""
        b_done, u_done = self.appended(t)
        return [self._summary(i, b_done, u_done) for i in range(len(self.segs[:upto]))]

    def _summary(self, i: int, b_done: int, u_done: int) -> SegmentSummary:
        history = self.history
        s = self.segs[i]
        active = i == len(self.segs) - 1
        if not active and s.base in self.sealed:
            return self.sealed[s.base]
        u_end = self.segs[i + 1].start if i + 1 < len(self.segs) else u_done
        sl = slice(s.start, u_end)
        live = self.alive[sl]
        sizes = history.unit_size[sl][live]
        ts = history.unit_ts[sl][live]
        offs = history.unit_offset[sl][live]
        mtime = self.mtime(i, b_done)
        if active:
            last = int(history.batch_last[b_done - 1]) if b_done > s.first_batch else None
        else:
            last = int(offs.max()) if offs.size else None
        mx = int(ts.max()) if ts.size else -1
        ub = history.unit_batch[sl][live]
        out = (SegmentSummary(
            path="", base_offset=s.base, size=round(float(sizes.sum())),
            valid_bytes=round(float(sizes.sum())), is_active=active, mtime_ms=mtime,
            batch_count=int(np.count_nonzero(np.diff(ub))) + 1 if ub.size else 0,
            record_count=int(live.sum()),
            first_offset=int(offs.min()) if offs.size else None, last_offset=last,
            first_timestamp=int(ts[0]) if ts.size else None, log_max_timestamp=mx,
            max_timestamp=mx, max_timestamp_source="log" if mx >= 0 else "mtime"))
        if not active:
            self.sealed[s.base] = out
        return out

    def mtime(self, i: int, b_done: int) -> int:
        """``LogSegment.lastModified``: its last append, or for a cleaned segment the last
        merged member's (``LogCleaner.cleanSegments`` copies it)."""
        s = self.segs[i]
        if s.mtime is not None:
            return s.mtime
        end = self.segs[i + 1].first_batch if i + 1 < len(self.segs) else b_done
        if s.disk_mtime is not None and end <= self.history.on_disk:
            # nothing appended since the run began: the file's own, as ``segtools retention``
            # reads it (a segment of magic 0 messages is aged by it alone)
            return s.disk_mtime
        last = max(end - 1, s.first_batch)
        if last >= self.bclock.shape[0]:  # an empty active segment on disk: rolled by then
            return int(self.bclock[-1]) if self.bclock.size else self.now
        return int(self.bclock[last])

    def oldest_left(self, u_done: int) -> int:
        lo = self.segs[0].start if self.segs else u_done
        live = self.alive[lo:u_done]
        ts = self.history.oldest_ts[lo:u_done][live]
        ts = ts[ts >= 0]
        return int(ts.min()) if ts.size else -1

    # -- the rules ----------------------------------------------------------------------

    def retention(self, t: int) -> None:
        if not self.segs:
            return
        sizes, largest = self.stats(t)
        if not _may_delete(sizes, largest, self.config, t):
            return
        segs = self.summaries(t, _reach(sizes, largest, self.config, t))
        if len(segs) < len(self.segs):  # the rest only counts by its size
            rest = slice(len(segs), None)
            newest = int(largest[rest].max())
            segs.append(dataclasses.replace(
                self._summary(len(self.segs) - 1, *self.appended(t)),
                base_offset=self.segs[len(segs)].base, size=int(sizes[rest].sum()),
                valid_bytes=int(sizes[rest].sum()), max_timestamp=newest,
                log_max_timestamp=newest))
        copied = self.highest_remote_offset if self.from_disk and t == self.now else None
        pr = explain_retention(segs, self.config, now_ms=t, high_watermark=None,
                               log_start_offset=None, highest_remote_offset=copied)
        gone = [v for v in pr.segments if v.deletable]
        if not gone:
            return
        kept = next((v.base_offset for v in pr.segments if not v.deletable), None)
        n = len(self.segs) if kept is None else \
            next(i for i, x in enumerate(self.segs) if x.base == kept)
        _, u_done = self.appended(t)
        cut = self.segs[n].start if n < len(self.segs) else u_done
        self.alive[:cut] = False
        freed = sum(v.size for v in gone)
        self.deletions.append(Deletion(t, tuple(x.base for x in self.segs[:n]), freed,
                                       gone[0].reason))
        self.segs = self.segs[n:]
        if pr.rolled:  # UnifiedLog.deleteSegments rolled an empty active segment first
            self.segs = []
            b_done, _ = self.appended(t)
            if b_done < self.history.batches:
                self.next_start = b_done
                self.next_reason = ROLL_LOG_EMPTIED
            else:
                self.next_start = None
        self.removals.append((t, freed, self.oldest_left(u_done), u_done))

    def clean(self, t: int) -> None:
        """``LogCleanerManager.grabFilthiestCompactedLog`` for this log, then
        ``LogCleaner.doClean`` when it qualifies."""
        segs = self.summaries(t)
        if len(segs) < 2:
            return
        history = self.history
        b_done, u_done = self.appended(t)
        first_batch = {s.base: int(history.batch_ts[s.first_batch]) for s in self.segs}
        leo = segs[-1].next_offset
        bounds = comp.CleanableBounds.compute(segs, self.config, t, segs[0].base_offset, leo, leo,
                                      self.checkpoint, first_batch)
        if not bounds.would_clean or bounds.first_uncleanable is None:
            return
        first_dirty, first_uncleanable = bounds.first_dirty, bounds.first_uncleanable
        upto = int(np.searchsorted(history.unit_offset, first_uncleanable))
        sl = slice(self.segs[0].start, upto)
        live = self.alive[sl]
        keys = history.unit_key[sl]
        offs = history.unit_offset[sl]
        dirty = live & (offs >= first_dirty) & (keys >= 0)
        # buildOffsetMap: key -> latest offset in the dirty range
        latest = {}
        if dirty.any():
            dk, do = keys[dirty], offs[dirty]
            order = np.lexsort((do, dk))
            last = np.r_[dk[order][1:] != dk[order][:-1], True]
            latest = dict(zip(dk[order][last].tolist(), do[order][last].tolist(), strict=True))
        end_offset = first_uncleanable
        groups = comp.group_segments_by_size(segs, self.config, end_offset, first_uncleanable)
        self.sealed.clear()
        # shouldRetainRecord over every rewritten unit (segments below end_offset)
        idx = np.arange(sl.start, upto)
        lat = np.array([latest.get(k, -1) for k in keys.tolist()], np.int64) if latest else \
            np.full(keys.shape[0], -1, np.int64)
        keep = live & (keys >= 0) & (offs >= lat)
        tomb = keep & history.unit_tombstone[sl]
        hz = self.horizon[sl]
        expired = tomb & (hz >= 0) & (t >= hz)
        keep &= ~expired
        stamp = tomb & ~expired & (hz < 0)
        self.horizon[idx[stamp]] = t + self.config.delete_retention_ms
        removed = live & ~keep
        freed = float(history.unit_size[sl][removed].sum())
        self.alive[idx[removed]] = False
        # cleanSegments: each group becomes one segment at its first member's base offset
        at = {s.base: i for i, s in enumerate(self.segs)}
        mtimes = {s.base: self.mtime(i, b_done) for i, s in enumerate(self.segs)}
        merged: list[_Seg] = []
        for g in groups:
            first = self.segs[at[g.base_offsets[0]]]
            first.mtime = mtimes[g.base_offsets[-1]]
            merged.append(first)
        rest = [s for s in self.segs if s.base >= end_offset]
        self.segs = merged + rest
        self.merged = True
        after = self.summaries(t)
        largest = {s.base_offset: s.largest_timestamp for s in after}
        self.cleanings.append(Cleaning(
            t, tuple(g.base_offsets for g in groups),
            tuple(largest[g.base_offsets[0]] for g in groups), round(freed), end_offset,
            sum(g.size for g in groups)))
        self.checkpoint = end_offset
        if freed:
            self.removals.append((t, round(freed), self.oldest_left(u_done), u_done))

    # -- the loop -----------------------------------------------------------------------

    def next_time(self, t: int) -> int:
        """The next tick at which a roll, an expiry, a size breach or a cleaner bound can
        change anything."""
        cands = [self.end + 1]
        roll_at = -1
        if self.next_start is not None:
            roll_at = int(self.bclock[self.next_start])
            cands.append(roll_at)
        if not self.segs:
            return max(self.ceil_tick(min(cands)), t + self.tick)
        sizes, largest = self.stats(t)
        config = self.config
        r = config.local_retention_ms_effective
        if config.delete and r >= 0:
            # past retention already and still here: the first check held it back for the
            # remote copy (a tiered log), which later checks take as done
            expiry = int(largest[0]) + r + 1
            cands.append(expiry if expiry > t or len(sizes) < 2 else t + 1)
        rb = config.local_retention_bytes_effective
        if config.delete and rb >= 0 and len(sizes) > 1:
            need = rb + int(sizes[0]) - int(sizes.sum())
            _, u_done = self.appended(t)
            m = int(np.searchsorted(self.ucum, self.ucum[u_done] + need, side="left"))
            if need <= 0:
                cands.append(t + 1)
            elif m - 1 < self.history.units:
                cands.append(int(self.uclock[max(m - 1, 0)]))
        if config.compact:
            for s, m in zip(largest[:-1].tolist(), self.segs[:-1], strict=True):
                if config.min_compaction_lag_ms > 0:
                    # cleanableOffsets: uncleanable while largestTimestamp > now - lag
                    cands.append(s + config.min_compaction_lag_ms)
                if config.max_compaction_lag_ms < _NEVER:
                    cands.append(int(self.history.batch_ts[m.first_batch]) +
                                 config.max_compaction_lag_ms + 1)
        if not config.compact and len(self.segs) > 1:  # rolls matter only to the first segment
            cands = [x for x in cands if x != roll_at]
        later = [x for x in cands if x > t]
        return max(self.ceil_tick(min(later)), t + self.tick)

    def snapshot(self) -> None:
        """The log at ``now``, before the rules run then (a run from the disk: the segments
        on disk, as ``segtools retention`` reads them)."""
        self.advance(self.now)
        self.at_now = tuple(self.summaries(self.now))
        if not self.from_disk:
            self.note_oldest(self.now)

    def note_oldest(self, t: int) -> None:
        """The oldest record left at ``t``: for a run from the disk, after the first retention
        check at ``now``, which takes exactly the segments ``segtools retention`` calls
        deletable then (the same rule function), so it is the oldest record retention keeps:
        its oldest stale record, or where nothing is stale its oldest record."""
        _, u_done = self.appended(t)
        self.oldest_at_now = self.oldest_left(u_done) if self.segs else -1

    def run(self) -> Run:
        t = self.origin
        snap = False
        while t <= self.end:
            if not snap and t >= self.now:
                self.snapshot()
                snap = True
            self.advance(t)
            if self.config.compact:
                self.clean(t)
            self.retention(t)
            if self.from_disk and t == self.now:
                self.note_oldest(t)
            nxt = self.next_time(t)
            if not snap and nxt > self.now:
                self.snapshot()
                snap = True
            t = nxt
        self.advance(self.end)
        if not snap:
            self.snapshot()
        return Run(self.config, self.origin, self.now, self.end, tuple(self.rolls),
                   tuple(self.deletions), tuple(self.cleanings), self.at_now,
                   self.uclock, self.ucum, self.history.oldest_ts, tuple(self.removals),
                   self.initial_segments, self.oldest_at_now, self.history.replay_scale,
                   self.history.disk_bytes if self.from_disk and self.history.disk_bytes >= 0
                   else sum(s.size for s in self.at_now))


def _may_delete(sizes: np.ndarray, largest: np.ndarray, config: TopicConfig, now: int) -> bool:
    """Whether ``deleteOldSegments`` can take anything at ``now``: its walk starts at the first
    segment, which goes only past ``retention.ms`` (``now - largestTimestamp > retention.ms``)
    or inside the bytes over ``retention.bytes`` (``size - retention.bytes - segment.size >=
    0``); the log start offset is the first segment's here. When neither can hold (with a
    byte of slack for the rounding of units' shares), the rule function is not asked: most
    ticks of a long run delete nothing."""
    if not config.delete:
        return False  # only the log start offset deletes, and here it is the first segment's
    if sizes.shape[0] == 0 or sizes[0] <= 0:
        return True
    r = config.local_retention_ms_effective
    rb = config.local_retention_bytes_effective
    if r >= 0 and now - int(largest[0]) > r:
        return True
    return rb >= 0 and int(sizes.sum()) - rb - int(sizes[0]) >= -2


def _reach(sizes: np.ndarray, largest: np.ndarray, config: TopicConfig, now: int) -> int:
    """How many leading segments ``deleteOldSegments`` can reach at ``now``: its walk stops at
    the first segment that is neither past retention.ms nor inside the bytes over
    retention.bytes, so what follows only counts by its total size, and a log of thousands of
    small segments costs one short call per check. Returns a count to spell out (one more
    than the walk can take; the rest is folded into one stand-in)."""
    n = sizes.shape[0]
    r = config.local_retention_ms_effective
    rb = config.local_retention_bytes_effective
    if not config.delete or n <= 8:
        return n
    timed = (now - largest > r) if r >= 0 else np.zeros(n, np.bool_)
    sized = (np.cumsum(sizes) <= int(sizes.sum()) - rb) if rb >= 0 else np.zeros(n, np.bool_)
    stop = np.flatnonzero(~(timed | sized))
    first = int(stop[0]) if stop.size else n
    return n if first + 3 >= n else first + 1


# --------------------------------------------------------------------------- summaries


@dataclass(frozen=True, slots=True)
class Outcome:
    """A run seen from ``now`` to the end of the horizon: the ``S`` object of the JSON
    contract (``peak_bytes``, ``trough_bytes``, ``oldest_age_ms_max``, ``oldest_age_ms_end``,
    ``series``), where it started (``start_bytes`` and ``oldest_age_ms_start``: the disk at
    ``now``, before any rule ran), the oldest record over the horizon's second half
    (``oldest_age_ms_late``: what a config keeps once it has had time to act, the figure a
    recommendation is judged by), and the cost of the config (segments, rolls, deletions,
    cleaner work). ``replay_scale`` above 1 says the replay cap bound: one simulated batch
    stood for that many."""

    peak_bytes: int
    trough_bytes: int
    oldest_age_ms_max: int | None
    oldest_age_ms_end: int | None
    series: tuple[tuple[int, int, int | None], ...]
    segments_max: int
    rolls: int
    deletions: int
    cleaned_bytes: int
    cleanings: int = 0  # cleaner passes in the window
    cleaner_read_bytes: int = 0  # what those passes read and rewrote
    start_bytes: int = 0
    oldest_age_ms_start: int | None = None
    oldest_age_ms_late: int | None = None
    replay_scale: int = 1
    late_peak_bytes: int = 0  # the size's peak and trough over the horizon's second half
    late_trough_bytes: int = 0
    appended_bytes: int = 0  # what the ingest model appended within the window

    @property
    def swing(self) -> float:
        """How far the size moves, as a share of its peak."""
        return (self.peak_bytes - self.trough_bytes) / self.peak_bytes if self.peak_bytes else 0.0

    @property
    def swing_late(self) -> float:
        """The swing over the horizon's second half: the sawtooth a config settles into, not
        the one-off drop from what is on disk today."""
        peak, trough = self.late_peak_bytes, self.late_trough_bytes
        return (peak - trough) / peak if peak else 0.0

    def to_json(self) -> dict:
        return {"peak_bytes": self.peak_bytes, "trough_bytes": self.trough_bytes,
                "oldest_age_ms_max": self.oldest_age_ms_max,
                "oldest_age_ms_end": self.oldest_age_ms_end,
                "oldest_age_ms_late": self.oldest_age_ms_late,
                "start_bytes": self.start_bytes,
                "oldest_age_ms_start": self.oldest_age_ms_start,
                "swing": round(self.swing, 4),
                "late_peak_bytes": self.late_peak_bytes,
                "late_trough_bytes": self.late_trough_bytes,
                "swing_late": round(self.swing_late, 4),
                "segments_max": self.segments_max, "rolls": self.rolls,
                "deletions": self.deletions, "cleaned_bytes": self.cleaned_bytes,
                "replay_scale": self.replay_scale, "appended_bytes": self.appended_bytes,
                "series": [list(r) for r in self.series]}


def sample_times(runs: Sequence[Run], now_ms: int, end_ms: int, points: int = 600
                 ) -> np.ndarray:
    """Where to look: a regular grid plus every removal and the millisecond before it (the
    peak of a sawtooth is just before its drop)."""
    grid = np.linspace(now_ms, end_ms, points).astype(np.int64)
    ev = [r[0] for run in runs for r in run.removals if now_ms <= r[0] <= end_ms]
    ev = np.asarray(ev, np.int64)
    return np.unique(np.concatenate([grid, ev, np.maximum(ev - 1, now_ms)]))


class Tally:
    """Runs summed on one time grid as they finish, so a topic of thousands of partitions
    holds one grid, not every partition's arrays (memory stays bounded)."""

    def __init__(self, times: np.ndarray, now_ms: int, end_ms: int) -> None:
        self.times = times
        self.now = now_ms
        self.end = end_ms
        self.size = np.zeros(times.shape[0], np.int64)
        self.oldest = np.full(times.shape[0], -1, np.int64)
        self.rolls = self.deletions = self.cleaned = self.segments_max = 0
        self.cleanings = self.cleaner_read = 0
        self.start_bytes = 0
        self.start_oldest = -1
        self.replay_scale = 1
        self.appended = 0

    def add(self, run: Run) -> Tally:
        self.size += run.size_at(self.times)
        self.oldest = _older(self.oldest, run.oldest_at(self.times))
        within = range(self.now, self.end + 1)
        self.rolls += sum(1 for r in run.rolls if r.at_ms in within)
        self.deletions += sum(1 for d in run.deletions if d.at_ms in within)
        self.cleaned += sum(c.removed_bytes for c in run.cleanings if c.at_ms in within)
        self.cleanings += sum(1 for c in run.cleanings if c.at_ms in within)
        self.cleaner_read += sum(c.read_bytes for c in run.cleanings if c.at_ms in within)
        self.segments_max += _segments_max(run, self.now, self.end)
        self.start_bytes += run.start_bytes
        self.start_oldest = int(_older(np.array([self.start_oldest]),
                                       np.array([run.oldest_at_now]))[0])
        self.replay_scale = max(self.replay_scale, run.replay_scale)
        window = run.unit_cum[np.searchsorted(run.unit_clock, [self.now, self.end],
                                              side="right")]
        self.appended += round(float(window[1] - window[0]))
        return self

    def merge(self, other: Tally) -> Tally:
        """Another tally of the same grid (other partitions, summed elsewhere: a worker
        process) folded into this one; sums and minima, so the order does not matter."""
        self.size += other.size
        self.oldest = _older(self.oldest, other.oldest)
        self.rolls += other.rolls
        self.deletions += other.deletions
        self.cleaned += other.cleaned
        self.cleanings += other.cleanings
        self.cleaner_read += other.cleaner_read
        self.segments_max += other.segments_max
        self.start_bytes += other.start_bytes
        self.start_oldest = int(_older(np.array([self.start_oldest]),
                                       np.array([other.start_oldest]))[0])
        self.replay_scale = max(self.replay_scale, other.replay_scale)
        self.appended += other.appended
        return self

    def outcome(self) -> Outcome:
        """The grid's figures. An age is None only where the log holds no record; a record
        timestamped after the moment (a producer's clock ahead, or ``--at`` before the data)
        has a negative age, as ``segtools retention`` gives it, not none."""
        size, oldest, times = self.size, self.oldest, self.times
        held = oldest >= 0
        ages = times - oldest
        second_half = times >= self.now + (self.end - self.now) // 2
        late, late_held, late_size = ages[second_half], held[second_half], size[second_half]
        return Outcome(int(size.max()) if size.size else 0,
                       int(size.min()) if size.size else 0,
                       int(ages[held].max()) if held.any() else None,
                       int(ages[-1]) if ages.size and held[-1] else None,
                       bounded_series(times, size, oldest), self.segments_max, self.rolls,
                       self.deletions, self.cleaned, self.cleanings, self.cleaner_read,
                       self.start_bytes,
                       self.now - self.start_oldest if self.start_oldest >= 0 else None,
                       int(late[late_held].max()) if late_held.any() else None,
                       self.replay_scale,
                       int(late_size.max()) if late_size.size else 0,
                       int(late_size.min()) if late_size.size else 0, self.appended)


def _older(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pointwise the older of two oldest-record timestamps (-1: none)."""
    return np.where((a < 0) | ((b >= 0) & (b < a)), b, a)


def outcome(runs: Sequence[Run], now_ms: int, end_ms: int) -> Outcome:
    """One partition (one run, sampled at its own events) or a few runs summed."""
    tally = Tally(sample_times(runs, now_ms, end_ms), now_ms, end_ms)
    for run in runs:
        tally.add(run)
    return tally.outcome()


def topic_grid(now_ms: int, end_ms: int, points: int = 4000) -> np.ndarray:
    """The grid a topic's partitions are summed on (a partition's own numbers use its exact
    events; a topic's peak can fall between two points, at most ``(end - now) / points``
    apart)."""
    return np.unique(np.linspace(now_ms, end_ms, points).astype(np.int64))


def _segments_max(run: Run, now_ms: int, end_ms: int) -> int:
    """The most segments on disk at once in the window, from the roll and deletion events."""
    events = sorted([(r.at_ms, 1) for r in run.rolls] +
                    [(d.at_ms, -len(d.base_offsets)) for d in run.deletions] +
                    [(c.at_ms, -sum(len(g) - 1 for g in c.groups)) for c in run.cleanings])
    n = best = run.initial_segments
    for at, delta in events:
        n += delta
        if at >= now_ms and at <= end_ms:
            best = max(best, n)
        elif at < now_ms:
            best = n
    return best


def bounded_series(times: np.ndarray, size: np.ndarray, oldest: np.ndarray,
                   buckets: int = SERIES_BUCKETS) -> tuple[tuple[int, int, int | None], ...]:
    """At most two rows per bucket, its highest and its lowest size in time order, so a
    sawtooth keeps its teeth, plus the first and the last row, so a chart starts at the
    moment and ends at the horizon (a first row between its bucket's extremes was dropped,
    and busy-clicks' chart began 65 minutes after ``--at``); ``oldest_record_ms`` is null
    while the log is empty."""
    n = times.shape[0]
    if n == 0:
        return ()
    edges = np.linspace(0, n, min(buckets, n) + 1).astype(np.int64)
    starts = edges[:-1][edges[:-1] < edges[1:]]
    # per bucket, the index of its highest and lowest size: reduceat on the values, then the
    # first position in the bucket holding them
    hi = np.maximum.reduceat(size, starts)
    lo = np.minimum.reduceat(size, starts)
    bucket = np.repeat(np.arange(starts.shape[0]), np.diff(np.r_[starts, n]))
    at_hi = np.flatnonzero(size == hi[bucket])
    at_lo = np.flatnonzero(size == lo[bucket])
    first_hi = at_hi[np.r_[True, bucket[at_hi][1:] != bucket[at_hi][:-1]]]
    first_lo = at_lo[np.r_[True, bucket[at_lo][1:] != bucket[at_lo][:-1]]]
    keep = np.unique(np.r_[0, first_hi, first_lo, n - 1])
    return tuple((t, s, o if o >= 0 else None) for t, s, o in zip(
        times[keep].tolist(), size[keep].tolist(), oldest[keep].tolist(), strict=True))


# --------------------------------------------------------------------------- changes


def apply_changes(config: TopicConfig, changes: Mapping[str, object]) -> TopicConfig:
    """``config`` with ``changes`` (config name -> parsed value), each marked as proposed."""
    values = {DEFINITIONS[name].attr: value for name, value in changes.items()}
    prov = tuple(p for p in config.provenance if p[0] not in changes) + tuple(
        (name, ConfigValue("what_if", "proposed")) for name in changes)
    return replace(config, **values, provenance=prov)
