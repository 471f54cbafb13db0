"""A segment's ``.log`` on disk: opened read-only, walked up to the size seen at open.

A broker may append to the active segment while we read it: the size is fixed when the file is
opened, so a batch being written past it is simply not seen, and a half-written one inside it is
the torn tail that ``FileLogInputStream`` also treats as the end of data. A sealed segment is
read through a read-only mapping, a file Kafka may still shrink through ``pread`` windows
(:mod:`segtools.storage.source` has the rule). Memory stays flat either way: nothing is read into
one Python object per batch or per file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import chunks, salvage, walk
from segtools.decode.buffers import BufferPool
from segtools.decode.chunks import BatchRecords, Chunk
from segtools.decode.table import BatchTable
from segtools.decode.walk import TABLE_ROWS, Walked
from segtools.errors import SegtoolsError, VanishedError
from segtools.findings import Finding, finding
from segtools.storage.files import REMOTE_SEGMENT_STEM
from segtools.storage.location import ObjectChangedError, as_path
from segtools.storage.partition import SegmentFiles

SEGMENT_NAME_DIGITS = 20
#: Files up to this size are read whole, with one read.
SMALL_FILE = 256 * 1024


def base_offset_from_name(path: str | os.PathLike) -> int | None:
    """``LogFileUtils.offsetFromFileName``: the digits before the first '.' of the name; for a
    remote segment copied by ``LocalTieredStorage``, the start offset before its segment id.

    ASCII digits only: ``str.isdigit`` also accepts '²', which ``int`` then refuses."""
    stem = os.path.basename(os.fspath(path)).split(".", 1)[0]
    if stem.isascii() and stem.isdigit():
        return int(stem)
    remote = REMOTE_SEGMENT_STEM.fullmatch(stem) if stem.isascii() else None
    return int(remote.group(1)) if remote else None


def unreadable(path: str, error: SegtoolsError) -> Finding:
    """The finding for a segment that could not be opened: gone since it was listed (a live
    broker's retention or cleaner deleted it), or unreadable for another reason. Either way the
    rest of the tree is still read."""
    if isinstance(error, ObjectChangedError):
        return finding("object_changed_while_reading", path, str(error))
    if isinstance(error, VanishedError):
        return finding("segment_vanished", path,
                       "deleted since the directory was listed (retention or the cleaner on a "
                       "live broker); its batches are missing from the answer")
    return finding("segment_unreadable", path, f"could not be read: {error}")


def file_unreadable(path: str, error: SegtoolsError) -> Finding:
    """The finding for a file beside the segments (an index, a ``.txnindex``, a checkpoint)
    that could not be opened: the answer goes on without it, and says so."""
    return finding("file_unreadable", path, f"could not be read: {error}; the answer goes on "
                                            "without it")


def with_following(segments: Sequence[SegmentFiles]
                   ) -> Iterator[tuple[SegmentFiles, SegmentFiles | None]]:
    """Each segment of a partition walk with the one walked after it (None after the last):
    the ``following`` of :meth:`Segment.open`."""
    return zip(segments, (*segments[1:], None), strict=False)  # none: no pair


def read_small(files: SegmentFiles) -> bytes | None:
    """The whole ``.log`` of a small segment (up to :data:`SMALL_FILE`), in one read, where
    its location reads it so; None when it is not one, or cannot be read so (the ordinary
    :class:`Segment` then decides, and names what is wrong). What :class:`Segment` reads a
    small file into."""
    if files.log_size > SMALL_FILE:
        return None
    log = as_path(files.log)
    return log.location.read_small(log, SMALL_FILE)


class Segment:
    """One ``.log`` file, read-only. Use as a context manager so the file is released.

    ``sealed``: the caller knows Kafka can no longer shrink this file (its listing said so,
    :attr:`SegmentFiles.sealed`); ``listed``: the ``(size, mtime_ns)`` the listing saw. A
    sealed file whose size or mtime changed since is read as live anyway. ``windows``: the
    reader's pool for the buffers of ``pread`` windows, kept across its segments.
    ``following``: the ``.log`` the reader walks next; when this one is cold, the device
    starts on that one's first bytes while this one's last are walked."""

    def __init__(self, path: str | os.PathLike, *,
                 decompress_limit: int = DEFAULT_DECOMPRESS_LIMIT, sealed: bool = False,
                 listed: tuple[int, int | None] | None = None,
                 windows: BufferPool | None = None,
                 following: str | os.PathLike | None = None):
        self.path = str(path)
        self.base_offset = base_offset_from_name(path)
        self.decompress_limit = decompress_limit
        where = as_path(path)
        after = None if following is None else as_path(following)
        opened = where.location.open_segment(
            where, sealed=sealed, listed=listed, small=SMALL_FILE, windows=windows,
            following=after if after is not None and after.location is where.location
            else None)
        self.source = opened.source
        self.size = opened.size  # the size seen at open: a growing segment is read to here
        self.mtime_ms = opened.mtime_ns // 1_000_000
        self.is_mapped = opened.is_mapped
        self._release = opened.release
        self.growing = opened.growing  # see walk(): a broker appending to it

    @classmethod
    def open(cls, files: SegmentFiles, *, decompress_limit: int = DEFAULT_DECOMPRESS_LIMIT,
             windows: BufferPool | None = None, following: SegmentFiles | None = None
             ) -> Segment:
        """The segment of a listing, read the way its listing says it may be; ``following``:
        the segment the reader walks next, from its start."""
        return cls(files.log, decompress_limit=decompress_limit, sealed=files.sealed,
                   listed=(files.log_size, files.log_mtime_ns), windows=windows,
                   following=None if following is None else following.log)

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        source = getattr(self, "source", None)
        if source is not None and hasattr(source, "close"):
            source.close()
        if self._release is not None:
            self._release()
            self._release = None

    def release(self, upto: int) -> None:
        """The reader is done with every byte before ``upto``: hand mapped pages back."""
        self.source.release(upto)

    # -- shallow ---------------------------------------------------------------------------

    def walk(self, start: int = 0, end: int | None = None, *, until: int | None = None,
             verify_crc: bool = True, rows: int = TABLE_ROWS) -> Iterator[Walked]:
        """Batch headers as table chunks, and the findings met on the way, from byte
        ``start``; ``until`` stops before the first batch starting at or after it."""
        return walk.walk(self.source, start, end, until=until, path=self.path,
                         verify_crc=verify_crc, limit=self.decompress_limit, rows=rows,
                         growing=self.growing)

    def table(self, start: int = 0, end: int | None = None, *, until: int | None = None,
              verify_crc: bool = True) -> tuple[BatchTable, tuple[Finding, ...]]:
        """The whole walk as one table (small files, or callers that need every row)."""
        return walk.table(self.source, start, end, until=until, path=self.path,
                          verify_crc=verify_crc, limit=self.decompress_limit,
                          growing=self.growing)

    def salvage(self) -> Iterator[Walked]:
        """The walk, resynchronising past corrupt batches (``verify --salvage``)."""
        return salvage.salvage(self.source, path=self.path, limit=self.decompress_limit)

    # -- deep ------------------------------------------------------------------------------

    def records(self, table: BatchTable) -> Iterator[Chunk]:
        """The records of ``table``'s batches, as columns (bulk consumers)."""
        return chunks.decode(self.source, table, path=self.path, limit=self.decompress_limit)

    def batch_records(self, table: BatchTable) -> Iterator[BatchRecords]:
        """Each batch of ``table`` with its records (printing one batch at a time)."""
        return chunks.batch_records(self.records(table))
