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


@dataclass(frozen=True, slots=True)
class Decoded:
    value: object  # JSON-ready
    schema: SchemaUse

    def json_text(self) -> str:
        return json_text(self.value)


def json_text(value: object) -> str:
    """Compact JSON text of a decoded value (the Arrow and Spark columns hold this)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
