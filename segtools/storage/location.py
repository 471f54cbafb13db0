"""Where a file's bytes come from: the one place a name becomes a located path.

This is the seam between the storage rooms and the place a log dir lives
(docs/locations.md), and the dispatch of its kinds: a path is resolved here, once, where it
enters the library, and travels on as the located path it resolved to, which carries its
:class:`~segtools.storage.located.Location` (the abstract, :mod:`.located`):

* a **local path** becomes a :class:`~segtools.storage.local.LocalPath` on the local disk
  (:mod:`.local`: ``os.scandir``, a read-only mapping for sealed segments, ``pread`` windows
  for live ones);
* an **object store** URI (``s3://``, ``gs://``, ``abfs://``, ... :mod:`.objectstore`) and an
  **archive** (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``: :mod:`.archive`) become a
  :class:`~segtools.storage.located.RemotePath` in a listed location.

The rooms below ask ``path.location`` what differs between kinds; none asks which kind it is.
A listed location is opened in the :class:`~segtools.storage.scope.LocationScope` applied to
the call (the command's run, the dataset's, the Spark task's), which owns and closes it; with
no scope applied, it belongs to the paths that hold it. Nothing here is process-wide (the
local disk holds no state).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from segtools.errors import SegtoolsError
from segtools.sensitive import refuse_uri_credentials, without_credentials
from segtools.storage import scope
from segtools.storage.local import LocalPath
from segtools.storage.located import (
    Entry,
    ListedLocation,
    Location,
    ObjectChangedError,
    OpenFile,
    RemotePath,
)
from segtools.storage.scope import LocationScope, note_read

#: The names the storage rooms take from the seam (the abstract's, through its front door).
__all__ = ["ARCHIVE_SUFFIXES", "Entry", "ListedLocation", "LocalPath", "Located", "Location",
           "LocationScope", "ObjectChangedError", "RemotePath", "as_path", "custody",
           "is_archive_name", "is_uri", "list_files", "note_read", "open_location",
           "read_range", "resolve"]

#: A located path: a path that carries its location (module doc).
Located = LocalPath | RemotePath

#: File names that make a local file an archive read in place.
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


def is_uri(text: str) -> bool:
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum()


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def open_location(uri: str, storage_options: Mapping[str, Any] | None = None
                  ) -> ListedLocation:
    """The location a URI (``s3://bucket``) or an archive path names: the applied scope's
    when it opened it already, else a new one (owned by that scope when one is applied; its
    options when ``storage_options`` is None). Raises :class:`SegtoolsError` naming it."""
    owner = scope.current()
    if owner is None:
        return _new_location(uri, storage_options or {})
    found = owner.find(uri, storage_options)
    if found is None:
        found = owner.own(_new_location(
            uri, owner.options if storage_options is None else storage_options))
    return found


def _new_location(uri: str, options: Mapping[str, Any]) -> ListedLocation:
    """The dispatch: which kind of location a name is. Each kind's module is loaded when a
    location of its kind is first opened: they load numpy and pyarrow, which a local tree
    (and ``segtools --help``) never needs. No kind imports this module, so nothing here
    hides a loop (``tests/test_house.py`` checks the imports at every depth)."""
    if is_uri(uri):
        from segtools.storage.objectstore import ObjectStoreLocation
        return ObjectStoreLocation(uri, options)
    from segtools.storage.archive import ArchiveLocation
    return ArchiveLocation(uri, options)


def split_uri(text: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("s3://bucket", "/a/b")``; credentials in the URI's user part
    are refused here, where every face's URI is parsed (:mod:`segtools.sensitive`)."""
    _refuse_credentials(text)
    parts = urlsplit(text)
    key = "/" + "/".join(p for p in unquote(parts.path).split("/") if p and p != ".")
    root = f"{parts.scheme}://{parts.netloc}"
    if parts.query:
        root += f"?{parts.query}"
    return root, key


def _refuse_credentials(uri: str) -> None:
    refused = refuse_uri_credentials(uri)
    if refused is not None:
        raise SegtoolsError(refused, path=without_credentials(uri))


def resolve(path: str | os.PathLike[str],
            storage_options: Mapping[str, Any] | None = None) -> Located:
    """A path as given by a user or an earlier answer, as a located path of where it lives.

    A URI becomes a path in its object store; a local path through an archive file
    (``bundle.tgz`` or ``bundle.tgz/broker-1/kafka-logs``) becomes a path in the archive; any
    other path is an absolute :class:`~segtools.storage.local.LocalPath`."""
    if isinstance(path, RemotePath):
        return path
    text = os.fspath(path)
    if is_uri(text) and not text.startswith("file://"):
        root, key = split_uri(text)
        return open_location(root, storage_options).path(key)
    if text.startswith("file://"):  # file://user:password@host/ holds one too
        _refuse_credentials(text)
        text = text[len("file://"):]
    local = LocalPath(os.path.abspath(text))
    for i, part in enumerate(local.parts):
        if is_archive_name(part):
            archive = LocalPath(*local.parts[:i + 1])
            if archive.is_file():
                key = "/" + "/".join(local.parts[i + 1:])
                return open_location(str(archive), storage_options).path(key)
    return local


def as_path(path: str | os.PathLike[str]) -> Located:
    """The located path of a path below the faces: a located path is itself (it was
    resolved where it entered), a plain local path (an API caller's, a test's) is on the
    local disk, and a name an answer printed (a URI, a path through an archive) is resolved
    again, in the applied scope (which finds the location that printed it)."""
    if isinstance(path, LocalPath | RemotePath):
        return path
    text = os.fspath(path)
    if (not isinstance(path, Path) and is_uri(text)) or _through_archive(text):
        return resolve(text)
    return LocalPath(text)


def _through_archive(text: str) -> bool:
    return any(is_archive_name(part) for part in text.split(os.sep))


def read_range(path: str | os.PathLike[str], lo: int, hi: int) -> bytes:
    """The bytes ``[lo, hi)`` of a file wherever it lives (fewer when it ends first)."""
    p = as_path(path)
    with p.location.open_path(p) as f:
        return f.pread(max(hi - lo, 0), lo)


def list_files(path: str | os.PathLike[str]) -> Iterator[tuple[Located, Entry]]:
    """Every file below a directory (or the file itself) with what its listing says, in name
    order: one recursive listing for a listed location, ``os.walk`` for a local directory."""
    p = as_path(path)
    return p.location.list_files(p)


# -- chain of custody (--hashes) ------------------------------------------------------------

_HASH_CHUNK = 8 * 1024 * 1024


def custody(owner: LocationScope) -> list[dict]:
    """One record per file the scope's run read: where it is, what the run saw (size,
    modification time, version tag where the store gives one), and the SHA-256 of its bytes,
    read once more through the same location. ``changed`` says the file is no longer what the
    run read."""
    records = []
    with owner.applied():  # a name the run printed reopens where the run read it
        reads = sorted((owner.reads or {}).items())
        for name, read in reads:
            records.append(_custody_record(name, as_path(read.path), read.size,
                                           read.mtime_ns))
    return records


def _custody_record(name: str, path: Located, size: int, mtime_ns: int | None) -> dict:
    try:
        with path.location.open_path(path) as f:
            digest, got = _digest(f)
            etag, now = f.etag(), f.seen()
    except (OSError, SegtoolsError) as e:
        return {"type": "custody", "path": name, "location": "unreadable", "size": size,
                "mtime_ms": _ms(mtime_ns), "etag": None, "sha256": None, "changed": True,
                "error": str(getattr(e, "message", None) or e)}
    return {"type": "custody", "path": name, "location": path.location.kind, "size": size,
            "mtime_ms": _ms(mtime_ns), "etag": etag,
            "sha256": digest.hexdigest() if got == size else None,
            "changed": now != (size, mtime_ns) or got != size}


def _digest(f: OpenFile) -> tuple[Any, int]:
    """SHA-256 of a file read in chunks to its end, and the bytes read."""
    digest, got = hashlib.sha256(), 0
    while chunk := f.pread(_HASH_CHUNK, got):
        digest.update(chunk)
        got += len(chunk)
    return digest, got


def _ms(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000
