"""Which files are read through the mapping and which through ``pread`` windows, and what a
truncation under the reader then does (issue 18: no SIGBUS).

Sealed segments (not the last, below the high watermark and recovery point) are mapped; the
active segment, a segment Kafka may still truncate, and any file that changed since it was
listed are read into private memory, so a later truncation cannot reach the spans a consumer
still holds.
"""

from __future__ import annotations

import os
import shutil

import pytest

from segtools.storage import segment as segment_room
from segtools.storage.logdirs import walk
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment
from tests.fixtures_manifest import SAMPLE

LOG = SAMPLE / "orders.v2-eu-0" / "00000000000000000205.log"


@pytest.fixture(autouse=True)
def no_small_files(monkeypatch, request):
    """The fixture segments are a few KiB, below :data:`SMALL_FILE` (read whole with one
    ``pread`` whatever their state); the rules under test are for the files above it."""
    if "small" not in request.node.name:
        monkeypatch.setattr(segment_room, "SMALL_FILE", 0)


def test_small_file_is_read_whole_into_private_memory(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(LOG) as reference:
        want = decoded(reference)
    with Segment(log, sealed=True) as seg:
        assert not seg.is_mapped
        chunks = [c for w in seg.walk() for c in seg.records(w.table)]
        os.truncate(log, 0)  # a truncation cannot reach bytes read at open
        got = [(int(c.columns.offset[i]), c.columns.key(i), c.columns.value(i))
               for c in chunks for i in range(len(c.columns))]
        assert got == want


def decoded(seg: Segment) -> list[tuple]:
    out = []
    for walked in seg.walk():
        for c in seg.records(walked.table):
            out += [(int(c.columns.offset[i]), c.columns.key(i), c.columns.value(i))
                    for i in range(len(c.columns))]
    return out


def test_sealed_file_decodes_from_the_mapping(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(log, sealed=True) as seg:
        assert seg.is_mapped
        table, _ = seg.table()
        chunk = next(iter(seg.records(table)))
        assert chunk.columns.data.base is not None  # a view of the map, no copy


def test_unknown_file_is_read_through_windows(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(log) as seg:  # nothing says Kafka is done with it
        assert not seg.is_mapped


def test_a_file_changed_since_its_listing_is_read_as_live(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    listed = (os.path.getsize(log), os.stat(log).st_mtime_ns)
    with open(log, "ab") as f:  # the broker appended after the listing
        f.write(b"\0" * 10)
    with Segment(log, sealed=True, listed=listed) as seg:
        assert not seg.is_mapped


def test_listing_decides_by_kafkas_rules():
    """In a log dir with checkpoints: the active segment is live, rolled ones below the high
    watermark and recovery point are sealed."""
    (log_dir,), _ = walk([SAMPLE])
    pdir = next(p for p in log_dir.partitions if p.path.name == "orders.v2-eu-0")
    assert [s.sealed for s in pdir.segments] == [True, True, False]
    assert [s.sealed for s in load_partition_dir(pdir.path).segments] == [True, True, False]
    with Segment.open(pdir.segments[0]) as rolled, Segment.open(pdir.segments[-1]) as active:
        assert rolled.is_mapped and not active.is_mapped


def test_live_file_decodes_into_private_memory_that_survives_truncation(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(LOG) as reference:
        want = decoded(reference)
    with Segment(log) as seg:
        chunks = [c for w in seg.walk() for c in seg.records(w.table)]
        os.truncate(log, 0)  # then a follower truncates it under us
        got = [(int(c.columns.offset[i]), c.columns.key(i), c.columns.value(i))
               for c in chunks for i in range(len(c.columns))]
        assert got == want  # the spans point into private memory


def test_truncation_under_a_live_read_ends_in_a_finding(tmp_path):
    log = tmp_path / LOG.name
    shutil.copyfile(LOG, log)
    with Segment(log) as seg:
        os.truncate(log, 100)  # a follower truncates after the open, before the read
        table, findings = seg.table()
    assert len(table) == 0
    assert [f.code for f in findings] == ["segment_truncated_while_reading"]
