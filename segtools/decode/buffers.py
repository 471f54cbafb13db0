"""Private memory for the bytes the kernels read: page-aligned, and recycled.

The kernel copies file bytes (``pread``) fastest into a buffer whose bytes lie at the same
place in their pages as the file's: from a page boundary into a page-aligned buffer at 8.8
GB/s on the benchmark machine, against 2.3 into a ``malloc``'d one whose data starts 16 bytes
into a page (a window that starts anywhere else is placed that far into its buffer by its
reader). A fresh buffer costs a page fault per 4 KiB on first touch. So buffers come from
anonymous mappings and go back to a small pool, to be reused as soon as nothing refers to
them any more.
"""

from __future__ import annotations

import mmap
import sys
import threading
from collections.abc import Callable

import numpy as np


def aligned(n: int) -> np.ndarray:
    """``n`` bytes (at least one) of page-aligned, zero-initialised anonymous memory. The
    array returned owns its view of the memory: every slice of it refers back to it (numpy
    points a view's ``base`` at the first array in the chain), which the pool relies on."""
    return np.frombuffer(mmap.mmap(-1, max(n, 1)), dtype=np.uint8)


class BufferPool:
    """Up to ``size`` buffers of at least ``minimum`` bytes, handed out again once free.

    "Free" is CPython's reference count: a buffer that only the pool refers to. Callers
    slice what they get; a chunk of records holding a slice keeps the buffer out of reuse for
    as long as the chunk lives (a slice's ``base`` is the buffer itself, never a slice).

    ``allocate`` makes a new buffer (:func:`aligned` by default; it must return an array
    that its slices refer back to). A pool may be shared by two threads (a walk reading
    windows ahead of the reader that decodes them): a buffer is taken under a lock."""

    def __init__(self, minimum: int, size: int = 8,
                 allocate: Callable[[int], np.ndarray] = aligned):
        self.minimum = minimum
        self.size = size
        self._allocate = allocate
        self._buffers: list[np.ndarray] = []
        self._taking = threading.Lock()

    def get(self, n: int) -> np.ndarray:
        """A buffer of at least ``n`` bytes that nothing else refers to (pooled when it is of
        the usual size; a larger one goes when its last user lets go of it)."""
        with self._taking:
            return self._get(n)

    def _get(self, n: int) -> np.ndarray:
        for buf in self._buffers:
            # referenced by the list, this loop's variable and getrefcount's argument only
            if len(buf) >= n and sys.getrefcount(buf) <= 3:
                return buf
        buf = self._allocate(max(n, self.minimum))
        if n > 4 * self.minimum:
            return buf
        if len(self._buffers) < self.size:
            self._buffers.append(buf)
        elif self._buffers:  # replace the smallest, so the pool follows the sizes asked for
            smallest = min(range(len(self._buffers)), key=lambda i: len(self._buffers[i]))
            if len(self._buffers[smallest]) < len(buf):
                self._buffers[smallest] = buf
        return buf

    def clear(self) -> None:
        self._buffers = []
