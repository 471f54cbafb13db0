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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.table import BatchTable
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.model import Batch, Record
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
    path = Path(partition)
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
