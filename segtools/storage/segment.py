"""A segment's ``.log`` on disk: opened read-only, mapped, walked up to the size seen at open.

A broker may append to the active segment while we read it (DESIGN.md §4): the size is fixed
when the file is opened, so a batch being written past it is simply not seen, and a half-written
one inside it is the torn tail that ``FileLogInputStream`` also treats as the end of data.
Memory stays flat: the file is mapped, never read into a Python bytes object.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import NotAKafkaFileError, SegtoolsError
from segtools.findings import Finding
from segtools.model import Batch
from segtools.records import (
    BatchRecords,
    Chunk,
    decode_chunks,
    iter_batch_records,
    iter_batches,
    release_pages,
)

SEGMENT_NAME_DIGITS = 20
#: How far a read may run past the last size check (see :meth:`Segment.holds`).
GUARD_STRIDE = 64 * 1024


def base_offset_from_name(path: str | os.PathLike) -> int | None:
    """``LogFileUtils.offsetFromFileName``: the digits before the first '.' of the name.

    ASCII digits only: ``str.isdigit`` also accepts '²', which ``int`` then refuses."""
    stem = Path(path).name.split(".", 1)[0]
    return int(stem) if stem.isascii() and stem.isdigit() else None


class Segment:
    """One ``.log`` file, read-only. Use as a context manager so the map is released."""

    def __init__(self, path: str | os.PathLike, *,
                 decompress_limit: int = DEFAULT_DECOMPRESS_LIMIT):
        self.path = str(path)
        self.base_offset = base_offset_from_name(path)
        self.decompress_limit = decompress_limit
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except IsADirectoryError:
            raise NotAKafkaFileError("is a directory, not a segment file",
                                     path=self.path) from None
        except OSError as e:
            raise SegtoolsError(e.strerror or str(e), path=self.path) from None
        self._fd = fd
        self._checked_upto = 0
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotAKafkaFileError("not a regular file", path=self.path)
            self.size = st.st_size  # the size seen at open: a growing segment is read to here
            # from the open descriptor: a path stat could race retention deleting the file
            self.mtime_ms = st.st_mtime_ns // 1_000_000
            self._map = (mmap.mmap(fd, self.size, access=mmap.ACCESS_READ)
                         if self.size else b"")
            if self.size:  # batches are read front to back: let the kernel read ahead
                self._map.madvise(mmap.MADV_SEQUENTIAL)
        except BaseException:
            os.close(fd)
            raise

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if isinstance(self._map, mmap.mmap):
            # a numpy view may still refer to the map; the GC releases it with the view
            with contextlib.suppress(BufferError):
                self._map.close()

    def release(self, start: int, upto: int) -> None:
        """Hand back the mapped pages of ``[start, upto)`` once a reader is done with them:
        they stay in the page cache, but leave this process's RSS, which then stays flat
        however large the segment (DESIGN.md §4)."""
        if isinstance(self._map, mmap.mmap) and upto - start >= mmap.PAGESIZE:
            release_pages(self._map, start - start % mmap.PAGESIZE, upto)

    def holds(self, upto: int) -> bool:
        """Whether the file still has every byte before ``upto``: asked before the walk touches
        mapped bytes. A broker follower truncates its log (``LogSegment.truncateTo``); touching
        a mapped page past the new end kills the process with SIGBUS, which Python cannot
        catch, so the size is re-read (``fstat``, ~1 µs) at least every GUARD_STRIDE bytes.
        This narrows the race (to one stride of the walk, or one kernel call and its consumer
        in deep decoding); it cannot close it while segments are mapped."""
        if upto <= self._checked_upto:
            return True
        if self._fd is None:
            return upto <= self.size
        now = os.fstat(self._fd).st_size
        if now < upto:
            return False
        self._checked_upto = min(now, upto + GUARD_STRIDE)
        return True

    def private_copy(self, lo: int, hi: int) -> np.ndarray | None:
        """For the deep decoder: when the file's size has changed since it was opened (a live
        active segment), its bytes ``[lo, hi)`` read with ``pread`` into private memory at their
        own positions, so later truncation cannot reach them; otherwise None (decode straight
        from the mapping, no copy). The array is ``hi`` bytes of lazily zeroed memory of which
        only ``[lo, hi)`` is filled; a short read (the file shrank) leaves zeros, which decode
        as a corrupt-records finding, not a crash."""
        if self._fd is None or os.fstat(self._fd).st_size == self.size:
            return None
        data = np.zeros(hi, dtype=np.uint8)
        view = memoryview(data)[lo:hi]
        done = 0
        while done < hi - lo:
            n = os.preadv(self._fd, [view[done:]], lo + done)
            if n <= 0:
                break
            done += n
        return data

    @property
    def buffer(self):
        return self._map

    def batches(self, start: int = 0, end: int | None = None, *,
                verify_crc: bool = True) -> Iterator[Batch | Finding]:
        """Shallow walk: batch headers and framing findings, from byte ``start``."""
        return iter_batches(self._map, start, end, path=self.path, verify_crc=verify_crc,
                            limit=self.decompress_limit, guard=self.holds)

    def batch_records(self, batches) -> Iterator[BatchRecords]:
        """Deep: each of ``batches`` with its records decoded (for printing)."""
        return iter_batch_records(self._map, batches, limit=self.decompress_limit,
                                  path=self.path, guard=self.holds, copy=self.private_copy)

    def chunks(self, batches) -> Iterator[Chunk | BatchRecords]:
        """Deep, columnar: kernel chunks of many batches (for bulk consumers)."""
        return decode_chunks(self._map, batches, limit=self.decompress_limit, path=self.path,
                             guard=self.holds, copy=self.private_copy)
