"""docs/spark.md's, docs/query.md's and the README's Python examples, run as a notebook runs
them (tests/docs_examples.py), in the shared session: ``SparkSession.builder.getOrCreate()``
in the docs returns it. The object-storage examples read the sample tree from the session's S3
server, whose endpoint and credentials the test puts where the docs name the store's."""

from __future__ import annotations

import pytest

from tests.docs_examples import REPO, blocks, run

pytestmark = pytest.mark.spark

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture
def s3_copies(s3_server, monkeypatch):
    """``s3://kafka-copies/broker-{1,2}/kafka-logs`` holding the sample tree. The Python
    examples find the credentials in the environment; the executors were started before it,
    so the Spark examples get them as the reader's secret options."""
    sample = REPO / "fixtures" / "logdirs" / "sample"
    for prefix in ("broker-1/kafka-logs", "broker-2/kafka-logs"):
        s3_server.upload_tree(sample, "kafka-copies", prefix)
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    opts = s3_server.options
    secrets = "".join(f'.option("storage.{k}", "{opts[k]}")' for k in ("access_key",
                                                                       "secret_key"))
    return {'.option("storage.endpoint_url", "http://minio:9000")':
            f'.option("storage.endpoint_url", "{s3_server.endpoint}"){secrets}',
            "http://minio:9000": s3_server.endpoint, '"eu-west-1"': '"us-east-1"'}


@pytest.mark.parametrize("doc", ["docs/spark.md", "docs/query.md", "README.md"])
def test_every_python_block_runs(doc, spark, s3_copies, monkeypatch):
    monkeypatch.chdir(REPO)
    code = blocks(REPO / doc, s3_copies)
    assert code, doc
    namespace: dict = {"__name__": "__docs__"}
    try:
        for i, cell in enumerate(code):
            run(cell, namespace, f"{doc}[{i}]")
    finally:
        spark.conf.unset(PUSHDOWN)
