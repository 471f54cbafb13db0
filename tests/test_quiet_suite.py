"""The suite's own output is pytest's: no test writes past pytest's capture (``capsys`` or
``capfd`` ``.disabled()``, ``sys.__stdout__``), which would drop unlabelled lines into the
middle of the progress dots. Numbers a test measures go to ``record_property`` (the JUnit XML)
or to an assertion."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _escapes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr == "disabled"
                and isinstance(node.value, ast.Name) and node.value.id in ("capsys", "capfd")):
            found.append(f"{path.relative_to(TESTS)}:{node.lineno}: {node.value.id}.disabled")
        elif isinstance(node, ast.Attribute) and node.attr in ("__stdout__", "__stderr__"):
            found.append(f"{path.relative_to(TESTS)}:{node.lineno}: sys.{node.attr}")
    return found


def test_no_test_prints_past_pytest_capture():
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in _escapes(path)]
    assert not found, found
