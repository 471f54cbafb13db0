"""The three row shapes (records, batches, segments), declared once as Arrow fields.

Record columns mirror Spark's own Kafka source (``KafkaRecordToRowConverter``: ``key``,
``value``, ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``)
so code written against ``format("kafka")`` runs unchanged, followed by where each row came
from on disk and its batch's header fields. The Spark source derives its schema from these
fields, and the Python API's ``to_arrow()`` returns them as they are: one declaration, so the
faces cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np
import pyarrow as pa

from segtools.decode.table import CODEC_LABELS, BatchTable
from segtools.decode.table import COLUMNS as TABLE_COLUMNS
from segtools.formats import batch as v2


class Level(StrEnum):
    """What one row is: a record (deep decode), a batch header, or a segment summary."""

    RECORDS = "records"
    BATCHES = "batches"
    SEGMENTS = "segments"


class ColumnError(ValueError):
    """A column name a level does not have; the message lists the ones it has."""


TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

#: ``timestampType`` as Spark's Kafka source numbers it (``TimestampType.id``), plus -1 for
#: magic-0 data, which has no timestamp at all (``TimestampType.NO_TIMESTAMP_TYPE``).
TIMESTAMP_TYPE_IDS = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}

_BATCH_FIELDS: list[tuple[str, pa.DataType]] = [
    ("log_dir", pa.string()),
    ("segment_base_offset", pa.int64()),
    ("position", pa.int64()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()),
    ("leader_epoch", pa.int32()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("compression", pa.string()),
    ("crc_valid", pa.bool_()),
    ("magic", pa.int32()),
]

RECORD_FIELDS: list[tuple[str, pa.DataType]] = [
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", TIMESTAMP),
    ("timestampType", pa.int32()),
    ("headers", HEADERS),
    *_BATCH_FIELDS,
]

#: Record columns one may ask for that the default shape leaves out (sizes without copying
#: the bytes, and the batch fields the compaction and producer analyses need).
RECORD_EXTRA_FIELDS: list[tuple[str, pa.DataType]] = [
    ("key_size", pa.int32()),
    ("value_size", pa.int32()),
    ("batch_base_offset", pa.int64()),
    ("batch_last_offset", pa.int64()),
    ("batch_size", pa.int32()),
    ("batch_count", pa.int32()),
    ("batch_max_timestamp", TIMESTAMP),
    ("delete_horizon", TIMESTAMP),
]

#: Columns whose value differs between the records of one batch: only these need a deep decode.
PER_RECORD = frozenset({"key", "value", "offset", "timestamp", "headers", "key_size",
                        "value_size"})

BATCH_FIELDS: list[tuple[str, pa.DataType]] = [
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("log_dir", pa.string()),
    ("segment_base_offset", pa.int64()),
    ("position", pa.int64()),
    ("size", pa.int32()),
    ("magic", pa.int32()),
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("count", pa.int32()),
    ("compression", pa.string()),
    ("crc", pa.int64()),
    ("crc_valid", pa.bool_()),
    ("timestampType", pa.int32()),
    ("base_timestamp", TIMESTAMP),
    ("max_timestamp", TIMESTAMP),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()),
    ("base_sequence", pa.int32()),
    ("last_sequence", pa.int32()),
    ("leader_epoch", pa.int32()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("delete_horizon", TIMESTAMP),
]

FINDINGS = pa.list_(pa.struct([
    ("code", pa.string()),
    ("severity", pa.string()),
    ("position", pa.int64()),
    ("offset", pa.int64()),
    ("message", pa.string()),
]))

SEGMENT_FIELDS: list[tuple[str, pa.DataType]] = [
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("log_dir", pa.string()),
    ("partition_dir", pa.string()),
    ("path", pa.string()),
    ("base_offset", pa.int64()),
    ("next_offset", pa.int64()),
    ("size", pa.int64()),
    ("valid_bytes", pa.int64()),
    ("is_active", pa.bool_()),
    ("mtime", TIMESTAMP),
    ("batch_count", pa.int64()),
    ("record_count", pa.int64()),
    ("first_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("first_timestamp", TIMESTAMP),
    ("max_timestamp", TIMESTAMP),
    ("max_timestamp_source", pa.string()),
    ("largest_timestamp", TIMESTAMP),
    ("codecs", pa.list_(pa.string())),
    ("magics", pa.list_(pa.int32())),
    ("producer_id_count", pa.int32()),
    ("transactional_batches", pa.int64()),
    ("control_batches", pa.int64()),
    ("crc_errors", pa.int64()),
    ("findings", FINDINGS),
    ("high_watermark", pa.int64()),
    ("log_start_offset", pa.int64()),
    ("recovery_point", pa.int64()),
    ("cleaner_offset", pa.int64()),
    ("summary_json", pa.string()),
]

#: Asked for by name at every level: ``local``, or ``remote`` for a tiered partition's segment
#: read from its remote store (``Selection.remote_store``).
TIER_FIELDS: list[tuple[str, pa.DataType]] = [("tier", pa.string())]

FIELDS = {Level.RECORDS: RECORD_FIELDS + RECORD_EXTRA_FIELDS + TIER_FIELDS,
          Level.BATCHES: BATCH_FIELDS + TIER_FIELDS, Level.SEGMENTS: SEGMENT_FIELDS + TIER_FIELDS}
_DEFAULT = {Level.RECORDS: RECORD_FIELDS, Level.BATCHES: BATCH_FIELDS,
            Level.SEGMENTS: SEGMENT_FIELDS}


def default_columns(level: Level, include_headers: bool = False) -> tuple[str, ...]:
    """The columns a level has when nobody chooses (headers only when asked for, as in
    Spark's Kafka source)."""
    return tuple(name for name, _ in _DEFAULT[level] if name != "headers" or include_headers)


def canonical(names: Sequence[str], level: Level) -> tuple[str, ...]:
    """The canonical column names for ``names`` (matched case-insensitively, as Spark's
    analyzer does by default); an unknown name is an error naming the level's columns."""
    known = {name.lower(): name for name, _ in FIELDS[level]}
    out = []
    for given in names:
        name = known.get(given.lower())
        if name is None:
            raise ColumnError(f"level={level.value} has no column {given!r}; its columns are "
                              f"{', '.join(n for n, _ in FIELDS[level])}")
        out.append(name)
    return tuple(out)


#: The text columns every row of one partition shares (its place in the tree).
PLACE_COLUMNS = ("topic", "log_dir", "partition_dir")
#: How ``to_arrow(dictionary=True)`` types them: one dictionary entry per Arrow batch.
PLACE_DICTIONARY = pa.dictionary(pa.int32(), pa.string())


def schema(level: Level, columns: Sequence[str], *, dictionary: bool = False) -> pa.Schema:
    """The Arrow schema of ``columns`` (canonical names) at ``level``; all nullable.
    ``dictionary``: the :data:`PLACE_COLUMNS` as :data:`PLACE_DICTIONARY`."""
    types = dict(FIELDS[level])
    if dictionary:
        types.update((name, PLACE_DICTIONARY) for name in PLACE_COLUMNS if name in types)
    return pa.schema([pa.field(name, types[name]) for name in columns])


def batch_table(batch: pa.RecordBatch) -> BatchTable:
    """A :class:`~segtools.decode.table.BatchTable` from ``level=batches`` rows (the Spark
    source's and ``to_arrow()``'s columns), so every face folds the batch table the library
    folds. Generated from the table's one column declaration (``decode.table.COLUMNS``): a
    column of the same name is taken as it is, and the attributes, which the rows show as
    fields, are put back together."""
    import pyarrow.compute as pc

    n = batch.num_rows

    def col(name: str, dtype: np.dtype, fill: object = -1) -> np.ndarray:
        return np.asarray(batch.column(name).fill_null(fill).to_numpy(zero_copy_only=False),
                          dtype)

    def ms(name: str) -> np.ndarray:
        micros = pc.cast(batch.column(name), pa.int64())
        return np.asarray(pc.fill_null(pc.divide(micros, 1000), -1).to_numpy(), np.int64)

    codes = {label: i for i, label in enumerate(CODEC_LABELS)}
    codec = np.array([codes.get(c, 0) for c in batch.column("compression").to_pylist()],
                     np.int16)
    attributes = (codec
                  | np.where(col("timestampType", np.int64, 0) == 1,
                             v2.TIMESTAMP_TYPE_MASK, 0)
                  | np.where(col("is_transactional", bool, False), v2.TRANSACTIONAL_FLAG, 0)
                  | np.where(col("is_control", bool, False), v2.CONTROL_FLAG, 0)
                  | np.where(np.asarray(batch.column("delete_horizon").is_valid()),
                             v2.DELETE_HORIZON_FLAG, 0))
    derived = {"attributes": attributes, "base_timestamp": ms("base_timestamp"),
               "max_timestamp": ms("max_timestamp"), "crc": np.zeros(n),
               "crc_valid": np.full(n, -1)}
    return BatchTable(**{name: (np.asarray(derived[name], dtype) if name in derived
                                else col(name, dtype))
                         for name, dtype in TABLE_COLUMNS.items()})
