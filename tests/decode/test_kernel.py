"""The record kernel against the construct reference, on generated batches.

Batches are built two independent ways: with the construct spec, and with kafka-python's own
builder. Each is decoded by the reference (construct) and by the kernel; they must agree on
every field of every record.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from segtools.decode import _records, chunks
from segtools.decode.table import BatchTable
from segtools.fetch import arrow as arrow_module
from segtools.formats import batch as v2
from segtools.formats.varint import Varint
from tests.builders import make_batch
from tests.decoding import batches_of, records_of

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.binary(max_size=8), maybe_bytes)
record = st.fixed_dictionaries({
    "timestamp_delta": st.integers(-(2**40), 2**40),
    "offset_delta": st.integers(0, 2**31 - 1),
    "key": maybe_bytes,
    "value": maybe_bytes,
    "headers": st.lists(header, max_size=3),
})
codec = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])


def reference(batch_bytes: bytes):
    parsed = v2.RecordBatch.parse(batch_bytes)
    h = parsed.header
    from segtools.codecs import Compression, decompress
    payload = decompress(Compression(h.attributes & 7), parsed.payload)
    out = []
    for r in v2.parse_records(payload, h.records_count):
        ts = h.max_timestamp if h.attributes & 8 else h.base_timestamp + r.timestamp_delta
        out.append((h.base_offset + r.offset_delta, ts, r.key, r.value,
                    tuple((k.decode("utf-8", "replace"), v) for k, v in
                          ((x.key, x.value) for x in r.headers))))
    return out


def via_kernel(buf: bytes):
    out = []
    for br in records_of(buf):
        assert br.finding is None, br.finding
        out += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in br.records]
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(record, max_size=30), codec, st.booleans(),
       st.integers(0, 2**50), st.integers(-(2**40), 2**40))
def test_kernel_agrees_with_construct_reference(records, codec, lat, base_offset, base_ts):
    buf = make_batch(records, base_offset=base_offset, base_timestamp=base_ts, codec=codec,
                     log_append_time=lat)
    assert via_kernel(buf) == reference(buf)


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=20), st.sampled_from([0, 1, 2, 3, 4]))
def test_kernel_agrees_with_kafka_python_builder(records, codec_id):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec_id,
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 24)
    for i, r in enumerate(records):
        builder.append(i, timestamp=1_600_000_000_000 + abs(r["timestamp_delta"]) % 10**9,
                       key=r["key"], value=r["value"],
                       headers=[(k.decode("latin-1"), v) for k, v in r["headers"]])
    buf = bytes(builder.build())
    got = via_kernel(buf)
    assert got == reference(buf)
    assert [g[2] for g in got] == [r["key"] for r in records]


def test_varint_bounds_match_java():
    # a 5-byte varint whose top bits overflow an int is truncated as Java does
    buf = np.frombuffer(bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x7F]), np.uint8)
    value, pos = _records.varint(buf, 0, 5, 5)
    assert pos == 5
    assert value == Varint.parse(bytes(buf))
    # six continuation bytes: too long for an int
    buf = np.frombuffer(bytes([0x80] * 5 + [0x01]), np.uint8)
    assert _records.varint(buf, 0, 6, 5)[1] == -2


def test_lying_record_count_does_not_allocate():
    buf = bytearray(make_batch([dict(timestamp_delta=0, offset_delta=0, key=b"k", value=b"v",
                                     headers=[])]))
    buf[57:61] = (2**31 - 1).to_bytes(4, "big")
    starts, ends = np.array([61]), np.array([len(buf)])
    assert chunks.record_capacity(starts, ends, np.array([2**31 - 1])) <= len(buf)
    assert _records.capacity(starts, ends, np.array([2**31 - 1], np.int32),
                             _records.MIN_RECORD_SIZE) <= len(buf)
    table = BatchTable.from_batches(batches_of(bytes(buf)))
    cols, err_code, _ = chunks.decode_v2(np.frombuffer(bytes(buf), np.uint8), table, starts,
                                         ends)
    assert len(cols) == 1 and err_code[0] == _records.ERR_TRUNCATED


def _spans_as_arrow(buf: bytes, cut: int | None, lie: int | None):
    """One uncompressed batch (optionally cut short or with a lying count) decoded both ways:
    the span kernel and the Arrow kernel, each as plain Python values."""
    data = bytearray(buf)
    if lie is not None:
        data[57:61] = lie.to_bytes(4, "big", signed=True)
    if cut is not None:
        data = data[:max(61, len(data) - cut)]
    arr = np.frombuffer(bytes(data) + bytes(16), np.uint8)[:len(data)]  # bytes after: a window
    table = BatchTable.from_batches(batches_of(buf))
    starts, ends = np.array([61]), np.array([len(data)])
    table = table.take(slice(0, 1))
    count = table.count.copy()
    if lie is not None:
        count[0] = lie
    table = BatchTable(**{**table.columns(), "count": count})
    spans, span_err, span_pos = chunks.decode_v2(arr, table, starts, ends)
    cols, err, pos = chunks.decode_arrow(arr, table, starts, ends, headers=True)
    return spans, span_err, span_pos, cols, err, pos


@settings(max_examples=150, deadline=None)
@given(st.lists(record, max_size=30), st.booleans(), st.integers(0, 2**50),
       st.sampled_from([-1, 0, 2**40, 2**62, -(2**62)]), st.one_of(st.none(), st.integers(1, 60)),
       st.one_of(st.none(), st.integers(-3, 40)))
def test_arrow_kernel_agrees_with_span_kernel(records, lat, base_offset, base_ts, cut, lie):
    """The Arrow kernel (one pass into views, microseconds and validity bits) decodes what the
    span kernel decodes, record for record, with the same errors, on whole, cut and lying
    batches; timestamps are null where Kafka has none (-1) or microseconds overflow."""
    buf = make_batch(records, base_offset=base_offset, base_timestamp=base_ts,
                     log_append_time=lat)
    spans, span_err, span_pos, cols, err, pos = _spans_as_arrow(buf, cut, lie)
    assert (err.tolist(), pos.tolist()) == (span_err.tolist(), span_pos.tolist())
    n = len(spans)
    assert len(cols) == n and cols.records.tolist() == [n]
    assert cols.offset.tolist() == spans.offset.tolist()
    ts = arrow_module.micros_array(cols.micros, cols.micros_valid, cols.micros_nulls)
    assert ts.to_pylist() == arrow_module.timestamps_ms(spans.timestamp).to_pylist()
    for views, valid, nulls, nbytes, pos_, len_ in (
            (cols.key_views, cols.key_valid, cols.key_nulls, cols.key_bytes, spans.key_pos,
             spans.key_len),
            (cols.value_views, cols.value_valid, cols.value_nulls, cols.value_bytes,
             spans.value_pos, spans.value_len)):
        expected = [None if ln < 0 else bytes(spans.data[p:p + ln]) for p, ln in
                    zip(pos_.tolist(), len_.tolist(), strict=True)]
        for kind in (pa.binary_view(), pa.binary()):
            got = arrow_module.views_array(cols.data, cols.view_base, views, valid, nulls,
                                           nbytes, kind)
            got.validate(full=True)
            assert got.to_pylist() == expected
    assert cols.headers_pos.tolist() == spans.headers_pos.tolist()
    assert cols.headers_count.tolist() == spans.headers_count.tolist()
