"""Where a file's bytes come from: a local path, an object store, or a member of an archive.

This is the one seam between the storage rooms and the place a log dir lives
(docs/locations.md). Everything above ``storage/`` handles paths and asks for sources; only
this module (and the two backends it dispatches to) knows which kind it reads:

* a **local path** stays a :class:`pathlib.Path` and every read keeps today's code path
  (``os.scandir``, a read-only mapping for sealed segments, ``pread`` windows for live ones);
* an **object store** URI (``s3://``, ``gs://``, ``abfs://``, ... :mod:`.objectstore`) and an
  **archive** (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``: :mod:`.archive`) become a
  :class:`RemotePath`: a pure path that carries its :class:`Location`, so ``path / name``,
  ``.parent`` and ``.name`` work as on disk, while ``exists``/``is_dir``/``stat``/``iterdir``
  answer from the location's one recursive listing and reads become byte ranges.

A :class:`RemotePath` pickles as ``(uri, storage options, key)`` and reopens its location in
the process that unpickles it: a Spark executor on another host reads the same object.
"""

from __future__ import annotations

import fnmatch
import os
import stat as stat_mod
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from segtools.errors import SegtoolsError
from segtools.findings import Finding

#: File names that make a local file an archive read in place.
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed file or directory of a location: what the listing said about it."""

    key: str  # a POSIX path inside the location, starting with "/"
    is_dir: bool
    size: int = 0
    mtime_ns: int | None = None
    etag: str | None = None  # an object store's version tag, where the store gives one


@dataclass(frozen=True, slots=True)
class LocationSpec:
    """What reopens a location in another process: its URI and the storage options."""

    uri: str
    options: tuple[tuple[str, Any], ...] = ()

    def open(self) -> Location:
        return open_location(self.uri, dict(self.options))


class Location(ABC):
    """A tree of files that is not the local file system: listed once, read by byte ranges.

    Subclasses fill :attr:`entries` (key -> :class:`Entry`) from one recursive listing and
    answer reads; :attr:`findings` collects what the listing met (refused archive members,
    a damaged archive) for the walk to report."""

    kind: ClassVar[str]

    def __init__(self, uri: str, options: Mapping[str, Any]):
        self.uri = uri
        self.options = dict(options)
        self.entries: dict[str, Entry] = {"/": Entry("/", True)}
        self.children_of: dict[str, list[str]] = {}
        self.findings: list[Finding] = []
        self.path_class = type(f"RemotePath[{self.display('/')}]", (RemotePath,),
                               {"location": self, "__slots__": ()})

    # -- naming ----------------------------------------------------------------------------

    @abstractmethod
    def display(self, key: str) -> str:
        """How ``key`` is named to a person: a URI without credentials, or archive/member."""

    def spec(self) -> LocationSpec:
        return LocationSpec(self.uri, tuple(sorted(self.options.items())))

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

    def close(self) -> None:
        return None


class ObjectChangedError(SegtoolsError):
    """An object was replaced (size, modification time or version tag changed) after it was
    listed: reading on would mix two objects' bytes in one answer."""


class RemotePath(PurePosixPath):
    """A path inside a :class:`Location`: pure path arithmetic plus the queries the storage
    rooms make of a local :class:`~pathlib.Path`, answered from the location's listing."""

    __slots__ = ()
    location: ClassVar[Location]

    @property
    def key(self) -> str:
        return PurePosixPath.__str__(self)

    def __str__(self) -> str:
        return self.location.display(self.key)

    __fspath__ = __str__

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __reduce__(self) -> tuple:
        return (_reopen_path, (self.location.spec(), self.key))

    def __hash__(self) -> int:
        return hash((id(self.location), self.key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RemotePath) and other.location is self.location
                and other.key == self.key)

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


def _stat_result(location: Location, e: Entry) -> os.stat_result:
    mode = (stat_mod.S_IFDIR | 0o555) if e.is_dir else (stat_mod.S_IFREG | 0o444)
    mtime_ns = e.mtime_ns or 0
    # st_dev/st_ino tell files apart the way the walk's loop guard expects
    return os.stat_result((mode, hash(e.key) & (2**62 - 1), id(location) & (2**62 - 1), 1, 0, 0,
                           e.size, mtime_ns // 10**9, mtime_ns // 10**9, mtime_ns // 10**9,
                           mtime_ns / 1e9, mtime_ns / 1e9, mtime_ns / 1e9,
                           mtime_ns, mtime_ns, mtime_ns))


def _reopen_path(spec: LocationSpec, key: str) -> RemotePath:
    return spec.open().path(key)


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


def scandir(path: str | os.PathLike[str]):
    """:func:`os.scandir` for a local path (the same call); the listing's entries for a
    location. A missing directory raises :class:`FileNotFoundError` alike."""
    if not isinstance(path, RemotePath):
        return os.scandir(path)
    if not path.is_dir():
        raise FileNotFoundError(2, "No such directory", str(path))
    return _Listing([RemoteDirEntry(p.name, str(p), p) for p in path.iterdir()])


def dir_entry_path(entry) -> Path | RemotePath:
    """The path of an entry :func:`scandir` yielded."""
    return entry.remote if isinstance(entry, RemoteDirEntry) else Path(entry.path)


# -- opening locations ----------------------------------------------------------------------

_OPEN: dict[tuple, Location] = {}
_LOCK = threading.Lock()
_DEFAULT_OPTIONS: dict[str, Any] = {}


def set_default_options(options: Mapping[str, Any]) -> None:
    """Storage options used when a URI is resolved without any (the CLI's flags)."""
    _DEFAULT_OPTIONS.clear()
    _DEFAULT_OPTIONS.update(options)


def is_uri(text: str) -> bool:
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum()


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def open_location(uri: str, storage_options: Mapping[str, Any] | None = None) -> Location:
    """The location a URI (``s3://bucket``) or an archive path names, opened once per
    (URI, options) in this process. Raises :class:`SegtoolsError` naming the location."""
    options = dict(_DEFAULT_OPTIONS if storage_options is None else storage_options)
    key = (uri, tuple(sorted((k, repr(v)) for k, v in options.items())))
    with _LOCK:
        found = _OPEN.get(key)
        if found is None and storage_options is None:
            # a name an earlier answer printed: the location that printed it, as it was opened
            found = next((loc for (u, _), loc in reversed(_OPEN.items()) if u == uri), None)
        if found is None:
            if is_uri(uri):
                from segtools.storage.objectstore import ObjectStoreLocation
                found = ObjectStoreLocation(uri, options)
            else:
                from segtools.storage.archive import ArchiveLocation
                found = ArchiveLocation(uri, options)
            _OPEN[key] = found
    return found


def close_all() -> None:
    """Close every opened location (temporary space of archives is removed)."""
    with _LOCK:
        for loc in _OPEN.values():
            loc.close()
        _OPEN.clear()


def resolve(path: str | os.PathLike[str],
            storage_options: Mapping[str, Any] | None = None) -> Path | RemotePath:
    """A path as given by a user or an earlier answer, as a path of where it lives.

    A URI becomes a path in its object store; a local path through an archive file
    (``bundle.tgz`` or ``bundle.tgz/broker-1/kafka-logs``) becomes a path in the archive; any
    other path is an absolute local :class:`~pathlib.Path`, exactly as before."""
    if isinstance(path, RemotePath):
        return path
    text = os.fspath(path)
    if is_uri(text) and not text.startswith("file://"):
        from segtools.storage.objectstore import split_uri
        root, key = split_uri(text)
        return open_location(root, storage_options).path(key)
    if text.startswith("file://"):
        text = text[len("file://"):]
    local = Path(os.path.abspath(text))
    for i, part in enumerate(local.parts):
        if is_archive_name(part):
            archive = Path(*local.parts[:i + 1])
            if archive.is_file():
                key = "/" + "/".join(local.parts[i + 1:])
                return open_location(str(archive), storage_options).path(key)
    return local


def as_path(path: str | os.PathLike[str]) -> Path | RemotePath:
    """``Path(path)`` for code below the faces: a :class:`RemotePath` stays one, and a name
    an earlier answer printed (a URI, a path through an archive) reopens its location."""
    if isinstance(path, RemotePath):
        return path
    if isinstance(path, Path):
        return path if not _through_archive(path) else resolve(path)
    text = os.fspath(path)
    if is_uri(text) or _through_archive(Path(text)):
        return resolve(text)
    return Path(text)


def _through_archive(path: Path) -> bool:
    # no location opened (a local tree): nothing to look for in the path's parts
    return bool(_OPEN) and any(is_archive_name(p) for p in path.parts) and any(
        isinstance(loc.uri, str) and str(path).startswith(loc.uri) for loc in _OPEN.values())


def is_remote(path: object) -> bool:
    return isinstance(path, RemotePath)


# -- reading whole small files and sources --------------------------------------------------

@dataclass(slots=True)
class RemoteFile:
    """A listed file of a location opened for reading: its listing entry and range reads,
    the calls the index and small-file readers make of a local descriptor."""

    path: RemotePath
    entry: Entry
    _cache: bytes | None = field(default=None)

    def size(self) -> int:
        return self.entry.size

    def pread(self, length: int, position: int) -> bytes:
        hi = min(self.entry.size, position + max(length, 0))
        if position >= hi:
            return b""
        if self._cache is not None:
            return self._cache[position:hi]
        return self.path.location.read_range(self.path.key, position, hi)

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
    """Open a listed file; a missing one or a directory raises as :func:`open_regular` does."""
    from segtools.errors import NotAKafkaFileError, VanishedError
    e = path.entry
    if e is None:
        raise VanishedError("no such file", path=str(path))
    if e.is_dir:
        raise NotAKafkaFileError("is a directory, not a segment file", path=str(path))
    note_read(path, e.size, e.mtime_ns)
    return RemoteFile(path, e)


def open_source(path: RemotePath):
    """The batch walk's source for a listed file, and its listing entry."""
    f = open_remote(path)
    return path.location.source(path.key, f.entry), f.entry


def location_findings(paths) -> list[Finding]:
    """What the listings of the locations among ``paths`` met (each location once)."""
    seen: list[Location] = []
    for p in paths:
        if isinstance(p, RemotePath) and all(p.location is not s for s in seen):
            seen.append(p.location)
    return [f for loc in seen for f in loc.findings]


def read_range(path: str | os.PathLike[str], lo: int, hi: int) -> bytes:
    """The bytes ``[lo, hi)`` of a file wherever it lives (fewer when it ends first)."""
    p = as_path(path)
    if isinstance(p, RemotePath):
        f = open_remote(p)
        return f.pread(hi - lo, lo)
    from segtools.storage.files import open_regular, pread_exact_or_short
    fd, _ = open_regular(str(p))
    try:
        return pread_exact_or_short(fd, max(hi - lo, 0), lo)
    finally:
        os.close(fd)


def list_files(path: str | os.PathLike[str]) -> Iterator[tuple[Path | RemotePath, Entry]]:
    """Every file below a directory (or the file itself) with what its listing says, in name
    order: one recursive listing for a location, ``os.walk`` for a local directory."""
    p = as_path(path)
    if isinstance(p, RemotePath):
        e = p.entry
        if e is None:
            return
        if not e.is_dir:
            yield p, e
            return
        prefix = "/" if p.key == "/" else p.key + "/"
        for key in sorted(k for k in p.location.entries if k.startswith(prefix)):
            e = p.location.entries[key]
            if not e.is_dir:
                yield p.location.path(key), e
        return
    if p.is_file():
        st = p.stat()
        yield p, Entry(str(p), False, st.st_size, st.st_mtime_ns)
        return
    for top, dirs, files in os.walk(p):
        dirs.sort()
        for name in sorted(files):
            f = Path(top) / name
            try:
                st = f.stat()
            except OSError:
                continue
            yield f, Entry(str(f), False, st.st_size, st.st_mtime_ns)


# -- chain of custody (--hashes) ------------------------------------------------------------

_CUSTODY: dict[str, tuple[Path | RemotePath, int, int | None]] | None = None
_HASH_CHUNK = 8 * 1024 * 1024


def start_custody() -> None:
    """From now on, remember every file opened for reading (``--hashes``)."""
    global _CUSTODY
    _CUSTODY = {}


def note_read(path: Path | RemotePath | str, size: int, mtime_ns: int | None) -> None:
    """A file was opened for reading, with the size and modification time seen then."""
    if _CUSTODY is not None:
        _CUSTODY.setdefault(str(path), (as_path(path), size, mtime_ns))


def custody() -> list[dict]:
    """One record per file read: where it is, what the run saw (size, modification time,
    version tag where the store gives one), and the SHA-256 of its bytes, read once more
    through the same location. ``changed`` says the file is no longer what the run read."""
    import hashlib
    records = []
    for name, (path, size, mtime_ns) in sorted((_CUSTODY or {}).items()):
        digest, got, now = hashlib.sha256(), 0, None
        try:
            if isinstance(path, RemotePath):
                e = path.entry
                etag, kind = (e.etag if e else None), path.location.kind
                while got < size:
                    chunk = path.location.read_range(path.key, got, min(size, got + _HASH_CHUNK))
                    if not chunk:
                        break
                    digest.update(chunk)
                    got += len(chunk)
                now = (e.size, e.mtime_ns) if e else None
            else:
                etag, kind = None, "local"
                from segtools.storage.files import open_regular
                fd, st = open_regular(str(path))
                try:
                    while chunk := os.pread(fd, _HASH_CHUNK, got):
                        digest.update(chunk)
                        got += len(chunk)
                finally:
                    os.close(fd)
                now = (st.st_size, st.st_mtime_ns)
        except (OSError, SegtoolsError) as e:
            records.append({"type": "custody", "path": name, "location": "unreadable",
                            "size": size, "mtime_ms": _ms(mtime_ns), "etag": None,
                            "sha256": None, "changed": True,
                            "error": str(getattr(e, "message", None) or e)})
            continue
        records.append({"type": "custody", "path": name, "location": kind, "size": size,
                        "mtime_ms": _ms(mtime_ns), "etag": etag,
                        "sha256": digest.hexdigest() if got == size else None,
                        "changed": now != (size, mtime_ns) or got != size})
    return records


def _ms(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000
