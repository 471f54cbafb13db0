"""CRC-32C at every level ``checksum.h`` can run (tables, the ``crc32`` instruction, folding with
``pclmulqdq``, folding with ``vpclmulqdq``): each equal to crcmod's reference for every length
and alignment, continued from any register, and on the Kafka-written fixtures' batches; the
folding constants equal to their definition (``crc32c_fold.h``).

A level the CPU lacks falls back to the one below it, so on such a CPU these tests check the
fallback twice; ``test_the_best_level_runs_here`` names what this machine runs.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools import _checksum
from segtools.codecs import crc32c_reference
from tests.fixtures_manifest import LOGS, log_path

#: Castagnoli's polynomial, x^32 included, in the usual (not reflected) bit order.
CASTAGNOLI = 0x1_1EDC_6F41
#: Lengths checked one by one at every alignment: past the 512-bit loop's several steps.
EVERY_LENGTH = 4096
ALIGNMENTS = 64


@pytest.fixture(params=_checksum.LEVELS)
def level(request):
    """Each implementation in turn (or the best below it the CPU runs), the best after."""
    chosen = _checksum.use_level(request.param)
    yield chosen
    _checksum.use_hardware(True)


def x_pow_mod(k: int) -> int:
    """x^k modulo Castagnoli's polynomial, by long division in GF(2)."""
    r = 1
    for _ in range(k):
        r <<= 1
        if r >> 32:
            r ^= CASTAGNOLI
    return r


def reflect32(v: int) -> int:
    return int(f"{v:032b}"[::-1], 2)


def test_fold_constants_are_their_definition():
    """Moving a 16-byte block D bits on is a multiplication by x^D: the low half's constant
    is x^(D+63) mod P, the high half's x^(D-1) mod P (one power less: the carry-less product
    of two reflected operands lands one place lower), each reflected into the top 32 bits."""
    constants = _checksum.fold_constants()
    assert set(constants) == {128, 256, 384, 512, 2048}
    for bits, (low, high) in constants.items():
        assert low == reflect32(x_pow_mod(bits + 63)) << 32, bits
        assert high == reflect32(x_pow_mod(bits - 1)) << 32, bits


def test_the_best_level_runs_here():
    """What the CPU check chose, by what /proc/cpuinfo says this CPU has."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        flags = next(line.split(":")[1].split() for line in text.splitlines()
                     if line.startswith("flags"))
    except (OSError, StopIteration):
        pytest.skip("no /proc/cpuinfo")
    want = "tables"
    if "sse4_2" in flags:
        want = "instruction"
        if "pclmulqdq" in flags:
            want = "fold128"
            if {"avx512f", "avx512vl", "vpclmulqdq"} <= set(flags):
                want = "fold512"
    assert _checksum.level() == want


def aligned(n: int, seed: int) -> np.ndarray:
    """``n`` random bytes starting on a 64-byte boundary, so an offset into them is that
    alignment (the loops' loads are unaligned; a test of every alignment proves it)."""
    buf = np.random.default_rng(seed).integers(0, 256, n + 64, dtype=np.uint8)
    skip = -buf.ctypes.data % 64
    return buf[skip:skip + n]


@pytest.mark.parametrize("level", _checksum.LEVELS[1:], indirect=True)
def test_every_length_and_alignment(level):
    """(The tables, the slowest and unchanged by folding, are held to crcmod from any register
    below.)"""
    data = aligned(EVERY_LENGTH + ALIGNMENTS, 37)
    raw = data.tobytes()
    for at in range(ALIGNMENTS):
        want = 0
        for n in range(EVERY_LENGTH + 1):
            assert _checksum.crc32c(data[at:at + n]) == want, (level, at, n)
            want = crc32c_reference(raw[at + n:at + n + 1], want)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 20_000), seed=st.integers(0, 2**16), at=st.integers(0, ALIGNMENTS - 1),
       cut=st.integers(0, 20_000), value=st.integers(0, 2**32 - 1))
def test_continued_from_any_register(size, seed, at, cut, value):
    """A range checked in two pieces, the second continuing the first's register, from any
    CRC before it: each level alike. (Lengths drawn as numbers: hypothesis's own binaries
    are mostly shorter than the 512-bit loop's first step.)"""
    body = aligned(size + at, seed)[at:]
    data = body.tobytes()
    cut = min(cut, size)
    want = crc32c_reference(data, value)
    for name in _checksum.LEVELS:
        _checksum.use_level(name)
        try:
            assert _checksum.crc32c(body, value) == want, name
            assert _checksum.crc32c(body[cut:], _checksum.crc32c(body[:cut], value)) == want
        finally:
            _checksum.use_hardware(True)


def v2_batches(raw: bytes):
    """(CRC coverage, stored CRC) of each v2 batch of a log: ``DefaultRecordBatch``'s CRC
    covers the attributes (byte 21) to the batch's end."""
    pos = 0
    while pos + 21 <= len(raw):
        length, magic = struct.unpack_from(">iB", raw, pos + 8)[0], raw[pos + 16]
        end = pos + 12 + length
        if length < 14 or end > len(raw):
            return
        if magic == 2:
            yield raw[pos + 21:end], struct.unpack_from(">I", raw, pos + 17)[0]
        pos = end


def test_fixture_batches(level):
    """Every Kafka-written v2 batch of the fixtures: the CRC Kafka stored (``ensureValid``)
    where the fixture is not damaged on purpose, and crcmod's everywhere."""
    checked = 0
    for entry in LOGS:
        for covered, stored in v2_batches(log_path(entry).read_bytes()):
            want = crc32c_reference(covered)
            assert _checksum.crc32c(covered) == want, (level, entry["case"])
            checked += want == stored
    assert checked > 100
