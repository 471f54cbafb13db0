"""Transactions in a partition's log: each producer's transactions, what hangs, what aborted.

The rules mirrored are the partition leader's (``ProducerStateManager``, ``UnifiedLog``):

- A transactional producer's first data batch opens a transaction at its base offset; the
  producer's COMMIT or ABORT control batch (the *marker*) closes it. Until then every
  offset from the earliest open transaction on is above the **last stable offset** (LSO):
  ``read_committed`` consumers see nothing there (``firstUnstableOffset``).
- A transaction that never gets a marker (a coordinator that lost it, a partition that was
  offline when markers were written) **hangs** and pins the LSO for ever; the log end alone
  shows it, as data with no marker and an age beyond ``transaction.max.timeout.ms``.
- Each ABORT marker of a transaction with data adds an entry to the ``.txnindex`` of the
  segment holding the marker: producer id, first offset, marker offset, and the LSO after
  the abort (``ProducerStateManager.lastStableOffset``). Fetches for ``read_committed``
  consumers ship those entries so the consumer can drop aborted batches.
- A ``.snapshot`` named N is the producer state after every record below N.

:func:`aborted_ranges` and :class:`ReadCommitted` give ``dump --read-committed`` and the
Spark source one place for the consumer-side filter (``CompletedFetch``): drop control
batches, drop transactional batches of a producer inside one of its aborted ranges, and stop
at the LSO.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from segtools.analysis.partition_log import as_partition, iter_chunks, iter_tables
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import _programs as K
from segtools.decode._programs import ST_ERROR, ST_OK
from segtools.decode.programs import (
    SCALAR,
    SPAN,
    Block,
    Decoder,
    SchemaBindingError,
    transaction_log_family,
)
from segtools.decode.table import BatchTable
from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity, finding
from segtools.formats.internal.transaction_state import (
    OPEN_STATUSES,
    TRANSACTION_LOG_KEY,
    TRANSACTION_STATUSES,
    decode_record,
)
from segtools.model import Batch
from segtools.storage.files import read_producer_snapshot
from segtools.storage.index import TransactionIndex
from segtools.storage.partition import CLUSTER_METADATA_TOPIC, PartitionDir, PartitionState
from segtools.storage.segment import Segment

#: ``transaction.max.timeout.ms`` default: no transaction may stay open longer.
DEFAULT_MAX_TIMEOUT_MS = 900_000
TRANSACTION_STATE_TOPIC = "__transaction_state"


# ---------------------------------------------------------------------------- read_committed


class AbortedRange(NamedTuple):
    """An aborted transaction: ``producer_id``'s batches in ``[first_offset, last_offset]``
    are dropped by ``read_committed`` consumers (``last_offset`` is the ABORT marker)."""

    producer_id: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class ReadCommitted:
    """What a ``read_committed`` consumer would be given from a partition.

    ``keep(batch)`` mirrors ``CompletedFetch``: control batches are never returned; a
    transactional batch is dropped when its producer has an aborted range containing the
    batch's base offset; and nothing at or above the last stable offset is fetched."""

    aborted: tuple[AbortedRange, ...]
    last_stable_offset: int
    _by_producer: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict,
                                                                 repr=False, compare=False)

    def __post_init__(self) -> None:
        for r in sorted(self.aborted, key=lambda r: (r.producer_id, r.first_offset)):
            firsts, lasts = self._by_producer.setdefault(r.producer_id, ([], []))
            firsts.append(r.first_offset)
            lasts.append(r.last_offset)

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        """Whether data of ``producer_id`` at ``offset`` belongs to an aborted transaction."""
        ranges = self._by_producer.get(producer_id)
        if ranges is None:
            return False
        firsts, lasts = ranges
        i = bisect.bisect_right(firsts, offset) - 1
        return i >= 0 and offset <= lasts[i]

    def keep_mask(self, table: BatchTable, *, stop_at_lso: bool = True) -> np.ndarray:
        """:meth:`keep` for every row of a batch table at once."""
        keep = ~table.is_control
        if stop_at_lso:
            keep &= table.base_offset < self.last_stable_offset
        txn = table.is_transactional
        for pid, (firsts, lasts) in self._by_producer.items():
            rows = np.flatnonzero(txn & (table.producer_id == pid))
            if not len(rows):
                continue
            base = table.base_offset[rows]
            i = np.searchsorted(np.asarray(firsts, np.int64), base, side="right") - 1
            aborted = (i >= 0) & (base <= np.asarray(lasts, np.int64)[np.maximum(i, 0)])
            keep[rows[aborted]] = False
        return keep

    def keep(self, batch: Batch, *, stop_at_lso: bool = True) -> bool:
        if batch.is_control:
            return False
        if stop_at_lso and batch.base_offset >= self.last_stable_offset:
            return False
        return not (batch.is_transactional
                    and self.is_aborted(batch.producer_id, batch.base_offset))


def is_aborted(aborted: ReadCommitted | Sequence[AbortedRange], producer_id: int,
               offset: int) -> bool:
    """Whether ``producer_id``'s data at ``offset`` was aborted, given :func:`aborted_ranges`
    (a list: scanned) or a :class:`ReadCommitted` (indexed; build one for many lookups)."""
    if isinstance(aborted, ReadCommitted):
        return aborted.is_aborted(producer_id, offset)
    return any(r.producer_id == producer_id and r.first_offset <= offset <= r.last_offset
               for r in aborted)


def aborted_ranges(partition_dir: PartitionDir | str | os.PathLike[str], *,
                   from_txnindex: bool = False) -> list[AbortedRange]:
    """The aborted transactions of a partition, oldest marker first.

    By default they are read from the log itself (a shallow walk: batch headers, plus the
    control batches' records), which needs no index and sees aborts whose ``.txnindex`` is
    missing. ``from_txnindex=True`` reads only the ``.txnindex`` files, as a broker serving a
    fetch does (cheaper on a large partition; trusts the indexes)."""
    partition = as_partition(partition_dir)
    if from_txnindex:
        out = []
        for seg in partition.segments:
            if seg.txnindex is not None:
                with TransactionIndex(seg.txnindex, seg.base_offset) as idx:
                    out.extend(AbortedRange(t.producer_id, t.first_offset, t.last_offset)
                               for t in idx.entries())
        return out
    scan = scan_transactions(partition)
    return [AbortedRange(t.producer_id, t.first_offset, t.marker_offset)
            for t in scan.transactions if t.marker == "ABORT" and t.first_offset is not None]


def read_committed(partition_dir: PartitionDir | str | os.PathLike[str]) -> ReadCommitted:
    """The ``read_committed`` view of a partition: its aborted ranges and LSO, from the log."""
    scan = scan_transactions(as_partition(partition_dir))
    return ReadCommitted(tuple(AbortedRange(t.producer_id, t.first_offset, t.marker_offset)
                               for t in scan.transactions
                               if t.marker == "ABORT" and t.first_offset is not None),
                         scan.last_stable_offset)


# ---------------------------------------------------------------------------- the log scan


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction of one producer in one partition (``marker`` None: still open)."""

    producer_id: int
    producer_epoch: int
    first_offset: int | None  # None: a marker with no data in this partition
    last_data_offset: int | None
    batches: int
    records: int
    first_timestamp: int
    last_timestamp: int
    marker: str | None
    marker_offset: int | None
    marker_timestamp: int | None
    coordinator_epoch: int | None
    marker_segment: int | None  # base offset of the segment holding the marker
    lso_after: int | None  # the LSO right after the marker (what .txnindex records)

    def to_json(self) -> dict:
        return {"type": "transaction", "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "first_offset": self.first_offset,
                "last_data_offset": self.last_data_offset, "batches": self.batches,
                "records": self.records, "first_timestamp": self.first_timestamp,
                "last_timestamp": self.last_timestamp,
                "marker": self.marker or "OPEN", "marker_offset": self.marker_offset,
                "marker_timestamp": self.marker_timestamp,
                "coordinator_epoch": self.coordinator_epoch}


@dataclass(slots=True)
class _Open:
    epoch: int
    first_offset: int
    last_offset: int
    batches: int
    records: int
    first_ts: int
    last_ts: int


@dataclass(slots=True)
class ProducerState:
    """``ProducerStateEntry`` as the log builds it (compared with ``.snapshot`` files)."""

    producer_id: int
    epoch: int = -1
    last_sequence: int = -1
    last_offset: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    transactional: bool = False


@dataclass(frozen=True, slots=True)
class TransactionScan:
    """Everything the log says about one partition's producers and transactions."""

    partition: PartitionDir
    transactions: tuple[Transaction, ...]  # closed ones in marker order, then the open ones
    producers: dict[int, ProducerState]
    snapshots_state: dict[int, dict[int, ProducerState]]  # snapshot offset -> state there
    log_start_offset: int
    log_end_offset: int
    last_timestamp: int
    findings: tuple[Finding, ...]

    @property
    def open_transactions(self) -> tuple[Transaction, ...]:
        return tuple(t for t in self.transactions if t.marker is None)

    @property
    def last_stable_offset(self) -> int:
        """``firstUnstableOffset``: the first offset of the earliest open transaction."""
        return min((t.first_offset for t in self.open_transactions), default=self.log_end_offset)


def _snapshot_copy(producers: dict[int, ProducerState],
                   ongoing: dict[int, _Open]) -> dict[int, ProducerState]:
    out = {}
    for pid, p in producers.items():
        q = ProducerState(**{f: getattr(p, f) for f in ProducerState.__slots__})
        q.current_txn_first_offset = ongoing[pid].first_offset if pid in ongoing else -1
        out[pid] = q
    return out


def scan_transactions(partition: PartitionDir, *, verify_crc: bool = False,
                      limit: int = DEFAULT_DECOMPRESS_LIMIT) -> TransactionScan:
    """Walk a partition's batch table (and its control records) once.

    Batches without a producer id cost nothing but a column maximum; a chunk whose producer
    batches are all idempotent data (no transaction, no marker, no snapshot offset inside)
    updates each producer's state from its last row, vectorised; only chunks holding
    transactional batches, markers or snapshot offsets go row by row, over plain integers."""
    findings: list[Finding] = []
    fold = _Fold([s.offset for s in sorted(partition.snapshots, key=lambda s: s.offset)])
    log_start = partition.segments[0].base_offset if partition.segments else 0
    end, last_ts = log_start, -1
    first_seen: int | None = None
    for segment, files, t in iter_tables(partition, findings, verify_crc=verify_crc,
                                         limit=limit):
        if not len(t):
            continue
        if first_seen is None:
            first_seen = int(t.base_offset[0])
        end, last_ts = int(t.last_offset[-1]) + 1, max(last_ts, int(t.max_timestamp.max()))
        fold.chunk(t, lambda i, seg=segment, base=files.base_offset, tab=t: _marker(
            seg, base, tab.batch(i), fold.producers[int(tab.producer_id[i])], fold.ongoing,
            fold.closed, findings))
    producers, ongoing = fold.producers, fold.ongoing
    for offset in fold.snapshot_at:  # snapshots at or past the log end
        fold.states[offset] = _snapshot_copy(producers, ongoing)
    for pid, p in producers.items():
        p.current_txn_first_offset = ongoing[pid].first_offset if pid in ongoing else -1
    still_open = [Transaction(pid, t.epoch, t.first_offset, t.last_offset, t.batches,
                              t.records, t.first_ts, t.last_ts, None, None, None, None, None,
                              None)
                  for pid, t in sorted(ongoing.items(), key=lambda kv: kv[1].first_offset)]
    return TransactionScan(partition, tuple(fold.closed + still_open), producers, fold.states,
                           first_seen if first_seen is not None else log_start, end, last_ts,
                           tuple(findings))


class _Fold:
    """The producer and transaction state a scan carries from chunk to chunk."""

    def __init__(self, snapshot_at: list[int]) -> None:
        self.snapshot_at = snapshot_at
        self.states: dict[int, dict[int, ProducerState]] = {}
        self.producers: dict[int, ProducerState] = {}
        self.ongoing: dict[int, _Open] = {}
        self.closed: list[Transaction] = []

    def chunk(self, t: BatchTable, marker: Callable[[int], None]) -> None:
        rows = np.flatnonzero((t.producer_id >= 0) & (t.magic >= 2))
        special = t.is_control[rows] | t.is_transactional[rows]
        crosses = bool(self.snapshot_at) and self.snapshot_at[0] <= int(t.base_offset.max())
        if not special.any() and not crosses:
            self._plain(t, rows)
        else:
            self._rows(t, marker)

    def _plain(self, t: BatchTable, rows: np.ndarray) -> None:
        """Idempotent data only: each producer's state is its last row's."""
        if not len(rows):
            return
        pid = t.producer_id[rows]
        last_rows = rows[len(pid) - 1 - np.unique(pid[::-1], return_index=True)[1]]
        for p_id, epoch, seq, off in zip(
                t.producer_id[last_rows].tolist(), t.producer_epoch[last_rows].tolist(),
                t.last_sequence[last_rows].tolist(), t.last_offset[last_rows].tolist(),
                strict=True):
            p = self.producers.setdefault(p_id, ProducerState(p_id))
            p.epoch, p.last_sequence, p.last_offset = epoch, seq, off

    def _rows(self, t: BatchTable, marker: Callable[[int], None]) -> None:
        """Row by row over plain integers: transactions open and close in log order, and a
        snapshot's state is taken just before the first batch at or past its offset."""
        producers, ongoing = self.producers, self.ongoing
        columns = zip(t.base_offset.tolist(), t.last_offset.tolist(), t.producer_id.tolist(),
                      t.producer_epoch.tolist(), t.magic.tolist(), t.is_control.tolist(),
                      t.is_transactional.tolist(), t.last_sequence.tolist(),
                      t.record_count.tolist(), t.max_timestamp.tolist(), strict=True)
        for i, (base, last, pid, epoch, magic, control, txn_flag, seq, count, ts) in \
                enumerate(columns):
            while self.snapshot_at and self.snapshot_at[0] <= base:
                self.states[self.snapshot_at.pop(0)] = _snapshot_copy(producers, ongoing)
            if pid < 0 or magic < 2:
                continue
            p = producers.get(pid)
            if p is None:
                p = producers[pid] = ProducerState(pid)
            p.epoch = epoch
            if control:
                marker(i)
                continue
            p.last_sequence, p.last_offset = seq, last
            if not txn_flag:
                continue
            p.transactional = True
            txn = ongoing.get(pid)
            if txn is None:
                ongoing[pid] = _Open(epoch, base, last, 1, count, ts, ts)
            else:
                txn.last_offset, txn.batches, txn.records = last, txn.batches + 1, \
                    txn.records + count
                txn.last_ts = max(txn.last_ts, ts)


def _marker(segment: Segment, segment_base: int, b: Batch, p: ProducerState,
            ongoing: dict[int, _Open], closed: list[Transaction],
            findings: list[Finding]) -> None:
    """A control batch of a producer: COMMIT/ABORT closes its open transaction."""
    for br in segment.batch_records(BatchTable.from_batches([b])):
        if br.finding is not None:
            findings.append(br.finding)
        for record in br.records:
            control = record.control
            if control is None or control.type not in ("COMMIT", "ABORT"):
                continue
            txn = ongoing.pop(b.producer_id, None)
            others = [t.first_offset for pid, t in ongoing.items() if pid != b.producer_id]
            lso_after = min(others) if others else record.offset + 1
            if control.coordinator_epoch is not None:
                p.coordinator_epoch = control.coordinator_epoch
            closed.append(Transaction(
                b.producer_id, b.producer_epoch, txn.first_offset if txn else None,
                txn.last_offset if txn else None, txn.batches if txn else 0,
                txn.records if txn else 0, txn.first_ts if txn else record.timestamp,
                txn.last_ts if txn else record.timestamp, control.type, record.offset,
                record.timestamp, control.coordinator_epoch, segment_base, lso_after))


# ---------------------------------------------------------------------------- the checks


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """An open transaction older than the longest timeout any transaction may have."""

    partition: str
    transaction: Transaction
    age_ms: int  # at the log's last timestamp (or ``now``)
    pinned_lso: int
    log_end_offset: int
    transactional_id: str | None = None

    def to_json(self) -> dict:
        t = self.transaction
        return {"type": "hanging_transaction", "partition": self.partition,
                "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
                "first_offset": t.first_offset, "last_data_offset": t.last_data_offset,
                "batches": t.batches, "records": t.records,
                "first_timestamp": t.first_timestamp, "age_ms": self.age_ms,
                "last_stable_offset": self.pinned_lso,
                "log_end_offset": self.log_end_offset,
                "offsets_held_back": self.log_end_offset - self.pinned_lso,
                "transactional_id": self.transactional_id}


def hanging_transactions(scan: TransactionScan, *,
                         max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                         now: int | None = None) -> list[HangingTransaction]:
    """Open transactions whose age (from their first batch to ``now``, by default the last
    timestamp in the log) exceeds ``max_timeout_ms``: no coordinator would have let them run
    that long, so their marker was lost. Each pins the LSO at the earliest of them."""
    reference = now if now is not None else scan.last_timestamp
    lso = scan.last_stable_offset
    out = []
    for t in scan.open_transactions:
        age = reference - t.first_timestamp
        if age > max_timeout_ms:
            out.append(HangingTransaction(str(scan.partition.path), t, age, lso,
                                          scan.log_end_offset))
    return out


def check_txnindex(scan: TransactionScan) -> list[Finding]:
    """Aborted transactions in the log vs the ``.txnindex`` entries (``TransactionIndex``):
    every ABORT of a transaction with data must have an entry, in the marker's segment, with
    the same first offset and the LSO the leader computed; no entry may lack its ABORT."""
    partition = scan.partition
    findings: list[Finding] = []
    expected = {(t.producer_id, t.marker_offset): t for t in scan.transactions
                if t.marker == "ABORT" and t.first_offset is not None}
    aborts_without_data = {(t.producer_id, t.marker_offset) for t in scan.transactions
                           if t.marker == "ABORT" and t.first_offset is None}
    seen = set()
    for seg in partition.segments:
        if seg.txnindex is None:
            continue
        with TransactionIndex(seg.txnindex, seg.base_offset) as idx:
            findings.extend(idx.sanity_check())
            for e in idx.entries():
                key = (e.producer_id, e.last_offset)
                where = str(seg.txnindex)
                t = expected.get(key)
                if t is None:
                    if key in aborts_without_data and e.first_offset < scan.log_start_offset:
                        seen.add(key)  # the transaction's data was before the log start
                        continue
                    findings.append(Finding(
                        "txnindex_unexpected_entry", Severity.WARNING, where,
                        f"entry for producer {e.producer_id} (offsets {e.first_offset}.."
                        f"{e.last_offset}) matches no aborted transaction in the log",
                        position=e.position, offset=e.last_offset))
                    continue
                seen.add(key)
                if t.marker_segment != seg.base_offset:
                    findings.append(Finding(
                        "txnindex_wrong_segment", Severity.WARNING, where,
                        f"the ABORT marker at {t.marker_offset} is in segment "
                        f"{t.marker_segment}, but its entry is in this segment's index",
                        position=e.position, offset=e.last_offset))
                if e.first_offset != t.first_offset:
                    findings.append(Finding(
                        "txnindex_first_offset_mismatch", Severity.WARNING, where,
                        f"producer {e.producer_id}: entry says the transaction began at "
                        f"{e.first_offset}, the log at {t.first_offset}",
                        position=e.position, offset=e.last_offset))
                if e.last_stable_offset != t.lso_after:
                    findings.append(Finding(
                        "txnindex_lso_mismatch", Severity.WARNING, where,
                        f"producer {e.producer_id}: entry's last stable offset "
                        f"{e.last_stable_offset}, the log gives {t.lso_after}",
                        position=e.position, offset=e.last_offset))
    for key, t in expected.items():
        if key not in seen:
            findings.append(Finding(
                "txnindex_missing_entry", Severity.WARNING, str(partition.path),
                f"producer {t.producer_id}'s transaction {t.first_offset}..{t.marker_offset} "
                f"was aborted but no .txnindex entry records it (read_committed consumers "
                f"would be served its data)", offset=t.marker_offset))
    return findings


_SNAPSHOT_FIELDS = ("epoch", "last_sequence", "last_offset", "coordinator_epoch",
                    "current_txn_first_offset")


def check_snapshots(scan: TransactionScan) -> list[Finding]:
    """Each ``.snapshot`` against the producer state the log gives at its offset."""
    findings: list[Finding] = []
    for snap in scan.partition.snapshots:
        snapshot, more = read_producer_snapshot(snap.path)
        findings.extend(more)
        if snapshot is None:
            continue
        where = str(snap.path)
        expected = scan.snapshots_state.get(snap.offset, {})
        for entry in snapshot.entries:
            mine = expected.get(entry.producer_id)
            if mine is None:
                if entry.last_offset >= scan.log_start_offset:
                    findings.append(Finding(
                        "snapshot_producer_unknown", Severity.WARNING, where,
                        f"producer {entry.producer_id} (last offset {entry.last_offset}) is "
                        f"not in the log below offset {snap.offset}", offset=snap.offset))
                continue
            diffs = [f"{f} {getattr(entry, f)} (log: {getattr(mine, f)})"
                     for f in _SNAPSHOT_FIELDS if getattr(entry, f) != getattr(mine, f)]
            if diffs:
                findings.append(Finding(
                    "snapshot_state_mismatch", Severity.WARNING, where,
                    f"producer {entry.producer_id}: " + "; ".join(diffs), offset=snap.offset))
        missing = sorted(set(expected) - {e.producer_id for e in snapshot.entries})
        if missing:
            findings.append(Finding(
                "snapshot_producer_missing", Severity.INFO, where,
                f"producers {missing} wrote below offset {snap.offset} but are not in the "
                f"snapshot (expired by producer.id.expiration.ms, or a damaged snapshot)",
                offset=snap.offset))
    return findings


# ---------------------------------------------------------------------------- __transaction_state


@dataclass(frozen=True, slots=True)
class TransactionStateChange:
    """One ``__transaction_state`` record: a transactional id's state at a moment."""

    transactional_id: str
    path: str  # the __transaction_state partition directory
    log_partition: int
    offset: int
    timestamp: int
    status: str | None  # None: tombstone (expired / removed)
    value_version: int | None
    value: dict | None

    def to_json(self) -> dict:
        v = self.value or {}
        return {"type": "transaction_state", "transactional_id": self.transactional_id,
                "status": self.status or "REMOVED", "producer_id": v.get("producerId"),
                "producer_epoch": v.get("producerEpoch"),
                "timeout_ms": v.get("transactionTimeoutMs"),
                "partitions": ({p["topic"]: p["partitionIds"]
                                for p in v["transactionPartitions"]}
                               if v.get("transactionPartitions") is not None else None),
                "start_timestamp": v.get("transactionStartTimestampMs"),
                "last_update_timestamp": v.get("transactionLastUpdateTimestampMs"),
                "previous_producer_id": v.get("previousProducerId"),
                "next_producer_id": v.get("nextProducerId"),
                "client_transaction_version": v.get("clientTransactionVersion"),
                "value_version": self.value_version, "log_partition": self.log_partition,
                "log_offset": self.offset, "log_timestamp": self.timestamp}


#: State changes kept per transactional id, the latest: two transactions' worth (Empty,
#: Ongoing, Prepare*, Complete*), what an incident asks about; memory then grows with the
#: transactional ids, not the records. 0 keeps them all.
CHANGES_PER_ID = 8


@dataclass(frozen=True, slots=True)
class TransactionalId:
    """One transactional id as ``__transaction_state`` tells it: its latest state changes
    (oldest first) and how many the log holds."""

    transactional_id: str
    log_partition: int
    changes: tuple[TransactionStateChange, ...]
    total: int

    @property
    def latest(self) -> TransactionStateChange:
        return self.changes[-1]


@dataclass(frozen=True, slots=True)
class TransactionStateReplay:
    """``__transaction_state`` read once: each transactional id (by id), the transactional
    id that last used each producer id, the last timestamp seen."""

    ids: dict[str, TransactionalId]
    owners: dict[int, str]
    last_timestamp: int
    records: int
    findings: tuple[Finding, ...]

    @property
    def changes(self) -> list[TransactionStateChange]:
        """The changes kept, in the order they happened."""
        return sorted((c for t in self.ids.values() for c in t.changes),
                      key=lambda c: (c.timestamp, c.log_partition, c.offset))


class _StateReplayer:
    """``TransactionLog``'s records over decoded columns: per block, each transactional id's
    latest rows are kept (as their value bytes, decoded at the end) and producer ids'
    owners updated; nothing else of a record outlives its block."""

    def __init__(self, keep: int, limit: int):
        self.keep = keep
        self.limit = limit
        self.decoder = Decoder(transaction_log_family())
        fam = self.decoder.family
        if fam.slot("TransactionLogKey", "transactionalId", SPAN, value=False) != 0:
            raise SchemaBindingError("TransactionLogKey must start with the transactional id")
        self.pid_slot = fam.slot("TransactionLogValue", "producerId", SCALAR)
        # transactional id code -> its latest (offset, timestamp, log partition, path,
        # value version, value bytes), how many it has, where it was first seen
        self.kept: dict[int, deque] = {}
        self.total: dict[int, int] = {}
        self.home: dict[int, int] = {}
        self.owners: dict[int, tuple[tuple[int, int, int], int]] = {}
        self.last_timestamp = -1
        self.records = 0
        self.findings: list[Finding] = []

    def partition(self, pdir: PartitionDir, advance: Callable[[int], None] | None) -> None:
        lp = pdir.name.partition if pdir.name else -1
        path = str(pdir.path)
        read_findings: list[Finding] = []
        for chunk in iter_chunks(pdir, read_findings, limit=self.limit, advance=advance):
            for lo, b in self.decoder.blocks(chunk):
                self._block(b, chunk, lo, lp, path)
        self.findings += read_findings

    def _block(self, b: Block, chunk, lo: int, lp: int, path: str) -> None:
        n = len(b)
        self.records += n
        offsets = chunk.columns.offset[lo:lo + n]
        stamps = chunk.columns.timestamp[lo:lo + n]
        for i in np.flatnonzero(b.status == ST_ERROR).tolist():
            self._refused(b.raw_key(i), b.raw_value(i), lp, path, int(offsets[i]),
                          int(stamps[i]))
        rows = np.flatnonzero(b.status == ST_OK)
        if not len(rows):
            return
        self.last_timestamp = max(self.last_timestamp, int(stamps[rows].max()))
        live = rows[b.vver[rows] >= 0]
        for pid, ts, off, code in zip(b.vals[live, self.pid_slot].tolist(),
                                      stamps[live].tolist(), offsets[live].tolist(),
                                      b.vals[live, 0].tolist(), strict=True):
            owner = self.owners.get(pid)
            if owner is None or (ts, lp, off) > owner[0]:
                self.owners[pid] = ((ts, lp, off), code)
        codes = b.vals[rows, 0]
        order = np.argsort(codes, kind="stable")
        codes, rows = codes[order], rows[order]
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        ends = np.r_[starts[1:], len(codes)]
        tails = [rows[max(lo_, hi - self.keep) if self.keep else lo_:hi]
                 for lo_, hi in zip(starts.tolist(), ends.tolist(), strict=True)]
        take = np.concatenate(tails)
        raws = iter(K.spans(b.data, b.value_pos[take], b.value_len[take], False))
        versions = iter(b.vver[take].tolist())
        offs, times = iter(offsets[take].tolist()), iter(stamps[take].tolist())
        for code, lo_, hi, tail in zip(codes[starts].tolist(), starts.tolist(), ends.tolist(),
                                       tails, strict=True):
            self._add(code, hi - lo_, lp, [(next(offs), next(times), lp, path, next(versions),
                                            next(raws)) for _ in range(len(tail))])

    def _add(self, code: int, count: int, lp: int, rows: list[tuple]) -> None:
        kept = self.kept.get(code)
        if kept is None:
            kept = self.kept[code] = deque(maxlen=self.keep or None)
            self.home[code] = lp
        kept.extend(rows)
        self.total[code] = self.total.get(code, 0) + count

    def _refused(self, key: bytes | None, value: bytes | None, lp: int, path: str,
                 offset: int, timestamp: int) -> None:
        """A record the programs refused: the reference says why; should it read the record
        after all, its reading stands."""
        try:
            rec = decode_record(key, value)
        except SegtoolsError as e:
            self.findings.append(Finding("transaction_state_undecodable", Severity.ERROR, path,
                                         str(e), offset=offset))
            return
        code = self.decoder.code(rec.transactional_id)
        self.last_timestamp = max(self.last_timestamp, timestamp)
        if rec.value is not None:
            owner = self.owners.get(rec.value["producerId"])
            if owner is None or (timestamp, lp, offset) > owner[0]:
                self.owners[rec.value["producerId"]] = ((timestamp, lp, offset), code)
        version = -1 if rec.value_version is None else rec.value_version
        self._add(code, 1, lp, [(offset, timestamp, lp, path, version, value)])

    def finish(self) -> TransactionStateReplay:
        """The kept changes as values: their value bytes decoded together, by the compiled
        decoder (one block per ``BLOCK_ROWS``)."""
        texts = self.decoder.texts
        keys = {code: struct.pack(">h", 0) + TRANSACTION_LOG_KEY.write(
            {"transactionalId": texts[code]}, 0) for code in self.kept}
        pairs = [(keys[code], row[5]) for code, kept in self.kept.items() for row in kept]
        values = iter(self.decoder.values(pairs, lambda k, v: decode_record(k, v).value))
        ids = {}
        for code, kept in self.kept.items():
            tid = texts[code]
            changes = []
            for offset, timestamp, lp, path, version, _ in kept:
                value = next(values)
                status = None if value is None else TRANSACTION_STATUSES.get(
                    value["transactionStatus"], f"Unknown({value['transactionStatus']})")
                changes.append(TransactionStateChange(tid, path, lp, offset, timestamp, status,
                                                      None if version < 0 else version, value))
            ids[tid] = TransactionalId(tid, self.home[code], tuple(changes), self.total[code])
        return TransactionStateReplay(dict(sorted(ids.items())),
                                      {pid: texts[code] for pid, (_, code) in
                                       self.owners.items()},
                                      self.last_timestamp, self.records, tuple(self.findings))


def replay_transaction_state(partitions: Iterable[PartitionDir], *,
                             keep: int = CHANGES_PER_ID, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                             advance: Callable[[int], None] | None = None
                             ) -> TransactionStateReplay:
    """Read ``__transaction_state`` partitions once: the latest ``keep`` state changes of each
    transactional id (0: all), and which transactional id last used each producer id."""
    replayer = _StateReplayer(keep, limit)
    for pdir in partitions:
        replayer.partition(pdir, advance)
    return replayer.finish()


def open_transactional_ids(replay: TransactionStateReplay, *, now: int | None = None
                           ) -> tuple[list[TransactionStateChange], list[Finding]]:
    """Transactional ids whose last state still owes a marker or an answer (Ongoing,
    Prepare*); a warning when one has been open longer than its own timeout at ``now``
    (by default the last timestamp seen): the coordinator should have aborted it."""
    reference = now if now is not None else replay.last_timestamp
    open_ids, findings = [], []
    for tid, t in replay.ids.items():
        c = t.latest
        if c.status not in OPEN_STATUSES:
            continue
        open_ids.append(c)
        start = c.value["transactionStartTimestampMs"]
        timeout = c.value["transactionTimeoutMs"]
        age = reference - start
        late = start >= 0 and age > timeout
        findings.append(finding(
            "transactional_id_past_timeout" if late else "transactional_id_open", c.path,
            f"transactional id {tid!r} (producer {c.value['producerId']}, epoch "
            f"{c.value['producerEpoch']}) is {c.status} since offset {c.offset}; open for "
            f"{age} ms, timeout {timeout} ms" + ("; the coordinator should have aborted it"
                                                 if late else ""), offset=c.offset))
    return open_ids, findings


def analyse_partition(partition: PartitionDir, *, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                      now: int | None = None, limit: int = DEFAULT_DECOMPRESS_LIMIT
                      ) -> tuple[TransactionScan, list[HangingTransaction], list[Finding]]:
    """Scan one partition and run every check: hanging transactions (as warnings),
    ``.txnindex`` and ``.snapshot`` consistency."""
    scan = scan_transactions(partition, limit=limit)
    hanging = hanging_transactions(scan, max_timeout_ms=max_timeout_ms, now=now)
    findings = [*partition.unread, *scan.findings]
    for h in hanging:
        t = h.transaction
        findings.append(Finding(
            "hanging_transaction", Severity.WARNING, str(partition.path),
            f"producer {t.producer_id} (epoch {t.producer_epoch}) has had a transaction open "
            f"since offset {t.first_offset} for {h.age_ms} ms with no COMMIT/ABORT marker; it "
            f"pins the last stable offset at {h.pinned_lso} ({h.log_end_offset - h.pinned_lso} "
            f"offsets invisible to read_committed consumers)", offset=t.first_offset))
    findings += check_txnindex(scan)
    findings += check_snapshots(scan)
    return scan, hanging, findings


def partition_label(partition: PartitionDir) -> str:
    return partition.path.name if partition.name is None else \
        f"{partition.name.topic}-{partition.name.partition}"


@dataclass(frozen=True, slots=True)
class PartitionTransactions:
    """One data partition's transactional picture: its scan, hanging transactions (with the
    transactional id that owns each producer, when ``__transaction_state`` names it) and the
    findings of its checks."""

    scan: TransactionScan
    hanging: tuple[HangingTransaction, ...]
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class TransactionsReport:
    """Transactions across a tree: data partitions with anything transactional, the
    coordinator's view (each transactional id and its latest state changes), the
    transactional ids still open, and every finding."""

    partitions: tuple[PartitionTransactions, ...]
    state: TransactionStateReplay
    open_ids: tuple[TransactionStateChange, ...]
    findings: tuple[Finding, ...]

    @property
    def changes(self) -> list[TransactionStateChange]:
        return self.state.changes


def transactions_report(partitions: Iterable[PartitionDir], *,
                        max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS, now: int | None = None,
                        keep: int = CHANGES_PER_ID, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                        advance: Callable[[int], None] = lambda n: None) -> TransactionsReport:
    """Read ``__transaction_state`` for the coordinator's view (the latest ``keep`` changes
    of each transactional id), then every other live partition for the data's view (markers,
    ``.txnindex``, snapshots, hanging transactions)."""
    live = [p for p in partitions if p.name is not None
            and p.name.state is PartitionState.LIVE and p.name.topic != CLUSTER_METADATA_TOPIC]
    state = replay_transaction_state([p for p in live if p.name.topic == TRANSACTION_STATE_TOPIC],
                                     keep=keep, limit=limit, advance=advance)
    findings = list(state.findings)
    open_ids, more = open_transactional_ids(state, now=now)
    findings += more
    owner = state.owners
    shown = []
    for pdir in live:
        if pdir.name.topic == TRANSACTION_STATE_TOPIC:
            continue
        scan, hanging, more = analyse_partition(pdir, max_timeout_ms=max_timeout_ms, now=now,
                                                limit=limit)
        findings += more
        advance(pdir.size_bytes)
        if any(p.transactional for p in scan.producers.values()) or any(
                s.txnindex is not None for s in pdir.segments):
            shown.append(PartitionTransactions(scan, tuple(
                replace(h, transactional_id=owner.get(h.transaction.producer_id))
                for h in hanging), tuple(more)))
    return TransactionsReport(tuple(shown), state, tuple(open_ids), tuple(findings))
