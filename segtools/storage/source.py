"""A segment's bytes for the walk: a read-only mapping when sealed, ``pread`` windows when live.

Touching a mapped page past the end of a file that shrank kills the process with SIGBUS,
which Python cannot catch; ``pread`` into private memory just returns fewer bytes. Kafka
shrinks a segment file only in these cases, so only these files are read through windows
(the rule is decided per file at open, see :func:`segtools.storage.partition.settle`):

* the active segment (the last one): a follower truncates it (``LogSegment.truncateTo`` on a
  diverging leader epoch), and a preallocated one is trimmed when it rolls
  (``FileRecords.trim``);
* a segment holding offsets at or above the partition's high watermark or recovery point: a
  follower may truncate back into it (``LocalLog.truncateTo`` deletes the newer segments and
  truncates the one holding the target; the target is never below the high watermark except
  after an unclean leader election), and recovery after an unclean shutdown truncates
  segments above the recovery point (``LogSegment.recover``);
* any file whose size or modification time changed between the directory listing and the open.

Rolled segments below both checkpoints are immutable until they are deleted (an unlinked file
keeps its bytes while it is open) or replaced by the cleaner's ``.swap`` rename (which leaves
the old inode intact), so they are mapped: no copy, and the walk reads them at memory speed.
The mapping still re-checks the file size before each window, which narrows what is left of
the race (an unclean leader election truncating below the high watermark) to one window.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from segtools.decode.buffers import BufferPool
from segtools.decode.source import advise
from segtools.decode.walk import first_nonzero
from segtools.storage import _readahead, gentle
from segtools.storage.files import data_end, next_data, open_to_advise

#: Window size for the mapping: pages behind it are handed back, and the size is re-checked.
MAPPED_STRIDE = 64 * 1024 * 1024
#: Window size for ``pread``: small enough to stay in the CPU caches while it is walked.
PREAD_STRIDE = 4 * 1024 * 1024
#: The widest ``pread`` window, for a walk whose chunks are larger than the stride (the Python
#: API's and Spark's reader: 16 MiB chunks, an Arrow batch each). The reader decodes each
#: window's records as one chunk (``chunk_per_window``), and its Python work per chunk (the
#: walk's step, the plan, about twenty Arrow columns) is a third of its time on 4 MiB windows
#: of 16 x 1 KiB batches; the copy costs the same per byte either way. A shallow walk keeps
#: the stride: its CRC pass reads the window it has just copied, from the CPU caches.
PREAD_CHUNK_STRIDE = 16 * 1024 * 1024
#: Inflated bytes per chunk of compressed batches (the record decoder's buffers).
CHUNK_BUFFER = 16 * 1024 * 1024
#: Room in front of a window copied ahead of the walk (:meth:`WindowSource.copy_ahead`) for
#: the head of the batch the window before it ended inside of: that window's next batch
#: starts there, and its head is copied over from the window before (a batch of 16 x 1 KiB
#: records is 16 KiB, one of 500 x 100 B about 55 KiB). A window whose first batch starts
#: further back is read whole, as if nothing had been copied ahead.
COPY_AHEAD_ROOM = 256 * 1024
#: Bytes the reader's thread copies ahead per step of its idle time: about a fifth of a
#: millisecond, the longest the walk's thread waits for the step in progress when it takes
#: the window over.
COPY_AHEAD_STEP = 1024 * 1024
#: What a window's buffer holds beyond the window: the window is read into its buffer at the
#: file position's own place in a page (:meth:`WindowSource.window`), up to a page in, and
#: a window copied ahead has room in front of it.
WINDOW_SLACK = mmap.PAGESIZE + COPY_AHEAD_ROOM
#: Below this size a mapping's pages are not worth handing back.
_RELEASE_MIN = 64 * 1024 * 1024
_ZERO_CHUNK = 1 << 20
#: Linux's madvise(MADV_POPULATE_READ) (5.14): map a range's pages in one call, as a read
#: would fault them in; a page the file no longer has fails the call instead of raising
#: SIGBUS. Python names it only from 3.12 on.
_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22) if sys.platform == "linux" else None


#: Bytes of a cold file asked of the device ahead of the walk (``POSIX_FADV_WILLNEED``): a
#: disk reading 1-3 GB/s keeps 20-60 ms of work queued, longer than the checks and decoding
#: of any window take, so the device never waits for the walk to ask. The kernel's own
#: readahead of a sequential reader is ``read_ahead_kb`` (128 KiB by default, a few MiB on
#: some virtual disks) and starts only when the reader reaches it: alone it leaves the
#: device idle while the walk works and the walk waiting while the device reads.
READAHEAD = 64 * 1024 * 1024
#: The least a ``POSIX_FADV_WILLNEED`` call is cut to: the kernel's default readahead
#: (``VM_READAHEAD_PAGES``), for a file whose device's limits cannot be read.
_KERNEL_READAHEAD = 128 * 1024
#: Up to this many bytes are asked for on the walk's own thread: queueing them costs about
#: a quarter of a millisecond, a few times what starting a thread costs (a small file).
_ASK_INLINE = 1024 * 1024


def willneed_limit(fd: int) -> int:
    """The most bytes one ``POSIX_FADV_WILLNEED`` call on ``fd`` brings in.

    Linux cuts each such call to the larger of the device's readahead (``read_ahead_kb``) and
    its largest request (``max_sectors_kb``) and drops the rest without a word
    (``force_page_cache_ra``): asked for 16 MiB, a disk with 8 MiB of readahead reads 8 MiB,
    one with the default 128 KiB reads a few hundred KiB, and the walk then waits for the
    device on every byte that was dropped. The limits are read from sysfs for the file's
    block device (the whole disk's queue for a partition); a file system with no one block
    device (btrfs, overlay, NFS) gets the kernel's default."""
    dev = os.fstat(fd).st_dev
    block = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    for queue in (f"{block}/queue", f"{block}/../queue"):
        try:
            kib = max(_sysfs_int(f"{queue}/read_ahead_kb"), _sysfs_int(f"{queue}/max_sectors_kb"))
        except (OSError, ValueError):
            continue
        return max(_KERNEL_READAHEAD, kib * 1024)
    return _KERNEL_READAHEAD


def _sysfs_int(path: str) -> int:
    with open(path, "rb") as f:
        return int(f.read(32))


class ReadAhead:
    """The device kept busy ahead of a walk over a file that is not in the page cache.

    Only a cold file is asked for ahead: a warm one needs no device, and asking the kernel
    about pages it holds already costs about a fifth of copying them. Whether the bytes
    ahead are cached is asked of the kernel with a one-byte ``preadv`` that may not block
    (``RWF_NOWAIT``); once a probe misses, the file is treated as cold to its end.

    The range ahead is read into the page cache on a thread of its own
    (:func:`_read_into_cache`: the kernel's own readahead, no copy): bringing pages in costs
    CPU (the pages allocated and indexed, the requests built), and the compiled loop that
    makes the calls holds no GIL until it has caught up with the walk, so the walk goes on
    while the second core keeps the device busy, and the device never waits for the walk's
    thread to let go of the GIL between two pieces. A thread lives
    only while there is something to ask (one burst per step of the walk), so a file never
    closed leaves none behind; :meth:`close` waits for the call in progress, so nothing
    reaches a descriptor its owner has closed. ``POSIX_FADV_WILLNEED`` is what the walk's
    own thread asks with (a small file, a broker's host), in calls of
    :func:`willneed_limit` bytes: the kernel cuts a larger one short.

    On a broker's host (a read-rate cap, or the page cache left as found) only one window
    is asked for ahead, in the walk's own thread, as the kernel's own readahead would: the
    cap is on the device's reads, and a page still being read when the file is closed
    cannot be handed back (the kernel drops no page under I/O), so no more than a window
    may be in flight then. :func:`depth` says which."""

    def __init__(self, fd: int, size: int, origin: int = 0, depth: int = READAHEAD):
        self.fd = fd
        self.size = size
        self.origin = origin
        self.depth = depth
        self.cold = False
        #: how far the device was asked for (or will be), and how far the calls were made:
        #: shared with the compiled burst (:func:`segtools.storage._readahead.burst`), which
        #: reads the first before each piece and moves the second on
        self._state = np.zeros(2, np.longlong)
        self._probe = bytearray(1)
        self._limit = 0  # willneed_limit, read once the file is found cold
        self._background = depth >= READAHEAD
        self._lock = threading.Lock()
        self._burst: threading.Thread | None = None
        self._read = True  # the burst reads into the cache (else: advice, see _ask)
        self._following: str | None = None  # the file walked next, until it is opened
        self._next_fd: int | None = None
        self._next_size = 0  # the bytes of the next file asked for after this one's end

    def follow(self, path: str) -> None:
        """The walk goes on to the file at ``path`` (the partition's next segment) once
        this one ends: when this file is cold, the device starts on that one's first bytes
        while this one's last are walked, instead of waiting for the walk to open it.
        Positions past this file's end are that file's (position minus :attr:`size`), up to
        :attr:`depth` bytes of it; nothing on a broker's host, where no more than a window
        may be in flight."""
        if self._background:
            self._following = path

    def passed(self, pos: int, upto: int) -> None:
        """The walk is at ``pos`` and has the bytes up to ``upto`` in hand (or is about to
        read them): keep the device ``depth`` bytes ahead of that, if the file is cold."""
        want = upto + self.depth
        state = self._state
        if not self.cold:
            if min(self.size, want) <= state[_ASKED]:
                return
            self.cold = not self._cached(min(self.size, want) - 1)
            if not self.cold:
                return
            self._limit = willneed_limit(self.fd)
        if want > self.size and self._following is not None:
            self._open_following()
        end = self.size + self._next_size
        stop = min(end, want)
        if stop <= state[_ASKED]:
            return
        start = max(pos, int(state[_ASKED]))
        if stop < end and stop - start < self.depth // 4:
            return  # asked in large steps: each call walks the cache's index of the range
        with self._lock:
            state[_ASKED] = stop
            # a burst still behind the last step goes on from where it is: only what the
            # walk has passed is skipped (the bytes between would be read by its faults)
            state[_ISSUED] = max(int(state[_ISSUED]), pos)
            if self._burst is not None:  # a burst in progress goes on to the new stop
                return
            inline = not self._background or stop - state[_ISSUED] <= _ASK_INLINE
            if not inline:
                self._burst = threading.Thread(target=self._ask, name="segtools-readahead",
                                               daemon=True)
                self._burst.start()
        if inline:
            self._ask()

    def _open_following(self) -> None:
        """Open the next file to advise on, if it can be and is cold (a file gone or not
        regular since its listing is simply not read ahead)."""
        path, self._following = self._following, None
        fd = open_to_advise(path)
        if fd is None:
            return
        size = os.fstat(fd).st_size
        if size and not self._cached(min(size, self.depth) - 1, fd):
            self._next_fd, self._next_size = fd, min(size, self.depth)
        else:
            os.close(fd)  # empty, or warm: nothing to ask

    def _ask(self) -> None:
        """Ask for the bytes up to what the walk asked for, never across the end of the file;
        the burst ends once nothing is left. On the burst's thread the bytes are read into
        the page cache by the compiled loop (:func:`_read_into_cache`), which holds no GIL
        until it has caught up; on the walk's, asked for with ``POSIX_FADV_WILLNEED``, one
        call of at most ``_limit`` bytes at a time."""
        state = self._state
        on_burst = self._burst is threading.current_thread()
        sink = _open_sink() if on_burst and self._read else None
        try:
            while True:
                if sink is not None and not _read_into_cache(
                        state, sink, self.fd, self.origin, self.size,
                        -1 if self._next_fd is None else self._next_fd,
                        self.size + self._next_size):
                    self._read = False  # no splice from this file system: advice then
                    os.close(sink)
                    sink = None
                with self._lock:
                    lo = int(state[_ISSUED])
                    left = int(state[_ASKED]) - lo
                    if left <= 0:
                        if on_burst:
                            self._burst = None
                        return
                    if sink is not None:
                        continue  # asked for more since the loop caught up: on with it
                    n = min(self._limit, left)
                    if lo < self.size:
                        fd, at, n = self.fd, self.origin + lo, min(n, self.size - lo)
                    else:
                        fd, at = self._next_fd, lo - self.size
                    state[_ISSUED] = lo + n
                with contextlib.suppress(OSError):
                    os.posix_fadvise(fd, at, n, os.POSIX_FADV_WILLNEED)
        finally:
            if sink is not None:
                os.close(sink)

    def close(self) -> None:
        """Ask for nothing more, and wait for a call in progress (its owner closes the
        descriptor next)."""
        with self._lock:
            self._state[_ASKED] = self._state[_ISSUED]
            burst = self._burst
        if burst is not None:
            burst.join()
        if self._next_fd is not None:
            os.close(self._next_fd)
            self._next_fd = None

    def _cached(self, pos: int, fd: int | None = None) -> bool:
        """Whether the page holding ``pos`` of this file (or of ``fd``, from its start) is in
        the page cache (a read of it would not wait for the device). A kernel without
        ``RWF_NOWAIT`` (before 4.14) answers no."""
        try:
            if fd is not None:
                return os.preadv(fd, [self._probe], pos, _NOWAIT) == 1
            return os.preadv(self.fd, [self._probe], self.origin + pos, _NOWAIT) == 1
        except OSError:
            return False


_NOWAIT = getattr(os, "RWF_NOWAIT", 0)
_ASKED, _ISSUED = _readahead.ASKED, _readahead.ISSUED
#: Bytes the burst reads into the page cache per call: small enough that :meth:`ReadAhead.
#: close` waits a few milliseconds at most for the call in progress.
_READ_PIECE = 8 * 1024 * 1024


def _open_sink() -> int | None:
    """``/dev/null`` for writing, the end :func:`_read_into_cache` sends bytes to; None where
    there is none (the burst then asks with advice)."""
    try:
        return os.open(os.devnull, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _read_into_cache(state: np.ndarray, sink: int, fd: int, origin: int, size: int,
                     next_fd: int, end: int) -> bool:
    """Read what ``state`` says is asked for and not yet sent (positions past ``size`` are
    ``next_fd``'s) into the page cache, copying it nowhere, in :data:`_READ_PIECE` calls of
    ``sendfile`` to ``/dev/null`` made by compiled code that holds no GIL
    (:func:`segtools.storage._readahead.burst`): the kernel's own readahead (large folios
    where the file system has them, the next window started while this one is read),
    pages let go of unread. Measured here on an evicted 1 GiB file: 0.03 ms of CPU per MiB
    and 2.3 GB/s, where ``POSIX_FADV_WILLNEED`` costs 0.16 ms per MiB and brought 0.8-0.9
    GB/s in (it builds the cache a 4 KiB page at a time), and ``pread`` into a buffer
    0.15-0.35 ms. False where the file system cannot splice (the burst then asks with
    advice); a file that ended early just reads less."""
    return _readahead.burst(state, sink, fd, origin, size, next_fd, end,
                            _READ_PIECE) != _readahead.NO_SPLICE


def depth(stride: int) -> int:
    """How far ahead of the walk a file is asked for under the run's settings (see
    :class:`ReadAhead`): a window on a broker's host, :data:`READAHEAD` elsewhere."""
    settings = gentle.current()
    return stride if settings.rate is not None or settings.keeper is not None else READAHEAD


def _pread_into(fd: int, view: memoryview, position: int) -> int:
    """Fill ``view`` from ``position``; returns the bytes read (fewer: the file ended)."""
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], position + done)
        if n <= 0:
            break
        done += n
    return done


def phase(position: int) -> int:
    """Where ``position`` of a file lies in its page: the bytes a window read from there is
    placed into its page-aligned buffer (:meth:`WindowSource.window`). Measured here (AMD
    EPYC, Linux 6.18, 256 MiB of warm 4 KiB page cache pages in 16 MiB windows starting at
    batch boundaries): 45-48 ms of CPU at the file's phase, 65-70 ms into the buffer's first
    byte, where every word the kernel copies straddles two words of the destination."""
    return position % mmap.PAGESIZE


def zero_from(fd: int, lo: int, hi: int) -> int | None:
    """The first non-zero byte of the file in ``[lo, hi)``, or None. Holes are skipped with
    ``SEEK_DATA`` (a sparse or preallocated file is mostly holes and must not cost a read of
    them); data is read with ``pread`` in bounded chunks, never through a mapping."""
    buf = np.empty(min(_ZERO_CHUNK, max(hi - lo, 0)), np.uint8)
    view = memoryview(buf)
    pos = lo
    while pos < hi:
        nxt = next_data(fd, pos)
        if nxt is None or nxt >= hi:
            return None
        pos = nxt
        got = _pread_into(fd, view[:min(len(buf), hi - pos, data_end(fd, pos) - pos)], pos)
        if got == 0:
            return None  # the file ended (or shrank) before hi: nothing non-zero is left
        found = first_nonzero(buf, 0, got)
        if found >= 0:
            return pos + int(found)
        pos += got
    return None


class MappedSource:
    """A sealed file: one read-only mapping, walked in windows whose pages are handed back."""

    stride = MAPPED_STRIDE
    shared_windows = True  # every window is a view of the one mapping

    def walk_ahead(self, windows: int) -> None:
        """Every window is a view of the one mapping: nothing to keep for another thread."""

    def __init__(self, fd: int, size: int):
        self.fd = fd
        self.size = size
        self.buffers = BufferPool(CHUNK_BUFFER)
        self._map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        self._map.madvise(mmap.MADV_SEQUENTIAL)  # batches are read front to back
        self.array = np.frombuffer(self._map, dtype=np.uint8)
        self._checked = 0
        self._released = 0
        self._populate = _POPULATE_READ
        self._rate = gentle.current().rate
        self._charged = 0  # bytes counted against the read-rate cap (walked front to back)
        self._keeper = gentle.current().keeper
        self._ahead = ReadAhead(fd, size, depth=depth(PREAD_STRIDE))

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        if hi > self._checked:  # the guard: never touch a page the file no longer has
            self._checked = min(self.size, os.fstat(self.fd).st_size)
        end = min(hi, self._checked)
        if self._rate is not None and end > self._charged:
            self._rate.take(end - self._charged)
            self._charged = end
        if not keep:  # the walk's own windows, front to back
            self._ahead.passed(lo, end)
        return self.array, 0, end

    def follow(self, path: str) -> None:
        """See :meth:`ReadAhead.follow`."""
        self._ahead.follow(path)

    def release(self, upto: int) -> None:
        """Drop the pages already walked from this process, so a long walk's resident
        memory stays flat instead of growing to the segment size; they stay in the page
        cache, unless the run leaves the cache as found: then, unmapped here, the pages the
        walk brought in are handed back too (the kernel drops no page still mapped). A view
        of them read later faults them in again from the file, which is sealed."""
        if self.size < _RELEASE_MIN and self._keeper is None:
            return
        upto -= upto % mmap.PAGESIZE
        if upto > self._released:
            advise(self.array, self._released, upto, mmap.MADV_DONTNEED)
            if self._keeper is not None:
                self._keeper.restore_range(self.fd, self._released, upto)
            self._released = upto

    def prefault(self, lo: int, hi: int) -> None:
        """Map the pages of ``[lo, hi)`` now, ahead of the walk: the first touch of a fresh
        mapping's pages costs about half as much as their CRC, and a reader whose other thread
        would only wait can take that cost off the walk. Best effort: a kernel without the
        call, or a file that shrank, leaves the pages to be faulted in by the walk."""
        lo -= lo % mmap.PAGESIZE
        hi = min(hi, self.size)
        if self._populate is None or hi <= lo:
            return
        if advise(self.array, lo, hi, self._populate) == errno.EINVAL:
            self._populate = None  # a kernel before 5.14: no such advice

    def zero_from(self, lo: int, hi: int) -> int | None:
        return zero_from(self.fd, lo, min(hi, self.size))

    def close(self) -> None:
        self._ahead.close()
        self.array = np.zeros(0, np.uint8)
        try:
            self._map.close()
        except BufferError:
            # a numpy view handed out earlier still refers to the map; the GC closes it
            # then. Its pages leave this process now: the kernel drops no page that is still
            # mapped, and the page cache may be asked to drop this file's pages next
            with contextlib.suppress(OSError, ValueError):
                self._map.madvise(mmap.MADV_DONTNEED)


@dataclass(slots=True)
class _NextWindow:
    """The bytes from ``start`` on (where the walk's window in hand ends) that the reader's
    thread copies ahead while it waits, up to ``end``, into ``buffer`` (taken at the first
    step), where each position ``p`` lies at ``p - base``: in step with the page cache, with
    :data:`COPY_AHEAD_ROOM` in front.

    The reader claims a step at a time (``claimed``: the bytes up to there are its, copied
    or being copied; ``copying``: a step in progress) and copies it without holding the
    lock, so the walk never waits for a reader that the scheduler has put aside; the walk
    takes the rest from ``claimed`` on and reads it itself, then waits for the step in
    progress, if any, before it hands the window out. ``short``: where a step of the
    reader's found the file ending."""

    start: int
    end: int
    base: int
    buffer: np.ndarray | None = None
    claimed: int = 0
    copying: int = 0
    short: int | None = None


class WindowSource:
    """A file that may still change: each window is read with ``pread`` into private memory,
    so a truncation under the reader shortens a read instead of killing the process.

    Buffers are recycled: a buffer is reused once nothing else refers to it (CPython's
    reference count says so), and a ``keep`` request for bytes a recent window already holds
    (the records of batches just walked) is answered with a view of that window, with no
    second read; the window's buffer is then simply not reused while the view lives.

    The walk may run on a thread of its own, ahead of a reader that decodes the chunk before
    (``shared_windows``): ``os.preadv`` lets go of the GIL, so the copy of the next window
    and the walk over it use the second core while the reader decodes. The reader's ``keep``
    requests then find their chunk's window among the last few read (:meth:`walk_ahead`;
    never the walk's window in progress, which is added only once read).

    The copy is most of the walk's thread's work there (48 of 60 ms per call on 16 x 1 KiB
    batches, the reader's thread busy for 32), so the reader takes part of it: while it waits
    for the next chunk it copies the window after the walk's, a step at a time
    (:meth:`copy_ahead`, called by ``fetch.rows``' idle hook), and the walk reads only what
    is not copied yet when it gets there. No third thread: on a host where gentle mode's
    ``jobs=2`` means two cores, the read uses two.

    ``windows``: where the window buffers come from, when the reader keeps a pool of its own
    across segments (a fresh page costs more than copying a page into it: see
    :func:`segtools.fetch.rows.read`); else a pool of this file's own."""

    stride = PREAD_STRIDE
    chunk_stride = PREAD_CHUNK_STRIDE
    chunk_per_window = True
    shared_windows = True

    def __init__(self, fd: int, size: int, origin: int = 0, windows: BufferPool | None = None):
        self.fd = fd
        self.size = size
        self.origin = origin  # where the file starts in ``fd`` (an archive member: its offset)
        self.buffers = BufferPool(CHUNK_BUFFER)  # the record decoder's (inflated payloads)
        self._own_windows = windows is None
        self._windows = BufferPool(self.stride + WINDOW_SLACK) if windows is None else windows
        #: ``(window, lo, avail)`` of the last windows the walk read, newest first
        self._recent: tuple[tuple[np.ndarray, int, int], ...] = ()
        self._keep_recent = 1
        self._rate = gentle.current().rate
        self._keeper = gentle.current().keeper
        self._released = 0
        self._ahead = ReadAhead(fd, size, origin, depth(self.stride))
        self._copying = False  # another thread copies windows ahead (:meth:`walk_ahead`)
        self._next: _NextWindow | None = None
        self._next_lock = threading.Condition()  # a step claimed or done; the window taken
        #: bytes copied ahead by another thread than the walk's (that the walk then used or
        #: not): what tests and measurements ask
        self.copied_ahead = 0

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        """The bytes ``[lo, hi)`` (fewer: the file ended), in private memory.

        The copy out of the page cache is the windows' one cost that a mapping does not pay,
        and it costs up to a third less when each byte lands at the place in a page of the buffer
        that it has in the file's page: the kernel's copy then moves whole aligned words
        from each page cache page. Windows start where a batch starts, anywhere in a page,
        so each is read into its page-aligned buffer :func:`phase` bytes in."""
        hi = min(hi, self.size)
        if keep:
            for window, last_lo, last_avail in self._recent:
                if last_lo <= lo and hi <= last_avail:
                    return window[lo - last_lo:hi - last_lo], lo, hi
        n = max(0, hi - lo)
        ahead = self._take_next(lo, n) if self._copying and not keep else None
        if ahead is None:
            skip = phase(self.origin + lo)
            # the slack whatever the window's place: every full window then asks its pool
            # for one size, and any buffer of the pool can take it
            window, done, nxt = self._windows.get(n + WINDOW_SLACK)[skip:skip + n], 0, None
        else:
            window, done, nxt = ahead
        if self._rate is not None:
            self._rate.take(n - done)
        if not keep:  # the walk's own windows, front to back: cold, the device reads ahead
            self._ahead.passed(lo, hi)
        got = done
        if n > done:
            got += _pread_into(self.fd, memoryview(window)[done:], self.origin + lo + done)
        if nxt is not None:
            got = self._settled(nxt, window, lo, got)
        window = window[:got]
        if not keep:  # one tuple replaced whole: a reader on another thread sees old or new
            self._recent = ((window, lo, lo + got), *self._recent[:self._keep_recent - 1])
        return window, lo, lo + got

    def _planned(self, start: int, n: int) -> _NextWindow | None:
        """The walk's window will end at ``start`` (if the file holds it): the next one
        starts there or a little before (the batch cut by this one's end), ``n`` bytes on."""
        if not n or start >= self.size:
            return None
        base = start - phase(self.origin + start) - COPY_AHEAD_ROOM
        return _NextWindow(start, min(self.size, start + n), base, claimed=start)

    def _take_next(self, lo: int, n: int) -> tuple[np.ndarray, int, _NextWindow] | None:
        """The walk's window ``[lo, lo + n)`` in the buffer copied ahead, and how many of its
        bytes are the reader's (copied, or being copied): the head of its first batch is
        copied here from the window before. None when the window is not the one planned for
        (a batch longer than the room in front of it, a window before it that came back
        short): it is then read whole, into a buffer of its own. The window after it is
        planned at once, before this one is read: the reader copies it while the walk reads
        this one."""
        planned = self._planned(lo + n, n)
        with self._next_lock:
            nxt, self._next = self._next, planned
            mine = None if nxt is None else nxt.claimed  # the reader claims no more of it
        if nxt is None or nxt.buffer is None or not self._recent:
            return None
        before, before_lo, before_end = self._recent[0]
        if not (nxt.base <= lo <= nxt.start <= lo + n) or before_end != nxt.start \
                or before_lo > lo or lo + n - nxt.base > len(nxt.buffer):
            return None
        window = nxt.buffer[lo - nxt.base:lo - nxt.base + n]
        window[:nxt.start - lo] = before[lo - before_lo:nxt.start - before_lo]
        return window, min(mine, lo + n) - lo, nxt

    def _settled(self, nxt: _NextWindow, window: np.ndarray, lo: int, got: int) -> int:
        """The bytes of the window taken over from the reader (``got`` from ``lo`` read or
        claimed), once the reader's step in progress is done: up to where a step found the
        file ending, and no further than the file's size now (a follower's truncation since
        the copy is seen as the walk's own ``pread`` would see it). A truncation into the
        window before has the window read again, whole."""
        with self._next_lock:
            while nxt.copying:
                self._next_lock.wait()
        if nxt.short is not None:
            got = min(got, nxt.short - lo)
        if got > nxt.start - lo:
            now = os.fstat(self.fd).st_size - self.origin
            if now < nxt.start:
                return _pread_into(self.fd, memoryview(window), self.origin + lo)
            got = min(got, now - lo)
        return got

    def copy_ahead(self) -> bool:
        """On the reader's thread, while it waits for the walk: copy a step of the window
        after the walk's (:data:`COPY_AHEAD_STEP`). False when there is nothing to copy (no
        window planned yet, or all of it claimed)."""
        with self._next_lock:
            nxt = self._next
            if nxt is None or nxt.claimed >= nxt.end:
                return False
            if nxt.buffer is None:
                nxt.buffer = self._windows.get(nxt.end - nxt.start + WINDOW_SLACK)
            at = nxt.claimed
            step = min(COPY_AHEAD_STEP, nxt.end - at)
            nxt.claimed += step
            nxt.copying += 1
        got = 0
        try:
            if self._rate is not None:
                self._rate.take(step)
            got = _pread_into(self.fd, memoryview(nxt.buffer)[at - nxt.base:at - nxt.base + step],
                              self.origin + at)
        finally:
            with self._next_lock:
                nxt.copying -= 1
                self.copied_ahead += got
                if got < step:  # the file ends here, for now: nothing after it is copied
                    nxt.short = at + got if nxt.short is None else min(nxt.short, at + got)
                    nxt.end = min(nxt.end, at + got)
                self._next_lock.notify_all()
        return True

    def follow(self, path: str) -> None:
        """See :meth:`ReadAhead.follow`."""
        self._ahead.follow(path)

    def walk_ahead(self, windows: int) -> None:
        """The walk will run on a thread of its own, up to ``windows`` windows past the
        chunk whose records another thread decodes: that many are kept for its ``keep``
        requests (one otherwise: each window's buffer held is one the pool cannot reuse),
        and the reader may copy the next window ahead (:meth:`copy_ahead`)."""
        self._keep_recent = max(1, windows)
        self._copying = True

    def release(self, upto: int) -> None:
        """The walk has passed ``upto``: when the run leaves the page cache as found, the
        pages it read before there are handed back now, not when the file is closed (a
        gigabyte segment would otherwise sit in the cache, in the broker's way, until its
        walk ends). The windows hold private copies, so nothing here needs those pages."""
        if self._keeper is not None and upto > self._released:
            self._keeper.restore_range(self.fd, self.origin + self._released,
                                       self.origin + upto)
            self._released = upto

    def zero_from(self, lo: int, hi: int) -> int | None:
        found = zero_from(self.fd, self.origin + lo, self.origin + min(hi, self.size))
        return None if found is None else found - self.origin

    def close(self) -> None:
        self._ahead.close()
        self.buffers.clear()
        if self._own_windows:
            self._windows.clear()
        self._recent = ()
        self._next = None
