"""Cold files are read ahead of the walk; warm ones cost no advice; a broker's host gets a
window ahead at most (``storage.source.ReadAhead``).

Cold pages are made with ``posix_fadvise(DONTNEED)`` on this test's own files and residency
is read with ``mincore`` (``pagecache.resident``)."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from segtools.analysis import verify as verify_room
from segtools.analysis.verify import verify_partition
from segtools.cli.scan import summarize_partition
from segtools.storage import gentle
from segtools.storage import source as sources
from segtools.storage.local import LocalDisk
from segtools.storage.logdirs import walk
from segtools.storage.pagecache import PageCacheKeeper
from segtools.storage.segment import Segment
from segtools.storage.source import MappedSource, WindowSource
from segtools.storage.throttle import ReadRate
from tests.fixtures_manifest import SAMPLE
from tests.storage.test_gentle import make_cold, residency

MIB = 1 << 20
SIZE = 24 * MIB


def cold_file(tmp_path: Path) -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(SIZE))
    make_cold([path])
    assert not residency(path)[SIZE // 2 // 4096:].any()
    return path


def resident_soon(path: Path, pages: slice, seconds: float = 10.0) -> bool:
    """Whether every page of ``pages`` comes into the cache within ``seconds`` (the device
    reads asynchronously what it was asked for)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if residency(path)[pages].all():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("kind", [MappedSource, WindowSource])
def test_a_cold_file_is_asked_for_far_ahead_of_the_walk(tmp_path, kind):
    """The walk has asked for its first megabyte only: the device is already reading every
    page of the file (the kernel's own readahead reaches a few MiB at most, and one
    ``POSIX_FADV_WILLNEED`` call no further than that: the rest must be asked for in calls
    the kernel does not cut short, not only the page the cold probe reads)."""
    path = cold_file(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    try:
        source = kind(fd, SIZE)
        source.window(0, MIB)
        assert resident_soon(path, slice(None)), "the file was not read ahead to its end"
        source.close()
    finally:
        os.close(fd)


def test_the_reads_ahead_are_queued_off_the_walk_and_end_with_the_file(tmp_path, monkeypatch):
    """Bringing pages in costs the caller CPU: the calls run on a thread of their own, not
    the walk's, and once the source is closed no call is made (its owner closes the
    descriptor next) and no thread is left."""
    path = cold_file(tmp_path)
    callers = []
    for module, name in ((os, "posix_fadvise"), (sources, "_read_into_cache")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *args, real=real: (
            callers.append(threading.current_thread()), real(*args))[1])
    before = threading.active_count()
    fd = os.open(path, os.O_RDONLY)
    try:
        source = MappedSource(fd, SIZE)
        source.window(0, MIB)
        assert resident_soon(path, slice(None))
        source.close()
        asked = len(callers)
        time.sleep(0.1)
        assert len(callers) == asked, "advice after close"
        assert threading.active_count() == before
    finally:
        os.close(fd)
    assert callers and threading.main_thread() not in callers


@pytest.mark.parametrize("kind", [MappedSource, WindowSource])
def test_a_warm_file_is_read_without_advice(tmp_path, kind, monkeypatch):
    """Asking the kernel for pages it holds costs about a tenth of copying them: a file in
    the cache is walked with no ``posix_fadvise`` call at all."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(8 * MIB))
    path.read_bytes()
    advised = []
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: advised.append(a))
    fd = os.open(path, os.O_RDONLY)
    try:
        source = kind(fd, 8 * MIB)
        pos = 0
        while pos < 8 * MIB:
            pos = source.window(pos, pos + MIB)[2]
        source.close()
    finally:
        os.close(fd)
    assert advised == []


@pytest.mark.parametrize("settings", [gentle.Gentle(keeper=PageCacheKeeper()),
                                      gentle.Gentle(rate=ReadRate(1 << 40))],
                         ids=["restore", "rate"])
def test_a_broker_s_host_is_asked_a_window_ahead_at_most(tmp_path, settings, monkeypatch):
    """Under a restored page cache (or a rate cap) a page still being read when the file is
    closed could not be handed back: the device is asked for one window ahead, not
    :data:`~segtools.storage.source.READAHEAD`."""
    path = cold_file(tmp_path)
    asked = []
    real = os.posix_fadvise
    monkeypatch.setattr(os, "posix_fadvise",
                        lambda fd, lo, n, advice: (asked.append((lo, n, advice)),
                                                   real(fd, lo, n, advice))[1])
    fd = os.open(path, os.O_RDONLY)
    try:
        with gentle.applied(settings):
            source = WindowSource(fd, SIZE)
            source.window(0, source.stride)
            source.close()
    finally:
        os.close(fd)
    willneed = [(lo, n) for lo, n, advice in asked if advice == os.POSIX_FADV_WILLNEED]
    assert willneed and max(lo + n for lo, n in willneed) <= 2 * WindowSource.stride
    assert sources.depth(WindowSource.stride) == sources.READAHEAD  # outside the run


def walk_to_the_end(source: MappedSource | WindowSource, size: int) -> None:
    pos = 0
    while pos < size:
        pos = source.window(pos, pos + MIB)[2]


@pytest.mark.parametrize("kind", [MappedSource, WindowSource])
def test_the_next_segment_is_read_ahead_while_this_one_ends(tmp_path, kind):
    """A walk that goes on into the partition's next segment has its first bytes asked for
    while this one's last are walked, not once the walk opens it."""
    this, following = cold_file(tmp_path), cold_file(tmp_path / "next")
    fd = os.open(this, os.O_RDONLY)
    try:
        source = kind(fd, SIZE)
        source.follow(str(following))
        walk_to_the_end(source, SIZE)
        assert resident_soon(following, slice(0, SIZE // 4096 // 2)), \
            "the next segment was not read ahead"
        source.close()
    finally:
        os.close(fd)


def test_a_broker_s_host_does_not_read_the_next_segment_ahead(tmp_path):
    """Under a restored page cache the next file is read when it is opened, not before: its
    pages as found are noted at its open (``PageCacheKeeper``)."""
    this, following = cold_file(tmp_path), cold_file(tmp_path / "next")
    fd = os.open(this, os.O_RDONLY)
    try:
        with gentle.applied(gentle.Gentle(keeper=PageCacheKeeper())):
            source = WindowSource(fd, SIZE)
            source.follow(str(following))
            walk_to_the_end(source, SIZE)
            source.close()
    finally:
        os.close(fd)
    time.sleep(0.2)
    assert not residency(following)[SIZE // 4096 // 4:].any()


def test_a_call_s_size_is_the_device_s_or_the_kernel_s_default(tmp_path):
    """Linux cuts a WILLNEED to max(``read_ahead_kb``, ``max_sectors_kb``) of the file's
    device; a file system with no block device of its own (tmpfs here) gets the kernel's
    default readahead, 128 KiB, the least any call reads."""
    fd = os.open(cold_file(tmp_path), os.O_RDONLY)
    try:
        dev = os.fstat(fd).st_dev
        block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        queue = block / "queue" if (block / "queue").exists() else \
            block.resolve().parent / "queue"  # a partition: its disk's queue
        if queue.exists():
            kib = max(int((queue / name).read_text()) for name in ("read_ahead_kb",
                                                                   "max_sectors_kb"))
            assert sources.willneed_limit(fd) == max(128, kib) * 1024
    finally:
        os.close(fd)
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no tmpfs at /dev/shm")
    with open(shm / f"segtools-readahead-{os.getpid()}", "w+b") as f:
        os.unlink(f.name)
        assert sources.willneed_limit(f.fileno()) == 128 * 1024


def test_scan_and_verify_name_the_segment_walked_next(monkeypatch):
    """``scan``'s and ``verify``'s partition walks open each segment with the one they walk
    after it, so a cold segment's reads ahead run on into it (the compiled reading of small
    segments turned off here: it opens no :class:`Segment`)."""
    opened = []
    real = Segment.open

    def spy(files, **kwargs):
        following = kwargs.get("following")
        opened.append((files.log, None if following is None else following.log))
        return real(files, **kwargs)

    monkeypatch.setattr(Segment, "open", staticmethod(spy))
    monkeypatch.setattr(verify_room, "small_segment_checks", lambda *a, **k: None)
    monkeypatch.setattr(LocalDisk, "compiled_reads", False)
    log_dirs, _ = walk([SAMPLE / "payments-compact-0"])
    (log_dir,) = log_dirs
    (pdir,) = log_dir.partitions
    logs = [s.log for s in pdir.segments]
    assert len(logs) > 2
    for run in (lambda: summarize_partition(pdir, verify_crc=True, limit=1 << 20),
                lambda: verify_partition(log_dir, pdir)):
        opened.clear()
        run()
        assert opened == list(zip(logs, [*logs[1:], None], strict=True))


def test_a_burst_behind_the_walk_skips_only_what_the_walk_has_passed(tmp_path, monkeypatch):
    """A walk faster than the device asks for its next step while the burst is still
    reading the last one: the burst goes on from where it is, and only the bytes the walk
    has already passed are left out. (Before, it jumped to the end of the last step, and the
    bytes between, 137 MiB of a cold 1 GiB ``verify`` of 16 x 1 KiB batches in strace, were
    left for the walk's own page faults to read, the walk waiting for each.)"""
    monkeypatch.setattr(sources, "READAHEAD", 4 * MIB)
    monkeypatch.setattr(sources, "_READ_PIECE", MIB)
    entered, gate = threading.Event(), threading.Event()
    real = sources._read_into_cache

    def held(*args):  # the device is slow: the burst's first call waits for the gate
        entered.set()
        gate.wait(10)
        return real(*args)

    monkeypatch.setattr(sources, "_read_into_cache", held)
    path = cold_file(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    try:
        ahead = sources.ReadAhead(fd, SIZE, depth=4 * MIB)
        ahead.passed(0, MIB)  # cold: the burst starts on [0, 5 MiB), held at its first call
        assert entered.wait(10)
        ahead.passed(MIB, 2 * MIB)  # the walk is on, and has passed its first MiB
        gate.set()
        # the probes of the cold check read the last page of each step; the kernel's own
        # readahead reads on from a read, never back: the pages between are the burst's
        between = slice(2 * MIB // 4096, 4 * MIB // 4096)
        assert resident_soon(path, between), "bytes ahead of the walk were never read ahead"
        ahead.close()
    finally:
        os.close(fd)


def test_the_burst_reads_what_was_asked_and_stops_there(tmp_path):
    """The compiled burst sends the pieces up to what the walk asked for, and no further: a
    read-ahead asked for 4 MiB of a cold file leaves the last 8 MiB as they were."""
    path = cold_file(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        state = np.array([4 * MIB, 0], np.longlong)
        assert sources._read_into_cache(state, sink, fd, 0, SIZE, -1, SIZE)
        assert list(state) == [4 * MIB, 4 * MIB]
        pages = residency(path)
        assert pages[:4 * MIB // 4096].all()
        assert not pages[-8 * MIB // 4096:].any()
    finally:
        os.close(sink)
        os.close(fd)


def test_the_burst_goes_on_while_the_walk_s_thread_holds_the_gil(tmp_path, monkeypatch):
    """The burst's pieces follow each other in compiled code that holds no GIL: while the
    walk's thread holds it (a second here, in one call), the device reads on to what was
    asked for. (Before, each piece ended with the burst waiting for the GIL: a cold
    ``verify`` of 500 x 100 B spent 0.4-1.4 s of its 2-3 s between pieces; with pieces
    of 1 MiB here, the first piece and the kernel's own readahead of it, a few MiB, were
    all it read while the GIL was held.)"""
    monkeypatch.setattr(sources, "_READ_PIECE", MIB)
    started = threading.Event()
    real = sources._read_into_cache

    def reading(*args):
        started.set()
        return real(*args)

    monkeypatch.setattr(sources, "_read_into_cache", reading)
    path = cold_file(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    try:
        ahead = sources.ReadAhead(fd, SIZE)
        ahead.passed(0, MIB)  # cold: the whole file is asked for, on the burst's thread
        assert started.wait(10)  # the burst's first call is made
        ctypes.PyDLL(None).usleep(1_000_000)  # a call that keeps the GIL for a second
        pages = residency(path)
        ahead.close()
    finally:
        os.close(fd)
    assert pages.all(), f"{int(pages.sum()) * 4096 // MIB} MiB of 24 read ahead"
