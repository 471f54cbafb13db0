"""--decode: the decoded columns as DuckDB JSON, and a typed view per topic with a value
subject (Avro, Protobuf, JSON Schema)."""

from __future__ import annotations

import json
from decimal import Decimal

import pyarrow as pa

import segtools
from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES
from tests.query import evolved_schemas

PAYLOADS = FIXTURES / "logdirs" / "payloads"


def decoded(topic: str) -> list[dict]:
    table = segtools.open(PAYLOADS).to_arrow(topics=topic, decode=True).read_all()
    return [json.loads(v) if v is not None else None
            for v in table.column("value_decoded").to_pylist()]


def test_decoded_columns_are_json():
    got = segtools.query(PAYLOADS, "select value_decoded->>'$.order_id' as id from records "
                                   "where topic = 'orders' order by \"offset\"", decode=True)
    assert got.column("id").to_pylist() == [
        None if v is None else str(v["order_id"]) for v in decoded("orders")]


def test_typed_view_has_the_latest_schemas_fields():
    got = segtools.query(PAYLOADS, 'select "offset", order_id, total, placed_at from orders '
                                   'order by "offset"', decode=True).to_pylist()
    values = decoded("orders")
    assert [r["order_id"] for r in got] == [v["order_id"] for v in values]
    assert [r["total"]["amount"] for r in got] == [Decimal(v["total"]["amount"])
                                                   for v in values]
    assert all(r["placed_at"].isoformat().replace("+00:00", "Z") == v["placed_at"]
               for r, v in zip(got, values, strict=True))


def test_typed_view_pushdown_and_no_view_without_decode():
    got = segtools.query(PAYLOADS, 'select count(*) as n from orders where "offset" >= 2',
                         decode=True)
    assert got.column("n")[0].as_py() == len(decoded("orders")) - 2
    names = {r[0] for r in segtools.open(PAYLOADS).duckdb().execute("show tables").fetchall()}
    assert "orders" not in names


def test_jsonl_nests_the_json_columns(capsys):
    code = main(["query", str(PAYLOADS), "--decode", "--format", "jsonl", "-c",
                 "select value_decoded from records where topic = 'orders' "
                 "order by \"offset\" limit 1"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["value_decoded"] == decoded("orders")[0]


def typed(sql: str, **kwargs) -> pa.Table:
    return segtools.query(PAYLOADS, sql, decode=True, **kwargs)


def test_protobuf_view_types_the_first_messages_fields():
    """``customers-value`` declares Customer then Shipment: the view's columns are
    Customer's (the message Confluent reads without a name), each proto3 type as the JSON
    mapping writes it; Shipment rows keep their place with null fields."""
    got = typed('select * from customers order by "offset"')
    kinds = {f.name: f.type for f in got.schema}
    assert kinds["customer_id"] == pa.int64()  # int64: a JSON string, read as a number
    assert kinds["since"] == pa.timestamp("us", tz="UTC")  # google.protobuf.Timestamp
    assert kinds["tier"] == pa.string()  # an enum, by name
    assert kinds["emails"] == pa.list_(pa.string())
    assert pa.types.is_struct(kinds["address"])
    values = decoded("customers")
    for row, value in zip(got.to_pylist(), values, strict=True):
        if row["value_schema_message"] == "shop.Customer":
            assert row["customer_id"] == int(value["customer_id"])
            assert row["address"] == value["address"] and row["emails"] == value["emails"]
            assert row["since"].isoformat().replace("+00:00", "Z") == value["since"]
            assert row["tier"] == value["tier"]
        else:
            assert row["customer_id"] is None and row["address"] is None


def test_json_schema_view_types_the_properties():
    got = typed('select * from events order by "offset"')
    kinds = {f.name: f.type for f in got.schema}
    assert kinds["at"] == pa.timestamp("us", tz="UTC")  # "format": "date-time"
    assert kinds["props"] == pa.string()  # an object of no properties: its JSON text
    rows = got.to_pylist()
    assert [r["user"] for r in rows] == [v["user"] for v in decoded("events")]
    assert [json.loads(r["props"]) for r in rows] == [v["props"] for v in decoded("events")]


def test_older_versions_resolve_to_the_latest(tmp_path):
    """Rows written with version 1 read into version 2's columns as each format's reader
    would: Protobuf drops the removed field, gives a field without presence its zero value,
    an ``optional`` one null and a map none; JSON Schema gives a missing property null; Avro
    fills a non-null field's default."""
    schemas = [str(evolved_schemas.write(tmp_path))]
    customers = typed("select * from customers where value_schema_message = 'shop.Customer'",
                      schemas=schemas).to_pylist()
    assert customers and all(r["value_schema_version"] == 1 for r in customers)
    assert "emails" not in customers[0]
    assert {(r["phone"], r["score"], len(r["counters"])) for r in customers} == {("", None, 0)}
    events = typed("select * from events", schemas=schemas).to_pylist()
    assert "props" not in events[0] and {(r["count"], r["place"]) for r in events} == {
        (None, None)}
    orders = typed('select value_schema_version as v, channel from orders order by "offset"')
    assert [r["channel"] for r in orders.to_pylist() if r["v"] == 1] == ["web"] * 4
