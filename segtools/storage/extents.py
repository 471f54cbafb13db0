"""The byte ranges of one object that a reader holds or has asked for, never overlapping.

A reader of an object store fetches ranges of different sizes for different reasons (a small
range for a seek, large aligned ranges ahead of a sequential walk). If two of those ranges
may cover the same bytes, a lookup by "the range that starts here" can hand back the wrong
one, and a window stitched from them repeats or skips bytes: exactly what a CRC check then
reports as corruption that is not in the object. Here a range is only ever added over bytes
no held range covers (:meth:`Extents.gaps` says which), so every byte position has at most one
extent, and the extent answering for a position is found by its start and end, never by a
key that two ranges could share. Holding a byte twice is impossible by construction, not by
care at each call site.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


class Extents(Generic[V]):
    """Disjoint ``[start, end)`` ranges, each with a value (the bytes, or their promise)."""

    __slots__ = ("_ends", "_starts", "_values")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._values: list[V] = []

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[tuple[int, int, V]]:
        return iter(zip(self._starts, self._ends, self._values, strict=True))

    def holding(self, pos: int) -> tuple[int, int, V] | None:
        """The extent that covers byte ``pos``, or None."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if i >= 0 and pos < self._ends[i]:
            return self._starts[i], self._ends[i], self._values[i]
        return None

    def gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``[lo, hi)`` no extent covers, in order."""
        out: list[tuple[int, int]] = []
        pos = lo
        i = max(bisect.bisect_right(self._starts, lo) - 1, 0)
        while pos < hi and i < len(self._starts):
            start, end = self._starts[i], self._ends[i]
            if end <= pos:
                i += 1
                continue
            if start >= hi:
                break
            if start > pos:
                out.append((pos, start))
            pos = max(pos, end)
            i += 1
        if pos < hi:
            out.append((pos, hi))
        return out

    def add(self, start: int, end: int, value: V) -> None:
        """Hold ``[start, end)``; refused (ValueError) unless no extent covers any of it."""
        if end <= start or self.gaps(start, end) != [(start, end)]:
            raise ValueError(f"[{start}, {end}) overlaps a held range or is empty")
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)
        self._values.insert(i, value)

    def replace(self, start: int, value: V) -> None:
        """The value of the extent starting at ``start`` (a promise kept: the bytes)."""
        i = bisect.bisect_left(self._starts, start)
        if i == len(self._starts) or self._starts[i] != start:
            raise KeyError(start)
        self._values[i] = value

    def drop_one(self, start: int) -> V:
        """Let go of the extent starting at ``start``; its value."""
        i = bisect.bisect_left(self._starts, start)
        if i == len(self._starts) or self._starts[i] != start:
            raise KeyError(start)
        del self._starts[i], self._ends[i]
        return self._values.pop(i)

    def drop(self, keep: tuple[int, int]) -> list[V]:
        """Let go of every extent outside ``[keep[0], keep[1])``; their values, for cancelling."""
        lo, hi = keep
        kept = [(s, e, v) for s, e, v in self if e > lo and s < hi]
        gone = [v for s, e, v in self if not (e > lo and s < hi)]
        self._starts = [s for s, _, _ in kept]
        self._ends = [e for _, e, _ in kept]
        self._values = [v for _, _, v in kept]
        return gone

    def clear(self) -> list[V]:
        gone, self._values = self._values, []
        self._starts, self._ends = [], []
        return gone
