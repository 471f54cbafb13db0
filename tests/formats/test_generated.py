"""The generated-message engine: every declared schema and version round-trips, and bytes that
break the encoding rules are errors with a position, never a silent partial value."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.formats.internal import cluster_metadata, consumer_offsets, control
from segtools.formats.internal import transaction_state as txn_state
from segtools.formats.internal.generated import (
    INT16,
    INT32,
    STRING,
    UNKNOWN_TAGGED_FIELDS,
    SchemaError,
    UnsupportedVersionError,
    Versions,
    array,
    field,
    message,
    struct_of,
    tagged,
    uuid_from_str,
    uuid_to_str,
)
from tests.forensics import message_values

ALL_SCHEMAS = [
    *{id(m): m for _, k, m in consumer_offsets.RECORD_TYPES.values()}.values(),
    *{id(k): k for _, k, _ in consumer_offsets.RECORD_TYPES.values()}.values(),
    consumer_offsets.CONSUMER_PROTOCOL_SUBSCRIPTION,
    consumer_offsets.CONSUMER_PROTOCOL_ASSIGNMENT,
    txn_state.TRANSACTION_LOG_KEY,
    txn_state.TRANSACTION_LOG_VALUE,
    *cluster_metadata.RECORDS,
    *control.CONTROL_SCHEMAS.values(),
]
CASES = [(m, v) for m in ALL_SCHEMAS for v in range(m.valid.low, m.valid.high + 1)]


@pytest.mark.parametrize(("schema", "version"), CASES,
                         ids=[f"{m.name}-v{v}" for m, v in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_round_trip_every_schema_version(schema, version, data):
    value = data.draw(message_values(schema, version))
    encoded = schema.write(value, version)
    assert schema.read_exact(encoded, version) == value


def test_versions_parse():
    assert str(Versions.parse("0+")) == "0+" and 7 in Versions.parse("3+")
    assert 2 in Versions.parse("1-3") and 4 not in Versions.parse("1-3")
    assert Versions.parse("none").empty and 0 not in Versions.parse("none")
    assert Versions.parse("2") == Versions(2, 2)


def test_offset_commit_value_layouts_by_version():
    """The on-disk order docs/kafka-storage.md §5.1 gives: leaderEpoch after offset from v3, the
    expire timestamp only in v1, compact strings and a tagged section in v4."""
    value = {"offset": 5, "leaderEpoch": 3, "metadata": "x", "commitTimestamp": 9,
             "expireTimestamp": 11}
    w = consumer_offsets.OFFSET_COMMIT_VALUE.write
    assert w(value, 0) == struct.pack(">qh", 5, 1) + b"x" + struct.pack(">q", 9)
    assert w(value, 1) == w(value, 0) + struct.pack(">q", 11)
    assert w(value, 3) == struct.pack(">qih", 5, 3, 1) + b"x" + struct.pack(">q", 9)
    assert w(value, 4) == struct.pack(">qi", 5, 3) + b"\x02x" + struct.pack(">q", 9) + b"\x00"


def test_absent_fields_read_as_their_defaults():
    v1 = consumer_offsets.OFFSET_COMMIT_VALUE.read_exact(
        struct.pack(">qh", 5, 0) + struct.pack(">qq", 9, 11), 1)
    assert v1 == {"offset": 5, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 9,
                  "expireTimestamp": 11}


SAMPLE = message(
    "Sample", "0-2", "1+",
    field("Id", INT32),
    field("Name", STRING, nullable="0+"),
    field("Items", array(struct_of("Item", field("N", INT16))), "0+"),
    tagged("Note", STRING, 0, "1+", nullable="1+", default=None),
    tagged("Level", INT16, 1, "2+", default=-1),
    tagged("Extra", struct_of("Extra", field("A", INT32)), 2, "2+", nullable="2+",
           default=None))


def test_tagged_fields_written_only_when_not_default():
    plain = SAMPLE.write({"id": 1, "name": None, "items": []}, 2)
    assert plain == struct.pack(">i", 1) + b"\x00\x01\x00"  # null name, empty array, 0 tags
    tagged_bytes = SAMPLE.write({"id": 1, "name": "a", "items": [], "level": 7}, 2)
    assert tagged_bytes.endswith(b"\x01\x01\x02\x00\x07")  # one tag: 1, size 2, int16 7
    assert SAMPLE.read_exact(tagged_bytes, 2)["level"] == 7


def test_nullable_tagged_struct_has_a_presence_marker():
    data = SAMPLE.write({"id": 1, "name": "a", "items": [], "extra": {"a": 5}}, 2)
    assert data.endswith(b"\x01\x02\x06\x01" + struct.pack(">i", 5) + b"\x00")
    assert SAMPLE.read_exact(data, 2)["extra"] == {"a": 5}


def test_unknown_tags_are_kept_not_rejected():
    data = SAMPLE.write({"id": 1, "name": "a", "items": [],
                         UNKNOWN_TAGGED_FIELDS: [{"tag": 9, "data": b"zz"}]}, 1)
    value = SAMPLE.read_exact(data, 1)
    assert value[UNKNOWN_TAGGED_FIELDS] == [{"tag": 9, "data": b"zz"}]
    assert SAMPLE.write(value, 1) == data


def test_known_tag_in_a_version_that_lacks_it_is_an_error():
    data = SAMPLE.write({"id": 1, "name": "a", "items": [], "level": 3}, 2)
    with pytest.raises(SchemaError, match=r"tag 1 .* not valid for version 1"):
        SAMPLE.read_exact(data, 1)


def test_tagged_field_size_must_match_its_value():
    good = SAMPLE.write({"id": 1, "name": "a", "items": [], "level": 3}, 2)
    bad = good[:-4] + b"\x03" + good[-3:] + b"\x00"  # declares 3 bytes for an int16
    with pytest.raises(SchemaError):
        SAMPLE.read_exact(bad, 2)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_truncation_is_an_error(version):
    data = SAMPLE.write({"id": 1, "name": "abc", "items": [{"n": 4}, {"n": 5}],
                         "level": 2, "note": "n"}, version)
    for cut in range(len(data)):
        with pytest.raises(SchemaError):
            SAMPLE.read_exact(data[:cut], version)


def test_trailing_bytes_and_bad_lengths():
    data = SAMPLE.write({"id": 1, "name": "a", "items": []}, 0)
    with pytest.raises(SchemaError, match="left after"):
        SAMPLE.read_exact(data + b"\x00", 0)
    with pytest.raises(SchemaError, match="non-nullable"):
        consumer_offsets.OFFSET_COMMIT_KEY.read_exact(b"\xff\xff", 1)
    huge_array = struct.pack(">ih", 1, 0) + struct.pack(">i", 1_000_000)
    with pytest.raises(SchemaError, match="elements"):
        SAMPLE.read_exact(huge_array, 0)
    with pytest.raises(SchemaError, match="longer than 5"):
        SAMPLE.read_exact(struct.pack(">i", 1) + b"\x80" * 6, 1)


def test_unknown_version_is_reported():
    with pytest.raises(UnsupportedVersionError, match="version 5"):
        consumer_offsets.OFFSET_COMMIT_VALUE.read(b"", 5)


def test_uuid_text_form():
    raw = bytes(range(16))
    assert uuid_from_str(uuid_to_str(raw)) == raw
    assert len(uuid_to_str(raw)) == 22
    with pytest.raises(ValueError):
        uuid_from_str("short")
