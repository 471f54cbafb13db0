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

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import DataType, StringType, StructField, StructType

from pyspark_kafkalog.options import Level, OptionError
from segtools.fetch import columns as cols
from segtools.fetch.columns import PER_RECORD, TIMESTAMP_TYPE_IDS
from segtools.fetch.stream import PAYLOADS
from segtools.payloads import columns as payload_columns

__all__ = ["FIELDS", "PER_RECORD", "TIMESTAMP_TYPE_IDS", "default_schema", "requested_columns",
           "text_payloads"]


def _spark(fields) -> list[tuple[str, DataType]]:
    return [(name, from_arrow_type(dtype)) for name, dtype in fields]


#: Spark's view of the library's row shapes (:mod:`segtools.fetch.columns`).
FIELDS = {level: _spark(fields) for level, fields in cols.FIELDS.items()}


#: The decode option's columns (:mod:`segtools.payloads.columns`), as Spark types.
DECODED_FIELDS = [StructField(f.name, from_arrow_type(f.type)) for f in payload_columns.FIELDS]


def default_schema(level: Level, include_headers: bool, tier: bool = False,
                   strings: bool = False, decode: bool = False) -> StructType:
    """The schema ``load()`` reports when the user gives none; with ``remoteStore``, also the
    ``tier`` each row was read from; with ``strings``, key and value as text; with
    ``decode``, the decoded payloads' columns."""
    types = dict(FIELDS[level])
    if strings and level is Level.RECORDS:
        types.update((name, StringType()) for name in PAYLOADS)
    names = cols.default_columns(level, include_headers) + (("tier",) if tier else ())
    extra = DECODED_FIELDS if decode and level is Level.RECORDS else []
    return StructType([StructField(name, types[name]) for name in names] + extra)


def without_decoded(schema: StructType) -> StructType:
    """The schema the file reader fills: the decode columns are added after it."""
    decoded = {f.name for f in DECODED_FIELDS}
    return StructType([f for f in schema.fields if f.name not in decoded])


def requested_columns(schema: StructType, level: Level) -> tuple[str, ...]:
    """The canonical column names the user's schema asks for, in its order.

    Names match case-insensitively, as Spark's analyzer does by default; an unknown name, or a
    type the column cannot be given (``topic int``), is an error at the first action, on the
    driver, naming the column and what it is, rather than a cast failing inside a task.
    """
    try:
        names = cols.canonical([f.name for f in schema.fields], level)
    except cols.ColumnError as e:
        raise OptionError(f"kafkalog: {e}") from None
    have = dict(cols.FIELDS[level])
    for field, name in zip(schema.fields, names, strict=True):
        wanted = to_arrow_type(field.dataType, timezone="UTC")
        if name in PAYLOADS and level is Level.RECORDS and pa.types.is_string(wanted):
            continue  # a payload as UTF-8 text (see text_payloads)
        if not _widens(have[name], wanted):
            wider = " (or a wider integer)" if pa.types.is_integer(have[name]) else ""
            raise OptionError(
                f"kafkalog: column {field.name} is {FIELD_TYPES[level][name].simpleString()}; "
                f"the schema may declare it so{wider}, not {field.dataType.simpleString()}")
    return names


def text_payloads(schema: pa.Schema) -> tuple[pa.Schema, bool]:
    """The Arrow schema the library builds for Spark's ``schema`` (payloads declared as text
    are read as bytes) and whether any payload is to be turned into text afterwards."""
    text = False
    for name in PAYLOADS:
        if name in schema.names and pa.types.is_string(schema.field(name).type):
            i = schema.get_field_index(name)
            schema = schema.set(i, schema.field(i).with_type(pa.binary()))
            text = True
    return schema, text


#: Spark's type of each column, by level (for messages).
FIELD_TYPES = {level: dict(fields) for level, fields in FIELDS.items()}


def _widens(have: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether the column's values can be given as ``wanted`` without loss or parsing: the
    same type, a wider signed integer, the same kind of bytes or text, a timestamp."""
    if have == wanted:
        return True
    if pa.types.is_integer(have) and pa.types.is_signed_integer(wanted):
        return wanted.bit_width >= have.bit_width
    for kind in (pa.types.is_binary, pa.types.is_string, pa.types.is_timestamp):
        if kind(have):
            return kind(wanted) or (kind is pa.types.is_binary
                                    and pa.types.is_large_binary(wanted))
    if pa.types.is_list(have) and pa.types.is_list(wanted):
        return _widens(have.value_type, wanted.value_type)
    if pa.types.is_struct(have) and pa.types.is_struct(wanted):
        return have.num_fields == wanted.num_fields and all(
            _widens(have.field(i).type, wanted.field(i).type) for i in range(have.num_fields))
    return False
