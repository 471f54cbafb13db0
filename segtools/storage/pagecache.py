"""The page cache left as segtools found it, and whether a running broker holds a log dir.

A Kafka broker serves its consumers at the tail from the page cache; reading a log dir's
cold, sealed segments through the same cache evicts that tail (the page-cache pollution a
lagging consumer also causes). So, as the ``nocache`` utility does, the residency of a file's
pages is noted (``mincore``) before segtools reads it, and once it is done with the file the
pages it brought in, and only those, are handed back (``posix_fadvise(POSIX_FADV_DONTNEED)``).
Pages that were resident stay resident; pages still mapped by any process are not dropped by
the kernel, which is why a mapping is unmapped before its file is handed back.

A broker holds ``<log dir>/.lock`` with ``FileChannel.tryLock`` (Kafka's ``FileLock``), an
exclusive POSIX record lock; ``fcntl(F_GETLK)`` asks who holds it without taking it, so the
test neither writes nor locks anything under the log dir.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import mmap
import os
import re
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

PAGE = mmap.PAGESIZE
#: The lock file a broker holds in each of its log dirs (``LogManager.LockFileName``).
LOCK_FILE = ".lock"

_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value
#: ``struct flock`` on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (int).
_FLOCK = "hhqqi"
#: ``mincore``'s vector: only the low bit of each byte says whether the page is resident.
_LOW_BIT = bytes(i & 1 for i in range(256))
_COLD = re.compile(b"\x00+")
#: Resolves a name to an inode without opening the file (Linux); 0 where there is none.
_O_PATH = getattr(os, "O_PATH", 0)
#: How a file is opened to be asked about: read-only, never blocking, never a terminal.
_QUIET_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def broker_lock_holder(log_dir: str | os.PathLike[str]) -> int | None:
    """The process id holding ``log_dir/.lock`` exclusively (a running broker), or None.

    The file is opened read-only and only asked (``F_GETLK``); the kernel answers for locks
    held by *other* processes, which is what a broker is. A ``.lock`` that is a symbolic link
    is followed, wherever it points: Kafka opens the lock file by its name
    (``FileChannel.open`` follows links), so a broker whose ``.lock`` is a link locks the
    link's target, and the question is whether that file is locked (see
    :func:`_open_lock_file` for why following it is safe)."""
    fd = _open_lock_file(os.path.join(os.fspath(log_dir), LOCK_FILE))
    if fd is None:
        return None
    try:
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack(_FLOCK, answer)
    return pid if kind != fcntl.F_UNLCK else None


def _open_lock_file(path: str) -> int | None:
    """A read-only descriptor of the regular file ``path`` names, through links, or None.

    Whoever writes the log dir (the broker's account) can point ``.lock`` anywhere, and
    segtools may run as root: opening a device can act (a watchdog starts counting when it
    is opened, a tape rewinds when it is closed) and opening a FIFO can block, before any
    check on the descriptor could refuse it. So the name is first resolved to an inode
    without opening it (``O_PATH`` runs no driver's open), that inode's type is checked (a
    regular file only), and that same inode, not the name again, is then opened read-only
    and non-blocking through ``/proc/self/fd``, so a link swapped in between the check and
    the open is not followed.
    What the answer gives away is one lock's holder, the pid a broker's notice shows.
    Without ``O_PATH`` or ``/proc`` a link is not followed (``O_NOFOLLOW``), as before."""
    if _O_PATH:
        try:
            handle = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                return None
            return os.open(f"/proc/self/fd/{handle}", _QUIET_OPEN)
        except OSError:
            pass
        finally:
            os.close(handle)
    return _open_quietly(path, os.O_NOFOLLOW)


def resident(fd: int, size: int) -> bytes:
    """One byte per page of the file's first ``size`` bytes: 1 when it is in the page cache
    now, 0 when not.

    ``mincore`` on a fresh shared mapping reads the cache's state without faulting a page in.
    A file that cannot be mapped (gone, a kernel refusal) reads as all resident, so nothing of
    it is ever dropped. Plain bytes, not an array: this module is loaded by every command,
    ``--help`` included."""
    pages = -(-size // PAGE)
    if pages == 0:
        return b""
    addr = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, _MAP_FAILED):
        return b"\x01" * pages
    try:
        vec = ctypes.create_string_buffer(pages)
        if _LIBC.mincore(addr, size, vec) != 0:
            return b"\x01" * pages
        return vec.raw[:pages].translate(_LOW_BIT)
    finally:
        _LIBC.munmap(addr, size)


def cold_runs(before: bytes, first: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The ``(first page, end page)`` runs of pages that were not resident, within pages
    ``first`` to ``end`` (the whole file by default)."""
    return [m.span() for m in _COLD.finditer(before, first, len(before) if end is None else end)]


def drop(fd: int, runs: list[tuple[int, int]]) -> None:
    """Hand the pages of ``runs`` back to the kernel (they are read again from disk if
    anyone needs them). Advice only: it changes no byte of the file."""
    for first, end in runs:
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, first * PAGE, (end - first) * PAGE, os.POSIX_FADV_DONTNEED)


@dataclass(frozen=True, slots=True)
class _Found:
    """A file as segtools found it: where it is, which inode, which pages were resident."""

    path: str
    inode: tuple[int, int]
    before: bytes


@dataclass(slots=True)
class PageCacheKeeper:
    """Which pages each local file read in this run had in the cache when it was first
    opened, so they can be left so. One per run (and per forked worker, which inherits it);
    a file opened twice keeps the residency of its first opening, the state it was found in.

    The broker's hot files (its active segments and the files named after them,
    :meth:`is_hot`) are never noted, so never advised away; ``spare_active`` False (no
    broker holds the log dir: there is no hot tail) notes them like the others."""

    found: dict[tuple[int, int], _Found] = field(default_factory=dict)
    spare_active: bool = True
    #: Each partition directory's active base offset, listed once per run.
    tails: dict[str, int | None] = field(default_factory=dict)

    def note(self, path: str, fd: int, st: os.stat_result) -> None:
        """Record the residency of a file about to be read, unless it is the broker's tail."""
        inode = (st.st_dev, st.st_ino)
        if inode in self.found or self.is_hot(path):
            return
        self.found[inode] = _Found(path, inode, resident(fd, st.st_size))

    def restore(self, fd: int) -> None:
        """Drop what this run brought into the cache of the file open on ``fd``; the file
        is then as found, so a later read of it is noted afresh."""
        known = self.found.pop(_inode(fd), None)
        if known is not None:
            drop(fd, cold_runs(known.before))

    def restore_range(self, fd: int, lo: int, hi: int) -> None:
        """Drop what this run brought into the cache of the file open on ``fd`` between
        bytes ``lo`` and ``hi`` (whole pages only), the walk having passed them: a long
        segment read through ``pread`` windows would otherwise hold every page it read until
        it is closed, evicting the broker's tail meanwhile. The file stays noted: the rest of
        it is handed back when it is closed."""
        known = self.found.get(_inode(fd))
        if known is not None:
            drop(fd, cold_runs(known.before, lo // PAGE, hi // PAGE))

    @contextlib.contextmanager
    def around(self, paths: Iterable[str | os.PathLike[str] | None]) -> Iterator[None]:
        """Files read by code that opens them itself (the compiled small-file readers):
        noted before the block, handed back after it."""
        opened = [fd for fd in map(_open_quietly, paths) if fd is not None]
        try:
            for fd in opened:
                self.note(os.readlink(f"/proc/self/fd/{fd}"), fd, os.fstat(fd))
            yield
        finally:
            for fd in opened:
                self.restore(fd)
                os.close(fd)

    def restore_all(self) -> None:
        """The end of a job or a run: every file noted, opened once more by name to be
        handed back (a file deleted since, or replaced by another inode, is left alone), and
        forgotten (each partition's files are read by one job)."""
        found, self.found = self.found, {}
        for known in found.values():
            fd = _open_quietly(known.path)
            if fd is None:
                continue
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) == known.inode:
                    drop(fd, cold_runs(known.before))
            finally:
                os.close(fd)

    def is_hot(self, path: str) -> bool:
        """Whether ``path`` belongs to its partition's active segment (the highest base
        offset in its directory): the broker appends to it and its consumers read it, so it
        stays cached. Files that are no segment's (checkpoints, ``partition.metadata``) are
        small and rewritten by rename; they are handed back like sealed files."""
        head, name = os.path.split(path)
        stem = name.split(".", 1)[0]
        if not (self.spare_active and stem.isascii() and stem.isdigit()):
            return False
        if head not in self.tails:
            self.tails[head] = active_base_offset(head)
        active = self.tails[head]
        return active is None or int(stem) >= active


def _inode(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _open_quietly(path: str | os.PathLike[str] | None, flags: int = 0) -> int | None:
    """A regular file opened read-only without blocking, or None (gone, not regular);
    ``flags`` added to the open's."""
    if path is None:
        return None
    try:
        fd = os.open(path, _QUIET_OPEN | flags)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def active_base_offset(partition_dir: str) -> int | None:
    """The highest base offset among a directory's ``.log`` files (its active segment)."""
    try:
        names = os.listdir(partition_dir or ".")
    except OSError:
        return None
    bases = [int(n[:-4]) for n in names
             if n.endswith(".log") and n[:-4].isascii() and n[:-4].isdigit()]
    return max(bases, default=None)
