"""A schema's fields as column types both SQL engines share: the one mapping from Avro,
Protobuf and JSON Schema to typed columns (docs/payloads.md, "Typed columns").

The typed views of ``segtools query`` (DuckDB) and of the Spark face read a topic's decoded
JSON (the renderings of docs/payloads.md) into the columns of its subject's latest version.
Each engine only spells the shapes below in its own type names and SQL; what a schema *means*
as columns is decided here, once, so that a query gets the same types and values on both.

The shapes are few on purpose: every scalar is one the two engines hold alike. Text stands for
whatever the JSON rendering writes as a string and neither engine has a common type for
(bytes as base64, enum symbols, uuids, times of day, durations); ``json`` is a value of no
single type (a JSON Schema ``oneOf``, a ``google.protobuf.Struct``), kept as text: a string as
itself, anything else as its JSON text, which is what both engines' JSON readers give for a
text column.

Reading an older version's value into the latest version's columns follows the format's own
resolution where the JSON can tell: a field the writer did not have is absent from its JSON,
so it is null, or, where the format's reader would fill a default (a proto3 field without
presence, an Avro field whose type cannot be null), that default (:attr:`Field.default`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from segtools.errors import SegtoolsError
from segtools.payloads.decoder import MAX_REFERENCE_DEPTH, format_module
from segtools.payloads.errors import SchemaInvalid
from segtools.payloads.schemas import AVRO, JSON, PROTOBUF, RegisteredSchema, Schemas, avro_named

#: The scalar kinds, each held alike by DuckDB and Spark.
KINDS = ("boolean", "int", "long", "float", "double", "decimal", "string", "date",
         "timestamp", "local_timestamp", "json")
#: How deep a schema may nest before the rest is kept as JSON text (a recursive message or
#: a ``$ref`` to itself has no finite column type).
MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Scalar:
    """One value of a kind in :data:`KINDS` (``decimal`` with its precision and scale)."""

    kind: str
    precision: int = 0
    scale: int = 0


@dataclass(frozen=True, slots=True)
class Field:
    """A named column of a struct; ``default`` is what a row whose writer had no such field
    gets (a JSON value), None for null."""

    name: str
    shape: Shape
    default: object = None


@dataclass(frozen=True, slots=True)
class Struct:
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Shape


@dataclass(frozen=True, slots=True)
class MapOf:
    """A JSON object as a map: keys are text (the JSON mapping writes every map key so)."""

    value: Shape


Shape = Scalar | Struct | ListOf | MapOf

def struct_of(fields: Iterable[Field]) -> Shape:
    """A struct of these fields, or JSON text when two names differ only in case or one is
    empty: both engines' column and field names are case-insensitive, and neither takes an
    empty one."""
    fields = tuple(fields)
    names = [f.name.lower() for f in fields]
    if "" in names or len(set(names)) != len(names):
        return ANY_JSON
    return Struct(fields)


TEXT = Scalar("string")
ANY_JSON = Scalar("json")
LONG = Scalar("long")
#: uint64 and fixed64: wider than either engine's signed 64-bit integer
UNSIGNED_LONG = Scalar("decimal", 20, 0)
#: DuckDB's widest decimal (Spark's is the same); a wider one stays text
MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True, slots=True)
class TopicShape:
    """A topic's typed columns: its value subject's latest version, as a struct. For
    Protobuf, ``message`` is the message they are the fields of (the schema's first, as
    Confluent's deserializer reads a value without a message name); a row of another
    message of the same schema gets nulls, its ``value_schema_message`` saying which."""

    columns: Struct
    schema: RegisteredSchema
    message: str | None = None


# --------------------------------------------------------------------------------- Avro
#
# spark-avro's SchemaConverters, with bytes, fixed, time-* and uuid as the rendering's text.

AVRO_PRIMITIVES = {"boolean": Scalar("boolean"), "int": Scalar("int"), "long": LONG,
                   "float": Scalar("float"), "double": Scalar("double"), "bytes": TEXT,
                   "string": TEXT, "null": TEXT}
AVRO_LOGICAL = {"date": Scalar("date"), "time-millis": TEXT, "time-micros": TEXT,
                "timestamp-millis": Scalar("timestamp"),
                "timestamp-micros": Scalar("timestamp"),
                "local-timestamp-millis": Scalar("local_timestamp"),
                "local-timestamp-micros": Scalar("local_timestamp"), "uuid": TEXT}
#: Avro defaults filled in for a field the writer lacked: those whose JSON is the rendering's
#: own (a number, a string, a boolean, an empty array or map)
AVRO_DEFAULTABLE = frozenset(("boolean", "int", "long", "float", "double", "string"))


def _avro_full_name(schema: dict, namespace: str | None) -> str:
    name = schema["name"]
    space = schema.get("namespace") or namespace
    return name if "." in name or not space else f"{space}.{name}"


def _avro_named(name: str, named: dict, namespace: str | None) -> dict:
    """A named type met so far; one never defined makes the schema one without columns
    (a missing payloads extra, by contrast, stays the error it is)."""
    try:
        return avro_named(name, named, namespace)
    except SegtoolsError as e:
        raise SchemaInvalid(str(e)) from None


def avro_shape(schema, named: dict, namespace: str | None = None, depth: int = 0) -> Shape:
    """The shape of an Avro schema (parsed JSON); ``named`` collects the named types met
    (those of the references first)."""
    if depth > MAX_DEPTH:
        return ANY_JSON
    if isinstance(schema, str):
        if schema in AVRO_PRIMITIVES:
            return AVRO_PRIMITIVES[schema]
        return avro_shape(_avro_named(schema, named, namespace), named, namespace, depth + 1)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return (avro_shape(branches[0], named, namespace, depth + 1) if len(branches) == 1
                else TEXT)
    if not isinstance(schema, dict):
        raise SchemaInvalid(f"not an Avro schema: {schema!r}")
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical == "decimal":
        precision, scale = int(schema.get("precision", 38)), int(schema.get("scale", 0))
        return Scalar("decimal", precision, scale) if precision <= MAX_DECIMAL_PRECISION \
            else TEXT
    if logical in AVRO_LOGICAL:
        return AVRO_LOGICAL[logical]
    if kind in ("record", "error", "enum", "fixed"):
        full = _avro_full_name(schema, namespace)
        named[full] = schema
        if kind in ("enum", "fixed"):
            return TEXT
        inner = full.rpartition(".")[0] or None
        return struct_of(_avro_field(f, named, inner, depth + 1)
                         for f in schema.get("fields", []))
    if kind == "array":
        return ListOf(avro_shape(schema["items"], named, namespace, depth + 1))
    if kind == "map":
        return MapOf(avro_shape(schema["values"], named, namespace, depth + 1))
    return avro_shape(kind, named, namespace, depth + 1)


def _avro_field(field: dict, named: dict, namespace: str | None, depth: int) -> Field:
    """A record field; its default kept when Avro's resolution would fill it in for a
    writer without the field and the value cannot be null (a null in a nullable field is
    what the writer wrote, never a missing field)."""
    shape = avro_shape(field["type"], named, namespace, depth)
    return Field(field["name"], shape, _avro_default(field, shape))


def _avro_default(field: dict, shape: Shape) -> object:
    if "default" not in field or isinstance(field["type"], list):
        return None
    value = field["default"]
    if isinstance(shape, ListOf | MapOf):
        return value if value in ([], {}) else None
    kind = field["type"] if isinstance(field["type"], str) else field["type"].get("type")
    if isinstance(shape, Scalar) and (kind in AVRO_DEFAULTABLE or kind == "enum") \
            and "logicalType" not in (field["type"] if isinstance(field["type"], dict) else {}):
        return value
    return None


# ----------------------------------------------------------------------------- Protobuf
#
# The proto3 JSON mapping, field by field (FieldDescriptor.type numbers, descriptor.proto's).

PROTO_SCALARS = {1: Scalar("double"), 2: Scalar("float"), 3: LONG, 4: UNSIGNED_LONG,
                 5: Scalar("int"), 6: UNSIGNED_LONG, 7: LONG, 8: Scalar("boolean"), 9: TEXT,
                 12: TEXT, 13: LONG, 15: Scalar("int"), 16: LONG, 17: Scalar("int"), 18: LONG}
PROTO_ENUM, PROTO_GROUP, PROTO_MESSAGE = 14, 10, 11
#: The well-known types by their JSON forms: wrappers as their value, Timestamp as an
#: instant, Duration and FieldMask as their strings, the dynamic ones as JSON text.
PROTO_WELL_KNOWN = {
    "google.protobuf.Timestamp": Scalar("timestamp"), "google.protobuf.Duration": TEXT,
    "google.protobuf.FieldMask": TEXT, "google.protobuf.Struct": ANY_JSON,
    "google.protobuf.Value": ANY_JSON, "google.protobuf.ListValue": ANY_JSON,
    "google.protobuf.Any": ANY_JSON, "google.protobuf.Empty": ANY_JSON,
    "google.protobuf.DoubleValue": Scalar("double"),
    "google.protobuf.FloatValue": Scalar("float"), "google.protobuf.Int64Value": LONG,
    "google.protobuf.UInt64Value": UNSIGNED_LONG, "google.protobuf.Int32Value": Scalar("int"),
    "google.protobuf.UInt32Value": LONG, "google.protobuf.BoolValue": Scalar("boolean"),
    "google.protobuf.StringValue": TEXT, "google.protobuf.BytesValue": TEXT}
#: proto3's zero value of each scalar, as its JSON rendering writes it
PROTO_ZERO = {"double": 0.0, "float": 0.0, "long": 0, "int": 0, "decimal": 0,
              "boolean": False, "string": ""}


def proto_shape(message, stack: tuple[str, ...] = ()) -> Shape:
    """The struct of a message descriptor (``google.protobuf.descriptor.Descriptor``); a
    message met again inside itself is JSON text."""
    stack = (*stack, message.full_name)
    return struct_of(_proto_field(f, stack) for f in message.fields)


def _proto_field(field, stack: tuple[str, ...]) -> Field:
    """A field, with proto3's default for one without presence: a reader of a newer
    version sees the zero value (or an empty list or map) where the writer had no field."""
    repeated = field.is_repeated
    entry = field.message_type if field.type in (PROTO_MESSAGE, PROTO_GROUP) else None
    if entry is not None and entry.GetOptions().map_entry:
        return Field(field.name, MapOf(_proto_value(entry.fields_by_name["value"], stack)), {})
    shape = _proto_value(field, stack)
    if repeated:
        return Field(field.name, ListOf(shape), [])
    if field.has_presence or not isinstance(shape, Scalar):
        return Field(field.name, shape)
    if field.type == PROTO_ENUM:
        zero = field.enum_type.values_by_number.get(0)
        return Field(field.name, shape, None if zero is None else zero.name)
    return Field(field.name, shape, PROTO_ZERO.get(shape.kind))


def _proto_value(field, stack: tuple[str, ...]) -> Shape:
    if field.type == PROTO_ENUM:
        return TEXT
    if field.type in (PROTO_MESSAGE, PROTO_GROUP):
        name = field.message_type.full_name
        if name in PROTO_WELL_KNOWN:
            return PROTO_WELL_KNOWN[name]
        if name in stack or len(stack) > MAX_DEPTH:
            return ANY_JSON
        return proto_shape(field.message_type, stack)
    return PROTO_SCALARS[field.type]


# -------------------------------------------------------------------------- JSON Schema

JSON_FORMATS = {"date-time": Scalar("timestamp"), "date": Scalar("date")}
JSON_TYPES = {"integer": LONG, "number": Scalar("double"), "boolean": Scalar("boolean")}


@dataclass(frozen=True, slots=True)
class JsonDocuments:
    """Where ``$ref`` leads: the root document and the referenced schemas by their name
    (the registry's reference names, which the ``$ref`` URLs use)."""

    root: object
    others: dict[str, object]

    def resolve(self, ref: str, here: object) -> tuple[object, object] | None:
        """The schema ``ref`` points at and the document it is in, or None."""
        base, _, pointer = ref.partition("#")
        document = here if not base else self.others.get(base)
        if document is None:
            return None
        node = document
        for part in (p for p in pointer.split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node, document


def json_schema_shape(node, documents: JsonDocuments, document: object = None,
                      depth: int = 0) -> Shape:
    """The shape of a JSON Schema: ``type`` as the scalar (``integer`` as long, ``number``
    as double, ``string`` with ``format`` ``date-time`` or ``date`` as those), an object's
    ``properties`` as a struct (in their written order; ``required`` does not make a column
    non-null: a value written before a property was required has none), an object of
    ``additionalProperties`` only as a map, ``items`` as a list, ``$ref`` followed (to
    ``definitions``/``$defs`` or a referenced schema), a type or ``anyOf``/``oneOf`` of one
    kind plus ``null`` as that kind; anything else (several kinds, ``allOf``, ``not``, a
    schema of no type, a ``$ref`` back into itself) as JSON text."""
    document = documents.root if document is None else document
    if depth > MAX_DEPTH or not isinstance(node, dict):
        return ANY_JSON
    if "$ref" in node:
        found = documents.resolve(str(node["$ref"]), document)
        return ANY_JSON if found is None else \
            json_schema_shape(found[0], documents, found[1], depth + 1)
    for key in ("oneOf", "anyOf"):
        if key in node:
            branches = [b for b in node[key] if not _only_null(b)]
            return json_schema_shape(branches[0], documents, document, depth + 1) \
                if len(branches) == 1 else ANY_JSON
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None and "properties" in node:
        kind = "object"
    if kind is None and "enum" in node:
        return TEXT if all(isinstance(v, str) for v in node["enum"]) else ANY_JSON
    if kind == "string":
        return JSON_FORMATS.get(node.get("format"), TEXT)
    if kind in JSON_TYPES:
        return JSON_TYPES[kind]
    if kind == "object":
        properties = node.get("properties")
        if isinstance(properties, dict) and properties:
            return struct_of(Field(name, json_schema_shape(p, documents, document, depth + 1))
                             for name, p in properties.items())
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return MapOf(json_schema_shape(extra, documents, document, depth + 1))
        return ANY_JSON
    if kind == "array" and isinstance(node.get("items"), dict):
        return ListOf(json_schema_shape(node["items"], documents, document, depth + 1))
    return ANY_JSON


def _only_null(node) -> bool:
    return isinstance(node, dict) and node.get("type") == "null" and len(node) == 1


# ------------------------------------------------------------------------------ topics


def imports(history: Schemas, schema: RegisteredSchema) -> dict[str, str]:
    """The texts ``schema`` references, transitively, by the name each is imported by."""
    found: dict[str, str] = {}
    pending = [(schema, 0)]
    while pending:
        here, depth = pending.pop()
        if depth > MAX_REFERENCE_DEPTH:
            raise SchemaInvalid(f"references nest deeper than {MAX_REFERENCE_DEPTH}")
        for ref in here.references:
            target = history.by_subject_version(ref.subject, ref.version)
            if target is None:
                raise SchemaInvalid(f"reference {ref.name!r} ({ref.subject}) is missing")
            if ref.name not in found:
                found[ref.name] = target.schema
                pending.append((target, depth + 1))
    return found


def topic_shape(history: Schemas, topic: str, side: str = "value") -> TopicShape | None:
    """The typed columns of ``topic``'s values (``side="key"``: keys): its
    ``<topic>-value`` (``-key``) subject's latest version as a struct, or None when it has
    none (no such subject, a value that is not a record or an object of properties, a schema
    that does not compile or map: its values stay JSON in ``value_decoded``)."""
    latest = history.latest(f"{topic}-{side}")
    if latest is None:
        return None
    try:
        return _shape_of(history, latest)
    except (ValueError, KeyError, TypeError, RecursionError):  # SchemaInvalid among them
        return None


def _shape_of(history: Schemas, latest: RegisteredSchema) -> TopicShape | None:
    message = None
    if latest.schema_type == AVRO:
        named: dict = {}
        for ref in history.referenced(latest):
            avro_shape(json.loads(ref.schema), named)
        columns = avro_shape(json.loads(latest.schema), named)
    elif latest.schema_type == PROTOBUF:
        protobuf = format_module("protobuf")
        compiled = protobuf.ProtoSchema(protobuf.compile_proto(latest.schema,
                                                               imports(history, latest)))
        message, _ = compiled.message((0,))
        columns = proto_shape(compiled.pool.FindMessageTypeByName(message))
    elif latest.schema_type == JSON:
        others = {name: json.loads(text) for name, text in imports(history, latest).items()}
        root = json.loads(latest.schema)
        columns = json_schema_shape(root, JsonDocuments(root, others))
    else:
        return None
    if not isinstance(columns, Struct) or not columns.fields:
        return None
    return TopicShape(columns, latest, message)


# -------------------------------------------------------------------- engine expressions


class Dialect(Protocol):
    """How one engine spells what :func:`resolved` builds (DuckDB's and Spark's SQL differ
    in struct literals, lambdas and quoting)."""

    def member(self, expr: str, name: str) -> str: ...

    def struct(self, parts: list[tuple[str, str]]) -> str: ...

    def each(self, expr: str, var: str, body: str) -> str: ...

    def entry_value(self, entry: str) -> str: ...

    def each_value(self, expr: str, entry: str, body: str) -> str: ...

    def converts(self, scalar: Scalar) -> bool: ...

    def convert(self, expr: str, scalar: Scalar) -> str: ...

    def literal(self, value: object, shape: Shape) -> str: ...


def resolved(expr: str, shape: Shape, dialect: Dialect, depth: int = 0) -> str:
    """The SQL of a value of ``shape`` as the engine parsed it (``expr``), with the
    conversions the engine's JSON reader leaves (``Dialect.converts``) and the defaults the
    format fills in for a field the writer lacked; ``expr`` itself when there are none."""
    if not _needs_work(shape, dialect):
        return expr
    if isinstance(shape, Scalar):
        return dialect.convert(expr, shape)
    if isinstance(shape, ListOf):
        var = f"_v{depth}"
        return dialect.each(expr, var, resolved(var, shape.item, dialect, depth + 1))
    if isinstance(shape, MapOf):
        entry = f"_e{depth}"
        return dialect.each_value(expr, entry, resolved(dialect.entry_value(entry),
                                                        shape.value, dialect, depth + 1))
    parts = []
    for f in shape.fields:
        value = resolved(dialect.member(expr, f.name), f.shape, dialect, depth + 1)
        if f.default is not None:
            value = f"coalesce({value}, {dialect.literal(f.default, f.shape)})"
        parts.append((f.name, value))
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE {dialect.struct(parts)} END"


def _needs_work(shape: Shape, dialect: Dialect) -> bool:
    """Whether a value of this shape needs rebuilding after the engine parsed it."""
    if isinstance(shape, Scalar):
        return dialect.converts(shape)
    if isinstance(shape, ListOf):
        return _needs_work(shape.item, dialect)
    if isinstance(shape, MapOf):
        return _needs_work(shape.value, dialect)
    return any(f.default is not None or _needs_work(f.shape, dialect) for f in shape.fields)
