"""Regression tests for the bugs the robustness work found and fixed in the core (each test
names the input class that found it; docs/robustness.md lists them)."""

from __future__ import annotations

import os
import struct
import zlib

import cramjam
import numpy as np
import pytest

from segtools import codecs
from segtools.decode import legacy, walk
from segtools.decode.source import BufferSource
from segtools.errors import DecompressionLimitError, SegtoolsError
from segtools.storage import summary
from segtools.storage.index import OffsetIndex
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment, base_offset_from_name
from segtools.storage.source import MappedSource, WindowSource, zero_from
from tests.builders import make_batch
from tests.decoding import batches_of
from tests.fixtures_manifest import LEGACY, SAMPLE
from tests.robustness.hostile import legacy_message


@pytest.fixture
def small_big_batch(monkeypatch):
    """Batches past BIG_BATCH are checksummed in windows; make that 4 KiB."""
    monkeypatch.setattr(walk, "BIG_BATCH", 4096)


def _crc_valid(data: bytes, tmp_path) -> list[list[int]]:
    """``crc_valid`` of every batch through each source: bytes, mapping, pread windows."""
    path = tmp_path / "x.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        sources = [BufferSource(data), MappedSource(fd, len(data)), WindowSource(fd, len(data))]
        return [[int(v) for c in walk.walk(src) for v in c.table.crc_valid] for src in sources]
    finally:
        os.close(fd)


def test_big_batch_crc_is_summed_in_windows(tmp_path, small_big_batch):
    """Found by a 2 GiB sparse batch: the CRC mapped all 2 GiB resident (RSS +2048 MiB). A
    batch past BIG_BATCH is now summed over windows, pages released behind: the verdict must
    not change, on every source."""
    recs = [dict(timestamp_delta=0, offset_delta=i, key=None, value=bytes(3000), headers=[])
            for i in range(8)]
    good = make_batch(recs)
    assert len(good) > 4 * 4096
    bad = bytearray(good)
    bad[-1] ^= 1
    small = make_batch(recs[:1])
    assert _crc_valid(good + small, tmp_path) == [[1, 1]] * 3
    assert _crc_valid(bytes(bad) + small, tmp_path) == [[0, 1]] * 3


def test_zero_scan_skips_holes_and_finds_data(tmp_path):
    """Same class (a preallocated 1 GiB segment is a 1 GiB run of zeros)."""
    buf = bytearray(50_000)
    assert BufferSource(bytes(buf)).zero_from(10, 50_000) is None
    buf[49_999] = 1
    assert BufferSource(bytes(buf)).zero_from(10, 50_000) == 49_999
    assert BufferSource(bytes(buf)).zero_from(10, 49_999) is None
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.truncate(64 << 20)
        f.seek(40 << 20)
        f.write(b"\x07")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert zero_from(fd, 0, 40 << 20) is None
        assert zero_from(fd, 0, 64 << 20) == 40 << 20
    finally:
        os.close(fd)


def test_sparse_index_garbage_after_a_hole_is_still_found(tmp_path):
    """Found by an index claiming 10^9 entries (8 GB of holes): the zero scan read every byte
    (22 s). Holes are now skipped with SEEK_DATA; data after a hole must still be seen."""
    path = tmp_path / "00000000000000000000.index"
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 1, 0))
        f.truncate(8 << 20)
        f.seek(5 << 20)
        f.write(b"\x07")
    with OffsetIndex(path, 0) as oi:
        assert oi.valid_entries == 1 and oi.first_garbage_position == 5 << 20
        assert not oi.trusted
    os.truncate(path, 4 << 20)
    with OffsetIndex(path, 0) as oi:
        assert oi.first_garbage_position is None and oi.is_preallocated


def test_legacy_flood_shallow_walk_keeps_no_records():
    """Found by one gzip wrapper of a million empty messages: the shallow walk built every
    Record to learn the first offset (8.6 s, +277 MiB). The walk now lays out the inner
    headers only (compiled) and agrees with the deep decode."""
    inner = b"".join(legacy_message(1, 0, None, i) for i in range(50))
    entry = np.frombuffer(legacy_message(1, 1, zlib.compress(inner, wbits=31), 1049), np.uint8)
    assert legacy.wrapper_base_offset(entry, 0, len(entry)) == 1000
    assert int(legacy.wrapper_messages(entry, 0, len(entry)).offset[0]) == 1000
    (batch,) = batches_of(entry.tobytes())
    assert batch.base_offset == 1000 and batch.last_offset == 1049


def test_legacy_base_offset_matches_deep_decode_on_every_fixture():
    for log in sorted(LEGACY.glob("*/*.log")):
        data = np.frombuffer(log.read_bytes(), np.uint8)
        for b in batches_of(data.tobytes()):
            if b.compression != "none":
                try:
                    first = int(legacy.wrapper_messages(data, b.position, b.size).offset[0])
                except SegtoolsError:  # the corrupt fixture: both refuse it
                    with pytest.raises(SegtoolsError):
                        legacy.wrapper_base_offset(data, b.position, b.size)
                    continue
                assert legacy.wrapper_base_offset(data, b.position, b.size) == first \
                    == b.base_offset


def test_unicode_digit_segment_name_is_not_a_base_offset():
    """Found by the ``dir_names`` target: '²'.isdigit() is True, int('²') raises."""
    assert base_offset_from_name("0².log") is None
    assert base_offset_from_name("٣.log") is None
    assert base_offset_from_name("00000000000000000042.log.deleted") == 42


def test_snappy_cap_error_names_the_cap():
    """Found by the ``codecs`` target: the second xerial chunk overflowing the cap was
    reported against the remaining budget ("the 1-byte cap")."""
    chunk = bytes(cramjam.snappy.compress_raw(b"a" * 40))
    xerial = (b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
              + (struct.pack(">i", len(chunk)) + chunk) * 2)
    with pytest.raises(DecompressionLimitError, match="the 41-byte cap"):
        codecs.unsnappy(xerial, 41)


def test_summary_mtime_comes_from_the_open_file(monkeypatch, tmp_path):
    """Found by the live-broker test: ``summarize`` stat'ed the path after opening it, so
    retention deleting the file in between raised FileNotFoundError ("internal error")."""
    import shutil

    pdir = tmp_path / "orders-0"
    shutil.copytree(SAMPLE / "orders.v2-eu-0", pdir)
    files = load_partition_dir(pdir).segments[0]
    expected = os.stat(files.log).st_mtime_ns // 1_000_000

    class Vanishing(Segment):
        def __init__(self, path, **kw):
            super().__init__(path, **kw)
            os.unlink(path)  # retention strikes right after the open

    monkeypatch.setattr(summary, "Segment", Vanishing)
    s = summary.summarize(files, is_active=False)
    assert s.mtime_ms == expected and s.batch_count == 1
