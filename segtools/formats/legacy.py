"""Message format v0 and v1 (magic 0 / 1), as ``LegacyRecord`` lays a log entry out.

An entry is ``offset int64, size int32`` then the message: ``crc uint32`` (CRC-32 IEEE over
magic..end), magic, attributes, a timestamp in v1 only, then int32-length key and value
(-1 = null). A compressed *wrapper* carries, as its value, the compressed bytes of a whole inner
message set; the wrapper's offset is that of the LAST inner message
(``AbstractLegacyRecordBatch``).
"""

from __future__ import annotations

from construct import (
    If,
    Int8sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Struct,
    this,
)

from segtools.formats.varint import NullableBytes

#: ``LegacyRecord.RECORD_OVERHEAD_V0`` / ``_V1``: the smallest possible message sizes.
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
#: The CRC covers the message from the magic byte (entry byte 16) to its end.
CRC_COVERAGE_START = 16

TIMESTAMP_TYPE_MASK = 0x08


#: The message body after the CRC (what the CRC covers).
MessageBody = Struct(
    "magic" / Int8sb,
    "attributes" / Int8sb,  # bits 0-2 codec (no zstd), bit 3 timestamp type (v1 only)
    "timestamp" / If(this.magic >= 1, Int64sb),
    "key" / NullableBytes(Int32sb),  # LegacyRecord.key()/value(): -1 is null
    "value" / NullableBytes(Int32sb),
)

#: One log entry holding a v0/v1 message.
LegacyLogEntry = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
    "crc" / Int32ub,
    "message" / MessageBody,
)

