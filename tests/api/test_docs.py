"""docs/python-api.md's and docs/payloads.md's Python examples, run as a notebook runs them
(tests/docs_examples.py): in order, in one namespace, every displayed value shown. The
README's examples include Spark ones and run in tests/spark/test_docs.py."""

from __future__ import annotations

import pytest

from tests.docs_examples import REPO, blocks, run


@pytest.mark.parametrize("doc", ["docs/python-api.md", "docs/payloads.md"])
def test_every_python_block_runs(monkeypatch, doc):
    monkeypatch.chdir(REPO)
    code = blocks(REPO / doc)
    assert len(code) >= 2
    namespace: dict = {"__name__": "__docs__"}
    for i, cell in enumerate(code):
        run(cell, namespace, f"{doc}[{i}]")
