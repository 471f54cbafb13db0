"""A topic's decoded values as typed columns on Spark: the payload room's one mapping
(:mod:`segtools.payloads.shapes`: Avro, Protobuf and JSON Schema to column types, shared with
``segtools query``'s DuckDB views) spelt in Spark's types, applied with ``from_json`` to the
``value_decoded`` column the ``decode`` option adds.

Spark's JSON reader turns the renderings' strings into dates, instants, decimals and doubles
(``"NaN"`` included) itself, but not a 64-bit integer written as a JSON string (the proto3
JSON mapping's int64): those leaves are read as text and cast (``try_cast``: a value that is
not a number is null, as DuckDB's ``from_json`` makes it). Spark has no usable TIME type
(4.x refuses it unless enabled), so a time of day is text on both engines.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from segtools.errors import SegtoolsError
from segtools.payloads.schemas import Schemas
from segtools.payloads.shapes import (
    ListOf,
    MapOf,
    Scalar,
    Shape,
    TopicShape,
    resolved,
    topic_shape,
)
from segtools.payloads.sources import gather

#: Spark's type of each scalar kind of :mod:`segtools.payloads.shapes`
TYPES: dict[str, DataType] = {
    "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "string": StringType(), "date": DateType(),
    "timestamp": TimestampType(), "local_timestamp": TimestampNTZType(), "json": StringType()}
#: the column holding a row's parsed value while the typed columns are built
PARSED = "_segtools_typed"


def spark_type(shape: Shape, *, reading: bool = False) -> DataType:
    """A shape as a Spark type; ``reading``: as ``from_json`` reads it (the leaves
    :class:`SparkDialect` converts read as text)."""
    if isinstance(shape, Scalar):
        if reading and SparkDialect.converts(shape):
            return StringType()
        return (DecimalType(shape.precision, shape.scale) if shape.kind == "decimal"
                else TYPES[shape.kind])
    if isinstance(shape, ListOf):
        return ArrayType(spark_type(shape.item, reading=reading), True)
    if isinstance(shape, MapOf):
        return MapType(StringType(), spark_type(shape.value, reading=reading), True)
    return StructType([StructField(f.name, spark_type(f.shape, reading=reading), True)
                       for f in shape.fields])


def _text(value: str) -> str:
    """A Spark SQL string literal (Spark reads backslash escapes inside quotes)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SparkDialect:
    """Spark SQL's spelling of the expressions :func:`segtools.payloads.shapes.resolved`
    builds."""

    def member(self, expr: str, name: str) -> str:
        return f"{expr}.`{name.replace('`', '``')}`"

    def struct(self, parts: list[tuple[str, str]]) -> str:
        return "named_struct(" + ", ".join(f"{_text(n)}, {e}" for n, e in parts) + ")"

    def each(self, expr: str, var: str, body: str) -> str:
        return f"transform({expr}, {var} -> {body})"

    def entry_value(self, entry: str) -> str:
        return entry

    def each_value(self, expr: str, entry: str, body: str) -> str:
        return f"transform_values({expr}, ({entry}_key, {entry}) -> {body})"

    @staticmethod
    def converts(scalar: Scalar) -> bool:
        return scalar.kind == "long"

    def convert(self, expr: str, scalar: Scalar) -> str:
        return f"try_cast({expr} AS BIGINT)"

    def literal(self, value: object, shape: Shape) -> str:
        kind = spark_type(shape).simpleString()
        if isinstance(shape, ListOf):
            return f"CAST(array() AS {kind})"
        if isinstance(shape, MapOf):
            return f"CAST(map() AS {kind})"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int | float):
            return f"CAST({value!r} AS {kind})"
        return _text(str(value))


DIALECT = SparkDialect()


def parsed(topic: TopicShape, side: str = "value") -> Column:
    """``<side>_decoded`` read into the shape (null for a row of another Protobuf message
    than the topic's typed one)."""
    parse = F.from_json(F.col(f"{side}_decoded"), spark_type(topic.columns, reading=True))
    if topic.message is None:
        return parse
    return F.when(F.col(f"{side}_schema_message") == topic.message, parse)


def typed_struct(topic: TopicShape) -> Column:
    """The typed struct, from the :data:`PARSED` column."""
    return F.expr(resolved(PARSED, topic.columns, DIALECT))


def history_of(schemas: Schemas | Iterable[str]) -> Schemas:
    """A ``Schemas`` history, or the one read from where the ``_schemas`` topic is."""
    if isinstance(schemas, Schemas):
        return schemas
    chain = gather([], [], schemas=list(schemas))
    out = Schemas()
    for h in chain.histories():
        out.extend(h)
    return out


def latest_shape(schemas: Schemas | Iterable[str], topic: str, side: str = "value"
                 ) -> TopicShape:
    """The typed columns of ``<topic>-<side>``'s latest version, or an error saying why
    there are none."""
    history = history_of(schemas)
    subject = f"{topic}-{side}"
    if history.latest(subject) is None:
        raise SegtoolsError(f"no version of subject {subject!r} in the schemas read")
    found = topic_shape(history, topic, side)
    if found is None:
        raise SegtoolsError(f"{subject}'s latest version has no typed columns (not a record "
                            "or an object of properties, or it does not compile)")
    return found


def with_typed_values(df: DataFrame, schemas: Schemas | Iterable[str], topic: str, *,
                      side: str = "value") -> DataFrame:
    """``df`` (read with ``decode``) with ``<side>_typed``: the decoded JSON as a struct of
    the subject's latest version (Avro, Protobuf or JSON Schema); rows written with older
    versions get what the format's resolution gives a field they lack (null, or the
    format's default: docs/payloads.md "Typed columns")."""
    shape = latest_shape(schemas, topic, side)
    return (df.withColumn(PARSED, parsed(shape, side))
            .withColumn(f"{side}_typed", typed_struct(shape)).drop(PARSED))
