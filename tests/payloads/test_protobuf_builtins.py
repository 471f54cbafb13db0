"""Schema Registry compiles a ``.proto`` importing one of its built-in dependencies without a
reference (Google's well-known and common types, Confluent's ``meta`` and ``decimal``):
segtools must decode payloads of such schemas too."""

from __future__ import annotations

from pathlib import Path

import pytest

import segtools
from segtools.payloads import framing
from segtools.payloads.decoder import PayloadDecoder
from segtools.payloads.errors import PayloadError
from segtools.payloads.schemas import RegisteredSchema, SchemaReference, Schemas

pytest.importorskip("grpc_tools")

TREE = Path(__file__).resolve().parents[2] / "fixtures" / "logdirs" / "payloads"

PRICE = """syntax = "proto3";
package shop;

import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
import "google/protobuf/wrappers.proto";

option (confluent.file_meta) = {doc: "prices"};

message Price {
  option (confluent.message_meta) = {tags: ["PII"]};
  confluent.type.Decimal amount = 1 [(confluent.field_meta) = {
    doc: "the amount", params: [{key: "unit", value: "EUR"}]}];
  google.type.Date valid_from = 2;
  google.protobuf.Int64Value stock = 3;
  Kind kind = 4 [(confluent.field_meta).tags = "internal"];
  enum Kind {
    option (confluent.enum_meta) = {doc: "kinds"};
    LIST = 0;
    SALE = 1 [(confluent.enum_value_meta) = {doc: "reduced"}];
  }
}
"""
# amount {value: 1250 (0x04E2), precision: 9, scale: 2}, valid_from {2024, 5, 1}, stock 7,
# kind SALE: written field by field in Protobuf's wire format
BODY = bytes.fromhex("0a080a0204e2100918021207" "08e80f10051801" "1a020807" "2001")


def decoded(schema: RegisteredSchema, *also: RegisteredSchema):
    decoder = PayloadDecoder(Schemas([schema, *also]))
    return decoder.decode(framing.frame(schema.id, BODY, (0,)), topic="prices", is_key=False)


def test_builtin_imports_compile_without_references():
    found = decoded(RegisteredSchema(11, "prices-value", 1, "PROTOBUF", PRICE))
    assert found.schema.message == "shop.Price"
    assert found.value == {
        "amount": {"value": "BOI=", "precision": 9, "scale": 2},  # the proto3 JSON mapping
        "valid_from": {"year": 2024, "month": 5, "day": 1},
        "stock": "7",  # Int64Value: its value, an int64 as a string
        "kind": "SALE"}


def test_a_reference_of_a_builtin_name_is_the_registry_s_record():
    """A schema registered with a reference named like a built-in compiles with the
    referenced text (here a ``Meta`` without ``tags``: the option using it cannot compile)."""
    narrow = RegisteredSchema(12, "meta", 1, "PROTOBUF",
                              'syntax = "proto3"; package confluent; '
                              'import "google/protobuf/descriptor.proto"; '
                              "message Meta { string doc = 1; } "
                              "extend google.protobuf.FieldOptions { Meta field_meta = 1088; }")
    uses = RegisteredSchema(13, "prices-value", 1, "PROTOBUF", PRICE,
                            (SchemaReference("confluent/meta.proto", "meta", 1),))
    with pytest.raises(PayloadError) as e:
        decoded(uses, narrow)
    assert e.value.code == "payload_schema_invalid"



def test_arrow_names_the_protobuf_message():
    """The message the frame's indexes chose, by its full name, in ``*_schema_message`` (the
    CLI's ``"message"``); null for the other formats."""
    tree = segtools.open(TREE)
    customers = tree.to_arrow(decode=True, topics="customers").read_all()
    assert customers.column("value_schema_message").to_pylist() == \
        ["shop.Customer", "shop.Shipment"] * 4
    assert customers.column("key_schema_message").null_count == customers.num_rows
    orders = tree.to_arrow(decode=True, topics="orders").read_all()
    assert orders.column("value_schema_message").null_count == orders.num_rows
    again = segtools.decode_table(customers.select(["topic", "key", "value"]), [TREE])
    assert again.column("value_schema_message").to_pylist() == \
        customers.column("value_schema_message").to_pylist()
    assert next(tree.records(decode=True, topics="customers"))["value_schema_message"] == \
        "shop.Customer"
