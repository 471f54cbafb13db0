"""Per-topic typed views: a topic's decoded values as the columns of its subject's latest
Avro schema (``<topic>-value``, Schema Registry's default TopicNameStrategy).

The decoded JSON (docs/payloads.md, "JSON renderings") is read with DuckDB's ``from_json``
into the DuckDB type of each field. The mapping follows spark-avro's ``SchemaConverters``, as
the Spark source's ``with_typed_values`` does, so the typed columns mean the same on both
engines: boolean, int, long, float, double, string as themselves; enum and uuid as text;
bytes and fixed as their base64 text (the rendering's); record as a struct, array as a list,
map as a map with text keys; ``["null", T]`` as T; a union of several non-null branches as
text; date, time, timestamps (UTC) and local timestamps, decimal(p, s) as DuckDB's own.

Older versions are read by the latest one the way Avro's resolution reads a field the writer
did not have: absent from the JSON, the field is null. (A field's declared default is not
filled in; docs/query.md says so.)
"""

from __future__ import annotations

import json

from segtools.errors import SegtoolsError
from segtools.payloads.schemas import AVRO, Schemas, avro_named

PRIMITIVES = {"boolean": "BOOLEAN", "int": "INTEGER", "long": "BIGINT", "float": "FLOAT",
              "double": "DOUBLE", "bytes": "VARCHAR", "string": "VARCHAR", "null": "VARCHAR"}
LOGICAL = {"date": "DATE", "time-millis": "TIME", "time-micros": "TIME",
           "timestamp-millis": "TIMESTAMPTZ", "timestamp-micros": "TIMESTAMPTZ",
           "local-timestamp-millis": "TIMESTAMP", "local-timestamp-micros": "TIMESTAMP",
           "uuid": "VARCHAR"}
#: DuckDB's widest decimal; a wider one stays its exact text
MAX_DECIMAL_PRECISION = 38
MAX_DEPTH = 64


def structure(schema, named: dict, namespace: str | None = None, depth: int = 0):
    """The ``from_json`` structure of an Avro schema (parsed JSON): a type name, an object
    of fields, or a one-element list for an array."""
    if depth > MAX_DEPTH:
        raise SegtoolsError("Avro schema nests too deep (or is recursive) for a typed view")
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema]
        return structure(avro_named(schema, named, namespace), named, namespace, depth + 1)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return (structure(branches[0], named, namespace, depth + 1) if len(branches) == 1
                else "VARCHAR")
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical == "decimal":
        precision, scale = int(schema.get("precision", 38)), int(schema.get("scale", 0))
        return (f"DECIMAL({precision},{scale})" if precision <= MAX_DECIMAL_PRECISION
                else "VARCHAR")
    if logical in LOGICAL:
        return LOGICAL[logical]
    if kind in ("record", "error", "enum", "fixed"):
        name = schema["name"]
        space = schema.get("namespace") or namespace
        full = name if "." in name or not space else f"{space}.{name}"
        named[full] = schema
        if kind != "record" and kind != "error":
            return "VARCHAR"
        inner = full.rpartition(".")[0] or None
        return {f["name"]: structure(f["type"], named, inner, depth + 1)
                for f in schema.get("fields", [])}
    if kind == "array":
        return [structure(schema["items"], named, namespace, depth + 1)]
    if kind == "map":
        values = structure(schema["values"], named, namespace, depth + 1)
        return f"MAP(VARCHAR, {_type_text(values)})"
    return structure(kind, named, namespace, depth + 1)


def _type_text(shape) -> str:
    """A structure as a DuckDB type name (for a map's values)."""
    if isinstance(shape, str):
        return shape
    if isinstance(shape, list):
        return f"{_type_text(shape[0])}[]"
    fields = ", ".join(f'"{k.replace(chr(34), chr(34) * 2)}" {_type_text(v)}'
                       for k, v in shape.items())
    return f"STRUCT({fields})"


def value_structure(history: Schemas, topic: str) -> dict | None:
    """The fields of ``<topic>-value``'s latest version as a ``from_json`` structure, or None
    when the topic has no Avro record schema to type it by."""
    latest = history.latest(f"{topic}-value")
    if latest is None or latest.schema_type != AVRO:
        return None
    named: dict = {}
    for ref in history.referenced(latest):
        structure(json.loads(ref.schema), named)
    shape = structure(json.loads(latest.schema), named)
    return shape if isinstance(shape, dict) and shape else None


def quoted(name: str) -> str:
    """An SQL identifier for any topic name (``orders.v2-eu`` -> ``"orders.v2-eu"``)."""
    return '"' + name.replace('"', '""') + '"'
