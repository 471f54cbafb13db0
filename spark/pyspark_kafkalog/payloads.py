"""A topic's decoded values as a typed struct column: the subject's latest Avro schema mapped to
Spark types as spark-avro's ``SchemaConverters.toSqlType`` maps them, applied with
``from_json`` to the ``value_decoded`` column the ``decode`` option adds.

The mapping (spark-avro's): boolean, int, long, float, double, string as Spark's own types;
bytes and fixed as binary (the decoded JSON holds them as base64, which Spark's JSON reader
decodes); enum as string; record as struct; array as array; map as map with string keys;
``["null", T]`` as a nullable T; a union of several non-null branches as string (the decoded
JSON holds the branch's value alone, so no ``member0..n`` struct can be filled); logical
types: date as date, timestamp-millis/micros as timestamp, local-timestamp-millis/micros as
timestamp_ntz, decimal as decimal(precision, scale), uuid as string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
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
from segtools.payloads.schemas import AVRO, RegisteredSchema, Schemas, avro_named
from segtools.payloads.sources import gather

PRIMITIVES: dict[str, DataType] = {
    "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "bytes": BinaryType(), "string": StringType(),
}
LOGICAL: dict[str, DataType] = {
    "date": DateType(), "timestamp-millis": TimestampType(), "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(), "local-timestamp-micros": TimestampNTZType(),
    "uuid": StringType(),
}
#: Deeper than this an Avro schema is refused (a recursive record has no Spark type either).
MAX_DEPTH = 64


def _full_name(schema: dict, namespace: str | None) -> str:
    name = schema["name"]
    if "." in name or not (schema.get("namespace") or namespace):
        return name
    return f"{schema.get('namespace') or namespace}.{name}"


def spark_type(schema, named: dict, namespace: str | None = None, depth: int = 0
               ) -> tuple[DataType, bool]:
    """The Spark type of an Avro schema (parsed JSON) and whether it is nullable; ``named``
    holds the named types met so far (and those of the references)."""
    if depth > MAX_DEPTH:
        raise SegtoolsError("Avro schema nests too deep (or is recursive) for a Spark type")
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema], False
        if schema == "null":
            return StringType(), True
        return spark_type(avro_named(schema, named, namespace), named, namespace, depth + 1)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return spark_type(branches[0], named, namespace, depth + 1)[0], True
        return StringType(), True
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal":
        return DecimalType(int(schema.get("precision", 38)), int(schema.get("scale", 0))), False
    if logical in LOGICAL:
        return LOGICAL[logical], False
    if kind in ("record", "error", "enum", "fixed"):
        full = _full_name(schema, namespace)
        named[full] = schema
        if kind == "enum":
            return StringType(), False
        if kind == "fixed":
            return BinaryType(), False
        inner = full.rpartition(".")[0] or None
        fields = []
        for f in schema.get("fields", []):
            dtype, nullable = spark_type(f["type"], named, inner, depth + 1)
            fields.append(StructField(f["name"], dtype, nullable))
        return StructType(fields), False
    if kind == "array":
        dtype, nullable = spark_type(schema["items"], named, namespace, depth + 1)
        return ArrayType(dtype, nullable), False
    if kind == "map":
        dtype, nullable = spark_type(schema["values"], named, namespace, depth + 1)
        return MapType(StringType(), dtype, nullable), False
    return spark_type(kind, named, namespace, depth + 1)


def struct_of(schema: RegisteredSchema, references: Iterable[RegisteredSchema] = ()) -> DataType:
    """The Spark type of a registered Avro schema, its references' named types resolved."""
    if schema.schema_type != AVRO:
        raise SegtoolsError(f"{schema.subject} v{schema.version} is {schema.schema_type}: "
                            "typed columns are made from Avro schemas")
    named: dict = {}
    for ref in references:
        spark_type(json.loads(ref.schema), named)
    return spark_type(json.loads(schema.schema), named)[0]


def latest_schema(schemas: Schemas | Iterable[str], subject: str
                  ) -> tuple[RegisteredSchema, list[RegisteredSchema]]:
    """The subject's latest version and the versions it references (transitively)."""
    history = schemas if isinstance(schemas, Schemas) else _history(schemas)
    latest = history.latest(subject)
    if latest is None:
        raise SegtoolsError(f"no version of subject {subject!r} in the schemas read")
    refs = history.referenced(latest)
    return latest, refs


def _history(paths: Iterable[str]) -> Schemas:
    chain = gather([], [], schemas=list(paths))
    out = Schemas()
    for h in chain.histories():
        out.extend(h)
    return out


def typed_column(schemas: Schemas | Iterable[str], topic: str, *, side: str = "value"
                 ) -> Column:
    """``from_json`` of ``<side>_decoded`` with the type of ``<topic>-<side>``'s latest
    version (``schemas``: a ``Schemas`` history, or where the ``_schemas`` topic is)."""
    latest, refs = latest_schema(schemas, f"{topic}-{side}")
    return F.from_json(F.col(f"{side}_decoded"), struct_of(latest, refs))


def with_typed_values(df: DataFrame, schemas: Schemas | Iterable[str], topic: str, *,
                      side: str = "value") -> DataFrame:
    """``df`` (read with ``decode``) with ``<side>_typed``: the decoded JSON as a struct of
    the subject's latest schema; rows written with older versions fill what the latest
    declares (missing fields are null)."""
    return df.withColumn(f"{side}_typed", typed_column(schemas, topic, side=side))
