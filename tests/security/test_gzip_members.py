"""The gzip member loop is linear (issue 41): a batch of many concatenated empty members must
not make the reader copy the rest of the payload once per member."""

from __future__ import annotations

import gzip
import zlib

import pytest

from segtools import codecs
from segtools.errors import CorruptDataError, DecompressionLimitError


class _Counting:
    """``zlib.decompressobj`` that counts the input bytes it is handed."""

    fed = 0
    real = staticmethod(zlib.decompressobj)

    def __init__(self, **kwargs):
        self._d = _Counting.real(**kwargs)

    def decompress(self, data, max_length=0):
        _Counting.fed += len(data)
        return self._d.decompress(data, max_length)

    def __getattr__(self, name):
        return getattr(self._d, name)


def test_many_empty_members_are_read_in_linear_work(monkeypatch):
    payload = gzip.compress(b"", mtime=0) * 20_000  # 400 KB, 20,000 members
    monkeypatch.setattr(codecs.zlib, "decompressobj", _Counting)
    _Counting.fed = 0
    assert codecs.gunzip(payload) == b""
    # each member is fed at most one small first piece: a few hundred bytes, not the rest
    assert _Counting.fed <= 300 * 20_000


@pytest.mark.parametrize("parts", [[b"a" * 100_000], [b"x", b"", b"y" * 5000, b"z"],
                                   [bytes(range(256)) * 4096, b"tail"]])
def test_members_are_joined_as_gzip_input_stream_does(parts):
    payload = b"".join(gzip.compress(p, mtime=0) for p in parts)
    assert codecs.gunzip(payload) == b"".join(parts)


def test_a_member_cut_short_and_the_cap_still_hold():
    payload = gzip.compress(b"abc" * 1000, mtime=0)
    with pytest.raises(CorruptDataError, match="ends before its trailer"):
        codecs.gunzip(payload + payload[:-3])
    with pytest.raises(DecompressionLimitError):
        codecs.gunzip(gzip.compress(b"\0" * 100_000) * 3, limit=250_000)
    with pytest.raises(CorruptDataError):
        codecs.gunzip(payload + b"garbage that is not gzip")
