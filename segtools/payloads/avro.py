"""Avro bodies, read with the writer's schema (the schema id's).

Confluent's Avro serializer writes the datum in Avro's binary encoding with the schema it
registered, so the id's schema is the writer schema and no reader schema is needed. Named
types a schema takes from others come in through ``references`` (each reference's ``name`` is
the full name it defines): they are compiled first. fastavro checks each schema text; the
compiled :class:`Transcoder` reads the bodies; :func:`plain` renders fastavro's datum the same
way, the reference the tests hold the transcoder to.

JSON rendering (docs/payloads.md "JSON renderings"): records as objects, a union's value as
the branch's value alone (no ``{"type": value}`` wrapper), enums as their symbol, maps as
objects, long as a JSON number, bytes and fixed as base64, decimal as an exact decimal string,
timestamp-millis/micros as ISO-8601 UTC with ``Z``, local-timestamp-millis/micros as ISO-8601
without a zone, date as ``YYYY-MM-DD``, time-millis/micros as ``HH:MM:SS[.ffffff]``, uuid as
its text, NaN and infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (as the
proto3 JSON mapping writes them). A date or timestamp outside the years 1..9999 (a sentinel
such as Long.MAX_VALUE) is written in ISO-8601's expanded year form, as Java prints it
(``+292278994-08-17T07:12:55.807000Z``); fastavro cannot make a datum of it, so the tests hold
those to Java's text instead. A time that is not a time of day is written as its number.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid

import fastavro
import numpy as np

from segtools.payloads import _avro
from segtools.payloads.decoded import RawJson
from segtools.payloads.errors import BodyMismatch, SchemaInvalid


def compile_schema(text: str, named: dict) -> dict:
    """The parsed writer schema; ``named`` holds the referenced schemas' named types (filled
    in as this one adds its own, as fastavro does)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SchemaInvalid(f"Avro schema is not JSON: {e}") from None
    try:
        return fastavro.parse_schema(parsed, named_schemas=named)
    except Exception as e:  # fastavro raises many kinds on hostile text
        raise SchemaInvalid(f"Avro schema does not parse: {type(e).__name__}: {e}") from None


def plain(datum: object) -> object:
    """fastavro's Python value as JSON (the rendering this module's docstring lists): the
    reference the transcoder is held to, datum by datum, in the tests."""
    if isinstance(datum, dict):
        return {k: plain(v) for k, v in datum.items()}
    if isinstance(datum, list):
        return [plain(v) for v in datum]
    if isinstance(datum, bytes | bytearray):
        return base64.b64encode(datum).decode("ascii")
    if isinstance(datum, decimal.Decimal):
        return str(datum)
    if isinstance(datum, dt.datetime):
        if datum.tzinfo is None:  # a local-timestamp: no zone to name
            return datum.isoformat()
        return datum.astimezone(dt.UTC).replace(tzinfo=None).isoformat() + "Z"
    if isinstance(datum, dt.date | dt.time):
        return datum.isoformat()
    if isinstance(datum, uuid.UUID):
        return str(datum)
    if isinstance(datum, float) and not math.isfinite(datum):
        return "NaN" if math.isnan(datum) else ("Infinity" if datum > 0 else "-Infinity")
    return datum


# --------------------------------------------------------------------------- the transcoder
#
# The hot path: a schema compiled into a node table that ``_avro.transcode`` walks over many
# values per call, writing the JSON above straight into an Arrow column's buffer (no datum, no
# dict per value). fastavro stays the reference: it validates the schema text, and a
# differential test holds the transcoder's text to ``json_text(plain(fastavro's datum))``.

#: Node kinds (``_avro.pyx`` uses the same numbers).
KINDS = {name: i for i, name in enumerate((
    "null", "boolean", "int", "long", "float", "double", "bytes", "string", "fixed", "enum",
    "record", "array", "map", "union", "decimal_bytes", "decimal_fixed", "date", "time-millis",
    "time-micros", "timestamp-millis", "timestamp-micros", "local-timestamp-millis",
    "local-timestamp-micros", "uuid"))}
PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
#: What one value may expand to as JSON before it is refused (a hostile count of empty items).
MAX_VALUE_JSON = 64 << 20
ERRORS = {1: "cut short", 2: "a varint longer than 10 bytes", 3: "a string that is not UTF-8",
          4: "a union branch or enum symbol out of range", 5: "nested too deep",
          6: f"expands past {MAX_VALUE_JSON >> 20} MiB of JSON", 7: "a value out of its range",
          8: "bytes after the datum", 9: "a decimal or uuid that does not convert",
          10: "an array or map block counting more items than bytes",
          11: "the values before it in its batch already fill the JSON one Arrow column "
              "holds (read fewer records at a time)"}


def decimal_text(raw: bytes, scale: int) -> str:
    """A decimal's unscaled two's-complement bytes as ``str(Decimal)`` writes it."""
    unscaled = int.from_bytes(raw, "big", signed=True)
    digits = tuple(int(d) for d in str(abs(unscaled)))
    # built from its digits, exactly: no context rounds a decimal(38) to 28 digits
    return str(decimal.Decimal((int(unscaled < 0), digits, -scale)))


def uuid_text(raw: bytes) -> str:
    return str(uuid.UUID(raw.decode("utf-8")))


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class _Compiler:
    """Schema JSON -> the node table (named types resolved through ``named``: full name ->
    node, the referenced schemas' names first)."""

    def __init__(self, named: dict[str, int] | None = None, nodes=None):
        self.nodes: list[list[int]] = nodes if nodes is not None else []
        self.children: list[int] = []
        self.names: list[int] = []
        self.consts: list[bytes] = []
        self.named: dict[str, int] = named if named is not None else {}

    def const(self, text: bytes) -> int:
        self.consts.append(text)
        return len(self.consts) - 1

    def node(self, kind: str, a: int = 0, b: int = 0) -> int:
        self.nodes.append([KINDS[kind], a, b])
        return len(self.nodes) - 1

    def compile(self, schema, namespace: str | None = None) -> int:
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return self.node(schema)
            found = self.named.get(_full_name(schema, namespace), self.named.get(schema))
            if found is None:
                raise SchemaInvalid(f"Avro type {schema!r} is not defined")
            return found
        if isinstance(schema, list):
            branches = [self.compile(b, namespace) for b in schema]
            first = len(self.children)
            self.children.extend(branches)
            self.names.extend([-1] * len(branches))
            return self.node("union", first, len(branches))
        if not isinstance(schema, dict):
            raise SchemaInvalid(f"not an Avro schema: {schema!r}")
        kind, logical = schema.get("type"), schema.get("logicalType")
        if kind in ("record", "error"):
            full = _full_name(schema["name"], schema.get("namespace") or namespace)
            here = self.node("record")
            self.named[full] = here
            inner = full.rpartition(".")[0] or None
            fields = [(f["name"], self.compile(f["type"], inner)) for f in schema["fields"]]
            first = len(self.children)
            for name, child in fields:
                self.children.append(child)
                self.names.append(self.const(json.dumps(name, ensure_ascii=False).encode()
                                             + b":"))
            self.nodes[here][1:] = [first, len(fields)]
            return here
        if kind == "enum":
            full = _full_name(schema["name"], schema.get("namespace") or namespace)
            first = len(self.consts)
            for symbol in schema["symbols"]:
                self.const(json.dumps(symbol, ensure_ascii=False).encode())
            here = self.node("enum", first, len(schema["symbols"]))
            self.named[full] = here
            return here
        if kind == "fixed":
            full = _full_name(schema["name"], schema.get("namespace") or namespace)
            if logical == "decimal":
                here = self.node("decimal_fixed", int(schema["size"]), int(schema.get("scale", 0)))
            else:
                here = self.node("fixed", int(schema["size"]))
            self.named[full] = here
            return here
        if kind == "array":
            return self.node("array", self.compile(schema["items"], namespace))
        if kind == "map":
            return self.node("map", self.compile(schema["values"], namespace))
        if logical == "decimal" and kind == "bytes":
            return self.node("decimal_bytes", 0, int(schema.get("scale", 0)))
        if (logical, kind) in _LOGICAL:
            return self.node(_LOGICAL[(logical, kind)])
        return self.compile(kind, namespace)


_LOGICAL = {("date", "int"): "date", ("time-millis", "int"): "time-millis",
            ("time-micros", "long"): "time-micros",
            ("timestamp-millis", "long"): "timestamp-millis",
            ("timestamp-micros", "long"): "timestamp-micros",
            ("local-timestamp-millis", "long"): "local-timestamp-millis",
            ("local-timestamp-micros", "long"): "local-timestamp-micros",
            ("uuid", "string"): "uuid"}


class Transcoder:
    """A compiled writer schema: bodies to JSON text, one or many per call."""

    def __init__(self, text: str, references: list[str]):
        compiler = _Compiler()
        try:
            for ref in references:
                compiler.compile(json.loads(ref))
            root = compiler.compile(json.loads(text))
        except (KeyError, TypeError, ValueError, RecursionError) as e:
            raise SchemaInvalid(f"Avro schema does not compile: {type(e).__name__}: {e}"
                                ) from None
        offsets = np.zeros(len(compiler.consts) + 1, np.int64)
        offsets[1:] = np.cumsum([len(c) for c in compiler.consts])
        self.program = _avro.Program(
            np.array(compiler.nodes, np.int64).reshape(-1, 3),
            np.array(compiler.children, np.int64), np.array(compiler.names, np.int64),
            b"".join(compiler.consts), offsets, root, decimal_text, uuid_text)

    def many(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray, budget: int
             ) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The JSON texts of ``data[starts[i]:ends[i]]``: their bytes, int32 offsets (n + 1)
        and per value an error code (0: none; :data:`ERRORS` says what the others mean); once
        the texts reach ``budget`` bytes (below 2 GiB less a value's cap: the int32
        offsets) the values left are refused."""
        return _avro.transcode(self.program, data, starts.astype(np.int64, copy=False),
                               ends.astype(np.int64, copy=False), MAX_VALUE_JSON,
                               max(0, budget))

    @staticmethod
    def why(error: int) -> str:
        return ERRORS.get(int(error), "does not decode")

    def __call__(self, body: bytes) -> RawJson:
        data = np.frombuffer(body, np.uint8) if body else np.zeros(0, np.uint8)
        text, _, errors = self.many(data, np.zeros(1, np.int64),
                                    np.array([len(body)], np.int64), MAX_VALUE_JSON)
        if errors[0]:
            raise BodyMismatch(f"Avro body does not decode: {ERRORS[int(errors[0])]}")
        return RawJson(text.decode("utf-8"))
