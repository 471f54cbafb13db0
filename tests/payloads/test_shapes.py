"""The one mapping from schemas to typed columns (segtools/payloads/shapes.py), per format,
and what it gives DuckDB for the constructs the fixture tree does not hold."""

from __future__ import annotations

import json

import pytest

from segtools.payloads import shapes
from segtools.payloads.schemas import (
    AVRO,
    JSON,
    PROTOBUF,
    RegisteredSchema,
    SchemaReference,
    Schemas,
)
from segtools.payloads.shapes import (
    ANY_JSON,
    LONG,
    TEXT,
    UNSIGNED_LONG,
    Field,
    JsonDocuments,
    ListOf,
    MapOf,
    Scalar,
    Struct,
)
from segtools.sql import typed


def json_shape(schema: dict, others: dict | None = None) -> shapes.Shape:
    return shapes.json_schema_shape(schema, JsonDocuments(schema, others or {}))


def test_json_schema_constructs():
    schema = {
        "type": "object",
        "definitions": {"Money": {"type": "object", "properties": {
            "amount": {"type": "number"}, "currency": {"enum": ["EUR", "USD"]}}}},
        "properties": {
            "id": {"type": "integer"},
            "price": {"$ref": "#/definitions/Money"},
            "maybe": {"type": ["string", "null"]},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "nullable": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
            "day": {"type": "string", "format": "date"},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "free": {},
            "self": {"$ref": "#"},
            "elsewhere": {"$ref": "common.json#/definitions/Where"},
            "nowhere": {"$ref": "missing.json"},
            "cased": {"properties": {"a": {"type": "string"}, "A": {"type": "string"}}},
        },
        "required": ["id"]}
    common = {"definitions": {"Where": {"type": "object",
                                        "properties": {"city": {"type": "string"}}}}}
    got = json_shape(schema, {"common.json": common})
    by_name = {f.name: f.shape for f in got.fields}
    assert by_name["id"] == LONG
    assert by_name["price"] == Struct((Field("amount", Scalar("double")),
                                       Field("currency", TEXT)))
    assert by_name["maybe"] == TEXT
    assert by_name["either"] == ANY_JSON
    assert by_name["nullable"] == Scalar("boolean")
    assert by_name["day"] == Scalar("date")
    assert by_name["counts"] == MapOf(LONG)
    assert by_name["tags"] == ListOf(TEXT)
    assert by_name["free"] == ANY_JSON
    assert by_name["elsewhere"] == Struct((Field("city", TEXT),))
    assert by_name["nowhere"] == ANY_JSON
    assert by_name["cased"] == ANY_JSON  # no engine holds fields named "a" and "A" apart
    # "#" is the whole document: a recursive type, cut into JSON text where it nests too deep
    depth, inner = 0, by_name["self"]
    while isinstance(inner, Struct):
        inner = {f.name: f.shape for f in inner.fields}["self"]
        depth += 1
    assert inner == ANY_JSON and depth <= shapes.MAX_DEPTH


CATALOG = """syntax = "proto3";
package cat;

import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/duration.proto";

message Item {
  uint64 big = 1;
  fixed32 small = 2;
  map<string, Item> children = 3;
  google.protobuf.Int64Value wrapped = 4;
  google.protobuf.Struct extra = 5;
  google.protobuf.Duration took = 6;
  oneof pick {
    string word = 7;
    sint32 number = 8;
  }
  optional double ratio = 9;
  bytes blob = 10;
  Kind kind = 11;
  enum Kind {
    PLAIN = 0;
    FANCY = 1;
  }
}
"""


def test_protobuf_constructs():
    history = Schemas([RegisteredSchema(1, "items-value", 1, PROTOBUF, CATALOG)])
    found = shapes.topic_shape(history, "items")
    assert found is not None and found.message == "cat.Item"
    fields = {f.name: f for f in found.columns.fields}
    assert fields["big"] == Field("big", UNSIGNED_LONG, 0)
    assert fields["small"] == Field("small", LONG, 0)
    assert fields["children"] == Field("children", MapOf(ANY_JSON), {})  # Item inside Item
    assert fields["wrapped"] == Field("wrapped", LONG)  # a wrapper has presence: null
    assert fields["extra"].shape == ANY_JSON and fields["took"].shape == TEXT
    assert fields["word"].default is None and fields["number"].default is None  # a oneof
    assert fields["ratio"] == Field("ratio", Scalar("double"))  # optional: null
    assert fields["blob"] == Field("blob", TEXT, "")
    assert fields["kind"] == Field("kind", TEXT, "PLAIN")


def test_a_schema_that_does_not_map_has_no_typed_view():
    history = Schemas([RegisteredSchema(1, "a-value", 1, PROTOBUF, "syntax = \"proto3\"; x"),
                       RegisteredSchema(2, "b-value", 1, JSON, json.dumps({"type": "string"})),
                       RegisteredSchema(3, "c-value", 1, JSON, "{not json"),
                       RegisteredSchema(4, "e-value", 1, AVRO, json.dumps(
                           {"type": "record", "name": "E",
                            "fields": [{"name": "x", "type": "Undefined"}]}))])
    assert [shapes.topic_shape(history, t) for t in "abcde"] == [None] * 5


def test_references_are_imported_by_their_names():
    common = RegisteredSchema(1, "common", 1, JSON, json.dumps(
        {"definitions": {"Id": {"type": "integer"}}}))
    main = RegisteredSchema(2, "t-value", 1, JSON, json.dumps(
        {"type": "object", "properties": {"id": {"$ref": "common.json#/definitions/Id"}}}),
        references=(SchemaReference("common.json", "common", 1),))
    found = shapes.topic_shape(Schemas([common, main]), "t")
    assert found is not None and found.columns == Struct((Field("id", LONG),))


@pytest.mark.parametrize(("shape", "value", "expected"), [
    (Struct((Field("n", LONG, 0), Field("s", TEXT, "x"))), '{"s": null}', {"n": 0, "s": "x"}),
    (ListOf(Struct((Field("n", LONG, 7),))), '[{}, {"n": 1}]', [{"n": 7}, {"n": 1}]),
    (MapOf(Struct((Field("xs", ListOf(TEXT), []),))), '{"k": {}}', {"k": {"xs": []}}),
])
def test_defaults_are_filled_in_at_any_depth_on_duckdb(shape, value, expected):
    """What a field the writer lacked becomes, however deep (a default inside a list or a
    map's values), rebuilt by the engine's SQL from the one shape."""
    duckdb = pytest.importorskip("duckdb")
    text = json.dumps(typed.structure(shape)).replace("'", "''")
    sql = (f"select {shapes.resolved('v', shape, typed.DIALECT)} from "
           f"(select from_json(?, '{text}') as v)")
    assert duckdb.connect().execute(sql, [value]).fetchone()[0] == expected
