"""What a partition would look like under another config: Kafka's log lifecycle replayed over
the data's own history and an ingest model for the future.

Today's verdicts (:mod:`segtools.analysis.retention`) and the no-new-data forecast
(:mod:`segtools.analysis.forecast`) answer for the segments on disk. The operator's next question
is what a different ``segment.bytes`` or ``segment.ms`` would have done; that needs the whole
lifecycle, because the segment boundaries themselves change. The simulator appends the
partition's batches again, in offset order, each at its *append clock* (the running maximum of
the batch timestamps: a broker appends in time order), and applies Kafka's rules as it goes:

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
oldest record over time. Apart from the calls into the rule functions at the few ticks where
something can change, the work is numpy over the batch arrays, so a month of a thousand
partitions takes seconds.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from segtools.analysis import compaction as comp
from segtools.analysis.config import TopicConfig
from segtools.analysis.retention import explain_retention
from segtools.storage.summary import SegmentSummary

#: ``index.interval.bytes`` (``LogConfig`` default): an index entry per this many bytes appended.
INDEX_INTERVAL_BYTES = 4096
#: ``log.retention.check.interval.ms`` (``ServerLogConfigs`` default).
RETENTION_CHECK_INTERVAL_MS = 300_000
#: ``log.cleaner.backoff.ms``: how long an idle cleaner thread sleeps between looks.
CLEANER_BACKOFF_MS = 15_000
#: Rows of a ``series`` at most (two per bucket: its peak and its trough).
SERIES_BUCKETS = 120
#: Replayed batches per partition at most (see :func:`extend`).
MAX_REPLAY_BATCHES = 20_000
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


@dataclass(frozen=True, slots=True)
class Ingest:
    """The future appends: ``replay`` repeats the partition's observed batches (sizes, gaps,
    keys) after the evaluation time; ``bytes_per_s`` respaces that replay to a given rate for
    the whole topic (split evenly over its partitions)."""

    bytes_per_s: float | None = None

    def to_json(self) -> object:
        return "auto" if self.bytes_per_s is None else self.bytes_per_s


#: The default ingest model: each partition's own history, replayed.
AUTO = Ingest()


def extend(h: History, *, now_ms: int, end_ms: int, ingest: Ingest = AUTO,
           partitions: int = 1) -> History:
    """The history followed by replayed copies of itself up to ``end_ms``.

    Copy ``c`` starts one mean gap after the previous one (after ``now_ms`` for the first),
    with every offset moved past the previous copy. Keys written once in the history stay
    unique in each copy (a fresh id per copy); keys written more than once keep their ids, so
    updates keep superseding: the key *shape* is replayed, not the keys. Without at least two
    batches there is no rate to replay and nothing is added (unless a rate is given).
    """
    n = h.batches
    if n == 0:
        return h
    clock = _append_clock(h.batch_ts)
    span = int(clock[-1] - clock[0])
    total = int(h.batch_size.sum())
    if ingest.bytes_per_s is not None:
        rate = ingest.bytes_per_s / max(partitions, 1) / 1000.0  # bytes per ms
        if rate <= 0:
            return h
        scale = (total / rate) / max(span, 1) if span > 0 else 1.0
        gap = max(int(total / n / rate), 1)
    else:
        if n < 2 or span <= 0:
            return h
        scale = 1.0
        gap = max(span // (n - 1), 1)
    rel = ((clock - clock[0]) * scale).astype(np.int64)
    period = int(rel[-1]) + gap
    start = max(now_ms, int(clock[-1])) + gap
    copies = (end_ms - start) // period + 1 if end_ms >= start else 0
    if copies <= 0:
        return h
    # memory stays bounded: past MAX_REPLAY_BATCHES, one replayed batch stands for ``k`` of
    # the history's (k times the bytes, k times the period), which keeps the rate
    k = max(1, -(-int(copies) * max(n, h.units) // MAX_REPLAY_BATCHES))
    period *= k
    copies = int(-(-(end_ms - start) // period))
    c_b = np.repeat(np.arange(copies, dtype=np.int64), n)  # the copy of each replayed batch
    c_u = np.repeat(np.arange(copies, dtype=np.int64), h.units)
    span_offsets = int(h.batch_last[-1]) + 1 - int(h.batch_offset[0])
    shift_b, shift_u = (c_b + 1) * span_offsets, (c_u + 1) * span_offsets
    # each batch keeps its lateness against the clock; a record its place in its batch
    bts = start + c_b * period + np.tile(rel * k + (h.batch_ts - clock), copies)
    ub = np.tile(h.unit_batch, copies) + c_u * n  # within the replay
    uts = bts[ub] - np.tile(h.batch_ts[h.unit_batch] - h.unit_ts, copies)
    ub += n  # after the history's own batches
    keys = np.tile(h.unit_key, copies)
    keyed = h.unit_key >= 0
    if keyed.any():
        counts = np.bincount(h.unit_key[keyed], minlength=int(h.unit_key.max()) + 1)
        once = np.tile(keyed & (counts[np.maximum(h.unit_key, 0)] == 1), copies)
        keys = np.where(once, keys + (c_u + 1) * (int(h.unit_key.max()) + 1), keys)
    more = (np.tile(h.batch_offset, copies) + shift_b, np.tile(h.batch_last, copies) + shift_b,
            bts, np.tile(h.batch_size, copies) * k, ub,
            np.tile(h.unit_offset, copies) + shift_u, uts, np.tile(h.unit_size, copies) * k,
            keys, np.tile(h.unit_tombstone, copies), np.full(copies * h.units, -1, np.int64))
    own = (h.batch_offset, h.batch_last, h.batch_ts, h.batch_size, h.unit_batch,
           h.unit_offset, h.unit_ts, h.unit_size, h.unit_key, h.unit_tombstone, h.unit_horizon)
    return History(*(np.concatenate([o, m]) for o, m in zip(own, more, strict=True)))


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
    unit_ts: np.ndarray = field(repr=False)
    removals: tuple[tuple[int, int, int, int], ...] = ()

    def size_at(self, times: np.ndarray) -> np.ndarray:
        appended = self.unit_cum[np.searchsorted(self.unit_clock, times, side="right")]
        if not self.removals:
            return np.rint(appended).astype(np.int64)
        at = np.array([r[0] for r in self.removals], np.int64)
        gone = np.concatenate([[0.0], np.cumsum([r[1] for r in self.removals])])
        return np.rint(appended - gone[np.searchsorted(at, times, side="right")]).astype(np.int64)

    def oldest_at(self, times: np.ndarray) -> np.ndarray:
        """The oldest record timestamp on disk (-1: the log is empty). Records appended after
        the last removal are taken as newer than what it left (true when timestamps follow
        the append clock)."""
        appended = np.searchsorted(self.unit_clock, times, side="right")
        first_ts = np.where(appended > 0, self.unit_ts[0] if self.unit_ts.size else -1, -1)
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
        entries = max(config.segment_index_bytes // 12, 1)  # TimeIndex entry: 12 bytes
        index_cap = entries * INDEX_INTERVAL_BYTES
        cap, reason = (config.segment_bytes, ROLL_SEGMENT_BYTES)
        if index_cap < cap:
            cap, reason = index_cap, ROLL_INDEX_FULL
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


def simulate(h: History, config: TopicConfig, *, start_ms: int | None = None, now_ms: int,
             end_ms: int, seed: str = "", cleaner_offset: int | None = None,
             tick_ms: int | None = None) -> Run:
    """Replay ``h`` under ``config`` from its first batch to ``end_ms``."""
    return _Simulation(h, config, now_ms, end_ms, seed, cleaner_offset, tick_ms,
                       start_ms).run()


class _Simulation:
    def __init__(self, h: History, config: TopicConfig, now_ms: int, end_ms: int, seed: str,
                 cleaner_offset: int | None, tick_ms: int | None,
                 start_ms: int | None) -> None:
        self.h = h
        self.c = config
        self.now = now_ms
        self.end = end_ms
        self.tick = tick_ms or (CLEANER_BACKOFF_MS if config.compact else
                                RETENTION_CHECK_INTERVAL_MS)
        self.bclock = _append_clock(h.batch_ts)
        # a delete-only history has one unit per batch (unit_batch is arange)
        first = np.arange(h.batches)
        per_batch = h.units == h.batches and np.array_equal(h.unit_batch, first)
        self.uclock = self.bclock if per_batch else \
            self.bclock[h.unit_batch] if h.units else np.zeros(0, np.int64)
        self.ucum = np.concatenate([[0.0], np.cumsum(h.unit_size)])
        self.batch_first_unit = first if per_batch else np.searchsorted(h.unit_batch, first)
        self.roller = _Roller.build(h, config, zlib.crc32(seed.encode()), self.bclock)
        self.alive = np.ones(h.units, np.bool_)
        self.horizon = h.unit_horizon.copy()
        self.origin = int(self.bclock[0]) if h.batches else now_ms
        if start_ms is not None:
            self.origin = min(self.origin, start_ms)
        self.segs: list[_Seg] = []
        self.active_end = 0  # first batch of the next segment (batches) once rolled
        self.next_start: int | None = 0 if h.batches else None  # batch that starts a segment
        self.next_reason = ROLL_FIRST
        self.checkpoint = cleaner_offset
        self.rolls: list[Roll] = []
        self.deletions: list[Deletion] = []
        self.cleanings: list[Cleaning] = []
        self.removals: list[tuple[int, int, int, int]] = []
        self.at_now: tuple[SegmentSummary, ...] = ()
        # every segment's first unit in creation order: segs is a suffix of it until a clean
        self.created_starts = np.zeros(h.batches + 1, np.int64)
        self.created = 0
        self.merged = False
        self.sealed: dict[int, SegmentSummary] = {}  # summaries of sealed segments, until cleaned
        # a tick asks appended() and stats() several times; the answers hold until the next
        # tick or the next change of the log (a roll, a deletion, a clean)
        self._appended: tuple[int, tuple[int, int]] = (-1, (0, 0))
        self._stats: tuple[tuple, tuple[np.ndarray, np.ndarray]] | None = None

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
        u = int(self.batch_first_unit[b]) if b < self.h.batches else self.h.units
        self._appended = (t, (b, u))
        return b, u

    # -- segments -----------------------------------------------------------------------

    def advance(self, t: int) -> None:
        """Apply every roll caused by appends up to ``t``."""
        b_done, _ = self.appended(t)
        while self.next_start is not None and self.next_start < b_done:
            s = self.next_start
            at = int(self.bclock[s])
            self.segs.append(_Seg(int(self.h.batch_offset[s]), int(self.batch_first_unit[s]),
                                  s))
            self.created_starts[self.created] = self.batch_first_unit[s]
            self.created += 1
            self.rolls.append(Roll(at, int(self.h.batch_offset[s]), self.next_reason))
            end, reason = self.roller.end(s)
            self.next_start = end if end < self.h.batches else None
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
        if self.c.compact:
            live = self.alive[lo:u_done]
            sizes = np.add.reduceat(np.where(live, self.h.unit_size[lo:u_done], 0.0), rel)
            mx = np.maximum.reduceat(np.where(live, self.h.unit_ts[lo:u_done], -1), rel)
        else:  # only a prefix is ever removed: every unit from the first segment on is live
            ends = np.minimum(np.append(starts[1:], u_done), u_done)
            sizes = self.ucum[ends] - self.ucum[np.minimum(starts, u_done)]
            mx = np.maximum.reduceat(self.h.unit_ts[lo:u_done],
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
        h = self.h
        s = self.segs[i]
        active = i == len(self.segs) - 1
        if not active and s.base in self.sealed:
            return self.sealed[s.base]
        u_end = self.segs[i + 1].start if i + 1 < len(self.segs) else u_done
        sl = slice(s.start, u_end)
        live = self.alive[sl]
        sizes = h.unit_size[sl][live]
        ts = h.unit_ts[sl][live]
        offs = h.unit_offset[sl][live]
        mtime = self.mtime(i, b_done)
        if active:
            last = int(h.batch_last[b_done - 1]) if b_done > s.first_batch else None
        else:
            last = int(offs.max()) if offs.size else None
        mx = int(ts.max()) if ts.size else -1
        ub = h.unit_batch[sl][live]
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
        return int(self.bclock[max(end - 1, s.first_batch)])

    def oldest_left(self, u_done: int) -> int:
        lo = self.segs[0].start if self.segs else u_done
        live = self.alive[lo:u_done]
        ts = self.h.unit_ts[lo:u_done][live]
        return int(ts.min()) if ts.size else -1

    # -- the rules ----------------------------------------------------------------------

    def retention(self, t: int) -> None:
        if not self.segs:
            return
        sizes, largest = self.stats(t)
        if not _may_delete(sizes, largest, self.c, t):
            return
        segs = self.summaries(t, _reach(sizes, largest, self.c, t))
        if len(segs) < len(self.segs):  # the rest only counts by its size
            rest = slice(len(segs), None)
            newest = int(largest[rest].max())
            segs.append(dataclasses.replace(
                self._summary(len(self.segs) - 1, *self.appended(t)),
                base_offset=self.segs[len(segs)].base, size=int(sizes[rest].sum()),
                valid_bytes=int(sizes[rest].sum()), max_timestamp=newest,
                log_max_timestamp=newest))
        pr = explain_retention(segs, self.c, now_ms=t, high_watermark=None,
                               log_start_offset=None)
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
            if b_done < self.h.batches:
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
        h = self.h
        b_done, u_done = self.appended(t)
        first_batch = {s.base: int(h.batch_ts[s.first_batch]) for s in self.segs}
        leo = segs[-1].next_offset
        bounds = comp.CleanableBounds.compute(segs, self.c, t, segs[0].base_offset, leo, leo,
                                      self.checkpoint, first_batch)
        if not bounds.would_clean or bounds.first_uncleanable is None:
            return
        fd, fuo = bounds.first_dirty, bounds.first_uncleanable
        upto = int(np.searchsorted(h.unit_offset, fuo))
        sl = slice(self.segs[0].start, upto)
        live = self.alive[sl]
        keys = h.unit_key[sl]
        offs = h.unit_offset[sl]
        dirty = live & (offs >= fd) & (keys >= 0)
        # buildOffsetMap: key -> latest offset in the dirty range
        latest = {}
        if dirty.any():
            dk, do = keys[dirty], offs[dirty]
            order = np.lexsort((do, dk))
            last = np.r_[dk[order][1:] != dk[order][:-1], True]
            latest = dict(zip(dk[order][last].tolist(), do[order][last].tolist(), strict=True))
        end_offset = fuo
        groups = comp.group_segments_by_size(segs, self.c, end_offset, fuo)
        self.sealed.clear()
        # shouldRetainRecord over every rewritten unit (segments below end_offset)
        idx = np.arange(sl.start, upto)
        lat = np.array([latest.get(k, -1) for k in keys.tolist()], np.int64) if latest else \
            np.full(keys.shape[0], -1, np.int64)
        keep = live & (keys >= 0) & (offs >= lat)
        tomb = keep & h.unit_tombstone[sl]
        hz = self.horizon[sl]
        expired = tomb & (hz >= 0) & (t >= hz)
        keep &= ~expired
        stamp = tomb & ~expired & (hz < 0)
        self.horizon[idx[stamp]] = t + self.c.delete_retention_ms
        removed = live & ~keep
        freed = float(h.unit_size[sl][removed].sum())
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
        c = self.c
        r = c.local_retention_ms_effective
        if c.delete and r >= 0:
            cands.append(int(largest[0]) + r + 1)
        rb = c.local_retention_bytes_effective
        if c.delete and rb >= 0 and len(sizes) > 1:
            need = rb + int(sizes[0]) - int(sizes.sum())
            _, u_done = self.appended(t)
            m = int(np.searchsorted(self.ucum, self.ucum[u_done] + need, side="left"))
            if need <= 0:
                cands.append(t + 1)
            elif m - 1 < self.h.units:
                cands.append(int(self.uclock[max(m - 1, 0)]))
        if c.compact:
            for s, m in zip(largest[:-1].tolist(), self.segs[:-1], strict=True):
                if c.min_compaction_lag_ms > 0:
                    # cleanableOffsets: uncleanable while largestTimestamp > now - lag
                    cands.append(s + c.min_compaction_lag_ms)
                if c.max_compaction_lag_ms < _NEVER:
                    cands.append(int(self.h.batch_ts[m.first_batch]) +
                                 c.max_compaction_lag_ms + 1)
        if not c.compact and len(self.segs) > 1:  # rolls matter only to the first segment
            cands = [x for x in cands if x != roll_at]
        later = [x for x in cands if x > t]
        return max(self.ceil_tick(min(later)), t + self.tick)

    def run(self) -> Run:
        t = self.origin
        snap = False
        while t <= self.end:
            if not snap and t >= self.now:
                self.advance(self.now)
                self.at_now = tuple(self.summaries(self.now))
                snap = True
            self.advance(t)
            if self.c.compact:
                self.clean(t)
            self.retention(t)
            nxt = self.next_time(t)
            if not snap and nxt > self.now:
                self.advance(self.now)
                self.at_now = tuple(self.summaries(self.now))
                snap = True
            t = nxt
        self.advance(self.end)
        if not snap:
            self.at_now = tuple(self.summaries(self.now))
        return Run(self.c, self.origin, self.now, self.end, tuple(self.rolls),
                   tuple(self.deletions), tuple(self.cleanings), self.at_now,
                   self.uclock, self.ucum, self.h.unit_ts, tuple(self.removals))


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
    ``series``) and the cost of the config (segments, files, index memory, cleaner work)."""

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

    @property
    def swing(self) -> float:
        """How far the size moves, as a share of its peak."""
        return (self.peak_bytes - self.trough_bytes) / self.peak_bytes if self.peak_bytes else 0.0

    def to_json(self) -> dict:
        return {"peak_bytes": self.peak_bytes, "trough_bytes": self.trough_bytes,
                "oldest_age_ms_max": self.oldest_age_ms_max,
                "oldest_age_ms_end": self.oldest_age_ms_end,
                "swing": round(self.swing, 4),
                "segments_max": self.segments_max, "rolls": self.rolls,
                "deletions": self.deletions, "cleaned_bytes": self.cleaned_bytes,
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

    def add(self, run: Run) -> Tally:
        self.size += run.size_at(self.times)
        o = run.oldest_at(self.times)
        self.oldest = np.where((self.oldest < 0) | ((o >= 0) & (o < self.oldest)), o,
                               self.oldest)
        within = range(self.now, self.end + 1)
        self.rolls += sum(1 for r in run.rolls if r.at_ms in within)
        self.deletions += sum(1 for d in run.deletions if d.at_ms in within)
        self.cleaned += sum(c.removed_bytes for c in run.cleanings if c.at_ms in within)
        self.cleanings += sum(1 for c in run.cleanings if c.at_ms in within)
        self.cleaner_read += sum(c.read_bytes for c in run.cleanings if c.at_ms in within)
        self.segments_max += _segments_max(run, self.now, self.end)
        return self

    def merge(self, other: Tally) -> Tally:
        """Another tally of the same grid (other partitions, summed elsewhere: a worker
        process) folded into this one; sums and minima, so the order does not matter."""
        self.size += other.size
        o = other.oldest
        self.oldest = np.where((self.oldest < 0) | ((o >= 0) & (o < self.oldest)), o,
                               self.oldest)
        self.rolls += other.rolls
        self.deletions += other.deletions
        self.cleaned += other.cleaned
        self.cleanings += other.cleanings
        self.cleaner_read += other.cleaner_read
        self.segments_max += other.segments_max
        return self

    def outcome(self) -> Outcome:
        size, oldest, times = self.size, self.oldest, self.times
        ages = np.where(oldest >= 0, times - oldest, -1)
        return Outcome(int(size.max()) if size.size else 0,
                       int(size.min()) if size.size else 0,
                       int(ages.max()) if (ages >= 0).any() else None,
                       int(ages[-1]) if ages.size and ages[-1] >= 0 else None,
                       bounded_series(times, size, oldest), self.segments_max, self.rolls,
                       self.deletions, self.cleaned, self.cleanings, self.cleaner_read)


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
    n = best = 0
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
    sawtooth keeps its teeth; ``oldest_record_ms`` is null while the log is empty."""
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
    keep = np.unique(np.r_[first_hi, first_lo, n - 1])
    return tuple((t, s, o if o >= 0 else None) for t, s, o in zip(
        times[keep].tolist(), size[keep].tolist(), oldest[keep].tolist(), strict=True))


# --------------------------------------------------------------------------- changes


def apply_changes(config: TopicConfig, changes: Mapping[str, object]) -> TopicConfig:
    """``config`` with ``changes`` (config name -> parsed value), each marked as proposed."""
    from segtools.analysis.config import DEFINITIONS, ConfigValue

    values = {DEFINITIONS[name].attr: value for name, value in changes.items()}
    prov = tuple(p for p in config.provenance if p[0] not in changes) + tuple(
        (name, ConfigValue("what_if", "proposed")) for name in changes)
    return replace(config, **values, provenance=prov)
