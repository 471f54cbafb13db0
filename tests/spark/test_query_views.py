"""The views of ``segtools query`` on Spark: the same columns, and the same rows for portable
queries, on every fixture tree."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark_kafkalog.views import register_views

import segtools
from tests.fixtures_manifest import FIXTURES

TREES = sorted(p.name for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())

PORTABLE = (
    'select topic, partition, count(*) as n, min("offset") as first, max("offset") as last, '
    "sum(octet_length(value)) as bytes from records group by topic, partition",
    "select topic, partition, base_offset, size, is_active from segments",
    "select topic, partition, base_offset, last_offset, crc_valid, compression from batches",
    "select code, severity, path from findings",
    "select topic, partition, base_offset, deletable, reason from retention",
    "select topic, partition, producer_id, records from producers",
    "select topic, partition, producer_id, first_offset, marker from transactions",
    'select "group", topic, partition, "offset" from offsets',
    "select id, subject, version from schemas",
)


def _plain(value):
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, Decimal):
        return int(value) if value == int(value) else float(value)
    return value


def _rows(rows) -> list[tuple]:
    return sorted((tuple(_plain(v) for v in r) for r in rows), key=repr)


#: one moment for both engines' retention and transactions views (``--at``)
AT = "2024-01-01T00:00Z"


@pytest.mark.parametrize("tree", TREES)
def test_portable_queries_agree(spark, tree):
    path = FIXTURES / "logdirs" / tree
    spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
    try:
        register_views(spark, path, at=AT)
        for sql in PORTABLE:
            expected = segtools.query(path, sql, at=AT)
            got = spark.sql(sql).collect()
            assert _rows(got) == _rows(tuple(r.values()) for r in expected.to_pylist()), sql
    finally:
        spark.conf.unset("spark.sql.ansi.doubleQuotedIdentifiers")


def test_same_columns_on_both_engines(spark):
    path = FIXTURES / "logdirs" / "payloads"
    names = register_views(spark, path, decode=True)
    con = segtools.open(path).duckdb(decode=True)
    for name in names:
        duck = [d[0] for d in con.execute(f'select * from "{name}" limit 0').description]
        assert spark.table(f"`{name}`").columns == duck, name
