"""The simulation's input: a partition's appends, read from its segment files (the CLI, the
API, the report) or built from rows already read (the Spark source's ``batches`` and
``records`` levels), the same either way.

This is the what-if's reading room, as :mod:`segtools.analysis.partition_input` is
retention's: the rules (:mod:`segtools.analysis.simulation`) and the per-topic assembly
(:mod:`segtools.analysis.whatif`) get a :class:`~segtools.analysis.simulation.History` and
open no file. A face that has the rows (Spark's executors, one topic per call) must simulate
exactly what ``segtools retention --what-if`` simulates from the files, so both go through the
same two builders: a delete-only partition is its batch headers in log order
(:meth:`~segtools.analysis.simulation.History.from_batches`); a compacted one is the cleaner's
own columns (from the files by :func:`segtools.analysis.cleaner_input.read_records`, from rows
by :func:`segtools.analysis.cleaner_input.from_rows`) turned into the simulator's units by
:func:`history_from_columns`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from segtools.analysis import compaction as comp
from segtools.analysis.cleaner_input import from_rows, read_records
from segtools.analysis.config import TopicConfig
from segtools.analysis.partition_input import PartitionInput
from segtools.analysis.simulation import History
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.storage.segment import Segment

# --------------------------------------------------------------------------- from the files


def history(pi: PartitionInput, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> History:
    """One partition's appends: batch headers, or for a compacted topic its records (keys,
    tombstones, delete horizons) read by the cleaner's own reader."""
    bases = [files.base_offset for files in pi.dir.segments]
    mtime = {s.base_offset: s.mtime_ms for s in pi.summaries}
    mtimes = [mtime.get(b, -1) for b in bases]
    on_disk = sum(s.size for s in pi.summaries)
    if pi.config.compact:
        return replace(history_from_columns(read_records(pi, limit=limit)[0]).with_segments(
            bases, mtimes), disk_bytes=on_disk)
    parts = []
    for files in pi.dir.segments:
        with Segment.open(files, decompress_limit=limit) as seg:
            for walked in seg.walk(verify_crc=False):
                t = walked.table
                parts.append((t.base_offset, t.last_offset, t.max_timestamp, t.size,
                              _oldest_records(seg, t)))
    if not parts:
        return replace(History.from_batches([], [], [], []).with_segments(bases, mtimes),
                       disk_bytes=on_disk)
    cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    return replace(History.from_batches(*cols[:4]).with_segments(bases, mtimes)
                   .with_oldest(cols[4]), disk_bytes=on_disk)


def _oldest_records(seg: Segment, t) -> np.ndarray:
    """Each batch's oldest data record timestamp, read from its records (a producer may put
    a late record after newer ones: its header's first timestamp is not always the oldest),
    as ``segtools retention``'s deep pass reads them; a batch of one record, a control batch,
    or one whose records cannot be read, keeps its header's first timestamp."""
    oldest = np.asarray(t.first_timestamp, np.int64).copy()
    # a batch of one record has it in its header (first = max); only larger ones are read
    data = ~t.is_control & (t.count != 1)
    if not data.any():
        return oldest
    rows = np.flatnonzero(data)
    for chunk in seg.records(t.take(data)):
        cols = chunk.columns
        if not len(cols):
            continue
        low = np.full(len(chunk.table), np.iinfo(np.int64).max, np.int64)
        np.minimum.at(low, cols.batch, np.asarray(cols.timestamp, np.int64))
        at = rows[np.searchsorted(t.base_offset[rows], chunk.table.base_offset)]
        read = low < np.iinfo(np.int64).max
        oldest[at[read]] = np.minimum(oldest[at[read]], low[read])
    return oldest


def history_from_columns(cols: comp.CompactionColumns) -> History:
    """Records as the cleaner sees them (``CompactionColumns``) to the simulator's units;
    control records and empty-batch placeholders carry no key, so a clean drops them."""
    if not len(cols):
        return History.from_batches([], [], [], [])
    batches, unit_batch = np.unique(cols.batch, return_inverse=True)
    nb = batches.shape[0]
    size = np.bincount(unit_batch, weights=cols.size, minlength=nb)
    ts = np.full(nb, -1, np.int64)
    np.maximum.at(ts, unit_batch, cols.timestamp)
    last = np.full(nb, -1, np.int64)
    np.maximum.at(last, unit_batch, cols.offset)
    data = (cols.flags & (comp.FLAG_CONTROL | comp.FLAG_EMPTY_BATCH)) == 0
    key = np.where(data, cols.key_id, -1)
    return History.from_records(batches, last, ts, np.rint(size), unit_batch, cols.offset,
                                cols.timestamp, cols.size, key, cols.tombstone & data,
                                cols.delete_horizon_ms)


# --------------------------------------------------------------------------- from rows


#: The batch columns :func:`from_batch_rows` reads (timestamps in epoch ms, -1 for none).
BATCH_COLUMNS = ("segment_base_offset", "position", "base_offset", "last_offset",
                 "base_timestamp", "max_timestamp", "size")


def from_batch_rows(cols: Mapping[str, Sequence[int]]) -> History:
    """A delete-only partition's appends from its batch rows (:data:`BATCH_COLUMNS`, any
    order): put in log order (segment, then position in it), every batch one unit with its
    first record's timestamp as its oldest, as :func:`history` walks the segments' batch
    headers (control batches included: they take bytes on disk and roll segments like any
    other)."""
    seg = np.asarray(cols["segment_base_offset"], np.int64)
    if not seg.size:
        return History.from_batches([], [], [], [])
    order = np.lexsort((np.asarray(cols["position"], np.int64), seg))

    def col(name: str) -> np.ndarray:
        return np.asarray(cols[name], np.int64)[order]

    first = col("base_timestamp")  # the first record's, -1 where the header has none
    largest = col("max_timestamp")
    return History.from_batches(col("base_offset"), col("last_offset"), largest,
                                col("size")).with_segments(seg).with_oldest(
        np.where(first >= 0, first, largest))


def from_record_rows(cols: Mapping[str, Sequence], empty_batches: Sequence[Mapping]
                     ) -> History:
    """A compacted partition's appends from its record rows (control records included) and
    its empty batches, in the shapes :func:`~segtools.analysis.cleaner_input.from_rows` takes:
    the cleaner's view of each record (key, tombstone, share of its batch's bytes, delete
    horizon), then the simulator's units."""
    columns, _ = from_rows(cols, empty_batches)
    segments = list(cols["segment_base_offset"]) + [b["segment_base_offset"]
                                                   for b in empty_batches]
    return history_from_columns(columns).with_segments(segments)


def on_disk(h: History, segment_bases: Sequence[int], disk_bytes: int,
            mtimes: Sequence[int] | None = None) -> History:
    """``h`` starting from the segments on disk (their base offsets, empty ones included) and
    their bytes, as :func:`history` has it from the files (a face with rows: Spark's segment
    rows give both); ``mtimes``: the segment files' mtimes in epoch ms, in the same order
    (what a segment without record timestamps is aged by; without them it is aged as if
    from 1970, and deleted at once)."""
    given = [-1] * len(segment_bases) if mtimes is None else list(mtimes)
    had = h.segment_mtimes.tolist() if h.segment_mtimes.size == h.segment_bases.size \
        else [-1] * h.segment_bases.size
    return replace(h.with_segments([*segment_bases, *h.segment_bases.tolist()],
                                   [*given, *had]), disk_bytes=disk_bytes)


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
