"""The log cleaner's input read from a partition: every record of its segments as the columns
:func:`segtools.analysis.compaction.explain_compaction` replays (``LogCleaner`` reads the
same: keys, tombstones, batch flags and delete horizons, markers' types).

The partition I/O of the compaction analysis lives here, so the cleaner's rules stay pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from segtools.analysis.compaction import (
    FLAG_CONTROL,
    FLAG_EMPTY_BATCH,
    ColumnsBuilder,
    CompactionColumns,
    CompactionRecord,
    batch_flags,
    marker_flags,
)
from segtools.analysis.partition_input import PartitionInput
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import Chunk, gather
from segtools.decode.table import BatchTable
from segtools.storage.segment import Segment


def _batch_flags(t: BatchTable) -> np.ndarray:
    return batch_flags(t.is_control, t.is_transactional, t.magic)


def _horizon(t: BatchTable) -> np.ndarray:
    return np.where(t.has_delete_horizon, t.base_timestamp, -1)


def read_records(pi: PartitionInput, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                 ) -> tuple[CompactionColumns, dict[int, int]]:
    """Every record of the partition as cleaner-relevant columns, and each segment's first
    batch max timestamp (``LogSegment.getFirstBatchTimestamp``)."""
    builder = ColumnsBuilder()
    first_batch: dict[int, int] = {}
    for files, s in zip(pi.dir.segments, pi.summaries, strict=True):
        base = s.base_offset
        with Segment.open(files, decompress_limit=limit) as seg:
            for chunk in seg.walk(verify_crc=False):
                t = chunk.table
                if len(t) and base not in first_batch:
                    first_batch[base] = int(t.max_timestamp[0])
                empty = t.count == 0
                if empty.any():  # the cleaner's empty batches: one row each, no key
                    e = t.take(empty)
                    n = len(e)
                    builder.add_columns(e.last_offset, e.max_timestamp, [None] * n,
                                        np.zeros(n, bool), base,
                                        _batch_flags(e) | FLAG_EMPTY_BATCH, e.producer_id,
                                        _horizon(e), e.size.astype(float), e.base_offset)
                for records in seg.records(t.take(~empty)):
                    _add_chunk(builder, records, base)
    return builder.build(), first_batch


def _add_chunk(builder: ColumnsBuilder, chunk: Chunk, base: int) -> None:
    cols, t = chunk.columns, chunk.table
    if not len(cols):
        return
    per_record = np.bincount(cols.batch, minlength=len(t))
    share = t.size / np.maximum(np.where(t.count > 0, t.count, per_record), 1)
    bi = cols.batch
    flags = _batch_flags(t)[bi]
    for i in np.flatnonzero(flags & FLAG_CONTROL):
        flags[i] |= marker_flags(cols.key(int(i)))
    keys = _keys(cols, flags)
    builder.add_columns(cols.offset, cols.timestamp, keys, cols.value_len < 0, base, flags,
                        t.producer_id[bi], _horizon(t)[bi], share[bi], t.base_offset[bi])


def _keys(cols, flags: np.ndarray) -> list[bytes | None]:
    """Every record's key as bytes (None: null key, or a control record), copied out in one
    compiled call and sliced from one bytes object: no numpy work per record."""
    lengths = np.where((flags & FLAG_CONTROL) != 0, -1, cols.key_len)
    out, offsets = gather(cols.data, cols.key_pos, lengths)
    blob, at = out.tobytes(), offsets.tolist()
    return [None if ln < 0 else blob[at[i]:at[i + 1]] for i, ln in enumerate(lengths.tolist())]


def _record_flags(is_control: bool, is_transactional: bool, magic: int,
                  key: bytes | None) -> int:
    flags = int(batch_flags(is_control, is_transactional, magic))
    return flags | marker_flags(key) if is_control else flags


def from_rows(cols: Mapping[str, Sequence], empty_batches: Sequence[Mapping]
              ) -> tuple[CompactionColumns, dict[int, int]]:
    """The cleaner's input from rows already read (the Spark source's records level, in
    segment and offset order, timestamps in ms with -1 for none), as :func:`read_records`
    builds it from the segments: batch flags and markers, each record's share of its batch's
    bytes, a placeholder per empty batch, and each segment's first batch max timestamp (the
    batch at the lowest position)."""
    builder = ColumnsBuilder()
    first: dict[int, tuple[int, int]] = {}  # segment -> (position, its batch max timestamp)
    for b in empty_batches:
        base = b["segment_base_offset"]
        builder.add_record(CompactionRecord(
            b["last_offset"], b["max_timestamp"], None, False, base,
            _record_flags(b["is_control"], b["is_transactional"], b["magic"], None)
            | FLAG_EMPTY_BATCH, b["producer_id"], b["delete_horizon"], float(b["size"]),
            b["base_offset"]))
        first[base] = min(first.get(base, (b["position"], b["max_timestamp"])),
                          (b["position"], b["max_timestamp"]))
    segs, positions = cols["segment_base_offset"], cols["position"]
    per_batch: dict[tuple[int, int], int] = {}
    for seg, pos in zip(segs, positions, strict=True):
        per_batch[seg, pos] = per_batch.get((seg, pos), 0) + 1
    n = len(segs)
    flags = [_record_flags(*f) for f in zip(cols["is_control"], cols["is_transactional"],
                                            cols["magic"], cols["key"], strict=True)]
    keys = [None if c else k for c, k in zip(cols["is_control"], cols["key"], strict=True)]
    share = [size / max(count if count is not None else per_batch[seg, pos], 1)
             for size, count, seg, pos in zip(cols["batch_size"], cols["batch_count"], segs,
                                              positions, strict=True)]
    for seg, pos, ts in zip(segs, positions, cols["batch_max_timestamp"], strict=True):
        first[seg] = min(first.get(seg, (pos, ts)), (pos, ts))
    start = 0
    while start < n:  # one block per segment (add_columns takes the segment as a scalar)
        seg = segs[start]
        stop = start
        while stop < n and segs[stop] == seg:
            stop += 1
        block = slice(start, stop)
        builder.add_columns(cols["offset"][block], cols["timestamp"][block], keys[block],
                            [v is None for v in cols["value_size"][block]], seg, flags[block],
                            cols["producer_id"][block], cols["delete_horizon"][block],
                            share[block], cols["batch_base_offset"][block])
        start = stop
    return builder.build(), {seg: ts for seg, (_, ts) in first.items()}
