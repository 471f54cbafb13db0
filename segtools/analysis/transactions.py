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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from segtools.analysis.partition_log import (
    as_partition,
    fold_tables,
    producer_snapshots,
    transaction_indexes,
)
from segtools.analysis.producer_state import (
    FOLD_ROWS,
    AbortedRange,
    ControlMarker,
    ProducerState,
    ProducerStateFold,
    Transaction,
    aborted_ranges_of,
    by_producer,
    compare_snapshots,
    in_ranges,
)
from segtools.analysis.transaction_state import (
    CHANGES_PER_ID,
    TRANSACTION_STATE_TOPIC,
    TransactionStateChange,
    TransactionStateReplay,
    open_transactional_ids,
    replay_transaction_state,
)
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.table import BatchTable
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.model import Batch, Record
from segtools.storage.partition import CLUSTER_METADATA_TOPIC, PartitionDir, PartitionState
from segtools.units import format_duration


class MarkerReader(Protocol):
    """What the fold asks of a segment a reading room opened: its control batches decoded
    (the rules under ``analysis/`` read no file themselves)."""

    def batch_records(self, table: BatchTable) -> Iterable: ...


class FoldWatcher(Protocol):
    """An analysis that reads a partition's producer state from another's fold
    (:meth:`TransactionFold.watch`): it sees each chunk before it is folded, and the
    transactions the fold closed in it after."""

    def before_fold(self, t: BatchTable) -> None: ...

    def after_fold(self, ended: list[Transaction]) -> None: ...


#: ``transaction.max.timeout.ms`` default: no transaction may stay open longer.
DEFAULT_MAX_TIMEOUT_MS = 900_000


# ---------------------------------------------------------------------------- read_committed


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
        self._by_producer.update(by_producer(self.aborted))

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
        keep &= ~in_ranges(self._by_producer, table.producer_id, table.base_offset,
                           np.flatnonzero(table.is_transactional))
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
        unread: list[Finding] = []
        found = [AbortedRange(t.producer_id, t.first_offset, t.last_offset)
                 for _, index in transaction_indexes(partition, unread) for t in index.entries()]
        if unread:  # a fetch would fail on it too: no partial list passed off as the whole
            raise SegtoolsError(unread[0].message, path=unread[0].path)
        return found
    return aborted_ranges_of(scan_transactions(partition).transactions)


def read_committed(partition_dir: PartitionDir | str | os.PathLike[str]) -> ReadCommitted:
    """The ``read_committed`` view of a partition: its aborted ranges and LSO, from the log."""
    scan = scan_transactions(as_partition(partition_dir))
    return ReadCommitted(tuple(aborted_ranges_of(scan.transactions)), scan.last_stable_offset)


# ---------------------------------------------------------------------------- the log scan


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


class TransactionFold:
    """The transactions scan as a :class:`~segtools.analysis.partition_log.TableFold`: the
    producer state fold (:class:`~segtools.analysis.producer_state.ProducerStateFold`) over
    a partition's batch tables. Chunks are gathered up to
    :data:`~segtools.analysis.producer_state.FOLD_ROWS` batches before they are folded (a
    partition of small segments is then folded in one call); each control batch's markers
    are read as its chunk comes, while the segment is open."""

    def __init__(self, partition: PartitionDir) -> None:
        self.partition = partition
        self.findings: list[Finding] = []
        self.fold = ProducerStateFold(s.offset for s in partition.snapshots)
        self.log_start = partition.segments[0].base_offset if partition.segments else 0
        self.end, self.last_ts = self.log_start, -1
        self.first_seen: int | None = None
        self._tables: list[BatchTable] = []
        self._bases: list[int] = []  # the segment of each gathered table
        self._markers: dict[int, list[ControlMarker]] = {}  # gathered row -> its markers
        self._rows = 0
        self._watchers: list[FoldWatcher] = []
        #: whether every control batch read so far held one COMMIT or ABORT marker at its
        #: own offset: then the state closes each transaction where a fold that reads no
        #: markers (one control batch, one close) closes it
        self.markers_regular = True

    def watch(self, watcher: FoldWatcher) -> None:
        """Hand each chunk to ``watcher`` around its fold: an analysis that reads this
        partition's producer state instead of folding the same batches again
        (:meth:`segtools.analysis.producers.PartitionProducers.watch`)."""
        self._watchers.append(watcher)

    def take(self, segment, files, t: BatchTable) -> None:
        if not len(t):
            return
        if len(t) >= FOLD_ROWS:  # big enough on its own: folded after what came before
            self.flush()
        if self.first_seen is None:
            self.first_seen = int(t.base_offset[0])
        self.end = int(t.last_offset[-1]) + 1
        self.last_ts = max(self.last_ts, int(t.max_timestamp.max()))
        # the control batches the fold reads markers of (a producer's, v2); a table handed
        # over without its segment holds none (``TableFold``), and most tables of a broker's
        # tree are those
        if segment is not None:
            rows = np.flatnonzero(t.is_control & (t.producer_id >= 0) & (t.magic >= 2))
            if len(rows):
                self._read_markers(segment, t, rows)
        self._tables.append(t)
        self._bases.append(files.base_offset)
        self._rows += len(t)
        if self._rows >= FOLD_ROWS:
            self.flush()

    def _read_markers(self, segment: MarkerReader, t: BatchTable, rows: np.ndarray) -> None:
        """The markers of a chunk's control batches (``rows``), from one decode of them all:
        a transactional partition holds a marker per transaction, and a decode call per
        control batch cost more than its one record. A batch the decode does not reach (the
        file shrank under the reader) has no markers, as when read alone."""
        gathered = {position: self._rows + i for position, i in
                    zip(t.position[rows].tolist(), rows.tolist(), strict=True)}
        for row in gathered.values():
            self._markers[row] = []
        for br in segment.batch_records(t.take(rows)):
            if br.finding is not None:
                self.findings.append(br.finding)
            row = gathered.get(br.batch.position)
            if row is not None and br.records:
                self._markers[row] = _markers(br.records)
        if self.markers_regular:
            self.markers_regular = all(
                _one_close(self._markers[row], base) for row, base in
                zip(gathered.values(), t.base_offset[rows].tolist(), strict=True))

    def flush(self) -> None:
        """Fold the chunks gathered so far (each watcher sees them folded)."""
        if not self._tables:
            return
        tables, bases = self._tables, self._bases
        # each batch's segment (for the .txnindex rule): one for a table of one segment
        segment_base = bases[0] if len(bases) == 1 else np.repeat(
            np.array(bases, np.int64), [len(t) for t in tables])
        t = BatchTable.concat(tables)
        for watcher in self._watchers:
            watcher.before_fold(t)
        ended = self.fold.add(t, self._markers.__getitem__, segment_base)
        for watcher in self._watchers:
            watcher.after_fold(ended)
        self._tables, self._bases, self._markers, self._rows = [], [], {}, 0

    def scan(self) -> TransactionScan:
        """What the walk found (once it is over)."""
        self.flush()
        fold = self.fold
        fold.finish()
        return TransactionScan(self.partition, tuple(fold.closed + fold.open_transactions()),
                               fold.producers, fold.states,
                               self.first_seen if self.first_seen is not None
                               else self.log_start, self.end, self.last_ts,
                               tuple(self.findings))


def scan_transactions(partition: PartitionDir, *, verify_crc: bool = False,
                      limit: int = DEFAULT_DECOMPRESS_LIMIT) -> TransactionScan:
    """Walk a partition's batch table (and its control records) once, through the producer
    state fold (:class:`~segtools.analysis.producer_state.ProducerStateFold`)."""
    walked = TransactionFold(partition)
    fold_tables(partition, [walked], verify_crc=verify_crc, limit=limit)
    return walked.scan()


def _one_close(markers: Sequence[ControlMarker], base_offset: int) -> bool:
    """Whether a control batch closes its producer's transaction once, at its own offset,
    as a fold that reads no markers closes it (:data:`UNREAD_MARKER`)."""
    return len(markers) == 1 and markers[0].type in ("COMMIT", "ABORT") and \
        markers[0].offset == base_offset


def _markers(records: Iterable[Record]) -> list[ControlMarker]:
    """The markers a control batch's records hold (``EndTransactionMarker``)."""
    return [ControlMarker(r.control.type, r.offset, r.timestamp, r.control.coordinator_epoch)
            for r in records if r.control is not None]


# ---------------------------------------------------------------------------- the checks


#: What a hanging transaction's JSON repeats of its :meth:`Transaction.to_json` (it has no
#: marker, so the marker fields are left out).
_HANGING_FIELDS = ("producer_id", "producer_epoch", "first_offset", "last_data_offset",
                   "batches", "records", "first_timestamp")


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
        t = self.transaction.to_json()
        return {"type": "hanging_transaction", "partition": self.partition,
                **{k: t[k] for k in _HANGING_FIELDS}, "age_ms": self.age_ms,
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
    for seg, idx in transaction_indexes(partition, findings):
        findings.extend(idx.sanity_check())
        for e in idx.entries():
            key = (e.producer_id, e.last_offset)
            where = str(seg.txnindex)
            t = expected.get(key)
            if t is None:
                if key in aborts_without_data and e.first_offset < scan.log_start_offset:
                    seen.add(key)  # the transaction's data was before the log start
                    continue
                findings.append(finding(
                    "txnindex_unexpected_entry", where,
                    f"entry for producer {e.producer_id} (offsets {e.first_offset}.."
                    f"{e.last_offset}) matches no aborted transaction in the log",
                    position=e.position, offset=e.last_offset))
                continue
            seen.add(key)
            findings.extend(
                finding(code, where, message, position=e.position, offset=e.last_offset)
                for code, message in _entry_disagreements(e, t, seg.base_offset))
    for key, t in expected.items():
        if key not in seen:
            findings.append(finding(
                "txnindex_missing_entry", str(partition.path),
                f"producer {t.producer_id}'s transaction {t.first_offset}..{t.marker_offset} "
                f"was aborted but no .txnindex entry records it (read_committed consumers "
                f"would be served its data)", offset=t.marker_offset))
    return findings


def _entry_disagreements(e, t: Transaction, segment: int) -> list[tuple[str, str]]:
    """Where a ``.txnindex`` entry and the aborted transaction it records disagree: the
    segment holding the marker, the first offset, the LSO after the abort."""
    out = []
    if t.marker_segment != segment:
        out.append(("txnindex_wrong_segment",
                    f"the ABORT marker at {t.marker_offset} is in segment {t.marker_segment}, "
                    "but its entry is in this segment's index"))
    if e.first_offset != t.first_offset:
        out.append(("txnindex_first_offset_mismatch",
                    f"producer {e.producer_id}: entry says the transaction began at "
                    f"{e.first_offset}, the log at {t.first_offset}"))
    if e.last_stable_offset != t.lso_after:
        out.append(("txnindex_lso_mismatch",
                    f"producer {e.producer_id}: entry's last stable offset "
                    f"{e.last_stable_offset}, the log gives {t.lso_after}"))
    return out


def check_snapshots(scan: TransactionScan) -> list[Finding]:
    """Each ``.snapshot`` of the partition against the producer state the log gives at its
    offset (:func:`~segtools.analysis.producer_state.compare_snapshots`)."""
    return compare_snapshots(producer_snapshots(scan.partition), scan.snapshots_state,
                             scan.producers, scan.log_start_offset)


def analyse_partition(partition: PartitionDir, *, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                      now: int | None = None, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                      scan: TransactionScan | None = None
                      ) -> tuple[TransactionScan, list[HangingTransaction], list[Finding]]:
    """Scan one partition (unless its ``scan`` is given, walked beside another analysis)
    and run every check: hanging transactions (as warnings), ``.txnindex`` and ``.snapshot``
    consistency."""
    if scan is None:
        scan = scan_transactions(partition, limit=limit)
    hanging = hanging_transactions(scan, max_timeout_ms=max_timeout_ms, now=now)
    findings = [*partition.unread, *scan.findings]
    for h in hanging:
        t = h.transaction
        findings.append(finding(
            "hanging_transaction", str(partition.path),
            f"producer {t.producer_id} (epoch {t.producer_epoch}) has had a transaction open "
            f"since offset {t.first_offset}, its first record written "
            f"{format_duration(h.age_ms)} ago, with no COMMIT/ABORT marker; it "
            f"pins the last stable offset at {h.pinned_lso} ({h.log_end_offset - h.pinned_lso} "
            f"offsets invisible to read_committed consumers)", offset=t.first_offset))
    findings += check_txnindex(scan)
    findings += check_snapshots(scan)
    return scan, hanging, findings


#: One partition's :func:`analyse_partition`: its scan, hanging transactions and findings.
PartitionAnalysis = tuple[TransactionScan, list[HangingTransaction], list[Finding]]


def partition_label(partition: PartitionDir) -> str:
    return partition.path.name if partition.name is None else \
        f"{partition.name.topic}-{partition.name.partition}"


def partition_json(scan: TransactionScan, transactions: Sequence[Transaction]) -> list[dict]:
    """What ``segtools transactions`` prints for one partition (``--format jsonl``), and the
    Python API's ``to_json()``: its ``partition_transactions`` summary of ``transactions``
    (all of the scan's, or those of the producer asked for), then each of them."""
    label = partition_label(scan.partition)
    summary = {"type": "partition_transactions", "partition": label,
               "path": str(scan.partition.path), "log_start_offset": scan.log_start_offset,
               "log_end_offset": scan.log_end_offset,
               "last_stable_offset": scan.last_stable_offset,
               "transactions": len(transactions),
               "committed": sum(t.marker == "COMMIT" for t in transactions),
               "aborted": sum(t.marker == "ABORT" for t in transactions),
               "open": sum(t.marker is None for t in transactions)}
    return [summary, *({**t.to_json(), "partition": label} for t in transactions)]


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


def scanned(partition: PartitionDir) -> bool:
    """Whether :func:`transactions_report` scans this partition's log (the live data
    partitions; ``__transaction_state`` is replayed instead)."""
    name = partition.name
    return (name is not None and name.state is PartitionState.LIVE
            and name.topic not in (CLUSTER_METADATA_TOPIC, TRANSACTION_STATE_TOPIC))


def transactions_report(partitions: Iterable[PartitionDir], *, now: int,
                        max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                        keep: int = CHANGES_PER_ID, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                        advance: Callable[[int], None] = lambda n: None,
                        analysed: Mapping[str, PartitionAnalysis] | None = None
                        ) -> TransactionsReport:
    """Read ``__transaction_state`` for the coordinator's view (the latest ``keep`` changes
    of each transactional id), then every other live partition for the data's view (markers,
    ``.txnindex``, snapshots, hanging transactions). Every age is measured at ``now``, one
    clock for the run: a transaction open in one partition and Ongoing in the coordinator's
    log is one transaction, and must not get two ages from two logs' last timestamps.
    ``analysed``: partitions already
    analysed (:func:`analyse_partition` of a scan walked beside another analysis, with the
    same ``max_timeout_ms`` and ``now``), by their directory's path; each scan is given its
    partition's listing here (one made in another process comes without)."""
    analysed = analysed or {}
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
        given = analysed.get(str(pdir.path))
        if given is None:
            scan, hanging, more = analyse_partition(pdir, max_timeout_ms=max_timeout_ms,
                                                    now=now, limit=limit)
        else:
            scan, hanging, more = replace(given[0], partition=pdir), *given[1:]
        findings += more
        advance(pdir.size_bytes)
        if any(p.transactional for p in scan.producers.values()) or any(
                s.txnindex is not None for s in pdir.segments):
            shown.append(PartitionTransactions(scan, tuple(
                replace(h, transactional_id=owner.get(h.transaction.producer_id))
                for h in hanging), tuple(more)))
    return TransactionsReport(tuple(shown), state, tuple(open_ids), tuple(findings))
