"""Arrow columns from the record kernel's buffers, without a Python loop per record.

The record kernel writes a chunk's records as Arrow buffers in one pass
(:class:`segtools.decode.chunks.ArrowColumns`): offsets, timestamps, and keys and values as
binary views into the segment's bytes (or an inflated buffer), with their validity bits. A
column is those buffers handed to ``pa.Array.from_buffers``; a plain ``binary`` column is the
views' values copied back to back in one compiled pass. Header sections stay spans, gathered
the same way. Every column is built from buffers, never with ``pa.array`` over numpy values
(which imports pandas on first use: most of a first call's time). Spark checks a returned batch
against its schema's Arrow form exactly (names, order, types, nullability: ``docs/spark.md``),
so every builder takes the target Arrow type and the result is cast only when the caller chose
another type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from segtools.decode.buffers import BufferPool
from segtools.decode.chunks import MAX_MS, binary_of_views, gather, header_spans
from segtools.formats.batch import NO_TIMESTAMP

TIMESTAMP_US = pa.timestamp("us", tz="UTC")
BINARY = pa.binary()
#: Bytes per binary column per Arrow batch: int32 offsets must not overflow.
MAX_COLUMN_BYTES = 1 << 30


#: The page size (``pread`` copies into a page-aligned buffer about four times as fast).
_PAGE = 4096


def memory(n: int) -> np.ndarray:
    """``n`` bytes, page-aligned, from Arrow's memory pool (uninitialised): memory that
    Arrow's allocator keeps for the next buffer once this one is let go, so a stream of
    reads (one ``to_arrow()`` after another) writes into pages already mapped, where fresh
    anonymous pages cost several times what copying a page into them does. Slices of the
    array refer back to it, as :class:`~segtools.decode.buffers.BufferPool` needs."""
    buf = pa.allocate_buffer(n + _PAGE)
    return np.frombuffer(buf, dtype=np.uint8, count=n, offset=-buf.address % _PAGE)


def heap(n: int) -> np.ndarray:
    """``n`` bytes from the C heap (uninitialised): memory that the C allocator keeps and
    hands out again once a block of about the same size is let go, within a read and from
    one read to the next. For a process that reads task after task (a Spark worker): its
    reads' blocks would otherwise be fresh anonymous pages each time, and faulting them in
    and unmapping them took half of a read's CPU for one-record batches, a quarter of a
    Spark worker's (docs/performance.md, "Spark"). Slices of the array refer back to it, as
    :class:`~segtools.decode.buffers.BufferPool` needs."""
    return np.empty(n, np.uint8)


def conform(array: pa.Array, target: pa.DataType) -> pa.Array:
    """The array in the type Spark expects (a user schema may say ``long`` for an int)."""
    return array if array.type == target else array.cast(target)


def _validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(valid.size - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def column(values: np.ndarray, target: pa.DataType, valid: np.ndarray | None = None
           ) -> pa.Array:
    """A fixed-width column (integers, booleans, timestamps) from numpy values, built from
    buffers; ``valid`` marks the non-null values (None: all are). Other types (a mixed
    ``compression`` column, say) go through ``pa.array``."""
    n = int(values.shape[0])
    validity, nulls = (None, 0) if valid is None else _validity(valid)
    if pa.types.is_boolean(target):
        data = np.packbits(np.asarray(values, bool), bitorder="little")
    elif pa.types.is_integer(target) or pa.types.is_timestamp(target):
        kind = "u" if pa.types.is_unsigned_integer(target) else "i"
        data = np.ascontiguousarray(values, dtype=f"{kind}{target.bit_width // 8}")
    elif pa.types.is_string(target) or pa.types.is_binary(target):
        return _text_column(values, target, valid)
    else:
        return pa.array(values, mask=None if valid is None else ~valid, type=target)
    return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(data)], null_count=nulls)


def _text_column(values: np.ndarray, target: pa.DataType, valid: np.ndarray | None
                 ) -> pa.Array:
    """A string (or binary) column of a few distinct labels (a chunk's mixed ``compression``)
    from buffers: ``pa.array`` imports pandas on its first call, seconds that a Spark
    executor would pay on its first task."""
    items = values.tolist()
    if valid is not None:
        items = [v if ok else None for v, ok in zip(items, valid.tolist(), strict=True)]
    return text_from_values(items, target)


def text_from_values(items: list, target: pa.DataType) -> pa.Array:
    """A string or binary column from Python values (``None`` is null), built from buffers
    for the reason :func:`_text_column` gives."""
    encoded = [b"" if v is None else v if isinstance(v, bytes) else str(v).encode()
               for v in items]
    lengths = np.array([-1 if v is None else len(b)
                        for v, b in zip(items, encoded, strict=True)], np.int64)
    starts = np.zeros(len(encoded), np.int64)
    np.cumsum(lengths[:-1].clip(0), out=starts[1:])
    data = np.frombuffer(b"".join(encoded), np.uint8)
    return binary_from_spans(data, starts, lengths, target)


def binary_from_spans(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray,
                      dtype: pa.DataType = BINARY) -> pa.Array:
    """A binary (or utf8) column from spans into ``data``; a length of -1 is null."""
    n = int(pos.shape[0])
    valid = lengths >= 0
    out, offsets = gather(data, pos, lengths)
    validity, nulls = _validity(valid)
    return pa.Array.from_buffers(dtype, n, [validity, pa.py_buffer(offsets), pa.py_buffer(out)],
                                 null_count=nulls)


#: Arrow's binary views: 16 bytes per value, the bytes inline when they fit in 12, else a
#: 4-byte prefix and (buffer, offset) into a data buffer that is not copied.
BINARY_VIEW = pa.binary_view()


def views_array(data: np.ndarray, view_base: int, views: np.ndarray, valid: np.ndarray | None,
                nulls: int, nbytes: int, target: pa.DataType,
                pool: BufferPool | None = None) -> pa.Array:
    """Keys or values from the kernel's binary views in the type asked for: ``binary_view``
    over ``data[view_base:]`` itself (no payload copied; the array keeps ``data``, a mapped
    segment or an inflated buffer, alive as long as it lives), or a ``binary`` copy of the
    ``nbytes`` they hold (into a block of ``pool`` when given)."""
    n = int(views.shape[0])
    validity = None if valid is None else pa.py_buffer(valid)
    if target == BINARY_VIEW:
        buffer = data if view_base == 0 else data[view_base:]
        return pa.Array.from_buffers(BINARY_VIEW, n, [validity, pa.py_buffer(views),
                                                      pa.py_buffer(buffer)], null_count=nulls)
    out, offsets = binary_of_views(data, view_base, views, nbytes, pool)
    return pa.Array.from_buffers(BINARY, n, [validity, pa.py_buffer(offsets),
                                             pa.py_buffer(out)], null_count=nulls)


def micros_array(micros: np.ndarray, valid: np.ndarray | None, nulls: int) -> pa.Array:
    """Timestamps the kernel already wrote as microseconds, with their validity bits."""
    return pa.Array.from_buffers(TIMESTAMP_US, int(micros.shape[0]),
                                 [None if valid is None else pa.py_buffer(valid),
                                  pa.py_buffer(micros)], null_count=nulls)


def timestamps_ms(ms: np.ndarray) -> pa.Array:
    """Kafka milliseconds as Spark timestamps (microseconds, UTC); ``-1`` becomes null."""
    ms = np.asarray(ms, dtype=np.int64)
    valid = (ms != NO_TIMESTAMP) & (np.abs(ms) <= MAX_MS)
    micros = np.where(valid, ms, 0) * 1000
    validity, nulls = _validity(valid)
    return pa.Array.from_buffers(TIMESTAMP_US, int(ms.shape[0]),
                                 [validity, pa.py_buffer(micros)], null_count=nulls)


def sizes(lengths: np.ndarray, valid: np.ndarray | None, nulls: int) -> pa.Array:
    """Key or value lengths as an int column, null where the key or value is (validity
    bits as the kernel wrote them)."""
    values = np.ascontiguousarray(lengths, dtype=np.int32)
    return pa.Array.from_buffers(pa.int32(), int(values.shape[0]),
                                 [None if valid is None else pa.py_buffer(valid),
                                  pa.py_buffer(values)], null_count=nulls)


def _header_keys(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Header keys are Java Strings written as UTF-8; bytes that are not valid UTF-8 (only
    hand-made data has them) are decoded with replacement rather than failing the task."""
    keys = binary_from_spans(data, pos, lengths, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        raw = binary_from_spans(data, pos, lengths).to_pylist()
        keys = pa.array([k.decode("utf-8", "replace") for k in raw], type=pa.string())
    return keys


def headers_from_spans(data: np.ndarray, headers_pos: np.ndarray, headers_count: np.ndarray,
                       target: pa.DataType) -> pa.Array:
    """``array<struct<key string, value binary>>`` from each record's header section, decoded
    by :func:`segtools.decode.chunks.header_spans` (sections the kernel already validated)."""
    counts = np.ascontiguousarray(headers_count, dtype=np.int32)
    kp, kl, vp, vl, _ = header_spans(data, headers_pos, counts)
    items = pa.StructArray.from_arrays(
        [_header_keys(data, kp, kl), binary_from_spans(data, vp, vl)], names=["key", "value"])
    offsets = np.zeros(counts.shape[0] + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    offsets = pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)])
    return conform(pa.ListArray.from_arrays(offsets, items), target)


#: Constant columns kept per worker process, sliced to each batch's length (bounded).
_CONSTANTS: dict[tuple[object, str], pa.Array] = {}
_CONSTANTS_MAX = 256
_CONSTANT_ROWS = 1 << 16


def _constant(value: object, n: int, target: pa.DataType) -> pa.Array:
    if value is None:
        return pa.nulls(n, target)
    if pa.types.is_dictionary(target):  # one entry, and an index (0) per row
        entry = _constant(value, 1, target.value_type)
        return pa.DictionaryArray.from_arrays(
            column(np.zeros(n, np.int32), target.index_type), entry)
    if isinstance(value, str) and target in (pa.string(), pa.binary()):
        raw = value.encode("utf-8")
        offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
        return pa.Array.from_buffers(target, n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(raw * n)])
    return column(np.full(n, value), target)


def repeated(value: object, n: int, target: pa.DataType) -> pa.Array:
    """One value for every row (topic, partition, log dir, and batch fields that do not
    change within a chunk): built once per worker and sliced, which costs nothing per row."""
    key = (value, str(target))
    have = _CONSTANTS.get(key)
    if have is None or len(have) < n:
        if len(_CONSTANTS) >= _CONSTANTS_MAX:
            del _CONSTANTS[next(iter(_CONSTANTS))]
        have = _CONSTANTS[key] = _constant(value, max(n, _CONSTANT_ROWS), target)
    return have.slice(0, n)


def per_batch(values: np.ndarray, expand: Callable[[np.ndarray], np.ndarray], n: int,
              target: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """A batch-level field for each of ``n`` records: ``expand`` maps a value per batch to a
    value per record (a gather, or a repeat by the records each batch holds).

    Most fields are equal across a chunk (compression, producer, flags) and become a sliced
    constant; anything else is one numpy pass. ``valid`` marks the batches whose value is
    not null."""
    if valid is None and len(values) and bool(np.all(values == values[0])):
        first = values[0]
        return repeated(first.item() if hasattr(first, "item") else first, n, target)
    if not len(values):
        return column(values[:0], target)
    return column(expand(values), target, None if valid is None else expand(valid))


def row_slices(sizes: np.ndarray, limit: int = MAX_COLUMN_BYTES) -> list[slice]:
    """Cut rows into runs whose summed ``sizes`` stay under ``limit`` (int32 offsets)."""
    if sizes.size == 0 or int(sizes.sum()) <= limit:
        return [slice(0, int(sizes.size))]
    ends = np.cumsum(sizes)
    out, start, base = [], 0, 0
    while start < sizes.size:
        stop = int(np.searchsorted(ends, base + limit, side="right"))
        stop = max(stop, start + 1)
        out.append(slice(start, stop))
        base = int(ends[stop - 1])
        start = stop
    return out
