"""Live broker (issue 8 §3): commands read a partition while a pretend broker appends
Kafka-written batches in torn pieces, rolls segments, trims indexes and deletes old segments
(retention), and in one test also truncates the active segment (a follower's ``truncateTo``).

The contract: the reader process never dies, and every run ends with exit 0 or 1, or with
exit 2 and one ``segtools: error: <path>: <what>`` line; never "internal error", never a
traceback. Deterministic single-event tests follow, one per thing a broker does to a file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from segtools.errors import SegtoolsError
from segtools.model import Batch
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment
from segtools.storage.summary import summarize
from tests.fixtures_manifest import SAMPLE
from tests.robustness.commands import Tree, argument_sets

ROOT = Path(__file__).resolve().parents[2]
LIVE = [sys.executable, "-m", "tests.robustness.live"]


def check_runs(lines: list[str]) -> list[dict]:
    """Every run kept the contract (a death, a traceback or an internal error fails)."""
    runs = [json.loads(line) for line in lines if line.startswith("{")]
    for run in runs:
        assert run["code"] in (0, 1, 2), run
        assert "Traceback" not in run["stderr"], run
        assert "internal error" not in run["stderr"], run
        if run["code"] == 2:  # the error is one line (gentle mode's notice, or once the
            # writer has stopped and freed its .lock the stopped broker's, may precede it)
            lines = [line for line in run["stderr"].strip().splitlines()
                     if not line.startswith(("segtools: gentle mode: ",
                                             "segtools: no running broker holds "))]
            assert len(lines) == 1 and lines[0].startswith("segtools: error: "), run
    assert runs
    return runs


def live_run(tree: Tree, mode: str, seconds: float = 6) -> tuple[subprocess.CompletedProcess,
                                                                 list[dict]]:
    pdir = tree.sample / "live-0"
    pdir.mkdir()
    writer = subprocess.Popen([*LIVE, "write", str(pdir), str(seconds + 1), mode], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        reader = subprocess.run([*LIVE, "read", str(tree.root), str(seconds)], cwd=ROOT,
                                capture_output=True, text=True, timeout=300)
    finally:
        out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err[-2000:]
    assert json.loads(out)["next_offset"] > 100, "the broker wrote too little to prove much"
    return reader, reader.stdout.splitlines()


def test_every_command_survives_appends_rolls_and_retention(tree):
    reader, lines = live_run(tree, "append")
    assert reader.returncode == 0, (reader.returncode, reader.stderr[-3000:])
    runs = check_runs(lines)
    assert {r["argv"][0] for r in runs} == {a[0] for a in argument_sets(tree)}
    assert sum(r["code"] in (0, 1) for r in runs) > len(runs) // 2, runs[:5]


def test_every_command_survives_follower_truncation(tree):
    """A follower truncates by Kafka's rules (at or above the high watermark, into a rolled
    segment when the target lies there) while every command reads: the files Kafka may still
    shrink are read through ``pread`` windows, so no run dies (a SIGBUS fails this test), and
    every run keeps the contract. ``benchmarks/bench_live.py`` runs this 200 times in a row."""
    reader, lines = live_run(tree, "truncate")
    assert reader.returncode == 0, (f"reader died: exit {reader.returncode} (SIGBUS is "
                                    f"-{int(signal.SIGBUS)})", reader.stderr[-3000:])
    check_runs(lines)


# ------------------------------------------------------------------ one event at a time


@pytest.fixture
def partition(tmp_path) -> Path:
    pdir = tmp_path / "orders-0"
    shutil.copytree(SAMPLE / "orders.v2-eu-0", pdir)
    return pdir


def walk_batches(segment: Segment) -> list[Batch]:
    return segment.table()[0].batches()


@pytest.mark.parametrize("sealed", [True, False], ids=["mapped", "windows"])
def test_deleted_while_open_reads_on(partition, sealed):
    """Retention unlinks a segment a reader has open: the open inode keeps the data (POSIX),
    so the read completes as if nothing happened, through the mapping or through windows."""
    log = partition / "00000000000000000205.log"
    with Segment(log, sealed=sealed) as segment:
        expected = walk_batches(segment)
    with Segment(log, sealed=sealed) as segment:
        log.unlink()
        table, _ = segment.table()
        assert table.batches() == expected
        assert list(segment.batch_records(table))


def test_renamed_while_open_reads_on(partition):
    log = partition / "00000000000000000205.log"
    with Segment(log) as segment:
        log.rename(log.with_name(log.name + ".deleted"))
        assert len(walk_batches(segment)) == 4


def test_deleted_between_listing_and_opening_is_a_typed_error(partition):
    """The directory was listed, then retention removed the files: every opener raises a
    SegtoolsError naming the file (the CLI's one-line error), not an OSError traceback."""
    pdir = load_partition_dir(partition)
    first = pdir.segments[0]
    for path in (first.log, first.index, first.timeindex):
        path.unlink()
    with pytest.raises(SegtoolsError) as e:
        summarize(first, is_active=False)
    assert e.value.path == str(first.log)
    for cls, path in ((OffsetIndex, first.index), (TimeIndex, first.timeindex)):
        with pytest.raises(SegtoolsError) as e:
            cls(path, first.base_offset)
        assert e.value.path == str(path)


def test_segment_deleted_under_the_cli_is_one_line(partition):
    """The same race through the CLI: a clean one-line error and exit 2."""
    from tests.robustness.commands import run_cli

    log = partition / "00000000000000000000.log"
    log.unlink()
    r = run_cli(["dump", str(log)])
    assert r.code == 2 and r.stderr.startswith("segtools: error: ") and r.stderr.count("\n") == 1


def test_index_trimmed_after_counting_never_reads_past_the_end(partition):
    """``trimToValidSize`` at a roll shrinks the preallocated index a reader has mapped:
    lookups stay inside the valid entries, so no page past the new end is touched."""
    index = partition / "00000000000000000205.index"
    valid = index.stat().st_size
    with open(index, "ab") as f:
        f.truncate(valid + (1 << 20))
    with OffsetIndex(index, 205) as oi:
        entries = oi.valid_entries
        os.truncate(index, valid)
        assert oi.valid_entries == entries
        assert oi.lookup(10**9).offset >= 205 and list(oi.entries())


SIGBUS_CHILD = textwrap.dedent("""
    import os, sys
    from segtools.storage.segment import Segment
    log = sys.argv[1]
    with Segment(log) as segment:
        os.truncate(log, 0)   # LogSegment.truncateTo on a follower, mid-read
        table, findings = segment.table()
        items = table.batches() + list(findings)
    print(len(items))
""")


def test_truncated_under_the_mapping_is_not_a_crash(partition):
    log = partition / "00000000000000000005.log"
    r = subprocess.run([sys.executable, "-c", SIGBUS_CHILD, str(log)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"exit {r.returncode} (SIGBUS is -{int(signal.SIGBUS)})"
