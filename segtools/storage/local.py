"""The local disk as a location: how a file on it is listed, opened and read.

A local path is a :class:`LocalPath`: a :class:`pathlib.PosixPath` (every query of a local
path works as ever, and it compares equal to the plain path) whose location is the
:data:`LOCAL_DISK`. The local disk holds nothing of its own (no client, no listing, no
descriptor outlives the call that opened it), so one instance serves every caller, and a
``LocalPath`` pickles as a plain path does.

What the local disk does that a listed location does not, each for a reason of Kafka's:

* a sealed segment is read through a read-only mapping, one Kafka may still shrink through
  ``pread`` windows (:mod:`.source` has the rule; a mapped page past a shrunk end is SIGBUS);
* a small file is one ``pread`` into private memory (a tree holds tens of thousands);
* every open refuses what is not a regular file before opening it, and never follows a link
  (:func:`~segtools.storage.files.open_regular`);
* a run that hands the page cache back (``--gentle``) is told of every descriptor, and drops
  what the read brought in when the file is closed;
* the compiled summary (:mod:`segtools.storage._summary`) opens and reads a local file by
  its name.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import PosixPath
from typing import TYPE_CHECKING, ClassVar

import lazy_loader

from segtools.errors import SegtoolsError
from segtools.storage import gentle
from segtools.storage.files import (
    next_data,
    open_regular,
    pread_data,
    pread_exact_or_short,
    read_listed_upto,
    refuse_unless_regular,
)
from segtools.storage.located import Entry, Location, OpenedSegment, OpenFile

if TYPE_CHECKING:
    from segtools.decode import source as _buffers
    from segtools.decode.buffers import BufferPool
    from segtools.storage import source as _sources

# The segment sources (numpy, the compiled walk) load when a segment is first opened, not
# when a path is resolved: every command resolves its paths, and ``segtools --help`` and
# the listing-only commands need none of them. ``lazy_loader.load`` is Python's own
# ``importlib.util.LazyLoader``; the TYPE_CHECKING imports above name the same modules, so
# the arrows stay visible (tests/test_house.py reads them).
_buffers = lazy_loader.load("segtools.decode.source", suppress_warning=True)
_sources = lazy_loader.load("segtools.storage.source", suppress_warning=True)

#: pathlib's own shortcut for the names its ``iterdir`` lists (no parsing of the name again);
#: private, so looked up once and ``/`` is used where a Python does not have it.
_CHILD = getattr(PosixPath, "_make_child_relpath", None)


class LocalFile(OpenFile):
    """A regular local file opened read-only (:func:`open_regular`): reads by ``pread``,
    holes skipped with ``SEEK_DATA``, a mapping where the caller knows the file is sealed."""

    def __init__(self, path: str):
        self.path = path
        self.fd, self._stat = open_regular(path)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def seen(self) -> tuple[int, int | None]:
        return self._stat.st_size, self._stat.st_mtime_ns

    def pread(self, length: int, position: int) -> bytes:
        return pread_exact_or_short(self.fd, length, position)

    def pread_data(self, length: int, position: int) -> bytes:
        return pread_data(self.fd, length, position)

    def next_data(self, position: int) -> int | None:
        return next_data(self.fd, position)

    def mapping(self, length: int) -> mmap.mmap | None:
        return mmap.mmap(self.fd, length, access=mmap.ACCESS_READ)

    def close(self) -> None:
        if self.fd < 0:
            return
        if (keeper := gentle.current().keeper) is not None:
            keeper.restore(self.fd)  # the read has passed it: drop what it brought in
        os.close(self.fd)
        self.fd = -1


class LocalDisk(Location):
    """The local file system: listed by ``os.scandir``, read through descriptors."""

    kind = "local"
    compiled_reads = True
    findings: ClassVar[tuple] = ()  # each listing reports what it meets as it goes

    def __reduce__(self) -> str:
        return "LOCAL_DISK"

    def scandir(self, path: LocalPath):
        return os.scandir(path)

    def place(self, path: LocalPath) -> str:
        """The path with its links, ``.`` and ``..`` resolved: ``dir``, ``./dir/`` and a
        link to it are one place."""
        return os.path.realpath(path)

    def child(self, directory: LocalPath, entry: os.DirEntry) -> LocalPath:
        """``directory / entry.name`` without parsing the name again (listing a large
        broker's tree makes a path for each of its files)."""
        if _CHILD is not None:
            return _CHILD(directory, entry.name)
        return directory / entry.name

    def open_path(self, path: LocalPath) -> LocalFile:
        return LocalFile(os.fspath(path))

    def read_upto(self, path: LocalPath, limit: int, *, listed: bool = False) -> bytes:
        """Read with the descriptor alone (a large tree has two small text files per
        partition); a read of ``limit`` bytes would allocate that much first. A file not
        ``listed`` as a regular file is checked before it is opened (:func:`open_regular`'s
        ``lstat``)."""
        spath = os.fspath(path)
        if not listed:
            refuse_unless_regular(spath)
        return read_listed_upto(spath, limit)

    def open_segment(self, path: LocalPath, *, sealed: bool,
                     listed: tuple[int, int | None] | None, small: int,
                     windows: BufferPool | None = None,
                     following: LocalPath | None = None) -> OpenedSegment:
        """Mapped when sealed and unchanged since the listing, else ``pread`` windows; a
        file up to ``small`` bytes in one read (module doc). A cold file's reads ahead run
        on into ``following`` (:meth:`~segtools.storage.source.ReadAhead.follow`)."""
        fd, st = open_regular(os.fspath(path))
        try:
            size = st.st_size  # the size seen at open: a growing segment is read to here
            unchanged = listed is None or (listed[0] == st.st_size and
                                           listed[1] in (None, st.st_mtime_ns))
            # no broker holds the log dir: nothing will shrink even the active segment
            settings = gentle.current()
            still = sealed or settings.still
            growing = settings.broker is not None and not sealed and \
                gentle.appended_by_broker(os.fspath(path))
            # not when the run hands the cache back (a broker's host) and its readers hand
            # out the records' zero-copy views (``binary_view`` columns): those keep the
            # mapping alive past close(), and whoever reads them then (DuckDB, a notebook)
            # faults its pages back in after they were dropped; private windows are read,
            # noted and dropped here, whoever holds them
            is_mapped = bool(still and unchanged and size > small and (
                settings.keeper is None or not settings.views_outlive_segments))
            if settings.rate is not None and 0 < size <= small:
                settings.rate.take(size)
            whole = os.pread(fd, size, 0) if 0 < size <= small else b""
            if not size or len(whole) == size:
                # a small file is one read into private memory, sealed or not: cheaper than
                # a mapping or a window buffer, and what is in hand cannot shrink
                source = _buffers.BufferSource(whole)
            elif is_mapped:
                source = _sources.MappedSource(fd, size)
            else:
                source = _sources.WindowSource(fd, size, windows=windows)
            if following is not None and not isinstance(source, _buffers.BufferSource):
                source.follow(os.fspath(following))
        except BaseException:
            _release(fd)
            raise
        return OpenedSegment(source, size, st.st_mtime_ns, is_mapped, lambda: _release(fd),
                             growing)

    def read_small(self, path: LocalPath, limit: int) -> bytes | None:
        try:
            fd, st = open_regular(os.fspath(path))
        except SegtoolsError:
            return None
        settings = gentle.current()
        try:
            if settings.rate is not None:
                settings.rate.take(st.st_size)
            data = os.pread(fd, st.st_size, 0) if 0 < st.st_size <= limit else b""
        except OSError:
            return None
        finally:
            _release(fd)
        return data if len(data) == st.st_size else None

    def list_files(self, path: LocalPath) -> Iterator[tuple[LocalPath, Entry]]:
        """``os.walk``, in name order; a file that vanished between the two is skipped."""
        if path.is_file():
            st = path.stat()
            yield path, Entry(str(path), False, st.st_size, st.st_mtime_ns)
            return
        for top, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                f = LocalPath(top, name)
                try:
                    st = f.stat()
                except OSError:
                    continue
                yield f, Entry(str(f), False, st.st_size, st.st_mtime_ns)


def _release(fd: int) -> None:
    if (keeper := gentle.current().keeper) is not None:
        keeper.restore(fd)  # the walk has passed it: drop what it brought in
    os.close(fd)


#: The one local disk: stateless, so shared by every run, dataset and task.
LOCAL_DISK = LocalDisk()


class LocalPath(PosixPath):
    """A path on the local disk, located: ``path.location`` is :data:`LOCAL_DISK`."""

    __slots__ = ()
    location: ClassVar[LocalDisk] = LOCAL_DISK
