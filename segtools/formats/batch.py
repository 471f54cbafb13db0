"""The v2 record batch (magic 2) as a declarative spec, read top to bottom like Kafka's table.

Sources mirrored: ``DefaultRecordBatch`` (header layout, CRC coverage), ``DefaultRecord``
(record body), ``ControlRecordType`` and ``EndTransactionMarker`` (control records).
These definitions are the *reference* decoder: complete and readable, used by tests and to
build bytes. The bulk path (the compiled walk, :mod:`segtools.decode.walk`) must agree with
them.
"""

from __future__ import annotations

import io

from construct import (
    Bytes,
    Const,
    ConstructError,
    FixedSized,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Prefixed,
    PrefixedArray,
    Struct,
    Terminated,
    this,
)

from segtools.codecs import crc32c
from segtools.formats.varint import NullableBytes, VarBytes, Varint, Varlong

#: Bytes before the length field ends: baseOffset (8) + length (4) (``Records.LOG_OVERHEAD``).
LOG_OVERHEAD = 12
#: The CRC covers everything from the attributes field to the end of the batch.
CRC_COVERAGE_START = 21
#: ``LegacyRecord.RECORD_OVERHEAD_V0``: smaller lengths are corrupt (``FileLogInputStream``).
MIN_LENGTH = 14

# Attribute bits (``DefaultRecordBatch``); only the low byte is used.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1

#: The prefix every record-batch format shares; read it before choosing a parser.
LogEntryPrefix = Struct(
    "base_offset" / Int64sb,
    "length" / Int32sb,  # bytes after this field: entry size = 12 + length
    "_format_specific" / Bytes(4),  # v2: partitionLeaderEpoch; v0/v1: the message CRC
    "magic" / Int8sb,
)
#: Bytes all formats share up to and including magic (``Records.HEADER_SIZE_UP_TO_MAGIC``).
HEADER_SIZE_UP_TO_MAGIC = LogEntryPrefix.sizeof()

#: ``DefaultRecordBatch`` header, 61 bytes.
RecordBatchHeader = Struct(
    "base_offset" / Int64sb,
    "length" / Int32sb,
    "partition_leader_epoch" / Int32sb,  # not under the CRC: the leader rewrites it
    "magic" / Const(2, Int8sb),
    "crc" / Int32ub,  # CRC-32C over [21, end of batch)
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,  # the delete horizon when DELETE_HORIZON_FLAG is set
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)
#: ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``, derived from the header's layout as Kafka
#: derives it (the offset of the records count plus its size): 61.
RECORD_BATCH_OVERHEAD = RecordBatchHeader.sizeof()


RecordHeader = Struct(
    "key" / VarBytes(),  # UTF-8 text in Kafka; kept as bytes here, decoded by renderers
    "value" / NullableBytes(),
)

#: A record body, everything after the record's own length varint.
RecordBody = Struct(
    "attributes" / Int8sb,  # unused, written as 0
    "timestamp_delta" / Varlong,
    "offset_delta" / Varint,
    "key" / NullableBytes(),
    "value" / NullableBytes(),
    "headers" / PrefixedArray(Varint, RecordHeader),  # a negative count is invalid
    Terminated,  # the body must consume exactly the record's declared length
)

#: ``DefaultRecord``: a varint length (excluding itself), then exactly that many body bytes.
Record = Prefixed(Varint, RecordBody)

#: ``ControlRecordType``: version int16 then type int16 (4 bytes; longer keys are read as v0).
ControlRecordKey = Struct(
    "version" / Int16sb,
    "type" / Int16sb,
)

#: ``EndTransactionMarker``: version int16, coordinatorEpoch int32.
EndTransactionMarker = Struct(
    "version" / Int16sb,
    "coordinator_epoch" / Int32sb,
)

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

#: The whole batch, for building test bytes and reading small ones with the reference parser.
RecordBatch = Struct(
    "header" / RecordBatchHeader,
    "payload" / FixedSized(this.header.length - (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD),
                           GreedyBytes),
)


def parse_records(payload: bytes, count: int) -> list:
    """Reference decode of ``count`` records from an (already decompressed) payload.

    Mirrors ``DefaultRecordBatch.RecordIterator``: exactly ``count`` records, each consuming
    exactly its declared length, and nothing left over afterwards.
    """
    records = []
    pos = 0
    for _ in range(count):
        stream = io.BytesIO(payload)
        stream.seek(pos)
        records.append(Record.parse_stream(stream))
        pos = stream.tell()
    if pos != len(payload):
        raise ConstructError(f"{len(payload) - pos} bytes left after {count} records")
    return records


def control_type_name(key: bytes | None) -> str:
    """``ControlRecordType.parse``: keys under 4 bytes or with a negative version are invalid."""
    if key is None or len(key) < 4:
        raise ConstructError("control record key shorter than 4 bytes")
    parsed = ControlRecordKey.parse(key)
    if parsed.version < 0:
        raise ConstructError(f"negative control record version {parsed.version}")
    return CONTROL_TYPES.get(parsed.type, "UNKNOWN")


def build_batch(*, base_offset: int, records_payload: bytes, records_count: int,
                last_offset_delta: int, attributes: int = 0, partition_leader_epoch: int = -1,
                base_timestamp: int = NO_TIMESTAMP, max_timestamp: int = NO_TIMESTAMP,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                base_sequence: int = -1) -> bytes:
    """Build one v2 batch around an already encoded (and, if ``attributes`` say so, already
    compressed) records payload, with the length and CRC-32C filled in as Kafka does."""
    header = dict(base_offset=base_offset,
                  length=RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(records_payload),
                  partition_leader_epoch=partition_leader_epoch, magic=2, crc=0,
                  attributes=attributes, last_offset_delta=last_offset_delta,
                  base_timestamp=base_timestamp, max_timestamp=max_timestamp,
                  producer_id=producer_id, producer_epoch=producer_epoch,
                  base_sequence=base_sequence, records_count=records_count)
    raw = bytearray(RecordBatchHeader.build(header) + records_payload)
    raw[17:21] = crc32c(bytes(raw[CRC_COVERAGE_START:])).to_bytes(4, "big")
    return bytes(raw)


def field_offsets(spec: Struct) -> dict[str, int]:
    """Byte offset of each fixed-size field of a construct ``Struct``, in declaration order:
    what the compiled walk's named offsets are checked against."""
    out, at = {}, 0
    for sub in spec.subcons:
        if sub.name is not None:
            out[sub.name] = at
        try:
            at += sub.sizeof()
        except Exception:  # a variable-size field: nothing after it has a fixed offset
            break
    return out
