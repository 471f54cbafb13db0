"""The deep decode: the records of a table's batches as columns, many batches per kernel call.

Runs of uncompressed v2 batches are decoded straight from the source's bytes (no copy from a
mapping); compressed ones are inflated into a shared buffer of about ``CHUNK_BYTES`` and
decoded together; v0/v1 entries are laid out by the compiled legacy walk. Every kind comes out
the same way, as a :class:`Chunk` whose :class:`RecordColumns` hold offsets, timestamps and
*spans* (key, value, headers) into the chunk's data, so renderers and Arrow builders slice
without a Python object per record. :class:`Record` objects are built only to show one record
to a person (:func:`record`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT, Compression, decompress_into
from segtools.decode import _records, legacy
from segtools.decode.buffers import BufferPool, aligned
from segtools.decode.source import Source
from segtools.decode.spans import KeyValueColumns
from segtools.decode.table import BatchTable
from segtools.decode.walk import truncated_while_reading
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats import batch as v2
from segtools.formats.batch import NO_TIMESTAMP
from segtools.model import Batch, Control, Record

ERROR_MESSAGES = {
    _records.ERR_TRUNCATED: "record runs past the end of its batch",
    _records.ERR_VARINT_TOO_LONG: "varint longer than Kafka allows",
    _records.ERR_RECORD_LENGTH: "record body does not match its declared length",
    _records.ERR_NEGATIVE_HEADER_COUNT: "negative header count",
    _records.ERR_NEGATIVE_HEADER_KEY: "negative header key size",
    _records.ERR_TRAILING_BYTES:
        "bytes left after the declared record count (incorrect batch size)",
    _records.ERR_NEGATIVE_COUNT: "negative record count",
}

#: Largest |ms| whose microseconds still fit an int64.
MAX_MS = (2**63 - 1) // 1000
#: Bytes of uncompressed batches decoded in one kernel call (bounds its column arrays).
PLAIN_CHUNK_BYTES = 32 * 1024 * 1024
#: Inflated bytes gathered before a run of compressed batches is decoded in one call.
CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecordColumns(KeyValueColumns):
    """Records as columns. Spans (``*_pos``/``*_len``, length -1 = null) point into ``data``;
    ``batch`` is the row of the chunk's table each record belongs to."""

    headers_pos: np.ndarray
    headers_count: np.ndarray
    batch: np.ndarray
    offset_delta: np.ndarray

    def headers(self, i: int) -> tuple[tuple[str, bytes | None], ...]:
        count = int(self.headers_count[i])
        if count == 0:
            return ()
        kp, kl, vp, vl = (np.empty(count, np.int64) for _ in range(4))
        rec = np.empty(count, np.int32)
        _records.decode_headers(self.data, self.headers_pos[i:i + 1],
                                self.headers_count[i:i + 1], kp, kl, vp, vl, rec)
        return tuple(
            (self.data[kp[j]:kp[j] + kl[j]].tobytes().decode("utf-8", "replace"),
             self._span(vp[j], vl[j]))
            for j in range(count))

    def sequences(self, base_sequence: np.ndarray) -> np.ndarray:
        """``DefaultRecordBatch``: base sequence + offset delta, wrapping at
        Integer.MAX_VALUE; -1 for batches without a producer sequence."""
        base = base_sequence[self.batch].astype(np.int64)
        return np.where(base < 0, -1, (base + self.offset_delta) % (1 << 31))


#: Arrow views hold int32 offsets: a buffer is viewed from ``view_base`` so that every long
#: value lies within this many bytes of it.
MAX_VIEWED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ArrowColumns:
    """Records as the Arrow buffers of their columns, written by the record kernel in one pass
    (:func:`_records.arrow_v2`): offsets, timestamps in microseconds (``micros_valid``: the
    validity bits, None when nothing is null), keys and values as 16-byte binary views whose
    long values point into ``data[view_base:]`` (a mapped segment, or an inflated buffer).
    ``records[j]`` is how many records row ``j`` of the chunk's table holds here, so a
    batch-level field becomes a record column by ``np.repeat``, and is the field itself when
    every batch holds one record. ``headers_pos``/``headers_count`` are set when asked for."""

    data: np.ndarray
    view_base: int
    offset: np.ndarray
    micros: np.ndarray
    micros_valid: np.ndarray | None
    micros_nulls: int
    key_views: np.ndarray
    key_valid: np.ndarray | None
    key_nulls: int
    key_bytes: int
    value_views: np.ndarray
    value_valid: np.ndarray | None
    value_nulls: int
    value_bytes: int
    records: np.ndarray
    headers_pos: np.ndarray | None = None
    headers_count: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.offset.shape[0])

    def batch(self) -> np.ndarray:
        """The table row of every record (int32)."""
        return np.repeat(np.arange(len(self.records), dtype=np.int32), self.records)

    def take(self, rows: np.ndarray) -> ArrowColumns:
        """The records at the (ascending) indices ``rows``."""
        n = len(self)

        def bits(valid: np.ndarray | None) -> tuple[np.ndarray | None, int]:
            if valid is None:
                return None, 0
            kept = np.unpackbits(valid, count=n, bitorder="little")[rows]
            nulls = int(kept.size - np.count_nonzero(kept))
            return (np.packbits(kept, bitorder="little") if nulls else None), nulls

        def size(views: np.ndarray) -> int:
            return int(view_lengths(views).sum())

        mv, mn = bits(self.micros_valid)
        kv, kn = bits(self.key_valid)
        vv, vn = bits(self.value_valid)
        keys, values = self.key_views[rows], self.value_views[rows]
        counts = np.bincount(self.batch()[rows], minlength=len(self.records)).astype(np.int32)
        return ArrowColumns(
            self.data, self.view_base, self.offset[rows], self.micros[rows], mv, mn, keys, kv,
            kn, size(keys), values, vv, vn, size(values), counts,
            None if self.headers_pos is None else self.headers_pos[rows],
            None if self.headers_count is None else self.headers_count[rows])


def view_lengths(views: np.ndarray) -> np.ndarray:
    """The int32 lengths of binary views (0 for a null)."""
    return np.ascontiguousarray(views[:, :4]).view(np.int32).ravel()


@dataclass(frozen=True, slots=True)
class Chunk:
    """The records of ``table``'s batches. ``base`` is the file position of ``data[0]`` when
    the spans point into the file's own bytes (None: an inflated buffer); ``errors`` maps a
    table row to the finding for a batch whose records broke a rule; ``truncated`` is the
    batch the file no longer held when it was read (it shrank under the reader), with the
    finding that says so: nothing after it is read."""

    columns: RecordColumns | ArrowColumns
    table: BatchTable
    base: int | None
    path: str = ""
    errors: dict[int, Finding] = field(default_factory=dict)
    truncated: tuple[Batch, Finding] | None = None

    @property
    def findings(self) -> list[Finding]:
        out = [self.errors[j] for j in sorted(self.errors)]
        return [*out, self.truncated[1]] if self.truncated else out


@dataclass(frozen=True, slots=True)
class BatchRecords:
    """One batch with its records, for printing (materialised from a chunk)."""

    batch: Batch
    records: list[Record]
    finding: Finding | None = None


def _empty_columns(data: np.ndarray) -> RecordColumns:
    z64, z32 = np.zeros(0, np.int64), np.zeros(0, np.int32)
    return RecordColumns(data, z64, z64, z64, z64, z64, z64, z64, z32, z32, z32)


def record_capacity(starts: np.ndarray, ends: np.ndarray, counts: np.ndarray) -> int:
    """Rows to allocate: the declared counts, but never more than the bytes can hold, so a
    lying ``recordsCount`` of 2^31 cannot make us allocate for it."""
    by_size = (ends - starts) // _records.MIN_RECORD_SIZE
    return int(np.minimum(np.maximum(counts, 0), by_size).sum())


def decode_v2(data: np.ndarray, table: BatchTable, starts: np.ndarray, ends: np.ndarray
              ) -> tuple[RecordColumns, np.ndarray, np.ndarray]:
    """Run the record kernel over ``data`` for the batches of ``table`` (their records lie in
    ``data[starts[b]:ends[b]]``); returns the columns and the per-batch error code/position."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    counts = table.count.astype(np.int64)
    cap = record_capacity(starts, ends, counts)
    offset, timestamp, key_pos, key_len, value_pos, value_len, headers_pos = (
        np.empty(cap, np.int64) for _ in range(7))
    headers_count, batch, delta = (np.empty(cap, np.int32) for _ in range(3))
    err_code = np.zeros(len(table), np.int8)
    err_pos = np.zeros(len(table), np.int64)
    log_append = (table.timestamp_type_id == 1).astype(np.int8)
    n = _records.decode_v2(data, starts, ends, counts, table.base_offset, table.base_timestamp,
                           log_append, table.max_timestamp, offset, timestamp, key_pos,
                           key_len, value_pos, value_len, headers_pos, headers_count, batch,
                           delta, err_code, err_pos)
    cols = RecordColumns(data, offset[:n], timestamp[:n], key_pos[:n], key_len[:n],
                         value_pos[:n], value_len[:n], headers_pos[:n], headers_count[:n],
                         batch[:n], delta[:n])
    return cols, err_code, err_pos


def _bits(valid: np.ndarray, nulls: int, n: int) -> np.ndarray | None:
    return valid[:(n + 7) // 8] if nulls else None


def _round8(n: int) -> int:
    return -(-n // 8) * 8


class _Carver:
    """Typed arrays cut one after another from one byte buffer, each 8-byte aligned (a block
    of ``sum(_round8(bytes))`` holds them all)."""

    def __init__(self, block: np.ndarray):
        self.block = block
        self.at = 0

    def take(self, n: int, dtype, width: int = 1) -> np.ndarray:
        size = n * width * np.dtype(dtype).itemsize
        out = self.block[self.at:self.at + size].view(dtype)
        self.at += _round8(size)
        return out.reshape(n, width) if width > 1 else out


def decode_arrow(data: np.ndarray, table: BatchTable, starts: np.ndarray, ends: np.ndarray,
                 headers: bool, pool: BufferPool | None = None, crc: bool = False
                 ) -> tuple[ArrowColumns, np.ndarray, np.ndarray]:
    """:func:`decode_v2`, but into Arrow buffers (:class:`ArrowColumns`) in the same pass.

    The buffers are cut from one block of ``pool`` when given: a block comes back to the pool
    once no array refers to it any more, so a stream of batches whose consumer lets go of each
    one writes into memory already mapped instead of faulting in fresh pages per batch (that
    costs more than the decode itself). With ``crc``, the CRCs the walk left to the reader
    (``table.crc_valid`` of ``walk.CRC_PENDING``) are checked on the way, into the table."""
    return ArrowDecode(data, table, starts, ends, headers, pool, crc).result()


class ArrowDecode:
    """:func:`decode_arrow` in steps: :meth:`run` decodes the batches up to one, :meth:`result`
    the rest. The steps may run on two threads, one after the other (a reader's two halves
    sharing a chunk's decode); the columns are those of one call."""

    def __init__(self, data: np.ndarray, table: BatchTable, starts: np.ndarray,
                 ends: np.ndarray, headers: bool, pool: BufferPool | None = None,
                 crc: bool = False):
        self.data, self.table, self.headers, self.crc = data, table, headers, crc
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        self.ends = np.ascontiguousarray(ends, dtype=np.int64)
        self.counts = np.ascontiguousarray(table.count, dtype=np.int32)
        cap = _records.capacity(self.starts, self.ends, self.counts, _records.MIN_RECORD_SIZE)
        # a batch is under 2 GiB (its length is an int32), and so is every chunk's extent
        self.view_base = (0 if data.shape[0] <= MAX_VIEWED or not len(starts)
                          else int(self.starts.min()))
        nbits = _round8(-(-cap // 8))
        total = (cap * (8 + 8 + 16 + 16) + (cap * 8 + _round8(cap * 4) if headers else 0)
                 + 3 * nbits)
        cut = _Carver(pool.get(total) if pool is not None else np.empty(total, np.uint8))
        self.offset, self.micros = cut.take(cap, np.int64), cut.take(cap, np.int64)
        self.key_views, self.value_views = cut.take(cap, np.uint8, 16), cut.take(cap, np.uint8,
                                                                                 16)
        self.headers_pos = cut.take(cap if headers else 0, np.int64)
        self.headers_count = cut.take(cap if headers else 0, np.int32)
        bits = cut.take(3 * nbits, np.uint8)
        bits[:] = 0
        self.micros_valid, self.key_valid, self.value_valid = (
            bits[:nbits], bits[nbits:2 * nbits], bits[2 * nbits:])
        self.records = np.empty(len(table), np.int32)
        self.err_code = np.zeros(len(table), np.int8)
        self.err_pos = np.zeros(len(table), np.int64)
        self.stats = np.zeros(5, np.int64)
        self.done = 0  # batches decoded
        self.n = 0  # records written

    def run(self, stop: int) -> None:
        """Decode the batches before ``stop`` not decoded yet."""
        stop = min(stop, len(self.table))
        if stop <= self.done:
            return
        t = self.table
        self.n = _records.arrow_v2(
            self.data, self.starts, self.ends, self.counts, t.base_offset, t.base_timestamp,
            t.attributes, t.max_timestamp, self.view_base, self.offset, self.micros,
            self.micros_valid, self.key_views, self.key_valid, self.value_views,
            self.value_valid, self.headers_pos, self.headers_count, self.records,
            self.err_code, self.err_pos, self.stats, t.crc if self.crc else None,
            t.crc_valid if self.crc else None, self.done, stop, self.n)
        self.done = stop

    def result(self) -> tuple[ArrowColumns, np.ndarray, np.ndarray]:
        """The columns of every batch (the rest decoded now), the error codes and positions."""
        self.run(len(self.table))
        n, headers = self.n, self.headers
        mn, kn, vn, kb, vb = (int(x) for x in self.stats)
        cols = ArrowColumns(self.data, self.view_base, self.offset[:n], self.micros[:n],
                            _bits(self.micros_valid, mn, n), mn, self.key_views[:n],
                            _bits(self.key_valid, kn, n), kn, kb, self.value_views[:n],
                            _bits(self.value_valid, vn, n), vn, vb, self.records,
                            self.headers_pos[:n] if headers else None,
                            self.headers_count[:n] if headers else None)
        return cols, self.err_code, self.err_pos


def _micros(ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kafka milliseconds as microseconds, and which are valid (-1, and values whose
    microseconds overflow an int64, are not)."""
    valid = (ms != NO_TIMESTAMP) & (np.abs(ms) <= MAX_MS)
    return np.where(valid, ms, 0) * 1000, valid


def _views(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    views = np.empty((len(pos), 16), np.uint8)
    _records.views(data, np.ascontiguousarray(pos, dtype=np.int64),
                   np.ascontiguousarray(lengths, dtype=np.int64), 0, views)
    return views


def arrow_columns(cols: RecordColumns, rows: int, headers: bool) -> ArrowColumns:
    """Span columns (a legacy chunk's) as :class:`ArrowColumns` for a table of ``rows``; spans
    into a buffer too large for a view's int32 offset are copied back to back first."""
    n = len(cols)
    micros, ts_valid = _micros(cols.timestamp)

    def validity(valid: np.ndarray) -> tuple[np.ndarray | None, int]:
        nulls = int(n - np.count_nonzero(valid))
        return (np.packbits(valid, bitorder="little") if nulls else None), nulls

    mv, mn = validity(ts_valid)
    kv, kn = validity(cols.key_len >= 0)
    vv, vn = validity(cols.value_len >= 0)
    data, key_pos, value_pos = cols.data, cols.key_pos, cols.value_pos
    if data.shape[0] > MAX_VIEWED:
        data, offsets = gather(data, np.concatenate([key_pos, value_pos]),
                               np.concatenate([cols.key_len, cols.value_len]))
        key_pos, value_pos = offsets[:n].astype(np.int64), offsets[n:-1].astype(np.int64)
    records = np.bincount(cols.batch, minlength=rows).astype(np.int32)
    return ArrowColumns(data, 0, cols.offset, micros, mv, mn,
                        _views(data, key_pos, cols.key_len), kv, kn,
                        int(np.maximum(cols.key_len, 0).sum()),
                        _views(data, value_pos, cols.value_len), vv, vn,
                        int(np.maximum(cols.value_len, 0).sum()), records,
                        cols.headers_pos if headers else None,
                        cols.headers_count if headers else None)


def _empty_arrow(rows: int, headers: bool) -> ArrowColumns:
    return arrow_columns(_empty_columns(np.zeros(0, np.uint8)), rows, headers)


@dataclass(frozen=True, slots=True)
class Layout:
    """What a chunk's columns are: spans (:class:`RecordColumns`, the default) or Arrow
    buffers (:class:`ArrowColumns`, with header sections located when ``headers``)."""

    arrow: bool = False
    headers: bool = True
    #: Where Arrow buffers are cut from (recycled once their arrays are gone); None: fresh.
    pool: BufferPool | None = None
    #: Check the CRCs the walk left to the reader while decoding the records of uncompressed
    #: batches (Arrow buffers only).
    crc: bool = False

    def decode(self, data: np.ndarray, table: BatchTable, starts: np.ndarray,
               ends: np.ndarray) -> tuple[RecordColumns | ArrowColumns, np.ndarray, np.ndarray]:
        if self.arrow:
            return decode_arrow(data, table, starts, ends, self.headers, self.pool, self.crc)
        return decode_v2(data, table, starts, ends)

    def empty(self, rows: int) -> RecordColumns | ArrowColumns:
        if self.arrow:
            return _empty_arrow(rows, self.headers)
        return _empty_columns(np.zeros(0, np.uint8))

    def of(self, cols: RecordColumns, rows: int) -> RecordColumns | ArrowColumns:
        return arrow_columns(cols, rows, self.headers) if self.arrow else cols


SPANS = Layout()


def _corrupt_records(path: str, table: BatchTable, err_code: np.ndarray, err_pos: np.ndarray,
                     base: int | None) -> dict[int, Finding]:
    """Kernel errors as findings: the byte at fault when the spans are the file's own bytes,
    else the batch's position (records before the fault are kept, as Kafka's iterator
    returns them before it throws)."""
    out = {}
    for j in np.flatnonzero(err_code):
        j = int(j)
        position = int(err_pos[j]) + base if base is not None else int(table.position[j])
        out[j] = finding("corrupt_records", path,
                         ERROR_MESSAGES[int(err_code[j])], position=position,
                         offset=int(table.base_offset[j]))
    return out


def _plain_chunk(source: Source, table: BatchTable, path: str,
                 layout: Layout = SPANS) -> tuple[Chunk, int]:
    """Uncompressed v2 batches, decoded from the source's bytes. Returns the chunk and how
    many of the rows the file still held (fewer when it shrank while being read)."""
    lo = int(table.position[0])
    end = table.end
    hi = int(end[-1])
    contiguous = bool(np.all(table.position[1:] == end[:-1]))
    if contiguous:
        data, base, avail = source.window(lo, hi, keep=True)
    else:  # scattered rows (a filtered table): read each batch, packed back to back
        parts, base, avail = [], lo, hi
        for position, stop in zip(table.position.tolist(), end.tolist(), strict=True):
            part, pbase, pavail = source.window(position, stop, keep=True)
            if pavail < stop:
                avail = position
                break
            parts.append(part[position - pbase:stop - pbase])
        data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        base = None
    held = int(np.searchsorted(end, avail, side="right")) if contiguous else len(parts)
    if held < len(table):
        table, end = table.take(slice(0, held)), end[:held]
    if contiguous:
        starts = table.position - base + v2.RECORD_BATCH_OVERHEAD
        ends = end - base
    else:
        sizes = table.size
        ends = np.cumsum(sizes)
        starts = ends - sizes + v2.RECORD_BATCH_OVERHEAD
    cols, err_code, err_pos = layout.decode(data, table, starts, ends)
    file_base = base if contiguous else None
    if not contiguous:  # report the batch position rather than a packed-buffer position
        err_pos = np.zeros_like(err_pos)
    return Chunk(cols, table, file_base, path,
                 _corrupt_records(path, table, err_code, err_pos, file_base)), held


class PlainDecode:
    """:func:`decode` of contiguous uncompressed v2 batches the source holds whole, into Arrow
    buffers, in steps (:class:`ArrowDecode`): ``step.run(b)`` decodes the batches before
    ``b``, :meth:`chunk` the rest, and gives the one chunk :func:`decode` gives for them."""

    def __init__(self, base: int, decode: ArrowDecode, path: str):
        self.base, self.step, self.path = base, decode, path

    @classmethod
    def of(cls, source: Source, table: BatchTable, path: str, limit: int,
           layout: Layout) -> PlainDecode | None:
        """None unless :func:`decode` would decode ``table`` as one such chunk."""
        if not len(table) or not layout.arrow or _kind(table, limit).any():
            return None
        lo, end = int(table.position[0]), table.end
        hi = int(end[-1])
        if hi - lo > PLAIN_CHUNK_BYTES or not bool(np.all(table.position[1:] == end[:-1])):
            return None
        data, base, avail = source.window(lo, hi, keep=True)
        if avail < hi:
            return None
        return cls(base, ArrowDecode(data, table, table.position - base
                                     + v2.RECORD_BATCH_OVERHEAD, end - base, layout.headers,
                                     layout.pool, layout.crc), path)

    def chunk(self) -> Chunk:
        cols, err_code, err_pos = self.step.result()
        table = self.step.table
        return Chunk(cols, table, self.base, self.path,
                     _corrupt_records(self.path, table, err_code, err_pos, self.base))


def _packed_chunk(table: BatchTable, data: np.ndarray, starts: np.ndarray,
                  ends: np.ndarray, path: str, layout: Layout) -> Chunk:
    # inflated records: a batch's CRC covers its compressed bytes, not these
    cols, err_code, err_pos = replace(layout, crc=False).decode(data, table, starts, ends)
    return Chunk(cols, table, None, path, _corrupt_records(path, table, err_code, err_pos, None))


def _legacy_chunk(source: Source, table: BatchTable, path: str, limit: int,
                  layout: Layout = SPANS) -> tuple[Chunk, int]:
    """v0/v1 entries: a run of uncompressed messages is laid out by one compiled call over
    the file's bytes (each message is its own batch); a wrapper's records come from its
    inflated value. All of them end up in one data buffer."""
    parts: list[KeyValueColumns] = []
    owners: list[np.ndarray] = []
    errors: dict[int, Finding] = {}
    held = n = len(table)
    codec, position, end = table.codec, table.position, table.end
    # where each run of adjacent uncompressed messages ends, found for all at once: a loop
    # asking numpy one message at a time cost more than decoding the run (1 M messages)
    plain = codec == 0
    joined = plain[1:] & plain[:-1] & (position[1:] == end[:-1])
    run_ends = np.append(np.flatnonzero(~joined) + 1, n)
    j = 0
    while j < n:
        if plain[j]:  # a run of adjacent uncompressed messages
            k = int(run_ends[np.searchsorted(run_ends, j, side="right")])
            lo, hi = int(position[j]), int(end[k - 1])
            data, base, avail = source.window(lo, hi, keep=True)
            if avail < hi:
                k = j + int(np.searchsorted(end[j:k], avail, side="right"))
                held = k
                hi = int(end[k - 1]) if k > j else lo
            if k > j:
                parts.append(legacy.message_set(data[lo - base:hi - base]))
                owners.append(np.arange(j, k, dtype=np.int32))
            if held < n:
                break
            j = k
            continue
        at, size = int(position[j]), int(table.size[j])
        data, base, avail = source.window(at, at + size, keep=True)
        if avail < at + size:
            held = j
            break
        try:
            messages = legacy.wrapper_messages(data, at - base, size, limit=limit)
            parts.append(messages)
            owners.append(np.full(len(messages), j, np.int32))
        except SegtoolsError as e:
            errors[j] = finding("corrupt_message", path, e.message,
                                position=at, offset=int(table.last_offset[j]))
        j += 1
    table = table.take(slice(0, held)) if held < n else table
    if not parts:
        return Chunk(layout.empty(len(table)), table, None, path, errors), held
    counts = np.array([len(m) for m in parts])
    at = np.repeat(np.cumsum([0] + [len(m.data) for m in parts[:-1]]), counts)
    batch = _joined(owners)
    offsets = _joined([m.offset for m in parts])
    total = int(counts.sum())
    cols = RecordColumns(
        _joined([m.data for m in parts]), offsets, _joined([m.timestamp for m in parts]),
        _joined([m.key_pos for m in parts]) + at, _joined([m.key_len for m in parts]),
        _joined([m.value_pos for m in parts]) + at, _joined([m.value_len for m in parts]),
        np.zeros(total, np.int64), np.zeros(total, np.int32), batch,
        (offsets - table.base_offset[batch]).astype(np.int32))
    return Chunk(layout.of(cols, len(table)), table, None, path, errors), held


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The parts of a chunk as one array; the one part itself when there is one (a chunk of
    plain messages is one run: concatenating copied the run's bytes, a third of its walk)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _kind(table: BatchTable, limit: int) -> np.ndarray:
    """0 uncompressed v2, 1 compressed v2 (known codec), 2 legacy, 3 unknown codec, 4 an
    uncompressed v2 batch whose records alone exceed the cap on one batch's bytes."""
    codec = table.codec
    if not codec.any() and not (table.magic < 2).any() and \
            int(table.size.max()) - v2.RECORD_BATCH_OVERHEAD <= limit:
        return np.zeros(len(table), np.int64)  # the usual chunk: all uncompressed v2
    kind = np.where(table.magic < 2, 2,
                    np.where(codec == 0, 0, np.where(codec <= Compression.ZSTD, 1, 3)))
    kind[(kind == 0) & (table.size - v2.RECORD_BATCH_OVERHEAD > limit)] = 4
    return kind


def _over_cap(run: BatchTable, path: str, limit: int, layout: Layout = SPANS) -> Chunk:
    """Batches too big to decode within the cap: a finding each, no records (the same cap as
    a compressed payload's, ``--max-decompressed-bytes``; Kafka's own limit is the topic's
    ``max.message.bytes``, 1 MiB by default)."""
    errors = {j: finding("batch_exceeds_cap", path,
                         f"batch holds {int(run.size[j]) - v2.RECORD_BATCH_OVERHEAD} bytes of "
                         f"records, more than the {limit}-byte cap on one batch; not decoded",
                         position=int(run.position[j]), offset=int(run.base_offset[j]))
              for j in range(len(run))}
    return Chunk(layout.empty(len(run)), run, None, path, errors)


def decode(source: Source, table: BatchTable, *, path: str = "",
           limit: int = DEFAULT_DECOMPRESS_LIMIT, layout: Layout = SPANS) -> Iterator[Chunk]:
    """The records of every batch of ``table``, as chunks in table order.

    A batch whose payload cannot be inflated, or whose codec is unknown, appears in its chunk
    with no records (and, for a bad payload, a ``corrupt_compressed_payload`` finding). When
    the file shrinks under the reader, the batches it still holds are decoded and the last
    chunk carries ``segment_truncated_while_reading`` at the first batch it lost. ``layout``
    says whether the chunks hold spans or Arrow buffers.
    """
    if not len(table):
        return
    kinds = _kind(table, limit)
    cuts = np.flatnonzero(np.diff(kinds)) + 1
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(table)], strict=True):
        run = table.take(slice(lo, hi))
        kind = int(kinds[lo])
        if kind == 0:
            chunks = _plain_runs(source, run, path, layout)
        elif kind == 1:
            chunks = _packed_runs(source, run, path, limit, layout)
        elif kind == 2:
            chunks = _held(_legacy_chunk(source, run, path, limit, layout), run, path)
        elif kind == 4:
            chunks = iter([_over_cap(run, path, limit, layout)])
        else:
            chunks = iter([Chunk(layout.empty(len(run)), run, None, path)])
        for chunk in chunks:
            yield chunk
            if chunk.truncated is not None:  # the file shrank: nothing more to read
                return


def _lost(chunk: Chunk, run: BatchTable, row: int, path: str) -> Chunk:
    """``chunk``, marked as the last one: the file no longer holds ``run``'s batch ``row``."""
    finding = truncated_while_reading(path, int(run.position[row]))
    return Chunk(chunk.columns, chunk.table, chunk.base, path, chunk.errors,
                 (run.batch(row), finding))


def _held(result: tuple[Chunk, int], run: BatchTable, path: str) -> Iterator[Chunk]:
    chunk, held = result
    yield _lost(chunk, run, held, path) if held < len(run) else chunk


def _plain_runs(source: Source, run: BatchTable, path: str, layout: Layout
                ) -> Iterator[Chunk]:
    sizes = np.cumsum(run.size)
    lo = 0
    while lo < len(run):
        limit = (sizes[lo - 1] if lo else 0) + PLAIN_CHUNK_BYTES
        hi = max(lo + 1, int(np.searchsorted(sizes, limit, side="right")))
        part = run.take(slice(lo, hi))
        yield from _held(_plain_chunk(source, part, path, layout), part, path)
        lo = hi


def _packed_runs(source: Source, run: BatchTable, path: str, limit: int, layout: Layout
                 ) -> Iterator[Chunk]:
    """Compressed v2 batches, inflated back to back into one buffer from the source's pool
    and decoded together once about ``CHUNK_BYTES`` are gathered."""
    rows: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    errors: dict[int, Finding] = {}
    buf = source.buffers.get(2 * CHUNK_BYTES)
    used = 0
    start = 0

    def flush(stop: int) -> Chunk:
        part = run.take(slice(start, stop))
        chunk = None
        if rows:
            chunk = _packed_chunk(part.take(np.array(rows, np.int64) - start), buf[:used],
                                  np.array(starts, np.int64), np.array(ends, np.int64), path,
                                  layout)
        return _remap(chunk, part, rows, start, errors, path, layout)

    # each batch's place and codec as Python ints, computed once: ``run.end`` and
    # ``run.codec`` are derived columns, and asking them per batch made the loop quadratic
    # in the run's length (a run of one-record compressed batches is a whole table chunk)
    positions, ends_at = run.position.tolist(), run.end.tolist()
    codecs = [Compression(c) for c in run.codec.tolist()]
    for j in range(len(run)):
        position, end = positions[j], ends_at[j]
        data, base, avail = source.window(position, end, keep=True)
        if avail < end:
            yield _lost(flush(j), run, j, path)
            return
        payload = memoryview(data)[position - base + v2.RECORD_BATCH_OVERHEAD:end - base]
        codec = codecs[j]
        try:
            n = decompress_into(codec, payload, memoryview(buf)[used:], limit=limit)
            if n is None:  # the buffer is full: hand out what it holds, then try a fresh one
                if rows:
                    yield flush(j)
                    rows, starts, ends, errors, used, start = [], [], [], {}, 0, j
                buf = source.buffers.get(2 * CHUNK_BYTES)
                n = decompress_into(codec, payload, memoryview(buf), limit=limit)
            if n is None:  # one payload larger than a chunk: room for the cap, in one piece
                buf = aligned(limit + 1)  # (memory is only committed where it is written)
                n = decompress_into(codec, payload, memoryview(buf), limit=limit)
        except SegtoolsError as e:
            errors[j] = finding("corrupt_compressed_payload", path, e.message,
                                position=position, offset=int(run.base_offset[j]))
            continue
        rows.append(j)
        starts.append(used)
        used += n
        ends.append(used)
        if used >= CHUNK_BYTES:
            yield flush(j + 1)
            rows, starts, ends, errors, used, start = [], [], [], {}, 0, j + 1
            buf = source.buffers.get(2 * CHUNK_BYTES)
    if start < len(run):
        yield flush(len(run))


def _remap(chunk: Chunk | None, part: BatchTable, rows: list[int], start: int,
           errors: dict[int, Finding], path: str, layout: Layout) -> Chunk:
    """A chunk decoded from some rows of ``part`` (those whose payload inflated), re-indexed so
    that its ``batch`` column and errors refer to rows of ``part``."""
    own = {j - start: f for j, f in errors.items()}
    if chunk is None:
        return Chunk(layout.empty(len(part)), part, None, path, own)
    index = np.array([r - start for r in rows], np.int32)
    cols = chunk.columns
    if isinstance(cols, ArrowColumns):
        records = np.zeros(len(part), np.int32)
        records[index] = cols.records
        cols = replace(cols, records=records)
    else:
        cols = RecordColumns(cols.data, cols.offset, cols.timestamp, cols.key_pos, cols.key_len,
                             cols.value_pos, cols.value_len, cols.headers_pos,
                             cols.headers_count, index[cols.batch], cols.offset_delta)
    for j, f in chunk.errors.items():
        own[int(index[j])] = f
    return Chunk(cols, part, None, path, own)


def binary_of_views(data: np.ndarray, view_base: int, views: np.ndarray, nbytes: int,
                    pool: BufferPool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The values of binary views (into ``data[view_base:]``) copied back to back, and
    Arrow-style int32 offsets into the result: a plain binary column in one compiled pass
    (into a block of ``pool`` when given: memory already mapped, see :func:`decode_arrow`)."""
    size = _round8(nbytes) + 4 * (len(views) + 1)
    cut = _Carver(pool.get(size) if pool is not None else np.empty(size, np.uint8))
    out = cut.take(nbytes, np.uint8)
    offsets = cut.take(len(views) + 1, np.int32)
    _records.views_to_binary(data, view_base, views, out, offsets)
    return out, offsets


def gather(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """The spans ``data[pos[i]:pos[i]+lengths[i]]`` copied back to back (nulls, length -1,
    are empty), and Arrow-style int32 offsets into the result: binary columns in one call."""
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    out = np.empty(int(np.maximum(lengths, 0).sum()), np.uint8)
    offsets = np.empty(len(pos) + 1, np.int32)
    _records.gather(data, pos, lengths, out, offsets)
    return out, offsets


def header_spans(data: np.ndarray, headers_pos: np.ndarray, headers_count: np.ndarray
                 ) -> tuple[np.ndarray, ...]:
    """One row per header of the given (already validated) header sections:
    ``(key_pos, key_len, value_pos, value_len, record)``; value length -1 = null."""
    counts = np.ascontiguousarray(headers_count, dtype=np.int32)
    total = int(counts.sum())
    kp, kl, vp, vl = (np.empty(total, np.int64) for _ in range(4))
    rec = np.empty(total, np.int32)
    _records.decode_headers(data, np.ascontiguousarray(headers_pos, dtype=np.int64), counts,
                            kp, kl, vp, vl, rec)
    return kp, kl, vp, vl, rec


# ------------------------------------------------------------------ one record, for a person


def control(batch_is_control: bool, key: bytes | None, value: bytes | None) -> Control | None:
    """``ControlRecordType`` and ``EndTransactionMarker`` of a control record."""
    if not batch_is_control:
        return None
    try:
        ctype = v2.control_type_name(key)
    except Exception:
        return Control("INVALID")
    if ctype in ("COMMIT", "ABORT"):
        if value is None or len(value) < 6:
            return Control(ctype)
        return Control(ctype, v2.EndTransactionMarker.parse(value).coordinator_epoch)
    return Control(ctype)


def control_types(cols: RecordColumns, rows: slice) -> np.ndarray:
    """``ControlRecordType.parse`` for many records at once: each key's type id, -1 for a key
    :func:`control` calls INVALID (shorter than 4 bytes, or a negative version). The replays
    find transaction markers with it, with no object per record."""
    key_pos, key_len = cols.key_pos[rows], cols.key_len[rows]
    out = np.full(len(key_pos), -1, np.int16)
    ok = np.flatnonzero(key_len >= 4)
    if len(ok):
        p, d = key_pos[ok], cols.data
        version = ((d[p].astype(np.uint16) << 8) | d[p + 1]).view(np.int16)
        kind = ((d[p + 2].astype(np.uint16) << 8) | d[p + 3]).view(np.int16)
        good = version >= 0
        out[ok[good]] = kind[good]
    return out


def record(chunk: Chunk, i: int) -> Record:
    """Row ``i`` of a chunk as a :class:`Record` (for printing one record at a time)."""
    cols, table = chunk.columns, chunk.table
    j = int(cols.batch[i])
    key, value = cols.key(i), cols.value(i)
    base_sequence = int(table.base_sequence[j])
    sequence = -1 if base_sequence < 0 else (base_sequence + int(cols.offset_delta[i])) % (1 << 31)
    return Record(int(cols.offset[i]), int(cols.timestamp[i]), key, value, cols.headers(i),
                  sequence, control(bool(table.is_control[j]), key, value))


def batch_records(chunks: Iterator[Chunk]) -> Iterator[BatchRecords]:
    """Each batch with its records and its deep finding, in order (the printing path)."""
    for chunk in chunks:
        by_batch: list[list[Record]] = [[] for _ in range(len(chunk.table))]
        for i in range(len(chunk.columns)):
            by_batch[int(chunk.columns.batch[i])].append(record(chunk, i))
        for j in range(len(chunk.table)):
            yield BatchRecords(chunk.table.batch(j), by_batch[j], chunk.errors.get(j))
        if chunk.truncated is not None:
            yield BatchRecords(chunk.truncated[0], [], chunk.truncated[1])
