"""A reference walk for tests: one Python object per batch, read with the construct declarations.

It frames batches as ``FileLogInputStream.nextBatch`` does, parses each header with
:data:`segtools.formats.batch.RecordBatchHeader` or :data:`segtools.formats.legacy.LegacyLogEntry`,
checks CRCs with crcmod (CRC-32C) and zlib (CRC-32), and decodes records with
:data:`segtools.formats.batch.Record`. It shares no code with the compiled walk or the record
kernel (only the codecs, which have tests of their own against reference encoders), so the
two agreeing means something. It is slow on purpose: it only runs in tests.
"""

from __future__ import annotations

import io
import os
import zlib

import crcmod.predefined
from construct import ConstructError, StreamError

from segtools.codecs import Compression, decompress
from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity
from segtools.formats import batch as v2
from segtools.formats import legacy
from segtools.model import NO_TIMESTAMP_TYPE, TIMESTAMP_TYPES, Batch, Control, Record

_crc32c = crcmod.predefined.mkCrcFun("crc-32c")
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _f(code: str, severity: Severity, message: str, position: int | None,
       offset: int | None = None) -> Finding:
    return Finding(code, severity, "", message, position=position, offset=offset)


def _parse_message(entry: bytes) -> legacy.MessageBody:
    """One v0/v1 entry's message, with ``LegacyRecord``'s complaints as messages."""
    magic = entry[16]
    body = entry[16:]
    if magic == 1 and len(entry) < 26:
        raise SegtoolsError("v1 message too short for its timestamp")
    at = 18 if magic == 0 else 26
    for name in ("key", "value"):
        if at + 4 > len(entry):
            raise SegtoolsError(f"message too short for its {name} length")
        n = int.from_bytes(entry[at:at + 4], "big", signed=True)
        at += 4
        if n >= 0:
            if at + n > len(entry):
                raise SegtoolsError(f"message {name} of {n} bytes runs past the message")
            at += n
    return legacy.MessageBody.parse(body)


def _inner_messages(outer: legacy.MessageBody, offset: int, limit: int) -> list:
    """(offset, message) of a compressed wrapper's inner set, with absolute offsets."""
    if outer.value is None:
        raise SegtoolsError("compressed wrapper has a null value")
    data = decompress(Compression(outer.attributes & 7), outer.value, magic=outer.magic,
                      limit=limit)
    inner = []
    p = 0
    while p < len(data):
        if p + 12 > len(data):
            break
        n = int.from_bytes(data[p + 8:p + 12], "big", signed=True)
        if n < legacy.RECORD_OVERHEAD_V0 or p + 12 + n > len(data):
            raise SegtoolsError("inner message length out of range")
        entry = data[p:p + 12 + n]
        message = _parse_message(entry)
        if message.attributes & 7:
            raise SegtoolsError("compressed message nested inside a compressed wrapper")
        inner.append((int.from_bytes(entry[:8], "big", signed=True), message))
        p += 12 + n
    if not inner:
        raise SegtoolsError("compressed wrapper holds no messages")
    if outer.magic == 0:
        return inner
    base = 0 if offset == 0 else offset - inner[-1][0]
    if base < 0:
        raise SegtoolsError("wrapper offset is smaller than its last inner offset")
    return [(base + o, m) for o, m in inner]


def _legacy(data: bytes, pos: int, size: int, limit: int):
    entry = data[pos:pos + size]
    offset, magic = int.from_bytes(entry[:8], "big", signed=True), entry[16]
    attributes = int.from_bytes(entry[17:18], "big", signed=True)
    codec = attributes & 7
    if codec > 3:
        return None, [_f("invalid_compression", Severity.ERROR,
                         f"compression id {codec} is not valid for magic {magic}", pos, offset)]
    try:
        message = _parse_message(entry)
    except (SegtoolsError, ConstructError, StreamError) as e:
        return None, [_f("corrupt_message", Severity.ERROR, getattr(e, "message", str(e)), pos,
                         offset)]
    crc = int.from_bytes(entry[12:16], "big")
    valid = zlib.crc32(entry[16:]) & 0xFFFFFFFF == crc
    base_offset, problem = offset, None
    if codec:
        try:
            base_offset = _inner_messages(message, offset, limit)[0][0]
        except SegtoolsError as e:
            problem = e.message
    ts_type = NO_TIMESTAMP_TYPE if magic == 0 else TIMESTAMP_TYPES[(attributes & 8) >> 3]
    batch = Batch(position=pos, size=size, magic=magic, base_offset=base_offset,
                  last_offset=offset, count=None, compression=_CODECS[codec], crc=crc,
                  crc_valid=valid, timestamp_type=ts_type, base_timestamp=-1,
                  max_timestamp=message.timestamp if magic == 1 else -1, attributes=attributes)
    findings = [] if valid else [_crc_finding(batch)]
    if problem is not None:
        findings.append(_f("corrupt_message", Severity.ERROR, problem, pos, offset))
    return batch, findings


def _crc_finding(b: Batch) -> Finding:
    return _f("crc_mismatch", Severity.ERROR,
              f"stored CRC {b.crc} does not match the batch bytes (magic {b.magic}, offsets "
              f"{b.base_offset}..{b.last_offset})", b.position, b.base_offset)


def _v2(data: bytes, pos: int, size: int):
    if size < v2.RECORD_BATCH_OVERHEAD:
        return None, [_f("batch_too_small", Severity.ERROR,
                         f"v2 batch of {size} bytes is smaller than its 61-byte header", pos)]
    h = v2.RecordBatchHeader.parse(data[pos:pos + v2.RECORD_BATCH_OVERHEAD])
    attributes = h.attributes & 0xFF
    codec = attributes & 7
    valid = _crc32c(data[pos + 21:pos + size]) == h.crc
    batch = Batch(
        position=pos, size=size, magic=2, base_offset=h.base_offset,
        last_offset=h.base_offset + h.last_offset_delta, count=h.records_count,
        compression=_CODECS[codec] if codec < 5 else f"unknown-{codec}", crc=h.crc,
        crc_valid=valid, timestamp_type=TIMESTAMP_TYPES[(attributes & 8) >> 3],
        base_timestamp=h.base_timestamp, max_timestamp=h.max_timestamp,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence, partition_leader_epoch=h.partition_leader_epoch,
        is_transactional=bool(attributes & 0x10), is_control=bool(attributes & 0x20),
        has_delete_horizon=bool(attributes & 0x40), attributes=attributes)
    findings = [] if valid else [_crc_finding(batch)]
    if codec > 4:
        findings.append(_f("invalid_compression", Severity.ERROR,
                           f"compression id {codec} is not one Kafka defines", pos,
                           h.base_offset))
    return batch, findings


def _all_zero(data: bytes) -> bool:
    return not any(data)


def walk(data: bytes, limit: int = 256 << 20) -> tuple[list[Batch], list[Finding]]:
    """Every batch and finding, in file order."""
    batches: list[Batch] = []
    findings: list[Finding] = []
    pos, end = 0, len(data)
    while pos < end:
        remaining = end - pos
        if remaining <= v2.HEADER_SIZE_UP_TO_MAGIC:
            if _all_zero(data[pos:]):
                findings.append(_f("zero_filled_tail", Severity.INFO,
                                   f"{remaining} zero bytes after the last batch", pos))
            else:
                findings.append(_f("truncated_tail", Severity.WARNING,
                                   f"{remaining} bytes after the last batch are too few for a "
                                   "batch header", pos))
            break
        prefix = v2.LogEntryPrefix.parse(data[pos:pos + 17])
        if prefix.length < v2.MIN_LENGTH:
            if _all_zero(data[pos:]):
                findings.append(_f("zero_filled_tail", Severity.INFO,
                                   f"{remaining} zero bytes after the last batch (preallocated "
                                   "segment or crash before the data was written)", pos))
            else:
                findings.append(_f("corrupt_batch_length", Severity.ERROR,
                                   f"batch length {prefix.length} is below the minimum "
                                   f"{v2.MIN_LENGTH}; the framing is lost from here", pos,
                                   prefix.base_offset))
            break
        size = v2.LOG_OVERHEAD + prefix.length
        if size > remaining:
            findings.append(_f("truncated_tail", Severity.WARNING,
                               f"last batch declares {size} bytes but only {remaining} remain "
                               "(torn write or partial copy)", pos, prefix.base_offset))
            break
        if prefix.magic == 2:
            batch, more = _v2(data, pos, size)
        elif prefix.magic in (0, 1):
            batch, more = _legacy(data, pos, size, limit)
        else:
            batch, more = None, [_f("invalid_magic", Severity.ERROR,
                                    f"magic byte {prefix.magic} is not 0, 1 or 2; skipped "
                                    f"{size} bytes by its length field", pos,
                                    prefix.base_offset)]
        if batch is not None:
            batches.append(batch)
        findings.extend(more)
        pos += size
    return batches, findings


def _control(batch: Batch, key: bytes | None, value: bytes | None) -> Control | None:
    if not batch.is_control:
        return None
    try:
        kind = v2.control_type_name(key)
    except Exception:
        return Control("INVALID")
    if kind in ("COMMIT", "ABORT") and value is not None and len(value) >= 6:
        return Control(kind, v2.EndTransactionMarker.parse(value).coordinator_epoch)
    return Control(kind)


def _v2_records(data: bytes, b: Batch, limit: int) -> tuple[list[Record], bool]:
    payload = data[b.position + 61:b.end]
    if b.compression.startswith("unknown"):
        return [], False
    if b.compression != "none":
        try:
            payload = decompress(Compression[b.compression.upper()], payload, limit=limit)
        except SegtoolsError:
            return [], True
    if b.count < 0:
        return [], True
    stream = io.BytesIO(payload)
    out: list[Record] = []
    for _ in range(b.count):
        try:
            r = v2.Record.parse_stream(stream)
        except (ConstructError, StreamError):
            return out, True
        ts = b.max_timestamp if b.timestamp_type == "LogAppendTime" else \
            b.base_timestamp + r.timestamp_delta
        seq = -1 if b.base_sequence < 0 else (b.base_sequence + r.offset_delta) % (1 << 31)
        headers = tuple((h.key.decode("utf-8", "replace"), h.value) for h in r.headers)
        out.append(Record(b.base_offset + r.offset_delta, ts, r.key, r.value, headers, seq,
                          _control(b, r.key, r.value)))
    return out, stream.tell() != len(payload)


def _legacy_records(data: bytes, b: Batch, limit: int) -> tuple[list[Record], bool]:
    entry = data[b.position:b.end]
    message = _parse_message(entry)
    offset = int.from_bytes(entry[:8], "big", signed=True)
    if not message.attributes & 7:
        ts = message.timestamp if message.magic == 1 else -1
        return [Record(offset, ts, message.key, message.value)], False
    try:
        inner = _inner_messages(message, offset, limit)
    except SegtoolsError:
        return [], True
    append_time = message.magic == 1 and message.attributes & 8
    return [Record(o, message.timestamp if append_time else
                   (m.timestamp if m.magic == 1 else -1), m.key, m.value)
            for o, m in inner], False


def records(data: bytes, batches: list[Batch], limit: int = 256 << 20) -> list[tuple]:
    """``(batch, records, whether decoding it met a problem)`` for each batch."""
    out = []
    for b in batches:
        recs, bad = (_v2_records if b.magic == 2 else _legacy_records)(data, b, limit)
        out.append((b, recs, bad))
    return out


def each_source(data: bytes, tmp_path=None):
    """``data`` as each source a walk reads from: in memory, and (with ``tmp_path``) written
    to a file and read through a mapping and through ``pread`` windows of 97 bytes, which end
    inside batches so that every refill path runs."""
    from segtools.decode.source import BufferSource
    from segtools.storage.source import MappedSource, WindowSource

    yield BufferSource(data)
    if tmp_path is None or not data:
        return
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for source in (MappedSource(fd, len(data)), WindowSource(fd, len(data))):
            source.stride = 97
            yield source
    finally:
        os.close(fd)

