"""The README's and docs/python-api.md's Python examples, run as a notebook runs them
(tests/docs_examples.py): in order, in one namespace, every displayed value shown."""

from __future__ import annotations

import pytest

from tests.docs_examples import REPO, blocks, run

DOCS = ("README.md", "docs/python-api.md")


@pytest.fixture
def s3_copies(s3_server, monkeypatch):
    """The docs' ``s3://kafka-copies/broker-1[/kafka-logs]`` on the session's S3 server,
    holding the sample tree; its endpoint in place of the docs' ``http://minio:9000``, and
    its credentials where the store's standard chain finds them (the environment)."""
    sample = REPO / "fixtures" / "logdirs" / "sample"
    for prefix in ("broker-1/kafka-logs", "broker-2/kafka-logs"):
        s3_server.upload_tree(sample, "kafka-copies", prefix)
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    return {"http://minio:9000": s3_server.endpoint, '"eu-west-1"': '"us-east-1"'}


@pytest.mark.parametrize("doc", DOCS)
def test_every_python_block_runs(doc, s3_copies, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code = blocks(REPO / doc, s3_copies)
    assert code, doc
    namespace: dict = {"__name__": "__docs__"}
    for i, cell in enumerate(code):
        run(cell, namespace, f"{doc}[{i}]")
