"""CRCs left by the walk to the record kernel (``walk(leave_crc=True)``), then settled.

A walk that leaves v2 batches' CRCs to the reader, whose record kernel checks some of them
while decoding (any subset: the batches a consumer decodes) and :func:`walk.checked` the rest,
must give the batch table and the findings (codes, positions, order, messages) of the
per-batch reference walk (:mod:`tests.reference_walk`), through every source and chunk size,
on generated, damaged and Kafka-written segments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from segtools.codecs import crc32c
from segtools.decode import chunks, walk
from segtools.decode.chunks import Layout
from segtools.decode.source import BufferSource
from segtools.decode.table import BatchTable
from tests import reference_walk
from tests.builders import make_batch
from tests.fixtures_manifest import LOGS, log_path
from tests.robustness.strategies import SEGMENT_SETTINGS, damaged, legacy_segments, v2_segments


@pytest.fixture(autouse=True)
def leave_every_crc(monkeypatch):
    """Every v2 batch's CRC is left to the reader, however small the batch."""
    monkeypatch.setattr(walk, "LEAVE_CRC_FROM", 0)


def left_walk(source, decoded: float, rows: int = 65536) -> tuple[list, list]:
    """The walk with its CRCs left to the reader: the first ``decoded`` share of each chunk's
    batches decoded with the kernel checking their CRCs, then the chunk settled."""
    batches, findings = [], []
    chunk_bytes = 4 << 20 if rows == 65536 else 97 * rows
    for chunk in walk.walk(source, verify_crc=True, rows=rows, chunk_bytes=chunk_bytes,
                           leave_crc=True):
        t = chunk.table
        if chunk.left is not None and len(t):
            assert set(np.flatnonzero(t.crc_valid == walk.CRC_PENDING)) == set(chunk.left)
            some = t.take(slice(0, int(len(t) * decoded)))  # a view: checks land in `t`
            if len(some):
                list(chunks.decode(source, some, layout=Layout(arrow=True, crc=True)))
        chunk = walk.checked(chunk, source)
        assert not (chunk.table.crc_valid == walk.CRC_PENDING).any()
        batches.extend(chunk.table.batches())
        findings.extend(chunk.findings)
    return batches, findings


def check(data: bytes, tmp_path=None, rows: int = 65536, decoded: float = 0.5) -> None:
    want = reference_walk.walk(data)
    for source in reference_walk.each_source(data, tmp_path):
        assert left_walk(source, decoded, rows) == want


@pytest.mark.parametrize("entry", LOGS, ids=[e["case"] for e in LOGS])
def test_fixture_segments(entry, tmp_path):
    for decoded in (0.0, 0.5, 1.0):
        check(log_path(entry).read_bytes(), tmp_path, decoded=decoded)
    check(log_path(entry).read_bytes(), rows=2)




@SEGMENT_SETTINGS
@given(st.data())
def test_generated_segments(tmp_path, data):
    check(data.draw(st.one_of(v2_segments(), legacy_segments())), tmp_path,
          rows=data.draw(st.sampled_from([1, 3, 65536])),
          decoded=data.draw(st.sampled_from([0.0, 0.3, 1.0])))


@SEGMENT_SETTINGS
@given(st.data())
def test_damaged_segments(tmp_path, data):
    """Corrupt bytes anywhere (a bad CRC mid-segment among them): each mismatch is found by
    whichever side checks it, and reported where the walk would report it."""
    base = data.draw(st.one_of(v2_segments(), legacy_segments(),
                               st.sampled_from([log_path(e).read_bytes() for e in LOGS])))
    check(data.draw(damaged(base)), tmp_path, rows=data.draw(st.sampled_from([1, 65536])),
          decoded=data.draw(st.sampled_from([0.0, 0.5, 1.0])))


def _some_records(n: int) -> list[dict]:
    return [{"timestamp_delta": i, "offset_delta": i, "key": b"k%d" % i, "value": b"v" * 50,
             "headers": []} for i in range(n)]


def test_the_kernel_checks_only_the_crcs_left_to_it():
    """The record kernel computes a batch's CRC (from its attributes to its end, the 40 bytes
    before its records included) only where the walk left it; a check already made stays."""
    good = make_batch(_some_records(3), base_offset=0)
    bad = bytearray(make_batch(_some_records(4), base_offset=3))
    bad[-10] ^= 0xFF  # a byte of the last value: the CRC no longer matches, the records parse
    third = make_batch(_some_records(2), base_offset=7)
    data = good + bytes(bad) + third
    table = next(iter(walk.walk(BufferSource(data), verify_crc=True))).table
    assert table.crc_valid.tolist() == [1, 0, 1]
    assert crc32c(memoryview(data)[21:len(good)]) == int(table.crc[0])
    table.crc_valid[:] = [walk.CRC_PENDING, walk.CRC_PENDING, 1]
    table = BatchTable(**{**table.columns(), "crc": table.crc.copy()})
    table.crc[2] ^= 1  # were it checked again, it would fail
    arr = np.frombuffer(data, np.uint8)
    cols, err, _ = chunks.decode_arrow(arr, table, table.position + 61, table.end, False,
                                       crc=True)
    assert table.crc_valid.tolist() == [1, 0, 1]
    assert len(cols) == 9 and not err.any()
    pending = np.full(3, walk.CRC_PENDING, np.int8)
    chunks.decode_arrow(arr, BatchTable(**{**table.columns(), "crc_valid": pending}),
                        table.position + 61, table.end, False)  # not asked to check
    assert (pending == walk.CRC_PENDING).all()


def test_a_batch_the_source_no_longer_holds_is_left_unchecked():
    """Settling reads the batches' bytes again: those the source no longer holds whole (the
    file shrank) are left unchecked (-1, no finding), the others checked."""
    first = make_batch(_some_records(3), base_offset=0)
    second = bytearray(make_batch(_some_records(3), base_offset=3))
    second[-10] ^= 0xFF
    data = first + bytes(second)
    chunk = next(iter(walk.walk(BufferSource(data), verify_crc=True, leave_crc=True)))
    assert chunk.table.crc_valid.tolist() == [walk.CRC_PENDING] * 2
    settled = walk.checked(chunk, BufferSource(data[:len(first) + 10]))
    assert settled.table.crc_valid.tolist() == [1, -1]
    assert settled.findings == ()
