"""docs/payloads.md's Python examples, run as a notebook runs them (tests/docs_examples.py):
in order, in one namespace, every displayed value shown."""

from __future__ import annotations

from tests.docs_examples import REPO, blocks, run


def test_every_python_block_runs(monkeypatch):
    monkeypatch.chdir(REPO)
    code = blocks(REPO / "docs" / "payloads.md")
    assert len(code) >= 2
    namespace: dict = {"__name__": "__docs__"}
    for i, cell in enumerate(code):
        run(cell, namespace, f"docs/payloads.md[{i}]")
