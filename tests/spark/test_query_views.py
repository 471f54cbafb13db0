"""The views of ``segtools query`` on Spark: the same columns, and the same rows for portable
queries, on every fixture tree."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark_kafkalog.views import register_views

import segtools
from tests.fixtures_manifest import FIXTURES
from tests.query import evolved_schemas

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


def test_every_state_and_the_markers_agree(spark):
    """``states`` and ``include_control`` reach the source as ``partitionStates`` and
    ``includeControl``: the sample's deleted partition and its transaction markers are read
    on both engines."""
    path = FIXTURES / "logdirs" / "sample"
    spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
    try:
        register_views(spark, path, at=AT, states="all", include_control=True)
        for sql in (*PORTABLE[:3], "select topic, partition, sum(case when is_control then 1 "
                                   "else 0 end) as markers from records group by all"):
            expected = segtools.query(path, sql, at=AT, states="all", include_control=True)
            got = spark.sql(sql).collect()
            assert _rows(got) == _rows(tuple(r.values()) for r in expected.to_pylist()), sql
            assert ("orders.v2-eu", 5) in {(r[0], r[1]) for r in got}, sql
    finally:
        spark.conf.unset("spark.sql.ansi.doubleQuotedIdentifiers")


def test_same_columns_on_both_engines(spark):
    path = FIXTURES / "logdirs" / "payloads"
    names = register_views(spark, path, decode=True)
    con = segtools.open(path).duckdb(decode=True)
    for name in names:
        duck = [d[0] for d in con.execute(f'select * from "{name}" limit 0').description]
        assert spark.table(f"`{name}`").columns == duck, name


#: the typed topic views of the payloads tree: Avro, Protobuf, JSON Schema
TYPED = ("orders", "customers", "events")


def _kind(kind: pa.DataType):
    """An Arrow type as the shape it holds (the engines name lists' items and maps' entries
    differently, and DuckDB may hand text as a view)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or \
            pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_map(kind):
        return ("map", _kind(kind.key_type), _kind(kind.item_type))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_kind(kind.value_type)]
    if pa.types.is_struct(kind):
        return {kind.field(i).name: _kind(kind.field(i).type) for i in range(kind.num_fields)}
    if pa.types.is_timestamp(kind):
        return ("timestamp", kind.tz is not None)
    return str(kind)


def _duck(value, kind: pa.DataType):
    """A DuckDB value as Spark's rows give it: maps as dicts (Arrow gives pairs)."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {k: _duck(v, kind.item_type) for k, v in value}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_duck(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {kind.field(i).name: _duck(value[kind.field(i).name], kind.field(i).type)
                for i in range(kind.num_fields)}
    return _plain(value)


def _spark(value):
    if isinstance(value, dict):
        return {k: _spark(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spark(v) for v in value]
    return _plain(value)


@pytest.mark.parametrize("evolved", [False, True], ids=["tree", "evolved"])
def test_typed_views_agree(spark, tmp_path, evolved):
    """Each typed view has the same column types and values on both engines, on the tree's
    own schemas and with newer versions of the Protobuf and JSON Schema subjects (every row
    then read from an older version)."""
    from pyspark.sql.pandas.types import to_arrow_type

    path = FIXTURES / "logdirs" / "payloads"
    schemas = [str(evolved_schemas.write(tmp_path))] if evolved else []
    names = register_views(spark, path, decode=True, schemas=schemas)
    con = segtools.open(path).duckdb(decode=True, schemas=schemas)
    for topic in TYPED if not evolved else ("customers", "events"):
        assert topic in names
        duck = con.sql(f'select * from "{topic}" order by "offset"').to_arrow_table()
        frame = spark.table(topic).orderBy("offset")
        kinds = [to_arrow_type(f.dataType, timezone="UTC") for f in frame.schema.fields]
        assert [_kind(k) for k in kinds] == [_kind(f.type) for f in duck.schema], topic
        got = [_spark(r.asDict(recursive=True)) for r in frame.collect()]
        expected = [_duck(r, pa.struct(list(duck.schema))) for r in duck.to_pylist()]
        assert len(got) == len(expected), topic
        for spark_row, duck_row in zip(got, expected, strict=True):
            assert spark_row == duck_row, (topic, {k: (v, duck_row.get(k)) for k, v in
                                                   spark_row.items() if v != duck_row.get(k)})
