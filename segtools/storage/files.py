"""Small read-only file helpers shared by the storage rooms.

Everything here opens files with ``'rb'`` only: segtools runs on production brokers and must
never write, lock, rename or truncate anything in a log dir (docs/architecture.md §4).
"""

from __future__ import annotations

import mmap
import os

from segtools.errors import NotAKafkaFileError
from segtools.findings import Finding, Severity
from segtools.formats.snapshot import ProducerSnapshot, parse_producer_snapshot

# A checkpoint of 100k partitions is ~4 MiB; 64 MiB is far above any real one and stops a bogus
# multi-GiB file from ballooning memory.
TEXT_FILE_CAP = 64 * 1024 * 1024

SEGMENT_NAME_DIGITS = 20


def offset_from_file_name(name: str) -> int:
    """The base offset encoded in a segment file name.

    Mirrors ``LogFileUtils.offsetFromFileName``: everything before the *first* '.', parsed as a
    long, so ``00000000000000000042.log.deleted`` is base offset 42.
    """
    prefix = name.split(".", 1)[0]
    if not prefix.isascii() or not prefix.isdigit():
        raise NotAKafkaFileError(f"{name!r} does not start with a decimal base offset", path=name)
    value = int(prefix)
    if value >= 2**63:
        raise NotAKafkaFileError(f"base offset in {name!r} does not fit in an int64", path=name)
    return value


def read_text_capped(path: str | os.PathLike[str], cap: int = TEXT_FILE_CAP
                     ) -> tuple[str | None, list[Finding]]:
    """Read a small text file (checkpoint, properties) as UTF-8, refusing files above ``cap``.

    Returns ``(None, findings)`` when the file cannot be read; never raises for I/O problems,
    because one unreadable checkpoint must not stop a walk over a whole log dir.
    """
    spath = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError as e:
        return None, [Finding("file_unreadable", Severity.ERROR, spath,
                              f"cannot read: {e.strerror or e}")]
    if len(data) > cap:
        return None, [Finding("file_too_large", Severity.ERROR, spath,
                              f"larger than the {cap}-byte cap for text files; not parsed")]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as e:
        return None, [Finding("file_not_utf8", Severity.ERROR, spath,
                              f"not UTF-8 text: {e.reason}", position=e.start)]


def pread_exact_or_short(fd: int, length: int, position: int) -> bytes:
    """Read up to ``length`` bytes at ``position``; a short result means the file shrank.

    Used instead of the mmap wherever a read may land past the end Kafka is about to trim to
    (``AbstractIndex.trimToValidSize`` at a roll, ``TransactionIndex.truncateTo``): touching an
    mmapped page beyond the new end of file raises SIGBUS and kills the process, while ``pread``
    just returns fewer bytes.
    """
    chunks = []
    while length > 0:
        chunk = os.pread(fd, length, position)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        position += len(chunk)
    return b"".join(chunks)


def read_producer_snapshot(path: str | os.PathLike[str]
                           ) -> tuple[ProducerSnapshot | None, list[Finding]]:
    """Read a ``.snapshot`` through a read-only mmap (the CRC needs every byte, the heap none)."""
    spath = str(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return parse_producer_snapshot(b"", spath)
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    return parse_producer_snapshot(view, spath)
                finally:
                    view.release()
    except OSError as e:
        return None, [Finding("file_unreadable", Severity.ERROR, spath,
                              f"cannot read: {e.strerror or e}")]
