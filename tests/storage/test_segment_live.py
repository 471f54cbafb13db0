"""A segment that changes while it is read (a live active segment) is decoded from private
memory, so a later truncation cannot reach the spans a consumer still holds."""

from __future__ import annotations

import os
import shutil

from segtools.model import Batch
from segtools.records import Chunk
from segtools.storage.segment import Segment
from tests.fixtures_manifest import SAMPLE

LOG = SAMPLE / "orders.v2-eu-0" / "00000000000000000205.log"


def decoded(seg: Segment, chunks) -> list[tuple]:
    out = []
    for c in chunks:
        if isinstance(c, Chunk):
            out += [(int(c.columns.offset[i]), c.columns.key(i), c.columns.value(i))
                    for i in range(len(c.columns))]
    return out


def test_unchanged_file_decodes_from_the_mapping(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(log) as seg:
        batches = [b for b in seg.batches() if isinstance(b, Batch)]
        chunk = next(c for c in seg.chunks(batches) if isinstance(c, Chunk))
        assert chunk.columns.data.base is not None  # a view of the map, no copy
        assert seg.private_copy(0, seg.size) is None


def test_changed_file_decodes_from_a_private_copy_that_survives_truncation(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(LOG) as reference:
        want = decoded(reference, reference.chunks(
            [b for b in reference.batches() if isinstance(b, Batch)]))
    with Segment(log) as seg:
        batches = [b for b in seg.batches() if isinstance(b, Batch)]
        with open(log, "ab") as f:  # the broker appends: the file is live
            f.write(LOG.read_bytes()[:100])
        chunks = list(seg.chunks(batches))
        os.truncate(log, 0)  # then a follower truncates it under us
        assert decoded(seg, chunks) == want  # the spans point into private memory
