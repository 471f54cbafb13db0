"""One partition's log, walked in offset order across its segments: the forensic analyses' edge.

The forensic questions (what was committed, which transaction hangs, what the controller
decided) are about a partition's whole history, not one segment, so this module strings the
live segments of a :class:`~segtools.storage.partition.PartitionDir` together as
``UnifiedLog`` does (ordered by base offset) and hands out batches or records with the
segment they came from. Findings met on the way (torn tails, CRC mismatches, undecodable
batches) go to the caller's list; reading carries on, as everywhere in segtools. The
partition's other files that the forensic rules hold against the log (``.txnindex``,
``.snapshot``) are read here too, so the rooms above hold rules only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from segtools.analysis.producer_state import SnapshotFile
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import Chunk
from segtools.decode.table import BatchTable
from segtools.decode.walk import whole_table
from segtools.errors import NothingToReadError, SegtoolsError
from segtools.findings import Finding
from segtools.model import Batch, Record
from segtools.storage.index import TransactionIndex
from segtools.storage.location import as_path
from segtools.storage.logdirs import LogDir, walk
from segtools.storage.partition import (
    CLUSTER_METADATA_TOPIC,
    PartitionDir,
    PartitionState,
    SegmentFiles,
    load_partition_dir,
)
from segtools.storage.segment import Segment, file_unreadable, read_small, unreadable
from segtools.storage.small_files import read_producer_snapshot

#: KRaft's metadata log is one partition, always 0 (``KafkaRaftServer.MetadataPartition``).
METADATA_PARTITION_DIR = f"{CLUSTER_METADATA_TOPIC}-0"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A record with the batch and segment it was read from."""

    segment: Path
    batch: Batch
    record: Record


def as_partition(partition: PartitionDir | str | os.PathLike[str]) -> PartitionDir:
    """A :class:`PartitionDir` given itself or the path of a partition directory."""
    if isinstance(partition, PartitionDir):
        return partition
    path = as_path(partition)
    try:
        is_dir = path.is_dir()
    except PermissionError as e:  # a directory above it cannot be searched (mode 000)
        raise SegtoolsError(f"cannot read: {e.strerror}", path=str(path)) from None
    if not is_dir:
        raise SegtoolsError("not a partition directory" if path.exists() else
                            "no such file or directory", path=str(path))
    return load_partition_dir(path)


def metadata_partition(path: PartitionDir | str | os.PathLike[str]) -> PartitionDir:
    """The ``__cluster_metadata-0`` directory given itself or a log dir holding it."""
    if isinstance(path, PartitionDir):
        return path
    p = as_path(path)
    if _holds_dir(p, METADATA_PARTITION_DIR):
        p = p / METADATA_PARTITION_DIR
    partition = as_partition(p)
    if partition.name is None or partition.name.topic != CLUSTER_METADATA_TOPIC:
        unlisted = next((f for f in partition.findings if f.code in
                         NothingToReadError.UNLISTED), None)
        if unlisted is not None:  # a log dir at mode 000: say so, not what it is not
            raise NothingToReadError(unlisted.message, path=str(p))
        raise SegtoolsError(f"not a {CLUSTER_METADATA_TOPIC} partition (nor a log dir "
                            "holding one)", path=str(p))
    return partition


def _holds_dir(parent, name: str) -> bool:
    """Whether ``parent`` holds a directory ``name``; a parent that cannot be searched (mode
    000) holds none that can be read, and listing it says why."""
    try:
        return (parent / name).is_dir()
    except PermissionError:
        return False


def partitions_of(paths, topic: str) -> list[PartitionDir]:
    """Every live partition directory of ``topic`` found under ``paths`` (log dirs,
    partition dirs, or directories of log-dir copies), in log-dir then partition order."""
    log_dirs, loose = walk(paths)
    missing = next((f for f in loose if f.code == "path_not_found"), None)
    if missing is not None:  # a mistyped path, said as every command says it
        raise SegtoolsError("no such file or directory", path=missing.path)
    return live_partitions(log_dirs, topic)


def live_partitions(log_dirs: Iterable[LogDir], topic: str) -> list[PartitionDir]:
    """Every live partition directory of ``topic`` in ``log_dirs``, in log-dir then
    partition order (one that could not be listed among them, its finding with it)."""
    return [p for d in log_dirs for p in d.partitions
            if p.name is not None and p.name.topic == topic and p.name.state is PartitionState.LIVE]


def iter_tables(partition: PartitionDir, findings: list[Finding], *,
                verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT
                ) -> Iterator[tuple[Segment, SegmentFiles, BatchTable]]:
    """Shallow: the batch table of every live segment, oldest first, a chunk at a time. The
    segment stays open while its chunk is being consumed (callers may decode its records)."""
    for files in partition.segments:
        yield from segment_tables(files, findings, verify_crc=verify_crc, limit=limit)


def segment_tables(files: SegmentFiles, findings: list[Finding], *, verify_crc: bool = True,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT
                   ) -> Iterator[tuple[Segment, SegmentFiles, BatchTable]]:
    """:func:`iter_tables` for one segment of the partition."""
    try:
        segment = Segment.open(files, decompress_limit=limit)
    except SegtoolsError as e:
        findings.append(unreadable(str(files.log), e))
        return
    with segment:
        for chunk in segment.walk(verify_crc=verify_crc):
            findings.extend(chunk.findings)
            yield segment, files, chunk.table


class TableFold(Protocol):
    """An analysis that reads a partition's batch tables in log order (:func:`fold_tables`):
    the findings met on the walk go to its ``findings``, each chunk to ``take`` while its
    segment is open (``segment`` None: a small segment read whole, with no control batch,
    whose records no fold needs)."""

    findings: list[Finding]

    def take(self, segment: Segment | None, files: SegmentFiles, table: BatchTable) -> None: ...


def fold_tables(partition: PartitionDir, folds: Sequence[TableFold], *,
                verify_crc: bool = False, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                held: Mapping[str, bytes] | None = None) -> None:
    """One walk of a partition's live segments feeding several analyses: on a broker's tree
    of small segments, opening and walking each segment costs more than any analysis of
    its batches, so analyses that run together share the walk. A small segment whose walk
    has nothing to say and holds no control batch is read whole and walked in one call
    (:func:`~segtools.decode.walk.whole_table`); any other takes the ordinary walk. Each
    fold gets the walk's findings in the order it would have met them walking alone.
    ``held``: small segments' bytes already read (by ``.log`` path: ``verify``'s reading,
    :class:`~segtools.storage.summary.KeptRead`), walked without reading them again."""
    met: list[Finding] = []
    for files in partition.segments:
        data = held.get(str(files.log)) if held else None
        if data is None:
            data = read_small(files)
        table = None if data is None else whole_table(data, verify_crc=verify_crc)
        if table is not None and not table.is_control.any():
            for fold in folds:
                fold.take(None, files, table)
            continue
        for segment, _, table in segment_tables(files, met, verify_crc=verify_crc,
                                                limit=limit):
            for fold in folds:
                fold.findings.extend(met)
                fold.take(segment, files, table)
            met.clear()
        for fold in folds:
            fold.findings.extend(met)
        met.clear()


def batch_records(segment: Segment, batch: Batch, findings: list[Finding]) -> list[Record]:
    """The records of one batch of an open segment (a control batch's markers, say): the
    segment a chunk of :func:`iter_tables` came from stays open while the chunk is used."""
    out: list[Record] = []
    for br in segment.batch_records(BatchTable.from_batches([batch])):
        if br.finding is not None:
            findings.append(br.finding)
        out.extend(br.records)
    return out


def transaction_indexes(partition: PartitionDir, findings: list[Finding]
                        ) -> Iterator[tuple[SegmentFiles, TransactionIndex]]:
    """Each live segment's ``.txnindex``, open (closed when the next is asked for), oldest
    first; segments without one are passed over, and one that cannot be opened is a finding
    in ``findings`` (the others are still read)."""
    for files in partition.segments:
        if files.txnindex is None:
            continue
        try:
            index = TransactionIndex(files.txnindex, files.base_offset)
        except SegtoolsError as e:
            findings.append(file_unreadable(str(files.txnindex), e))
            continue
        with index:
            yield files, index


def producer_snapshots(partition: PartitionDir) -> list[SnapshotFile]:
    """Every ``.snapshot`` of the partition, read (an unreadable one: no entries, and the
    findings that say why)."""
    out = []
    for snap in partition.snapshots:
        snapshot, found = read_producer_snapshot(snap.path)
        out.append(SnapshotFile(snap.offset, str(snap.path), snapshot, tuple(found)))
    return out


def iter_records(partition: PartitionDir, findings: list[Finding], *,
                 want: Callable[[BatchTable], np.ndarray] | None = None,
                 verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT
                 ) -> Iterator[LogRecord]:
    """Deep: every record of every batch ``want`` selects (a mask over a table; all by
    default), oldest first."""
    for files in partition.segments:
        yield from file_records(files.log, findings, want=want, verify_crc=verify_crc,
                                files=files, limit=limit)


def file_records(path: Path, findings: list[Finding], *,
                 want: Callable[[BatchTable], np.ndarray] | None = None,
                 verify_crc: bool = True, files: SegmentFiles | None = None,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT) -> Iterator[LogRecord]:
    """Every record of one file of batches: a segment, or a KRaft ``.checkpoint`` snapshot
    (the same batch format)."""
    try:
        segment = (Segment.open(files, decompress_limit=limit) if files is not None
                   else Segment(path, decompress_limit=limit))
    except SegtoolsError as e:
        findings.append(unreadable(str(path), e))
        return
    with segment:
        for chunk in segment.walk(verify_crc=verify_crc):
            findings.extend(chunk.findings)
            table = chunk.table if want is None else chunk.table.take(want(chunk.table))
            for br in segment.batch_records(table):
                if br.finding is not None:
                    findings.append(br.finding)
                for record in br.records:
                    yield LogRecord(path, br.batch, record)


def iter_chunks(partition: PartitionDir, findings: list[Finding], *, at: int | None = None,
                after: int | None = None, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                advance: Callable[[int], None] | None = None) -> Iterator[Chunk]:
    """Deep, as columns: the records of every batch, a chunk at a time, oldest first (the
    forensic replays read millions of records; none becomes a Python object here).

    With ``at`` (epoch ms) the log is read up to the first batch whose max timestamp is past
    it, and no further (a replay to a moment stops there); batches that end below ``after``
    are passed over first (a snapshot already holds them). ``advance(n)`` is told the bytes of
    batches read, chunk by chunk (a progress bar)."""
    for files in partition.segments:
        stopped = yield from file_chunks(files.log, findings, files=files, at=at, after=after,
                                         limit=limit, advance=advance)
        if stopped:
            return


def file_chunks(path: Path, findings: list[Finding], *, at: int | None = None,
                after: int | None = None, files: SegmentFiles | None = None,
                limit: int = DEFAULT_DECOMPRESS_LIMIT,
                advance: Callable[[int], None] | None = None
                ) -> Generator[Chunk, None, bool]:
    """:func:`iter_chunks` for one file of batches (a segment, or a KRaft ``.checkpoint``);
    returns whether it stopped at ``at``."""
    try:
        segment = (Segment.open(files, decompress_limit=limit) if files is not None
                   else Segment(path, decompress_limit=limit))
    except SegtoolsError as e:
        findings.append(unreadable(str(path), e))
        return False
    with segment:
        for walked in segment.walk():
            findings.extend(walked.findings)
            table = walked.table
            stop = False
            if after is not None:
                table = table.take(table.last_offset >= after)
            if at is not None:
                past = np.flatnonzero(table.max_timestamp > at)
                if len(past):
                    table, stop = table.take(slice(0, int(past[0]))), True
            if advance is not None and len(table):
                advance(int(table.size.sum()))
            for chunk in segment.records(table):
                findings.extend(chunk.findings)
                yield chunk
            if stop:
                return True
    return False
