"""--decode: the decoded columns as DuckDB JSON, and a typed view per Avro topic."""

from __future__ import annotations

import json
from decimal import Decimal

import segtools
from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES

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
