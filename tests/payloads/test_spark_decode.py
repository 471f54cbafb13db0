"""The Spark source's ``decode`` option: the same values as the CLI and the API, decoded on the
executors with the schemas read once on the driver; and the typed struct of a topic's values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import segtools
from tests.spark.conftest import spark  # noqa: F401 (the session fixture)

pytest.importorskip("pyspark")

TREE = Path(__file__).resolve().parents[2] / "fixtures" / "logdirs" / "payloads"


@pytest.mark.parametrize("topic", ["orders", "customers", "events", "payloads.hostile"])
def test_spark_decodes_as_the_api(spark, topic):  # noqa: F811
    from pyspark_kafkalog import register

    register(spark)
    df = (spark.read.format("kafkalog").option("decode", "true").option("topics", topic)
          .load(str(TREE)))
    rows = sorted(df.select("offset", "value_decoded", "value_schema_id",
                            "value_payload_error").collect())
    api = segtools.open(TREE).to_arrow(decode=True, topics=topic).read_all()
    expected = sorted(zip(api.column("offset").to_pylist(),
                          api.column("value_decoded").to_pylist(),
                          api.column("value_schema_id").to_pylist(),
                          api.column("value_payload_error").to_pylist(), strict=True))
    assert [tuple(r) for r in rows] == expected
    assert any(r[1] is not None and json.loads(r[1]) for r in rows) or topic == "payloads.hostile"
