"""Where a file's bytes come from: the one place a path becomes a located path.

This is the seam between the storage rooms and the place a log dir lives
(docs/locations.md), and the dispatch of its kinds: a path is resolved here, once, where it
enters the library, and travels on as what it resolved to:

* a **local path** stays a :class:`pathlib.Path` and every read keeps today's code path
  (``os.scandir``, a read-only mapping for sealed segments, ``pread`` windows for live ones);
* an **object store** URI (``s3://``, ``gs://``, ``abfs://``, ... :mod:`.objectstore`) and an
  **archive** (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``: :mod:`.archive`) become a
  :class:`~segtools.storage.located.RemotePath` in a
  :class:`~segtools.storage.located.Location` (the abstract, :mod:`.located`).

A location is opened in the :class:`~segtools.storage.scope.LocationScope` applied to the
call (the command's run, the dataset's, the Spark task's), which owns and closes it; with no
scope applied, it belongs to the paths that hold it. Nothing here is process-wide.
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
from segtools.storage.files import open_regular, pread_exact_or_short
from segtools.storage.located import (
    Entry,
    Location,
    ObjectChangedError,
    RemotePath,
    is_remote,
    open_remote,
    open_source,
)
from segtools.storage.scope import LocationScope, note_read

#: The names the storage rooms take from the seam (the abstract's, through its front door).
__all__ = ["ARCHIVE_SUFFIXES", "Entry", "Location", "LocationScope", "ObjectChangedError",
           "RemotePath", "as_path", "custody", "is_archive_name", "is_remote", "is_uri",
           "list_files", "note_read", "open_location", "open_remote", "open_source",
           "read_range", "resolve"]

#: File names that make a local file an archive read in place.
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


def is_uri(text: str) -> bool:
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum()


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def open_location(uri: str, storage_options: Mapping[str, Any] | None = None) -> Location:
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


def _new_location(uri: str, options: Mapping[str, Any]) -> Location:
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
            storage_options: Mapping[str, Any] | None = None) -> Path | RemotePath:
    """A path as given by a user or an earlier answer, as a path of where it lives.

    A URI becomes a path in its object store; a local path through an archive file
    (``bundle.tgz`` or ``bundle.tgz/broker-1/kafka-logs``) becomes a path in the archive; any
    other path is an absolute local :class:`~pathlib.Path`, exactly as before."""
    if isinstance(path, RemotePath):
        return path
    text = os.fspath(path)
    if is_uri(text) and not text.startswith("file://"):
        root, key = split_uri(text)
        return open_location(root, storage_options).path(key)
    if text.startswith("file://"):  # file://user:password@host/ holds one too
        _refuse_credentials(text)
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
    an answer printed (a URI, a path through an archive) is resolved again, in the applied
    scope (which finds the location that printed it)."""
    if isinstance(path, RemotePath):
        return path
    text = os.fspath(path)
    if (not isinstance(path, Path) and is_uri(text)) or _through_archive(text):
        return resolve(text)
    return Path(text)


def _through_archive(text: str) -> bool:
    return any(is_archive_name(part) for part in text.split(os.sep))


def read_range(path: str | os.PathLike[str], lo: int, hi: int) -> bytes:
    """The bytes ``[lo, hi)`` of a file wherever it lives (fewer when it ends first)."""
    p = as_path(path)
    if isinstance(p, RemotePath):
        f = open_remote(p)
        return f.pread(hi - lo, lo)
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
            path = read.path if isinstance(read.path, Path | RemotePath) else as_path(read.path)
            records.append(_custody_record(name, path, read.size, read.mtime_ns))
    return records


def _custody_record(name: str, path: Path | RemotePath, size: int,
                    mtime_ns: int | None) -> dict:
    try:
        if isinstance(path, RemotePath):
            digest, got = _digest(lambda lo, hi: path.location.read_range(path.key, lo, hi),
                                  size)
            # after the read: a store's tag comes with an open, and a file only a worker
            # process opened is opened here first
            e = path.entry
            etag, kind = (e.etag if e else None), path.location.kind
            now = (e.size, e.mtime_ns) if e else None
        else:
            etag, kind = None, "local"
            fd, st = open_regular(str(path))
            try:
                digest, got = _digest(lambda lo, hi: os.pread(fd, hi - lo, lo), None)
            finally:
                os.close(fd)
            now = (st.st_size, st.st_mtime_ns)
    except (OSError, SegtoolsError) as e:
        return {"type": "custody", "path": name, "location": "unreadable", "size": size,
                "mtime_ms": _ms(mtime_ns), "etag": None, "sha256": None, "changed": True,
                "error": str(getattr(e, "message", None) or e)}
    return {"type": "custody", "path": name, "location": kind, "size": size,
            "mtime_ms": _ms(mtime_ns), "etag": etag,
            "sha256": digest.hexdigest() if got == size else None,
            "changed": now != (size, mtime_ns) or got != size}


def _digest(read, size: int | None) -> tuple[Any, int]:
    """SHA-256 of a file read in chunks up to ``size`` (None: to its end), and the bytes read."""
    digest, got = hashlib.sha256(), 0
    while size is None or got < size:
        chunk = read(got, got + _HASH_CHUNK if size is None else min(size, got + _HASH_CHUNK))
        if not chunk:
            break
        digest.update(chunk)
        got += len(chunk)
    return digest, got


def _ms(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000
