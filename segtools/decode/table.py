"""The batch table: one row per batch of a segment, as equal-length numpy columns.

Every bulk consumer (scan, verify, retention, compaction, the forensic replays, the Spark source,
the renderers) reads batches through this table, never through one Python object per batch:
real log dirs hold millions of one-record batches, and the cost per batch decides the speed.
:class:`~segtools.model.Batch` is built only where one batch is shown to a person
(:meth:`BatchTable.batch`).

For v0/v1 data a row is what Kafka's ``AbstractLegacyRecordBatch`` view reports: an
uncompressed message is its own batch (``count`` -1, as ``countOrNull`` is null), a compressed
wrapper is one batch of its inner messages whose base offset is the first inner offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from segtools.formats import batch as v2
from segtools.model import NO_TIMESTAMP_TYPE, TIMESTAMP_TYPES, Batch

#: Column name -> dtype, in the order the kernel fills them.
COLUMNS: dict[str, np.dtype] = {
    "position": np.dtype(np.int64),
    "size": np.dtype(np.int64),  # bytes including the 12-byte log overhead
    "magic": np.dtype(np.int8),
    "attributes": np.dtype(np.int16),  # the low byte Kafka uses: (byte) getShort(21)
    "base_offset": np.dtype(np.int64),
    "last_offset": np.dtype(np.int64),
    "count": np.dtype(np.int32),  # -1 for v0/v1 (RecordBatch.countOrNull is null)
    "base_timestamp": np.dtype(np.int64),  # the delete horizon when the v2 flag says so
    "max_timestamp": np.dtype(np.int64),
    "producer_id": np.dtype(np.int64),
    "producer_epoch": np.dtype(np.int16),
    "base_sequence": np.dtype(np.int32),
    "leader_epoch": np.dtype(np.int32),  # partitionLeaderEpoch, -1 for v0/v1
    "crc": np.dtype(np.uint32),
    "crc_valid": np.dtype(np.int8),  # 1 valid, 0 mismatch, -1 not checked
}

CODEC_LABELS = ("none", "gzip", "snappy", "lz4", "zstd")


def codec_label(codec_id: int) -> str:
    """The codec's name, or ``unknown-<id>`` for ids 5-7 (``CompressionType.forId`` throws)."""
    return CODEC_LABELS[codec_id] if codec_id < len(CODEC_LABELS) else f"unknown-{codec_id}"


def allocate(rows: int) -> dict[str, np.ndarray]:
    """Empty columns for ``rows`` batches (the kernel writes into them)."""
    return {name: np.empty(rows, dtype) for name, dtype in COLUMNS.items()}


@dataclass(frozen=True, slots=True, eq=False)
class BatchTable:
    """Batches as columns, in file order (positions ascending)."""

    position: np.ndarray
    size: np.ndarray
    magic: np.ndarray
    attributes: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    count: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    leader_epoch: np.ndarray
    crc: np.ndarray
    crc_valid: np.ndarray

    @classmethod
    def from_columns(cls, columns: dict[str, np.ndarray], rows: int | None = None
                     ) -> BatchTable:
        """The first ``rows`` rows of kernel-filled columns (copied when that saves memory)."""
        def cut(a: np.ndarray) -> np.ndarray:
            if rows is None:
                return a
            return a[:rows].copy() if rows < len(a) // 2 else a[:rows]
        return cls(**{name: cut(columns[name]) for name in COLUMNS})

    @classmethod
    def from_batches(cls, batches: Sequence[Batch]) -> BatchTable:
        """A table of :class:`Batch` values (the inverse of :meth:`batch`; tests, and the
        few places that hold one batch and want its records)."""
        cols = allocate(len(batches))
        for i, b in enumerate(batches):
            cols["position"][i], cols["size"][i], cols["magic"][i] = b.position, b.size, b.magic
            cols["attributes"][i] = b.attributes
            cols["base_offset"][i], cols["last_offset"][i] = b.base_offset, b.last_offset
            cols["count"][i] = -1 if b.count is None else b.count
            cols["base_timestamp"][i], cols["max_timestamp"][i] = (b.base_timestamp,
                                                                   b.max_timestamp)
            cols["producer_id"][i], cols["producer_epoch"][i] = b.producer_id, b.producer_epoch
            cols["base_sequence"][i] = b.base_sequence
            cols["leader_epoch"][i] = b.partition_leader_epoch
            cols["crc"][i] = b.crc
            cols["crc_valid"][i] = -1 if b.crc_valid is None else int(b.crc_valid)
        return cls.from_columns(cols)

    @classmethod
    def empty(cls) -> BatchTable:
        return cls.from_columns(allocate(0))

    @classmethod
    def concat(cls, tables: Sequence[BatchTable]) -> BatchTable:
        if not tables:
            return cls.empty()
        if len(tables) == 1:
            return tables[0]
        return cls(**{name: np.concatenate([getattr(t, name) for t in tables])
                      for name in COLUMNS})

    def __len__(self) -> int:
        return int(self.position.shape[0])

    def take(self, rows) -> BatchTable:
        """The rows selected by a boolean mask, an index array or a slice."""
        return BatchTable(**{name: getattr(self, name)[rows] for name in COLUMNS})

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    # -- derived columns (vectorised; Kafka's accessors, batch-wide) ------------------------

    @property
    def end(self) -> np.ndarray:
        return self.position + self.size

    @property
    def codec(self) -> np.ndarray:
        """Compression id (attribute bits 0-2)."""
        return self.attributes & v2.COMPRESSION_MASK

    @property
    def is_v2(self) -> np.ndarray:
        return self.magic == 2

    def _v2_flag(self, mask: int) -> np.ndarray:
        return self.is_v2 & ((self.attributes & mask) != 0)

    @property
    def is_transactional(self) -> np.ndarray:
        return self._v2_flag(v2.TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> np.ndarray:
        return self._v2_flag(v2.CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> np.ndarray:
        return self._v2_flag(v2.DELETE_HORIZON_FLAG)

    @property
    def timestamp_type_id(self) -> np.ndarray:
        """-1 NoTimestampType (v0), 0 CreateTime, 1 LogAppendTime (attribute bit 3)."""
        kind = ((self.attributes & v2.TIMESTAMP_TYPE_MASK) >> 3).astype(np.int8)
        return np.where(self.magic == 0, np.int8(-1), kind)

    @property
    def record_count(self) -> np.ndarray:
        """Records per batch: ``count`` for v2, the offset span for a legacy entry."""
        return np.where(self.count >= 0, self.count.astype(np.int64),
                        self.last_offset - self.base_offset + 1)

    @property
    def first_timestamp(self) -> np.ndarray:
        """The first record's timestamp where the header carries it (v2 without a delete
        horizon); the max timestamp otherwise (a legacy entry, or a cleaned batch)."""
        return np.where(self.is_v2 & ~self.has_delete_horizon, self.base_timestamp,
                        self.max_timestamp)

    @property
    def last_sequence(self) -> np.ndarray:
        """``DefaultRecordBatch.lastSequence``: wraps past Integer.MAX_VALUE to 0; -1 when the
        batch has no sequence."""
        span = self.last_offset - self.base_offset
        seq = (self.base_sequence.astype(np.int64) + span) % (1 << 31)
        return np.where(self.base_sequence < 0, -1, seq)

    # -- one batch, for a person ------------------------------------------------------------

    def batch(self, i: int) -> Batch:
        """Row ``i`` as a :class:`Batch` (for printing one batch; never on a bulk path)."""
        magic = int(self.magic[i])
        attributes = int(self.attributes[i])
        valid = int(self.crc_valid[i])
        ts_type = int(self.timestamp_type_id[i])
        is_v2 = magic == 2
        return Batch(
            position=int(self.position[i]), size=int(self.size[i]), magic=magic,
            base_offset=int(self.base_offset[i]), last_offset=int(self.last_offset[i]),
            count=int(self.count[i]) if is_v2 else None,
            compression=codec_label(attributes & v2.COMPRESSION_MASK), crc=int(self.crc[i]),
            crc_valid=None if valid < 0 else bool(valid),
            timestamp_type=NO_TIMESTAMP_TYPE if ts_type < 0 else TIMESTAMP_TYPES[ts_type],
            base_timestamp=int(self.base_timestamp[i]),
            max_timestamp=int(self.max_timestamp[i]), producer_id=int(self.producer_id[i]),
            producer_epoch=int(self.producer_epoch[i]),
            base_sequence=int(self.base_sequence[i]),
            partition_leader_epoch=int(self.leader_epoch[i]),
            is_transactional=is_v2 and bool(attributes & v2.TRANSACTIONAL_FLAG),
            is_control=is_v2 and bool(attributes & v2.CONTROL_FLAG),
            has_delete_horizon=is_v2 and bool(attributes & v2.DELETE_HORIZON_FLAG),
            attributes=attributes)

    def batches(self) -> list[Batch]:
        """Every row as a :class:`Batch`: for tests and for showing a handful of batches."""
        return [self.batch(i) for i in range(len(self))]

    def row_at(self, position: int) -> int | None:
        """The row of the batch starting at file ``position``, if one does."""
        i = int(np.searchsorted(self.position, position))
        return i if i < len(self) and self.position[i] == position else None
