"""The compiled Avro transcoder against the reference: fastavro's datum rendered by
``avro.plain`` must be the same JSON text, byte for byte, on generated values of every type;
and hostile bytes end as an error for that value, never a crash, a hang or unbounded output."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.payloads import avro
from segtools.payloads.decoded import json_text
from segtools.payloads.errors import BodyMismatch

MONEY = {"type": "record", "name": "Money", "namespace": "t", "fields": [
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20,
                                "scale": 3}},
    {"name": "fixed_amount", "type": {"type": "fixed", "name": "Dec", "size": 8,
                                      "logicalType": "decimal", "precision": 18, "scale": 2}}]}
EVERYTHING = {"type": "record", "name": "All", "namespace": "t", "fields": [
    {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "raw", "type": "bytes"}, {"name": "s", "type": "string"},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
    {"name": "u", "type": ["null", "string", "long", "t.Money"]},
    {"name": "money", "type": "t.Money"},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "nested", "type": {"type": "array", "items": {
        "type": "record", "name": "Node", "fields": [
            {"name": "label", "type": "string"},
            {"name": "next", "type": ["null", "t.Node"]}]}}}]}

UTC = dt.UTC
text = st.text(st.characters(codec="utf-8"), max_size=12)
stamps = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                      timezones=st.just(UTC))
node = st.recursive(st.none(), lambda inner: st.fixed_dictionaries(
    {"label": text, "next": inner}), max_leaves=4)
money = st.fixed_dictionaries({
    "amount": st.decimals(min_value=-10**15, max_value=10**15, places=3,
                          allow_nan=False, allow_infinity=False),
    "fixed_amount": st.decimals(min_value=-10**15, max_value=10**15, places=2,
                                allow_nan=False, allow_infinity=False)})
datums = st.fixed_dictionaries({
    "n": st.none(), "b": st.booleans(), "i": st.integers(-2**31, 2**31 - 1),
    "l": st.integers(-2**63, 2**63 - 1),
    "f": st.floats(width=32), "d": st.floats(),
    "raw": st.binary(max_size=10), "s": text, "fx": st.binary(min_size=4, max_size=4),
    "e": st.sampled_from(["RED", "GREEN", "BLUE"]),
    "arr": st.lists(st.integers(-2**63, 2**63 - 1), max_size=5),
    "m": st.dictionaries(text, st.none() | text, max_size=4),
    "u": st.none() | text | st.integers(-2**63, 2**63 - 1) | money,
    "money": money,
    "day": st.dates(),
    "tm": st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "tu": st.times(),
    "ts": stamps.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "tsu": stamps,
    "lts": st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
             .map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "id": st.uuids().map(str),
    "nested": st.lists(node.filter(lambda x: x is not None), max_size=3)})


def schema_parts():
    named: dict = {}
    fastavro.parse_schema(MONEY, named_schemas=named)
    parsed = fastavro.parse_schema(EVERYTHING, named_schemas=named)
    return parsed, avro.Transcoder(json.dumps(EVERYTHING), [json.dumps(MONEY)])


PARSED, TRANSCODER = schema_parts()


def body_of(datum) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED, datum)
    return out.getvalue()


def reference(body: bytes) -> str:
    return json_text(avro.plain(fastavro.schemaless_reader(io.BytesIO(body), PARSED, None)))


@settings(max_examples=300, deadline=None)
@given(datums)
def test_transcoder_writes_what_fastavro_reads(datum):
    body = body_of(datum)
    assert TRANSCODER(body) == reference(body)


@given(st.lists(datums, min_size=1, max_size=6))
@settings(max_examples=40, deadline=None)
def test_many_values_per_call_keep_their_boundaries(batch):
    bodies = [body_of(d) for d in batch]
    data = np.frombuffer(b"".join(bodies), np.uint8)
    ends = np.cumsum([len(b) for b in bodies])
    starts = ends - [len(b) for b in bodies]
    texts, offsets, errors = TRANSCODER.many(data, starts, ends, 1 << 30)
    assert not errors.any()
    got = [texts[offsets[i]:offsets[i + 1]].decode() for i in range(len(bodies))]
    assert got == [reference(b) for b in bodies]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_hostile_bytes_end_in_an_error_or_valid_json(data):
    try:
        out = TRANSCODER(data)
    except BodyMismatch:
        return
    json.loads(out)


def test_torn_and_trailing_bodies_are_errors():
    good = body_of({"n": None, "b": True, "i": 1, "l": 2, "f": 1.5, "d": 2.5, "raw": b"x",
                    "s": "s", "fx": b"abcd", "e": "RED", "arr": [1], "m": {}, "u": None,
                    "money": {"amount": decimal.Decimal("1.000"),
                              "fixed_amount": decimal.Decimal("2.00")},
                    "day": dt.date(2024, 5, 1), "tm": dt.time(1, 2, 3), "tu": dt.time(4),
                    "ts": dt.datetime(2024, 5, 1, tzinfo=UTC),
                    "tsu": dt.datetime(2024, 5, 1, tzinfo=UTC),
                    "lts": dt.datetime(2024, 5, 1), "id": str(uuid.uuid4()), "nested": []})
    json.loads(TRANSCODER(good))
    for bad in (good[:-1], good + b"\x00", good[: len(good) // 2]):
        with pytest.raises(BodyMismatch):
            TRANSCODER(bad)


def test_a_huge_count_of_empty_items_is_refused_quickly():
    nulls = avro.Transcoder('{"type": "array", "items": "null"}', [])
    # one block claiming 2^62 null items: zero bytes each, so only the output cap stops it
    huge = bytes([0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]) + b"\x00"
    with pytest.raises(BodyMismatch, match="MiB"):
        nulls(huge)
    longs = avro.Transcoder('{"type": "array", "items": "long"}', [])
    with pytest.raises(BodyMismatch):
        longs(bytes([0xFE, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x02" * 10)


def test_recursive_data_nests_no_deeper_than_the_cap():
    linked = avro.Transcoder(json.dumps({"type": "record", "name": "L", "fields": [
        {"name": "next", "type": ["null", "L"]}]}), [])
    assert linked(b"\x02\x02\x00") == '{"next":{"next":{"next":null}}}'
    with pytest.raises(BodyMismatch, match="deep"):
        linked(b"\x02" * 10_000 + b"\x00")


def test_wide_decimals_are_exact():
    """decimal(38, 4): no 28-digit context rounds it (Avro's decimal is exact)."""
    wide = avro.Transcoder(json.dumps({"type": "bytes", "logicalType": "decimal",
                                       "precision": 38, "scale": 4}), [])
    unscaled = -(10**37) - 123456789
    raw = unscaled.to_bytes(16, "big", signed=True)
    assert wide(bytes([len(raw) * 2]) + raw) == '"-1000000000000000000000000000012345.6789"'


def _zigzag(v: int) -> bytes:
    raw = (v << 1) ^ (v >> 63)
    out = bytearray()
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


@pytest.mark.parametrize(("logical", "stored", "shown"), [
    # Java's Instant.ofEpochMilli / LocalDate.ofEpochDay print these (jshell, Java 17); the
    # fraction keeps this page's six digits
    ("timestamp-millis", 2**63 - 1, "+292278994-08-17T07:12:55.807000Z"),
    ("timestamp-millis", -2**63, "-292275055-05-16T16:47:04.192000Z"),
    ("timestamp-millis", -62135596800001, "0000-12-31T23:59:59.999000Z"),
    ("timestamp-micros", 2**62, "+148108-07-06T14:00:27.387904Z"),
    ("local-timestamp-millis", 253402300800000, "+10000-01-01T00:00:00"),
    ("date", -2**31, "-5877641-06-23"),
    ("date", 2**31 - 1, "+5881580-07-11"),
    ("time-millis", 86400000, 86400000),
    ("time-micros", -1, -1),
])
def test_a_sentinel_date_or_time_is_shown_not_a_body_mismatch(logical, stored, shown):
    """Long.MAX_VALUE for "never" is a valid datum: the record was lost to
    payload_body_mismatch (years past Python's 1..9999, times past a day)."""
    base = "int" if logical in ("date", "time-millis") else "long"
    transcoder = avro.Transcoder(json.dumps({"type": base, "logicalType": logical}), [])
    assert json.loads(transcoder(_zigzag(stored))) == shown
