"""The simulation's input built from rows already read (the Spark source's ``batches`` and
``records`` levels), as :func:`segtools.analysis.whatif.history` builds it from a partition's
segment files, and the per-topic what-if over such inputs.

A face that has the rows (Spark's executors, one topic per call) must simulate exactly what
``segtools retention --what-if`` simulates from the files, so the rows go through the same two
builders the CLI's reader uses: a delete-only partition is its batch headers in log order
(:meth:`~segtools.analysis.simulation.History.from_batches`); a compacted one is the cleaner's
own columns (:func:`segtools.analysis.cleaner_input.from_rows`, the input of ``segtools
compaction`` from rows) turned into the simulator's units by
:func:`~segtools.analysis.whatif.history_from_columns`. The per-topic assembly is
:mod:`segtools.analysis.whatif`'s: the recommendation search and the partitions' runs, summed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from segtools.analysis import whatif
from segtools.analysis.cleaner_input import from_rows
from segtools.analysis.config import TopicConfig
from segtools.analysis.simulation import AUTO, History, Ingest

#: The batch columns :func:`from_batch_rows` reads (timestamps in epoch ms, -1 for none).
BATCH_COLUMNS = ("segment_base_offset", "position", "base_offset", "last_offset",
                 "max_timestamp", "size")


def from_batch_rows(cols: Mapping[str, Sequence[int]]) -> History:
    """A delete-only partition's appends from its batch rows (:data:`BATCH_COLUMNS`, any
    order): put in log order (segment, then position in it), every batch one unit, as
    :func:`~segtools.analysis.whatif.history` walks the segments' batch headers (control
    batches included: they take bytes on disk and roll segments like any other)."""
    seg = np.asarray(cols["segment_base_offset"], np.int64)
    if not seg.size:
        return History.from_batches([], [], [], [])
    order = np.lexsort((np.asarray(cols["position"], np.int64), seg))

    def col(name: str) -> np.ndarray:
        return np.asarray(cols[name], np.int64)[order]

    return History.from_batches(col("base_offset"), col("last_offset"), col("max_timestamp"),
                                col("size"))


def from_record_rows(cols: Mapping[str, Sequence], empty_batches: Sequence[Mapping]
                     ) -> History:
    """A compacted partition's appends from its record rows (control records included) and
    its empty batches, in the shapes :func:`~segtools.analysis.cleaner_input.from_rows` takes:
    the cleaner's view of each record (key, tombstone, share of its batch's bytes, delete
    horizon), then the simulator's units."""
    columns, _ = from_rows(cols, empty_batches)
    return whatif.history_from_columns(columns)


@dataclass(frozen=True, slots=True)
class RowsPartition:
    """A partition known from rows: what the simulation asks of the
    :class:`~segtools.analysis.partition_input.PartitionInput` it gets from the files (its
    names, topic config and cleaner checkpoint; ``label`` seeds the roll jitter, so it must be
    the files' ``topic-partition``)."""

    topic: str
    partition: int
    config: TopicConfig
    cleaner_offset: int | None = None
    log_dir: str = ""

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


def what_if_topic(topic: str, partitions: Sequence[tuple[RowsPartition, History]],
                  changes: Mapping[str, object] | None, *, now_ms: int,
                  horizon_days: float = whatif.DEFAULT_HORIZON_DAYS, ingest: Ingest = AUTO,
                  recommend: bool = False
                  ) -> tuple[list[whatif.WhatIf], whatif.Recommendation | None]:
    """One topic of :func:`~segtools.analysis.whatif.what_if_report` from inputs built from
    rows: per partition (each log dir's copy counted, as the replication factor) and for the
    topic, today's config against ``changes`` (or, with ``recommend`` and no ``changes``,
    against the recommended change), and the recommendation when one was asked and found."""
    if not partitions:
        return [], None
    end_ms = now_ms + int(horizon_days * whatif.DAY_MS)
    parts = [whatif.PartitionHistory(p, h) for p, h in partitions]
    return whatif.what_if_topic(topic, parts, changes, now_ms=now_ms, end_ms=end_ms,
                                ingest=ingest, recommend=recommend)
