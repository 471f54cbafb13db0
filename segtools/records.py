"""Walk the record batches of a log's bytes, shallowly (headers) or deeply (records).

This is Kafka's ``FileLogInputStream`` + ``DefaultRecordBatch`` + ``AbstractLegacyRecordBatch``
over any buffer (a segment's read-only mmap, or bytes in a test); it never opens files, so the
same code serves the CLI, Spark executors and the fuzzers.

Where Kafka would throw and give up on the whole file, the walk instead yields a
:class:`~segtools.findings.Finding` and carries on wherever the framing still tells where the
next batch starts: an operator wants every readable batch, and the exact place of each problem.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from segtools import kernel
from segtools.codecs import (
    DEFAULT_DECOMPRESS_LIMIT,
    Compression,
    crc32,
    crc32c,
    decompress,
)
from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity
from segtools.formats import batch as v2
from segtools.formats import legacy
from segtools.model import NO_TIMESTAMP_TYPE, TIMESTAMP_TYPES, Batch, Control, Record

_PREFIX = struct.Struct(">qiib")  # base offset, length, 4 format-specific bytes, magic
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_LEGACY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

#: How far a walk goes before it hands the pages behind it back (see ``_release``).
RELEASE_BYTES = 64 * 1024 * 1024
#: Bytes of uncompressed batches decoded in one kernel call (bounds its column arrays).
PLAIN_CHUNK_BYTES = 32 * 1024 * 1024
#: Decompressed bytes gathered before a chunk of compressed batches is decoded in one call.
CHUNK_BYTES = 8 * 1024 * 1024


def _finding(code: str, severity: Severity, path: str, message: str, position: int,
             offset: int | None = None) -> Finding:
    return Finding(code, severity, path, message, position=position, offset=offset)


def _is_zero(buf, start: int, end: int) -> bool:
    """Whether ``buf[start:end]`` is all zeros, read in windows whose mapped pages are handed
    back: a preallocated segment (``preallocate=true``) is a 1 GiB run of zeros."""
    pos = start
    while pos < end:
        stop = min(end, pos + RELEASE_BYTES)
        if np.any(np.frombuffer(buf, dtype=np.uint8, count=stop - pos, offset=pos)):
            return False
        _release_window(buf, pos, stop, end - start)
        pos = stop
    return True


def _checksum(crc, buf, start: int, end: int) -> int:
    """``crc`` (CRC-32C or CRC-32) over ``buf[start:end]``. A batch may claim up to 2 GiB: a
    long range is summed in windows whose pages are released behind, so a hostile length costs
    time in proportion to the bytes, never resident memory."""
    view = memoryview(buf)
    try:
        if end - start <= RELEASE_BYTES:
            return crc(view[start:end])
        value = 0
        for pos in range(start, end, RELEASE_BYTES):
            stop = min(end, pos + RELEASE_BYTES)
            value = crc(view[pos:stop], value)
            _release_window(buf, pos, stop, end - start)
        return value
    finally:
        view.release()


def _release_window(buf, start: int, stop: int, total: int) -> None:
    if total > RELEASE_BYTES and hasattr(buf, "madvise"):
        release_pages(buf, start - start % mmap.PAGESIZE, stop)


def iter_batches(buf, start: int = 0, end: int | None = None, *, path: str = "",
                 verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                 guard: Guard | None = None) -> Iterator[Batch | Finding]:
    """Yield each batch in ``buf[start:end]``, and findings where the bytes break the rules.

    The end of data follows ``FileLogInputStream.nextBatch``: 17 or fewer bytes left, or a
    batch whose declared length runs past ``end``, is a torn tail (a crash, or a copy taken
    while the broker wrote); a zero-filled remainder is a preallocated file. Both end the walk
    quietly in Kafka; here each is reported once, as a finding at its position.

    ``guard(upto)`` (see :class:`segtools.storage.segment.Segment`) says whether the file still
    holds the bytes up to ``upto``: it is asked before bytes are touched, so a segment that a
    follower truncates under a mapped read ends in a finding instead of a SIGBUS.
    """
    end = len(buf) if end is None else min(end, len(buf))
    pos = start
    released = start - start % mmap.PAGESIZE
    while pos < end:
        if pos - released >= RELEASE_BYTES and hasattr(buf, "madvise"):
            released = release_pages(buf, released, pos)
        remaining = end - pos
        if guard is not None and not guard(min(end, pos + v2.RECORD_BATCH_OVERHEAD)):
            yield truncated_while_reading(path, pos)
            return
        if remaining <= v2.HEADER_SIZE_UP_TO_MAGIC:
            yield _tail_finding(buf, pos, end, path)
            return
        base_offset, length, _, magic = _PREFIX.unpack_from(buf, pos)
        if length < v2.MIN_LENGTH:
            if _is_zero(buf, pos, end):
                yield _finding("zero_filled_tail", Severity.INFO, path,
                               f"{remaining} zero bytes after the last batch (preallocated "
                               "segment or crash before the data was written)", pos)
            else:
                yield _finding("corrupt_batch_length", Severity.ERROR, path,
                               f"batch length {length} is below the minimum {v2.MIN_LENGTH}; "
                               "the framing is lost from here", pos, base_offset)
            return
        size = v2.LOG_OVERHEAD + length
        if size > remaining:
            yield _finding("truncated_tail", Severity.WARNING, path,
                           f"last batch declares {size} bytes but only {remaining} remain "
                           "(torn write or partial copy)", pos, base_offset)
            return
        if guard is not None and not guard(pos + size):
            yield truncated_while_reading(path, pos)
            return
        if magic == 2:
            yield from _v2_batch(buf, pos, size, path, verify_crc)
        elif magic in (0, 1):
            yield from _legacy_batch(buf, pos, size, magic, path, verify_crc, limit)
        else:
            yield _finding("invalid_magic", Severity.ERROR, path,
                           f"magic byte {magic} is not 0, 1 or 2; skipped {size} bytes by "
                           "its length field", pos, base_offset)
        pos += size


#: ``guard(upto) -> bool``: does the file still hold every byte before ``upto``?
Guard = Callable[[int], bool]


def truncated_while_reading(path: str, position: int) -> Finding:
    return _finding("segment_truncated_while_reading", Severity.WARNING, path,
                    "the file shrank while it was being read (a follower truncating its log, "
                    "or a copy in progress); the walk stops here", position)


def release_pages(buf, start: int, upto: int) -> int:
    """Drop the pages already walked from this process's mapping (they stay in the page
    cache), so a long walk's RSS stays flat instead of growing to the segment size."""
    upto -= upto % mmap.PAGESIZE
    buf.madvise(mmap.MADV_DONTNEED, start, upto - start)
    return upto


def _tail_finding(buf, pos: int, end: int, path: str) -> Finding:
    if _is_zero(buf, pos, end):
        return _finding("zero_filled_tail", Severity.INFO, path,
                        f"{end - pos} zero bytes after the last batch", pos)
    return _finding("truncated_tail", Severity.WARNING, path,
                    f"{end - pos} bytes after the last batch are too few for a batch header",
                    pos)


def _v2_batch(buf, pos: int, size: int, path: str,
              verify_crc: bool) -> Iterator[Batch | Finding]:
    if size < v2.RECORD_BATCH_OVERHEAD:
        yield _finding("batch_too_small", Severity.ERROR, path,
                       f"v2 batch of {size} bytes is smaller than its 61-byte header", pos)
        return
    (base_offset, _length, leader_epoch, magic, crc, attributes16, last_offset_delta,
     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
     count) = _V2_HEADER.unpack_from(buf, pos)
    attributes = attributes16 & 0xFF  # only the low byte is used: (byte) getShort(21)
    codec_id = attributes & v2.COMPRESSION_MASK
    crc_valid = None
    if verify_crc:
        crc_valid = _checksum(crc32c, buf, pos + v2.CRC_COVERAGE_START, pos + size) == crc
    batch = Batch(
        position=pos, size=size, magic=magic, base_offset=base_offset,
        last_offset=base_offset + last_offset_delta, count=count,
        compression=_codec_label(codec_id), crc=crc, crc_valid=crc_valid,
        timestamp_type=TIMESTAMP_TYPES[(attributes & v2.TIMESTAMP_TYPE_MASK) >> 3],
        base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence,
        partition_leader_epoch=leader_epoch,
        is_transactional=bool(attributes & v2.TRANSACTIONAL_FLAG),
        is_control=bool(attributes & v2.CONTROL_FLAG),
        has_delete_horizon=bool(attributes & v2.DELETE_HORIZON_FLAG),
        attributes=attributes)
    yield batch
    if crc_valid is False:
        yield _crc_finding(batch, path)
    if codec_id > Compression.ZSTD:
        yield _finding("invalid_compression", Severity.ERROR, path,
                       f"compression id {codec_id} is not one Kafka defines", pos, base_offset)


def _codec_label(codec_id: int) -> str:
    """The codec's name, or ``unknown-<id>`` for ids 5-7 (``CompressionType.forId`` throws)."""
    return Compression(codec_id).label if codec_id <= Compression.ZSTD else f"unknown-{codec_id}"


def _crc_finding(batch: Batch, path: str) -> Finding:
    return _finding("crc_mismatch", Severity.ERROR, path,
                    f"stored CRC {batch.crc} does not match the batch bytes (magic "
                    f"{batch.magic}, offsets {batch.base_offset}..{batch.last_offset})",
                    batch.position, batch.base_offset)


# ---------------------------------------------------------------------------- legacy (v0/v1)


@dataclass(frozen=True, slots=True)
class _LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None


#: Where a key or value lies in its buffer: (start, length), or None for null.
_Span = tuple[int, int] | None
#: offset, magic, attributes, timestamp, key span, value span of one message.
_Layout = tuple[int, int, int, int, _Span, _Span]


def _message_layout(buf, pos: int, size: int) -> _Layout:
    """One v0/v1 message at ``pos`` (entry start) of total ``size`` bytes, located but not
    copied; raises on bad key/value lengths, as ``LegacyRecord.key()/value()`` would."""
    offset, _msg_size, _crc, magic, attributes = _LEGACY_HEAD.unpack_from(buf, pos)
    end = pos + size
    p = pos + 18
    timestamp = -1
    if magic == 1:
        if p + 8 > end:
            raise SegtoolsError("v1 message too short for its timestamp", position=pos)
        (timestamp,) = _INT64.unpack_from(buf, p)
        p += 8
    spans: list[_Span] = []
    for name in ("key", "value"):
        if p + 4 > end:
            raise SegtoolsError(f"message too short for its {name} length", position=pos)
        (n,) = _INT32.unpack_from(buf, p)
        p += 4
        if n < 0:
            spans.append(None)
            continue
        if p + n > end:
            raise SegtoolsError(f"message {name} of {n} bytes runs past the message",
                                position=pos)
        spans.append((p, n))
        p += n
    return offset, magic, attributes, timestamp, spans[0], spans[1]


def _slice(buf, span: _Span) -> bytes | None:
    return None if span is None else bytes(buf[span[0]:span[0] + span[1]])


def _parse_message(buf, pos: int, size: int) -> _LegacyMessage:
    offset, magic, attributes, timestamp, key, value = _message_layout(buf, pos, size)
    return _LegacyMessage(offset, magic, attributes, timestamp, _slice(buf, key),
                          _slice(buf, value))


def _legacy_timestamp_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return NO_TIMESTAMP_TYPE
    return TIMESTAMP_TYPES[(attributes & legacy.TIMESTAMP_TYPE_MASK) >> 3]


def _inflate(buf, pos: int, size: int, limit: int) -> tuple[_LegacyMessage, bytes | None]:
    """The entry's message, and for a compressed wrapper its inflated inner message set."""
    outer = _parse_message(buf, pos, size)
    codec = Compression(outer.attributes & v2.COMPRESSION_MASK)
    if codec is Compression.NONE:
        return outer, None
    if outer.value is None:
        raise SegtoolsError("compressed wrapper has a null value", position=pos)
    return outer, decompress(codec, outer.value, magic=outer.magic, limit=limit)


def _inner_layouts(inner_bytes: bytes, pos: int) -> Iterator[_Layout]:
    """Each inner message of a wrapper, validated; ``pos`` is the wrapper's, for errors.

    Inner messages must not themselves be compressed, so nesting is one level at most."""
    p = 0
    while p < len(inner_bytes):
        if p + v2.LOG_OVERHEAD > len(inner_bytes):
            break  # Kafka's inner stream stops at a short tail as the outer one does
        (n,) = _INT32.unpack_from(inner_bytes, p + 8)
        if n < legacy.RECORD_OVERHEAD_V0 or p + v2.LOG_OVERHEAD + n > len(inner_bytes):
            raise SegtoolsError("inner message length out of range", position=pos)
        layout = _message_layout(inner_bytes, p, v2.LOG_OVERHEAD + n)
        if layout[2] & v2.COMPRESSION_MASK:
            raise SegtoolsError("compressed message nested inside a compressed wrapper",
                                position=pos)
        yield layout
        p += v2.LOG_OVERHEAD + n


def _inner_base(outer: _LegacyMessage, last_inner_offset: int, pos: int) -> int | None:
    """What to add to inner offsets: None for v0 (absolute), else the v1 base
    (``AbstractLegacyRecordBatch.DeepRecordsIterator``: relative to the wrapper's offset,
    which is the LAST inner offset)."""
    if outer.magic == 0:
        return None
    if outer.offset == 0:  # some librdkafka versions wrote 0 for the wrapper
        return 0
    base = outer.offset - last_inner_offset
    if base < 0:
        raise SegtoolsError("wrapper offset is smaller than its last inner offset",
                            position=pos)
    return base


def legacy_inner_records(buf, pos: int, size: int, *,
                         limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[Record]:
    """The records of one v0/v1 entry, with Kafka's offset and timestamp rules.

    A compressed wrapper's value is a whole inner message set; its offset is the LAST inner
    offset. v1 inner offsets are relative (``AbstractLegacyRecordBatch.DeepRecordsIterator``),
    v0 ones absolute. v1 inner timestamps are the wrapper's under LogAppendTime. Inner messages
    must not themselves be compressed, so nesting is one level at most, and the inflated size
    is capped by ``limit``.
    """
    outer, inner_bytes = _inflate(buf, pos, size, limit)
    if inner_bytes is None:
        return [Record(outer.offset, outer.timestamp, outer.key, outer.value)]
    inner = list(_inner_layouts(inner_bytes, pos))
    if not inner:
        raise SegtoolsError("compressed wrapper holds no messages", position=pos)
    base = _inner_base(outer, inner[-1][0], pos)
    log_append = outer.magic == 1 and outer.attributes & legacy.TIMESTAMP_TYPE_MASK
    return [
        Record(offset if base is None else base + offset,
               outer.timestamp if log_append else timestamp,
               _slice(inner_bytes, key), _slice(inner_bytes, value))
        for offset, _magic, _attributes, timestamp, key, value in inner
    ]


def legacy_base_offset(buf, pos: int, size: int, *,
                       limit: int = DEFAULT_DECOMPRESS_LIMIT) -> int:
    """The first record's offset of one v0/v1 entry, by :func:`legacy_inner_records`' rules
    and checks, without materialising the records: the shallow walk needs only this, and a
    hostile wrapper can inflate to ten million tiny messages."""
    outer, inner_bytes = _inflate(buf, pos, size, limit)
    if inner_bytes is None:
        return outer.offset
    first = last = None
    for layout in _inner_layouts(inner_bytes, pos):
        if first is None:
            first = layout[0]
        last = layout[0]
    if first is None or last is None:
        raise SegtoolsError("compressed wrapper holds no messages", position=pos)
    base = _inner_base(outer, last, pos)
    return first if base is None else base + first


def _legacy_batch(buf, pos: int, size: int, magic: int, path: str, verify_crc: bool,
                  limit: int) -> Iterator[Batch | Finding]:
    offset, _msg_size, crc, _magic, attributes = _LEGACY_HEAD.unpack_from(buf, pos)
    codec_id = attributes & v2.COMPRESSION_MASK
    if codec_id > Compression.LZ4:
        yield _finding("invalid_compression", Severity.ERROR, path,
                       f"compression id {codec_id} is not valid for magic {magic}", pos, offset)
        return
    try:
        outer = _parse_message(buf, pos, size)
    except SegtoolsError as e:
        yield _finding("corrupt_message", Severity.ERROR, path, e.message, pos, offset)
        return
    crc_valid = None
    if verify_crc:
        crc_valid = _checksum(crc32, buf, pos + legacy.CRC_COVERAGE_START, pos + size) == crc
    base_offset = offset
    problem = None
    if codec_id != Compression.NONE:
        try:
            base_offset = legacy_base_offset(buf, pos, size, limit=limit)
        except SegtoolsError as e:
            problem = e.message
    batch = Batch(
        position=pos, size=size, magic=magic, base_offset=base_offset, last_offset=offset,
        count=None, compression=Compression(codec_id).label, crc=crc, crc_valid=crc_valid,
        timestamp_type=_legacy_timestamp_type(magic, attributes), base_timestamp=-1,
        max_timestamp=outer.timestamp, attributes=attributes)
    yield batch
    if crc_valid is False:
        yield _crc_finding(batch, path)
    if problem is not None:
        yield _finding("corrupt_message", Severity.ERROR, path, problem, pos, offset)


# ---------------------------------------------------------------------------- deep (records)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Several v2 batches decoded by one kernel call. ``in_file`` says whether the spans point
    into the segment's own bytes (uncompressed) or into an inflated buffer."""

    columns: kernel.RecordColumns
    batches: list[Batch]
    in_file: bool
    path: str = ""


@dataclass(frozen=True, slots=True)
class BatchRecords:
    """One batch with its records: from the kernel's columns (v2) or a legacy list."""

    batch: Batch
    records: list[Record]
    finding: Finding | None = None


def _control(batch: Batch, key: bytes | None, value: bytes | None) -> Control | None:
    if not batch.is_control:
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


def _sequence(batch: Batch, offset_delta: int) -> int:
    if batch.base_sequence < 0:
        return -1
    return (batch.base_sequence + offset_delta) % (1 << 31)


def record_at(chunk: Chunk, i: int) -> Record:
    """Row ``i`` of a chunk as a :class:`Record` (for printing one record at a time)."""
    cols = chunk.columns
    b = chunk.batches[int(cols.batch[i])]
    key, value = cols.key(i), cols.value(i)
    return Record(int(cols.offset[i]), int(cols.timestamp[i]), key, value, cols.headers(i),
                  _sequence(b, int(cols.offset_delta[i])), _control(b, key, value))


def records_finding(chunk: Chunk, j: int) -> Finding:
    """The finding for batch ``j`` of a chunk whose records broke a rule."""
    cols, b = chunk.columns, chunk.batches[j]
    return _finding("corrupt_records", Severity.ERROR, chunk.path,
                    kernel.ERROR_MESSAGES[int(cols.err_code[j])],
                    int(cols.err_pos[j]) if chunk.in_file else b.position, b.base_offset)


def _materialise(chunk: Chunk) -> Iterator[BatchRecords]:
    """Turn one chunk's columns back into per-batch record lists (for printing)."""
    cols, batches = chunk.columns, chunk.batches
    by_batch: list[list[Record]] = [[] for _ in batches]
    for i in range(len(cols)):
        by_batch[int(cols.batch[i])].append(record_at(chunk, i))
    for j, b in enumerate(batches):
        finding = None
        if cols.err_code[j]:
            finding = records_finding(chunk, j)
        yield BatchRecords(b, by_batch[j], finding)


def _kernel_chunk(data: np.ndarray, batches: list[Batch], starts, ends, in_file: bool,
                  path: str) -> Chunk:
    cols = kernel.decode(data, starts, ends, [b.count for b in batches],
                         [b.base_offset for b in batches], [b.base_timestamp for b in batches],
                         [b.timestamp_type == "LogAppendTime" for b in batches],
                         [b.max_timestamp for b in batches])
    return Chunk(cols, batches, in_file, path)


#: ``copy(lo, hi)``: the file's bytes ``[lo, hi)`` in private memory at their own positions
#: (an array of at least ``hi`` bytes), or None to decode straight from the mapping.
PrivateCopy = Callable[[int, int], "np.ndarray | None"]


class _ChunkBuilder:
    """Accumulates consecutive v2 batches of one kind (in-file or inflated) for one call."""

    def __init__(self, view: np.ndarray, path: str, copy: PrivateCopy | None = None):
        self.view = view
        self.path = path
        self.copy = copy
        self.plain: list[Batch] = []
        self.packed: list[Batch] = []
        self.payloads: list[bytes] = []
        self.packed_size = 0

    def flush(self) -> Iterator[Chunk]:
        if self.plain:
            view = self.view
            if self.copy is not None:  # a file that changed since it was opened: no mapping
                private = self.copy(self.plain[0].position, self.plain[-1].end)
                if private is not None:
                    view = private
            yield _kernel_chunk(view, self.plain,
                                [b.position + v2.RECORD_BATCH_OVERHEAD for b in self.plain],
                                [b.end for b in self.plain], True, self.path)
            self.plain = []
        if self.packed:
            sizes = np.array([len(p) for p in self.payloads], dtype=np.int64)
            ends = np.cumsum(sizes)
            data = np.frombuffer(b"".join(self.payloads), dtype=np.uint8)
            yield _kernel_chunk(data, self.packed, ends - sizes, ends, False, self.path)
            self.packed, self.payloads, self.packed_size = [], [], 0


def decode_chunks(buf, batches: Iterable[Batch], *, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                  path: str = "", guard: Guard | None = None,
                  copy: PrivateCopy | None = None) -> Iterator[Chunk | BatchRecords]:
    """Group v2 batches into kernel calls: runs of uncompressed batches decode straight from
    ``buf`` (no copy); compressed ones are inflated into a shared buffer of ~CHUNK_BYTES.
    Legacy entries and undecodable batches come out as ready :class:`BatchRecords`, in order.
    ``copy`` lets a caller read uncompressed chunks of a file that is changing under it into
    private memory, so neither the kernel nor whoever uses the chunk's spans later touches a
    mapping the file might shrink under.
    """
    acc = _ChunkBuilder(np.frombuffer(buf, dtype=np.uint8) if len(buf) else
                        np.zeros(0, np.uint8), path, copy)
    plain_bytes = 0
    for b in batches:
        if guard is not None and not guard(b.end):
            # flush what the file still holds, then say where it ended
            acc.plain = [p for p in acc.plain if guard(p.end)]
            yield from acc.flush()
            yield BatchRecords(b, [], truncated_while_reading(path, b.position))
            return
        if b.magic == 2 and b.compression == "none":
            if acc.packed:
                yield from acc.flush()
            acc.plain.append(b)
            plain_bytes += b.size
            if plain_bytes >= PLAIN_CHUNK_BYTES:  # bounds the column arrays of one call
                yield from acc.flush()
                plain_bytes = 0
            continue
        plain_bytes = 0
        if b.magic == 2 and not b.compression.startswith("unknown"):
            try:
                payload = decompress(Compression[b.compression.upper()],
                                     memoryview(buf)[b.position + v2.RECORD_BATCH_OVERHEAD:b.end],
                                     limit=limit)
            except SegtoolsError as e:
                yield from acc.flush()
                yield BatchRecords(b, [], _finding("corrupt_compressed_payload", Severity.ERROR,
                                                   path, e.message, b.position, b.base_offset))
                continue
            if acc.plain:
                yield from acc.flush()
            acc.packed.append(b)
            acc.payloads.append(payload)
            acc.packed_size += len(payload)
            if acc.packed_size >= CHUNK_BYTES:
                yield from acc.flush()
            continue
        yield from acc.flush()
        if b.magic < 2:
            yield _legacy_records(buf, b, limit, path)
        else:  # unknown codec: the walk already reported invalid_compression
            yield BatchRecords(b, [])
    if guard is not None and acc.plain and not guard(acc.plain[-1].end):
        acc.plain = [p for p in acc.plain if guard(p.end)]
    yield from acc.flush()


def _legacy_records(buf, b: Batch, limit: int, path: str) -> BatchRecords:
    try:
        records = legacy_inner_records(buf, b.position, b.size, limit=limit)
    except SegtoolsError as e:
        return BatchRecords(b, [], _finding("corrupt_message", Severity.ERROR, path, e.message,
                                            b.position, b.last_offset))
    return BatchRecords(b, records)


def iter_batch_records(buf, batches: Iterable[Batch], *,
                       limit: int = DEFAULT_DECOMPRESS_LIMIT, path: str = "",
                       guard: Guard | None = None,
                       copy: PrivateCopy | None = None) -> Iterator[BatchRecords]:
    """Each batch with its decoded records, in order (the printing path)."""
    for item in decode_chunks(buf, batches, limit=limit, path=path, guard=guard, copy=copy):
        if isinstance(item, BatchRecords):
            yield item
        else:
            yield from _materialise(item)


# ---------------------------------------------------------------------------- salvage

#: Findings after which the walk no longer knows where the next batch starts.
FRAMING_CODES = frozenset({"corrupt_batch_length", "invalid_magic", "batch_too_small",
                           "truncated_tail", "invalid_compression", "corrupt_message"})


def valid_batch_at(buf, pos: int, end: int) -> bool:
    """Whether a whole batch with a matching CRC starts at ``pos``: the resync test.

    Cheap header sanity first (magic, length within the data, compression id, a record count
    the bytes could hold), so random bytes rarely cost a CRC over a long claimed length."""
    if pos + v2.HEADER_SIZE_UP_TO_MAGIC >= end:
        return False
    _, length, _, magic = _PREFIX.unpack_from(buf, pos)
    size = v2.LOG_OVERHEAD + length
    if length < v2.MIN_LENGTH or pos + size > end:
        return False
    if magic == 2:
        if size < v2.RECORD_BATCH_OVERHEAD:
            return False
        header = _V2_HEADER.unpack_from(buf, pos)
        attributes, count = header[5], header[12]
        if attributes & ~0x7F or attributes & 0x07 > 4 or not 0 <= count <= length // 7 + 1:
            return False
        return _checksum(crc32c, buf, pos + v2.CRC_COVERAGE_START, pos + size) == header[4]
    if magic in (0, 1):
        _, _, crc, _, attributes = _LEGACY_HEAD.unpack_from(buf, pos)
        if attributes & 0xF0 or attributes & 0x07 > 3:
            return False
        return _checksum(crc32, buf, pos + legacy.CRC_COVERAGE_START, pos + size) == crc
    return False


def find_next_batch(buf, start: int, end: int) -> int | None:
    """The first position >= ``start`` where :func:`valid_batch_at` holds: candidates are the
    bytes whose magic byte (16 bytes on) is 0, 1 or 2, found with numpy, then checked in order."""
    data = np.frombuffer(buf, dtype=np.uint8)
    step = 1 << 22
    for chunk_start in range(start, end, step):
        lo = chunk_start + 16
        hi = min(end, chunk_start + step + 16)
        if lo >= hi:
            break
        window = data[lo:hi]
        for rel in np.flatnonzero(window <= 2):
            pos = chunk_start + int(rel)
            if valid_batch_at(buf, pos, end):
                return pos
    return None


def iter_batches_salvaging(buf, start: int = 0, end: int | None = None, *, path: str = "",
                           limit: int = DEFAULT_DECOMPRESS_LIMIT, guard: Guard | None = None
                           ) -> Iterator[Batch | Finding]:
    """:func:`iter_batches`, but past a corrupt batch it resynchronises on the next header whose
    CRC validates, and reports exactly which bytes and offsets were lost (``salvage_skipped``).

    A batch whose CRC fails but whose length leads to a valid next batch is kept (flagged
    ``crc_mismatch``): only its payload is suspect. When the length itself leads nowhere, the
    batch is counted as lost and the walk searches onward from the byte after its start.
    """
    end = len(buf) if end is None else min(end, len(buf))
    pos = start
    last_good: int | None = None
    while pos < end:
        resync_at: int | None = None
        for item in iter_batches(buf, pos, end, path=path, verify_crc=True, limit=limit,
                                 guard=guard):
            if isinstance(item, Finding):
                if item.code in FRAMING_CODES and item.code != "corrupt_message":
                    resync_at = item.position
                    break
                yield item
                continue
            if item.crc_valid is False and item.end < end and \
                    not valid_batch_at(buf, item.end, end):
                resync_at = item.position
                break
            last_good = item.last_offset
            yield item
        if resync_at is None:
            return
        nxt = find_next_batch(buf, resync_at + 1, end)
        stop = end if nxt is None else nxt
        lost = ""
        if nxt is not None:
            next_base = _PREFIX.unpack_from(buf, nxt)[0]
            first_lost = 0 if last_good is None else last_good + 1
            if next_base > first_lost:
                lost = f"; offsets {first_lost}..{next_base - 1} lost"
        elif last_good is not None:
            lost = f"; every offset after {last_good} in this segment lost"
        if nxt is None and _is_zero(buf, resync_at, end):
            yield _finding("zero_filled_tail", Severity.INFO, path,
                           f"{end - resync_at} zero bytes after the last batch", resync_at)
            return
        yield Finding("salvage_skipped", Severity.ERROR, path,
                      f"bytes {resync_at}..{stop - 1} ({stop - resync_at} bytes) hold no valid "
                      f"batch{lost}", position=resync_at,
                      offset=None if last_good is None else last_good + 1)
        if nxt is None:
            return
        pos = nxt
