"""docs/python-api.md's Python examples, run as a notebook runs them
(tests/docs_examples.py): in order, in one namespace, every displayed value shown. The
README's examples include Spark ones and run in tests/spark/test_docs.py."""

from __future__ import annotations

from tests.docs_examples import REPO, blocks, run


def test_every_python_block_runs(monkeypatch):
    monkeypatch.chdir(REPO)
    code = blocks(REPO / "docs" / "python-api.md")
    assert len(code) >= 3
    namespace: dict = {"__name__": "__docs__"}
    for i, cell in enumerate(code):
        run(cell, namespace, f"docs/python-api.md[{i}]")
