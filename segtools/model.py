"""The values a segment read produces: batches and records, in Kafka's vocabulary.

Kafka's client library has one type per concept (``RecordBatch``, ``Record``); these are their
frozen, printable equivalents. For v0/v1 data a :class:`Batch` reports what Kafka's own
``AbstractLegacyRecordBatch`` view reports (an uncompressed message is its own batch, a
compressed wrapper is one batch of its inner messages), so one code path serves every magic.
"""

from __future__ import annotations

from dataclasses import dataclass

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_TIMESTAMP_TYPE = "NoTimestampType"


@dataclass(frozen=True, slots=True)
class Batch:
    """One batch header (v2) or one legacy log entry, located in its file."""

    position: int
    size: int  # bytes including the 12-byte log overhead
    magic: int
    base_offset: int
    last_offset: int
    count: int | None  # None for v0/v1, as ``RecordBatch.countOrNull``
    compression: str
    crc: int
    crc_valid: bool | None  # None when the CRC was not checked
    timestamp_type: str
    base_timestamp: int  # v2 only; the delete horizon when has_delete_horizon
    max_timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    partition_leader_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    has_delete_horizon: bool = False
    attributes: int = 0

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``: wraps past Integer.MAX_VALUE to 0."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + (self.last_offset - self.base_offset)) % (1 << 31)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.has_delete_horizon else None

    def to_json(self) -> dict:
        """The batch line of docs/json-contract.md (plus documented extras)."""
        return {
            "type": "batch",
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "count": self.count,
            "position": self.position,
            "size": self.size,
            "magic": self.magic,
            "compression": self.compression,
            "crc": self.crc,
            "crc_valid": self.crc_valid,
            "timestamp_type": self.timestamp_type,
            "max_timestamp": self.max_timestamp,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence,
            "last_sequence": self.last_sequence,
            "partition_leader_epoch": self.partition_leader_epoch,
            "is_transactional": self.is_transactional,
            "is_control": self.is_control,
            "delete_horizon_ms": self.delete_horizon_ms,
        }


@dataclass(frozen=True, slots=True)
class Control:
    """A control record's meaning (``ControlRecordType`` + ``EndTransactionMarker``)."""

    type: str
    coordinator_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    sequence: int = -1
    control: Control | None = None
