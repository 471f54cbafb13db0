"""Per-topic typed views on DuckDB: a topic's decoded values as the columns of its value
subject's latest version (``<topic>-value``, Schema Registry's default TopicNameStrategy),
Avro, Protobuf or JSON Schema.

What the columns are is the payload room's one mapping (:mod:`segtools.payloads.shapes`),
shared with the Spark face; here it is spelt in DuckDB's types and read with ``from_json``
(which turns the JSON rendering's strings into numbers, decimals, dates and instants itself),
then rebuilt only where a default is filled in for a field an older writer lacked.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:
    from segtools.payloads.shapes import Scalar, Shape, TopicShape

#: loaded by the first typed view: every query quotes names with this module, few type them
shapes = lazy_loader.load("segtools.payloads.shapes", suppress_warning=True)

#: DuckDB's name of each scalar kind of :mod:`segtools.payloads.shapes`
TYPES = {"boolean": "BOOLEAN", "int": "INTEGER", "long": "BIGINT", "float": "FLOAT",
         "double": "DOUBLE", "string": "VARCHAR", "date": "DATE", "timestamp": "TIMESTAMPTZ",
         "local_timestamp": "TIMESTAMP", "json": "VARCHAR"}
#: the column that holds a row's parsed value inside a typed view's query
PARSED = "_segtools_typed"


def type_text(shape: Shape) -> str:
    """A shape as a DuckDB type name."""
    if isinstance(shape, shapes.Scalar):
        return (f"DECIMAL({shape.precision},{shape.scale})" if shape.kind == "decimal"
                else TYPES[shape.kind])
    if isinstance(shape, shapes.ListOf):
        return f"{type_text(shape.item)}[]"
    if isinstance(shape, shapes.MapOf):
        return f"MAP(VARCHAR, {type_text(shape.value)})"
    fields = ", ".join(f"{quoted(f.name)} {type_text(f.shape)}" for f in shape.fields)
    return f"STRUCT({fields})"


def structure(shape: Shape):
    """The ``from_json`` structure of a shape: a type name, an object of fields, or a
    one-element list for a list."""
    if isinstance(shape, shapes.Struct):
        return {f.name: structure(f.shape) for f in shape.fields}
    if isinstance(shape, shapes.ListOf):
        return [structure(shape.item)]
    return type_text(shape)


class DuckDialect:
    """DuckDB's spelling of the expressions :func:`segtools.payloads.shapes.resolved`
    builds."""

    def member(self, expr: str, name: str) -> str:
        return f"{expr}.{quoted(name)}"

    def struct(self, parts: list[tuple[str, str]]) -> str:
        return "struct_pack(" + ", ".join(f"{quoted(n)} := {e}" for n, e in parts) + ")"

    def each(self, expr: str, var: str, body: str) -> str:
        return f"list_transform({expr}, lambda {var}: {body})"

    def entry_value(self, entry: str) -> str:
        return f"{entry}.value"

    def each_value(self, expr: str, entry: str, body: str) -> str:
        return (f"map_from_entries(list_transform(map_entries({expr}), lambda {entry}: "
                f"struct_pack(key := {entry}.key, value := {body})))")

    def converts(self, scalar: Scalar) -> bool:
        return False

    def convert(self, expr: str, scalar: Scalar) -> str:
        return expr

    def literal(self, value: object, shape: Shape) -> str:
        if isinstance(shape, shapes.ListOf):
            return f"CAST([] AS {type_text(shape)})"
        if isinstance(shape, shapes.MapOf):
            return f"CAST(MAP {{}} AS {type_text(shape)})"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int | float):
            return f"CAST({value!r} AS {type_text(shape)})"
        return "'" + str(value).replace("'", "''") + "'"


DIALECT = DuckDialect()


def parsed(topic: TopicShape) -> str:
    """The select-list expression of a row's parsed value (null for a row of another
    Protobuf message than the view's)."""
    text = json.dumps(structure(topic.columns)).replace("'", "''")
    parse = f"from_json(value_decoded, '{text}')"
    if topic.message is None:
        return parse
    message = topic.message.replace("'", "''")
    return f"CASE WHEN value_schema_message = '{message}' THEN {parse} END"


def typed_columns(topic: TopicShape) -> str:
    """The select-list expression of the typed columns, over :data:`PARSED`."""
    return f"unnest({shapes.resolved(PARSED, topic.columns, DIALECT)})"


def quoted(name: str) -> str:
    """An SQL identifier for any topic name (``orders.v2-eu`` -> ``"orders.v2-eu"``)."""
    return '"' + name.replace('"', '""') + '"'
