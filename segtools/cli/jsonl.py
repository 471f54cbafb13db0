"""The modes of the compiled JSON Lines renderer (:mod:`segtools.cli._jsonl`), by name."""

from __future__ import annotations

from segtools.cli import _jsonl

MODES = {"base64": _jsonl.MODE_BASE64, "hex": _jsonl.MODE_HEX, "utf8": _jsonl.MODE_UTF8}
