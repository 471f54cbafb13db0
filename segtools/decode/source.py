"""Where the walk gets its bytes: the protocol, and the in-memory source for bytes in hand.

The walk and the record decoder never open files. They ask a *source* for the bytes of a
file-position range and are told where those bytes end: a sealed segment answers from its
read-only mapping (no copy), a file that may still change (a live broker's active segment)
answers from ``pread`` windows in private memory, so a follower truncating it under the reader
ends the read with a finding instead of a SIGBUS (:mod:`segtools.storage.source`). Tests, the
fuzzers and anything holding bytes already use :class:`BufferSource`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from segtools.decode import _walk
from segtools.decode.buffers import BufferPool


def advise(mapped: np.ndarray, lo: int, hi: int, advice: int) -> int:
    """``madvise(2)`` on the pages of ``mapped[lo:hi]``, an array over a mapping (``lo`` on a
    page boundary), with the GIL let go (Python's ``mmap.madvise`` holds it for the whole
    call): 0, or the call's errno."""
    return _walk.advise(mapped, lo, hi, advice)


class Source(Protocol):
    """The bytes of one file, by file position."""

    #: Bytes the file had when it was opened: nothing past this is ever read.
    size: int
    #: Bytes the walk asks for per kernel call.
    stride: int
    #: Whether each window is a private copy: the walk then ends a table chunk with each
    #: window, so a chunk's records can be decoded from the window in hand (optional; False).
    chunk_per_window: bool
    #: Where the record decoder gets memory for inflated payloads (recycled across chunks).
    buffers: BufferPool
    #: With ``chunk_per_window``: the widest window asked for when the walk's chunks are
    #: larger than ``stride`` (optional; the stride).
    chunk_stride: int
    #: Whether the walk may run on a thread of its own while another thread asks for kept
    #: windows of the chunks it walked (optional; False). Such a source has
    #: ``walk_ahead(windows)``, told how many windows the walk may run ahead of the reader.
    shared_windows: bool

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        """The bytes of ``[lo, hi)``: ``(array, base, avail)`` where ``array[0]`` is the byte
        at file position ``base`` (<= ``lo``) and the bytes in hand end at ``avail`` (<= ``hi``;
        short when the file shrank). Without ``keep`` the array may be a buffer the source
        reuses at its next such call: only the walk asks that way (one walk at a time per
        source); anyone else, and anyone holding spans into the bytes, asks with ``keep``."""
        ...

    def release(self, upto: int) -> None:
        """The reader is done with every byte before ``upto`` (hand mapped pages back)."""
        ...

    def zero_from(self, lo: int, hi: int) -> int | None:
        """The first non-zero byte in ``[lo, hi)``, or None when the range is all zeros;
        holes in a sparse file count as zeros and are skipped without reading them."""
        ...


class BufferSource:
    """Bytes already in memory (a test's bytes, a fuzzer's input, a decompressed buffer)."""

    def __init__(self, data) -> None:
        self.array = (np.frombuffer(data, dtype=np.uint8) if len(data)
                      else np.zeros(0, np.uint8))
        self.size = int(self.array.shape[0])
        self.stride = max(self.size, 1)
        self.buffers = BufferPool(1 << 20)

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        return self.array, 0, min(hi, self.size)

    def release(self, upto: int) -> None:
        return None

    def zero_from(self, lo: int, hi: int) -> int | None:
        found = _walk.first_nonzero(self.array, lo, min(hi, self.size))
        return None if found < 0 else int(found)
