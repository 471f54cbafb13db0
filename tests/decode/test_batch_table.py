"""The compiled batch table against a per-batch reference walk, on generated and damaged input.

The reference (:mod:`tests.reference_walk`) reads each batch with the construct declarations
and checks CRCs with crcmod/zlib, one Python object per batch, exactly as
``FileLogInputStream.nextBatch`` frames them: slow and obviously right. The table must agree
with it batch for batch and finding for finding (codes, positions, order, messages), through
every source (bytes in hand, a mapped file, ``pread`` windows) and at every chunk size.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segtools.decode.chunks import batch_records, decode
from segtools.decode.source import BufferSource
from segtools.decode.walk import walk
from tests import reference_walk
from tests.fixtures_manifest import LOGS, log_path
from tests.robustness.strategies import SEGMENT_SETTINGS, damaged, legacy_segments, v2_segments


def table_walk(source, rows: int = 65536) -> tuple[list, list]:
    """Small ``rows`` also means small chunks in bytes: both kinds of chunk boundary run."""
    batches, findings = [], []
    chunk_bytes = 4 << 20 if rows == 65536 else 97 * rows
    for chunk in walk(source, verify_crc=True, rows=rows, chunk_bytes=chunk_bytes):
        batches.extend(chunk.table.batches())
        findings.extend(chunk.findings)
    return batches, findings


def check(data: bytes, tmp_path=None, rows: int = 65536) -> None:
    want = reference_walk.walk(data)
    for source in reference_walk.each_source(data, tmp_path):
        assert table_walk(source, rows) == want


@pytest.mark.parametrize("entry", LOGS, ids=[e["case"] for e in LOGS])
def test_fixture_segments(entry, tmp_path):
    check(log_path(entry).read_bytes(), tmp_path)
    check(log_path(entry).read_bytes(), rows=2)




@SEGMENT_SETTINGS
@given(st.data())
def test_generated_v2_segments(tmp_path, data):
    check(data.draw(v2_segments()), tmp_path, rows=data.draw(st.sampled_from([1, 3, 65536])))


@SEGMENT_SETTINGS
@given(st.data())
def test_generated_legacy_segments(tmp_path, data):
    check(data.draw(legacy_segments()), tmp_path)


@SEGMENT_SETTINGS
@given(st.data())
def test_damaged_segments(tmp_path, data):
    base = data.draw(st.one_of(v2_segments(), legacy_segments(),
                               st.sampled_from([log_path(e).read_bytes() for e in LOGS])))
    check(data.draw(damaged(base)), tmp_path, rows=data.draw(st.sampled_from([1, 65536])))


@SEGMENT_SETTINGS
@given(st.data())
def test_records_of_the_table_match_the_reference(data):
    """Deep: each batch's records (and its record-level finding) as the reference decodes
    them with the construct declarations."""
    buf = data.draw(st.one_of(v2_segments(), legacy_segments()))
    buf = data.draw(st.one_of(st.just(buf), damaged(buf)))
    source = BufferSource(buf)
    table = next(iter(walk(source, verify_crc=True))).table
    got = [(br.batch, br.records, br.finding is not None)
           for br in batch_records(decode(source, table))]
    assert got == reference_walk.records(buf, table.batches())


@pytest.mark.parametrize("sealed", [True, False], ids=["mapped", "windows"])
def test_chunks_held_together_keep_their_bytes(tmp_path, monkeypatch, sealed):
    """Buffers are recycled once nothing refers to them: every chunk of a file, all held at
    once (tiny chunks, so there are many), still decodes to the reference's records."""
    from segtools.decode import chunks as chunks_module
    from segtools.storage.segment import Segment

    monkeypatch.setattr(chunks_module, "CHUNK_BYTES", 64)
    monkeypatch.setattr(chunks_module, "PLAIN_CHUNK_BYTES", 64)
    for entry in LOGS:
        data = log_path(entry).read_bytes()
        if not data:
            continue
        path = tmp_path / f"{entry['case']}.log"
        path.write_bytes(data)
        with Segment(path, sealed=sealed) as seg:
            table, _ = seg.table()
            held = list(seg.records(table))
            got = [(br.batch, br.records, br.finding is not None)
                   for br in batch_records(iter(held))]
        assert got == reference_walk.records(data, table.batches()), entry["case"]


def test_the_walk_reads_the_offsets_the_spec_declares(monkeypatch):
    """decode/walk.py checks the compiled walk's named offsets against the construct
    declarations at import; a wrong one must fail that check."""
    from segtools.decode import _walk, walk

    walk._check_layout()
    broken = dict(_walk.LAYOUT, base_timestamp=28)
    monkeypatch.setattr(_walk, "LAYOUT", broken)
    with pytest.raises(AssertionError, match="base_timestamp"):
        walk._check_layout()
