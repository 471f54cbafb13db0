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
                            "value_payload_error", "value_schema_message").collect())
    api = segtools.open(TREE).to_arrow(decode=True, topics=topic).read_all()
    expected = sorted(zip(api.column("offset").to_pylist(),
                          api.column("value_decoded").to_pylist(),
                          api.column("value_schema_id").to_pylist(),
                          api.column("value_payload_error").to_pylist(),
                          api.column("value_schema_message").to_pylist(), strict=True))
    assert [tuple(r) for r in rows] == expected
    assert any(r[1] is not None and json.loads(r[1]) for r in rows) or topic == "payloads.hostile"


def test_typed_struct_from_the_latest_avro_schema(spark):  # noqa: F811
    from pyspark.sql.types import DateType, DecimalType, LongType, StructType, TimestampType
    from pyspark_kafkalog import register
    from pyspark_kafkalog.payloads import with_typed_values

    register(spark)
    df = (spark.read.format("kafkalog").option("decode", "true").option("topics", "orders")
          .load(str(TREE)))
    typed = with_typed_values(df, [str(TREE)], "orders")
    struct = typed.schema["value_typed"].dataType
    assert isinstance(struct, StructType)
    assert struct["order_id"].dataType == LongType()
    assert struct["total"].dataType["amount"].dataType == DecimalType(9, 2)
    assert struct["ship_on"].dataType == DateType()
    assert struct["placed_at"].dataType == TimestampType()
    rows = typed.select("offset", "value_typed.order_id", "value_typed.total.currency",
                        "value_typed.channel", "value_typed.total.amount").orderBy("offset")
    got = [tuple(r) for r in rows.collect()]
    # v1 rows: v2's field, which they lack, has its declared default (Avro's resolution)
    assert got[0][:4] == (0, 42, "EUR", "web")
    assert got[7][:4] == (7, 49, "USD", "app")
    assert str(got[0][4]) == "12.00"


def test_a_schema_chooses_the_decode_columns(spark):  # noqa: F811
    """A user schema naming some decode columns, in any order and without the ``value`` or
    ``topic`` they come from, gets those columns (the values read and dropped, the key not
    decoded); a decode column declared with another type is an error at the first action."""
    from pyspark_kafkalog import register

    register(spark)
    reader = (spark.read.format("kafkalog").option("decode", "true")
              .option("topics", "customers"))
    df = reader.schema("value_schema_message string, OFFSET long, value_decoded string"
                       ).load(str(TREE))
    assert df.columns == ["value_schema_message", "OFFSET", "value_decoded"]
    rows = sorted((r[1], r[0], r[2]) for r in df.collect())
    api = segtools.open(TREE).to_arrow(decode=True, topics="customers").read_all()
    assert rows == sorted(zip(api.column("offset").to_pylist(),
                              api.column("value_schema_message").to_pylist(),
                              api.column("value_decoded").to_pylist(), strict=True))
    wrong = reader.schema("offset long, value_schema_id string").load(str(TREE))
    with pytest.raises(Exception, match="value_schema_id is int"):
        wrong.collect()
