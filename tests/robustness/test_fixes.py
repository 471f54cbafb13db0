"""Regression tests for the bugs the robustness work found and fixed in the core (each test
names the input class that found it; the README's Robustness section lists them)."""

from __future__ import annotations

import mmap
import os
import struct
import zlib

import cramjam
import numpy as np
import pytest

from segtools import codecs, records
from segtools.errors import DecompressionLimitError, SegtoolsError
from segtools.model import Batch
from segtools.records import iter_batches, legacy_base_offset, legacy_inner_records
from segtools.storage import summary
from segtools.storage.index import OffsetIndex
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment, base_offset_from_name
from tests.fixtures_manifest import LEGACY, SAMPLE
from tests.robustness.hostile import legacy_message


@pytest.fixture
def small_windows(monkeypatch):
    """Long-range reads switch to windows past RELEASE_BYTES; make that 4 KiB."""
    monkeypatch.setattr(records, "RELEASE_BYTES", 4096)


@pytest.mark.parametrize("crc", [codecs.crc32c, codecs.crc32])
def test_windowed_checksum_equals_one_shot(tmp_path, small_windows, crc):
    """Found by a 2 GiB sparse batch: the CRC mapped all 2 GiB resident (RSS +2048 MiB).
    Now summed in windows, released behind: the value must not change."""
    data = np.random.default_rng(7).integers(0, 256, 100_003, dtype=np.uint8).tobytes()
    path = tmp_path / "x"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for start, end in ((0, len(data)), (21, 90_001), (4095, 4097), (5, 5)):
            assert records._checksum(crc, mm, start, end) == crc(data[start:end])
            assert records._checksum(crc, data, start, end) == crc(data[start:end])


def test_windowed_zero_scan(small_windows):
    """Same class (a preallocated 1 GiB segment is a 1 GiB run of zeros)."""
    buf = bytearray(50_000)
    assert records._is_zero(bytes(buf), 10, 50_000)
    buf[49_999] = 1
    assert not records._is_zero(bytes(buf), 10, 50_000)
    assert records._is_zero(bytes(buf), 10, 49_999)


def test_whole_batch_crc_still_checked_across_windows(small_windows):
    recs = [dict(timestamp_delta=0, offset_delta=i, key=None, value=bytes(3000), headers=[])
            for i in range(8)]
    from tests.builders import make_batch

    good = make_batch(recs)
    assert len(good) > 4 * 4096
    bad = bytearray(good)
    bad[-1] ^= 1
    assert [b.crc_valid for b in iter_batches(good) if isinstance(b, Batch)] == [True]
    assert [b.crc_valid for b in iter_batches(bytes(bad)) if isinstance(b, Batch)] == [False]


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


def test_legacy_flood_shallow_walk_keeps_no_records(monkeypatch):
    """Found by one gzip wrapper of a million empty messages: the shallow walk built every
    Record to learn the first offset (8.6 s, +277 MiB). ``legacy_base_offset`` walks the
    inner headers only and agrees with the deep decode."""
    inner = b"".join(legacy_message(1, 0, None, i) for i in range(50))
    entry = legacy_message(1, 1, zlib.compress(inner, wbits=31), 1049)
    assert legacy_base_offset(entry, 0, len(entry)) == 1000
    assert legacy_inner_records(entry, 0, len(entry))[0].offset == 1000
    monkeypatch.setattr(records, "Record", None)  # the shallow walk must not need it
    (batch,) = [b for b in iter_batches(entry) if isinstance(b, Batch)]
    assert batch.base_offset == 1000 and batch.last_offset == 1049


def test_legacy_base_offset_matches_deep_decode_on_every_fixture():
    for log in sorted(LEGACY.glob("*/*.log")):
        data = log.read_bytes()
        for b in iter_batches(data):
            if isinstance(b, Batch) and b.compression != "none":
                try:
                    first = legacy_inner_records(data, b.position, b.size)[0].offset
                except SegtoolsError:  # the corrupt fixture: both refuse it
                    with pytest.raises(SegtoolsError):
                        legacy_base_offset(data, b.position, b.size)
                    continue
                assert legacy_base_offset(data, b.position, b.size) == first == b.base_offset


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
