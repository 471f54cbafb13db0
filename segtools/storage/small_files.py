"""A log dir's small files read whole: checkpoints, properties, producer snapshots.

One unreadable checkpoint must not stop a walk over a whole log dir, so these readers never
raise for I/O: what cannot be read is a finding and the walk goes on. Each file is read from
wherever it lives by its path's location (:mod:`segtools.storage.located`), and each read is
capped, so a bogus multi-GiB file cannot balloon memory.
"""

from __future__ import annotations

import os

from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.snapshot import ProducerSnapshot, parse_producer_snapshot
from segtools.storage.files import cannot_read
from segtools.storage.location import as_path

# A checkpoint of 100k partitions is ~4 MiB; 64 MiB is far above any real one and stops a bogus
# multi-GiB file from ballooning memory.
TEXT_FILE_CAP = 64 * 1024 * 1024

#: A producer snapshot holds 46 bytes per live producer id; 256 MiB is millions of producers,
#: far past any real broker, and bounds what a hostile (or sparse) file can make us read.
SNAPSHOT_CAP = 256 * 1024 * 1024


def read_upto(path: str | os.PathLike[str], limit: int, *, listed: bool = False) -> bytes:
    """Up to ``limit`` bytes of a file from its start, wherever it lives, as its location
    reads a small file (the local disk opens it without following a link out of the tree,
    :func:`~segtools.storage.files.read_listed_upto`); raises for I/O, as the caller decides
    what an unreadable file is. ``listed``: the caller's directory listing saw a regular
    file under this name, so the location need not check it again before the open."""
    where = as_path(path)
    return where.location.read_upto(where, limit, listed=listed)


def read_text_capped(path: str | os.PathLike[str], cap: int = TEXT_FILE_CAP, *,
                     listed: bool = False) -> tuple[str | None, list[Finding]]:
    """Read a small text file (checkpoint, properties) as UTF-8, refusing files above ``cap``
    (``listed``: as :func:`read_upto`).

    Returns ``(None, findings)`` when the file cannot be read."""
    spath = str(path)
    try:
        data = read_upto(path, cap + 1, listed=listed)
    except (SegtoolsError, OSError) as e:
        return None, [cannot_read(spath, e)]
    if len(data) > cap:
        return None, [finding("file_too_large", spath,
                              f"larger than the {cap}-byte cap for text files; not parsed")]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as e:
        return None, [finding("file_not_utf8", spath,
                              f"not UTF-8 text: {e.reason}", position=e.start)]


def read_producer_snapshot(path: str | os.PathLike[str]
                           ) -> tuple[ProducerSnapshot | None, list[Finding]]:
    """Read a ``.snapshot`` whole: through a read-only mapping where the file can be mapped
    (the CRC needs every byte, the heap none), else in one read."""
    spath = str(path)
    try:
        where = as_path(path)
        with where.location.open_path(where) as f:
            size = f.size()
            if size == 0:
                return parse_producer_snapshot(b"", spath)
            if size > SNAPSHOT_CAP:
                return None, [finding(
                    "file_too_large", spath,
                    f"{size} bytes: more than the {SNAPSHOT_CAP}-byte cap for producer "
                    "snapshots (46 bytes per producer); not read")]
            mapped = f.mapping(size)
            if mapped is None:
                return parse_producer_snapshot(f.pread(size, 0), spath)
            with mapped:
                view = memoryview(mapped)
                try:
                    return parse_producer_snapshot(view, spath)
                finally:
                    view.release()
    except (SegtoolsError, OSError) as e:
        return None, [cannot_read(spath, e)]
