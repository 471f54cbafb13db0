"""The abstract location: a place a log dir lives, and how a file of it is listed and read.

Every kind of place is a :class:`Location`: the local disk (:mod:`.local`), an object
store's bucket (:mod:`.objectstore`), an archive (:mod:`.archive`). A path is resolved once,
where it enters the library (:func:`segtools.storage.location.resolve`), into a *located
path* that carries its location: a :class:`~segtools.storage.local.LocalPath` or a
:class:`RemotePath`. The storage rooms below ask the path's location how to do what differs
between kinds (list a directory, open a file, read a segment's bytes, read a small file in
one go, hand a file to the compiled readers by name) and never ask which kind it is.

A location that is not the local disk is a :class:`ListedLocation`: listed once, read by
byte ranges. A path inside it is a :class:`RemotePath`: a pure POSIX path, so ``path /
name``, ``.parent`` and ``.name`` work as on disk while ``exists``/``is_dir``/``stat``/
``iterdir`` answer from the listing.

This module knows no kind of location and opens none: :mod:`.location` is the one place a
name becomes a located path (the dispatch), and :mod:`.scope` says who owns a location.

A listed location pickles as its class, URI and storage options; a :class:`RemotePath` as
its location and key, so the paths of one pickle share one reopened location (pickle's
memo), in the scope applied where they are unpickled (a Spark task's), or owned by the paths
alone.
"""

from __future__ import annotations

import fnmatch
import mmap
import os
import stat as stat_mod
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

from segtools.errors import NotAKafkaFileError, SegtoolsError, VanishedError
from segtools.findings import Finding
from segtools.storage import scope

if TYPE_CHECKING:
    from segtools.decode.buffers import BufferPool
from segtools.storage.scope import note_read, options_key


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed file or directory of a location: what the listing said about it."""

    key: str  # a POSIX path inside the location, starting with "/"
    is_dir: bool
    size: int = 0
    mtime_ns: int | None = None
    etag: str | None = None  # an object store's version tag, where the store gives one


class OpenFile(ABC):
    """A file of a location opened for reading: what the index readers and the chain of
    custody ask of it, whatever the kind (a local descriptor, a listed object's ranges)."""

    @abstractmethod
    def size(self) -> int:
        """The file's size now (a local file's from its descriptor: a live index grows)."""

    @abstractmethod
    def seen(self) -> tuple[int, int | None]:
        """``(size, mtime_ns)`` as the open saw it: what the chain of custody compares."""

    @abstractmethod
    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position``; fewer when the file ends (or shrank)."""

    def pread_data(self, length: int, position: int) -> bytes:
        """:meth:`pread`, with a local file's holes given as the zeros they hold but not
        read: reading a hole fills the page cache with zero pages (a preallocated index's
        tail), which gentle mode never hands back on a broker's active segment."""
        return self.pread(length, position)

    def next_data(self, position: int) -> int | None:
        """The next byte at or after ``position`` that is not in a hole (a preallocated
        index is mostly holes on disk); a listed object has none."""
        return position

    def mapping(self, length: int) -> mmap.mmap | None:
        """A read-only mapping of the first ``length`` bytes, where the file can be mapped
        (a local one); None: read it with :meth:`pread`."""
        return None

    def prefetch(self, limit: int) -> None:
        """Read the whole file now when every read is a request and it is at most ``limit``
        bytes (an index searched probe by probe); a local file is read where it is."""
        return None

    def etag(self) -> str | None:
        return None

    @abstractmethod
    def close(self) -> None:
        """Release the file (a local one's pages are handed back when the run is gentle)."""

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _nothing() -> None:
    return None


@dataclass(slots=True)
class OpenedSegment:
    """A segment's ``.log`` opened for the batch walk: its :class:`Source`, the size and
    modification time the open saw (a growing segment is read to that size), whether the
    bytes are a mapping of the file, and what releases it."""

    source: Any  # a segtools.decode.source.Source
    size: int
    mtime_ns: int
    is_mapped: bool = False
    release: Callable[[], None] = _nothing
    #: A running broker may be appending to it: a torn last batch is the end of the data
    #: (``append_in_flight``), not damage (see :func:`segtools.decode.walk.walk`).
    growing: bool = False


class Location(ABC):
    """A kind of place a log dir lives: what differs between kinds, asked of the location
    of a located path, so that no room below the seam branches on the kind."""

    kind: ClassVar[str]
    #: What opening or listing the location met (a damaged archive, refused members).
    findings: list[Finding] | tuple[Finding, ...]
    #: Whether the location's client keeps connections and threads that a forked process
    #: would inherit mid-use (an object store's; :func:`segtools.fanout.ordered` asks).
    shares_connections: ClassVar[bool] = False
    #: Whether a file of it can be handed by name to the compiled readers
    #: (:mod:`segtools.storage._summary` opens, maps and reads local files itself).
    compiled_reads: ClassVar[bool] = False

    def place(self, path) -> str:
        """Where ``path`` is, named the same however it was spelled: what tells one place
        named twice from two places. A listed location's paths are normalised as they are
        made, and named without credentials."""
        return str(path)

    @abstractmethod
    def scandir(self, path) -> AbstractContextManager:
        """:func:`os.scandir` of a directory of this location; a missing one raises
        :class:`FileNotFoundError`."""

    @abstractmethod
    def child(self, directory, entry) -> Any:
        """The located path of an entry :meth:`scandir` yielded for ``directory``."""

    @abstractmethod
    def open_path(self, path) -> OpenFile:
        """Open a regular file for reading; a missing one raises
        :class:`~segtools.errors.VanishedError`, a directory or a link
        :class:`~segtools.errors.NotAKafkaFileError`."""

    @abstractmethod
    def read_upto(self, path, limit: int, *, listed: bool = False) -> bytes:
        """Up to ``limit`` bytes of a small file from its start (a checkpoint, properties),
        asking for what the file holds, not for the limit; ``listed``: the caller's listing
        has seen a regular file under the name (a check the local disk need not repeat)."""

    @abstractmethod
    def open_segment(self, path, *, sealed: bool, listed: tuple[int, int | None] | None,
                     small: int, windows: BufferPool | None = None,
                     following: Any = None) -> OpenedSegment:
        """A segment's ``.log`` for the batch walk, read the way this kind reads it best
        and safely (``sealed``: Kafka can no longer shrink it; ``listed``: what the listing
        saw; ``small``: up to this size a file is better read whole; ``windows``: the
        reader's pool for window buffers copied into private memory, kept across its
        segments; ``following``: the ``.log`` the reader walks next, which this kind may
        start reading before the walk gets there)."""

    @abstractmethod
    def read_small(self, path, limit: int) -> bytes | None:
        """The whole of a small ``.log`` (up to ``limit`` bytes) in one read, or None when
        the segment is better read by :meth:`open_segment`."""

    @abstractmethod
    def list_files(self, path) -> Iterator[tuple[Any, Entry]]:
        """Every file below a directory (or the file itself) with what its listing says, in
        name order."""

    def close(self) -> None:
        return None


class ListedLocation(Location):
    """A tree of files that is not the local file system: listed once, read by byte ranges.

    Subclasses fill :attr:`entries` (key -> :class:`Entry`) from one recursive listing and
    answer reads; :attr:`findings` collects what the listing met (refused archive members,
    a damaged archive) for the walk to report."""

    def __init__(self, uri: str, options: Mapping[str, Any]):
        self.uri = uri
        self.options = dict(options)
        #: what tells this location from another (two scopes may open the same place)
        self.identity = options_key(uri, self.options)
        self.entries: dict[str, Entry] = {"/": Entry("/", True)}
        self.children_of: dict[str, list[str]] = {}
        self.findings: list[Finding] = []
        self.path_class = type(f"RemotePath[{self.display('/')}]", (RemotePath,),
                               {"location": self, "__slots__": ()})

    # -- naming ----------------------------------------------------------------------------

    @abstractmethod
    def display(self, key: str) -> str:
        """How ``key`` is named to a person: a URI without credentials, or archive/member."""

    def __reduce__(self) -> tuple:
        return (reopen_location, (type(self), self.uri, self.options))

    def path(self, key: str = "/") -> RemotePath:
        return self.path_class(key)

    # -- listing ---------------------------------------------------------------------------

    def _add(self, entry: Entry) -> None:
        """Record a listed entry and every directory above it."""
        key = entry.key
        if key in self.entries and not entry.is_dir:
            self.entries[key] = entry
            return
        self.entries[key] = entry
        while key != "/":
            parent = key.rsplit("/", 1)[0] or "/"
            self.children_of.setdefault(parent, []).append(key)
            if parent in self.entries:
                break
            self.entries[parent] = Entry(parent, True)
            key = parent

    def ensure_listed(self, key: str) -> None:
        """Make sure ``key`` (and the tree below it, when it is a directory) is listed; a
        location listed whole when it opens (an archive) has nothing more to do."""
        return None

    def entry(self, key: str) -> Entry | None:
        self.ensure_listed(key)
        return self.entries.get(key)

    def children(self, key: str) -> list[Entry]:
        self.ensure_listed(key)
        return [self.entries[k] for k in sorted(set(self.children_of.get(key, ())))]

    # -- reading ---------------------------------------------------------------------------

    @abstractmethod
    def read_range(self, key: str, lo: int, hi: int) -> bytes:
        """The bytes of ``[lo, hi)`` of a file (fewer when it ends first)."""

    @abstractmethod
    def source(self, key: str, entry: Entry):
        """A :class:`segtools.decode.source.Source` over the file (the batch walk's reads)."""

    def check_unchanged(self, key: str, entry: Entry) -> None:
        """Raise :class:`ObjectChangedError` when the file is no longer what was listed
        (an archive, read from one open file, cannot change under its reader)."""
        return None

    # -- what differs between kinds (Location), answered from the listing and ranges -----

    def scandir(self, path: RemotePath) -> AbstractContextManager:
        if not path.is_dir():
            raise FileNotFoundError(2, "No such directory", str(path))
        return _Listing([RemoteDirEntry(p.name, str(p), p) for p in path.iterdir()])

    def child(self, directory: RemotePath, entry: RemoteDirEntry) -> RemotePath:
        return entry.remote

    def open_path(self, path: RemotePath) -> RemoteFile:
        return open_remote(path)

    def read_upto(self, path: RemotePath, limit: int, *, listed: bool = False) -> bytes:
        return open_remote(path).pread(limit, 0)

    def open_segment(self, path: RemotePath, *, sealed: bool,
                     listed: tuple[int, int | None] | None, small: int,
                     windows: BufferPool | None = None,
                     following: Any = None) -> OpenedSegment:
        """The object's (or member's) ranges: a listed file cannot shrink under its reader
        the way a local one can, and one replaced since the listing is refused as it is
        read (:class:`ObjectChangedError`); its small files came with the listing. The
        ranges read ahead of their own accord (``following`` is not needed)."""
        f = open_remote(path)
        return OpenedSegment(self.source(path.key, f.entry), f.entry.size,
                             f.entry.mtime_ns or 0)

    def read_small(self, path: RemotePath, limit: int) -> bytes | None:
        """None: a listed segment is read by its ranges (a directory's small files are
        fetched with its listing already, :attr:`small_file_bytes`)."""
        return None

    def list_files(self, path: RemotePath) -> Iterator[tuple[RemotePath, Entry]]:
        """One recursive listing, in name order."""
        e = path.entry
        if e is None:
            return
        if not e.is_dir:
            yield path, e
            return
        prefix = "/" if path.key == "/" else path.key + "/"
        for key in sorted(k for k in self.entries if k.startswith(prefix)):
            e = self.entries[key]
            if not e.is_dir:
                yield self.path(key), e


class ObjectChangedError(SegtoolsError):
    """An object was replaced (size, modification time or version tag changed) after it was
    listed: reading on would mix two objects' bytes in one answer."""


class RemotePath(PurePosixPath):
    """A path inside a :class:`ListedLocation`: pure path arithmetic plus the queries the storage
    rooms make of a local :class:`~pathlib.Path`, answered from the location's listing."""

    __slots__ = ()
    location: ClassVar[ListedLocation]

    @property
    def key(self) -> str:
        return PurePosixPath.__str__(self)

    def __str__(self) -> str:
        return self.location.display(self.key)

    __fspath__ = __str__

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __reduce__(self) -> tuple:
        return (_path_in, (self.location, self.key))

    def __hash__(self) -> int:
        return hash((self.location.uri, self.key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RemotePath) and other.key == self.key
                and other.location.identity == self.location.identity)

    def __lt__(self, other: object) -> bool:
        return str(self) < str(other)

    def __le__(self, other: object) -> bool:
        return str(self) <= str(other)

    def __gt__(self, other: object) -> bool:
        return str(self) > str(other)

    def __ge__(self, other: object) -> bool:
        return str(self) >= str(other)

    # -- the queries of pathlib.Path --------------------------------------------------------

    @property
    def entry(self) -> Entry | None:
        return self.location.entry(self.key)

    def exists(self) -> bool:
        return self.entry is not None

    def is_dir(self) -> bool:
        e = self.entry
        return e is not None and e.is_dir

    def is_file(self) -> bool:
        e = self.entry
        return e is not None and not e.is_dir

    def is_symlink(self) -> bool:
        return False  # listings never hold links: archive links are refused (archive.py)

    def stat(self) -> os.stat_result:
        e = self.entry
        if e is None:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return _stat_result(self.location, e)

    def iterdir(self) -> Iterator[RemotePath]:
        for e in self.location.children(self.key):
            yield self.location.path(e.key)

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """The entries of this directory whose names match ``pattern`` (one level, as the
        storage rooms use :meth:`pathlib.Path.glob`), from the listing."""
        if "/" in pattern or "**" in pattern:
            raise ValueError(f"only one-level patterns are listed: {pattern!r}")
        if self.is_dir():
            yield from (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    def absolute(self) -> RemotePath:
        return self

    resolve = absolute

    def read_bytes(self) -> bytes:
        e = self.entry
        if e is None or e.is_dir:
            raise SegtoolsError("no such file", path=str(self))
        return self.location.read_range(self.key, 0, e.size)


def _stat_result(location: ListedLocation, e: Entry) -> os.stat_result:
    mode = (stat_mod.S_IFDIR | 0o555) if e.is_dir else (stat_mod.S_IFREG | 0o444)
    mtime_ns = e.mtime_ns or 0
    # st_dev/st_ino tell files apart the way the walk's loop guard expects
    return os.stat_result((mode, hash(e.key) & (2**62 - 1), id(location) & (2**62 - 1), 1, 0, 0,
                           e.size, mtime_ns // 10**9, mtime_ns // 10**9, mtime_ns // 10**9,
                           mtime_ns / 1e9, mtime_ns / 1e9, mtime_ns / 1e9,
                           mtime_ns, mtime_ns, mtime_ns))


def reopen_location(kind: type[ListedLocation], uri: str, options: Mapping[str, Any]
                    ) -> ListedLocation:
    """A location unpickled in this process: the applied scope's own when it opened the same
    place, else a new one, owned by that scope when one is applied."""
    owner = scope.current()
    if owner is None:
        return kind(uri, options)
    found = owner.find(uri, options)
    return found if found is not None else owner.own(kind(uri, options))


def _path_in(location: ListedLocation, key: str) -> RemotePath:
    return location.path(key)


# -- directory entries, for the listing code that uses os.scandir ---------------------------

@dataclass(frozen=True, slots=True)
class RemoteDirEntry:
    """What :func:`os.scandir` yields, for a listed entry of a location."""

    name: str
    path: str
    remote: RemotePath

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self.remote.is_dir()

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self.remote.is_file()

    def is_symlink(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self.remote.stat()


class _Listing(AbstractContextManager):
    def __init__(self, entries: list[RemoteDirEntry]):
        self._entries = entries

    def __iter__(self) -> Iterator[RemoteDirEntry]:
        return iter(self._entries)

    def __exit__(self, *exc: object) -> None:
        return None


# -- reading whole small files and sources --------------------------------------------------

class RemoteFile(OpenFile):
    """A listed file of a location opened for reading: its listing entry and range reads,
    the calls the index and small-file readers make of a local descriptor."""

    def __init__(self, path: RemotePath, entry: Entry):
        self.path = path
        self.entry = entry
        self._cache: bytes | None = None

    def size(self) -> int:
        return self.entry.size

    def seen(self) -> tuple[int, int | None]:
        """What the location says of the file now (a store may learn its version tag only
        when the file is opened, after the listing)."""
        e = self.path.entry
        return (e.size, e.mtime_ns) if e is not None else (-1, None)

    def etag(self) -> str | None:
        e = self.path.entry
        return e.etag if e is not None else None

    def pread(self, length: int, position: int) -> bytes:
        hi = min(self.entry.size, position + max(length, 0))
        if position >= hi:
            return b""
        if self._cache is not None:
            return self._cache[position:hi]
        return self.path.location.read_range(self.path.key, position, hi)

    def prefetch(self, limit: int) -> None:
        if self.entry.size <= limit:
            self.read_all()

    def read_all(self) -> bytes:
        """The whole file, kept for the next reads (indexes: searched many times)."""
        if self._cache is None:
            self._cache = self.path.location.read_range(self.path.key, 0, self.entry.size)
            if len(self._cache) < self.entry.size:
                raise SegtoolsError(f"shorter than listed ({len(self._cache)} of "
                                    f"{self.entry.size} bytes)", path=str(self.path))
        return self._cache

    def close(self) -> None:
        self._cache = None


def open_remote(path: RemotePath) -> RemoteFile:
    """Open a listed file; a missing one or a directory raises as
    :func:`segtools.storage.files.open_regular` does."""
    e = path.entry
    if e is None:
        raise VanishedError("no such file", path=str(path))
    if e.is_dir:
        raise NotAKafkaFileError("is a directory, not a segment file", path=str(path))
    note_read(path, e.size, e.mtime_ns)
    return RemoteFile(path, e)


def location_findings(paths) -> list[Finding]:
    """What the listings of the locations of the located ``paths`` met (each location
    once; the local disk's listings report theirs as they go)."""
    seen: list[Location] = []
    for p in paths:
        if all(p.location is not s for s in seen):
            seen.append(p.location)
    return [f for loc in seen for f in loc.findings]
