"""The compiled reading of small segments (``storage/_summary.pyx``) answers exactly as the
table walk does, on every fixture tree (hostile ones included), and steps aside whenever there
is something to report.

``summarize`` and ``verify_partition`` take the compiled path for a small local segment and
fall back to the walk for anything it declines; here each is compared, segment by segment and
partition by partition, with the walk alone.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil

import numpy as np
import pytest

from segtools.analysis import verify as verify_room
from segtools.analysis.verify import verify_partition
from segtools.cli.main import main
from segtools.storage import summary as summary_room
from segtools.storage.logdirs import walk
from segtools.storage.segment import SMALL_FILE, Segment
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


def _plain_walk(monkeypatch) -> None:
    """Every segment read by the table walk alone: the compiled reading declines all."""
    monkeypatch.setattr(summary_room._summary, "summarize_small", lambda *a: None)
    monkeypatch.setattr(summary_room._summary, "verify_small", lambda *a: None)


#: The commands that read summaries or ``verify``'s small-segment checks, as an operator runs
#: them (one clock for those that evaluate against one).
COMMANDS = (
    ("scan", "--format", "jsonl", "--jobs", "1"),
    ("scan", "--crc", "--jobs", "1"),
    ("verify", "--format", "jsonl", "--jobs", "1"),
    ("retention", "--format", "json", "--at", "2024-06-01T12:00:00Z"),
    ("find", "--timestamp", "1700000000000", "--format", "jsonl", "--jobs", "1"),
)


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_commands_print_the_walks_bytes(tree, command, monkeypatch):
    """Each command's output and exit code, byte for byte, are those of the table walk
    alone, on every fixture tree."""
    fast = _cli(*command, str(tree))
    _plain_walk(monkeypatch)
    assert _cli(*command, str(tree)) == fast


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_every_small_shape_takes_the_compiled_path(tree):
    """Every small local segment about which the walk has nothing to report is read by the
    compiled code, whatever its shape: magic 0/1 messages and compressed wrappers of every
    codec, control batches and transactional data, compacted offset gaps, a cleaner's or a
    follower's index entries naming a later batch, LogAppendTime, preallocated index tails."""
    declined = []
    log_dirs, _ = walk([tree])
    for d in log_dirs:
        for p in d.partitions:
            previous_last, epoch = None, -1
            for s in p.segments:
                walked = _walked(s, s is p.active_segment, True)
                if s.log_size > SMALL_FILE or isinstance(walked, tuple):
                    continue
                clean = not walked.findings
                if clean and summarize_small_of(s, True) is None:
                    declined.append(("summary", s.log))
                checked = small_segment_checks(s, previous_last, epoch)
                if clean and not verify_partition_findings(d, p, s) and checked is None:
                    declined.append(("verify", s.log))
                if checked is not None:
                    epoch = max([epoch, *(e for e, _ in checked[2])])
                if walked.last_offset is not None:
                    previous_last = walked.last_offset
    assert not declined


def summarize_small_of(s, crc: bool = False):
    return summary_room._summary.summarize_small(
        os.fsencode(s.log), None if s.timeindex is None else os.fsencode(s.timeindex), crc,
        SMALL_FILE, summary_room.SMALL_TIME_INDEX, 1 << 26)


def verify_partition_findings(d, p, s) -> list:
    """The findings ``verify`` has for segment ``s`` of ``p`` beyond the offset steps'
    (compacted gaps are classified per partition, not per segment), by the walk alone."""
    files = {str(s.log), str(s.index), str(s.timeindex), str(s.txnindex)}
    return [f for f in verify_partition(d, p)
            if f.path in files and not f.code.startswith("offset_")
            and f.code != "timeindex_padded_active"]


def test_a_wrapper_that_does_not_inflate_is_left_to_the_walk(tmp_path):
    """A compressed legacy wrapper whose payload is damaged (CRC not checked) is declined by
    the compiled summary, so its ``corrupt_message`` finding comes from the walk."""
    pdir = tmp_path / "legacy.v1-0"
    shutil.copytree(FIXTURES / "logdirs" / "legacy" / "legacy.v1-0", pdir)
    s = next(s for _, _, s in _segments(pdir) if s.base_offset == 0)
    assert summarize_small_of(s) is not None
    walked = _walked(s, False, False)
    assert "gzip" in walked.codecs
    with Segment.open(s) as segment:
        table = next(iter(segment.walk())).table
    row = int(np.flatnonzero(table.codec == 1)[0])  # the first gzip wrapper
    at = int(table.position[row] + table.size[row]) - 8  # inside its deflate stream
    data = bytearray(s.log.read_bytes())
    data[at:at + 4] = b"\xff\xff\xff\xff"
    s.log.write_bytes(bytes(data))
    assert summarize_small_of(s) is None
    assert _summarised(s, False, False) == _walked(s, False, False)
    assert "corrupt_message" in {f.code for f in _walked(s, False, False).findings}


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_what_verify_keeps_is_what_a_second_read_gives(tree):
    """``verify``'s compiled reading, kept (``keep``), gives the summary ``summarize`` gives
    and the ``.log``'s bytes as they are on disk: so the report's inputs and folds may take
    it instead of reading the segment again."""
    from segtools.storage.summary import kept_summary

    kept_any = False
    for _, p, s in _segments(tree):
        checked = small_segment_checks(s, None, -1, 1 << 26, True)
        plain = small_segment_checks(s, None, -1, 1 << 26)
        if checked is None:
            assert plain is None
            continue
        assert checked[:-1] == plain[:-1]
        kept = checked[-1]
        active = s is p.active_segment
        assert kept_summary(s, kept, is_active=active) == _summarised(s, active, False)
        assert kept.data == s.log.read_bytes()
        kept_any = True
    assert kept_any or tree != SAMPLE
