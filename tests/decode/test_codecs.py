"""Codecs: each decodes what the reference library wrote, and every one stops at its cap."""

from __future__ import annotations

import gzip
import os

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from segtools import codecs
from segtools.errors import CorruptDataError, DecompressionLimitError
from tests.builders import compress

DATA = os.urandom(3000) * 100 + bytes(70_000)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_round_trip_through_reference_encoders(codec):
    assert codecs.decompress(codecs.Compression[codec.upper()], compress(codec, DATA)) == DATA


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_cap_is_enforced(codec):
    with pytest.raises(DecompressionLimitError):
        codecs.decompress(codecs.Compression[codec.upper()], compress(codec, DATA),
                          limit=len(DATA) - 1)


def test_zstd_bomb_of_10_gib_stops_at_cap_quickly():
    # 10 GiB of zeros compress to a few hundred KB; build it in streaming pieces
    cctx = zstandard.ZstdCompressor(level=1)
    chunk = bytes(64 << 20)
    comp = cctx.compressobj()
    bomb = b"".join(comp.compress(chunk) for _ in range(160)) + comp.flush()
    with pytest.raises(DecompressionLimitError):
        codecs.unzstd(bomb, limit=64 << 20)


def test_snappy_raw_fallback_as_snappy_java_does():
    import cramjam
    raw = bytes(cramjam.snappy.compress_raw(b"hello snappy" * 50))
    assert codecs.unsnappy(raw) == b"hello snappy" * 50


def test_gzip_concatenated_members():
    assert codecs.gunzip(gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_lz4_magic0_broken_header_checksum_is_tolerated_only_for_magic0():
    frame = bytearray(compress("lz4", DATA))
    frame[6] ^= 0xFF  # the header checksum byte (no content size)
    assert codecs.unlz4(bytes(frame), magic=0) == DATA
    with pytest.raises(CorruptDataError):
        codecs.unlz4(bytes(frame), magic=2)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_garbage_is_a_typed_error(codec):
    with pytest.raises(CorruptDataError):
        codecs.decompress(codecs.Compression[codec.upper()], b"\x82SNAPPY\x00garbage!" * 3)


def test_xxh32_known_vectors():
    assert codecs.xxh32(b"") == 0x02CC5D05
    assert codecs.xxh32(b"abc") == 0x32D153FF


@given(st.binary(max_size=4096))
def test_crc32c_fast_and_reference_agree(data):
    assert codecs.crc32c(data) == codecs.crc32c_reference(data)


def test_crc32c_check_value():
    assert codecs.crc32c(b"123456789") == 0xE3069283
    assert codecs.crc32(b"123456789") == 0xCBF43926


def test_crc32c_across_lane_boundaries():
    """The instruction path runs three streams over lanes of 256 bytes, then one stream; every
    length around those boundaries agrees with the table reference."""
    import random

    rnd = random.Random(11)
    data = bytes(rnd.getrandbits(8) for _ in range(3 * 6144 + 3 * 768 + 64))
    lengths = {n + d for n in (0, 768, 1536, 6144, 6144 + 768, 12288, 16384, 3 * 6144 + 768)
               for d in range(-9, 10) if 0 <= n + d <= len(data)}
    for n in sorted(lengths):
        assert codecs.crc32c(data[:n]) == codecs.crc32c_reference(data[:n]), n
        assert codecs.crc32c(data[3:3 + n]) == codecs.crc32c_reference(data[3:3 + n]), n
