"""Index file entries: ``.index`` (8 B), ``.timeindex`` (12 B), ``.txnindex`` (34 B).

The layouts mirror ``OffsetIndex``, ``TimeIndex`` and ``AbortedTxn`` in Kafka's
``storage/.../internals/log/``. Each entry is declared three times on purpose, and the three
declarations are checked against each other at import:

* a construct ``Struct``: the readable spec, used to parse and to *build* bytes in tests;
* a ``struct`` format: the hot path for single-entry reads during a binary search, where
  construct's per-call overhead (tens of microseconds) would dominate;
* a numpy structured dtype: bulk, zero-copy views used to count valid entries in an index of
  a million slots without a Python loop.

All integers are big-endian (Java ``ByteBuffer`` default). Offsets in ``.index`` and
``.timeindex`` are stored *relative* to the segment base offset taken from the file name.
"""

from __future__ import annotations

import struct

import numpy as np
from construct import Int16sb, Int32sb, Int64sb, Struct

OffsetIndexEntry = Struct(
    "relative_offset" / Int32sb,  # key: last offset of the append, minus the base offset
    "position" / Int32sb,  # byte position in the .log where that append starts
)
TimeIndexEntry = Struct(
    "timestamp" / Int64sb,  # largest timestamp seen in the segment up to relative_offset
    "relative_offset" / Int32sb,  # last offset of the batch that holds that timestamp
)
AbortedTxnEntry = Struct(
    "version" / Int16sb,  # 0; Kafka's AbortedTxn.version() reads only the first byte of it
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,  # first offset of the aborted transaction (maybe an older segment)
    "last_offset" / Int64sb,  # offset of the ABORT marker
    "last_stable_offset" / Int64sb,  # LSO when the abort completed
)

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
ABORTED_TXN_ENTRY_SIZE = 34

OFFSET_INDEX_STRUCT = struct.Struct(">ii")
TIME_INDEX_STRUCT = struct.Struct(">qi")
ABORTED_TXN_STRUCT = struct.Struct(">hqqqq")

OFFSET_INDEX_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
TIME_INDEX_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
ABORTED_TXN_DTYPE = np.dtype(
    [
        ("version", ">i2"),
        ("producer_id", ">i8"),
        ("first_offset", ">i8"),
        ("last_offset", ">i8"),
        ("last_stable_offset", ">i8"),
    ]
)

for _spec, _fmt, _dtype, _size in (
    (OffsetIndexEntry, OFFSET_INDEX_STRUCT, OFFSET_INDEX_DTYPE, OFFSET_INDEX_ENTRY_SIZE),
    (TimeIndexEntry, TIME_INDEX_STRUCT, TIME_INDEX_DTYPE, TIME_INDEX_ENTRY_SIZE),
    (AbortedTxnEntry, ABORTED_TXN_STRUCT, ABORTED_TXN_DTYPE, ABORTED_TXN_ENTRY_SIZE),
):
    if not (_spec.sizeof() == _fmt.size == _dtype.itemsize == _size):
        raise AssertionError(f"index entry layouts disagree: {_spec}")

ABORTED_TXN_CURRENT_VERSION = 0

# AbstractIndex.warmEntries(): the last 8 KiB of entries form the "warm" section that
# every tail lookup touches, so the binary search looks there first.
WARM_SECTION_BYTES = 8192


def build_offset_index(entries: list[tuple[int, int]]) -> bytes:
    """Bytes of an ``.index`` holding ``(relative_offset, position)`` pairs, for tests and tools."""
    return b"".join(
        OffsetIndexEntry.build({"relative_offset": r, "position": p}) for r, p in entries
    )


def build_time_index(entries: list[tuple[int, int]]) -> bytes:
    """Bytes of a ``.timeindex`` holding ``(timestamp, relative_offset)`` pairs."""
    return b"".join(
        TimeIndexEntry.build({"timestamp": t, "relative_offset": r}) for t, r in entries
    )
