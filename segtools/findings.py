"""Findings: problems worth reporting that do not stop the read.

A finding is a value, not an exception: a torn tail or a bad CRC is evidence an operator wants to
see next to the data around it, so parsers yield findings and carry on where the framing allows.
Codes are stable snake_case identifiers (DESIGN.md §3); renaming one is a contract change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    path: str
    message: str
    position: int | None = None
    offset: int | None = None

    def to_json(self) -> dict:
        out: dict = {"type": "finding", "code": self.code, "severity": str(self.severity),
                     "path": self.path}
        if self.position is not None:
            out["position"] = self.position
        if self.offset is not None:
            out["offset"] = self.offset
        out["message"] = self.message
        return out
