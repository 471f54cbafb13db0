"""The compiled reading of small segments (``storage/_summary.pyx``) answers exactly as the
table walk does, on every fixture tree (hostile ones included), and steps aside whenever there
is something to report.

``summarize`` and ``verify_partition`` take the compiled path for a small local segment and
fall back to the walk for anything it declines; here each is compared, segment by segment and
partition by partition, with the walk alone.
"""

from __future__ import annotations

import os
import shutil

import pytest

from segtools.analysis import verify as verify_room
from segtools.analysis.verify import verify_partition
from segtools.storage import summary as summary_room
from segtools.storage.logdirs import walk
from segtools.storage.summary import small_segment_checks, summarize
from tests.fixtures_manifest import FIXTURES, SAMPLE

TREES = sorted(p for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())


def _segments(tree):
    log_dirs, _ = walk([tree])
    for d in log_dirs:
        for p in d.partitions:
            for s in p.segments:
                yield d, p, s


def _walked(s, active, crc):
    try:
        return summary_room._walked(s, is_active=active, verify_crc=crc, time_index=None,
                                    decompress_limit=1 << 26)
    except Exception as e:  # the same error must come out of both paths
        return type(e), str(e)


def _summarised(s, active, crc):
    try:
        return summarize(s, is_active=active, verify_crc=crc, decompress_limit=1 << 26)
    except Exception as e:
        return type(e), str(e)


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
@pytest.mark.parametrize("crc", [False, True])
def test_summary_is_the_walks(tree, crc):
    """Every segment's summary (fields, findings, errors) is the table walk's."""
    seen = 0
    for _, p, s in _segments(tree):
        active = s is p.active_segment
        assert _summarised(s, active, crc) == _walked(s, active, crc), s.log
        seen += 1
    assert seen


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_verify_is_the_walks(tree, monkeypatch):
    """Every partition's findings, in order, are those of the ordinary reading alone."""
    log_dirs, _ = walk([tree])
    fast = [(p.path, verify_partition(d, p)) for d in log_dirs for p in d.partitions]
    monkeypatch.setattr(verify_room, "small_segment_checks", lambda *a: None)
    slow = [(p.path, verify_partition(d, p)) for d in log_dirs for p in d.partitions]
    assert fast == slow


def test_plain_segments_take_the_compiled_path():
    """The sample tree's plain segments are read by the compiled code (else this file would
    compare the walk with itself)."""
    taken = [s for _, _, s in _segments(SAMPLE)
             if small_segment_checks(s, None, -1) is not None]
    assert len(taken) >= 3


def test_a_torn_tail_is_left_to_the_walk(tmp_path):
    """A segment cut inside its last batch is declined, so its ``truncated_tail`` finding
    comes from the walk; the compiled summary of the whole copy is taken."""
    source = SAMPLE / "orders.v2-eu-0"
    pdir = tmp_path / "orders.v2-eu-0"
    shutil.copytree(source, pdir)
    log = sorted(pdir.glob("*.log"))[0]
    whole, = [s for _, _, s in _segments(pdir) if s.log == log]
    assert small_segment_checks(whole, None, -1) is not None
    os.truncate(log, log.stat().st_size - 5)
    torn, = [s for _, _, s in _segments(pdir) if s.log == log]
    assert small_segment_checks(torn, None, -1) is None
    summary = summarize(torn, is_active=False)
    assert "truncated_tail" in {f.code for f in summary.findings}
