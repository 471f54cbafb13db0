"""The log cleaner's input read from a partition: every record of its segments as the columns
:func:`segtools.analysis.compaction.explain_compaction` replays (``LogCleaner`` reads the
same: keys, tombstones, batch flags and delete horizons, markers' types).

The partition I/O of the compaction analysis lives here, so the cleaner's rules stay pure.
"""

from __future__ import annotations

import numpy as np

from segtools.analysis.compaction import (
    FLAG_CONTROL,
    FLAG_EMPTY_BATCH,
    ColumnsBuilder,
    CompactionColumns,
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
