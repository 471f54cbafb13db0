"""What the log cleaner left and what its next pass would do: ``LogCleanerManager`` and
``LogCleaner`` replayed over one partition's records.

The rules (``docs/kafka-storage.md`` §7; ``core/.../log/LogCleanerManager.scala``,
``LogCleaner.scala``, ``clients/.../record/MemoryRecords.java``):

* ``LogCleanerManager.cleanableOffsets``: the first dirty offset is the
  ``cleaner-offset-checkpoint`` entry (the log start offset when there is none, or when it lies
  below the log start offset or past the log end offset). The first uncleanable offset is the
  least of the last stable offset, the active segment's base offset and, when
  ``min.compaction.lag.ms > 0``, the base of the first dirty non-active segment whose largest
  timestamp is newer than ``now - min.compaction.lag.ms``; never below the first dirty offset.
* ``LogCleanerManager.calculateCleanableBytes`` / ``LogToClean``: that bound is rounded down to
  a segment boundary; the dirty ratio is ``cleanableBytes / (cleanBytes + cleanableBytes)``.
  A partition is cleaned when the ratio is above ``min.cleanable.dirty.ratio`` or when
  ``maxCompactionDelay`` says a dirty segment's first batch is older than
  ``max.compaction.lag.ms`` (``needCompactionNow``) and there are cleanable bytes.
* ``LogCleaner.buildOffsetMap``: key -> latest offset over the dirty range, skipping control
  batches and aborted transactions; ``LogCleaner.doClean`` then rewrites every segment from the
  start of the log to the end of the map.
* ``Cleaner.shouldRetainRecord``: a record goes when it has no key, when a later offset holds
  its key, or when it is a tombstone that may go: for v2 when its batch's delete horizon has
  passed, for v0/v1 when its segment's mtime is at or before the legacy horizon (the last
  clean segment's mtime minus ``delete.retention.ms``). ``MemoryRecords.filterTo`` stamps
  ``now + delete.retention.ms`` into a kept v2 batch that holds a tombstone (or a marker of an
  empty transaction) and has no horizon yet.
* ``CleanedTransactionMetadata``: aborted transactions' data goes; a COMMIT or ABORT marker
  becomes removable once the pass meets no data batch of its transaction, is then stamped with
  a horizon, and is dropped by a later pass once that horizon has passed.

Everything here is pure: no file is opened. The input is one partition's records in offset
order, either as :class:`CompactionRecord` tuples (what a Spark ``applyInPandas`` function can
build from a partition's rows) or as :class:`CompactionColumns`
(:func:`segtools.analysis.cleaner_input.read_records` reads them from a partition's segments).
Which partitions a tree's answer covers, and the sentences that sum a partition up for a
person, are :mod:`segtools.analysis.explain`'s.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from segtools.analysis.config import TopicConfig
from segtools.analysis.producer_state import (
    ControlMarker,
    ProducerBatches,
    ProducerStateFold,
    aborted_ranges_of,
    by_producer,
    in_ranges,
)
from segtools.analysis.retention import (
    PartitionRetention,
    explain_retention,
    stale_records,
)
from segtools.formats import batch as v2
from segtools.storage.summary import SegmentSummary
from segtools.units import format_duration, format_time

# batch_flags bits
FLAG_CONTROL = 1
FLAG_TRANSACTIONAL = 2
FLAG_LEGACY = 4  # magic 0/1: tombstones follow the legacy mtime horizon
FLAG_COMMIT = 8  # the control record is a COMMIT marker
FLAG_ABORT = 16  # the control record is an ABORT marker
FLAG_EMPTY_BATCH = 32  # stands for a batch with no records (a cleaner leftover)

INT_MAX = 2**31 - 1
#: ``SkimpyOffsetMap``: 16-byte MD5 + 8-byte offset per slot, filled to
#: ``log.cleaner.io.buffer.load.factor`` (0.9) of ``log.cleaner.dedupe.buffer.size`` (128 MiB)
#: divided by ``log.cleaner.threads`` (1).
DEFAULT_MAP_CAPACITY = int((128 * 1024 * 1024 // 24) * 0.9)
#: ``producer.id.expiration.ms``: a producer is "active" (its last batch is kept even when
#: emptied, ``LogCleaner.cleanInto`` RETAIN_EMPTY) until this long after its last write.
PRODUCER_ID_EXPIRATION_MS = 86_400_000

# What the next clean does with a record (stable codes).
KEPT = "kept"
KEPT_PAST_MAP = "kept_not_in_clean_range"
KEPT_TOMBSTONE_HORIZON = "kept_tombstone_until_horizon"
KEPT_TOMBSTONE_STAMPED = "kept_tombstone_horizon_stamped"
KEPT_MARKER_TXN_DATA = "kept_marker_transaction_data_remains"
KEPT_MARKER_HORIZON = "kept_marker_until_horizon"
KEPT_MARKER_STAMPED = "kept_marker_horizon_stamped"
KEPT_EMPTY_BATCH = "kept_empty_batch"
REMOVED_SUPERSEDED = "removed_superseded"
REMOVED_TOMBSTONE = "removed_tombstone"
REMOVED_NO_KEY = "removed_no_key"
REMOVED_ABORTED = "removed_aborted_transaction"
REMOVED_MARKER = "removed_marker"
REMOVED_EMPTY_BATCH = "removed_empty_batch"

_FATES = (KEPT, KEPT_PAST_MAP, KEPT_TOMBSTONE_HORIZON, KEPT_TOMBSTONE_STAMPED,
          KEPT_MARKER_TXN_DATA, KEPT_MARKER_HORIZON, KEPT_MARKER_STAMPED, KEPT_EMPTY_BATCH,
          REMOVED_SUPERSEDED, REMOVED_TOMBSTONE, REMOVED_NO_KEY, REMOVED_ABORTED,
          REMOVED_MARKER, REMOVED_EMPTY_BATCH)
_FATE_ID = {name: i for i, name in enumerate(_FATES)}


class CompactionRecord(NamedTuple):
    """One record as the cleaner sees it. Records of one partition, in offset order."""

    offset: int  # for a FLAG_EMPTY_BATCH placeholder: the batch's last offset
    timestamp: int
    key: bytes | None
    value_is_null: bool
    segment_base_offset: int
    batch_flags: int = 0
    producer_id: int = -1
    delete_horizon_ms: int = -1  # the batch's delete horizon; -1 when it has none
    size: float = 0.0  # bytes on disk attributed to the record (its share of the batch)
    batch_base_offset: int = -1  # identifies the batch; -1: the record's own offset


@dataclass(frozen=True, slots=True)
class CompactionColumns:
    """The same records as columns; ``key_id`` indexes ``keys`` (-1: null key)."""

    offset: np.ndarray
    timestamp: np.ndarray
    key_id: np.ndarray
    tombstone: np.ndarray
    segment_base_offset: np.ndarray
    flags: np.ndarray
    producer_id: np.ndarray
    delete_horizon_ms: np.ndarray
    size: np.ndarray
    batch: np.ndarray  # the batch's base offset: records with equal values share a batch
    keys: tuple[bytes, ...]

    def __len__(self) -> int:
        return int(self.offset.shape[0])

    @classmethod
    def from_records(cls, records: Iterable[CompactionRecord]) -> CompactionColumns:
        builder = ColumnsBuilder()
        for r in records:
            builder.add_record(r)
        return builder.build()


class ColumnsBuilder:
    """Accumulates records (one by one, or a kernel chunk at a time) and interns keys."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self._keys: list[bytes] = []
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._rows: list[CompactionRecord] = []

    def key_id(self, key: bytes | None) -> int:
        if key is None:
            return -1
        kid = self._ids.get(key)
        if kid is None:
            kid = self._ids[key] = len(self._keys)
            self._keys.append(key)
        return kid

    def add_record(self, r: CompactionRecord) -> None:
        self._rows.append(r)

    def add_columns(self, offset, timestamp, keys: Sequence[bytes | None], tombstone,
                    segment_base_offset: int, flags, producer_id, delete_horizon_ms,
                    size, batch_base_offset) -> None:
        """A block of records (numpy-compatible arrays of equal length)."""
        self._flush_rows()
        n = len(offset)
        self._parts.append((
            np.asarray(offset, np.int64), np.asarray(timestamp, np.int64),
            np.fromiter((self.key_id(k) for k in keys), np.int64, n),
            np.asarray(tombstone, np.bool_), np.full(n, segment_base_offset, np.int64),
            np.asarray(flags, np.int32), np.asarray(producer_id, np.int64),
            np.asarray(delete_horizon_ms, np.int64), np.asarray(size, np.float64),
            np.asarray(batch_base_offset, np.int64)))

    def _flush_rows(self) -> None:
        if not self._rows:
            return
        rows = self._rows
        self._rows = []
        self._parts.append((
            np.array([r.offset for r in rows], np.int64),
            np.array([r.timestamp for r in rows], np.int64),
            np.array([self.key_id(r.key) for r in rows], np.int64),
            np.array([r.value_is_null for r in rows], np.bool_),
            np.array([r.segment_base_offset for r in rows], np.int64),
            np.array([r.batch_flags for r in rows], np.int32),
            np.array([r.producer_id for r in rows], np.int64),
            np.array([r.delete_horizon_ms for r in rows], np.int64),
            np.array([r.size for r in rows], np.float64),
            np.array([r.offset if r.batch_base_offset < 0 else r.batch_base_offset
                      for r in rows], np.int64)))

    def build(self) -> CompactionColumns:
        self._flush_rows()
        dtypes = (np.int64, np.int64, np.int64, np.bool_, np.int64, np.int32, np.int64,
                  np.int64, np.float64, np.int64)
        cols = [np.concatenate([p[i] for p in self._parts]) if self._parts
                else np.zeros(0, dt) for i, dt in enumerate(dtypes)]
        order = np.argsort(cols[0], kind="stable")
        if not np.all(order == np.arange(len(order))):
            cols = [c[order] for c in cols]
        return CompactionColumns(*cols, keys=tuple(self._keys))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class KeyVersions:
    key: bytes
    versions: int
    first_offset: int
    last_offset: int
    latest_is_tombstone: bool
    segments: int

    def to_json(self, render) -> dict:
        return {"key": render(self.key), "versions": self.versions,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "latest_is_tombstone": self.latest_is_tombstone, "segments": self.segments}


@dataclass(frozen=True, slots=True)
class RecordFate:
    """One record and what the next clean does with it (tombstones, markers, --key)."""

    offset: int
    timestamp: int
    key: bytes | None
    segment_base_offset: int
    tombstone: bool
    control: str | None  # COMMIT / ABORT for markers
    producer_id: int
    delete_horizon_ms: int | None
    aborted: bool
    size: float
    fate: str
    fate_text: str

    @property
    def removed(self) -> bool:
        return self.fate.startswith("removed")

    def to_json(self, render) -> dict:
        return {"offset": self.offset, "timestamp": self.timestamp,
                "key": render(self.key) if self.key is not None else None,
                "segment_base_offset": self.segment_base_offset, "tombstone": self.tombstone,
                "control": self.control, "producer_id": self.producer_id,
                "delete_horizon_ms": self.delete_horizon_ms, "aborted": self.aborted,
                "size": round(self.size, 1), "fate": self.fate, "fate_text": self.fate_text}


@dataclass(frozen=True, slots=True)
class MergeGroup:
    """Segments the next clean writes into one (``LogCleaner.groupSegmentsBySize``)."""

    base_offsets: tuple[int, ...]
    size: int
    largest_timestamp: int

    def to_json(self) -> dict:
        return {"base_offsets": list(self.base_offsets), "size": self.size,
                "largest_timestamp": self.largest_timestamp}


@dataclass(frozen=True, slots=True)
class PartitionCompaction:
    config: TopicConfig
    now_ms: int
    high_watermark: int | None
    high_watermark_assumed: bool
    log_start_offset: int | None
    log_end_offset: int | None
    last_stable_offset: int | None
    first_dirty_offset: int | None
    first_dirty_source: str
    uncleanable_bounds: tuple[tuple[str, int], ...]  # candidate -> offset
    first_uncleanable_offset: int | None  # segment-aligned (calculateCleanableBytes)
    first_uncleanable_reason: str
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    max_compaction_delay_ms: int
    would_clean: bool
    would_clean_text: str
    records: int
    keyed_records: int
    null_key_records: int
    distinct_keys: int
    superseded_records: int
    superseded_bytes: float
    top_keys: tuple[KeyVersions, ...]
    tombstone_count: int
    oldest_tombstone_timestamp: int | None
    tombstones: tuple[RecordFate, ...]  # capped; tombstone_count is the total
    markers: tuple[RecordFate, ...]
    open_transactions: int
    removal: tuple[tuple[str, int, float], ...]  # fate -> (records, bytes) for the next clean
    horizons_stamped: int
    map_capacity: int
    dirty_keys: int
    map_full_at_offset: int | None
    merge_groups: tuple[MergeGroup, ...]
    key_history: tuple[RecordFate, ...] | None = None
    key: bytes | None = None
    #: The key asked for is in no record here: the keys next to it in byte order (a typo's
    #: neighbours, found by one sort of the distinct keys).
    nearest_keys: tuple[bytes, ...] = ()
    retention: PartitionRetention | None = None  # compact,delete: the retention view
    notes: tuple[str, ...] = field(default=())

    @property
    def removed_records(self) -> int:
        """Records the next clean drops (empty batches are not records)."""
        return sum(n for fate, n, _ in self.removal
                   if fate.startswith("removed") and fate != REMOVED_EMPTY_BATCH)

    @property
    def removed_empty_batches(self) -> int:
        return sum(n for fate, n, _ in self.removal if fate == REMOVED_EMPTY_BATCH)

    @property
    def removed_bytes(self) -> float:
        return sum(b for fate, _, b in self.removal if fate.startswith("removed"))

    def to_json(self, render) -> dict:
        """``render`` turns key bytes into JSON text (``--bytes`` mode)."""
        return {
            "config": self.config.to_json(),
            "now_ms": self.now_ms,
            "high_watermark": self.high_watermark,
            "high_watermark_assumed": self.high_watermark_assumed,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "last_stable_offset": self.last_stable_offset,
            "first_dirty_offset": self.first_dirty_offset,
            "first_dirty_source": self.first_dirty_source,
            "uncleanable_bounds": dict(self.uncleanable_bounds),
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "first_uncleanable_reason": self.first_uncleanable_reason,
            "clean_bytes": self.clean_bytes,
            "cleanable_bytes": self.cleanable_bytes,
            "dirty_ratio": round(self.dirty_ratio, 6),
            "min_cleanable_dirty_ratio": self.config.min_cleanable_dirty_ratio,
            "max_compaction_delay_ms": self.max_compaction_delay_ms,
            "would_clean": self.would_clean,
            "would_clean_text": self.would_clean_text,
            "key_reuse": {
                "records": self.records, "keyed_records": self.keyed_records,
                "null_key_records": self.null_key_records,
                "distinct_keys": self.distinct_keys,
                "superseded_records": self.superseded_records,
                "superseded_bytes": round(self.superseded_bytes),
                "top_keys": [k.to_json(render) for k in self.top_keys],
            },
            "tombstones": {
                "count": self.tombstone_count,
                "oldest_timestamp": self.oldest_tombstone_timestamp,
                "listed": [t.to_json(render) for t in self.tombstones],
            },
            "transaction_markers": [m.to_json(render) for m in self.markers],
            "open_transactions": self.open_transactions,
            "next_clean": {
                "removed_records": self.removed_records,
                "removed_empty_batches": self.removed_empty_batches,
                "removed_bytes": round(self.removed_bytes),
                "by_fate": {fate: {"records": n, "bytes": round(b)}
                            for fate, n, b in self.removal},
                "horizons_stamped": self.horizons_stamped,
                "offset_map_capacity": self.map_capacity,
                "dirty_keys": self.dirty_keys,
                "map_full_at_offset": self.map_full_at_offset,
                "merge_groups": [g.to_json() for g in self.merge_groups],
            },
            "key": render(self.key) if self.key is not None else None,
            "key_history": ([r.to_json(render) for r in self.key_history]
                            if self.key_history is not None else None),
            "nearest_keys": [render(k) for k in self.nearest_keys],
            "retention": self.retention.to_json() if self.retention else None,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- the analysis


def explain_compaction(records: Iterable[CompactionRecord] | CompactionColumns,
                       segments: Sequence[SegmentSummary], config: TopicConfig, *,
                       now_ms: int, high_watermark: int | None, log_start_offset: int | None,
                       cleaner_offset: int | None, key: bytes | None = None, top: int = 10,
                       tombstone_limit: int = 100,
                       first_batch_timestamps: Mapping[int, int] | None = None,
                       map_capacity: int = DEFAULT_MAP_CAPACITY) -> PartitionCompaction:
    """Replay the cleaner's choice and its next pass at ``now_ms`` over one partition.

    ``cleaner_offset`` is the partition's ``cleaner-offset-checkpoint`` entry (None: none).
    ``first_batch_timestamps`` maps segment base offset -> its first batch's max timestamp
    (``LogSegment.getFirstBatchTimestamp``, for ``max.compaction.lag.ms``); without it the
    summary's first timestamp stands in.
    """
    cols = records if isinstance(records, CompactionColumns) else \
        CompactionColumns.from_records(records)
    segs = sorted(segments, key=lambda s: s.base_offset)
    notes: list[str] = []
    leo = segs[-1].next_offset if segs else None
    hw = high_watermark if high_watermark is not None else leo
    lso_log = log_start_offset if log_start_offset is not None else (
        segs[0].base_offset if segs else None)
    txn = _replay_transactions(cols)
    if high_watermark is None:
        notes.append(f"no high watermark in the checkpoints: assumed the log end offset {leo}")
    last_stable = None if hw is None else min([hw, *txn.open_first.values()])
    bounds = CleanableBounds.compute(segs, config, now_ms, lso_log, leo, last_stable,
                                     cleaner_offset, first_batch_timestamps)
    if first_batch_timestamps is None and config.max_compaction_lag_ms < 2**63 - 1:
        notes.append("max.compaction.lag.ms uses each segment's first timestamp from the "
                     "summary as the first batch's max timestamp")
    plan = _plan_clean(cols, segs, config, now_ms, bounds, txn, map_capacity)
    keyed = _key_reuse(cols, txn.aborted, top)
    fates = plan.fates
    tomb_mask = _data(cols) & ~txn.aborted & (cols.key_id >= 0) & cols.tombstone
    tomb_idx = np.flatnonzero(tomb_mask)
    tombstones = tuple(_fate(cols, i, fates, txn, plan) for i in tomb_idx[:tombstone_limit])
    marker_idx = np.flatnonzero((cols.flags & (FLAG_COMMIT | FLAG_ABORT)) != 0)
    markers = tuple(_fate(cols, i, fates, txn, plan) for i in marker_idx)
    history, nearest = None, ()
    if key is not None:
        kid = cols.keys.index(key) if key in cols.keys else None
        history = () if kid is None else tuple(
            _fate(cols, i, fates, txn, plan) for i in np.flatnonzero(cols.key_id == kid))
        nearest = () if kid is not None else nearest_keys(cols.keys, key)
    removal = tuple(
        (name, int((fates == fid).sum()), float(cols.size[fates == fid].sum()))
        for name, fid in _FATE_ID.items() if (fates == fid).any())
    retention = None
    if config.delete and segs:
        retention = explain_retention(segs, config, now_ms=now_ms,
                                      high_watermark=high_watermark,
                                      log_start_offset=log_start_offset)
        if config.local_retention_ms_effective >= 0:
            kept = {v.base_offset for v in retention.segments if not v.deletable}
            data = _data(cols)
            stale = stale_records(cols.segment_base_offset[data], cols.timestamp[data],
                                  cols.size[data],
                                  cutoff_ms=now_ms - config.local_retention_ms_effective)
            retention = retention.with_stale({b: s for b, s in stale.items() if b in kept})
    return PartitionCompaction(
        config=config, now_ms=now_ms, high_watermark=hw,
        high_watermark_assumed=high_watermark is None, log_start_offset=lso_log,
        log_end_offset=leo, last_stable_offset=last_stable,
        first_dirty_offset=bounds.first_dirty, first_dirty_source=bounds.first_dirty_source,
        uncleanable_bounds=bounds.candidates,
        first_uncleanable_offset=bounds.first_uncleanable,
        first_uncleanable_reason=bounds.reason, clean_bytes=bounds.clean_bytes,
        cleanable_bytes=bounds.cleanable_bytes, dirty_ratio=bounds.ratio,
        max_compaction_delay_ms=bounds.max_delay, would_clean=bounds.would_clean,
        would_clean_text=bounds.would_clean_text(config),
        records=keyed.records, keyed_records=keyed.keyed, null_key_records=keyed.null_keys,
        distinct_keys=keyed.distinct, superseded_records=keyed.superseded,
        superseded_bytes=keyed.superseded_bytes, top_keys=keyed.top,
        tombstone_count=int(tomb_idx.size),
        oldest_tombstone_timestamp=_oldest(cols.timestamp[tomb_idx]),
        tombstones=tombstones, markers=markers, open_transactions=len(txn.open_first),
        removal=removal, horizons_stamped=plan.stamped, map_capacity=map_capacity,
        dirty_keys=plan.dirty_keys, map_full_at_offset=plan.map_full_at,
        merge_groups=plan.groups, key_history=history, key=key, nearest_keys=nearest,
        retention=retention,
        notes=tuple(notes + plan.notes))


def _oldest(timestamps: np.ndarray) -> int | None:
    """The smallest real timestamp (-1 means none: magic 0 data)."""
    real = timestamps[timestamps >= 0]
    return int(real.min()) if real.size else None


def _data(cols: CompactionColumns) -> np.ndarray:
    """Data records: not control records, not empty-batch placeholders."""
    return (cols.flags & (FLAG_CONTROL | FLAG_EMPTY_BATCH)) == 0


@dataclass(slots=True)
class _Transactions:
    aborted: np.ndarray  # per record: data of an aborted transaction
    open_first: dict[int, int]  # producer id -> first offset of its still-open transaction


def _replay_transactions(cols: CompactionColumns) -> _Transactions:
    """Which transactional data was aborted (an ABORT marker of its producer follows it),
    and which transactions are still open at the end of the log (they bound the LSO): the
    producer-state fold over the transactional records and markers."""
    flags = cols.flags
    rows = np.flatnonzero(((flags & (FLAG_TRANSACTIONAL | FLAG_CONTROL)) != 0)
                          & ((flags & FLAG_EMPTY_BATCH) == 0))
    n = len(rows)
    offset = cols.offset[rows].astype(np.int64)
    ctl = (flags[rows] & FLAG_CONTROL) != 0
    fold = ProducerStateFold()
    if n:
        fold.add(ProducerBatches(
            offset, offset, cols.producer_id[rows].astype(np.int64), np.zeros(n, np.int16),
            np.full(n, 2, np.int8), ctl, (flags[rows] & FLAG_TRANSACTIONAL) != 0,
            np.full(n, -1, np.int32), np.ones(n, np.int32), cols.timestamp[rows]),
            lambda i: _marker(int(flags[rows[i]]), int(offset[i])))
    data = rows[~ctl]
    aborted = in_ranges(by_producer(aborted_ranges_of(fold.closed)), cols.producer_id,
                        cols.offset, data)
    return _Transactions(aborted, {pid: t.first_offset for pid, t in fold.ongoing.items()})


def _marker(flags: int, offset: int) -> list[ControlMarker]:
    kind = "COMMIT" if flags & FLAG_COMMIT else "ABORT" if flags & FLAG_ABORT else None
    return [] if kind is None else [ControlMarker(kind, offset, -1, None)]


@dataclass(slots=True)
class CleanableBounds:
    """Where the cleanable part of a log starts and ends, and whether the cleaner takes it
    (``LogCleanerManager.cleanableOffsets`` and the dirty-ratio choice in
    ``grabFilthiestCompactedLog``)."""

    first_dirty: int | None
    first_dirty_source: str
    candidates: tuple[tuple[str, int], ...]
    first_uncleanable: int | None
    reason: str
    clean_bytes: int
    cleanable_bytes: int
    ratio: float
    max_delay: int
    would_clean: bool

    @classmethod
    def compute(cls, segs: Sequence[SegmentSummary], config: TopicConfig, now: int,
                log_start: int | None, leo: int | None, last_stable: int | None,
                checkpoint: int | None, first_batch_ts: Mapping[int, int] | None
                ) -> CleanableBounds:
        if not segs or log_start is None or leo is None:
            return cls(None, "empty log", (), None, "empty log", 0, 0, 0.0, 0, False)
        # LogCleanerManager.cleanableOffsets
        if checkpoint is None:
            first_dirty, source = log_start, "log start offset (no cleaner-offset-checkpoint " \
                                             "entry: never cleaned)"
        elif checkpoint < log_start:
            first_dirty, source = log_start, (f"log start offset (checkpoint {checkpoint} is "
                                              "below it; Kafka resets)")
        elif checkpoint > leo:
            first_dirty, source = log_start, (f"log start offset (checkpoint {checkpoint} is "
                                              "past the log end offset; Kafka resets)")
        else:
            first_dirty, source = checkpoint, "cleaner-offset-checkpoint"
        active = segs[-1]
        candidates = [("last_stable_offset", last_stable if last_stable is not None else leo),
                      ("active_segment", active.base_offset)]
        lag = max(config.min_compaction_lag_ms, 0)
        dirty_non_active = _non_active_from(segs, first_dirty)
        if lag > 0:
            young = next((s for s in dirty_non_active if s.largest_timestamp > now - lag), None)
            if young is not None:
                candidates.append(("min_compaction_lag", young.base_offset))
        raw = max(first_dirty, min(off for _, off in candidates))
        # LogCleanerManager.calculateCleanableBytes: round down to a segment boundary
        uncleanable_seg = next(iter(_non_active_from(segs, raw)), active)
        fuo = uncleanable_seg.base_offset
        cleanable = sum(s.size for s in _segments_between(segs, min(first_dirty, fuo), fuo))
        clean = sum(s.size for s in segs if s.base_offset < first_dirty)
        total = clean + cleanable
        ratio = cleanable / total if total else 0.0
        low = min(off for _, off in candidates)
        if raw == first_dirty and low < first_dirty:
            reason = "first dirty offset (nothing dirty below the uncleanable bounds)"
        else:
            why = {"last_stable_offset": "the last stable offset (high watermark, or the "
                                         "first offset of an open transaction)",
                   "active_segment": "the active segment is never cleaned",
                   "min_compaction_lag": f"min.compaction.lag.ms ({format_duration(lag)}): "
                                         f"segment @{low} holds records newer than that"}
            reason = " and ".join(why[name] for name, off in candidates if off == low)
        # LogCleanerManager.maxCompactionDelay
        firsts = []
        for s in dirty_non_active:
            ts = first_batch_ts.get(s.base_offset) if first_batch_ts is not None else \
                s.first_timestamp
            if ts is not None and ts > 0:
                firsts.append(ts)
        clean_until = now - max(config.max_compaction_lag_ms, 0)
        earliest = min(firsts, default=None)
        delay = clean_until - earliest if earliest is not None and earliest < clean_until else 0
        would = total > 0 and ((delay > 0 and cleanable > 0) or
                               ratio > config.min_cleanable_dirty_ratio)
        return cls(first_dirty, source, tuple(candidates), fuo, reason, clean, cleanable,
                   ratio, delay, would)

    def would_clean_text(self, config: TopicConfig) -> str:
        if self.first_dirty is None:
            return "empty log: nothing to clean"
        need = self.max_delay > 0 and self.cleanable_bytes > 0
        ratio = (f"dirty ratio {self.ratio:.3f} "
                 f"{'>' if self.ratio > config.min_cleanable_dirty_ratio else '<='} "
                 f"min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}")
        if self.cleanable_bytes == 0:
            return f"nothing cleanable ({ratio}); the cleaner skips this partition"
        if need:
            return (f"max.compaction.lag.ms forces a clean: a dirty segment's first batch is "
                    f"{format_duration(self.max_delay)} past the lag ({ratio})")
        if self.would_clean:
            return f"eligible: {ratio}"
        return f"not eligible yet: {ratio}, and max.compaction.lag.ms does not force one"


def _segments_between(segs: Sequence[SegmentSummary], start: int,
                      end: int) -> list[SegmentSummary]:
    """``LogSegments.values(from, to)``: from the segment holding ``start`` (its floor, or
    the first segment) up to, not including, the one at ``end``; empty when they are equal."""
    if start >= end:
        return []
    floor = max((s.base_offset for s in segs if s.base_offset <= start), default=None)
    return [s for s in segs if (floor is None or s.base_offset >= floor) and s.base_offset < end]


def _non_active_from(segs: Sequence[SegmentSummary], offset: int) -> list[SegmentSummary]:
    """``LogSegments.nonActiveLogSegmentsFrom``."""
    return _segments_between(segs, offset, segs[-1].base_offset)


@dataclass(slots=True)
class _Plan:
    fates: np.ndarray
    horizon_after: np.ndarray  # per record: the horizon its batch will carry (-1 none)
    stamped: int
    dirty_keys: int
    map_full_at: int | None
    groups: tuple[MergeGroup, ...]
    legacy_horizon: int
    notes: list[str]


def _plan_clean(cols: CompactionColumns, segs: Sequence[SegmentSummary], config: TopicConfig,
                now: int, b: CleanableBounds, txn: _Transactions, capacity: int) -> _Plan:
    """``LogCleaner.doClean`` at ``now``, as if this partition were cleaned now."""
    n = len(cols)
    fates = np.full(n, _FATE_ID[KEPT_PAST_MAP], np.int8)
    horizon_after = cols.delete_horizon_ms.copy()
    notes: list[str] = []
    if b.first_dirty is None or b.first_uncleanable is None:
        return _Plan(fates, horizon_after, 0, 0, None, (), 0, notes)
    fd, fuo = b.first_dirty, b.first_uncleanable
    data = _data(cols)
    # buildOffsetMap over [firstDirty, firstUncleanable): no control batches, no aborted data
    in_map = data & ~txn.aborted & (cols.key_id >= 0) & (cols.offset >= fd) & (cols.offset < fuo)
    map_idx = np.flatnonzero(in_map)
    _, first_seen = np.unique(cols.key_id[map_idx], return_index=True)
    dirty_keys = int(first_seen.size)
    end_offset, map_full_at = fuo, None
    if dirty_keys > capacity:
        cut = map_idx[np.sort(first_seen)[capacity]]
        map_full_at = end_offset = int(cols.offset[cut])
        in_map &= cols.offset < end_offset
        notes.append(f"{dirty_keys} distinct dirty keys exceed the offset map's ~{capacity} "
                     f"slots: one clean stops at offset {end_offset}, the rest waits")
        map_idx = np.flatnonzero(in_map)
    # one slot at least: a log whose records all have null keys still indexes slot 0 below
    latest = np.full(max(len(cols.keys), 1), -1, np.int64)
    np.maximum.at(latest, cols.key_id[map_idx], cols.offset[map_idx])
    latest_offset = end_offset - 1
    # doClean rewrites logSegments(0, endOffset): every segment with a base below it
    rewritten = cols.segment_base_offset < end_offset
    past = cols.offset > latest_offset
    key_latest = np.where(cols.key_id >= 0, latest[np.maximum(cols.key_id, 0)], -1)
    keyed = cols.key_id >= 0
    d = rewritten & data & ~past
    fates[rewritten & data & txn.aborted] = _FATE_ID[REMOVED_ABORTED]
    live = d & ~txn.aborted
    fates[live & ~keyed] = _FATE_ID[REMOVED_NO_KEY]
    fates[live & keyed & (cols.offset < key_latest)] = _FATE_ID[REMOVED_SUPERSEDED]
    newest = live & keyed & (cols.offset >= key_latest)
    fates[newest & ~cols.tombstone] = _FATE_ID[KEPT]
    legacy = (cols.flags & FLAG_LEGACY) != 0
    has_horizon = cols.delete_horizon_ms >= 0
    clean_segs = [s for s in segs if s.base_offset < fd]
    legacy_horizon = (clean_segs[-1].mtime_ms - config.delete_retention_ms) if clean_segs else 0
    bases = np.array([s.base_offset for s in segs], np.int64)
    mtimes = np.array([s.mtime_ms for s in segs], np.int64)
    at = np.clip(np.searchsorted(bases, cols.segment_base_offset), 0, max(len(segs) - 1, 0))
    seg_mtime = mtimes[at] if len(segs) else np.zeros(n, np.int64)
    tomb = newest & cols.tombstone
    v2_gone = tomb & ~legacy & has_horizon & (now >= cols.delete_horizon_ms)
    legacy_gone = tomb & legacy & (seg_mtime <= legacy_horizon)
    fates[v2_gone | legacy_gone] = _FATE_ID[REMOVED_TOMBSTONE]
    fates[tomb & ~legacy & has_horizon & (now < cols.delete_horizon_ms)] = \
        _FATE_ID[KEPT_TOMBSTONE_HORIZON]
    stamp = tomb & ~legacy & ~has_horizon
    fates[stamp] = _FATE_ID[KEPT_TOMBSTONE_STAMPED]
    fates[tomb & legacy & ~legacy_gone] = _FATE_ID[KEPT]
    _markers(cols, fates, rewritten, now, fuo)
    stamped_markers = fates == _FATE_ID[KEPT_MARKER_STAMPED]
    stamped_batches = _stamp(cols, stamp | stamped_markers, horizon_after,
                             now + config.delete_retention_ms)
    groups = group_segments_by_size(segs, config, end_offset, fuo)
    return _Plan(fates, horizon_after, stamped_batches, dirty_keys, map_full_at, groups,
                 legacy_horizon, notes)


def _stamp(cols: CompactionColumns, stamp: np.ndarray, horizon_after: np.ndarray,
           horizon: int) -> int:
    """``MemoryRecords.filterTo``: a kept v2 batch with a tombstone and no horizon gets
    ``now + delete.retention.ms``. Returns how many batches get one."""
    horizon_after[stamp] = horizon
    return int(np.unique(cols.batch[stamp]).size)


def _markers(cols: CompactionColumns, fates: np.ndarray, rewritten: np.ndarray, now: int,
             fuo: int) -> None:
    """``CleanedTransactionMetadata`` over the rewritten range: a marker is removable when the
    pass met no data batch of its transaction; it is dropped when its batch's horizon has
    passed, stamped when it has none. Empty batches go unless they are kept to preserve an
    active producer's last sequence or close the round (``LogCleaner.cleanInto``)."""
    seen_data: set[int] = set()
    last_of_pid = _last_batch_of_producer(cols)
    relevant = (cols.flags & (FLAG_CONTROL | FLAG_TRANSACTIONAL | FLAG_EMPTY_BATCH)) != 0
    for i in np.flatnonzero(rewritten & relevant):
        flags = int(cols.flags[i])
        pid = int(cols.producer_id[i])
        if flags & FLAG_CONTROL:
            if flags & FLAG_EMPTY_BATCH:
                fates[i] = _FATE_ID[_empty_fate(cols, i, now, fuo, last_of_pid)]
                continue
            if not flags & (FLAG_COMMIT | FLAG_ABORT):
                fates[i] = _FATE_ID[KEPT]  # other control records are never compacted
                continue
            can = pid not in seen_data
            seen_data.discard(pid)
            h = int(cols.delete_horizon_ms[i])
            if not can:
                fates[i] = _FATE_ID[KEPT_MARKER_TXN_DATA]
            elif h >= 0 and h <= now:
                fates[i] = _FATE_ID[REMOVED_MARKER]
            elif h >= 0:
                fates[i] = _FATE_ID[KEPT_MARKER_HORIZON]
            else:
                fates[i] = _FATE_ID[KEPT_MARKER_STAMPED]
        else:
            if flags & FLAG_TRANSACTIONAL:
                seen_data.add(pid)
            if flags & FLAG_EMPTY_BATCH:
                fates[i] = _FATE_ID[_empty_fate(cols, i, now, fuo, last_of_pid)]


def _last_batch_of_producer(cols: CompactionColumns) -> dict[int, int]:
    """Producer id -> index of its last record (the records are in offset order)."""
    idx = np.flatnonzero(cols.producer_id >= 0)
    if not idx.size:
        return {}
    pids = cols.producer_id[idx][::-1]
    unique, first = np.unique(pids, return_index=True)
    return dict(zip(unique.tolist(), idx[::-1][first].tolist(), strict=True))


def _empty_fate(cols: CompactionColumns, i: int, now: int, fuo: int,
                last_of_pid: Mapping[int, int]) -> str:
    pid = int(cols.producer_id[i])
    active = pid >= 0 and last_of_pid.get(pid) == i and \
        now - int(cols.timestamp[i]) < PRODUCER_ID_EXPIRATION_MS
    if active or int(cols.offset[i]) + 1 == fuo:
        return KEPT_EMPTY_BATCH
    return REMOVED_EMPTY_BATCH


def group_segments_by_size(segs: Sequence[SegmentSummary], config: TopicConfig,
                           end_offset: int, fuo: int) -> tuple[MergeGroup, ...]:
    """``LogCleaner.groupSegmentsBySize`` over the rewritten segments, by ``.log`` size and
    the offset span (index sizes are not in the summaries; at the defaults they rarely bind)."""
    todo = [s for s in segs if s.base_offset < end_offset]
    # LogCleaner.lastOffsetForFirstSegment: the next segment's base - 1, else fuo - 1
    later = [s.base_offset for s in segs[1:]] + [fuo]
    estimated_last = {s.base_offset: nxt - 1 for s, nxt in zip(segs, later, strict=True)}
    groups = []
    i = 0
    while i < len(todo):
        group = [todo[i]]
        size = todo[i].size
        i += 1
        while i < len(todo) and size + todo[i].size <= config.segment_bytes and (
                todo[i].size == 0 or
                estimated_last[todo[i].base_offset] - group[0].base_offset <= INT_MAX):
            size += todo[i].size
            group.append(todo[i])
            i += 1
        groups.append(MergeGroup(tuple(s.base_offset for s in group), size,
                                 max(s.largest_timestamp for s in group)))
    return tuple(groups)


@dataclass(slots=True)
class _KeyReuse:
    records: int
    keyed: int
    null_keys: int
    distinct: int
    superseded: int
    superseded_bytes: float
    top: tuple[KeyVersions, ...]


def _key_reuse(cols: CompactionColumns, aborted: np.ndarray, top: int) -> _KeyReuse:
    """Over the whole partition's committed data: how often keys repeat, and what a full
    compaction would supersede."""
    data = _data(cols) & ~aborted
    keyed = data & (cols.key_id >= 0)
    idx = np.flatnonzero(keyed)
    kid = cols.key_id[idx]
    last = np.full(len(cols.keys), -1, np.int64)
    np.maximum.at(last, kid, cols.offset[idx])
    superseded = cols.offset[idx] < last[kid]
    counts = np.bincount(kid, minlength=len(cols.keys)) if idx.size else np.zeros(0, np.int64)
    order = np.argsort(-counts, kind="stable")[:top]
    tops = []
    for k in order:
        if counts[k] < 2:
            break
        rows = idx[kid == k]
        tops.append(KeyVersions(cols.keys[int(k)], int(counts[k]), int(cols.offset[rows[0]]),
                                int(cols.offset[rows[-1]]), bool(cols.tombstone[rows[-1]]),
                                int(np.unique(cols.segment_base_offset[rows]).size)))
    return _KeyReuse(int(data.sum()), int(idx.size), int((data & (cols.key_id < 0)).sum()),
                     int(np.unique(kid).size), int(superseded.sum()),
                     float(cols.size[idx][superseded].sum()), tuple(tops))


_FATE_TEXT = {
    KEPT: "kept: the latest record for its key",
    KEPT_PAST_MAP: "untouched: at or past the first uncleanable offset",
    REMOVED_SUPERSEDED: "removed: a later record has the same key",
    REMOVED_NO_KEY: "removed: a record without a key cannot be compacted",
    REMOVED_ABORTED: "removed: data of an aborted transaction",
    REMOVED_MARKER: "removed: no data of its transaction is left and its delete horizon passed",
    REMOVED_EMPTY_BATCH: "removed: an empty batch nothing needs any more",
    KEPT_MARKER_TXN_DATA: "kept: data batches of its transaction are still in the log",
    KEPT_EMPTY_BATCH: "kept: an empty batch that preserves a producer's last sequence or "
                      "closes the cleaned range",
}


def _fate(cols: CompactionColumns, i: int, fates: np.ndarray, txn: _Transactions,
          plan: _Plan) -> RecordFate:
    fate = _FATES[int(fates[i])]
    flags = int(cols.flags[i])
    horizon = int(cols.delete_horizon_ms[i])
    after = int(plan.horizon_after[i])
    if fate == KEPT_TOMBSTONE_HORIZON:
        text = f"kept: its batch's delete horizon is {format_time(horizon)}; a clean after " \
               "that removes it"
    elif fate == KEPT_TOMBSTONE_STAMPED:
        text = (f"kept: the next clean stamps its batch with delete horizon "
                f"{format_time(after)} (now + delete.retention.ms); a clean after that "
                "removes it")
    elif fate == KEPT_MARKER_HORIZON:
        text = f"kept until its delete horizon {format_time(horizon)}, then removable"
    elif fate == KEPT_MARKER_STAMPED:
        text = ("kept: no data of its transaction is left, so the next clean stamps a "
                "delete horizon (now + delete.retention.ms); a later clean drops it")
    elif fate == REMOVED_TOMBSTONE and flags & FLAG_LEGACY:
        text = (f"removed: v0/v1 tombstone in a segment last modified at or before the legacy "
                f"horizon {format_time(plan.legacy_horizon)}")
    elif fate == REMOVED_TOMBSTONE:
        text = f"removed: its batch's delete horizon {format_time(horizon)} has passed"
    elif fate == KEPT and cols.tombstone[i] and flags & FLAG_LEGACY and not plan.legacy_horizon:
        text = ("kept: v0/v1 tombstone, and no segment is clean yet (the legacy horizon is the "
                "last clean segment's mtime - delete.retention.ms)")
    elif fate == KEPT and cols.tombstone[i] and flags & FLAG_LEGACY:
        text = (f"kept: v0/v1 tombstone; its segment is newer than the legacy horizon "
                f"{format_time(plan.legacy_horizon)}")
    else:
        text = _FATE_TEXT[fate]
    control = "COMMIT" if flags & FLAG_COMMIT else "ABORT" if flags & FLAG_ABORT else None
    key = None if cols.key_id[i] < 0 else cols.keys[int(cols.key_id[i])]
    return RecordFate(int(cols.offset[i]), int(cols.timestamp[i]), key,
                      int(cols.segment_base_offset[i]), bool(cols.tombstone[i]), control,
                      int(cols.producer_id[i]), horizon if horizon >= 0 else None,
                      bool(txn.aborted[i]), float(cols.size[i]), fate, text)


def nearest_keys(keys: Sequence[bytes], key: bytes, around: int = 2) -> tuple[bytes, ...]:
    """The distinct keys just before and after ``key`` in byte order: what a mistyped key's
    neighbours usually are (``user-42`` asked, ``user-420`` and ``user-43`` there)."""
    ordered = sorted(keys)
    at = bisect.bisect_left(ordered, key)
    return tuple(ordered[max(0, at - around):at + around])


def survivor(history: Sequence[RecordFate]) -> RecordFate | None:
    """The version of a key that a full compaction leaves: its latest committed record."""
    live = [r for r in history if not r.aborted]
    return live[-1] if live else None


# --------------------------------------------------------------------------- the cleaner's flags


def marker_flags(key: bytes | None) -> int:
    """COMMIT/ABORT from a control record's key (``ControlRecordType``); a key Kafka could not
    parse either is no marker."""
    try:
        kind = v2.control_type_name(key)
    except Exception:
        return 0
    return {"COMMIT": FLAG_COMMIT, "ABORT": FLAG_ABORT}.get(kind, 0)


def batch_flags(is_control, is_transactional, magic) -> np.ndarray:
    """The cleaner-relevant flags of batches (arrays or scalars): control, transactional,
    legacy format. Every face builds the cleaner's input with this one function."""
    return ((np.where(is_control, FLAG_CONTROL, 0)) |
            (np.where(is_transactional, FLAG_TRANSACTIONAL, 0)) |
            (np.where(np.asarray(magic) < 2, FLAG_LEGACY, 0))).astype(np.int32)
