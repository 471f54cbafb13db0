"""Small read-only file helpers shared by the storage rooms.

Everything here opens files with ``'rb'`` only: segtools runs on production brokers and must
never write, lock, rename or truncate anything in a log dir (docs/architecture.md §4).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from typing import BinaryIO

from segtools.errors import NotAKafkaFileError, SegtoolsError, VanishedError
from segtools.findings import Finding, finding
from segtools.storage import gentle
from segtools.storage.scope import note_read

#: Read-only, and never blocking: a FIFO or a terminal under a Kafka file name must not hang the
#: reader (``stat`` refuses them first; ``O_NONBLOCK`` covers a name swapped in between).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: How a partition directory is opened to check a file in it (:func:`_open_in_tree`): as a
#: path only where the system can (``O_PATH`` asks for no read permission on it, which
#: reading a file in it never needed); 0 where the system has no ``O_DIRECTORY``/``O_NOFOLLOW``
#: or no ``fstatat``.
_BENEATH = (getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
            | _NOFOLLOW
            if _NOFOLLOW and getattr(os, "O_DIRECTORY", 0) and os.stat in os.supports_dir_fd
            else 0)
#: What a refused link is told (the finding's message, the error's).
SYMLINK_REFUSED = ("a symbolic link: not followed (a link could point outside the log dir; "
                   "name its target to read it)")
#: What a file in a linked partition directory is told.
PARENT_SYMLINK_REFUSED = ("its partition directory is a symbolic link: not followed (a link "
                          "could point outside the log dir; name its target to read it)")

#: The two text files Kafka keeps in each partition directory (``PartitionMetadataFile``,
#: ``LeaderEpochCheckpointFile``); every other file it writes there starts with an offset.
PARTITION_METADATA_FILE = "partition.metadata"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"


class SymlinkRefusedError(NotAKafkaFileError):
    """A symbolic link where a Kafka file was expected: refused, never followed."""


def open_regular(path: str, *, follow_symlinks: bool = False) -> tuple[int, os.stat_result]:
    """Open a regular file read-only, refusing anything else *before* opening it.

    Opening a FIFO blocks until a writer appears, and opening some devices has side effects,
    so the type is checked with ``lstat`` first; the open itself is non-blocking and the
    descriptor is checked again (the name could have been replaced in between). A symbolic
    link is not followed (``O_NOFOLLOW``, checked again on the descriptor): whoever can write
    a log dir (the broker's account) could otherwise point a checkpoint at a root-only file
    and have segtools, run as root, copy it into a shared report. Only a file the user named
    themselves (``--config``) is opened through a link, with ``follow_symlinks``."""
    refuse_unless_regular(path, follow_symlinks=follow_symlinks)
    try:
        fd = os.open(path, _OPEN_FLAGS) if follow_symlinks else _open_in_tree(path)
    except OSError as e:
        raise _open_failed(e, path, follow_symlinks=follow_symlinks) from None
    return fd, _opened(fd, path)


def refuse_unless_regular(path: str, *, follow_symlinks: bool = False) -> None:
    """The check before any open (``lstat``): a link, a directory or anything that is no
    regular file is refused without being opened (a device's open can have side effects)."""
    try:
        st = os.stat(path) if follow_symlinks else os.lstat(path)
    except FileNotFoundError as e:
        raise VanishedError(e.strerror or str(e), path=path) from None
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None
    if stat.S_ISLNK(st.st_mode):
        raise SymlinkRefusedError(SYMLINK_REFUSED, path=path)
    if stat.S_ISDIR(st.st_mode):
        raise NotAKafkaFileError("is a directory, not a segment file", path=path)
    if not stat.S_ISREG(st.st_mode):
        raise NotAKafkaFileError("not a regular file", path=path)


def _open_failed(e: OSError, path: str, *, follow_symlinks: bool = False) -> SegtoolsError:
    """The error an open's ``OSError`` is told as (a link met by ``O_NOFOLLOW``: refused)."""
    if isinstance(e, FileNotFoundError):
        return VanishedError(e.strerror or str(e), path=path)
    if e.errno == errno.ELOOP and not follow_symlinks:  # a link swapped in since the check
        return SymlinkRefusedError(SYMLINK_REFUSED, path=path)
    return SegtoolsError(e.strerror or str(e), path=path)


def _opened(fd: int, path: str) -> os.stat_result:
    """The descriptor's ``fstat``, refusing (and closing) anything but a regular file: the
    name could have been replaced since it was checked, and ``O_NONBLOCK`` only made the
    open itself safe. Noted for the run's custody and its page-cache keeper."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotAKafkaFileError("not a regular file", path=path)
    note_read(path, st.st_size, st.st_mtime_ns)
    if (keeper := gentle.current().keeper) is not None:
        keeper.note(path, fd, st)  # before the first byte is read: the cache as found
    return st


def read_listed_upto(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of a small file from its start (a checkpoint, a partition's
    ``partition.metadata``), in as few system calls as the rules of :func:`open_regular`
    allow, for a file whose listing said it is a regular file: a tree of 10,000 partitions
    reads 20,000 of them before anything else starts.

    Each call :func:`open_regular` makes is either made here or made already by another:

    * no ``lstat`` before the open: the listing's entry (``scandir``'s type, or its
      ``stat``) is that check, and anything swapped in since is refused by the ``fstat``
      of the descriptor, opened ``O_NONBLOCK | O_NOCTTY`` so that a FIFO or a terminal
      cannot hang it;
    * no ``fstatat`` of the file in its partition directory and no second ``fstat`` to
      compare with: the file is opened *in* the directory (``openat``, ``dir_fd``), which was
      opened ``O_NOFOLLOW | O_DIRECTORY``, so the kernel's own lookup is the proof that a
      partition directory swapped for a link is not read through;
    * one ``read`` of the size the ``fstat`` gave plus one byte: fewer bytes than that is
      the end of the file (no second ``read`` to meet it), a full read means it grew and
      the read goes on up to ``limit`` (never past it: the caller's cap).

    So: ``openat`` of the directory, ``openat`` of the file, ``close`` of the directory,
    ``fstat``, ``read``, ``close`` (4 for a file outside a partition directory)."""
    fd = _open_listed(path)
    size = _opened(fd, path).st_size  # closes what it refuses
    try:
        want = min(size + 1, limit)
        if (rate := gentle.current().rate) is not None:
            rate.take(want)
        chunks = []
        got = 0
        while got < limit:
            chunk = os.read(fd, want - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got == size < want:  # all the fstat saw, and no more: the end of the file
                break
            if got == want:  # the file grew since the fstat: read on to the limit
                want = limit
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_listed(path: str) -> int:
    """The open of :func:`read_listed_upto`: a partition's file inside its directory opened
    without following a link, any other by its path with ``O_NOFOLLOW``."""
    head, name = os.path.split(path)
    try:
        if not in_partition_dir(name) or not _BENEATH:
            return os.open(path, _OPEN_FLAGS | _NOFOLLOW)
        parent = _open_partition_dir(head, path)
        try:
            return os.open(name, _OPEN_FLAGS | _NOFOLLOW, dir_fd=parent)
        finally:
            os.close(parent)
    except OSError as e:
        raise _open_failed(e, path) from None


def _open_partition_dir(head: str, path: str) -> int:
    """The directory of the partition file ``path``, opened as a path only (``O_PATH``) and
    never through a link: one that is a link is refused for the file."""
    try:
        return os.open(head or ".", _BENEATH)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(head or "."):
            raise SymlinkRefusedError(PARENT_SYMLINK_REFUSED, path=path) from None
        raise


def in_partition_dir(name: str) -> bool:
    """Whether Kafka keeps a file of this name only inside a partition directory: a name
    that starts with an offset (segments, indexes, snapshots, KRaft checkpoints, a remote
    segment's files) or one of the partition's two text files. A log dir's own files
    (``meta.properties``, the offset checkpoints) never do."""
    return name[:1].isdigit() or name in (PARTITION_METADATA_FILE, LEADER_EPOCH_CHECKPOINT_FILE)


def _open_in_tree(path: str) -> int:
    """``open(path, O_NOFOLLOW)``; for a partition's file, also the proof that it was opened
    in its partition directory and that this directory is no link: the directory is opened
    with ``O_NOFOLLOW``, and the file found in it (``fstatat``) must be the file opened.
    Kafka never links a partition directory, but whoever writes the log dir can replace one
    with a link to a directory outside it, at any moment (the listing's ``lstat`` cannot see
    a swap made after it). The file itself is opened by its whole path, as every other open,
    so that what audits a run's opens sees each one. The log dir itself, and the
    directories above it, are the user's to link."""
    head, name = os.path.split(path)
    if not in_partition_dir(name) or not _BENEATH:
        return os.open(path, _OPEN_FLAGS | _NOFOLLOW)
    parent = _open_partition_dir(head, path)
    try:
        fd = os.open(path, _OPEN_FLAGS | _NOFOLLOW)
        try:
            beneath = os.stat(name, dir_fd=parent, follow_symlinks=False)
            opened = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        if (beneath.st_dev, beneath.st_ino) != (opened.st_dev, opened.st_ino):
            os.close(fd)
            raise SymlinkRefusedError(PARENT_SYMLINK_REFUSED, path=path)
        return fd
    finally:
        os.close(parent)


def open_to_advise(path: str) -> int | None:
    """A descriptor to ask the kernel to read a file ahead on (``posix_fadvise``), opened
    with :func:`open_regular`'s checks (no link followed, in a partition directory that is no
    link, nothing but a regular file, read-only and non-blocking) but without its notes: the
    file's bytes are not read through it, so the run's custody and its page-cache keeper hear
    of the file when it is opened to be read. None when it cannot be opened so."""
    try:
        refuse_unless_regular(path)
        fd = _open_in_tree(path)
    except (SegtoolsError, OSError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def open_regular_file(path: str | os.PathLike[str], *, follow_symlinks: bool = False
                      ) -> BinaryIO:
    """:func:`open_regular` as a binary file object (reads never block: the file is regular)."""
    fd, _ = open_regular(os.fspath(path), follow_symlinks=follow_symlinks)
    return os.fdopen(fd, "rb")

SEGMENT_NAME_DIGITS = 20


#: ``RemoteLogSegmentFileset``'s file names in Kafka's ``LocalTieredStorage``: the start offset,
#: '-', the remote segment id (a 22-character ``Uuid``), then the file type.
REMOTE_SEGMENT_STEM = re.compile(r"(\d+)-[A-Za-z0-9_-]{22}")


def offset_from_file_name(name: str) -> int:
    """The base offset encoded in a segment file name.

    Mirrors ``LogFileUtils.offsetFromFileName``: everything before the *first* '.', parsed as a
    long, so ``00000000000000000042.log.deleted`` is base offset 42. A remote segment's file
    in ``LocalTieredStorage`` names its start offset before its segment id.
    """
    prefix = name.split(".", 1)[0]
    remote = REMOTE_SEGMENT_STEM.fullmatch(prefix) if prefix.isascii() else None
    if remote is not None:
        prefix = remote.group(1)
    if not prefix.isascii() or not prefix.isdigit():
        raise NotAKafkaFileError(f"{name!r} does not start with a decimal base offset", path=name)
    value = int(prefix)
    if value >= 2**63:
        raise NotAKafkaFileError(f"base offset in {name!r} does not fit in an int64", path=name)
    return value


def entry_is_dir(entry: os.DirEntry) -> bool:
    """``entry.is_dir()`` without following a link (a linked directory leads outside the
    tree: the listing reports it instead), False where the file system cannot say."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def symlink_found(path: str) -> Finding:
    """``symlink_not_followed``: a link inside a log dir, listed but never followed."""
    return finding("symlink_not_followed", path, SYMLINK_REFUSED)


def cannot_read(path: str, e: SegtoolsError | OSError) -> Finding:
    """``file_unreadable``: the one-line reason a file could not be read (a link:
    ``symlink_not_followed``). Every caller reads a file its listing saw (a path named on
    the command line is checked before), so a name that is gone by the open was removed
    in between: ``file_vanished``, as a live broker does to a producer snapshot or a whole
    partition, not an error of the tree."""
    if isinstance(e, SymlinkRefusedError):  # the file, or its partition directory
        return finding("symlink_not_followed", path, e.message)
    if isinstance(e, (VanishedError, FileNotFoundError)):
        return finding("file_vanished", path,
                       "listed but gone before it was read (a live broker removed it)")
    why = e.message if isinstance(e, SegtoolsError) else e.strerror or e
    return finding("file_unreadable", path, f"cannot read: {why}")


def next_data(fd: int, pos: int) -> int | None:
    """``lseek(SEEK_DATA)``: the next offset at or after ``pos`` not in a hole, None when only
    a hole remains; ``pos`` itself where the file system cannot say."""
    try:
        return os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as e:
        return None if e.errno == errno.ENXIO else pos
    except AttributeError:  # pragma: no cover - a platform without SEEK_DATA
        return pos


def data_end(fd: int, pos: int) -> int:
    """``lseek(SEEK_HOLE)``: where the data at ``pos`` ends (the next hole, or the end of the
    file). Reading a hole fills the page cache with zero pages, so a scan reads up to here."""
    try:
        return os.lseek(fd, pos, os.SEEK_HOLE)
    except (OSError, AttributeError):  # pragma: no cover - a file system that cannot say
        return sys.maxsize


def pread_data(fd: int, length: int, position: int) -> bytes:
    """:func:`pread_exact_or_short`, with the holes in the range given as the zeros they hold
    but not read: reading one fills the page cache with zero pages (a preallocated index's
    10 MiB tail, which gentle mode never hands back on a broker's active segment)."""
    end = min(position + length, os.fstat(fd).st_size)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead into the holes either
    out = bytearray(max(0, end - position))
    pos = position
    while pos < end and (data := next_data(fd, pos)) is not None and data < end:
        stop = min(end, data_end(fd, data))
        chunk = pread_exact_or_short(fd, stop - data, data)
        out[data - position:data - position + len(chunk)] = chunk
        if len(chunk) < stop - data:  # the file shrank: what it held is all there is
            return bytes(out[:data - position + len(chunk)])
        pos = stop
    return bytes(out)


def pread_exact_or_short(fd: int, length: int, position: int) -> bytes:
    """Read up to ``length`` bytes at ``position``; a short result means the file shrank.

    Used instead of the mmap wherever a read may land past the end Kafka is about to trim to
    (``AbstractIndex.trimToValidSize`` at a roll, ``TransactionIndex.truncateTo``): touching an
    mmapped page beyond the new end of file raises SIGBUS and kills the process, while ``pread``
    just returns fewer bytes.
    """
    if (rate := gentle.current().rate) is not None:
        rate.take(length)
    chunks = []
    while length > 0:
        chunk = os.pread(fd, length, position)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        position += len(chunk)
    return b"".join(chunks)
