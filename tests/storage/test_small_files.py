"""A listing's small files (``leader-epoch-checkpoint``, ``partition.metadata``, the log
dir's checkpoints) are read in as few system calls as the safety rules allow (issue 37: a
tree of 10,000 partitions reads 20,000 of them before any worker starts), and the rules
still hold: no link followed, no FIFO opened blocking, nothing read past the cap."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from segtools.analysis.verify import verify_partition
from segtools.storage.local import LocalPath
from segtools.storage.logdirs import walk
from segtools.storage.partition import load_partition_dir
from segtools.storage.small_files import read_text_capped, read_upto
from tests.fixtures_manifest import FIXTURES

SAMPLE = FIXTURES / "logdirs" / "sample"
PARTITION = "orders.v2-eu-1"

#: Lists the sample log dir's root and one of its partitions once to warm up, then again between
#: two markers written to stderr, so that strace's lines between them are the listing's.
LIST_TWICE = """
import os, sys
from segtools.storage.logdirs import log_dir_root
from segtools.storage.partition import load_partition_dir
log_dir_root(sys.argv[1]); load_partition_dir(sys.argv[2])
os.write(2, b"--BEGIN--")
log_dir_root(sys.argv[1]); load_partition_dir(sys.argv[2])
os.write(2, b"--END--")
"""

_CALL = re.compile(r"^(\w+)\((.*)\)\s+= (-?\d+)")


def syscalls_per_file(trace: str, names: tuple[str, ...]) -> dict[str, int]:
    """The system calls strace saw for each file named: those naming it, those on the
    descriptor it was opened as, and those on a directory opened as a path only (``O_PATH``)
    to open it in."""
    counts = dict.fromkeys(names, 0)
    owner: dict[str, str] = {}  # descriptor -> the file it is for
    lines = trace.split("--BEGIN--", 1)[1].split("--END--", 1)[0].splitlines()
    pending_dir: str | None = None
    for line in lines:
        call = _CALL.match(line.split("] ", 1)[-1].strip())
        if call is None:
            continue
        fn, args, result = call.groups()
        first = args.split(",", 1)[0]
        named = next((n for n in names if f'/{n}"' in args or f'"{n}"' in args), None)
        if fn == "openat" and "O_PATH" in args:
            pending_dir = result
            continue
        if named is not None:
            counts[named] += 1
            if pending_dir is not None:  # the directory opened to open this file in
                owner[pending_dir] = named
                counts[named] += 1
                pending_dir = None
            if fn == "openat" and int(result) >= 0:
                owner[result] = named
            continue
        if first in owner:
            counts[owner[first]] += 1
            if fn == "close":
                del owner[first]
    return counts


def test_each_small_file_is_read_in_six_system_calls_or_four(tmp_path):
    """Listed and read, in a partition directory: the directory opened as a path, the file
    opened in it, the directory closed, ``fstat``, one ``read``, ``close`` (was 11: the
    listing's ``stat``, then an ``lstat``, an ``fstatat`` and a second ``fstat`` to compare,
    and a second ``read`` to meet the end). At the log dir's root (no directory to prove):
    ``open``, ``fstat``, ``read``, ``close`` (was 6)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace"
    run = subprocess.run(["strace", "-o", str(trace), sys.executable, "-c", LIST_TWICE,
                          str(SAMPLE), str(SAMPLE / PARTITION)],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0 and not trace.exists():
        pytest.skip(f"strace cannot trace here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0, run.stderr
    counts = syscalls_per_file(trace.read_text(),
                               ("leader-epoch-checkpoint", "partition.metadata",
                                "meta.properties", "recovery-point-offset-checkpoint"))
    assert counts == {"leader-epoch-checkpoint": 6, "partition.metadata": 6,
                      "meta.properties": 4, "recovery-point-offset-checkpoint": 4}


def copied_partition(tmp_path):
    pdir = tmp_path / "logs" / PARTITION
    shutil.copytree(SAMPLE / PARTITION, pdir)
    return pdir


def test_a_partition_directory_swapped_for_a_link_after_the_listing_is_not_read(tmp_path):
    """The listing saw a directory; a link to outside the tree took its place before the
    small file is read: the read is refused, the planted content never returned."""
    pdir = copied_partition(tmp_path)
    listed = load_partition_dir(pdir)
    assert listed.leader_epochs
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leader-epoch-checkpoint").write_text("PLANTED")
    pdir.rename(tmp_path / "logs" / "moved-1")
    pdir.symlink_to(outside)
    text, findings = read_text_capped(LocalPath(pdir / "leader-epoch-checkpoint"), listed=True)
    assert text is None
    assert [f.code for f in findings] == ["symlink_not_followed"]
    assert "partition directory is a symbolic link" in findings[0].message


def test_a_swap_after_the_directory_is_open_reads_the_file_in_it(tmp_path, monkeypatch):
    """Once the directory is open, the file is looked up in it (``openat``): swapping the
    directory's name for a link then changes nothing; the file read is the one inside."""
    pdir = copied_partition(tmp_path)
    original = (pdir / "partition.metadata").read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "partition.metadata").write_text("PLANTED")
    real_open = os.open

    def swapping_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if flags & getattr(os, "O_PATH", 0) and not pdir.is_symlink():
            pdir.rename(tmp_path / "logs" / "moved-1")
            pdir.symlink_to(outside)
        return fd

    monkeypatch.setattr(os, "open", swapping_open)
    assert read_upto(LocalPath(pdir / "partition.metadata"), 1 << 20, listed=True) == original
    assert pdir.is_symlink()


def test_a_name_swapped_for_a_fifo_after_the_listing_is_refused_without_blocking(tmp_path):
    pdir = copied_partition(tmp_path)
    path = pdir / "leader-epoch-checkpoint"
    path.unlink()
    os.mkfifo(path)
    text, findings = read_text_capped(LocalPath(path), listed=True)
    assert text is None
    assert [(f.code, f.message) for f in findings] == [
        ("file_unreadable", "cannot read: not a regular file")]


@pytest.mark.parametrize("extra", [0, 1, 4096])
def test_the_read_stops_at_the_cap_and_says_when_the_file_is_above_it(tmp_path, extra):
    pdir = copied_partition(tmp_path)
    path = pdir / "leader-epoch-checkpoint"
    cap = 64
    path.write_bytes(b"0\n" + b"x" * (cap - 2 + extra))
    text, findings = read_text_capped(LocalPath(path), cap, listed=True)
    if extra == 0:
        assert (text, findings) == ("0\n" + "x" * (cap - 2), [])
    else:
        assert text is None and [f.code for f in findings] == ["file_too_large"]
    assert len(read_upto(LocalPath(path), cap + 1, listed=True)) == min(cap + extra, cap + 1)


def test_a_file_that_grows_after_its_fstat_is_read_on_up_to_the_limit(tmp_path, monkeypatch):
    """The ``fstat`` saw 8 bytes; by the ``read`` there are more: a full read of size + 1
    means the file grew, and the read goes on (up to the limit), as before."""
    pdir = copied_partition(tmp_path)
    path = pdir / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n1\n0 0\n")
    real_fstat = os.fstat

    def growing_fstat(fd):
        st = real_fstat(fd)
        with open(path, "ab") as f:
            f.write(b"1 5\n" * 10)
        return st

    monkeypatch.setattr(os, "fstat", growing_fstat)
    assert read_upto(LocalPath(path), 1 << 20, listed=True) == b"0\n1\n0 0\n" + b"1 5\n" * 10
    assert read_upto(LocalPath(path), 20, listed=True) == (b"0\n1\n0 0\n" + b"1 5\n" * 20)[:20]


# ---------------------------------------------------------------- a file gone after its listing


def test_a_listed_text_file_gone_before_its_read_has_vanished(tmp_path):
    """A live broker removes files between a listing and the read that follows (a partition
    deleted, a checkpoint's directory moved): that is ``file_vanished``, an information, not
    ``file_unreadable``, an error that would fail the run."""
    gone = tmp_path / "leader-epoch-checkpoint"
    gone.write_text("0\n0\n")
    gone.unlink()
    text, findings = read_text_capped(LocalPath(str(gone)), listed=True)
    assert text is None
    assert [(f.code, f.severity.value) for f in findings] == [("file_vanished", "info")]


def test_a_producer_snapshot_deleted_after_the_listing_has_vanished(tmp_path):
    """Kafka deletes producer snapshots below the log start offset as it goes: verify reads
    the ones the listing saw, so one deleted in between is ``file_vanished``, and the
    partition's verdict stays what its bytes say (no error added)."""
    part = tmp_path / "transfers-0"
    shutil.copytree(FIXTURES / "logdirs" / "producers" / "transfers-0", part)
    log_dirs, _ = walk([str(tmp_path)])
    (log_dir, pdir), = [(d, p) for d in log_dirs for p in d.partitions]
    whole = verify_partition(log_dir, pdir)
    for snap in pdir.snapshots:
        os.unlink(snap.path)
    after = verify_partition(log_dir, pdir)
    vanished = [f for f in after if f.code == "file_vanished"]
    assert len(vanished) == len(pdir.snapshots) >= 1
    assert [f for f in after if f.code != "file_vanished"] == whole
