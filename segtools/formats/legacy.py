"""Message format v0 and v1 (magic 0 / 1), as ``LegacyRecord`` lays a log entry out.

An entry is ``offset int64, size int32`` then the message: ``crc uint32`` (CRC-32 IEEE over
magic..end), magic, attributes, a timestamp in v1 only, then int32-length key and value
(-1 = null). A compressed *wrapper* carries, as its value, the compressed bytes of a whole inner
message set; the wrapper's offset is that of the LAST inner message
(``AbstractLegacyRecordBatch``).
"""

from __future__ import annotations

from construct import (
    Construct,
    If,
    Int8sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Struct,
    stream_read,
    stream_write,
    this,
)

#: ``LegacyRecord.RECORD_OVERHEAD_V0`` / ``_V1``: the smallest possible message sizes.
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
#: The CRC covers the message from the magic byte (entry byte 16) to its end.
CRC_COVERAGE_START = 16

TIMESTAMP_TYPE_MASK = 0x08


class NullableInt32Bytes(Construct):
    """int32 length then bytes; a negative length is null (``LegacyRecord.key()/value()``)."""

    def _parse(self, stream, context, path):
        length = Int32sb._parse(stream, context, path)
        if length < 0:
            return None
        return stream_read(stream, length, path)

    def _build(self, obj, stream, context, path):
        Int32sb._build(-1 if obj is None else len(obj), stream, context, path)
        if obj is not None:
            stream_write(stream, bytes(obj), len(obj), path)
        return obj


#: The message body after the CRC (what the CRC covers).
MessageBody = Struct(
    "magic" / Int8sb,
    "attributes" / Int8sb,  # bits 0-2 codec (no zstd), bit 3 timestamp type (v1 only)
    "timestamp" / If(this.magic >= 1, Int64sb),
    "key" / NullableInt32Bytes(),
    "value" / NullableInt32Bytes(),
)

#: One log entry holding a v0/v1 message.
LegacyLogEntry = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
    "crc" / Int32ub,
    "message" / MessageBody,
)

