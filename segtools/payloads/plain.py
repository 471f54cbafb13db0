"""Payloads without a frame: what Kafka's own serializers and a plain JSON serializer write.

Kafka's ``StringSerializer`` writes UTF-8 text, ``IntegerSerializer`` / ``LongSerializer`` a
big-endian int32 / int64, ``UUIDSerializer`` the UUID's 36-character text (all in
``org.apache.kafka.common.serialization``). None of them marks its output, so they are only
used when asked: by name (``--decode string``), or by ``--decode auto``, which recognises
JSON (an object or an array, as JSON serializers write them) and then UTF-8 text without
control characters, names what it recognised in the schema field, and never guesses a number
(four bytes of text are also an int).
"""

from __future__ import annotations

import json
import uuid

from segtools.payloads.decoded import Decoded, SchemaUse
from segtools.payloads.errors import BodyMismatch

KINDS = ("string", "int", "long", "uuid", "json")
#: The ``type`` a decoded payload's schema field carries for each kind.
TYPE_NAMES = {"string": "STRING", "int": "INTEGER", "long": "LONG", "uuid": "UUID",
              "json": "JSON_TEXT"}


def _text(data: bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyMismatch(f"not UTF-8 text: {e}") from None


def json_body(data: bytes) -> object:
    """A UTF-8 JSON document (the JSON Schema serializer's body, or a plain JSON payload)."""
    try:
        return json.loads(_text(data))
    except (ValueError, RecursionError) as e:
        raise BodyMismatch(f"not JSON: {e}") from None


def decode(kind: str, data: bytes) -> object:
    """``data`` as Kafka's serializer of ``kind`` wrote it."""
    if kind == "string":
        return _text(data)
    if kind == "json":
        return json_body(data)
    if kind == "uuid":
        try:
            return str(uuid.UUID(_text(data)))
        except ValueError as e:
            raise BodyMismatch(f"not a UUID's text: {e}") from None
    size = 4 if kind == "int" else 8
    if len(data) != size:
        raise BodyMismatch(f"{len(data)} bytes, not the {size} of a big-endian "
                           f"{'int32' if size == 4 else 'int64'}")
    value = int.from_bytes(data, "big", signed=True)
    return value


def recognise(data: bytes) -> Decoded | None:
    """``--decode auto`` on a payload without a frame: JSON, else text, else nothing."""
    if data[:1] in (b"{", b"["):
        try:
            return Decoded(json_body(data), SchemaUse(None, None, None, TYPE_NAMES["json"]))
        except BodyMismatch:
            pass
    try:
        text = _text(data)
    except BodyMismatch:
        return None
    if text.isprintable():
        return Decoded(text, SchemaUse(None, None, None, TYPE_NAMES["string"]))
    return None
