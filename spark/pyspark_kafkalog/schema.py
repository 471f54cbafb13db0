"""The three row shapes (records, batches, segments) and the user's choice of columns.

Record columns mirror Spark's own Kafka source (``KafkaRecordToRowConverter``: ``key``,
``value``, ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``)
so code written against ``format("kafka")`` runs unchanged, followed by where each row came
from on disk and its batch's header fields.

Spark gives Python sources no column pruning: ``reader(schema)`` always receives the schema the
DataFrame was loaded with. A user who loads with ``.schema("offset long, key binary")`` therefore
chooses the columns, and :func:`requested_columns` turns that choice into the list the executors
build, so a value that nobody asked for is never copied.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pyspark_kafkalog.options import Level, OptionError

HEADER_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                    StructField("value", BinaryType())]))

#: ``timestampType`` as Spark's Kafka source numbers it (``TimestampType.id``), plus -1 for
#: magic-0 data, which has no timestamp at all (``TimestampType.NO_TIMESTAMP_TYPE``).
TIMESTAMP_TYPE_IDS = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}

_BATCH_FIELDS: list[tuple[str, DataType]] = [
    ("log_dir", StringType()),
    ("segment_base_offset", LongType()),
    ("position", LongType()),
    ("producer_id", LongType()),
    ("producer_epoch", IntegerType()),
    ("leader_epoch", IntegerType()),
    ("is_transactional", BooleanType()),
    ("is_control", BooleanType()),
    ("compression", StringType()),
    ("crc_valid", BooleanType()),
    ("magic", IntegerType()),
]

RECORD_FIELDS: list[tuple[str, DataType]] = [
    ("key", BinaryType()),
    ("value", BinaryType()),
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("offset", LongType()),
    ("timestamp", TimestampType()),
    ("timestampType", IntegerType()),
    ("headers", HEADER_TYPE),
    *_BATCH_FIELDS,
]

#: Record columns a user schema may ask for that the default schema leaves out (sizes without
#: copying the bytes, and the batch fields the compaction analysis needs).
RECORD_EXTRA_FIELDS: list[tuple[str, DataType]] = [
    ("key_size", IntegerType()),
    ("value_size", IntegerType()),
    ("batch_base_offset", LongType()),
    ("batch_last_offset", LongType()),
    ("batch_size", IntegerType()),
    ("batch_count", IntegerType()),
    ("batch_max_timestamp", TimestampType()),
    ("delete_horizon", TimestampType()),
]

#: Columns whose value differs between the records of one batch: only these need a deep decode.
PER_RECORD = frozenset({"key", "value", "offset", "timestamp", "headers", "key_size",
                        "value_size"})

BATCH_FIELDS: list[tuple[str, DataType]] = [
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("log_dir", StringType()),
    ("segment_base_offset", LongType()),
    ("position", LongType()),
    ("size", IntegerType()),
    ("magic", IntegerType()),
    ("base_offset", LongType()),
    ("last_offset", LongType()),
    ("count", IntegerType()),
    ("compression", StringType()),
    ("crc", LongType()),
    ("crc_valid", BooleanType()),
    ("timestampType", IntegerType()),
    ("base_timestamp", TimestampType()),
    ("max_timestamp", TimestampType()),
    ("producer_id", LongType()),
    ("producer_epoch", IntegerType()),
    ("base_sequence", IntegerType()),
    ("last_sequence", IntegerType()),
    ("leader_epoch", IntegerType()),
    ("is_transactional", BooleanType()),
    ("is_control", BooleanType()),
    ("delete_horizon", TimestampType()),
]

FINDING_TYPE = ArrayType(StructType([
    StructField("code", StringType()),
    StructField("severity", StringType()),
    StructField("position", LongType()),
    StructField("offset", LongType()),
    StructField("message", StringType()),
]))

SEGMENT_FIELDS: list[tuple[str, DataType]] = [
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("log_dir", StringType()),
    ("partition_dir", StringType()),
    ("path", StringType()),
    ("base_offset", LongType()),
    ("next_offset", LongType()),
    ("size", LongType()),
    ("valid_bytes", LongType()),
    ("is_active", BooleanType()),
    ("mtime", TimestampType()),
    ("batch_count", LongType()),
    ("record_count", LongType()),
    ("first_offset", LongType()),
    ("last_offset", LongType()),
    ("first_timestamp", TimestampType()),
    ("max_timestamp", TimestampType()),
    ("max_timestamp_source", StringType()),
    ("largest_timestamp", TimestampType()),
    ("codecs", ArrayType(StringType())),
    ("magics", ArrayType(IntegerType())),
    ("producer_id_count", IntegerType()),
    ("transactional_batches", LongType()),
    ("control_batches", LongType()),
    ("crc_errors", LongType()),
    ("findings", FINDING_TYPE),
    ("high_watermark", LongType()),
    ("log_start_offset", LongType()),
    ("recovery_point", LongType()),
    ("cleaner_offset", LongType()),
    ("summary_json", StringType()),
]

FIELDS = {Level.RECORDS: RECORD_FIELDS + RECORD_EXTRA_FIELDS, Level.BATCHES: BATCH_FIELDS,
          Level.SEGMENTS: SEGMENT_FIELDS}
_DEFAULT = {Level.RECORDS: RECORD_FIELDS, Level.BATCHES: BATCH_FIELDS,
            Level.SEGMENTS: SEGMENT_FIELDS}


def default_schema(level: Level, include_headers: bool) -> StructType:
    """The schema ``load()`` reports when the user gives none."""
    return StructType([StructField(name, dtype) for name, dtype in _DEFAULT[level]
                       if name != "headers" or include_headers])


def requested_columns(schema: StructType, level: Level) -> tuple[str, ...]:
    """The canonical column names the user's schema asks for, in its order.

    Names match case-insensitively, as Spark's analyzer does by default; an unknown name is an
    error at the first action, naming the columns this level has.
    """
    known = {name.lower(): name for name, _ in FIELDS[level]}
    out = []
    for f in schema.fields:
        name = known.get(f.name.lower())
        if name is None:
            raise OptionError(f"kafkalog: level={level.value} has no column {f.name!r}; its "
                              f"columns are {', '.join(n for n, _ in FIELDS[level])}")
        out.append(name)
    return tuple(out)
