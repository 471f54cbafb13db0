"""A directory of schema files for the payloads tree in which ``customers-value`` (Protobuf)
and ``events-value`` (JSON Schema) have a second version: the tree's records were written
with the first, so a typed view (which reads the latest) resolves every row from an older
version. Version 1 is the tree's own text (its ``_schemas`` topic), version 2 is derived
from it here; the ids stay the tree's, so the records still decode."""

from __future__ import annotations

import json
from pathlib import Path

import segtools
from tests.fixtures_manifest import FIXTURES

PAYLOADS = FIXTURES / "logdirs" / "payloads"

#: customers-value v2: ``emails`` removed (its number reserved), three fields added: one
#: without presence (proto3 reads its zero value from an older writer), one ``optional``
#: (null) and a map (empty)
PROTO_EMAILS = "  repeated string emails = 6;\n"
PROTO_ADDED = ("  reserved 6;\n  string phone = 7;\n  optional int32 score = 8;\n"
               "  map<string, int64> counters = 9;\n")


def events_v2(v1: dict) -> dict:
    """events-value v2: ``props`` removed, ``count`` and ``place`` (a ``$ref`` into
    ``$defs``) added."""
    properties = {k: v for k, v in v1["properties"].items() if k != "props"}
    properties["count"] = {"type": "integer"}
    properties["place"] = {"$ref": "#/$defs/Place"}
    return {**v1, "properties": properties,
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def write(directory: Path) -> Path:
    """The schema files under ``directory``; returns it."""
    history = segtools.open(PAYLOADS).schema_history()
    by_subject = {v.subject: v for v in history.versions if v.version == 1}
    address = by_subject["address"]
    customers = by_subject["customers-value"]
    events = by_subject["events-value"]
    assert PROTO_EMAILS in customers.schema
    (directory / "shop" / "common").mkdir(parents=True)
    (directory / "shop" / "common" / "address.proto").write_text(address.schema)
    for subject, schema, v2, suffix in (
            ("customers-value", customers, customers.schema.replace(PROTO_EMAILS, PROTO_ADDED),
             ".proto"),
            ("events-value", events, json.dumps(events_v2(json.loads(events.schema))),
             ".json")):
        (directory / f"{schema.id}{suffix}").write_text(schema.schema)
        (directory / subject).mkdir()
        (directory / subject / f"1{suffix}").write_text(schema.schema)
        (directory / subject / f"2{suffix}").write_text(v2)
    return directory
