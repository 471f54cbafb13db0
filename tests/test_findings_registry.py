"""The finding registry is the one place codes are declared: every code the sources build is
in it, every declared code has a meaning, and docs/findings.md is generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segtools.findings import (
    REGISTRY,
    RULES,
    Finding,
    Severity,
    UnknownFindingCode,
    finding,
    markdown,
)

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p for d in ("segtools", "spark") for p in (ROOT / d).rglob("*.py")]
CALL = re.compile(r'(?:\bFinding|\bfinding|\b_finding|\.finding)\(\s*"([a-z0-9_]+)"')
PREFIXES = ("", "index_", "timeindex_", "txnindex_")


def test_codes_are_unique_and_explained():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    for r in RULES:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", r.code), r.code
        assert r.meaning and not r.meaning.endswith("."), r.code


def test_every_code_built_by_the_sources_is_declared():
    missing = []
    for path in SOURCES:
        for m in CALL.finditer(path.read_text()):
            if not any(p + m.group(1) in REGISTRY for p in PREFIXES):
                missing.append(f"{path.relative_to(ROOT)}: {m.group(1)}")
    assert not missing, missing


def test_a_code_has_one_severity():
    with pytest.raises(UnknownFindingCode):
        Finding("crc_mismatch", Severity.WARNING, "x", "m")
    with pytest.raises(UnknownFindingCode):
        finding("no_such_code", "x", "m")
    assert finding("crc_mismatch", "x", "m").severity is Severity.ERROR


def test_docs_are_generated_from_the_registry():
    assert (ROOT / "docs" / "findings.md").read_text() == markdown(), \
        "regenerate: python -m segtools.findings > docs/findings.md"
