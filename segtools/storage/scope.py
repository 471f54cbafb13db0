"""Who owns the locations a read opens: the run, the dataset or the task that opened them.

An object store's location holds a client, its connections and a pool of range threads; an
archive's holds descriptors and temporary space. They belong to whoever asked for them (a
command's run, a :class:`segtools.LogDirs`, a Spark task), which closes them when it is done,
and nothing else in the process sees them: a notebook that once read ``s3://`` does not keep
a store open for its later local reads, and a worker pool decides whether it may fork from
its own run's locations alone (:meth:`LocationScope.shares_connections`).

A scope is *applied* for the length of a call (a context variable, as
:mod:`segtools.storage.gentle` carries a run's settings): the paths resolved meanwhile open
their locations in it, with its storage options when the caller gives none, and a name an
earlier answer of the same scope printed (a URI, a path through an archive) finds the
location that printed it. With no scope applied, a location belongs to the paths that hold
it and is closed when the last of them goes.

The scope also keeps the run's chain of custody (``--hashes``): every file opened for reading
with the size and modification time seen then, in this process or in the run's forked
workers, which hand their reads back with each job's result (:mod:`segtools.fanout`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Location(Protocol):
    """What a scope needs of a location it owns (:class:`segtools.storage.located.Location`):
    the scope holds locations and closes them, it never opens one (:mod:`.location` does),
    so it knows them by these few names alone."""

    uri: str
    options: dict[str, Any]
    kind: str
    shares_connections: bool

    def close(self) -> None: ...


def options_key(uri: str, options: Mapping[str, Any]) -> tuple:
    """What tells two openings of one place apart: its URI and its options (by ``repr``:
    an option's value may be unhashable)."""
    return (uri, tuple(sorted((k, repr(v)) for k, v in options.items())))


@dataclass(frozen=True, slots=True)
class CustodyRead:
    """A file the run opened for reading, as it was then (``--hashes``)."""

    path: Any  # the local Path or the RemotePath read
    size: int
    mtime_ns: int | None


class LocationScope:
    """The locations one run, dataset or task opened, closed together by their owner.

    ``options``: the storage options of every location opened without its own (the CLI's
    ``--storage-option`` flags, ``segtools.open(storage_options=...)``); ``custody``: keep the
    run's chain of custody."""

    def __init__(self, options: Mapping[str, Any] | None = None, *, custody: bool = False):
        self.options: dict[str, Any] = dict(options or {})
        self._open: dict[tuple, Location] = {}
        self._lock = threading.Lock()
        self.reads: dict[str, CustodyRead] | None = {} if custody else None
        self._tokens: list[contextvars.Token] = []

    def __repr__(self) -> str:
        return f"<LocationScope {len(self._open)} location(s) open>"

    # -- the locations it owns -------------------------------------------------------------

    def find(self, uri: str, options: Mapping[str, Any] | None) -> Location | None:
        """The location this scope opened for ``uri`` with these options; with none given,
        the one it opened with its own options, else the latest it opened for ``uri`` (a
        name one of its answers printed reopens where it was read)."""
        with self._lock:
            found = self._open.get(options_key(uri, self.options if options is None
                                               else options))
            if found is None and options is None:
                found = next((loc for (u, _), loc in reversed(self._open.items()) if u == uri),
                             None)
            return found

    def own(self, location: Location) -> Location:
        """Take ``location`` into this scope (closed with it); an equal one opened meanwhile
        by another thread wins, and ``location`` is closed."""
        key = options_key(location.uri, location.options)
        with self._lock:
            found = self._open.setdefault(key, location)
        if found is not location:
            location.close()
        return found

    @property
    def locations(self) -> list[Location]:
        with self._lock:
            return list(self._open.values())

    def shares_connections(self) -> bool:
        """Whether a process forked now could inherit one of this scope's store clients in
        use (:attr:`segtools.storage.located.Location.shares_connections`)."""
        return any(loc.shares_connections for loc in self.locations)

    def close(self) -> None:
        """Close every location this scope opened (object-store clients and their threads,
        archives' descriptors and temporary space)."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for loc in opened:
            loc.close()

    # -- applied for a call ----------------------------------------------------------------

    @contextlib.contextmanager
    def applied(self) -> Iterator[LocationScope]:
        """This scope as the one paths open their locations in, for the block (not closed
        after it: a dataset applies its scope for each call it answers)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    def iterate(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, each step produced with this scope applied (a lazy read that a caller
        iterates after the call that made it returned)."""
        context = contextvars.copy_context()
        context.run(_CURRENT.set, self)
        iterator = iter(items)
        while True:
            try:
                item = context.run(next, iterator)
            except StopIteration:
                return
            yield item

    def __enter__(self) -> LocationScope:
        """Applied for the block and closed after it: the owner's own ``with``."""
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._tokens.pop())
        self.close()

    # -- chain of custody ------------------------------------------------------------------

    def note_read(self, path: Any, size: int, mtime_ns: int | None) -> None:
        """A file opened for reading: the first open of each name is the one kept (what
        the run saw first, whatever it saw after)."""
        if self.reads is not None:
            self.reads.setdefault(os.fspath(path) if not isinstance(path, str) else path,
                                  CustodyRead(path, size, mtime_ns))

    def forked(self) -> None:
        """This scope as a forked worker starts with it: the reads noted before the fork
        are the parent's (dropped here), and its lock is a new one (another thread of the
        parent, a read ahead opening a location, may have held it at the fork, and the
        copy would stay held in the worker for good)."""
        self._lock = threading.Lock()
        self.take_reads()

    def take_reads(self) -> tuple[tuple[str, int, int | None], ...]:
        """The reads noted since the last take, by name, in the order they were noted, and
        forgotten here: what a forked worker hands back with each job's result (a worker's
        scope is its own copy, so its notes reach the run only this way; names and numbers
        only, small to pickle). Empty when the run keeps no chain of custody."""
        if not self.reads:
            return ()
        taken = tuple((name, read.size, read.mtime_ns) for name, read in self.reads.items())
        self.reads = {}
        return taken

    def merge_reads(self, reads: Iterable[tuple[str, int, int | None]]) -> None:
        """A worker's :meth:`take_reads`, noted as if this process had read them then: the
        caller merges each job's at its place in the jobs' order (where a one-process run
        would have read it), so a name read twice keeps the same first sight."""
        for name, size, mtime_ns in reads:
            self.note_read(name, size, mtime_ns)


_CURRENT: contextvars.ContextVar[LocationScope | None] = contextvars.ContextVar(
    "segtools_locations", default=None)


def current() -> LocationScope | None:
    """The scope applied to this call, if any."""
    return _CURRENT.get()


def note_read(path: str | os.PathLike[str], size: int,
              mtime_ns: int | None) -> None:
    """A file was opened for reading, with the size and modification time seen then: kept
    by the applied scope when its run keeps a chain of custody."""
    scope = _CURRENT.get()
    if scope is not None:
        scope.note_read(path, size, mtime_ns)
