"""Producer-state snapshot (``<offset>.snapshot``), version 1.

Layout from ``ProducerStateManager.readSnapshot/writeSnapshot`` and the generated schema
``storage/src/main/resources/message/ProducerSnapshot.json`` (unchanged since 0.11)::

    0   int16   version = 1
    2   uint32  crc: CRC-32C over bytes [6, EOF)   (the count and every entry)
    6   int32   entry count
    10  46 * n  entries

The name offset is the "map end offset": the state reflects every record below it.
Parsing returns findings instead of raising (``readSnapshot`` throws
``CorruptSnapshotException``), so one bad snapshot is evidence in a report, not a crash.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from construct import Array, Int16sb, Int32sb, Int32ub, Int64sb, Struct, this

from segtools.codecs import crc32c
from segtools.findings import Finding, finding

PRODUCER_SNAPSHOT_VERSION = 1
CRC_OFFSET = 2
PRODUCER_ENTRIES_OFFSET = 6  # start of the CRC coverage: the int32 count, then the entries
HEADER_SIZE = 10
ENTRY_SIZE = 46

ProducerSnapshotEntry = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,  # -1: no batch metadata
    "offset_delta" / Int32sb,  # lastSeq - firstSeq of the last batch
    "timestamp" / Int64sb,  # max timestamp of the last batch
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,  # -1: no open transaction
)

ProducerSnapshotHeader = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "count" / Int32sb,
)

ProducerSnapshotFile = Struct(
    "header" / ProducerSnapshotHeader,
    "entries" / Array(this.header.count, ProducerSnapshotEntry),
)

_ENTRY_STRUCT = struct.Struct(">qhiqiqiq")
_HEADER_STRUCT = struct.Struct(">hIi")
if not (_ENTRY_STRUCT.size == ProducerSnapshotEntry.sizeof() == ENTRY_SIZE
        and _HEADER_STRUCT.size == ProducerSnapshotHeader.sizeof() == HEADER_SIZE):
    raise AssertionError("producer snapshot layouts disagree")


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """One producer's state as of the snapshot offset (``ProducerStateEntry``)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        return self.last_sequence - self.offset_delta

    @property
    def has_open_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    version: int
    crc: int
    computed_crc: int
    entries: tuple[ProducerStateEntry, ...]

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc


def build_producer_snapshot(entries: list[dict], *, version: int = PRODUCER_SNAPSHOT_VERSION,
                            crc: int | None = None) -> bytes:
    """Bytes of a snapshot file; the CRC is computed unless given (tests pass a wrong one)."""
    body = Int32sb.build(len(entries)) + b"".join(ProducerSnapshotEntry.build(e) for e in entries)
    if crc is None:
        crc = crc32c(body)
    return Int16sb.build(version) + Int32ub.build(crc) + body


def parse_producer_snapshot(buf: bytes | memoryview, path: str
                            ) -> tuple[ProducerSnapshot | None, list[Finding]]:
    """Parse a whole snapshot buffer. Returns ``(None, findings)`` only if even the header is
    missing; otherwise every whole entry is returned alongside the findings."""
    findings: list[Finding] = []
    size = len(buf)
    if size < HEADER_SIZE:
        findings.append(finding("snapshot_truncated", path,
                                f"{size} bytes is shorter than the {HEADER_SIZE}-byte header",
                                position=size))
        return None, findings
    version, crc, count = _HEADER_STRUCT.unpack_from(buf, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        findings.append(finding("snapshot_unsupported_version", path,
                                f"version {version}; only {PRODUCER_SNAPSHOT_VERSION} exists "
                                f"(ProducerStateManager.readSnapshot rejects it)", position=0))
    computed = crc32c(buf[PRODUCER_ENTRIES_OFFSET:])
    if computed != crc:
        findings.append(finding("snapshot_crc_mismatch", path,
                                f"stored CRC-32C {crc:#010x} != computed {computed:#010x} "
                                f"over bytes [6, {size})", position=CRC_OFFSET))
    expected = HEADER_SIZE + ENTRY_SIZE * count if count >= 0 else None
    if expected != size:
        whole = (size - HEADER_SIZE) // ENTRY_SIZE
        findings.append(finding("snapshot_size_mismatch", path,
                                f"count {count} needs {expected} bytes but the file has {size} "
                                f"({whole} whole entries)",
                                position=HEADER_SIZE + ENTRY_SIZE * max(0, min(count, whole))))
    usable = max(0, min(count, (size - HEADER_SIZE) // ENTRY_SIZE))
    body = memoryview(buf)[HEADER_SIZE: HEADER_SIZE + usable * ENTRY_SIZE]
    entries = tuple(ProducerStateEntry(*f) for f in _ENTRY_STRUCT.iter_unpack(body))
    body.release()
    return ProducerSnapshot(version, crc, computed, entries), findings
