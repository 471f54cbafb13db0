"""Executor side: read one task's byte ranges with the segtools core, yield Arrow batches.

The walk and the decode are the CLI's (:class:`segtools.storage.segment.Segment`):
``batches()`` for headers, ``chunks()`` for the kernel's columns. What this module adds is the
Spark view of them: which batches a range owns, which a consumer would see (control batches,
aborted transactions), which rows fall inside the offset bounds, and how a corrupt batch shows
up (a row flagged ``crc_valid=false``, a logged warning, or with ``failOnCorruption`` an error
naming the file and byte position).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pyspark_kafkalog import arrow
from pyspark_kafkalog.options import Level, ReadOptions
from pyspark_kafkalog.planning import ByteRange, ReadTask
from pyspark_kafkalog.schema import PER_RECORD, TIMESTAMP_TYPE_IDS
from segtools.analysis.transactions import ReadCommitted
from segtools.errors import CorruptDataError, SegtoolsError
from segtools.findings import Finding, Severity
from segtools.kernel import ERROR_MESSAGES
from segtools.model import Batch, Record
from segtools.records import Chunk
from segtools.storage.segment import Segment
from segtools.storage.summary import SegmentSummary, summarize

log = logging.getLogger("pyspark_kafkalog")

#: The source reads up to the end of the files: no last-stable-offset cut (see the README).
_NO_LSO = 2**63 - 1
#: Bytes of batches decoded per kernel call: one Arrow batch of roughly 50-100k small records.
WINDOW_BYTES = 8 * 1024 * 1024

#: Record-level columns that are the same for every record of a batch.
_PER_BATCH: dict[str, Callable[[Batch], object]] = {
    "position": lambda b: b.position,
    "producer_id": lambda b: b.producer_id,
    "producer_epoch": lambda b: b.producer_epoch,
    "leader_epoch": lambda b: b.partition_leader_epoch,
    "is_transactional": lambda b: b.is_transactional,
    "is_control": lambda b: b.is_control,
    "compression": lambda b: b.compression,
    "crc_valid": lambda b: b.crc_valid,
    "magic": lambda b: b.magic,
    "timestampType": lambda b: TIMESTAMP_TYPE_IDS.get(b.timestamp_type, -1),
    "batch_base_offset": lambda b: b.base_offset,
    "batch_last_offset": lambda b: b.last_offset,
    "batch_size": lambda b: b.size,
    "batch_count": lambda b: b.count,
}

#: Batch fields shown as timestamps (epoch ms in the header, -1 or None when absent).
_BATCH_TIMES: dict[str, Callable[[Batch], int]] = {
    "base_timestamp": lambda b: b.base_timestamp if b.magic == 2 and not b.has_delete_horizon
    else -1,
    "max_timestamp": lambda b: b.max_timestamp,
    "batch_max_timestamp": lambda b: b.max_timestamp,
    "delete_horizon": lambda b: b.delete_horizon_ms if b.delete_horizon_ms is not None else -1,
}


@dataclass(frozen=True, slots=True)
class Scan:
    """What one read needs on an executor: the options and the columns to build."""

    opts: ReadOptions
    columns: tuple[str, ...]
    schema: pa.Schema  # exactly what Spark checks (to_arrow_schema of the reader's schema)

    @property
    def verify_crc(self) -> bool:
        """Check CRCs when the answer depends on them: the ``crc_valid`` column, a read that
        fails on corruption, or a shallow read that trusts ``count`` only of intact batches."""
        return self.opts.verify_crc and (
            "crc_valid" in self.columns or self.opts.fail_on_corruption or not self.deep)

    @property
    def deep(self) -> bool:
        """Whether any requested column differs between the records of one batch."""
        return bool(PER_RECORD.intersection(self.columns))

    def target(self, i: int) -> pa.DataType:
        return self.schema.field(i).type

    def batch(self, arrays: list[pa.Array]) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def read_task(task: object, scan: Scan) -> Iterator[pa.RecordBatch]:
    """All Arrow batches of one task (nothing for Spark's placeholder partition)."""
    if not isinstance(task, ReadTask):
        return
    if scan.opts.level is Level.SEGMENTS:
        yield from _segment_rows(task, scan)
        return
    for piece in task.ranges:
        segment = _open(piece)
        if segment is None:
            continue
        with segment:
            if scan.opts.level is Level.BATCHES:
                yield from _batch_rows(segment, piece, scan)
            else:
                yield from _record_rows(segment, piece, scan)


def _open(piece: ByteRange) -> Segment | None:
    """The segment, or None when it is gone since planning."""
    path = str(piece.files.log)
    try:
        return Segment(path)
    except SegtoolsError as e:
        if _vanished(piece):
            return None
        raise SegtoolsError(f"kafkalog: {path}: {e}", path=path) from None


def _vanished(piece: ByteRange) -> bool:
    """A live broker deletes segments (retention, a cleaner's swap) between planning and
    reading; what is gone cannot be read, and is logged rather than failing the query."""
    if os.path.exists(piece.files.log):
        return False
    log.warning("kafkalog: %s: segment deleted since the read was planned; skipped",
                piece.files.log)
    return True


# ------------------------------------------------------------------------- corruption


def report(finding: Finding, scan: Scan) -> None:
    """An error finding stops the task with ``failOnCorruption``; otherwise every warning or
    error is logged (on the executor) and the read goes on, as the CLI's findings do."""
    if finding.severity is Severity.INFO:
        return
    text = f"kafkalog: {finding.path}: {finding.code}: {finding.message}"
    if finding.offset is not None:
        text += f" (offset {finding.offset})"
    if scan.opts.fail_on_corruption and finding.severity is Severity.ERROR:
        raise CorruptDataError(text, path=finding.path, position=finding.position)
    where = f" at byte {finding.position}" if finding.position is not None else ""
    log.warning("%s%s", text, where)


# -------------------------------------------------------------------------- the walk


def _boundary_ok(segment: Segment, piece: ByteRange) -> bool:
    """The planner's cut came from the offset index; check that a batch starts there and that
    it does not begin after the indexed offset (the entry names the append's last offset)."""
    first = next(iter(segment.batches(piece.start, verify_crc=False)), None)
    if not isinstance(first, Batch):
        return False
    return piece.start_offset_hint is None or first.base_offset <= piece.start_offset_hint


def owned_items(segment: Segment, piece: ByteRange, verify_crc: bool
                ) -> Iterator[Batch | Finding]:
    """The batches (and findings) whose position lies in ``[start, end)``.

    A range starts where the offset index said a batch starts; if the bytes there are not a
    batch (an index that lies), the walk starts at byte 0 instead and skips what precedes the
    range, so ownership stays exact: the previous range, walking on from its own start, owns
    any batch that straddles the cut.
    """
    start = piece.start
    if start > 0 and not _boundary_ok(segment, piece):
        log.warning("kafkalog: %s: offset index entry at byte %d is not a batch boundary; "
                    "walking from the segment start", piece.files.log, start)
        start = 0
    for item in segment.batches(start, verify_crc=verify_crc):
        position = item.position if item.position is not None else piece.start
        if position >= piece.end:
            return
        if position >= piece.start:
            yield item


class _Visibility:
    """Which batches a consumer would see: Kafka's fetch-side rules, per batch."""

    def __init__(self, piece: ByteRange, opts: ReadOptions, level: Level):
        self.piece = piece
        self.control = opts.include_control or level is Level.BATCHES
        self.committed = (ReadCommitted(piece.aborted, last_stable_offset=_NO_LSO)
                          if opts.read_committed and piece.aborted else None)

    def in_bounds(self, b: Batch) -> bool:
        p = self.piece
        if p.min_offset is not None and b.last_offset < p.min_offset:
            return False
        if p.max_offset is not None and b.base_offset >= p.max_offset:
            return False
        return p.min_timestamp is None or b.max_timestamp >= p.min_timestamp

    def is_aborted(self, b: Batch) -> bool:
        """``CompletedFetch``: a transactional data batch inside one of its producer's
        aborted ranges is skipped (:class:`segtools.analysis.transactions.ReadCommitted`)."""
        return (self.committed is not None and b.is_transactional and not b.is_control
                and self.committed.is_aborted(b.producer_id, b.base_offset))

    def keep(self, b: Batch) -> bool:
        if not self.in_bounds(b):
            return False
        if b.is_control and not self.control:
            return False
        return not self.is_aborted(b)

    def whole(self, b: Batch) -> bool:
        """Every record of the batch lies inside the offset bounds."""
        p = self.piece
        return ((p.min_offset is None or b.base_offset >= p.min_offset)
                and (p.max_offset is None or b.last_offset < p.max_offset))


def _windows(segment: Segment, piece: ByteRange, scan: Scan,
             visible: _Visibility) -> Iterator[list[Batch]]:
    """The visible batches of a range, in windows of about ``WINDOW_BYTES``."""
    window: list[Batch] = []
    size = 0
    for item in owned_items(segment, piece, scan.verify_crc):
        if isinstance(item, Finding):
            report(item, scan)
            continue
        if not visible.keep(item):
            continue
        window.append(item)
        size += item.size
        if size >= WINDOW_BYTES:
            yield window
            window, size = [], 0
    if window:
        yield window


# ------------------------------------------------------------------------- records


def _constants(piece: ByteRange) -> dict[str, object]:
    info = piece.partition
    return {"topic": info.topic, "partition": info.partition, "log_dir": info.log_dir,
            "segment_base_offset": piece.files.base_offset}


def _batch_columns(batches: list[Batch], take: np.ndarray, counts: np.ndarray | None,
                   scan: Scan, i: int, name: str) -> pa.Array:
    if name in _BATCH_TIMES:
        fn = _BATCH_TIMES[name]
        ms = np.array([fn(b) for b in batches], np.int64)
        return arrow.timestamps_ms(ms[take])
    fn = _PER_BATCH[name]
    return arrow.per_batch([fn(b) for b in batches], take, counts, scan.target(i))


def _record_rows(segment: Segment, piece: ByteRange, scan: Scan) -> Iterator[pa.RecordBatch]:
    visible = _Visibility(piece, scan.opts, Level.RECORDS)
    for window in _windows(segment, piece, scan, visible):
        deep = window
        if not scan.deep:  # only batch-level columns: a v2 batch with a good CRC has `count`
            shallow = [b for b in window
                       if b.magic == 2 and b.crc_valid and visible.whole(b)]
            if shallow:
                yield _shallow_records(shallow, piece, scan)
                chosen = {b.position for b in shallow}
                deep = [b for b in window if b.position not in chosen]
        legacy: list[tuple[Batch, Record]] = []
        for item in segment.chunks(deep):
            if isinstance(item, Chunk):
                if legacy:
                    yield _legacy_records(legacy, piece, scan)
                    legacy = []
                yield from _chunk_records(item, piece, scan)
                continue
            if item.finding is not None:
                report(item.finding, scan)
            legacy.extend((item.batch, r) for r in item.records
                          if _in_offsets(piece, r.offset))
        if legacy:
            yield _legacy_records(legacy, piece, scan)


def _in_offsets(piece: ByteRange, offset: int) -> bool:
    return ((piece.min_offset is None or offset >= piece.min_offset)
            and (piece.max_offset is None or offset < piece.max_offset))


def _shallow_records(batches: list[Batch], piece: ByteRange, scan: Scan) -> pa.RecordBatch:
    counts = np.array([b.count for b in batches], dtype=np.int64)
    take = np.repeat(np.arange(len(batches), dtype=np.int32), counts)
    constants = _constants(piece)
    arrays = []
    for i, name in enumerate(scan.columns):
        if name in constants:
            arrays.append(arrow.repeated(constants[name], int(take.size), scan.target(i)))
        else:
            arrays.append(_batch_columns(batches, take, counts, scan, i, name))
    return scan.batch(arrays)


def _chunk_findings(chunk: Chunk, piece: ByteRange, scan: Scan) -> None:
    """Kernel errors: the records before the fault are kept, as Kafka's iterator returns
    them before it throws (and as ``segtools dump`` prints them)."""
    cols = chunk.columns
    for j in np.flatnonzero(cols.err_code):
        b = chunk.batches[int(j)]
        position = int(cols.err_pos[j]) if chunk.in_file else b.position
        report(Finding("corrupt_records", Severity.ERROR, str(piece.files.log),
                       ERROR_MESSAGES[int(cols.err_code[j])], position, b.base_offset), scan)


def _chunk_records(chunk: Chunk, piece: ByteRange, scan: Scan) -> Iterator[pa.RecordBatch]:
    cols = chunk.columns
    if cols.err_code.any():
        _chunk_findings(chunk, piece, scan)
    n = len(cols)
    if n == 0:
        return
    keep = None
    if piece.min_offset is not None:
        keep = cols.offset >= piece.min_offset
    if piece.max_offset is not None:
        below = cols.offset < piece.max_offset
        keep = below if keep is None else keep & below
    rows = None if keep is None or keep.all() else np.flatnonzero(keep)
    if rows is not None and rows.size == 0:
        return
    sizes = np.maximum(cols.key_len, 0) + np.maximum(cols.value_len, 0)
    if rows is not None:
        sizes = sizes[rows]
    for part in arrow.row_slices(sizes):
        if rows is None and part.start == 0 and part.stop == n:
            yield _columns_batch(chunk, None, piece, scan)
        else:
            selected = rows[part] if rows is not None else np.arange(part.start, part.stop)
            yield _columns_batch(chunk, selected, piece, scan)


def _columns_batch(chunk: Chunk, rows: np.ndarray | None, piece: ByteRange,
                   scan: Scan) -> pa.RecordBatch:
    cols = chunk.columns

    def pick(a: np.ndarray) -> np.ndarray:
        return a if rows is None else a[rows]

    n = len(cols) if rows is None else int(rows.size)
    take = pick(cols.batch)
    counts = np.bincount(take, minlength=len(chunk.batches)) if n else None
    constants = _constants(piece)
    arrays: list[pa.Array] = []
    for i, name in enumerate(scan.columns):
        target = scan.target(i)
        if name == "key":
            array = arrow.binary_from_spans(cols.data, pick(cols.key_pos), pick(cols.key_len))
        elif name == "value":
            array = arrow.binary_from_spans(cols.data, pick(cols.value_pos),
                                            pick(cols.value_len))
        elif name == "offset":
            array = pa.array(pick(cols.offset))
        elif name == "timestamp":
            array = arrow.timestamps_ms(pick(cols.timestamp))
        elif name == "headers":
            array = arrow.headers_from_spans(cols.data, pick(cols.headers_pos),
                                             pick(cols.headers_count), target)
        elif name in ("key_size", "value_size"):
            array = arrow.sizes(pick(cols.key_len if name == "key_size" else cols.value_len))
        elif name in constants:
            array = arrow.repeated(constants[name], n, target)
        else:
            array = _batch_columns(chunk.batches, take, counts, scan, i, name)
        arrays.append(arrow.conform(array, target))
    return scan.batch(arrays)


def _legacy_records(rows: list[tuple[Batch, Record]], piece: ByteRange,
                    scan: Scan) -> pa.RecordBatch:
    """v0/v1 entries (and the records of any batch the kernel did not take) from decoded
    records: a loop per record, acceptable for data that old."""
    batches = [b for b, _ in rows]
    constants = _constants(piece)
    arrays: list[pa.Array] = []
    for i, name in enumerate(scan.columns):
        target = scan.target(i)
        if name in ("key", "value"):
            array = pa.array([getattr(r, name) for _, r in rows], type=pa.binary())
        elif name == "offset":
            array = pa.array([r.offset for _, r in rows], type=pa.int64())
        elif name == "timestamp":
            array = arrow.timestamps_ms(np.array([r.timestamp for _, r in rows], np.int64))
        elif name == "headers":
            array = arrow.headers_from_lists([r.headers for _, r in rows], target)
        elif name in ("key_size", "value_size"):
            data = [getattr(r, name[:-5]) for _, r in rows]
            array = pa.array([None if d is None else len(d) for d in data], type=target)
        elif name in _BATCH_TIMES:
            array = arrow.timestamps_ms(np.array([_BATCH_TIMES[name](b) for b in batches],
                                                 np.int64))
        elif name in constants:
            array = arrow.repeated(constants[name], len(rows), target)
        else:
            array = pa.array([_PER_BATCH[name](b) for b in batches], type=target)
        arrays.append(arrow.conform(array, target))
    return scan.batch(arrays)


# -------------------------------------------------------------------------- batches


_BATCH_LEVEL: dict[str, Callable[[Batch], object]] = {
    "size": lambda b: b.size,
    "base_offset": lambda b: b.base_offset,
    "last_offset": lambda b: b.last_offset,
    "count": lambda b: b.count,
    "crc": lambda b: b.crc,
    "base_sequence": lambda b: b.base_sequence,
    "last_sequence": lambda b: b.last_sequence,
    **_PER_BATCH,
}


def _batch_rows(segment: Segment, piece: ByteRange, scan: Scan) -> Iterator[pa.RecordBatch]:
    visible = _Visibility(piece, scan.opts, Level.BATCHES)
    for window in _windows(segment, piece, scan, visible):
        constants = _constants(piece)
        arrays: list[pa.Array] = []
        for i, name in enumerate(scan.columns):
            target = scan.target(i)
            if name in constants:
                array = arrow.repeated(constants[name], len(window), target)
            elif name in _BATCH_TIMES:
                fn = _BATCH_TIMES[name]
                array = arrow.timestamps_ms(np.array([fn(b) for b in window], np.int64))
            else:
                fn = _BATCH_LEVEL[name]
                array = pa.array([fn(b) for b in window], type=target)
            arrays.append(arrow.conform(array, target))
        yield scan.batch(arrays)


# ------------------------------------------------------------------------- segments


def _segment_row(summary: SegmentSummary, piece: ByteRange) -> dict[str, object]:
    info = piece.partition
    return {
        "topic": info.topic, "partition": info.partition, "log_dir": info.log_dir,
        "partition_dir": info.path, "path": summary.path, "base_offset": summary.base_offset,
        "next_offset": summary.next_offset, "size": summary.size,
        "valid_bytes": summary.valid_bytes, "is_active": summary.is_active,
        "mtime": summary.mtime_ms, "batch_count": summary.batch_count,
        "record_count": summary.record_count, "first_offset": summary.first_offset,
        "last_offset": summary.last_offset, "first_timestamp": summary.first_timestamp,
        "max_timestamp": summary.max_timestamp,
        "max_timestamp_source": summary.max_timestamp_source,
        "largest_timestamp": summary.largest_timestamp, "codecs": list(summary.codecs),
        "magics": list(summary.magics), "producer_id_count": summary.producer_id_count,
        "transactional_batches": summary.transactional_batches,
        "control_batches": summary.control_batches, "crc_errors": summary.crc_errors,
        "findings": [{"code": f.code, "severity": str(f.severity), "position": f.position,
                      "offset": f.offset, "message": f.message} for f in summary.findings],
        "high_watermark": info.high_watermark, "log_start_offset": info.log_start_offset,
        "recovery_point": info.recovery_point, "cleaner_offset": info.cleaner_offset,
        "summary_json": _summary_json(summary),
    }


def _summary_json(summary: SegmentSummary) -> str:
    return json.dumps(summary.to_json(), separators=(",", ":"))


_SEGMENT_TIMES = ("mtime", "first_timestamp", "max_timestamp", "largest_timestamp")


def _segment_rows(task: ReadTask, scan: Scan) -> Iterator[pa.RecordBatch]:
    rows = []
    for piece in task.ranges:
        try:
            summary = summarize(piece.files, is_active=piece.is_active,
                                verify_crc=scan.opts.verify_crc)
        except SegtoolsError as e:
            if _vanished(piece):
                continue
            raise SegtoolsError(f"kafkalog: {piece.files.log}: {e}", path=e.path) from None
        if scan.opts.fail_on_corruption:
            for f in summary.findings:
                report(f, scan)
        rows.append(_segment_row(summary, piece))
    if not rows:
        return
    arrays = []
    for i, name in enumerate(scan.columns):
        target = scan.target(i)
        values = [row[name] for row in rows]
        if name in _SEGMENT_TIMES:
            array = arrow.timestamps_ms(np.array([-1 if v is None else v for v in values],
                                                 np.int64))
        else:
            array = pa.array(values, type=target)
        arrays.append(arrow.conform(array, target))
    yield scan.batch(arrays)
