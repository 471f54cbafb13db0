"""One partition's log, walked in offset order across its segments: the forensic analyses' edge.

The forensic questions (what was committed, which transaction hangs, what the controller
decided) are about a partition's whole history, not one segment, so this module strings the
live segments of a :class:`~segtools.storage.partition.PartitionDir` together as
``UnifiedLog`` does (ordered by base offset) and hands out batches or records with the
segment they came from. Findings met on the way (torn tails, CRC mismatches, undecodable
batches) go to the caller's list; reading carries on, as everywhere in segtools.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import Chunk
from segtools.decode.table import BatchTable
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.model import Batch, Record
from segtools.storage.location import as_path
from segtools.storage.logdirs import walk
from segtools.storage.partition import (
    PartitionDir,
    PartitionState,
    SegmentFiles,
    load_partition_dir,
)
from segtools.storage.segment import Segment, unreadable


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
    if not path.is_dir():
        raise SegtoolsError("not a partition directory", path=str(path))
    return load_partition_dir(path)


def partitions_of(paths, topic: str) -> list[PartitionDir]:
    """Every live partition directory of ``topic`` found under ``paths`` (log dirs,
    partition dirs, or directories of log-dir copies), in log-dir then partition order."""
    log_dirs, _ = walk(paths)
    return [p for d in log_dirs for p in d.partitions
            if p.name is not None and p.name.topic == topic and p.name.state is PartitionState.LIVE]


def iter_tables(partition: PartitionDir, findings: list[Finding], *,
                verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT
                ) -> Iterator[tuple[Segment, SegmentFiles, BatchTable]]:
    """Shallow: the batch table of every live segment, oldest first, a chunk at a time. The
    segment stays open while its chunk is being consumed (callers may decode its records)."""
    for files in partition.segments:
        try:
            segment = Segment.open(files, decompress_limit=limit)
        except SegtoolsError as e:
            findings.append(unreadable(str(files.log), e))
            continue
        with segment:
            for chunk in segment.walk(verify_crc=verify_crc):
                findings.extend(chunk.findings)
                yield segment, files, chunk.table


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
