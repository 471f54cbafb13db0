"""Support bundles read in place: ``.tar``, ``.tar.gz``/``.tgz`` and ``.zip`` archives.

A broker's data dir usually reaches an investigator as an archive made with ``tar`` in a pod
or on a host that is gone. Extracting it first costs its full size somewhere with room, and
writes into the user's directories; so members are read where they lie:

* a ``.tar`` member is a byte range of the archive file (its header says where);
* a ``.zip`` member stored without compression is a byte range too (after its local header);
  a deflated one is inflated once, when first read, into bounded temporary space;
* a ``.tar.gz`` has neither an index nor random access: the stream is inflated once into one
  temporary ``.tar`` (bounded, said on stderr) and read in place from there.

Nothing is extracted under a name the archive chose: a member that is a link, a device, or
whose name is absolute or climbs out with ``..`` is refused (listed as a finding, never read),
and a member that would inflate past the limit (a zip bomb) is not inflated.

An archive is hostile input, so every resource it can ask for is bounded: the temporary space
(:data:`TMP_LIMIT`, and never past what the file system has free, less a margin), the size of
a tar's extended headers (:data:`HEADER_CAP`: tarfile reads a pax header whole into memory)
and the number of members (:data:`MAX_MEMBERS`). Temporary files have no name: they are
created unlinked (``O_TMPFILE``, or unlinked at once) in a private 0700 directory, so the
kernel frees them when the process ends however it ends (SIGTERM, SIGHUP, SIGKILL); the
empty directory is removed on close, and an empty one left by a killed run is removed by
the next run (same owner, older than :data:`STALE_AFTER_S`).
"""

from __future__ import annotations

import os
import shutil
import stat as stat_mod
import struct
import sys
import tarfile
import tempfile
import threading
import time
import weakref
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from segtools.errors import SegtoolsError
from segtools.findings import finding
from segtools.storage import zip_directory
from segtools.storage.files import pread_exact_or_short
from segtools.storage.local import LocalPath
from segtools.storage.located import Entry, ListedLocation
from segtools.storage.scope import note_read
from segtools.storage.source import WindowSource
from segtools.text import shown_path, terminal_safe

#: Default bound on temporary space for inflated members (``tmp_limit`` storage option).
TMP_LIMIT = 16 * 1024**3
#: Free space left to the file system whatever ``tmp_limit`` says: inflating a bomb into
#: ``/tmp`` must not fill the disk a broker or the host's logs write to.
FREE_MARGIN = 1024**3
#: Bound on a tar's extended header (pax, GNU long name/link): tarfile reads one whole into
#: memory; real ones hold a path of at most a few KiB (``PATH_MAX`` is 4096).
HEADER_CAP = 1024 * 1024
#: Bound on the members of one archive (``max_members`` storage option): a bundle of 10,000
#: partitions holds about 60,000; each member costs about 1 KiB of listing in memory, so the
#: default keeps a hostile one (500,000 empty members in 3 MB) under 256 MiB.
MAX_MEMBERS = 100_000
#: Seconds after which an empty temporary directory of a killed run is removed.
STALE_AFTER_S = 3600
_TMP_PREFIX = "segtools-archive-"
#: zlib's window bits for a gzip header and trailer around the deflate stream.
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_COPY_CHUNK = 1 << 20
_ZIP_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature ... name length, extra length
_ZIP_LOCAL_MAGIC = b"PK\x03\x04"


class ArchiveLimitError(SegtoolsError):
    """Inflating a member (or a whole ``.tar.gz``) would pass the temporary-space limit."""


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose extended headers are refused past :data:`HEADER_CAP` before
    tarfile reads them (it would read a 2 GiB pax header into one bytes object).
    ``_proc_member`` is the one place tarfile dispatches a header by its type (its
    documented way to extend ``TarInfo``: a ``tarinfo`` class given to ``tarfile.open``)."""

    def _proc_member(self, tarfile_):
        if self.type in _EXTENDED_HEADERS and self.size > HEADER_CAP:
            raise tarfile.SubsequentHeaderError(
                f"an extended header of {self.size} bytes (more than {HEADER_CAP}): not read")
        return super()._proc_member(tarfile_)


_EXTENDED_HEADERS = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                     tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)


def _mtime_ns(mtime: float) -> int | None:
    """A member's modification time in ns, None when the archive's is not a time (a pax
    ``mtime=1e400``, a NaN)."""
    try:
        ns = int(mtime * 1e9)
    except (OverflowError, ValueError):
        return None
    return ns if -(2**63) <= ns < 2**63 else None


def _zip_mtime(zi: zipfile.ZipInfo) -> float:
    """A zip member's DOS date as a timestamp; 0 for an impossible one (month 0, day 32)."""
    try:
        return datetime(*zi.date_time).timestamp()
    except (ValueError, OverflowError, OSError):
        return 0.0


def _sweep_stale(parent: str | None) -> None:
    """Remove the empty temporary directories killed runs of this user left in ``parent``
    (their files had no name: the kernel freed them). A directory still in use is younger
    than :data:`STALE_AFTER_S` or not empty, and ``rmdir`` never removes a non-empty one."""
    where = parent or tempfile.gettempdir()
    now = time.time()
    try:
        entries = list(os.scandir(where))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(_TMP_PREFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat_mod.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \
                    and now - st.st_mtime > STALE_AFTER_S:
                os.rmdir(entry.path)
        except OSError:
            continue


@dataclass(slots=True)
class _Member:
    """Where a member's bytes are: ``offset`` in the archive (or in the inflated copy)."""

    size: int
    offset: int | None  # None: a compressed zip member, not inflated yet
    info: zipfile.ZipInfo | None = None
    inflated: Path | None = None  # the temporary file a compressed zip member inflated into


def _safe_key(name: str) -> str | None:
    """The member's key inside the location, or None for a name that is absolute or climbs
    out of the archive (``..``): such a name could only be meant to write elsewhere."""
    if name.startswith("/"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    return "/" + "/".join(parts)


class ArchiveLocation(ListedLocation):
    """One archive file on local disk, listed from its own index when opened."""

    kind = "archive"

    def __init__(self, uri: str, options: Mapping[str, Any]):
        self.archive = LocalPath(os.path.abspath(uri))  # the bundle itself: on the local disk
        super().__init__(str(self.archive), options)
        self.tmp_limit = int(options.get("tmp_limit", TMP_LIMIT))
        self.max_members = int(options.get("max_members", MAX_MEMBERS))
        self.tmp_parent = options.get("tmp_dir")
        self.members: dict[str, _Member] = {}
        self._listed_members = 0
        self._tmp: Path | None = None
        self._stream: Path | None = None  # the inflated .tar of a .tar.gz (an open, unnamed file)
        self._tmp_used = 0
        self._tmp_room: int | None = None
        self._lock = threading.Lock()
        self._zip: zipfile.ZipFile | None = None
        self._fds: dict[Path, int] = {}
        # a location no scope owns is closed with its last path: its descriptors then
        weakref.finalize(self, _close_all, self._fds)
        name = self.archive.name.lower()
        try:
            st = self.archive.stat()
            note_read(self.archive, st.st_size, st.st_mtime_ns)  # the bundle is evidence too
            if name.endswith(".zip"):
                self._list_zip()
            elif name.endswith(".tar"):
                with open(self.archive, "rb") as f:
                    self._list_tar(f)
            else:
                fd = self._inflate_stream()
                with os.fdopen(os.dup(fd), "rb") as f:
                    self._list_tar(f)
        except OSError as e:
            self.close()
            raise SegtoolsError(f"cannot read the archive: {e.strerror or e}",
                                path=str(self.archive)) from None
        except BaseException:
            self.close()
            raise

    def display(self, key: str) -> str:
        return str(self.archive) + ("" if key == "/" else key)

    # -- temporary space -------------------------------------------------------------------

    def _tmpdir(self) -> Path:
        """The private directory (0700, ``mkdtemp``) the unnamed temporary files live in."""
        if self._tmp is None:
            _sweep_stale(self.tmp_parent)
            self._tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=self.tmp_parent))
            # the empty directory, when the location is closed, collected or the process ends
            self._tmp_removal = weakref.finalize(self, shutil.rmtree, str(self._tmp), True)
            print(f"segtools: note: {terminal_safe(shown_path(self.archive))}: inflating into "
                  f"temporary space in {terminal_safe(str(self._tmp))} (at most "
                  f"{self.tmp_limit} bytes, in unnamed files the system frees when segtools "
                  "ends)", file=sys.stderr)
        return self._tmp

    def _tmpfile(self) -> tuple[int, Path]:
        """A new temporary file with no name (mode 0600), as a descriptor the location keeps,
        and the key it is kept under."""
        f = tempfile.TemporaryFile(dir=self._tmpdir())  # noqa: SIM115 - its fd is kept
        fd = os.dup(f.fileno())
        f.close()
        key = self._tmp / f"#{fd}"  # a name for the descriptor table, never on disk
        self._fds[key] = fd
        return fd, key

    def _reserve(self, n: int, what: str) -> None:
        if self._tmp_used + n > self.tmp_limit:
            raise ArchiveLimitError(
                f"inflating {what} would pass the limit of {self.tmp_limit} bytes of temporary "
                "space (a zip bomb, or set --storage-option tmp_limit=BYTES)",
                path=str(self.archive))
        free = shutil.disk_usage(self._tmpdir()).free
        if self._tmp_room is None:  # what the file system could give when inflating began
            self._tmp_room = free - FREE_MARGIN
        if self._tmp_used + n > self._tmp_room or n > free - FREE_MARGIN:
            raise ArchiveLimitError(
                f"inflating {what} would leave less than {FREE_MARGIN} bytes free in "
                f"{self._tmp} ({free} bytes free now): choose another place with "
                "--storage-option "
                "tmp_dir=DIR", path=str(self.archive))
        self._tmp_used += n

    def _fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:  # the archive (checked regular when it was named) or an inflated copy
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            self._fds[path] = fd
        return fd

    # -- listing ---------------------------------------------------------------------------

    def _member(self, name: str, kind: str | None, size: int, mtime: float,
                member: _Member | None) -> None:
        """Record one member; refuse links, devices and escaping names."""
        key = _safe_key(name)
        shown = f"{self.archive}!{name}"
        if key is None:
            self.findings.append(finding("archive_member_refused", shown,
                                         "its name is absolute or climbs out of the archive "
                                         "with '..': not read"))
            return
        if kind is not None:
            self.findings.append(finding("archive_member_refused", self.display(key),
                                         f"a {kind} inside the archive: not followed or read"))
            return
        if key == "/":
            return
        mtime_ns = _mtime_ns(mtime)
        if member is None:
            self._add(Entry(key, True, 0, mtime_ns))
        else:
            self.members[key] = member
            self._add(Entry(key, False, size, mtime_ns))

    def _damaged(self, why: str) -> None:
        self.findings.append(finding("archive_damaged", str(self.archive), why))

    def _counted(self) -> bool:
        """One more member listed; False (and a finding) past :attr:`max_members`."""
        self._listed_members += 1
        if self._listed_members <= self.max_members:
            return True
        self._damaged(f"more than {self.max_members} members: the rest are not listed (set "
                      "--storage-option max_members=N to list more)")
        return False

    def _list_tar(self, f) -> None:
        size = os.fstat(f.fileno()).st_size
        f.seek(0)  # an inflated stream's descriptor stands where its writing ended
        try:
            tf = tarfile.open(fileobj=f, mode="r:",  # noqa: SIM115 - f is the one to close
                              tarinfo=_BoundedTarInfo)
        except (tarfile.TarError, EOFError, OSError) as e:
            self._damaged(f"not a readable tar archive: {e}")
            return
        while True:
            try:
                ti = tf.next()
            except (tarfile.TarError, EOFError, OSError) as e:
                self._damaged(f"the archive breaks off after {len(self.members)} "
                              f"member(s): {e}")
                break
            if ti is None:
                break
            tf.members.clear()  # tarfile keeps every header it read: one at a time here
            if not self._counted():
                break
            kind = None if ti.isfile() or ti.isdir() else (
                "symbolic link" if ti.issym() else "hard link" if ti.islnk()
                else "device or FIFO")
            if ti.isfile() and ti.offset_data + ti.size > size:
                self._damaged(f"{ti.name}: the archive ends inside this member "
                              f"({size - ti.offset_data} of {ti.size} bytes); the members "
                              "before it are read")
                break
            self._member(ti.name, kind, ti.size, ti.mtime,
                         _Member(ti.size, ti.offset_data) if ti.isfile() else None)
        tf.members = []

    def _inflate_stream(self) -> int:
        """A ``.tar.gz`` inflated once, as a stream, into one unnamed temporary ``.tar``. Every
        byte the stream yields before damage is kept (as ``gzip -dc`` does), so the members
        before a truncation are read; ``gzip.GzipFile.read`` would drop the whole last read."""
        fd, self._stream = self._tmpfile()
        inflater = zlib.decompressobj(wbits=_GZIP_WBITS)
        try:
            with open(self.archive, "rb") as src:
                while raw := src.read(_COPY_CHUNK):
                    full = True  # output capped at _COPY_CHUNK: more may be held inside
                    while raw or (full and not inflater.eof):
                        chunk = inflater.decompress(raw, _COPY_CHUNK)
                        full = len(chunk) == _COPY_CHUNK
                        self._reserve(len(chunk), "the compressed archive")
                        _write_all(fd, chunk)
                        raw = inflater.unconsumed_tail
                        if inflater.eof and inflater.unused_data.strip(b"\0"):
                            # a gzip of several members (cat a.gz b.gz)
                            raw = inflater.unused_data
                            inflater = zlib.decompressobj(wbits=_GZIP_WBITS)
            if not inflater.eof:
                raise EOFError("the compressed file ends before the end-of-stream marker")
        except (EOFError, zlib.error) as e:
            self._damaged(f"the compressed stream breaks off after {self._tmp_used} bytes of "
                          f"inflated data: {e}; the members before it are read")
        return fd

    def _list_zip(self) -> None:
        try:
            with open(self.archive, "rb") as f:  # zipfile builds every entry: count first
                why = zip_directory.refusal(f, os.fstat(f.fileno()).st_size, self.max_members)
            if why is not None:
                self._damaged(why)
                return
            self._zip = zipfile.ZipFile(self.archive)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
            self._damaged(f"not a readable zip archive: {e}")
            return
        total = self.archive.stat().st_size
        for zi in infos:
            if not self._counted():
                break
            mode = zi.external_attr >> 16
            kind = None
            if stat_mod.S_ISLNK(mode):
                kind = "symbolic link"
            elif stat_mod.S_IFMT(mode) and not (stat_mod.S_ISREG(mode)
                                                 or stat_mod.S_ISDIR(mode)):
                kind = "device or FIFO"  # zipfile.writestr leaves the type bits 0: a file
            mtime = _zip_mtime(zi)
            if zi.is_dir():
                self._member(zi.filename, kind, 0, mtime, None)
                continue
            if zi.header_offset + zi.compress_size > total:
                self._damaged(f"{zi.filename}: the archive ends inside this member")
                continue
            if zi.compress_type != zipfile.ZIP_STORED and zi.file_size > self.tmp_limit:
                self.findings.append(finding(
                    "archive_member_too_large", f"{self.archive}!{zi.filename}",
                    f"declares {zi.file_size} bytes inflated: more than the limit of "
                    f"{self.tmp_limit} bytes of temporary space; not read"))
                continue
            self._member(zi.filename, kind, zi.file_size, mtime,
                         _Member(zi.file_size, None, zi))

    def _zip_offset(self, m: _Member) -> int:
        """A zip member's data: after its local header (whose lengths may differ from the
        central directory's), stored in place or inflated once into temporary space."""
        zi = m.info
        assert zi is not None
        if zi.compress_type == zipfile.ZIP_STORED:
            raw = os.pread(self._fd(self.archive), _ZIP_LOCAL_HEADER.size, zi.header_offset)
            if len(raw) < _ZIP_LOCAL_HEADER.size or raw[:4] != _ZIP_LOCAL_MAGIC:
                raise SegtoolsError("the member's local header is damaged",
                                    path=self.display(_safe_key(zi.filename) or "/"))
            fields = _ZIP_LOCAL_HEADER.unpack(raw)
            return zi.header_offset + _ZIP_LOCAL_HEADER.size + fields[-2] + fields[-1]
        self._reserve(zi.file_size, zi.filename)
        fd, key = self._tmpfile()
        assert self._zip is not None
        try:
            with self._zip.open(zi) as src:
                written = 0
                while chunk := src.read(_COPY_CHUNK):
                    written += len(chunk)
                    if written > zi.file_size:  # the header lied: inflate only what it said
                        raise zlib.error("inflates past its declared size")
                    _write_all(fd, chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
            raise SegtoolsError(f"the member does not inflate: {e}",
                                path=self.display(_safe_key(zi.filename) or "/")) from None
        m.inflated = key
        return 0

    def _place(self, key: str) -> tuple[int, int, int]:
        """``(fd, offset, size)`` of a member's bytes."""
        m = self.members.get(key)
        if m is None:
            raise SegtoolsError("no such member", path=self.display(key))
        with self._lock:
            if m.offset is None:
                m.offset = self._zip_offset(m)
            if m.inflated is not None:
                return self._fd(m.inflated), m.offset, m.size
            backing = self._stream if self._stream is not None else self.archive
            return self._fd(backing), m.offset, m.size

    # -- reading ---------------------------------------------------------------------------

    def read_range(self, key: str, lo: int, hi: int) -> bytes:
        fd, offset, size = self._place(key)
        hi = min(hi, size)
        if lo >= hi:
            return b""
        return pread_exact_or_short(fd, hi - lo, offset + lo)

    def source(self, key: str, entry: Entry):
        """``pread`` windows over the member's range (the descriptor stays the location's)."""
        fd, offset, size = self._place(key)
        return WindowSource(fd, size, offset)

    def close(self) -> None:
        _close_all(self._fds)
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        self._stream = None
        if self._tmp is not None:
            self._tmp_removal()
            self._tmp = None


def _close_all(fds: dict[Path, int]) -> None:
    for fd in fds.values():
        os.close(fd)
    fds.clear()


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until all of ``data`` is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
