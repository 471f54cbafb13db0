"""Avro bodies, read with the writer's schema (the schema id's), by fastavro.

Confluent's Avro serializer writes the datum in Avro's binary encoding with the schema it
registered, so the id's schema is the writer schema and no reader schema is needed. Named
types a schema takes from others come in through ``references`` (each reference's ``name`` is
the full name it defines): they are parsed first and handed to fastavro as named schemas.

JSON rendering (docs/payloads.md "Avro to JSON"): records as objects, a union's value as the
branch's value alone (no ``{"type": value}`` wrapper), enums as their symbol, maps as objects,
long as a JSON number, bytes and fixed as base64, decimal as an exact decimal string,
timestamp-millis/micros and local-timestamp as ISO-8601 (UTC, ``Z``), date as ``YYYY-MM-DD``,
time-millis/micros as ``HH:MM:SS.ffffff``, uuid as its text, NaN and infinities as the strings
``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (as the proto3 JSON mapping writes them).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import math
import uuid
from collections.abc import Callable

import fastavro

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


def decoder(schema: dict) -> Callable[[bytes], object]:
    """A function from an Avro body to its JSON value."""

    def decode(body: bytes) -> object:
        stream = io.BytesIO(body)
        try:
            datum = fastavro.schemaless_reader(stream, schema, None)
        except Exception as e:  # a torn or foreign body fails in many ways
            raise BodyMismatch(f"Avro body does not decode: {type(e).__name__}: {e}") from None
        if stream.tell() != len(body):
            raise BodyMismatch(f"{len(body) - stream.tell()} bytes after the Avro datum")
        return plain(datum)

    return decode


def plain(datum: object) -> object:
    """fastavro's Python value as JSON (the rendering this module's docstring lists)."""
    if isinstance(datum, dict):
        return {k: plain(v) for k, v in datum.items()}
    if isinstance(datum, list):
        return [plain(v) for v in datum]
    if isinstance(datum, bytes | bytearray):
        return base64.b64encode(datum).decode("ascii")
    if isinstance(datum, decimal.Decimal):
        return str(datum)
    if isinstance(datum, dt.datetime):
        if datum.tzinfo is not None:
            datum = datum.astimezone(dt.UTC).replace(tzinfo=None)
        return datum.isoformat() + "Z"
    if isinstance(datum, dt.date | dt.time):
        return datum.isoformat()
    if isinstance(datum, uuid.UUID):
        return str(datum)
    if isinstance(datum, float) and not math.isfinite(datum):
        return "NaN" if math.isnan(datum) else ("Infinity" if datum > 0 else "-Infinity")
    return datum
