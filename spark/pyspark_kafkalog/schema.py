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

from dataclasses import dataclass

import lazy_loader
import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import DataType, StringType, StructField, StructType

from pyspark_kafkalog.options import Level, OptionError
from segtools.fetch import columns as cols
from segtools.fetch.columns import PER_RECORD, TIMESTAMP_TYPE_IDS
from segtools.fetch.stream import PAYLOADS

__all__ = ["FIELDS", "PER_RECORD", "TIMESTAMP_TYPE_IDS", "default_schema", "requested_columns",
           "text_payloads"]


def _spark(fields) -> list[tuple[str, DataType]]:
    return [(name, from_arrow_type(dtype)) for name, dtype in fields]


#: Spark's view of the library's row shapes (:mod:`segtools.fetch.columns`).
FIELDS = {level: _spark(fields) for level, fields in cols.FIELDS.items()}


#: The decode option's columns load only for a read with ``decode``: the planner that runs
#: ``schema()`` at ``load()`` and every executor worker import this module (docs/spark.md,
#: "The first query").
payload_columns = lazy_loader.load("segtools.payloads.columns", suppress_warning=True)


def decoded_fields() -> list[StructField]:
    """The decode option's columns (:mod:`segtools.payloads.columns`), as Spark types."""
    return [StructField(f.name, from_arrow_type(f.type)) for f in payload_columns.FIELDS]


def default_schema(level: Level, include_headers: bool, tier: bool = False,
                   strings: bool = False, decode: bool = False) -> StructType:
    """The schema ``load()`` reports when the user gives none; with ``remoteStore``, also the
    ``tier`` each row was read from; with ``strings``, key and value as text; with
    ``decode``, the decoded payloads' columns."""
    types = dict(FIELDS[level])
    if strings and level is Level.RECORDS:
        types.update((name, StringType()) for name in PAYLOADS)
    names = cols.default_columns(level, include_headers) + (("tier",) if tier else ())
    extra = decoded_fields() if decode and level is Level.RECORDS else []
    return StructType([StructField(name, types[name]) for name in names] + extra)


@dataclass(frozen=True)
class DecodePlan:
    """What a read with ``decode`` builds for Spark's schema: the record columns read from the
    files (the user's, then the ``key``/``value``/``topic`` the decoding needs and the user did
    not ask for), the decode columns asked for, and per output column where it comes from.

    Spark gives Python sources no column pruning, so the schema the user loads with is the
    only way to say which columns a query needs: a schema naming only ``value_decoded`` reads
    the values and decodes no key, and builds none of the other decode columns. Plain values
    only: the plan travels to the executors with the reader."""

    read: StructType
    decoded: tuple[str, ...]  # canonical decode column names, in the output's order
    layout: tuple[int | str, ...]  # per output column: a read column's index, or a decode name
    names: tuple[str, ...]  # the output's column names, as the user wrote them

    @classmethod
    def of(cls, schema: StructType, level: Level) -> DecodePlan:
        types = {f.name: f.dataType for f in decoded_fields()}
        read: list[StructField] = []
        layout: list[int | str] = []
        for f in schema.fields:
            name = f.name.lower()
            if name in types:
                if f.dataType != types[name]:
                    raise OptionError(f"kafkalog: column {f.name} is "
                                      f"{types[name].simpleString()}; the schema may declare it "
                                      f"so, not {f.dataType.simpleString()}")
                layout.append(name)
            else:
                layout.append(len(read))
                read.append(f)
        decoded = tuple(slot for slot in layout if isinstance(slot, str))
        if decoded and level is not Level.RECORDS:
            raise OptionError(f"kafkalog: decode columns ({', '.join(decoded)}) are columns of "
                              f"level=records, not level={level.value}")
        have = {f.name.lower() for f in read}
        inputs = [side for side in PAYLOADS if any(d.startswith(f"{side}_") for d in decoded)]
        inputs += ["topic"] if decoded else []
        types_read = dict(FIELDS[Level.RECORDS])
        read += [StructField(name, types_read[name]) for name in inputs if name not in have]
        return cls(StructType(read), decoded, tuple(layout),
                   tuple(f.name for f in schema.fields))

    def assemble(self, batch: pa.RecordBatch, decoded: list[pa.Array]) -> pa.RecordBatch:
        """Spark's batch: the read columns and the decode columns in the schema's order (the
        inputs the user did not ask for left out)."""
        by_name = dict(zip(self.decoded, decoded, strict=True))
        columns = [by_name[slot] if isinstance(slot, str) else batch.column(slot)
                   for slot in self.layout]
        return pa.RecordBatch.from_arrays(columns, names=list(self.names))


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
