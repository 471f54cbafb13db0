"""Hostile bytes end in a value, a finding, or a typed error; never a crash, hang or balloon."""

from __future__ import annotations

import os
import struct

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.model import Batch
from tests.builders import make_batch
from tests.decoding import batches_of, records_of, walk_items

RECS = [dict(timestamp_delta=i, offset_delta=i, key=b"k%d" % i, value=os.urandom(20),
             headers=[(b"h", b"v")]) for i in range(5)]
SEGMENT = (make_batch(RECS, base_offset=0, codec="none")
           + make_batch(RECS, base_offset=5, codec="zstd")
           + make_batch(RECS, base_offset=10, codec="gzip"))


def read_all(buf: bytes, limit: int = 1 << 20):
    """Shallow + deep; returns (batches, findings, records)."""
    items = walk_items(buf, limit=limit)
    batches = [i for i in items if isinstance(i, Batch)]
    findings = [i for i in items if isinstance(i, Finding)]
    records = []
    for br in records_of(buf, batches, limit=limit):
        records += br.records
        if br.finding:
            findings.append(br.finding)
    return batches, findings, records


def test_intact_segment_reads_clean():
    batches, findings, records = read_all(SEGMENT)
    assert len(batches) == 3 and not findings and len(records) == 15


def test_truncation_at_every_byte():
    full = len(SEGMENT)
    for cut in range(full):
        batches, findings, _ = read_all(SEGMENT[:cut])
        assert all(b.end <= cut for b in batches)
        if cut and sum(b.size for b in batches) != cut:
            assert findings and findings[-1].code in ("truncated_tail", "zero_filled_tail")


def test_every_byte_flip_under_the_crc_is_caught():
    starts = [b.position for b in batches_of(SEGMENT)]
    for pos in range(len(SEGMENT)):
        buf = bytearray(SEGMENT)
        buf[pos] ^= 0x5A
        _, findings, _ = read_all(bytes(buf))
        relative = pos - max(s for s in starts if s <= pos)
        if relative >= 21:  # attributes onwards are under the CRC-32C
            assert any(f.code == "crc_mismatch" for f in findings), pos


def test_two_gib_length_field_is_a_truncated_tail():
    buf = struct.pack(">qiib", 0, 2**31 - 1, 0, 2) + bytes(100)
    _, findings, _ = read_all(buf)
    assert [f.code for f in findings] == ["truncated_tail"]


def test_zero_filled_tail_is_info_not_error():
    _, findings, records = read_all(SEGMENT + bytes(4096))
    assert [(f.code, str(f.severity)) for f in findings] == [("zero_filled_tail", "info")]
    assert len(records) == 15


def test_zstd_bomb_inside_a_batch_is_a_finding():
    payload = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    from segtools.formats.batch import build_batch
    buf = build_batch(base_offset=0, records_payload=payload, records_count=1,
                      last_offset_delta=0, attributes=4)
    _, findings, records = read_all(buf, limit=1 << 20)
    assert [f.code for f in findings] == ["corrupt_compressed_payload"] and not records


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes(data):
    try:
        read_all(data)
    except SegtoolsError:
        pytest.fail("random bytes should give findings, not exceptions")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(SEGMENT) - 1), st.binary(min_size=1, max_size=8))
def test_random_splices(pos, junk):
    buf = SEGMENT[:pos] + junk + SEGMENT[pos + len(junk):]
    read_all(buf)
