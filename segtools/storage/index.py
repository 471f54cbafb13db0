"""Offset, time and transaction indexes of one segment, read-only.

The offset and time indexes are read the way Kafka reads them (``AbstractIndex``): through an
mmap, with a binary search that looks at the 8 KiB "warm" tail first. What segtools adds is
distrust. Kafka counts ``floor(fileLength / entrySize)`` entries for a pre-existing file and
assumes they are valid, which is wrong for the zero-filled, preallocated tail of an active
segment's index; segtools counts the entries that really are there (``valid_entries``) and
searches only those, and reports every rule an index breaks as a :class:`Finding`. An index
with an error finding is not ``trusted``: callers scan the ``.log`` instead (docs/architecture.md
§2).

Two read paths, on purpose:

* lookups and ``entry(i)`` read single entries from the mmap (``struct.unpack_from``), and only
  inside the valid entries, which Kafka never trims away;
* counting and the tail scan read bounded chunks with ``pread`` and view them with numpy.
  These reads run past the valid entries, into bytes a live broker may cut off at a roll
  (``trimToValidSize``); an mmapped page past the new end of file raises SIGBUS, ``pread``
  returns short.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Self

import numpy as np

from segtools.errors import SegtoolsError
from segtools.findings import REGISTRY, Finding, Severity, finding
from segtools.formats.batch import NO_TIMESTAMP
from segtools.formats.indexes import (
    ABORTED_TXN_CURRENT_VERSION,
    ABORTED_TXN_ENTRY_SIZE,
    ABORTED_TXN_STRUCT,
    OFFSET_INDEX_DTYPE,
    OFFSET_INDEX_ENTRY_SIZE,
    OFFSET_INDEX_STRUCT,
    TIME_INDEX_DTYPE,
    TIME_INDEX_ENTRY_SIZE,
    TIME_INDEX_STRUCT,
    WARM_SECTION_BYTES,
)
from segtools.storage.files import offset_from_file_name
from segtools.storage.located import OpenFile
from segtools.storage.location import as_path

# Entries per pread chunk while counting: bounded memory (<= 768 KiB) whatever the index size.
_SCAN_CHUNK_ENTRIES = 65536
_FIRST_SCAN_CHUNK_ENTRIES = 512
#: How far entry reads may run past the last size check (see ``_still_holds``).
INDEX_GUARD_STRIDE = 8192
_ZERO_SCAN_CHUNK = 1 << 20
#: Valid entries up to this many bytes are read into private memory even when sealed.
_PRIVATE_MAX = 64 * 1024


#: An index in a location (object store, archive) up to this size is fetched in one range:
#: a seek then costs one request for the index, not one per probe of the binary search.
REMOTE_INDEX_WHOLE = 64 * 1024 * 1024


def _open_read_only(path) -> OpenFile:
    """Open for reading, where the index lives; an index its location reads by requests is
    fetched whole (up to :data:`REMOTE_INDEX_WHOLE`): a seek then costs one request, not one
    per probe of the binary search. An OS error (a live broker's retention deleted the file
    after the directory was listed) is a typed error that names the file, not a traceback."""
    f = path.location.open_path(path)
    try:
        f.prefetch(REMOTE_INDEX_WHOLE)
    except BaseException:
        f.close()
        raise
    return f  # the caller keeps it open as long as the index object


def _reopen(cls, path: str, base_offset: int | None, log_size: int | None, sealed: bool):
    return cls(path, base_offset, log_size, sealed=sealed)


class OffsetPosition(NamedTuple):
    """``OffsetPosition``: an absolute offset and the ``.log`` byte position of its append."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """``TimestampOffset``: the largest timestamp seen up to (absolute) ``offset``."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class _Scan:
    """Result of one pass over the file: the valid prefix and what follows it."""

    valid_entries: int
    first_nonzero_after: int | None  # first non-zero byte position past the valid entries
    first_order_break: int | None  # first valid slot whose secondary field breaks its order


class _IndexFile:
    """An open index file, closed by ``with`` (as Kafka's indexes are ``Closeable``)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _MappedIndex(_IndexFile):
    """``AbstractIndex``: fixed-size entries, mmapped, searched by key or by value."""

    ENTRY_SIZE: ClassVar[int]
    KIND: ClassVar[str]  # "index" or "timeindex"
    RELATIVE_OFFSET_AT: ClassVar[int]  # where an unpacked entry holds its relative offset
    KEY: ClassVar[str]  # the field an entry is searched by
    VALUE: ClassVar[str]  # the field a lookup answers with
    STRICT_VALUES: ClassVar[bool]  # values strictly increase (or may repeat)
    _DTYPE: ClassVar[np.dtype]
    _STRUCT: ClassVar[object]

    def __init__(self, path: str | os.PathLike[str], base_offset: int | None = None,
                 log_size: int | None = None, *, sealed: bool = False) -> None:
        self.path = as_path(path)
        self.base_offset = (offset_from_file_name(self.path.name) if base_offset is None
                            else base_offset)
        self.log_size = log_size
        self.sealed = sealed
        self._mmap: mmap.mmap | None = None
        self._private: bytes | None = None
        self._closed = False
        self._file = _open_read_only(self.path)
        try:
            self.file_size = self._file.size()
        except BaseException:
            self._file.close()
            raise
        self._scan: _Scan | None = None
        self._findings: tuple[Finding, ...] | None = None
        self._held = 0  # bytes known present at the last size check

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._private = None
        self._closed = True
        self._file.close()

    def __reduce__(self) -> tuple:
        """Pickle as the path, never the mmap: a Spark executor reopens the file itself."""
        return (_reopen, (type(self), str(self.path), self.base_offset, self.log_size,
                          self.sealed))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.path)!r}, base_offset={self.base_offset}, "
                f"valid_entries={self.valid_entries}, kafka_entries={self.kafka_entries})")

    # -- counting --------------------------------------------------------------------------

    @property
    def kafka_entries(self) -> int:
        """Entries as Kafka counts a pre-existing file on load (``AbstractIndex``: "assume the
        pre-existing index is valid"), padding included."""
        return self.file_size // self.ENTRY_SIZE

    @property
    def valid_entries(self) -> int:
        """Entries that are really there: the prefix before the zero tail or the first bad slot."""
        return self._scanned().valid_entries

    @property
    def is_preallocated(self) -> bool:
        """True when only zeros follow the valid entries: the preallocated tail of an active
        segment (``AbstractIndex.createAndAssignMmap`` / ``LogLoader.load`` resize), not damage."""
        scan = self._scanned()
        return scan.first_nonzero_after is None and self.padding_bytes > 0

    @property
    def padding_bytes(self) -> int:
        """Bytes after the valid entries (zeros when ``is_preallocated``, garbage otherwise)."""
        return self.file_size - self.valid_entries * self.ENTRY_SIZE

    @property
    def first_garbage_position(self) -> int | None:
        """Byte position of the first non-zero byte after the valid entries, if any."""
        return self._scanned().first_nonzero_after

    def _scanned(self) -> _Scan:
        if self._scan is None:
            valid, order_break = self._count_valid()
            self._scan = _Scan(valid, self._first_nonzero(valid * self.ENTRY_SIZE), order_break)
        return self._scan

    def _read_slots(self, start: int, count: int) -> np.ndarray:
        data = self._file.pread_data(count * self.ENTRY_SIZE, start * self.ENTRY_SIZE)
        usable = len(data) // self.ENTRY_SIZE
        return np.frombuffer(data, dtype=self._DTYPE, count=usable)

    def _count_valid(self) -> tuple[int, int | None]:
        """One chunked pass: the valid prefix length, and where (if anywhere) the secondary
        field (position, or time-index offset) breaks its order inside that prefix."""
        total = self.kafka_entries
        prev: int | None = None
        prev_secondary: int | None = None
        order_break: int | None = None
        start = 0
        # chunks grow from small: a preallocated index (an active segment's, 10 MiB by
        # default) ends its few entries early, and a first chunk of 768 KiB of its holes
        # would cost more than the rest of reading the segment
        chunk = _FIRST_SCAN_CHUNK_ENTRIES
        while start < total:
            slots = self._read_slots(start, min(chunk, total - start))
            chunk = min(2 * chunk, _SCAN_CHUNK_ENTRIES)
            if len(slots) == 0:  # the file shrank under us: what we saw is what there is
                break
            bad = self._first_invalid(slots, prev)
            valid = slots if bad < 0 else slots[:bad]
            if order_break is None and len(valid):
                brk = self._first_order_break(valid, prev_secondary)
                if brk >= 0:
                    order_break = start + brk
                prev_secondary = int(self._secondary(valid)[-1])
            if bad >= 0:
                return start + bad, order_break
            prev = int(self._keys(slots)[-1])
            start += len(slots)
        return start, order_break

    def _first_order_break(self, slots: np.ndarray, prev: int | None) -> int:
        values = self._secondary(slots).astype(np.int64)
        ok = np.empty(len(values), dtype=bool)
        ok[0] = True if prev is None else self._in_order(prev, values[0])
        ok[1:] = self._in_order(values[:-1], values[1:])
        return -1 if ok.all() else int(np.argmin(ok))

    def _secondary(self, slots: np.ndarray) -> np.ndarray:
        return slots[self.VALUE]

    def _in_order(self, before: np.ndarray | int, after: np.ndarray | int
                  ) -> np.ndarray | bool:
        """Values must rise from entry to entry: strictly for positions (``OffsetIndex``),
        or never fall for relative offsets (``TimeIndex``)."""
        return after > before if self.STRICT_VALUES else after >= before

    def _first_invalid(self, slots: np.ndarray, prev_key: int | None) -> int:
        """Index of the first slot that ends the valid prefix, or -1. Subclasses add rules."""
        keys = self._keys(slots).astype(np.int64)
        ok = np.empty(len(slots), dtype=bool)
        ok[0] = not self._is_zero_slot(slots[0]) if prev_key is None else keys[0] > prev_key
        ok[1:] = keys[1:] > keys[:-1]
        ok &= self._extra_valid(slots)
        return -1 if ok.all() else int(np.argmin(ok))

    def _extra_valid(self, slots: np.ndarray) -> np.ndarray | bool:
        return True

    @staticmethod
    def _is_zero_slot(slot: np.void) -> bool:
        return not any(int(v) for v in slot.tolist())

    def _keys(self, slots: np.ndarray) -> np.ndarray:
        return slots[self.KEY]

    def _first_entry_check(self, relative_offset_of_entry0) -> Iterator[Finding]:
        """Both index kinds: an entry's relative offset is never negative (offsets in a
        segment are at or above the base offset its file is named after)."""
        if not self.valid_entries:
            return
        rel0 = relative_offset_of_entry0()
        if rel0 < 0:
            yield self._finding(
                self.code("index_offset_below_base", "timeindex_offset_below_base"),
                f"entry 0 offset {self.base_offset + rel0} is below the base offset",
                position=0, offset=self.base_offset + rel0)

    def _first_nonzero(self, start: int) -> int | None:
        """First non-zero byte at or after ``start``. Holes are skipped with ``SEEK_DATA``
        (they read as zeros): Kafka's preallocated index is a sparse file, and a hostile one
        may claim 10^9 entries of holes, which must not cost a read of gigabytes."""
        pos = start
        while pos < self.file_size:
            pos = self._file.next_data(pos)
            if pos is None or pos >= self.file_size:
                return None
            data = self._file.pread_data(min(_ZERO_SCAN_CHUNK, self.file_size - pos), pos)
            if not data:
                return None
            view = np.frombuffer(data, dtype=np.uint8)
            if view.any():
                return pos + int(np.flatnonzero(view)[0])
            pos += len(data)
        return None

    def _slot_raw(self, slot: int) -> tuple:
        """Any slot (valid or not) via pread, for Kafka's own checks on its entry count."""
        data = self._file.pread_data(self.ENTRY_SIZE, slot * self.ENTRY_SIZE)
        if len(data) < self.ENTRY_SIZE:
            return tuple([0] * len(self._DTYPE.names))
        return self._STRUCT.unpack(data)  # type: ignore[attr-defined]

    # -- reading entries -------------------------------------------------------------------

    def dumped_slots(self) -> np.ndarray:
        """Every slot ``kafka-dump-log`` prints: all of them up to the first one after slot 0
        whose offset is the base offset (``DumpLogSegments``: the zero padding starts there),
        valid or not, so damage is shown rather than hidden. Read with ``pread`` in chunks."""
        parts, start, total = [], 0, self.kafka_entries
        while start < total:
            slots = self._read_slots(start, min(_SCAN_CHUNK_ENTRIES, total - start))
            if not len(slots):
                break
            rel = slots["relative_offset"]
            stop = np.flatnonzero(rel == 0)
            stop = stop[stop + start > 0]
            if len(stop):
                parts.append(slots[:int(stop[0])])
                break
            parts.append(slots)
            start += len(slots)
        return np.concatenate(parts) if parts else np.zeros(0, self._DTYPE)

    def _entries_buffer(self):
        """Where entries are read from: the mapping of a sealed index; for an index Kafka may
        still change (the active segment's: appended, trimmed at a roll, truncated by a
        follower), a private copy of its valid entries, read once with ``pread``, so no
        truncation can reach a page this reader touches."""
        if self._closed:
            raise ValueError(f"{self.path}: index is closed")
        if self._mmap is not None:
            return self._mmap
        if self._private is None:
            size = self.valid_entries * self.ENTRY_SIZE
            # mapped only when large and sealed (and the file can be mapped): a few entries
            # cost one pread, while a mapping costs three system calls and a page fault per
            # segment of a tree
            if self.sealed and size > _PRIVATE_MAX and \
                    (mapped := self._file.mapping(self.file_size)) is not None:
                self._mmap = mapped
                return self._mmap
            data = self._file.pread_data(size, 0)
            if len(data) < size:
                raise SegtoolsError("index file shrank while it was being read (a follower "
                                    "truncating its log?)", path=str(self.path),
                                    position=len(data))
            self._private = data
        return self._private

    def _unpack(self, slot: int) -> tuple:
        if not 0 <= slot < self.valid_entries:
            raise IndexError(f"slot {slot} outside the {self.valid_entries} valid entries")
        buf = self._entries_buffer()
        end = (slot + 1) * self.ENTRY_SIZE
        if buf is self._mmap and end > self._held and not self._still_holds(end):
            raise SegtoolsError("index file shrank while it was being read (a follower "
                                "truncating its log?)", path=str(self.path),
                                position=slot * self.ENTRY_SIZE)
        return self._STRUCT.unpack_from(buf, slot * self.ENTRY_SIZE)  # type: ignore[attr-defined]

    def _still_holds(self, end: int) -> bool:
        """A broker truncates indexes with its log (``LogSegment.truncateTo``); reading a
        mapped page past the new end would kill the process with SIGBUS, so the size is
        re-read (``fstat``) before entries beyond the last check are read."""
        size = self._file.size()
        self._held = min(size, end + INDEX_GUARD_STRIDE)
        return size >= end

    def __len__(self) -> int:
        return self.valid_entries

    # -- search (AbstractIndex.indexSlotRangeFor) -------------------------------------------

    @property
    def warm_entries(self) -> int:
        """``AbstractIndex.warmEntries()``: 1024 for ``.index``, 682 for ``.timeindex``."""
        return WARM_SECTION_BYTES // self.ENTRY_SIZE

    def _slot_for(self, target: int, field: int, lower: bool) -> int:
        """``indexSlotRangeFor``: warm section first, then ``[0, firstHotEntry]``.

        ``field`` selects the compared value in the unpacked entry (key or value); ``lower``
        picks LARGEST_LOWER_BOUND, else SMALLEST_UPPER_BOUND. Returns a slot or -1.
        """
        entries = self.valid_entries
        if entries == 0:
            return -1
        mm = self._entries_buffer()
        unpack = self._STRUCT.unpack_from  # type: ignore[attr-defined]
        size = self.ENTRY_SIZE

        def value(slot: int) -> int:
            return unpack(mm, slot * size)[field]

        first_hot = max(0, entries - 1 - self.warm_entries)
        if value(first_hot) < target:
            lo, hi = first_hot, entries - 1
        else:
            if value(0) > target:
                return -1 if lower else 0
            lo, hi = 0, first_hot
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = value(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        if lower:
            return lo
        if value(lo) == target:
            # Kafka's binarySearch never probes ``begin`` itself, so for a target equal to
            # entry 0's value it answers slot 1 (or -1 for a one-entry index). Harmless as a
            # fetch bound there, wrong for "smallest entry >= target"; segtools answers slot 0.
            return lo
        return -1 if lo == entries - 1 else lo + 1

    # -- findings --------------------------------------------------------------------------

    def sanity_check(self) -> tuple[Finding, ...]:
        """Kafka's ``sanityCheck()`` on Kafka's entry count, then segtools' stricter checks."""
        if self._findings is None:
            self._findings = tuple(self._kafka_checks()) + tuple(self._strict_checks())
        return self._findings

    @property
    def trusted(self) -> bool:
        """False when any error finding exists: scan the ``.log`` instead of seeking with it."""
        return not any(f.severity is Severity.ERROR for f in self.sanity_check())

    def code(self, index_code: str, timeindex_code: str) -> str:
        """Of a rule both index kinds keep, the code of this kind's finding."""
        return index_code if self.KIND == "index" else timeindex_code

    def _finding(self, code: str, message: str, *, position: int | None = None,
                 offset: int | None = None) -> Finding:
        return finding(code, str(self.path), message, position=position, offset=offset)

    def _length_check(self) -> Iterator[Finding]:
        rest = self.file_size % self.ENTRY_SIZE
        if rest:
            yield self._finding(
                self.code("index_length_not_multiple", "timeindex_length_not_multiple"),
                f"file length {self.file_size} is not a multiple of the {self.ENTRY_SIZE}-byte "
                f"entry size ({rest} trailing bytes); Kafka's sanityCheck rejects it",
                position=self.file_size - rest)

    def _garbage_check(self, stop_slot_is_zero: bool) -> Iterator[Finding]:
        garbage = self.first_garbage_position
        if garbage is None or not stop_slot_is_zero:
            return
        resumed = self._resumed_entries(garbage)
        if resumed:
            valid = self.valid_entries
            zeros = garbage // self.ENTRY_SIZE - valid
            yield self._finding(
                self.code("index_zero_entries_inside", "timeindex_zero_entries_inside"),
                f"{zeros} all-zero entries after entry {valid - 1}, then {resumed} more valid "
                f"entries that continue the sequence. Kafka counts all {self.kafka_entries} "
                "entries (file length / entry size), its sanity check passes, and a lookup "
                "that lands on a zero entry starts the scan at the segment's first byte: "
                "correct answers, slower lookups", position=valid * self.ENTRY_SIZE)
            return
        yield self._finding(
            self.code("index_garbage_after_entries", "timeindex_garbage_after_entries"),
            f"non-zero bytes after the {self.valid_entries} valid entries (not padding)",
            position=garbage)

    def _resumed_entries(self, garbage: int) -> int:
        """Entries after a zero run that continue the valid prefix (rising keys, nothing bad
        and nothing zero after them): a hole left by a crash or a copy, not garbage. 0 when
        the tail is anything else (bounded: at most one chunk of slots is examined)."""
        if not self.valid_entries:
            return 0
        first = garbage // self.ENTRY_SIZE  # the slot holding the first non-zero byte
        slots = self._read_slots(first, min(_SCAN_CHUNK_ENTRIES, self.kafka_entries - first))
        if first + len(slots) != self.kafka_entries or not len(slots):
            return 0
        prev = int(self._keys(self._read_slots(self.valid_entries - 1, 1))[0])
        return len(slots) if self._first_invalid(slots, prev) < 0 else 0

    def _stop_slot(self) -> tuple | None:
        """The slot that ended the valid prefix, or None when the prefix reached the end."""
        valid = self.valid_entries
        return self._slot_raw(valid) if valid < self.kafka_entries else None

    def _kafka_checks(self) -> Iterator[Finding]:
        raise NotImplementedError

    def _strict_checks(self) -> Iterator[Finding]:
        """What Kafka's appends would have refused, in the same order for both kinds: entry 0,
        the first break in the keys' order, the slot that stopped the valid prefix, then what
        lies after it."""
        yield from self._first_entry_check(lambda: self._unpack(0)[self.RELATIVE_OFFSET_AT])
        brk = self._scanned().first_order_break
        if brk is not None:
            yield self._order_break(brk)
        stop = self._stop_slot()
        stop_is_zero = stop is None or not any(stop)
        if stop is not None and not stop_is_zero:
            yield from self._stop_checks(stop)
        yield from self._garbage_check(stop_is_zero)

    def _order_break(self, brk: int) -> Finding:
        raise NotImplementedError

    def _stop_checks(self, stop: tuple) -> Iterator[Finding]:
        raise NotImplementedError


class OffsetIndex(_MappedIndex):
    """``.index``: relative offset -> ``.log`` position, one entry per ~4 KiB of appends."""

    ENTRY_SIZE = OFFSET_INDEX_ENTRY_SIZE
    KIND = "index"
    KEY, VALUE, STRICT_VALUES = "relative_offset", "position", True
    RELATIVE_OFFSET_AT = 0
    _DTYPE = OFFSET_INDEX_DTYPE
    _STRUCT = OFFSET_INDEX_STRUCT

    def _extra_valid(self, slots: np.ndarray) -> np.ndarray | bool:
        pos = slots["position"].astype(np.int64)
        ok = pos >= 0
        if self.log_size is not None:
            ok &= pos < self.log_size
        return ok

    def entry(self, slot: int) -> OffsetPosition:
        rel, pos = self._unpack(slot)
        return OffsetPosition(self.base_offset + rel, pos)

    def entries(self) -> Iterator[OffsetPosition]:
        for slot in range(self.valid_entries):
            yield self.entry(slot)

    def entry_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every valid entry as arrays ``(absolute offsets, positions)``, read with ``pread``
        (bulk checks; never through the mapping, so a truncation cannot SIGBUS them)."""
        slots = self._read_slots(0, self.valid_entries)
        return (slots["relative_offset"].astype(np.int64) + self.base_offset,
                slots["position"].astype(np.int64))

    @property
    def last_entry(self) -> OffsetPosition:
        """``OffsetIndex.lastEntry``: ``(baseOffset, 0)`` when empty."""
        n = self.valid_entries
        return self.entry(n - 1) if n else OffsetPosition(self.base_offset, 0)

    @property
    def last_offset(self) -> int:
        return self.last_entry.offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """``OffsetIndex.lookup``: the largest entry with offset <= target, else ``(base, 0)``.

        The caller scans batches forward from the returned position.
        """
        slot = self._slot_for(target_offset - self.base_offset, 0, lower=True)
        return OffsetPosition(self.base_offset, 0) if slot == -1 else self.entry(slot)

    def fetch_upper_bound_offset(self, position: int) -> OffsetPosition | None:
        """``OffsetIndex.fetchUpperBoundOffset``: the first entry whose position >= ``position``.

        Kafka passes ``fetchOffset.position + fetchSize``; planners that split a segment at
        batch boundaries pass the byte position they want to cut at.
        """
        slot = self._slot_for(position, 1, lower=False)
        return None if slot == -1 else self.entry(slot)

    def _kafka_checks(self) -> Iterator[Finding]:
        """``OffsetIndex.sanityCheck`` (2.0+): length multiple of 8; last offset >= base.

        Evaluated on Kafka's own count, so a zero-padded index passes (its last slot reads as
        offset == base), exactly as ``kafka-dump-log --index-sanity-check`` reports.
        """
        yield from self._length_check()
        n = self.kafka_entries
        if n:
            rel, _ = self._slot_raw(n - 1)
            if rel < 0:
                yield self._finding(
                    "index_last_offset_below_base",
                    f"last entry offset {self.base_offset + rel} is below the base offset "
                    f"{self.base_offset}; Kafka's sanityCheck rejects it",
                    position=(n - 1) * self.ENTRY_SIZE, offset=self.base_offset + rel)

    def _order_break(self, brk: int) -> Finding:
        rel, pos = self._unpack(brk)
        prev_pos = self._unpack(brk - 1)[1]
        return self._finding(
            "index_position_not_increasing",
            f"entry {brk} position {pos} is not after the previous entry's position "
            f"{prev_pos}", position=brk * self.ENTRY_SIZE, offset=self.base_offset + rel)

    def _stop_checks(self, stop: tuple) -> Iterator[Finding]:
        """``OffsetIndex.append``'s rules on the slot that stopped the valid prefix."""
        valid = self.valid_entries
        rel, pos = stop
        where = {"position": valid * self.ENTRY_SIZE, "offset": self.base_offset + rel}
        prev_rel = self._unpack(valid - 1)[0] if valid else None
        if pos < 0:
            yield self._finding("index_position_negative",
                                f"entry {valid} has negative position {pos}", **where)
        elif prev_rel is not None and rel <= prev_rel:
            yield self._finding(
                "index_offset_not_increasing",
                f"entry {valid} offset {self.base_offset + rel} is not above the previous "
                f"entry's offset {self.base_offset + prev_rel}; OffsetIndex.append would "
                f"have refused it", **where)
        elif self.log_size is not None and pos >= self.log_size:
            yield self._finding(
                "index_position_past_log_end",
                f"entry {valid} points at position {pos}, past the end of the "
                f"{self.log_size}-byte .log", **where)


class TimeIndex(_MappedIndex):
    """``.timeindex``: timestamp -> relative offset; timestamps strictly increase."""

    ENTRY_SIZE = TIME_INDEX_ENTRY_SIZE
    KIND = "timeindex"
    KEY, VALUE, STRICT_VALUES = "timestamp", "relative_offset", False
    RELATIVE_OFFSET_AT = 1
    _DTYPE = TIME_INDEX_DTYPE
    _STRUCT = TIME_INDEX_STRUCT

    def entry(self, slot: int) -> TimestampOffset:
        ts, rel = self._unpack(slot)
        return TimestampOffset(ts, self.base_offset + rel)

    def entries(self) -> Iterator[TimestampOffset]:
        for slot in range(self.valid_entries):
            yield self.entry(slot)

    def entry_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every valid entry as arrays ``(timestamps, absolute offsets)``, read with ``pread``."""
        slots = self._read_slots(0, self.valid_entries)
        return (slots["timestamp"].astype(np.int64),
                slots["relative_offset"].astype(np.int64) + self.base_offset)

    @property
    def last_entry(self) -> TimestampOffset:
        """``TimeIndex.lastEntry``: ``(-1, baseOffset)`` when empty.

        For a closed segment this is the segment's largest timestamp, which retention uses.
        """
        n = self.valid_entries
        return self.entry(n - 1) if n else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """``TimeIndex.lookup``: the largest entry with timestamp <= target, else ``(-1, base)``."""
        slot = self._slot_for(target_timestamp, 0, lower=True)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot == -1 else self.entry(slot)

    def _kafka_checks(self) -> Iterator[Finding]:
        """``TimeIndex.sanityCheck``: length multiple of 12; last ts >= first ts; last offset
        >= base -- all on Kafka's count, so a padded active index fails the timestamp test
        (its last slot reads timestamp 0). That failure is reported as what it is: padding."""
        yield from self._length_check()
        n = self.kafka_entries
        if not n:
            return
        first_ts, _ = self._slot_raw(0)
        last_ts, last_rel = self._slot_raw(n - 1)
        last_pos = (n - 1) * self.ENTRY_SIZE
        if last_ts < first_ts:
            if self.valid_entries < n and self.first_garbage_position is None:
                yield padded_active(str(self.path), self.valid_entries, first_ts)
            else:
                yield self._finding(
                    "timeindex_last_timestamp_below_first",
                    f"last timestamp {last_ts} is below the first timestamp {first_ts}; "
                    f"Kafka's sanityCheck rejects it", position=last_pos)
        if last_rel < 0:
            yield self._finding(
                "timeindex_last_offset_below_base",
                f"last entry offset {self.base_offset + last_rel} is below the base offset "
                f"{self.base_offset}; Kafka's sanityCheck rejects it",
                position=last_pos, offset=self.base_offset + last_rel)

    def _order_break(self, brk: int) -> Finding:
        """``TimeIndex.maybeAppend`` rules: timestamps strictly increase, offsets never drop."""
        _, rel = self._unpack(brk)
        prev_rel = self._unpack(brk - 1)[1]
        return self._finding(
            "timeindex_offset_decreasing",
            f"entry {brk} offset {self.base_offset + rel} is below the previous entry's "
            f"offset {self.base_offset + prev_rel}; TimeIndex.maybeAppend would have "
            f"refused it", position=brk * self.ENTRY_SIZE, offset=self.base_offset + rel)

    def _stop_checks(self, stop: tuple) -> Iterator[Finding]:
        valid = self.valid_entries
        if not valid:
            return
        ts, rel = stop
        prev_ts = self._unpack(valid - 1)[0]
        yield self._finding(
            "timeindex_timestamp_not_increasing",
            f"entry {valid} timestamp {ts} is not above the previous entry's {prev_ts}; "
            f"TimeIndex.maybeAppend never writes that", position=valid * self.ENTRY_SIZE,
            offset=self.base_offset + rel)


def padded_active(path: str, valid_entries: int, first_ts: int) -> Finding:
    """What ``TimeIndex.sanityCheck`` says of a time index whose ``valid_entries`` entries are
    followed by zeros only (its last slot reads timestamp 0, below ``first_ts``): the
    preallocated tail of an active segment, reported as what it is."""
    return finding(
        "timeindex_padded_active", path,
        f"Kafka's TimeIndex.sanityCheck would fail (last slot timestamp 0 < first timestamp "
        f"{first_ts}) only because of the zero-filled preallocated tail after {valid_entries} "
        "entries: normal for an active segment", position=valid_entries * TIME_INDEX_ENTRY_SIZE)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """``AbortedTxn``: one aborted transaction, recorded in the segment of its ABORT marker."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    position: int  # byte position of the entry in the .txnindex


@dataclass(frozen=True, slots=True)
class TxnIndexSearchResult:
    """``TxnIndexSearchResult``: ``is_complete`` means later segments need not be searched."""

    aborted_transactions: tuple[AbortedTxn, ...]
    is_complete: bool


class TransactionIndex(_IndexFile):
    """``.txnindex``: aborted transactions; created lazily, never preallocated.

    Read with ``pread`` like Kafka's ``TransactionIndex`` reads its ``FileChannel`` (it is not
    an ``AbstractIndex``), which also keeps us safe when a follower's ``truncateTo`` shrinks it.
    """

    ENTRY_SIZE = ABORTED_TXN_ENTRY_SIZE
    _CHUNK_ENTRIES = 4096
    #: Only aborted transactions are listed, one 34-byte entry each: 8 MiB is ~250 000
    #: aborts in one segment. Past it (a hostile or sparse file) entries are not read.
    CAP = 8 * 1024 * 1024
    #: Findings of one code per file; the rest are counted in one last finding.
    FINDINGS_PER_CODE = 20

    def __init__(self, path: str | os.PathLike[str], base_offset: int | None = None) -> None:
        self.path = as_path(path)
        self.base_offset = (offset_from_file_name(self.path.name) if base_offset is None
                            else base_offset)
        self._file = _open_read_only(self.path)
        self.file_size = self._file.size()
        self._findings: tuple[Finding, ...] | None = None

    def close(self) -> None:
        self._file.close()

    def __reduce__(self) -> tuple:
        return (type(self), (str(self.path), self.base_offset))

    @property
    def entry_count(self) -> int:
        """Whole entries; ``TransactionIndex.iterable`` stops when fewer than 34 bytes remain.
        At most :attr:`CAP` bytes of them are read."""
        return min(self.file_size, self.CAP) // self.ENTRY_SIZE

    def entries(self) -> Iterator[AbortedTxn]:
        total = self.entry_count
        slot = 0
        while slot < total:
            count = min(self._CHUNK_ENTRIES, total - slot)
            data = self._file.pread_data(count * self.ENTRY_SIZE, slot * self.ENTRY_SIZE)
            for i, fields in enumerate(ABORTED_TXN_STRUCT.iter_unpack(
                    memoryview(data)[: len(data) - len(data) % self.ENTRY_SIZE])):
                yield AbortedTxn(*fields, position=(slot + i) * self.ENTRY_SIZE)
            if len(data) < count * self.ENTRY_SIZE:
                return
            slot += count

    def __iter__(self) -> Iterator[AbortedTxn]:
        return self.entries()

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int
                             ) -> TxnIndexSearchResult:
        """``TransactionIndex.collectAbortedTxns``: entries overlapping [fetch, upperBound).

        Complete once an entry's LSO reaches ``upper_bound_offset``: every transaction that
        could overlap the range was aborted before that entry.
        """
        found = []
        for txn in self.entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(tuple(found), True)
        return TxnIndexSearchResult(tuple(found), False)

    def sanity_check(self) -> tuple[Finding, ...]:
        """``TransactionIndex.sanityCheck`` (lastOffset >= base) plus the reader's version
        check, a partial trailing entry, and the append rules (strictly increasing lastOffset,
        firstOffset <= lastOffset)."""
        if self._findings is None:
            self._findings = tuple(self._bounded(self._checks()))
        return self._findings

    def _bounded(self, findings: Iterator[Finding]) -> Iterator[Finding]:
        """A damaged file can break a rule on every entry: report each rule's first few."""
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
            if counts[f.code] <= self.FINDINGS_PER_CODE:
                yield f
        for code, n in counts.items():
            if n > self.FINDINGS_PER_CODE:
                rule = REGISTRY[code]
                yield Finding(code, rule.severity, str(self.path),
                              f"... and {n - self.FINDINGS_PER_CODE} more entries like the "
                              f"above ({rule.meaning})")

    @property
    def trusted(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.sanity_check())

    def _finding(self, code: str, message: str, *, position: int | None = None,
                 offset: int | None = None) -> Finding:
        return finding(code, str(self.path), message, position=position, offset=offset)

    def _checks(self) -> Iterator[Finding]:
        if self.file_size > self.CAP:
            yield self._finding(
                "txnindex_too_large",
                f"{self.file_size} bytes: far more than a segment's aborted transactions "
                f"need; only the first {self.CAP} bytes are read", position=self.CAP)
        prev_last: int | None = None
        for txn in self.entries():
            if txn.version != ABORTED_TXN_CURRENT_VERSION:
                yield self._finding(
                    "txnindex_unsupported_version",
                    f"aborted-transaction entry version {txn.version} (only "
                    f"{ABORTED_TXN_CURRENT_VERSION} is known; Kafka's reader throws on a first "
                    f"byte above it)", position=txn.position)
            if txn.last_offset < self.base_offset:
                yield self._finding(
                    "txnindex_last_offset_below_base",
                    f"last offset {txn.last_offset} is below the segment base offset "
                    f"{self.base_offset}; Kafka's sanityCheck rejects it",
                    position=txn.position, offset=txn.last_offset)
            if txn.first_offset > txn.last_offset:
                yield self._finding(
                    "txnindex_first_offset_after_last",
                    f"first offset {txn.first_offset} is after the last offset "
                    f"{txn.last_offset}", position=txn.position, offset=txn.first_offset)
            if prev_last is not None and txn.last_offset <= prev_last:
                yield self._finding(
                    "txnindex_last_offset_not_increasing",
                    f"last offset {txn.last_offset} is not above the previous entry's "
                    f"{prev_last}; TransactionIndex.append would have refused it",
                    position=txn.position, offset=txn.last_offset)
            prev_last = txn.last_offset
        rest = self.file_size % self.ENTRY_SIZE
        if rest:
            yield self._finding(
                "txnindex_partial_entry",
                f"{rest} trailing bytes do not make a whole {self.ENTRY_SIZE}-byte entry; "
                f"Kafka ignores them", position=self.file_size - rest)
