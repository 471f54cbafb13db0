"""``__transaction_state``: the transaction coordinator's log, replayed.

The coordinator (``TransactionStateManager``) writes one record per state change of a
transactional id (``TransactionLog``): Empty, Ongoing, PrepareCommit/PrepareAbort,
CompleteCommit/CompleteAbort, Dead, and a tombstone when the id expires. Read back, the log
says which transactional id owns each producer id and which ids still owe a marker. The
partition leader's side of transactions (markers, the LSO, ``.txnindex``) is
:mod:`segtools.analysis.transactions`; this room sits beside the ``__consumer_offsets``
replay (:mod:`segtools.analysis.offsets`) and reads its records the same way, as compiled
field programs over decoded columns.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from segtools.analysis.partition_log import iter_chunks
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.programs import (
    SCALAR,
    SPAN,
    ST_ERROR,
    ST_OK,
    Block,
    Decoder,
    SchemaBindingError,
    spans,
    transaction_log_family,
)
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.internal.transaction_state import (
    OPEN_STATUSES,
    TRANSACTION_LOG_KEY,
    TRANSACTION_STATUSES,
    decode_record,
)
from segtools.storage.partition import PartitionDir
from segtools.units import format_duration

TRANSACTION_STATE_TOPIC = "__transaction_state"

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
        raws = iter(spans(b.data, b.value_pos[take], b.value_len[take], False))
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
            self.findings.append(finding("transaction_state_undecodable", path, str(e),
                                         offset=offset))
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
            f"{c.value['producerEpoch']}) is {c.status} since offset {c.offset}; "
            + (f"begun by the coordinator {format_duration(max(age, 0))} ago, "
               if start >= 0 else "")
            + f"timeout {format_duration(timeout)}"
            + ("; the coordinator should have aborted it" if late else ""), offset=c.offset))
    return open_ids, findings
