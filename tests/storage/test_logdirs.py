"""Walking log dirs: root files, partitions, symlinks, read-only trees, fixtures."""

from __future__ import annotations

import builtins
import os
import shutil
import stat
from pathlib import Path

import pytest

from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.logdirs import (
    list_partition,
    load_log_dir,
    packed,
    unpacked,
    walk,
    walk_roots,
)
from segtools.storage.partition import load_partition_dir

from .test_partition import make_partition, touch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logdirs" / "sample"


def make_log_dir(root: Path) -> Path:
    root.mkdir()
    (root / "meta.properties").write_text("#\nversion=1\nnode.id=1\ncluster.id=abc\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\norders 2 250\n")
    (root / "replication-offset-checkpoint").write_text("0\n2\norders 2 260\nmy-t 0 5\n")
    (root / "log-start-offset-checkpoint").write_text("0\n0\n")
    (root / "cleaner-offset-checkpoint").write_text("0\n1\nbroken line\n")
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    touch(root / ".lock")
    touch(root / "bootstrap.checkpoint", 100)
    make_partition(root, "orders-2")
    make_partition(root, "my-t-0")
    make_partition(root, "__cluster_metadata-0")
    (root / "remote-log-index-cache").mkdir()
    return root


def test_walk_log_dir(tmp_path):
    root = make_log_dir(tmp_path / "kafka-logs-1")  # its name parses as a partition too
    dirs, loose = walk([root])
    assert loose == []
    (ld,) = dirs
    assert ld.path == root
    assert ld.meta is not None and ld.meta.node_id == 1
    assert ld.high_watermarks == {("orders", 2): 260, ("my-t", 0): 5}
    assert ld.recovery_points == {("orders", 2): 250}
    assert ld.log_start_offsets == {}
    assert ld.clean_shutdown is not None and ld.clean_shutdown.broker_epoch == 7
    assert ld.has_lock_file and ld.bootstrap_checkpoint is not None
    assert [p.path.name for p in ld.partitions] == ["__cluster_metadata-0", "my-t-0",
                                                    "orders-2"]
    codes = {f.code for f in ld.findings}
    assert codes == {"checkpoint_bad_entry", "checkpoint_count_mismatch", "skipped_directory"} \
        or codes == {"checkpoint_bad_entry", "skipped_directory"}


def test_walk_is_deterministic_and_groups_inputs(tmp_path):
    a = make_log_dir(tmp_path / "b")
    b = make_log_dir(tmp_path / "a")
    seg = a / "orders-2" / f"{100:020d}.log"
    dirs, _ = walk([a, b / "my-t-0", seg])
    assert [d.path.name for d in dirs] == ["a", "b"]
    assert [p.path.name for p in dirs[0].partitions] == ["my-t-0"]
    assert dirs[0].high_watermarks  # root files of the parent are still read
    assert len(dirs[1].partitions) == 3


def test_single_segment_file(tmp_path):
    root = make_log_dir(tmp_path / "l")
    dirs, _ = walk([root / "orders-2" / f"{100:020d}.index"])
    (pd,) = dirs[0].partitions
    assert [s.base_offset for s in pd.segments] == [100]


def test_missing_path_and_non_segment_file(tmp_path):
    (tmp_path / "x.txt").write_text("hi")
    dirs, loose = walk([tmp_path / "nope", tmp_path / "x.txt"])
    assert dirs == []
    assert [f.code for f in loose] == ["path_not_found", "not_a_segment_file"]


def test_symlink_loop_and_alias(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    os.symlink(root, root / "loop-0")  # a "partition" that is the log dir itself
    os.symlink(root / "orders-2", root / "alias-1")  # the same partition twice
    os.symlink(root / "orders-2" / "sub", root / "orders-2" / "sub")  # self-referencing link
    (ld,) = walk([root])[0]
    names = [p.path.name for p in ld.partitions]
    assert "loop-0" not in names and "alias-1" not in names and "orders-2" in names
    # links are listed, never followed (issue 41): no loop and no alias can be walked
    assert sorted(Path(f.path).name for f in ld.findings
                  if f.code == "symlink_not_followed") == ["alias-1", "loop-0"]
    orders = next(p for p in ld.partitions if p.path.name == "orders-2")
    assert [f.code for f in orders.findings if f.path.endswith("/sub")] == [
        "symlink_not_followed"]


def test_unknown_directory_and_unreadable(tmp_path, monkeypatch):
    root = make_log_dir(tmp_path / "logs")
    (root / "lost+found").mkdir()
    ld = load_log_dir(root)
    assert "unknown_directory" in {f.code for f in ld.findings}
    locked = root / "orders-2"
    real_scandir, real_open = os.scandir, os.open

    def scandir(path):  # permission bits do not stop root, so deny by hand
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def deny_meta(file, flags, *args, **kwargs):
        if str(file).endswith("meta.properties"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", deny_meta)
    ld = load_log_dir(root)
    pd = next(p for p in ld.partitions if p.path == locked)
    assert [f.code for f in pd.findings] == ["partition_dir_unreadable"]
    assert "file_unreadable" in {f.code for f in ld.findings}
    monkeypatch.setattr(os, "scandir", lambda p: (_ for _ in ()).throw(PermissionError(13, "x")))
    ld = load_log_dir(root)
    assert [f.code for f in ld.findings] == ["log_dir_unreadable"]


def _chmod_tree(root: Path, writable: bool) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)
        p = Path(dirpath)
        mode = p.stat().st_mode
        p.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)


def test_read_only_tree(tmp_path, monkeypatch):
    src = make_log_dir(tmp_path / "src")
    dst = tmp_path / "ro"
    shutil.copytree(src, dst)
    _chmod_tree(dst, writable=False)
    real_open, real_os_open = builtins.open, os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        assert not set(mode) & set("wax+"), f"{file} opened with mode {mode}"
        assert not str(file).endswith(".lock"), ".lock must never be opened"
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        assert not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC), path
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    try:
        dirs, loose = walk([dst])
        assert loose == [] and len(dirs[0].partitions) == 3
        for pd in dirs[0].partitions:
            for seg in pd.segments:
                if seg.index is not None:
                    with OffsetIndex(seg.index, log_size=seg.log_size) as ix:
                        assert ix.trusted
    finally:
        _chmod_tree(dst, writable=True)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="Kafka-written fixtures not generated yet")
def test_kafka_written_fixtures():
    dirs, loose = walk([FIXTURES])
    assert loose == []
    partitions = [p for d in dirs for p in d.partitions]
    assert partitions
    for pd in partitions:
        assert not any(f.code == "orphan_index_file" for f in pd.findings), pd.path
        for seg in pd.segments:
            assert seg.log.exists()
            if seg.index is not None:
                with OffsetIndex(seg.index, log_size=seg.log_size) as ix:
                    for entry in ix.entries():
                        assert 0 <= entry.position < seg.log_size
                    assert ix.trusted, ix.sanity_check()
            if seg.timeindex is not None:
                with TimeIndex(seg.timeindex) as tx:
                    assert all(e.offset >= seg.base_offset for e in tx.entries())
        assert load_partition_dir(pd.path).segments == pd.segments


def test_roots_listed_later_are_the_walk(tmp_path):
    """``walk_roots`` stops at the partition directories (found, not listed) and a worker
    lists each one later (``list_partition``): together they give what ``walk`` gives, the
    partitions in its order and every finding in its place, on a tree with a link to a
    partition, a link out of the tree, a FIFO under a segment name, a stray directory, a
    directory Kafka would not load and one segment file named alone."""
    from segtools.storage.logdirs import listed, walk_roots

    root = make_log_dir(tmp_path / "kafka-logs")
    shutil.copytree(FIXTURES / "orders.v2-eu-1", root / "orders.v2-eu-1")
    os.symlink(root / "orders-2", root / "alias-0")
    os.symlink("/etc", root / "outside-0")
    os.mkfifo(root / "my-t-0" / "00000000000000000099.index")
    (root / "orders-2" / "stray").mkdir()
    (root / "no_dash").mkdir()
    other = make_log_dir(tmp_path / "other")
    named = [str(root), str(other / "orders-2" / "00000000000000000000.log"),
             str(root / "alias-0")]
    roots, loose = walk_roots(named)
    assert all(not d.partitions for d, _ in roots)
    assert [r.path.name for r in roots[0][1]][:2] == ["__cluster_metadata-0", "my-t-0"]
    assert roots[1][1][0].base_offsets == (0,)
    assert ([listed(d, refs) for d, refs in roots], loose) == walk(named)


def test_a_listing_packed_comes_back_equal():
    """What a worker hands back of the partitions it listed is the listing itself: equal
    directories, the same paths (each file's path made from its name in its directory)."""
    for tree in sorted(FIXTURES.parent.iterdir()):
        roots, _ = walk_roots([str(tree)])
        pdirs = [list_partition(d, r) for d, refs in roots for r in refs]
        back = unpacked(packed(pdirs))
        assert back == pdirs, tree.name
        assert [str(s.log) for p in back for s in p.segments] == \
            [str(s.log) for p in pdirs for s in p.segments]
        assert all(type(s.log) is type(p.path) for p in back for s in p.segments)
