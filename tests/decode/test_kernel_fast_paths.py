"""The record kernel's fast paths against the construct reference, where they could go wrong.

``arrow_v2`` decodes one- and two-byte varints inline (the field at a record's very end
included), gathers validity bits in registers and writes them once per eight records (a
chunk decoded in steps shares the byte at the cut), and checks a batch's CRC in slices just
ahead of the records it decodes. Generated batches put every varint length and its
boundaries in every field (lengths of 63/64 and 8191/8192 bytes, header counts past 63,
deltas up to an int's and a long's limits), and a byte of the records may be replaced, so
that lengths lie; the kernel must give the reference's records (those before a fault) and
its verdict, and the CRC that ``crc32c`` gives over the batch's coverage.
"""

from __future__ import annotations

import ctypes
import mmap

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.codecs import crc32c
from segtools.decode import chunks, walk
from segtools.decode.source import BufferSource
from tests import reference_walk
from tests.builders import make_batch

PROT_NONE = 0

#: Sizes whose zigzag varint changes length (63 -> 1 byte, 64 -> 2, 8191 -> 2, 8192 -> 3).
EDGES = [0, 1, 12, 13, 63, 64, 65, 127, 128, 8191, 8192, 8193]
size = st.one_of(st.sampled_from(EDGES), st.integers(0, 300))
maybe_bytes = st.one_of(st.none(), size.map(lambda n: b"x" * n))
int_edges = [0, 1, 63, 64, 8191, 8192, 2**20 - 1, 2**20, 2**27, 2**31 - 1]
long_edges = [0, 1, -1, 63, -64, 64, 8191, -8192, 2**34, -(2**34), 2**62 - 1, -(2**62)]
record = st.fixed_dictionaries({
    "timestamp_delta": st.one_of(st.sampled_from(long_edges), st.integers(-(2**62), 2**62)),
    "offset_delta": st.one_of(st.sampled_from(int_edges), st.integers(0, 2**31 - 1)),
    "key": maybe_bytes,
    "value": maybe_bytes,
    "headers": st.one_of(
        st.lists(st.tuples(st.binary(max_size=3), st.one_of(st.none(), st.binary(max_size=3))),
                 max_size=3),
        st.integers(63, 70).map(lambda n: [(b"h", None)] * n)),
})


def expected(data: bytes) -> list[tuple]:
    """Per batch: the reference's records as (offset, ms or None, key, value), and whether
    decoding met a fault."""
    batches, _ = reference_walk.walk(data)
    out = []
    for _batch, recs, bad in reference_walk.records(data, batches):
        rows = [(r.offset, r.timestamp if r.timestamp != -1 and
                 abs(r.timestamp) <= 9223372036854775 else None, r.key, r.value)
                for r in recs]
        out.append((rows, bad))
    return out


def _bit(valid: np.ndarray | None, i: int) -> bool:
    return valid is None or bool(valid[i >> 3] >> (i & 7) & 1)


def _view(data: np.ndarray, base: int, view: np.ndarray) -> bytes:
    length = int(view[:4].view(np.int32)[0])
    if length <= 12:
        return view[4:4 + length].tobytes()
    at = base + int(view[12:16].view(np.int32)[0])
    return data[at:at + length].tobytes()


def decoded(data: bytes, cut: int, pending: bool) -> tuple[list[tuple], np.ndarray]:
    """The kernel's records per batch (decoded in two steps, cut before batch ``cut``) and
    the CRC checks it made (``pending``: every batch's CRC left to it)."""
    arr = np.frombuffer(data, np.uint8)
    table = next(iter(walk.walk(BufferSource(data), verify_crc=False))).table
    if pending:
        table.crc_valid[:] = walk.CRC_PENDING
    step = chunks.ArrowDecode(arr, table, table.position + 61, table.end, False, crc=pending)
    step.run(cut)
    cols, err, _ = step.result()
    out, n = [], 0
    for j, count in enumerate(cols.records.tolist()):
        rows = []
        for i in range(n, n + count):
            ms = int(cols.micros[i]) // 1000 if _bit(cols.micros_valid, i) else None
            key = _view(arr, cols.view_base, cols.key_views[i]) \
                if _bit(cols.key_valid, i) else None
            value = _view(arr, cols.view_base, cols.value_views[i]) \
                if _bit(cols.value_valid, i) else None
            rows.append((int(cols.offset[i]), ms, key, value))
        out.append((rows, bool(err[j])))
        n += count
    return out, table.crc_valid.copy()


def crc_checks(data: bytes) -> list[int]:
    """What each batch's CRC check must say: CRC-32C from its attributes (byte 21) to its end."""
    table = next(iter(walk.walk(BufferSource(data), verify_crc=False))).table
    return [int(crc32c(memoryview(data)[p + 21:e]) == c)
            for p, e, c in zip(table.position.tolist(), table.end.tolist(), table.crc.tolist(),
                               strict=True)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(record, max_size=12), min_size=1, max_size=4), st.data())
def test_every_varint_length_and_lying_bytes(batches, data):
    buf = bytearray()
    for k, records in enumerate(batches):
        buf += make_batch(records, base_offset=1000 * k, base_timestamp=1_700_000_000_000)
    if data.draw(st.booleans()):  # a byte of some batch's records replaced: lengths may lie
        batch_at = 0
        for records in batches[:data.draw(st.integers(0, len(batches) - 1))]:
            batch_at += len(make_batch(records))
        first = batch_at + 61
        last = batch_at + 12 + int.from_bytes(buf[batch_at + 8:batch_at + 12], "big")
        if last > first:
            buf[data.draw(st.integers(first, last - 1))] = data.draw(st.integers(0, 255))
    raw = bytes(buf)
    cut = data.draw(st.integers(0, len(batches)))
    for pending in (False, True):
        got, checks = decoded(raw, cut, pending)
        assert got == expected(raw)
        if pending:
            assert checks.tolist() == crc_checks(raw)


big = st.fixed_dictionaries({
    "timestamp_delta": st.integers(0, 100),
    "offset_delta": st.integers(0, 100),
    "key": st.none(),
    "value": st.integers(0, 9000).map(lambda n: bytes(range(256)) * (n // 256) + b"v"),
    "headers": st.just([]),
})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(big, max_size=10), min_size=1, max_size=3), st.data())
def test_crc_checked_in_slices(batches, data):
    """Batches of 61 bytes to 90 KiB (many slices, records longer than a slice): one byte
    flipped anywhere in a batch's coverage, or none, or a lying record count."""
    parts = [make_batch(records, base_offset=100 * k) for k, records in enumerate(batches)]
    hit = data.draw(st.integers(0, len(parts) - 1))
    part = bytearray(parts[hit])
    if data.draw(st.booleans()):  # a byte of the CRC's coverage: attributes to the end
        part[data.draw(st.integers(21, len(part) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    if data.draw(st.booleans()):
        part[57:61] = data.draw(st.sampled_from([-1, -(2**31), 0, 2**31 - 1])).to_bytes(
            4, "big", signed=True)
    parts[hit] = bytes(part)
    raw = b"".join(parts)
    got = decoded(raw, data.draw(st.integers(0, len(batches))), True)[1]
    assert got.tolist() == crc_checks(raw)


def _guarded(size: int) -> tuple[mmap.mmap, np.ndarray]:
    """``size`` writable bytes that end where a page the process may not read begins: a
    kernel that reads one byte past them faults instead of reading a neighbour's bytes."""
    page = mmap.PAGESIZE
    pages = -(-size // page) + 1
    region = mmap.mmap(-1, pages * page)
    whole = np.frombuffer(region, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    guard = whole.ctypes.data + (pages - 1) * page
    assert libc.mprotect(ctypes.c_void_p(guard), ctypes.c_size_t(page), PROT_NONE) == 0
    return region, whole[(pages - 1) * page - size:(pages - 1) * page]


small = st.one_of(st.none(), st.sampled_from(EDGES[:9]).map(lambda n: b"x" * n))
short_record = st.fixed_dictionaries({
    "timestamp_delta": st.sampled_from(long_edges),
    "offset_delta": st.sampled_from(int_edges),
    "key": small,
    "value": small,
    "headers": st.lists(st.tuples(st.binary(max_size=2), small), max_size=2),
})


@settings(max_examples=20, deadline=None)
@given(st.lists(short_record, min_size=1, max_size=3), st.sampled_from([None, 0x80, 0xFF]))
def test_no_read_past_the_bytes_at_any_cut(records, last):
    """A batch cut short at every byte, its last byte as found or a varint's continuation
    byte, ending where readable memory ends (as a window of the file does): the kernel finds
    the fault without reading past the end."""
    buf = make_batch(records, base_timestamp=1_700_000_000_000)
    table = next(iter(walk.walk(BufferSource(buf), verify_crc=False))).table
    region, data = _guarded(len(buf))
    for cut in range(61, len(buf) + 1):
        view = data[len(buf) - cut:]
        view[:] = np.frombuffer(buf[:cut], np.uint8)
        if last is not None:
            view[-1] = last
        for pending in (False, True):
            t = walk.BatchTable(**{**table.columns(), "crc_valid": np.full(
                1, walk.CRC_PENDING if pending else 1, np.int8)})
            cols, err, _ = chunks.decode_arrow(view, t, np.array([61]), np.array([cut]),
                                               True, crc=pending)
            assert len(cols) <= len(records)
            if cut < len(buf) and last is None:
                assert err[0] or len(cols) < len(records)
    assert not region.closed  # unmapped, guard page included, when the test lets go of it
