"""A chunk's Arrow decode in two steps (``chunks.ArrowDecode``: the reader's two threads share
it, one after the other) gives what one call gives, wherever the cut falls: the same offsets,
timestamps, views, validity bits (the cut may fall inside a validity byte), null counts, byte
counts, records per batch and errors, on generated batches with nulls and broken batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.decode import chunks
from segtools.decode.source import BufferSource
from segtools.decode.walk import walk
from tests.builders import make_batch

maybe_bytes = st.one_of(st.none(), st.binary(max_size=20))
record = st.fixed_dictionaries({
    "timestamp_delta": st.integers(-5, 5),
    "offset_delta": st.integers(0, 100),
    "key": maybe_bytes,
    "value": maybe_bytes,
    "headers": st.just([]),
})
batch = st.tuples(st.lists(record, max_size=11), st.sampled_from([0, -1]), st.booleans())


def columns(cols: chunks.ArrowColumns) -> list:
    def bits(valid):
        return None if valid is None else bytes(valid)
    return [cols.offset.tolist(), cols.micros.tolist(), bits(cols.micros_valid),
            cols.micros_nulls, cols.key_views.tobytes(), bits(cols.key_valid), cols.key_nulls,
            cols.key_bytes, cols.value_views.tobytes(), bits(cols.value_valid),
            cols.value_nulls, cols.value_bytes, cols.records.tolist()]


@settings(max_examples=150, deadline=None)
@given(st.lists(batch, min_size=1, max_size=6), st.data())
def test_two_steps_decode_what_one_call_decodes(batches, data):
    buf = bytearray()
    for k, (records, base_ts, broken) in enumerate(batches):
        one = bytearray(make_batch(records, base_offset=100 * k, base_timestamp=base_ts))
        if broken and records:
            one[-1] ^= 0x40  # the last record's last byte: a record error, or trailing bytes
        buf += one
    source = BufferSource(bytes(buf))
    table = next(iter(walk(source, verify_crc=True))).table
    arr = source.array
    starts, ends = table.position + 61, table.end
    whole, err, pos = chunks.decode_arrow(arr, table, starts, ends, False)
    cut = data.draw(st.integers(0, len(table)))
    steps = chunks.ArrowDecode(arr, table, starts, ends, False)
    steps.run(cut)
    steps.run(cut)  # a step already taken is not taken again
    cols, err2, pos2 = steps.result()
    assert columns(cols) == columns(whole)
    assert err2.tolist() == err.tolist() and pos2.tolist() == pos.tolist()
    assert len(whole) == sum(whole.records.tolist())
