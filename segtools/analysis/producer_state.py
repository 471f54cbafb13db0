"""Producer state as a partition leader keeps it: Kafka's ``ProducerStateManager``.

Per producer id the leader remembers its epoch, the last sequence and offset it wrote, the
coordinator epoch of its last marker and the transaction it has open (``ProducerStateEntry``);
``.snapshot`` files hold that map as of an offset. Every analysis that asks about producers
reads it from the one fold here, :class:`ProducerStateFold`, run over batch-table chunks in log
order:

- an idempotent data batch sets its producer's epoch, last sequence and last offset;
- a transactional data batch opens a transaction (its first offset) or extends the open one;
- a COMMIT or ABORT marker of a producer (a control batch) closes its open transaction
  (``ProducerStateManager.completeTxn``): an ABORT's transaction is an aborted range that
  ``read_committed`` consumers skip (``CompletedFetch``);
- the state at a snapshot's offset is the state before the first batch at or past it.

The fold is pure: what a control batch says (COMMIT or ABORT, its coordinator epoch) comes from
a reader the caller gives (reading it is I/O); without one a control batch still ends the
producer's transaction, as Kafka's does, with its type unread.

:func:`compare_snapshots` is the one comparison of ``.snapshot`` files with the log.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from segtools.decode.table import BatchTable
from segtools.findings import Finding, finding
from segtools.formats.snapshot import ProducerSnapshot

#: A control batch whose record was not read still ends its producer's transaction.
UNREAD_MARKER = "CONTROL"


@dataclass(frozen=True, slots=True)
class ProducerBatches:
    """The batch-table columns the fold reads, for input that is not a
    :class:`~segtools.decode.table.BatchTable` (which has them all): records, for one, each a
    batch of one (the cleaner's replay)."""

    base_offset: np.ndarray
    last_offset: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    magic: np.ndarray
    is_control: np.ndarray
    is_transactional: np.ndarray
    last_sequence: np.ndarray
    record_count: np.ndarray
    max_timestamp: np.ndarray


class ControlMarker(NamedTuple):
    """One control record of a producer's control batch (``EndTransactionMarker``)."""

    type: str  # COMMIT | ABORT (other control types end nothing)
    offset: int
    timestamp: int
    coordinator_epoch: int | None


#: What the fold reads a chunk from.
ProducerColumns = BatchTable | ProducerBatches

#: Row of a chunk -> the control records of that control batch.
MarkerReader = Callable[[int], Iterable[ControlMarker]]

#: The base offset of the segment holding a chunk's markers: one for the chunk, one per row
#: (a chunk gathered from several segments), or None (not known).
SegmentBase = int | np.ndarray | None

#: Batches a reader gathers before folding them (:class:`ProducerStateFold` and the
#: analyses built on it): on small chunks the fold's cost is per call, and a broker's
#: partitions are often many small segments of tens of batches. Past a few thousand rows a
#: chunk pays its own way and is folded as it comes: gathering more only copies it, and the
#: fold's temporaries then outgrow the CPU's caches (measured 1.7x slower at 65,536).
FOLD_ROWS = 4096


def _segment_at(segment_base: SegmentBase, row: int) -> int | None:
    if segment_base is None or isinstance(segment_base, int):
        return segment_base
    return int(segment_base[row])


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
    #: the epoch of its last data batch (a marker may carry a newer one): the epoch its next
    #: batch's sequence follows
    data_epoch: int = -1


@dataclass(slots=True)
class OpenTransaction:
    """A producer's transaction with data and no marker yet."""

    epoch: int
    first_offset: int
    last_offset: int
    batches: int
    records: int
    first_ts: int
    last_ts: int


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

    def contains(self, offset: int) -> bool:
        """Whether ``offset`` lies between the transaction's first and last data batch."""
        return self.first_offset is not None and self.last_data_offset is not None and \
            self.first_offset <= offset <= self.last_data_offset

    def to_json(self) -> dict:
        return {"type": "transaction", "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "first_offset": self.first_offset,
                "last_data_offset": self.last_data_offset, "batches": self.batches,
                "records": self.records, "first_timestamp": self.first_timestamp,
                "last_timestamp": self.last_timestamp,
                "marker": self.marker or "OPEN", "marker_offset": self.marker_offset,
                "marker_timestamp": self.marker_timestamp,
                "coordinator_epoch": self.coordinator_epoch}


def open_transaction(pid: int, t: OpenTransaction) -> Transaction:
    """An open transaction as a :class:`Transaction` with no marker."""
    return Transaction(pid, t.epoch, t.first_offset, t.last_offset, t.batches, t.records,
                       t.first_ts, t.last_ts, None, None, None, None, None, None)


class ProducerStateFold:
    """The producer and transaction state carried from chunk to chunk of one partition.

    Batches without a producer id cost nothing but a mask; a chunk whose producer batches
    are all idempotent data (no transaction, no marker) updates each producer's state from
    its last row, vectorised; a chunk holding transactional batches or markers is folded by
    runs, Python visiting only the markers and the batches that open a transaction; a
    snapshot offset cuts a chunk in two, the state taken between them. :meth:`_rows`, row by
    row over plain integers, is the rule written plainly: the others are held to it.
    ``keep_closed`` False keeps only each producer's latest closed transaction (memory bound
    by the producers, not the transactions)."""

    def __init__(self, snapshot_offsets: Iterable[int] = (), *, keep_closed: bool = True
                 ) -> None:
        self.snapshot_at = sorted(snapshot_offsets)
        self.keep_closed = keep_closed
        self.states: dict[int, dict[int, ProducerState]] = {}
        self.producers: dict[int, ProducerState] = {}
        self.ongoing: dict[int, OpenTransaction] = {}
        self.closed: list[Transaction] = []
        #: producer id -> its latest closed transaction that had data
        self.last_closed: dict[int, Transaction] = {}

    def add(self, t: ProducerColumns, markers: MarkerReader | None = None,
            segment_base: SegmentBase = None) -> list[Transaction]:
        """Fold one chunk; the transactions it closed, in marker order. ``segment_base``:
        the base offset of the segment holding the chunk's markers, or one per row when the
        chunk spans segments. A snapshot offset inside the chunk cuts it there: the state
        is taken between the two parts, as :meth:`_rows` would take it row by row."""
        closed: list[Transaction] = []
        start, n = 0, len(t.base_offset)
        while self.snapshot_at and start < n:
            past = np.flatnonzero(t.base_offset[start:] >= self.snapshot_at[0])
            if not len(past):
                break
            cut = start + int(past[0])
            closed += self._fold(t, start, cut, markers, segment_base)
            base = int(t.base_offset[cut])
            while self.snapshot_at and self.snapshot_at[0] <= base:
                self.states[self.snapshot_at.pop(0)] = self.snapshot()
            start = cut
        closed += self._fold(t, start, n, markers, segment_base)
        return closed

    def _fold(self, t: ProducerColumns, lo: int, hi: int, markers: MarkerReader | None,
              segment_base: SegmentBase) -> list[Transaction]:
        """Rows ``lo`` to ``hi`` of a chunk, no snapshot offset among them."""
        if lo >= hi:
            return []
        rows = lo + np.flatnonzero((t.producer_id[lo:hi] >= 0) & (t.magic[lo:hi] >= 2))
        if not (t.is_control[rows] | t.is_transactional[rows]).any():
            self._plain(t, rows)
            return []
        return self._runs(t, rows, markers, segment_base)

    def _plain(self, t: ProducerColumns, rows: np.ndarray) -> None:
        """Data batches only: each producer's state is its last row's."""
        if not len(rows):
            return
        pid = t.producer_id[rows]
        last_rows = rows[len(pid) - 1 - np.unique(pid[::-1], return_index=True)[1]]
        for p_id, epoch, seq, off in zip(
                t.producer_id[last_rows].tolist(), t.producer_epoch[last_rows].tolist(),
                t.last_sequence[last_rows].tolist(), t.last_offset[last_rows].tolist(),
                strict=True):
            p = self.producers.get(p_id)
            if p is None:
                p = self.producers[p_id] = ProducerState(p_id)
            p.epoch = p.data_epoch = epoch
            p.last_sequence, p.last_offset = seq, off

    def _runs(self, t: ProducerColumns, rows: np.ndarray, markers: MarkerReader | None,
              segment_base: SegmentBase) -> list[Transaction]:
        """A chunk with transactions and no snapshot offset: Python visits only the batches
        that open a transaction and the markers, in log order; each transaction's data
        batches between them are summed per run, vectorised. The same state as
        :meth:`_rows` gives row by row."""
        pid = t.producer_id[rows]
        ctl = t.is_control[rows]
        txn = t.is_transactional[rows] & ~ctl
        producers, ongoing = self.producers, self.ongoing
        for p_id in pid[np.sort(np.unique(pid, return_index=True)[1])].tolist():
            if p_id not in producers:
                producers[p_id] = ProducerState(p_id)
        # its last data batch's epoch, sequence and offset; then the epoch of its last batch
        self._plain(t, rows[~ctl])
        last_any = rows[len(pid) - 1 - np.unique(pid[::-1], return_index=True)[1]]
        for p_id, epoch in zip(t.producer_id[last_any].tolist(),
                               t.producer_epoch[last_any].tolist(), strict=True):
            producers[p_id].epoch = epoch
        for p_id in np.unique(pid[txn]).tolist():
            producers[p_id].transactional = True
        # runs: a producer's transactional data between two of its markers
        upid, pidx = np.unique(pid, return_inverse=True)
        pidx = pidx.reshape(-1)
        order = np.argsort(pidx, kind="stable")
        sctl = ctl[order]
        first_of_pid = np.r_[True, pidx[order][1:] != pidx[order][:-1]]
        markers_before = np.cumsum(sctl) - sctl
        run = np.empty(len(rows), np.int64)
        run[order] = markers_before - np.maximum.accumulate(
            np.where(first_of_pid, markers_before, 0))  # its producer's markers before it
        width = len(rows) + 1
        events: list[tuple[int, int]] = [(r, 1) for r in rows[ctl].tolist()]  # markers
        opened: dict[int, OpenTransaction] = {}  # row that opens a run -> the run
        at = np.flatnonzero(txn)
        if len(at):
            ukeys, first, inverse = np.unique(pidx[at] * width + run[at], return_index=True,
                                              return_inverse=True)
            inverse = inverse.reshape(-1)
            trow = rows[at]
            last = np.zeros(len(ukeys), np.int64)
            np.maximum.at(last, inverse, np.arange(len(at)))
            count = np.bincount(inverse, minlength=len(ukeys))
            records = np.bincount(inverse, weights=t.record_count[trow], minlength=len(ukeys))
            max_ts = np.full(len(ukeys), np.iinfo(np.int64).min, np.int64)
            np.maximum.at(max_ts, inverse, t.max_timestamp[trow].astype(np.int64))
            for k, f, li, n, r, ts in zip(ukeys.tolist(), first.tolist(), last.tolist(),
                                          count.tolist(), records.tolist(), max_ts.tolist(),
                                          strict=True):
                row0, rowl = int(trow[f]), int(trow[li])
                p_id, j = int(upid[k // width]), k % width
                if j == 0 and p_id in ongoing:  # the transaction open before this chunk
                    _extend(ongoing[p_id], int(t.last_offset[rowl]), n, int(r), ts)
                else:
                    events.append((row0, 0))
                    opened[row0] = OpenTransaction(
                        int(t.producer_epoch[row0]), int(t.base_offset[row0]),
                        int(t.last_offset[rowl]), n, int(r), int(t.max_timestamp[row0]), ts)
        events.sort()
        closed: list[Transaction] = []
        for row, kind in events:
            p_id = int(t.producer_id[row])
            if kind == 0:
                run_ = opened[row]
                o = ongoing.get(p_id)
                if o is None:
                    ongoing[p_id] = run_
                else:  # a control batch that was no COMMIT/ABORT left it open
                    _extend(o, run_.last_offset, run_.batches, run_.records, run_.last_ts)
                continue
            epoch = int(t.producer_epoch[row])
            found = ([ControlMarker(UNREAD_MARKER, int(t.base_offset[row]),
                                    int(t.max_timestamp[row]), None)]
                     if markers is None else markers(row))
            for m in found:
                if m.type in ("COMMIT", "ABORT", UNREAD_MARKER):
                    closed.append(self._close(producers[p_id], epoch, m,
                                              _segment_at(segment_base, row)))
        if self.keep_closed:
            self.closed.extend(closed)
        return closed

    def _rows(self, t: ProducerColumns, markers: MarkerReader | None,
              segment_base: SegmentBase) -> list[Transaction]:
        """Row by row over plain integers: transactions open and close in log order, and a
        snapshot's state is taken just before the first batch at or past its offset (the
        reference the vectorised folds are tested against)."""
        producers, ongoing = self.producers, self.ongoing
        closed: list[Transaction] = []
        columns = zip(t.base_offset.tolist(), t.last_offset.tolist(), t.producer_id.tolist(),
                      t.producer_epoch.tolist(), t.magic.tolist(), t.is_control.tolist(),
                      t.is_transactional.tolist(), t.last_sequence.tolist(),
                      t.record_count.tolist(), t.max_timestamp.tolist(), strict=True)
        for i, (base, last, pid, epoch, magic, control, txn_flag, seq, count, ts) in \
                enumerate(columns):
            while self.snapshot_at and self.snapshot_at[0] <= base:
                self.states[self.snapshot_at.pop(0)] = self.snapshot()
            if pid < 0 or magic < 2:
                continue
            p = producers.get(pid)
            if p is None:
                p = producers[pid] = ProducerState(pid)
            p.epoch = epoch
            if control:
                found = ([ControlMarker(UNREAD_MARKER, base, ts, None)] if markers is None
                         else markers(i))
                for m in found:
                    if m.type in ("COMMIT", "ABORT", UNREAD_MARKER):
                        closed.append(self._close(p, epoch, m, _segment_at(segment_base, i)))
                continue
            p.data_epoch = epoch
            p.last_sequence, p.last_offset = seq, last
            if not txn_flag:
                continue
            p.transactional = True
            txn = ongoing.get(pid)
            if txn is None:
                ongoing[pid] = OpenTransaction(epoch, base, last, 1, count, ts, ts)
            else:
                txn.last_offset, txn.batches, txn.records = last, txn.batches + 1, \
                    txn.records + count
                txn.last_ts = max(txn.last_ts, ts)
        if self.keep_closed:
            self.closed.extend(closed)
        return closed

    def _close(self, p: ProducerState, epoch: int, m: ControlMarker,
               segment_base: int | None) -> Transaction:
        """A marker ends the producer's open transaction (``completeTxn``); the LSO after it
        is the first offset of the earliest transaction still open."""
        pid = p.producer_id
        txn = self.ongoing.pop(pid, None)
        others = [o.first_offset for o in self.ongoing.values()]
        lso_after = min(others) if others else m.offset + 1
        if m.coordinator_epoch is not None:
            p.coordinator_epoch = m.coordinator_epoch
        done = Transaction(
            pid, epoch, txn.first_offset if txn else None, txn.last_offset if txn else None,
            txn.batches if txn else 0, txn.records if txn else 0,
            txn.first_ts if txn else m.timestamp, txn.last_ts if txn else m.timestamp,
            m.type, m.offset, m.timestamp, m.coordinator_epoch, segment_base, lso_after)
        if txn is not None:
            self.last_closed[pid] = done
        return done

    def snapshot(self) -> dict[int, ProducerState]:
        """A copy of every producer's state now, with its open transaction's first offset."""
        out = {}
        for pid, p in self.producers.items():
            q = ProducerState(**{f: getattr(p, f) for f in ProducerState.__slots__})
            q.current_txn_first_offset = (self.ongoing[pid].first_offset
                                          if pid in self.ongoing else -1)
            out[pid] = q
        return out

    def finish(self) -> None:
        """The state at the log end: snapshots at or past it, each producer's open
        transaction."""
        for offset in self.snapshot_at:
            self.states[offset] = self.snapshot()
        self.snapshot_at = []
        for pid, p in self.producers.items():
            p.current_txn_first_offset = (self.ongoing[pid].first_offset
                                          if pid in self.ongoing else -1)

    def open_transactions(self) -> list[Transaction]:
        """The transactions still open, oldest first."""
        return [open_transaction(pid, t)
                for pid, t in sorted(self.ongoing.items(), key=lambda kv: kv[1].first_offset)]


def _extend(o: OpenTransaction, last_offset: int, batches: int, records: int,
            last_ts: int) -> None:
    """More data batches of an open transaction."""
    o.last_offset, o.batches, o.records = last_offset, o.batches + batches, o.records + records
    o.last_ts = max(o.last_ts, last_ts)


class AbortedRange(NamedTuple):
    """An aborted transaction: ``producer_id``'s batches in ``[first_offset, last_offset]``
    are dropped by ``read_committed`` consumers (``last_offset`` is the ABORT marker)."""

    producer_id: int
    first_offset: int
    last_offset: int


def aborted_ranges_of(transactions: Iterable[Transaction]) -> list[AbortedRange]:
    """The aborted ranges of closed transactions, in marker order (an ABORT with no data in
    the partition aborts nothing here)."""
    return [AbortedRange(t.producer_id, t.first_offset, t.marker_offset)
            for t in transactions if t.marker == "ABORT" and t.first_offset is not None]


def in_ranges(by_producer: dict[int, tuple[Sequence[int], Sequence[int]]],
              producer_id: np.ndarray, offset: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of ``rows``, those whose producer has an aborted range holding their offset
    (``by_producer``: producer id -> first offsets and last offsets, sorted)."""
    hit = np.zeros(len(producer_id), np.bool_)
    for pid, (firsts, lasts) in by_producer.items():
        mine = rows[producer_id[rows] == pid]
        if not len(mine):
            continue
        at = offset[mine]
        i = np.searchsorted(np.asarray(firsts, np.int64), at, side="right") - 1
        hit[mine[(i >= 0) & (at <= np.asarray(lasts, np.int64)[np.maximum(i, 0)])]] = True
    return hit


def by_producer(ranges: Iterable[AbortedRange]) -> dict[int, tuple[list[int], list[int]]]:
    """Aborted ranges grouped by producer, first offsets sorted (for :func:`in_ranges`)."""
    out: dict[int, tuple[list[int], list[int]]] = {}
    for r in sorted(ranges, key=lambda r: (r.producer_id, r.first_offset)):
        firsts, lasts = out.setdefault(r.producer_id, ([], []))
        firsts.append(r.first_offset)
        lasts.append(r.last_offset)
    return out


# ---------------------------------------------------------------------------- .snapshot files

_SNAPSHOT_FIELDS = ("epoch", "last_sequence", "last_offset", "coordinator_epoch",
                    "current_txn_first_offset")


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One ``.snapshot`` as read: its offset, where it is, its entries (None: unreadable)
    and what reading it found."""

    offset: int
    path: str
    snapshot: ProducerSnapshot | None
    findings: tuple[Finding, ...] = ()


def compare_snapshots(snapshots: Sequence[SnapshotFile],
                    states: Mapping[int, Mapping[int, ProducerState]],
                    producers: Collection[int], log_start_offset: int) -> list[Finding]:
    """Each ``.snapshot`` against the producer state the log gives at its offset.

    A snapshot entry must agree with the log's state there; a producer the snapshot holds must
    be in the log below it, unless its batches are gone (retention or the cleaner removed them:
    the broker keeps its state until ``producer.id.expiration.ms`` passes without a write from
    it, ``ProducerStateManager.removeExpiredProducers``; said for the latest snapshot, the state
    a restarting broker loads); a producer of the log below it missing from the snapshot
    expired, or the snapshot is damaged. ``states``: the fold's state at each snapshot offset
    (:attr:`ProducerStateFold.states`); ``producers``: every producer id the log shows."""
    findings: list[Finding] = []
    latest = max((s.offset for s in snapshots), default=None)
    for snap in snapshots:
        findings.extend(snap.findings)
        if snap.snapshot is None:
            continue
        where = snap.path
        expected = states.get(snap.offset, {})
        for entry in snap.snapshot.entries:
            mine = expected.get(entry.producer_id)
            if mine is None:
                if entry.last_offset >= log_start_offset:
                    findings.append(finding(
                        "snapshot_producer_unknown", where,
                        f"producer {entry.producer_id} (last offset {entry.last_offset}) is "
                        f"not in the log below offset {snap.offset}", offset=snap.offset))
                elif snap.offset == latest and entry.producer_id not in producers:
                    findings.append(finding(
                        "producer_only_in_snapshot", where,
                        f"producer {entry.producer_id} (epoch {entry.epoch}, last sequence "
                        f"{entry.last_sequence} at offset {entry.last_offset}) is in the "
                        f"snapshot at offset {snap.offset} but none of its batches is in the "
                        "log (retention or the cleaner removed them); the broker keeps its "
                        "state until producer.id.expiration.ms passes without a write from it",
                        offset=snap.offset))
                continue
            diffs = [f"{f} {getattr(entry, f)} (log: {getattr(mine, f)})"
                     for f in _SNAPSHOT_FIELDS if getattr(entry, f) != getattr(mine, f)]
            if diffs:
                findings.append(finding(
                    "snapshot_state_mismatch", where,
                    f"producer {entry.producer_id}: " + "; ".join(diffs), offset=snap.offset))
        missing = sorted(set(expected) - {e.producer_id for e in snap.snapshot.entries})
        if missing:
            findings.append(finding(
                "snapshot_producer_missing", where,
                f"producers {missing} wrote below offset {snap.offset} but are not in the "
                "snapshot: expired by producer.id.expiration.ms (a retry from them would be "
                "written again), or a damaged snapshot", offset=snap.offset))
    return findings
