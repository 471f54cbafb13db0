"""The Kafka-written fixtures and what Kafka's own reader said about them (fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
LOGS = MANIFEST["logs"]
SAMPLE = FIXTURES / "logdirs" / "sample"
LEGACY = FIXTURES / "logdirs" / "legacy"


def expected_lines(entry: dict) -> list[dict]:
    path = FIXTURES / entry["expected"]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def log_path(entry: dict) -> Path:
    return FIXTURES / entry["path"]
