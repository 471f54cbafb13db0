"""Gentle mode on a broker's log dir (issue 36): with a broker's ``.lock`` held, every
command leaves the page cache as it found it, measured with ``mincore``.

The broker is played by a process holding each log dir's ``.lock`` the way Kafka does
(``FileChannel.tryLock``: an exclusive POSIX record lock over the whole file). Cold pages are
made with ``posix_fadvise(DONTNEED)`` on this test's own copies of the fixture trees.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from segtools.storage import gentle
from segtools.storage.logdirs import walk
from segtools.storage.pagecache import PAGE, PageCacheKeeper, broker_lock_holder, resident
from segtools.storage.segment import SMALL_FILE, Segment
from tests.robustness.commands import ARGUMENT_SETS, LOGDIRS, Tree, copy_fixture_trees

ROOT = Path(__file__).resolve().parents[2]
#: A partition the broker's consumers are reading: resident before, resident after.
HOT = "sample/payments-compact-0"
#: The share of resident pages that must still be resident after a command. Not 1: this
#: kernel reclaims a few clean pages of a large file on its own within seconds (measured:
#: 0.5 % of a 10 MiB index in 2 s with nothing running), while a run dropping what it found
#: resident would take all of them.
KEPT = 0.9
#: Tries of one command's "resident stays resident" check. The kernel evicts clean page-cache
#: pages that no process maps on its own, whichever file they belong to: here a proactive
#: reclaimer (DAMON's ``pageout`` scheme, sampling physical memory: file refaults grow while
#: ``pgsteal`` stays still) took all of a one-page index between the check's two looks, once
#: in some thirty runs, more often when a loaded machine stretches the commands. Such a loss is
#: random and rare; a command that drops pages it found resident drops them on every try (the
#: cache is set up the same way each time), so it still fails.
ATTEMPTS = 3
#: The broker: lock every path given, say so, hold until stdin closes.
BROKER = """
import fcntl, os, sys
fds = []
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fds.append(fd)
print("locked", flush=True)
sys.stdin.read()
"""


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != ".lock")


def residency(path: Path) -> np.ndarray:
    fd = os.open(path, os.O_RDONLY)
    try:
        return np.frombuffer(resident(fd, os.fstat(fd).st_size), np.uint8).astype(bool)
    finally:
        os.close(fd)


def data_pages(path: Path) -> np.ndarray:
    """One bool per page: whether it holds data (not a hole). A preallocated index is mostly
    holes, whose zero pages the kernel may reclaim whenever it likes, so only data pages are
    held to 'resident stays resident'."""
    size = path.stat().st_size
    mask = np.zeros(-(-size // PAGE), bool)
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            mask[start // PAGE:-(-end // PAGE)] = True
            pos = end
    finally:
        os.close(fd)
    return mask


def make_cold(paths: list[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # a dirty page (the copy was just written) cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def make_resident(paths: list[Path]) -> None:
    for path in paths:
        path.read_bytes()


def is_active(path: Path) -> bool:
    """Whether ``path`` belongs to its directory's active segment (the broker's hot tail,
    which gentle mode never advises away)."""
    stem = path.name.split(".", 1)[0]
    bases = [int(p.name[:-4]) for p in path.parent.glob("*.log") if p.name[:-4].isdigit()]
    return stem.isdigit() and bool(bases) and int(stem) >= max(bases)


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Tree:
    return copy_fixture_trees(tmp_path_factory.mktemp("gentle") / "trees")


@contextlib.contextmanager
def lock_held(*paths: Path | str):
    """``paths`` locked as a broker locks its ``.lock``, by a process of its own."""
    proc = subprocess.Popen([sys.executable, "-c", BROKER, *map(str, paths)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    try:
        yield proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.fixture
def broker(trees: Tree):
    """Every fixture log dir held by a 'broker' process, for the length of a test."""
    log_dirs, _ = walk([trees.root])
    with lock_held(*(Path(d.path) / ".lock" for d in log_dirs if d.partitions)) as proc:
        yield proc


def run(argv: list[str]) -> subprocess.CompletedProcess:
    """The CLI in a process of its own: gentle mode lowers the priority of the process it
    runs in, which must not be this test runner."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spark")])}
    return subprocess.run([sys.executable, "-m", "segtools.cli.main", *argv], env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_lock_is_seen_without_being_taken(trees: Tree, broker):
    lock = trees.sample / ".lock"
    before = lock.stat()
    assert broker_lock_holder(trees.sample) == broker.pid
    held = gentle.held_by_broker([trees.sample / "orders.v2-eu-0"])
    assert held == (broker.pid, str(trees.sample))
    assert gentle.held_by_broker([trees.root]) is not None  # a directory of log dirs
    after = lock.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)


def test_no_running_broker_means_nothing_will_truncate(trees: Tree, tmp_path):
    (trees.sample / ".lock").touch()  # a stopped broker's log dir: the lock file, free
    assert broker_lock_holder(trees.sample) is None
    assert broker_lock_holder(trees.sample / "orders.v2-eu-0") is None  # no .lock at all
    settings = gentle.decide([trees.sample])
    assert settings.keeper is None and settings.jobs is None and not settings.yield_cpu
    assert settings.still and settings.free == (str(trees.sample),)
    said = gentle.notice(settings)
    assert "no running broker holds" in said and "nothing will truncate" in said
    shutil.copytree(LOGDIRS / "legacy", tmp_path / "legacy")
    copy = gentle.decide([tmp_path / "legacy"])  # a copy without .lock: nothing to say
    assert copy.still and gentle.notice(copy) is None
    assert not gentle.decide([trees.sample, "s3://bucket/logs"]).still


def active_is_mapped(trees: Tree) -> bool:
    from segtools.storage.partition import load_partition_dir

    pdir = load_partition_dir(trees.sample / "big-value-0")
    active = pdir.segments[-1]
    assert active.log_size > SMALL_FILE and not active.sealed
    with Segment.open(active) as segment:
        return segment.is_mapped


def test_the_active_segment_is_mapped_only_when_no_broker_holds_it(trees: Tree):
    assert not active_is_mapped(trees)  # outside any run: as before
    with gentle.applied(gentle.decide([trees.sample])):
        assert active_is_mapped(trees)


def test_a_broker_s_active_segment_is_read_through_windows(trees: Tree, broker):
    with gentle.applied(gentle.decide([trees.sample])):
        assert not active_is_mapped(trees)


@dataclass(frozen=True)
class CacheAfter:
    """What one pass of a command's runs did to the cache: the files whose resident pages
    went missing (below :data:`KEPT`), and those with pages it read left behind."""

    dropped: list[str]
    left: list[str]


def leave_as_found(trees: Tree, argvs: list[list[str]]) -> CacheAfter:
    """The hot partition resident and every other file cold, then each of ``argvs`` run as a
    command under the broker's lock; the cache as it is afterwards."""
    files = files_of(trees.root)
    hot = files_of(trees.root / HOT)
    make_cold(files)
    make_resident(hot)
    before = {p: residency(p) for p in files}
    assert all(before[p].all() for p in hot)
    assert not any(before[p].any() for p in files if p not in set(hot))

    for argv in argvs:
        done = run(argv)
        assert done.returncode in (0, 1), (argv, done.stderr)
        assert done.stderr.count("segtools: gentle mode:") == 1, done.stderr  # said once
        assert "--max-read-rate" in done.stderr

    dropped, left = [], []
    for path in files:
        now = residency(path)
        if now.shape != before[path].shape:
            continue
        kept = before[path] & data_pages(path)
        if kept.any() and now[kept].mean() < KEPT:
            dropped.append(f"{path}: {int(now[kept].sum())} of {int(kept.sum())} pages kept")
        if not is_active(path) and now[~before[path]].any():
            left.append(f"{path}: {int(now[~before[path]].sum())} pages")
    return CacheAfter(dropped, left)


@pytest.mark.parametrize("command", sorted(ARGUMENT_SETS))
def test_every_command_leaves_the_page_cache_as_found(trees: Tree, broker, command):
    """Pages read are handed back on every try (the kernel never brings a page in for a
    process that did not read it); pages found resident stay resident on at least one of
    :data:`ATTEMPTS` tries (the kernel may evict one on its own, :data:`ATTEMPTS`)."""
    for _ in range(ATTEMPTS):
        after = leave_as_found(trees, ARGUMENT_SETS[command](trees))
        assert not after.left, f"pages read were left in the cache: {after.left}"
        if not after.dropped:
            return
    pytest.fail(f"resident pages were dropped on each of {ATTEMPTS} tries: {after.dropped}")


def test_keep_leaves_what_was_read_cached(trees: Tree, broker):
    """The check above can fail: with ``--page-cache keep`` (what segtools did before
    gentle mode) the pages a command reads stay in the cache."""
    logs = [p for p in files_of(trees.sample) if p.suffix == ".log" and not is_active(p)]
    make_cold(logs)
    done = run(["scan", "-q", "--crc", "--page-cache", "keep", str(trees.sample)])
    assert done.returncode in (0, 1), done.stderr
    assert any(residency(p).any() for p in logs)


def test_the_active_segment_is_never_advised_away(trees: Tree):
    partition = trees.sample / "payments-compact-0"
    active = max(partition.glob("*.log"))
    sealed = min(partition.glob("*.log"))
    keeper = PageCacheKeeper()
    for path in (active, sealed):
        fd = os.open(path, os.O_RDONLY)
        keeper.note(str(path), fd, os.fstat(fd))
        os.close(fd)
    noted = {known.path for known in keeper.found.values()}
    assert noted == {str(sealed)}


def test_notice_says_why_and_how_to_cap(trees: Tree, broker):
    settings = gentle.decide([trees.sample])
    said = gentle.notice(settings)
    assert str(broker.pid) in said and str(trees.sample) in said
    assert "--max-read-rate" in said and settings.rate is None
    assert settings.keeper is not None and settings.yield_cpu
    assert settings.jobs == max(1, len(os.sched_getaffinity(0)) // 2)
    capped = gentle.decide([trees.sample], max_read_rate=50 * 2**20,
                           page_cache=gentle.PageCacheMode.KEEP, jobs=3)
    assert capped.keeper is None and capped.jobs == 3
    assert "50.0 MiB/s" in gentle.notice(capped)


def test_f_getlk_is_a_query(trees: Tree, broker):
    """The lock stays the broker's: taking it from here still fails after segtools looked."""
    broker_lock_holder(trees.sample)
    fd = os.open(trees.sample / ".lock", os.O_RDWR)
    try:
        with pytest.raises(OSError):
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def a_log_dir(root: Path) -> Path:
    log_dir = root / "kafka-logs"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\n")
    return log_dir


@pytest.mark.parametrize("where", ["inside", "outside", "through two links"])
def test_a_lock_that_is_a_link_is_asked_of_its_target(tmp_path, where):
    """Kafka opens ``.lock`` by its name, so a broker whose ``.lock`` is a link locks the
    link's target: gentle mode must see that lock, wherever the link points."""
    log_dir = a_log_dir(tmp_path)
    target = (log_dir / "real.lock") if where == "inside" else (tmp_path / "elsewhere.lock")
    target.touch()
    if where == "through two links":
        (tmp_path / "hop").symlink_to(target)
        (log_dir / ".lock").symlink_to(tmp_path / "hop")
    else:
        (log_dir / ".lock").symlink_to(target)
    before = target.stat()
    assert broker_lock_holder(log_dir) is None  # the target is free: a stopped broker
    with lock_held(target) as holder:
        assert broker_lock_holder(log_dir) == holder.pid
        assert gentle.held_by_broker([log_dir]) == (holder.pid, str(log_dir))
        assert gentle.decide([log_dir]).keeper is not None
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_lock_link_to_what_is_no_regular_file_is_no_broker(tmp_path):
    """A ``.lock`` pointed at a FIFO, a device, a directory or nothing is no broker's lock,
    and asking does not hang: the target's type is checked before it is opened."""
    log_dir = a_log_dir(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "directory").mkdir()
    for target in (tmp_path / "fifo", Path("/dev/null"), tmp_path / "directory",
                   tmp_path / "missing"):
        (log_dir / ".lock").unlink(missing_ok=True)
        (log_dir / ".lock").symlink_to(target)
        assert broker_lock_holder(log_dir) is None, target


def test_the_spark_source_leaves_the_page_cache_as_found(trees: Tree, broker):
    pytest.importorskip("pyspark")
    from tests.spark.inprocess import read

    files = files_of(trees.sample)
    make_cold(files)
    table = read({"path": str(trees.sample), "includeHeaders": "true"})
    assert table.num_rows > 0
    sealed_logs = [p for p in files if p.suffix == ".log" and not is_active(p)]
    assert sealed_logs
    assert not any(residency(p).any() for p in files if not is_active(p))
    make_cold(sealed_logs)
    read({"path": str(trees.sample), "pageCache": "keep"})
    assert any(residency(p).any() for p in sealed_logs)


def test_the_python_api_leaves_the_page_cache_as_found(trees: Tree, broker):
    import segtools

    files = files_of(trees.sample)
    make_cold(files)
    logs = segtools.open(trees.sample)
    assert logs.gentle.keeper is not None and logs.gentle.rate is None
    assert logs.verify(deep=True)
    assert logs.to_arrow("records").read_all().num_rows > 0
    assert not any(residency(p).any() for p in files if not is_active(p))
    kept = segtools.open(trees.sample, page_cache="keep", max_read_rate="1GiB")
    assert kept.gentle.keeper is None and kept.gentle.rate.rate == 2**30
    kept.to_arrow("records").read_all()
    assert any(residency(p).any() for p in files if not is_active(p))


def _priority(_: int) -> tuple[int, int, int]:
    import psutil

    me = psutil.Process()
    io = me.ionice()
    return me.nice(), int(io.ioclass), io.value


def test_workers_yield_to_the_broker_and_jobs_caps_them():
    from segtools import fanout

    with gentle.applied(gentle.Gentle(jobs=1)):
        assert fanout.workers() == 1
    with gentle.applied(gentle.Gentle(jobs=2, yield_cpu=True)):
        assert fanout.workers() == min(2, len(os.sched_getaffinity(0)))
        seen = list(fanout.ordered(_priority, list(range(8)), segments=fanout.MIN_SEGMENTS))
    if fanout.workers() > 1:  # forked workers, each lowered
        assert all(nice >= fanout.GENTLE_NICE for nice, _, _ in seen)
        assert all((cls, level) == (2, fanout.GENTLE_IO_LEVEL) for _, cls, level in seen)
    mine = _priority(0)
    assert mine[0] < fanout.GENTLE_NICE  # the test runner itself was left alone


def test_an_index_is_handed_back_when_it_is_closed(trees: Tree):
    """Not left for the end of the run: a serial run over many segments would otherwise
    hold every index it read in the cache until it ends."""
    from segtools.storage.index import OffsetIndex

    sealed = next(p for p in sorted(trees.root.rglob("*.index"))
                  if not is_active(p) and p.stat().st_size >= 16)
    make_cold([sealed])
    keeper = PageCacheKeeper()
    with gentle.applied(gentle.Gentle(keeper=keeper)):
        with OffsetIndex(sealed, sealed=True) as index:
            assert len(index.entry_arrays()[0]) > 0
            assert residency(sealed).any()  # read: in the cache while in use
        assert not residency(sealed).any()  # closed: handed back at once
        assert not keeper.found


def test_a_long_read_hands_its_pages_back_as_the_walk_passes_them(tmp_path):
    """Not when the segment is closed: a gigabyte segment read through ``pread`` windows
    would sit in the cache, in the broker's way, for its whole walk. Pages resident before
    stay resident."""
    from segtools.storage.source import WindowSource

    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(8 * WindowSource.stride))
    (tmp_path / "00000000000000004242.log").touch()  # the active segment: this one is sealed
    make_cold([path])
    warm = os.open(path, os.O_RDONLY)  # the broker had the first half window cached
    try:
        os.posix_fadvise(warm, 0, 0, os.POSIX_FADV_RANDOM)  # and nothing read ahead of it
        os.pread(warm, WindowSource.stride // 2, 0)
    finally:
        os.close(warm)
    keeper = PageCacheKeeper()
    fd = os.open(path, os.O_RDONLY)
    try:
        keeper.note(str(path), fd, os.fstat(fd))
        found = residency(path)
        assert found.any() and not found.all()
        with gentle.applied(gentle.Gentle(keeper=keeper)):
            source = WindowSource(fd, path.stat().st_size)
            walked = 6 * source.stride + PAGE // 2  # mid-page: that page is still in use
            done = 0
            while done < walked:
                done = source.window(done, min(walked, done + source.stride))[2]
            passed = walked // PAGE
            assert residency(path)[:passed].all()
            source.release(walked)
            assert (residency(path)[:passed] == found[:passed]).all(), \
                "the pages walked past are not as found"
            source.release(7 * source.stride)  # from the page kept above
            passed = 7 * source.stride // PAGE
            assert (residency(path)[:passed] == found[:passed]).all()
            source.close()
    finally:
        os.close(fd)


def test_a_command_maps_sealed_segments_and_still_hands_their_pages_back(trees: Tree):
    """Under ``restore`` a command that prints what it reads maps a sealed segment (no copy
    into private windows: what made ``restore`` cost more than ``keep``) and its pages are
    handed back all the same; a face whose records' views outlive the segment (the Python
    API, Spark, SQL) reads it through windows."""
    from segtools.storage.partition import load_partition_dir

    sealed = load_partition_dir(trees.root / "large-values" / "large-values-0").segments[0]
    log = Path(sealed.log)
    assert sealed.sealed and sealed.log_size > SMALL_FILE
    make_cold([log])
    with gentle.applied(gentle.Gentle(keeper=PageCacheKeeper(), views_outlive_segments=False)):
        with Segment.open(sealed) as segment:
            assert segment.is_mapped
            assert sum(len(chunk.table) for chunk in segment.walk()) > 0
            assert residency(log).any()  # read: in the cache while in use
        assert not residency(log).any()  # closed: handed back
    with gentle.applied(gentle.Gentle(keeper=PageCacheKeeper())), \
            Segment.open(sealed) as segment:
        assert not segment.is_mapped


def test_the_zero_tail_of_a_preallocated_index_is_not_read(tmp_path):
    """Kafka preallocates an active segment's indexes (``segment.index.bytes``, 10 MiB) as
    sparse files; the check for entries past the valid ones skipped the holes but read 1 MiB
    from the last data block on, filling the cache with zero pages: two or three MiB for each
    active segment, which gentle mode never hands back (the broker's hot tail), so gigabytes
    on a broker with thousands of partitions. Only the data blocks may be read."""
    source = LOGDIRS / "sample" / "orders.v2-eu-0"
    partition = tmp_path / "kafka-logs" / "orders.v2-eu-0"
    partition.mkdir(parents=True)
    for name in ("00000000000000000205.log", "leader-epoch-checkpoint", "partition.metadata"):
        shutil.copy(source / name, partition)
    for name, entry in (("00000000000000000205.index", 8), ("00000000000000000205.timeindex", 12)):
        data = (source / name).read_bytes()
        used = len(data.rstrip(b"\0"))
        used += -used % entry
        with open(partition / name, "wb") as f:  # the entries, then holes: as Kafka leaves it
            f.write(data[:used])
            f.truncate(len(data))
    for command in (["verify"], ["scan"], ["dump"]):
        for path in partition.iterdir():
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        target = (partition / "00000000000000000205.index") if command[0] == "dump" else partition
        assert run([*command, str(target)]).returncode in (0, 1)
        for name in ("00000000000000000205.index", "00000000000000000205.timeindex"):
            path = partition / name
            data_pages = -(-path.stat().st_blocks * 512 // PAGE)
            assert int(residency(path).sum()) <= data_pages, (command, name)


def test_restore_asked_for_on_a_copy_leaves_the_active_segments_as_found(tmp_path):
    """The active segment is spared only as a running broker's hot tail: where no broker
    holds the log dir (a copy), ``--page-cache restore`` asked for leaves every file as found,
    active segments included (they were left cached)."""
    copy = tmp_path / "sample"
    shutil.copytree(LOGDIRS / "sample", copy)
    actives = [p for p in files_of(copy) if is_active(p) and p.suffix == ".log"]
    assert actives and not gentle.decide([copy]).broker
    make_cold(files_of(copy))
    done = run(["verify", "--deep", "--page-cache", "restore", str(copy)])
    assert done.returncode in (0, 1), done.stderr
    assert not [p.name for p in actives if (residency(p) & data_pages(p)).any()]
