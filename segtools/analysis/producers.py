"""Producers, seen from the disk: how they batch, and what their sequences say.

A producer's ``RecordAccumulator`` keeps one open batch per partition and closes it when
``batch.size`` is full or ``linger.ms`` has passed; the batch is then compressed and sent. On
disk every batch keeps what is needed to see how that went: its record count and size, its
codec, the first and the largest timestamp (with CreateTime, ``max - first`` is how long the
batch stayed open), and for idempotent producers the producer id, epoch and base sequence
(``ProducerStateManager`` accepts a batch only when its base sequence follows the last one of
the same id and epoch, wrapping past ``Integer.MAX_VALUE`` to 0; a new epoch starts at 0).

Everything here works on batch-table columns, a chunk at a time, with state bounded by the
number of producers: the analysis of a partition runs at the speed of the shallow walk and
never decodes records, except to measure what a codec would gain on bigger batches
(:func:`recompression_gain`, a bounded sample) and to look for retried duplicates
(:func:`likely_duplicates`, asked for explicitly).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from segtools.analysis import _batching
from segtools.analysis.partition_log import TableFold, fold_tables, iter_records, segment_tables
from segtools.analysis.producer_state import FOLD_ROWS, ProducerStateFold, Transaction
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import Chunk, decode
from segtools.decode.source import BufferSource
from segtools.decode.table import BatchTable, codec_label
from segtools.decode.walk import whole_table
from segtools.findings import Finding, finding
from segtools.formats.batch import RECORD_BATCH_OVERHEAD
from segtools.storage.partition import PartitionDir
from segtools.units import format_bytes, format_time

if TYPE_CHECKING:
    from segtools.analysis.transactions import TransactionFold

SEQUENCE_MODULUS = 2**31  # DefaultRecordBatch.incrementSequence wraps to 0 past MAX_VALUE
DEFAULT_BATCH_SIZE = 16_384  # ProducerConfig batch.size
NON_IDEMPOTENT = -1
#: Topics only brokers write (``GroupCoordinator``, ``TransactionCoordinator``,
#: ``ShareCoordinator``, ``TopicBasedRemoteLogMetadataManager``): their batches come from no
#: user's producer, so advice on how to configure one does not apply to them.
BROKER_WRITTEN_TOPICS = frozenset({"__consumer_offsets", "__transaction_state",
                                   "__share_group_state", "__remote_log_metadata"})


#: Tables of up to this many batches are folded row by row (:meth:`PartitionProducers.
#: _batching_rows`): a broker's partitions of small segments hand over tens of batches, and
#: below about a thousand rows a numpy call costs more than the rows it saves.
SMALL_TABLE = 1024
#: Tables of up to this many batches have their sequences checked row by row in Python
#: (:meth:`PartitionProducers._sequences_rows`): about 0.3 µs a row there against about
#: 25 µs per producer with numpy, even at one producer from about a hundred rows.
SMALL_SEQUENCES = 128

#: Each compression id's name (3 bits of the attributes), for the compiled fold.
CODEC_NAMES = tuple(codec_label(i) for i in range(8))

#: Bucket widths for the rate over time, finest first (1 s to 1 day).
RATE_WIDTHS_MS = (1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000)
#: Buckets kept before the rate moves to the next width: bounded memory for any time span.
RATE_MAX_BUCKETS = 2_000


@dataclass
class Rate:
    """Batches and records per time bucket (by each batch's largest timestamp). The bucket
    starts at one second and widens as the span grows, so a burst of a few seconds and a month
    of traffic both draw as a readable series, in memory bounded by ``RATE_MAX_BUCKETS``."""

    width_ms: int = RATE_WIDTHS_MS[0]
    batches: dict[int, int] = field(default_factory=dict)  # bucket start (ms) -> batches
    records: dict[int, int] = field(default_factory=dict)  # bucket start (ms) -> records

    def add(self, timestamps: np.ndarray, records: np.ndarray) -> None:
        ok = timestamps >= 0
        if not ok.any():
            return
        buckets = timestamps[ok] // self.width_ms * self.width_ms
        keys, inverse = np.unique(buckets, return_inverse=True)
        counts = np.bincount(inverse)
        sums = np.bincount(inverse, weights=records[ok])
        self.merge(zip(keys.tolist(), counts.tolist(), sums.tolist(), strict=True))

    def merge(self, buckets: Iterable[tuple[int, int, int | float]]) -> None:
        """Add ``(bucket start, batches, records)`` counted at the current width, then widen
        while there are too many buckets."""
        for k, c, r in buckets:
            self.batches[k] = self.batches.get(k, 0) + c
            self.records[k] = self.records.get(k, 0) + int(r)
        while len(self.batches) > RATE_MAX_BUCKETS and self.width_ms < RATE_WIDTHS_MS[-1]:
            self.width_ms = next(w for w in RATE_WIDTHS_MS if w > self.width_ms)
            self.batches = _rebucket(self.batches, self.width_ms)
            self.records = _rebucket(self.records, self.width_ms)


def _rebucket(counts: dict[int, int], width_ms: int) -> dict[int, int]:
    out: dict[int, int] = {}
    for k, v in counts.items():
        b = k // width_ms * width_ms
        out[b] = out.get(b, 0) + v
    return out


@dataclass
class ProducerBatching:
    """How one producer (id and epoch; ``producer_id`` -1 groups every non-idempotent
    producer) batched into one partition."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    batches: int = 0
    records: int = 0
    bytes: int = 0
    records_per_batch: dict[int, int] = field(default_factory=dict)  # count -> batches
    sizes: dict[int, int] = field(default_factory=dict)  # bytes (16-byte steps) -> batches
    windows: dict[int, int] = field(default_factory=dict)  # ms open (CreateTime) -> batches
    codecs: dict[str, int] = field(default_factory=dict)
    per_minute: dict[int, int] = field(default_factory=dict)  # minute (epoch) -> batches
    rate: Rate = field(default_factory=Rate)  # batches and records over time
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    verdict: str = ""  # unbatched | full | lingered | mixed
    ceiling: int | None = None  # batch size the data shows closes batches (full)
    linger_ms: int | None = None  # the window most batches close at (lingered)
    recompressed: float | None = None  # measured: batched / one-by-one compressed size

    def quantile(self, counts: Mapping[int, int], q: float) -> int:
        """The smallest value with at least ``q`` of the batches at or below it."""
        return quantiles(counts, (q,))[0]

    @property
    def label(self) -> str:
        who = ("non-idempotent producers" if self.producer_id == NON_IDEMPOTENT
               else f"producer {self.producer_id} epoch {self.producer_epoch}")
        return f"{self.topic}-{self.partition} {who}"

    def to_json(self, *, rate: bool = True) -> dict:
        """The figures as JSON; ``rate``: with the rate over time (``segtools producers``
        prints it; the report's page does not draw it, and it is most of a busy producer's
        bytes)."""
        rpb = self.records_per_batch
        r50, r90, r99 = quantiles(rpb, (0.5, 0.9, 0.99))
        s50, s90 = quantiles(self.sizes, (0.5, 0.9))
        w50, w90 = quantiles(self.windows, (0.5, 0.9))
        return {
            "type": "producer_batching", "topic": self.topic, "partition": self.partition,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "batches": self.batches, "records": self.records, "bytes": self.bytes,
            "records_per_batch": {"p50": r50, "p90": r90, "p99": r99,
                                  "max": max(rpb) if rpb else 0,
                                  "mean": round(self.records / self.batches, 2)
                                  if self.batches else 0},
            "bytes_per_batch": {"p50": s50, "p90": s90,
                                "max": max(self.sizes) if self.sizes else 0},
            "window_ms": {"p50": w50, "p90": w90} if self.windows else None,
            "codecs": dict(sorted(self.codecs.items())),
            "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
            "peak_batches_per_minute": max(self.per_minute.values()) if self.per_minute
            else 0,
            **({"rate": {"bucket_ms": self.rate.width_ms,
                         "batches": {str(k): v for k, v in sorted(self.rate.batches.items())},
                         "records": {str(k): v for k, v in sorted(self.rate.records.items())}}}
               if rate else {}),
            "verdict": self.verdict, "ceiling_bytes": self.ceiling, "linger_ms": self.linger_ms,
            "recompressed_ratio": self.recompressed}


@dataclass(frozen=True, slots=True)
class SequenceEvent:
    """Where a producer's sequences do not follow: ``kind`` gap | duplicate | out_of_order |
    epoch_bump | wrap."""

    kind: str
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    offset: int
    expected: int | None
    base_sequence: int
    previous_offset: int | None
    explained: str | None = None
    timestamp: int | None = None  # the batch's largest timestamp: when it happened
    #: epoch bumps: the first offset of the transaction the producer had open (None: none)
    open_transaction: int | None = None
    #: ... and the offset of the next transaction marker of this producer id after the bump
    #: (None: none in the log), with the epoch it was written with
    closed_by: int | None = None
    closed_epoch: int | None = None

    def to_json(self) -> dict:
        out = {"type": "producer_sequence", "kind": self.kind, "topic": self.topic,
               "partition": self.partition, "producer_id": self.producer_id,
               "producer_epoch": self.producer_epoch, "offset": self.offset,
               "timestamp": self.timestamp, "expected_sequence": self.expected,
               "base_sequence": self.base_sequence, "previous_offset": self.previous_offset,
               "explained_by": self.explained}
        if self.kind == "epoch_bump":
            out.update(open_transaction=self.open_transaction, closed_by=self.closed_by,
                       closed_epoch=self.closed_epoch)
        return out


@dataclass
class PartitionProducers:
    topic: str
    partition: int
    path: str
    producers: dict[tuple[int, int], ProducerBatching] = field(default_factory=dict)
    events: list[SequenceEvent] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    duplicates: list = field(default_factory=list)  # LikelyDuplicate, when asked for
    #: whether each producer's rate over time is counted (``ProducerBatching.rate``): the
    #: report's page does not draw it, and merging its buckets is a tenth of the fold
    rates: bool = True
    #: each producer's state (last data batch's epoch, sequence and offset; its open
    #: transaction), one entry per producer: the producer-state fold every analysis shares
    _state: ProducerStateFold = field(
        default_factory=lambda: ProducerStateFold(keep_closed=False), repr=False)
    #: producer id -> epoch-bump events still waiting for the marker of the transaction the
    #: producer had open
    _waiting: dict[int, list[int]] = field(default_factory=dict)

    #: chunks gathered and not folded yet (in log order), and their rows
    _pending: list[BatchTable] = field(default_factory=list, repr=False)
    _pending_rows: int = field(default=0, repr=False)
    #: whether the producer state is another fold's (:meth:`watch`)
    _watching: bool = field(default=False, repr=False)
    #: the chunk being folded: its first event, and the latest closed transaction before it
    #: of each producer whose epoch it bumped
    _first_new_event: int = field(default=0, repr=False)
    _before: dict[int, Transaction | None] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ batching

    def add(self, t: BatchTable) -> None:
        """Take the next chunk of batches in log order. Small chunks are gathered and
        folded :data:`FOLD_ROWS` rows at a time (a partition of small segments hands over
        tens of batches per segment, and the fold's cost is per call); a big one is folded
        as it comes. The fold's result does not depend on where chunks are cut."""
        if not len(t):
            return
        if len(t) >= FOLD_ROWS:  # big enough on its own
            self.flush()
            self._fold(t)
            return
        self._pending.append(t)
        self._pending_rows += len(t)
        if self._pending_rows >= FOLD_ROWS:
            self.flush()

    def take(self, segment, files, t: BatchTable) -> None:
        """:meth:`add`, as a :class:`~segtools.analysis.partition_log.TableFold` (nothing
        when it watches another fold: that fold gathers the chunks and hands them over)."""
        if not self._watching:
            self.add(t)

    def flush(self) -> None:
        """Fold the chunks gathered so far (before reading the producers' figures)."""
        if not self._pending:
            return
        t = BatchTable.concat(self._pending)
        self._pending, self._pending_rows = [], 0
        self._fold(t)

    def watch(self, state: ProducerStateFold) -> None:
        """Read the producer state from ``state``, another analysis's fold over the same
        batches in the same chunks, instead of folding it again: that fold calls
        :meth:`before_fold` and :meth:`after_fold` around each chunk it folds
        (:class:`~segtools.analysis.transactions.TransactionFold`: the partition's one
        ``ProducerStateManager``, read by both analyses)."""
        self._state = state
        self._watching = True

    def _fold(self, t: BatchTable) -> None:
        """Fold one table of batches (control batches are the broker's, not a producer's:
        they count only for the transactions they close)."""
        self.before_fold(t)
        self.after_fold(self._state.add(t))

    def before_fold(self, t: BatchTable) -> None:
        """A chunk's batching and sequences, read against the producer state before it is
        folded (each batch's sequence follows the state the chunks before it left)."""
        self._first_new_event = len(self.events)
        data = ~t.is_control
        if data.all():
            self._batching(t)
        elif data.any():
            self._batching(t.take(data))
        self._before = {p: self._state.last_closed.get(p) for p in {
            self.events[k].producer_id for k in range(self._first_new_event, len(self.events))
            if self.events[k].kind == "epoch_bump"}}

    def after_fold(self, ended: list[Transaction]) -> None:
        """The transactions the chunk's fold closed (``ended``): what became of those the
        epoch bumps it held had open."""
        if self._before or self._waiting:
            self._explain_bumps(self._first_new_event, self._before, ended)

    def _group(self, key: tuple[int, int]) -> ProducerBatching:
        g = self.producers.get(key)
        if g is None:
            g = self.producers[key] = ProducerBatching(self.topic, self.partition, *key)
        return g

    def _batching(self, t: BatchTable) -> None:
        if len(t) <= SMALL_TABLE:
            self._batching_rows(t)
            pid, epoch = _idempotent_ids(t)
        else:
            pid, epoch = _ids(t)
            self._batching_columns(t, pid, epoch)
        if pid is None:
            return
        if len(t) <= SMALL_SEQUENCES:
            self._sequences_rows(t, pid, epoch)
        else:
            self._sequences(t, pid, epoch)

    def _batching_rows(self, t: BatchTable) -> None:
        """:meth:`_batching_columns` row by row, compiled (:mod:`segtools.analysis._batching`),
        from the table's own columns: the same figures, for tables too small for numpy's
        per-call cost to pay (the derived columns alone were a dozen calls)."""
        rates = _batching.fold_table(
            self._group, CODEC_NAMES, self.rates, t.magic, t.attributes, t.count,
            t.base_offset, t.last_offset, t.size, t.base_timestamp, t.max_timestamp,
            t.producer_id, t.producer_epoch)
        for key, (batches, records) in rates.items():
            self.producers[key].rate.merge((k, c, records[k]) for k, c in batches.items())

    def _batching_columns(self, t: BatchTable, pid: np.ndarray, epoch: np.ndarray) -> None:
        """The producers' figures of a table, vectorised per producer."""
        uniq, inverse = _groups(pid, epoch)
        counts = t.record_count
        create = (t.timestamp_type_id == 0) & ~t.has_delete_horizon & (counts > 1)
        windows = t.max_timestamp - t.base_timestamp
        for k, (p, e) in enumerate(uniq):
            rows = inverse == k
            g = self._group((p, e))
            g.batches += int(rows.sum())
            g.records += int(counts[rows].sum())
            g.bytes += int(t.size[rows].sum())
            _merge(g.records_per_batch, counts[rows])
            _merge(g.sizes, (t.size[rows] // 16) * 16)
            w = rows & create
            if w.any():
                _merge(g.windows, windows[w])
            _merge_labels(g.codecs, t.codec[rows])
            _merge(g.per_minute, t.max_timestamp[rows] // 60_000)
            if self.rates:
                g.rate.add(t.max_timestamp[rows], counts[rows])
            ts = t.max_timestamp[rows]
            first = int(t.first_timestamp[rows].min())
            g.first_timestamp = first if g.first_timestamp is None else min(g.first_timestamp,
                                                                            first)
            g.last_timestamp = int(ts.max()) if g.last_timestamp is None else max(
                g.last_timestamp, int(ts.max()))

    # ------------------------------------------------------------------ sequences

    def _sequences(self, t: BatchTable, pid: np.ndarray, epoch: np.ndarray) -> None:
        """Base sequences must follow the previous batch of the same id and epoch; checked
        vectorised per producer, Python only where they do not."""
        idem = (pid >= 0) & (t.base_sequence >= 0)
        if not idem.any():
            return
        last_seq = t.last_sequence
        for p in np.unique(pid[idem]).tolist():
            rows = np.flatnonzero(idem & (pid == p))
            base = t.base_sequence[rows].astype(np.int64)
            last = last_seq[rows].astype(np.int64)
            ep = epoch[rows]
            prev_last = np.empty_like(base)
            prev_ep = np.empty_like(ep)
            prev_off = np.empty_like(base)
            tr = self._state.producers.get(p)
            if tr is None or tr.data_epoch < 0:  # no data batch of it yet
                tr = None
            prev_last[0] = tr.last_sequence if tr else -2
            prev_ep[0] = tr.data_epoch if tr else -2
            prev_off[0] = tr.last_offset if tr else -1
            prev_last[1:], prev_ep[1:] = last[:-1], ep[:-1]
            prev_off[1:] = t.last_offset[rows[:-1]]
            expected = (prev_last + 1) % SEQUENCE_MODULUS
            ok = (ep == prev_ep) & (base == expected)
            for i in np.flatnonzero(~ok).tolist():
                self._event(t, int(rows[i]), p, int(ep[i]), int(base[i]), int(prev_last[i]),
                            int(prev_ep[i]), int(prev_off[i]))
            wraps = ok & ((last < base) | ((base < prev_last) & (prev_ep != -2)))
            for i in np.flatnonzero(wraps).tolist():
                self.events.append(SequenceEvent(
                    "wrap", self.topic, self.partition, p, int(ep[i]),
                    int(t.base_offset[rows[i]]), None, int(base[i]), None,
                    "sequences wrap past 2147483647 to 0 (DefaultRecordBatch)",
                    int(t.max_timestamp[rows[i]])))

    def _sequences_rows(self, t: BatchTable, pid: np.ndarray, epoch: np.ndarray) -> None:
        """:meth:`_sequences` row by row in plain Python, for small tables: the same events
        in the same order (producer by producer in id order; each one's breaks, then its
        wraps), where numpy's calls per producer cost more than the rows' work."""
        ids, epochs, bases = pid.tolist(), epoch.tolist(), t.base_sequence.tolist()
        firsts, lasts = t.base_offset.tolist(), t.last_offset.tolist()
        rows_of: dict[int, list[int]] = {}
        for i, (p, base) in enumerate(zip(ids, bases, strict=True)):
            if p >= 0 and base >= 0:
                rows_of.setdefault(p, []).append(i)
        for p in sorted(rows_of):
            tr = self._state.producers.get(p)
            if tr is None or tr.data_epoch < 0:  # no data batch of it yet
                prev_last, prev_ep, prev_off = -2, -2, -1
            else:
                prev_last, prev_ep, prev_off = tr.last_sequence, tr.data_epoch, tr.last_offset
            breaks, wraps = [], []
            for i in rows_of[p]:
                base, ep = bases[i], epochs[i]
                # numpy's int64 wraps by multiples of 2^64, which the modulus removes
                last = (base + lasts[i] - firsts[i]) % SEQUENCE_MODULUS
                if ep != prev_ep or base != (prev_last + 1) % SEQUENCE_MODULUS:
                    breaks.append((i, ep, base, prev_last, prev_ep, prev_off))
                elif last < base or (base < prev_last and prev_ep != -2):
                    wraps.append((i, ep, base))
                prev_last, prev_ep, prev_off = last, ep, lasts[i]
            for i, ep, base, before, before_ep, before_off in breaks:
                self._event(t, i, p, ep, base, before, before_ep, before_off)
            for i, ep, base in wraps:
                self.events.append(SequenceEvent(
                    "wrap", self.topic, self.partition, p, ep, firsts[i], None, base, None,
                    "sequences wrap past 2147483647 to 0 (DefaultRecordBatch)",
                    int(t.max_timestamp[i])))

    def _event(self, t: BatchTable, row: int, p: int, ep: int, base: int, prev_last: int,
               prev_ep: int, prev_off: int) -> None:
        offset = int(t.base_offset[row])
        when = int(t.max_timestamp[row])
        if prev_ep == -2:  # first batch of this producer in the log: nothing to follow
            return
        if ep != prev_ep:
            kind = "epoch_bump" if ep > prev_ep and base == 0 else "out_of_order"
            expected = 0 if ep > prev_ep else None
            self.events.append(SequenceEvent(kind, self.topic, self.partition, p, ep, offset,
                                             expected, base, prev_off, timestamp=when))
            return
        expected = (prev_last + 1) % SEQUENCE_MODULUS
        kind = "duplicate" if _seq_before(base, expected) else "gap"
        explained = None
        if kind == "gap" and offset > prev_off + 1:
            explained = ("offsets are missing too: compaction or retention removed the "
                         "batches in between")
        self.events.append(SequenceEvent(kind, self.topic, self.partition, p, ep, offset,
                                         expected, base, prev_off, explained, when))

    # ------------------------------------------------------------------ transactions

    def _explain_bumps(self, first_new_event: int, before: dict[int, Transaction | None],
                       ended: list[Transaction]) -> None:
        """What became of the transaction a producer had open when its epoch was bumped. A
        producer fenced with a transaction open gets a bumped epoch; the coordinator ends
        that transaction with an abort marker (``TransactionCoordinator.handleInitProducerId``)
        before the new instance writes. The transaction is the one of the producer-state
        fold holding the producer's batch before the bump; its marker may come chunks
        later (the event waits for it)."""
        closed: dict[int, list[Transaction]] = {}  # per producer, in offset order
        for x in ended:
            if x.first_offset is not None:
                closed.setdefault(x.producer_id, []).append(x)
        firsts = {p: [x.first_offset for x in xs] for p, xs in closed.items()}
        for p, waiting in list(self._waiting.items()):
            for k in list(waiting):
                x = _holding(closed.get(p, ()), firsts.get(p, ()),
                             self.events[k].open_transaction)
                if x is not None:
                    self._closed_by(k, x)
                    waiting.remove(k)
            if not waiting:
                del self._waiting[p]
        for k in range(first_new_event, len(self.events)):
            e = self.events[k]
            if e.kind != "epoch_bump":
                continue
            p, at = e.producer_id, e.previous_offset
            earlier = before.get(p)
            x = earlier if earlier is not None and earlier.contains(at) else \
                _holding(closed.get(p, ()), firsts.get(p, ()), at)
            if x is not None:
                self._closed_by(k, x)
                continue
            still = self._state.ongoing.get(p)
            if still is not None and still.first_offset <= at <= still.last_offset:
                self.events[k] = replace(e, open_transaction=still.first_offset)
                self._waiting.setdefault(p, []).append(k)

    def _closed_by(self, k: int, x: Transaction) -> None:
        self.events[k] = replace(self.events[k], open_transaction=x.first_offset,
                                 closed_by=x.marker_offset, closed_epoch=x.producer_epoch)

    # ------------------------------------------------------------------ verdicts

    def finish(self) -> None:
        self.flush()
        advise = self.topic not in BROKER_WRITTEN_TOPICS
        for g in self.producers.values():
            _classify(g)
            if advise:
                self.findings.extend(_batching_findings(g, self.path))
        for e in self.events:
            self.findings.extend(_sequence_findings(e, self.path))


def _holding(closed: Sequence[Transaction], firsts: Sequence[int], offset: int | None
             ) -> Transaction | None:
    """Of one producer's transactions (in offset order, ``firsts`` their first offsets), the
    one whose data holds ``offset``."""
    if offset is None:
        return None
    i = bisect.bisect_right(firsts, offset) - 1
    return closed[i] if i >= 0 and closed[i].contains(offset) else None


def _groups(pid: np.ndarray, epoch: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct (producer id, epoch) pairs of a chunk, in the order they first appear
    (so that producers are listed in log order however the log is cut), and each row's
    group. A chunk of one producer (the common case) costs two comparisons; otherwise one
    1-D sort of a combined key (producer ids are allocated from 0 in blocks, far below
    2^47)."""
    if (pid == pid[0]).all() and (epoch == epoch[0]).all():
        return [(int(pid[0]), int(epoch[0]))], np.zeros(len(pid), np.intp)
    combined = pid * 65_536 + (epoch + 1)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    pairs = [(int(pid[i]), int(epoch[i])) for i in first[order].tolist()]
    return pairs, rank[inverse.reshape(-1)]


def _ids(t: BatchTable) -> tuple[np.ndarray, np.ndarray]:
    """Each row's producer id and epoch, -1 and -1 for a non-idempotent producer (one group
    for them all)."""
    pid = t.producer_id.astype(np.int64)
    epoch = np.where(pid >= 0, t.producer_epoch.astype(np.int64), -1)
    return np.where(pid >= 0, pid, NON_IDEMPOTENT), epoch


def _idempotent_ids(t: BatchTable) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`_ids` where some row has a sequence to check, ``(None, None)`` where none
    does (most of a broker's small tables: their producers are not idempotent)."""
    if not ((t.producer_id >= 0) & (t.base_sequence >= 0)).any():
        return None, None
    return _ids(t)


def _seq_before(a: int, b: int) -> bool:
    """``a`` comes before ``b`` on the sequence circle (within half of it)."""
    return 0 < (b - a) % SEQUENCE_MODULUS < SEQUENCE_MODULUS // 2


def quantiles(counts: Mapping[int, int], qs: Sequence[float]) -> list[int]:
    """For each ``q``, the smallest value with at least ``q`` of the counts at or below it (0
    for no counts). Plain Python: a histogram here has a handful of values, where numpy's
    calls would cost more than the work."""
    if not counts:
        return [0] * len(qs)
    keys = sorted(counts)
    cum = list(itertools.accumulate(counts[k] for k in keys))
    return [keys[min(bisect.bisect_left(cum, q * cum[-1]), len(keys) - 1)] for q in qs]


def _merge(into: dict[int, int], values: np.ndarray) -> None:
    keys, counts = np.unique(values, return_counts=True)
    for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
        into[k] = into.get(k, 0) + c


def _merge_labels(into: dict[str, int], codecs: np.ndarray) -> None:
    keys, counts = np.unique(codecs, return_counts=True)
    for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
        label = codec_label(int(k))
        into[label] = into.get(label, 0) + c


def _classify(g: ProducerBatching) -> None:
    """unbatched: nearly every batch holds one record; full: batches end near a common size
    ceiling (``batch.size`` reached); lingered: their open windows cluster at one value (the
    likely ``linger.ms``); mixed otherwise."""
    if not g.batches:
        return
    single = g.records_per_batch.get(1, 0) / g.batches
    if single >= 0.9:
        g.verdict = "unbatched"
        return
    top = g.quantile(g.sizes, 0.95)
    near = sum(v for k, v in g.sizes.items() if k >= 0.85 * top)
    if top >= 1024 and near / g.batches >= 0.6:
        g.verdict, g.ceiling = "full", top
        return
    if g.windows:
        # the most frequent window; of equally frequent ones the shortest (whatever the
        # order the batches were folded in)
        mode, n = max(g.windows.items(), key=lambda kv: (kv[1], -kv[0]))
        if n / sum(g.windows.values()) >= 0.5:
            g.verdict, g.linger_ms = "lingered", int(mode)
            return
    g.verdict = "mixed"


def _batching_findings(g: ProducerBatching, path: str) -> Iterator[Finding]:
    if g.verdict == "unbatched" and g.batches >= 10:
        per_record = max((g.bytes - RECORD_BATCH_OVERHEAD * g.batches) / max(g.records, 1), 1)
        per_batch = max(int(DEFAULT_BATCH_SIZE // (per_record + 8)), 1)
        fewer = g.batches / max(g.records / per_batch, 1)
        saved = (RECORD_BATCH_OVERHEAD * (g.batches - g.records / per_batch)) / max(g.bytes, 1)
        single = g.records_per_batch.get(1, 0) / g.batches
        yield finding(
            "producer_unbatched", path,
            f"{g.label}: {single:.0%} of {g.batches} batches hold one record; the same records "
            f"in batches of {DEFAULT_BATCH_SIZE // 1024} KiB would be {fewer:.0f}x fewer "
            f"batches and about {saved:.0%} fewer bytes on disk from batch headers alone "
            "(linger.ms > 0 lets the producer batch)" + (
                f"; compressed in 16 KiB batches, a sample of its values shrinks to "
                f"{g.recompressed:.0%} of its size compressed one by one"
                if g.recompressed is not None else ""))
    elif g.verdict == "full":
        yield finding(
            "producer_batch_size_bound", path,
            f"{g.label}: {g.batches} batches close at about {format_bytes(g.ceiling or 0)} "
            "(batch.size reached before linger.ms): a larger batch.size would make fewer, "
            "bigger batches")
    if g.codecs and set(g.codecs) != {"none"} and g.records:
        mean_records = g.records / g.batches
        if mean_records < 2:
            yield finding(
                "compression_ineffective", path,
                f"{g.label}: {'/'.join(sorted(g.codecs))} on batches of {mean_records:.1f} "
                "record(s): the codec works per batch and has almost nothing to share")


def _sequence_findings(e: SequenceEvent, path: str) -> Iterator[Finding]:
    who = f"producer {e.producer_id} epoch {e.producer_epoch} in {e.topic}-{e.partition}"
    if e.kind == "gap" and e.explained is None:
        yield finding("producer_sequence_gap", path,
                      f"{who}: base sequence {e.base_sequence} at offset {e.offset} after "
                      f"sequence {(e.expected or 0) - 1} at offset {e.previous_offset}; "
                      f"{(e.base_sequence - (e.expected or 0)) % SEQUENCE_MODULUS} sequence(s) "
                      "missing with no offsets missing", offset=e.offset)
    elif e.kind == "gap":
        yield finding("producer_sequence_gap_explained", path,
                      f"{who}: base sequence {e.base_sequence} at offset {e.offset}, expected "
                      f"{e.expected}; {e.explained}", offset=e.offset)
    elif e.kind == "duplicate":
        yield finding("producer_sequence_duplicate", path,
                      f"{who}: base sequence {e.base_sequence} at offset {e.offset} was already "
                      f"written (expected {e.expected}): the same records are in the log twice",
                      offset=e.offset)
    elif e.kind == "out_of_order":
        yield finding("producer_sequence_out_of_order", path,
                      f"{who}: base sequence {e.base_sequence} at offset {e.offset} after a "
                      "later epoch or out of order", offset=e.offset)
    elif e.kind == "epoch_bump":
        if e.open_transaction is None:
            txn = ""
        elif e.closed_by is None:
            txn = (f"; the transaction it had open since offset {e.open_transaction} has no "
                   "marker in the log (still open: see segtools transactions)")
        else:
            txn = (f"; the transaction it had open since offset {e.open_transaction} was ended "
                   f"by the marker at offset {e.closed_by} (epoch {e.closed_epoch}: the "
                   "coordinator aborts a fenced producer's transaction)")
        yield finding("producer_epoch_bump", path,
                      f"{who}: the producer's epoch was bumped at offset {e.offset}"
                      f"{_at(e.timestamp)} (a restart, a timeout or a fenced transaction); "
                      f"sequences restart at 0{txn}", offset=e.offset)


def _at(ms: int | None) -> str:
    return "" if ms is None or ms < 0 else f" at {format_time(ms)}"


def analyse_partition(partition: PartitionDir, *, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                      measure_codec: bool = True,
                      advance: Callable[[int], None] = lambda n: None,
                      beside: Sequence[TableFold] = (),
                      held: Mapping[str, bytes] | None = None,
                      state: TransactionFold | None = None,
                      rates: bool = True) -> PartitionProducers:
    """Batching and sequences of every producer in one partition, from the batch headers;
    ``measure_codec`` recompresses a bounded sample of an unbatched producer's values;
    ``beside``: other analyses fed by the same walk of the partition; ``held``: small
    segments' bytes already read (:func:`~segtools.analysis.partition_log.fold_tables`);
    ``rates``: count each producer's rate over time (a face that does not show it asks
    for none).

    ``state``: the transactions scan of the same partition, walked beside this analysis
    (add it here, not to ``beside``), whose producer-state fold this analysis reads
    instead of folding the same batches again. That fold closes a transaction by the
    markers it reads; this analysis, as ``segtools producers`` runs it, by each control
    batch (it reads no markers). The two states agree when each control batch held one
    COMMIT or ABORT marker at its own offset; a partition where one did not
    (:attr:`~segtools.analysis.transactions.TransactionFold.markers_regular`: a damaged
    control batch) is folded again on its own, so the answer is always the one
    ``segtools producers`` gives."""
    name = partition.name
    out = PartitionProducers(name.topic if name else partition.path.name,
                             name.partition if name else -1, str(partition.path), rates=rates)
    out.findings.extend(partition.unread)
    if state is not None:
        out.watch(state.fold)
        state.watch(out)
        beside = [*beside, state]
    fold_tables(partition, [out, *beside], verify_crc=False, limit=limit, held=held)
    if state is not None:
        state.flush()
        if not state.markers_regular:
            return analyse_partition(partition, limit=limit, measure_codec=measure_codec,
                                     advance=advance, held=held, rates=rates)
    out.flush()
    for s in partition.segments:
        advance(s.log_size)
    for g in out.producers.values():
        _classify(g)
        if measure_codec and g.verdict == "unbatched" and g.batches >= 10:
            g.recompressed = recompression_gain(partition, g.producer_id, held=held)
    out.finish()
    return out


def analysed(partition: PartitionDir) -> bool:
    """Whether :func:`analyse` reads this partition (data partitions: not the metadata log)."""
    return partition.name is not None and not partition.name.is_metadata_log


def analyse(partitions: Iterable[PartitionDir], *, limit: int = DEFAULT_DECOMPRESS_LIMIT,
            measure_codec: bool = True,
            advance: Callable[[int], None] = lambda n: None) -> list[PartitionProducers]:
    """:func:`analyse_partition` for every data partition."""
    return [analyse_partition(p, limit=limit, measure_codec=measure_codec, advance=advance)
            for p in partitions if analysed(p)]


# ---------------------------------------------------------------------- record-level


@dataclass(frozen=True, slots=True)
class LikelyDuplicate:
    """The same key, value and headers written again within the window by a producer without
    idempotence: a retried send that reached the log twice."""

    topic: str
    partition: int
    first_offset: int
    offset: int
    delay_ms: int

    def to_json(self) -> dict:
        return {"type": "likely_duplicate", "topic": self.topic, "partition": self.partition,
                "first_offset": self.first_offset, "offset": self.offset,
                "delay_ms": self.delay_ms}


def likely_duplicates(partition: PartitionDir, *, window_ms: int = 120_000,
                      limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[LikelyDuplicate]:
    """Records of non-idempotent batches whose key, value and headers repeat within
    ``window_ms``. Memory holds one 16-byte hash per record of the last window only."""
    name = partition.name
    topic, part = (name.topic, name.partition) if name else (partition.path.name, -1)
    recent: OrderedDict[bytes, tuple[int, int]] = OrderedDict()
    found: list[LikelyDuplicate] = []
    findings: list[Finding] = []
    for lr in iter_records(partition, findings, limit=limit,
                           want=lambda t: ~t.is_control & (t.producer_id < 0)):
        r = lr.record
        while recent:
            _, (_, ts) = next(iter(recent.items()))
            if ts >= r.timestamp - window_ms:
                break
            recent.popitem(last=False)
        h = hashlib.blake2b(digest_size=16)
        for part_bytes in (r.key, r.value):
            h.update(b"\x00" if part_bytes is None else b"\x01" + len(part_bytes).to_bytes(
                4, "big") + part_bytes)
        for hk, hv in r.headers:
            h.update(hk.encode("utf-8", "surrogateescape"))
            h.update(b"\x00" if hv is None else b"\x01" + hv)
        digest = h.digest()
        if digest in recent:
            first, ts = recent[digest]
            found.append(LikelyDuplicate(topic, part, first, r.offset, r.timestamp - ts))
        else:
            recent[digest] = (r.offset, r.timestamp)
    return found


def _sampled_values(partition: PartitionDir, producer_id: int, sample: int,
                    held: Mapping[str, bytes] | None = None) -> list[bytes]:
    """The first ``sample`` non-empty values of one producer's data batches, in log order.
    Read as record columns, each value sliced from its span: a broker's producers write
    small records, and a :class:`~segtools.model.Record` (its batch, headers and control
    key built) per value cost ten times the value itself. ``held``: small segments' bytes
    already read (by ``.log`` path), decoded where they are instead of read again."""
    values: list[bytes] = []
    for chunk in _producer_chunks(partition, producer_id, held or {}):
        cols = chunk.columns
        in_order = np.argsort(cols.batch, kind="stable")  # batch by batch, as written
        for i in in_order[cols.value_len[in_order] > 0].tolist():
            values.append(cols.value(i))
            if len(values) >= sample:
                return values
    return values


def _producer_chunks(partition: PartitionDir, producer_id: int, held: Mapping[str, bytes]
                     ) -> Iterator[Chunk]:
    """The records of one producer's data batches, segment by segment in log order: a
    segment whose bytes are ``held`` and walk cleanly is decoded from them (the walk of the
    file would give the same table), any other is opened and walked as before."""
    findings: list[Finding] = []
    for files in partition.segments:
        data = held.get(str(files.log))
        table = None if data is None else whole_table(data, verify_crc=False)
        if table is not None:
            mine = table.take(~table.is_control & (table.producer_id == producer_id))
            yield from decode(BufferSource(data), mine, path=str(files.log))
            continue
        for segment, _, table in segment_tables(files, findings):
            mine = table.take(~table.is_control & (table.producer_id == producer_id))
            yield from segment.records(mine)


def recompression_gain(partition: PartitionDir, producer_id: int, *, sample: int = 2000,
                       batch_bytes: int = DEFAULT_BATCH_SIZE,
                       held: Mapping[str, bytes] | None = None) -> float | None:
    """How much smaller a sample of this producer's values gets when compressed in batches of
    ``batch_bytes`` rather than one record at a time (zstd, measured): the codec's gain on
    larger inputs. None when there is nothing to sample. ``held``: as
    :func:`_sampled_values`."""
    import zstandard

    values = _sampled_values(partition, producer_id, sample, held)
    if not values:
        return None
    c = zstandard.ZstdCompressor(level=3)
    alone = sum(len(c.compress(v)) for v in values)
    together, chunk = 0, bytearray()
    for v in values:
        chunk += v
        if len(chunk) >= batch_bytes:
            together += len(c.compress(bytes(chunk)))
            chunk.clear()
    if chunk:
        together += len(c.compress(bytes(chunk)))
    return together / alone
