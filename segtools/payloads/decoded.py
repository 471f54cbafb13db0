"""A decoded payload: its value as JSON and the schema it was read with (the contract's
``*_decoded`` and ``*_schema`` fields)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SchemaUse:
    """Which schema a payload was read with: the frame's id, the registration named (by the
    topic's subject when the id has several), the type, and for Protobuf the message."""

    id: int | None
    subject: str | None
    version: int | None
    type: str
    message: str | None = None

    def to_json(self) -> dict:
        out = {"id": self.id, "subject": self.subject, "version": self.version,
               "type": self.type}
        if self.message is not None:
            out["message"] = self.message
        return out


class RawJson(str):
    """JSON text a decoder wrote directly (the Avro transcoder): parsed only if asked."""

    __slots__ = ()


class Decoded:
    """A decoded payload: its value (JSON-ready), its JSON text, and the schema it was read
    with. A decoder gives one or the other; the other is derived when first asked for."""

    __slots__ = ("_text", "_value", "schema")

    def __init__(self, value: object, schema: SchemaUse):
        self.schema = schema
        if isinstance(value, RawJson):
            self._text: str | None = str(value)
            self._value: object = _UNSET
        else:
            self._text = None
            self._value = value

    @property
    def value(self) -> object:
        if self._value is _UNSET:
            self._value = json.loads(self._text)
        return self._value

    def json_text(self) -> str:
        if self._text is None:
            self._text = json_text(self._value)
        return self._text

    def __repr__(self) -> str:
        return f"Decoded({self.json_text()}, {self.schema})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Decoded) and other.schema == self.schema and \
            other.json_text() == self.json_text()

    __hash__ = None  # type: ignore[assignment]


_UNSET = object()


def json_text(value: object) -> str:
    """Compact JSON text of a decoded value (the Arrow and Spark columns hold this)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
