"""``pread`` windows: each read into its buffer at its file position's place in a page, and
the next one copied ahead by the reader's thread while the walk reads its own."""

from __future__ import annotations

import mmap
import os
import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.decode.buffers import BufferPool
from segtools.fetch.rows import WALK_BYTES, WINDOW_BUFFER, WINDOW_BUFFERS
from segtools.storage.source import COPY_AHEAD_ROOM, COPY_AHEAD_STEP, WindowSource

PAGE = mmap.PAGESIZE
DATA = bytes(range(251)) * (5 * PAGE // 251 + 1)  # no two pages alike (251 is prime)


def _address(window) -> int:
    return window.__array_interface__["data"][0]


@settings(max_examples=60, deadline=None)
@given(origin=st.integers(0, 2 * PAGE), lo=st.integers(0, 2 * PAGE),
       n=st.integers(0, 2 * PAGE), keep=st.booleans())
def test_a_window_holds_its_bytes_at_their_place_in_a_page(tmp_path_factory, origin, lo, n,
                                                           keep):
    """The kernel's copy out of the page cache runs a third faster when source and buffer
    are in step (``storage.source.phase``); the bytes are the file's, from any position of
    a file that starts anywhere in its descriptor (an archive member)."""
    path = tmp_path_factory.mktemp("w") / "f.log"
    path.write_bytes(DATA)
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, len(DATA) - origin, origin)
        if keep:  # a window the walk read first, then a part of it asked for again
            source.window(lo, lo + n + PAGE)
        window, got_lo, got_hi = source.window(lo, lo + n, keep=keep)
        expected = DATA[origin + lo:origin + min(lo + n, len(DATA) - origin)]
        assert (got_lo, got_hi) == (lo, lo + len(expected))
        assert window.tobytes() == expected
        if len(window):
            assert _address(window) % PAGE == (origin + lo) % PAGE
        source.close()
    finally:
        os.close(fd)


def test_the_readers_pool_holds_a_whole_window_at_any_phase(tmp_path):
    """The Arrow reader's pool (``fetch.rows``) is sized for a chunk's window and the page
    it may start into: windows small and whole, at every phase, fit the two buffers in use
    (the window in hand, and the one kept for the reader). A buffer a window does not fit
    is a fresh one, its pages zeroed by the kernel on first touch."""
    path = tmp_path / "sparse.log"
    with open(path, "wb") as f:
        f.truncate(WALK_BYTES + 2 * PAGE)  # a hole: read as zeros, nothing written
    allocated = []

    def allocate(n: int):
        allocated.append(n)
        return np.zeros(n, np.uint8)

    pool = BufferPool(WINDOW_BUFFER, size=WINDOW_BUFFERS, allocate=allocate)
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, WALK_BYTES + 2 * PAGE, windows=pool)
        for lo, n in ((0, 100), (1, WALK_BYTES), (61, 100), (PAGE - 1, WALK_BYTES),
                      (PAGE + 17, WALK_BYTES), (2 * PAGE - 1, WALK_BYTES)):
            window, _, hi = source.window(lo, lo + n)
            assert hi - lo == n and not window.any()
            del window
        source.close()
    finally:
        os.close(fd)
    assert len(allocated) == 2



AHEAD_FILE = bytes(range(251)) * ((3 * COPY_AHEAD_STEP + 5 * PAGE) // 251)


@settings(max_examples=40, deadline=None)
@given(back=st.integers(0, COPY_AHEAD_ROOM + 2 * PAGE), steps=st.integers(0, 3),
       origin=st.integers(0, PAGE), cut=st.none() | st.integers(0, len(AHEAD_FILE)))
def test_a_window_copied_ahead_holds_what_a_read_of_it_would(tmp_path_factory, back, steps,
                                                             origin, cut):
    """The reader's thread copies the window after the walk's (``copy_ahead``) while the
    walk reads its own; the walk's next window starts up to a batch before the end of the
    one in hand (``back``), its head then copied over from that one. Whatever was copied
    ahead, the window holds the file's bytes as a ``pread`` of it now would: a follower's
    truncation (``cut``) since the copy shortens it there, and a window that starts before
    the room in front of the copy is read whole. In step with the page cache either way."""
    path = tmp_path_factory.mktemp("w") / "f.log"
    path.write_bytes(AHEAD_FILE)
    size = len(AHEAD_FILE) - origin
    n = COPY_AHEAD_STEP + 3 * PAGE  # a step and a bit: two steps copy all of it
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, size, origin)
        source.walk_ahead(3)
        first, _, end = source.window(0, n)
        assert end == n
        for _ in range(steps):
            source.copy_ahead()
        copied = source.copied_ahead
        assert copied == min(steps * COPY_AHEAD_STEP, n)
        if cut is not None:
            os.truncate(path, cut)
        lo = n - back
        window, got_lo, got_hi = source.window(lo, lo + n)
        now = len(AHEAD_FILE) if cut is None else cut
        expected = AHEAD_FILE[origin + lo:max(origin + lo, min(origin + lo + n, now))]
        assert (got_lo, got_hi) == (lo, lo + len(expected))
        assert window.tobytes() == expected
        assert first.tobytes() == AHEAD_FILE[origin:origin + n]  # the window before: intact
        if len(window):
            assert _address(window) % PAGE == (origin + lo) % PAGE
        source.close()
    finally:
        os.close(fd)


def test_nothing_is_copied_ahead_unless_the_walk_runs_ahead(tmp_path):
    """Inline (one core), the walk reads every window itself: nothing is planned for
    another thread, and ``copy_ahead`` has nothing to do."""
    path = tmp_path / "f.log"
    path.write_bytes(AHEAD_FILE)
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, len(AHEAD_FILE))
        source.window(0, COPY_AHEAD_STEP)
        assert not source.copy_ahead()
        assert source.copied_ahead == 0
        source.close()
    finally:
        os.close(fd)


def test_the_walk_waits_for_a_step_in_progress_and_never_reads_it_again(tmp_path,
                                                                        monkeypatch):
    """The walk takes the window over while the reader is still copying a step of it: it
    reads only what the reader had not claimed, and hands the window out once the step is
    done (never while the reader still writes into it)."""
    from segtools.storage import source as source_room

    path = tmp_path / "f.log"
    path.write_bytes(AHEAD_FILE)
    started, go = threading.Event(), threading.Event()
    walk_reads = []
    real = source_room._pread_into

    def pread_into(fd, view, position):
        if threading.current_thread().name == "reader":
            started.set()
            go.wait(10)
        elif threading.current_thread().name == "walk":
            walk_reads.append(position)
        return real(fd, view, position)

    n = COPY_AHEAD_STEP + 3 * PAGE
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, len(AHEAD_FILE))
        source.walk_ahead(3)
        source.window(0, n)
        monkeypatch.setattr(source_room, "_pread_into", pread_into)
        reader = threading.Thread(target=source.copy_ahead, name="reader")
        reader.start()
        assert started.wait(10)
        taken = {}
        walk = threading.Thread(name="walk", target=lambda: taken.update(
            window=source.window(n - 100, 2 * n - 100)))
        walk.start()
        walk.join(0.3)
        assert walk.is_alive(), "the window was handed out while the reader copied into it"
        go.set()
        walk.join(10)
        reader.join(10)
        window, lo, hi = taken["window"]
        assert (lo, hi) == (n - 100, 2 * n - 100)
        assert window.tobytes() == AHEAD_FILE[n - 100:2 * n - 100]
        assert source.copied_ahead == COPY_AHEAD_STEP
        assert walk_reads == [n + COPY_AHEAD_STEP]  # only what the reader had not claimed
        source.close()
    finally:
        os.close(fd)
