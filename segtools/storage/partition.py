"""One partition directory: its name, its segments and the files around them.

Only names and ``stat`` sizes are read here; ``.log`` contents are the segment room's job. The
small per-partition metadata files (``partition.metadata``, ``leader-epoch-checkpoint``) are
parsed, because the topic id is the only reliable topic identity for ``-delete`` / ``-stray``
directories whose names Kafka truncated.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from segtools.findings import Finding, finding, leaves_data_unread
from segtools.formats.checkpoints import (
    EpochEntry,
    PartitionMetadata,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
)
from segtools.storage.files import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    SEGMENT_NAME_DIGITS,
    SYMLINK_REFUSED,
    SymlinkRefusedError,
    entry_is_dir,
    symlink_found,
)
from segtools.storage.location import Located, as_path
from segtools.storage.small_files import read_text_capped

REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"  # RemoteIndexCache.DIR_NAME
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
QUORUM_STATE_FILE = "quorum-state"
BOOTSTRAP_CHECKPOINT_FILE = "bootstrap.checkpoint"

_INT32_MAX = 2**31 - 1
# LocalLog.DeleteDirPattern and friends: ^(\S+)-(\S+)\.(\S+)-delete
_SUFFIXED = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)")
_KRAFT_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?")


class PartitionState(StrEnum):
    LIVE = "live"
    DELETE = "delete"  # pending async deletion (LocalLog.DeleteDirSuffix)
    FUTURE = "future"  # JBOD move in progress (AlterReplicaLogDirs)
    STRAY = "stray"  # KRaft replica this broker no longer owns (3.6+)


def is_record_batch_file(name: str) -> bool:
    """Files in the record-batch format: segments (also renamed ``.deleted``/``.cleaned``/
    ``.swap`` on their way out), KRaft snapshots (``<offset>-<epoch>.checkpoint``, also
    ``.part`` and ``.deleted``) and a log dir's ``bootstrap.checkpoint``
    (``BootstrapDirectory``), which ``kafka-dump-log.sh`` dumps alike."""
    base = os.path.basename(name)
    return (base.endswith((".log", ".log.deleted", ".log.cleaned", ".log.swap"))
            or base == BOOTSTRAP_CHECKPOINT_FILE or _KRAFT_SNAPSHOT.fullmatch(base) is not None)


class FileKind(StrEnum):
    LOG = "log"
    INDEX = "index"
    TIMEINDEX = "timeindex"
    TXNINDEX = "txnindex"
    SNAPSHOT = "snapshot"
    PARTITION_METADATA = "partition_metadata"
    LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
    QUORUM_STATE = "quorum_state"
    KRAFT_SNAPSHOT = "kraft_snapshot"  # __cluster_metadata-0/<offset>-<epoch>.checkpoint
    TEMP = "temp"  # <file>.tmp: a checkpoint being written (CheckpointFile, PartitionMetadataFile)
    STRAY = "stray"


class Leftover(StrEnum):
    """Suffixes appended to a segment file name (``LogFileUtils``)."""

    DELETED = "deleted"  # scheduled for async deletion; the data is intact until removed
    CLEANED = "cleaned"  # cleaner output still being written: garbage
    SWAP = "swap"  # complete cleaner/split output about to replace older segments


_SEGMENT_FILE_KINDS = frozenset((FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX,
                                 FileKind.TXNINDEX))
#: The partition's two text files, read whole as they are listed.
_TEXT_FILE_KINDS = frozenset((FileKind.PARTITION_METADATA, FileKind.LEADER_EPOCH_CHECKPOINT))
_SEGMENT_SUFFIXES = {k.value: k for k in (FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX,
                                          FileKind.TXNINDEX, FileKind.SNAPSHOT)}


@dataclass(frozen=True, slots=True)
class PartitionName:
    """A parsed partition directory name (``LocalLog.parseTopicPartitionName``)."""

    topic: str  # for DELETE / STRAY possibly a truncated prefix of the real topic
    partition: int
    state: PartitionState
    uuid: str | None  # the hex UUID of -delete / -future / -stray names
    raw: str

    @property
    def is_metadata_log(self) -> bool:
        """``__cluster_metadata-0``: the KRaft metadata log, skipped by ``LogManager``."""
        return self.topic == CLUSTER_METADATA_TOPIC


def _java_partition(text: str) -> int | None:
    """``String.toInt`` on the partition part: optional '+', digits, int32."""
    if not re.fullmatch(r"\+?[0-9]+", text):
        return None
    value = int(text)
    return value if value <= _INT32_MAX else None


def parse_partition_dir_name(name: str) -> PartitionName | None:
    """``LocalLog.parseTopicPartitionName``, returning None where Kafka would throw.

    Split at the LAST '-': topics may contain '-' and '.'. For ``-delete``, ``-future`` and
    ``-stray`` names, cut at the last '.' first (dropping ``.<uuid>-<suffix>``).
    """
    if not name or "-" not in name or name == REMOTE_LOG_INDEX_CACHE:
        return None
    state = PartitionState.LIVE
    uuid = None
    base = name
    for candidate in (PartitionState.DELETE, PartitionState.FUTURE, PartitionState.STRAY):
        if name.endswith(f"-{candidate.value}"):
            if not _SUFFIXED.fullmatch(name):
                return None
            state = candidate
            base = name[: name.rindex(".")]
            uuid = name[name.rindex(".") + 1: -len(candidate.value) - 1]
            break
    cut = base.rfind("-")
    topic, partition_text = base[:cut], base[cut + 1:]
    if cut < 0 or not topic or not partition_text:
        return None
    partition = _java_partition(partition_text)
    if partition is None:
        return None
    return PartitionName(topic, partition, state, uuid, name)


@dataclass(frozen=True, slots=True)
class PartitionFile:
    """One file name inside a partition directory, classified."""

    name: str
    kind: FileKind
    base_offset: int | None = None  # segment / snapshot files: the 20-digit prefix
    leftover: Leftover | None = None


def classify_partition_file(name: str) -> PartitionFile:
    """Classify by name only (``LogFileUtils``; ``LogLoader.removeTempFilesAndCollectSwapFiles``).

    The base offset is everything before the first '.' (``offsetFromFileName``); a leftover
    suffix (``.deleted``, ``.cleaned``, ``.swap``) follows the ordinary suffix.
    """
    if name == PARTITION_METADATA_FILE:
        return PartitionFile(name, FileKind.PARTITION_METADATA)
    if name == LEADER_EPOCH_CHECKPOINT_FILE:
        return PartitionFile(name, FileKind.LEADER_EPOCH_CHECKPOINT)
    if name == QUORUM_STATE_FILE:
        return PartitionFile(name, FileKind.QUORUM_STATE)
    if name.endswith(".tmp"):
        return PartitionFile(name, FileKind.TEMP)
    kraft = _KRAFT_SNAPSHOT.fullmatch(name)
    if kraft:
        leftover = Leftover.DELETED if kraft.group(3) == ".deleted" else None
        return PartitionFile(name, FileKind.KRAFT_SNAPSHOT, int(kraft.group(1)), leftover)
    prefix, _, rest = name.partition(".")
    if not (prefix.isascii() and prefix.isdigit()) or len(prefix) > SEGMENT_NAME_DIGITS:
        return PartitionFile(name, FileKind.STRAY)
    suffix, _, extra = rest.partition(".")
    kind = _SEGMENT_SUFFIXES.get(suffix)
    leftover = None
    if extra:
        try:
            leftover = Leftover(extra)
        except ValueError:
            kind = None
    if kind is None or int(prefix) >= 2**63:
        return PartitionFile(name, FileKind.STRAY)
    return PartitionFile(name, kind, int(prefix), leftover)


#: :func:`classify_partition_file` for a listing: a broker's partitions repeat the same few
#: names (``00000000000000000000.log``, ``leader-epoch-checkpoint``), and the answer is a
#: frozen value, so each name is classified once per run.
_classified = functools.lru_cache(maxsize=1 << 14)(classify_partition_file)


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """The live files of one segment. Only ``.log`` is required; indexes appear lazily.

    ``sealed`` says whether Kafka can still shrink these files (see :func:`settle`); the
    listing's size and mtime let an open notice a file that changed since (then it is read as
    live whatever ``sealed`` says)."""

    base_offset: int
    log: Located
    log_size: int
    index: Located | None = None
    timeindex: Located | None = None
    txnindex: Located | None = None
    leftovers: tuple[Located, ...] = ()  # .deleted / .cleaned / .swap files of this base offset
    log_mtime_ns: int | None = None
    sealed: bool = False


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A producer-state snapshot; ``offset`` is the state's map end offset."""

    offset: int
    path: Located
    size: int


@dataclass(frozen=True, slots=True)
class LeftoverFile:
    path: Located
    kind: FileKind
    base_offset: int
    leftover: Leftover
    size: int


@dataclass(frozen=True, slots=True)
class PartitionDir:
    path: Located
    name: PartitionName | None  # None when the directory name does not parse
    segments: tuple[SegmentFiles, ...]
    snapshots: tuple[SnapshotFile, ...]
    leftovers: tuple[LeftoverFile, ...]
    orphans: tuple[Located, ...]  # index files whose .log is missing
    strays: tuple[Located, ...]
    temp_files: tuple[Located, ...]
    kraft_snapshots: tuple[Located, ...]
    partition_metadata: PartitionMetadata | None
    leader_epochs: tuple[EpochEntry, ...]
    findings: tuple[Finding, ...] = field(default=())
    #: every segment of the directory was listed (False: only those named on the command line)
    complete: bool = True

    @property
    def active_segment(self) -> SegmentFiles | None:
        """The last segment by base offset: the one a broker appends to."""
        return self.segments[-1] if self.segments else None

    @property
    def topic_id(self) -> str | None:
        return self.partition_metadata.topic_id if self.partition_metadata else None

    @property
    def size_bytes(self) -> int:
        return sum(s.log_size for s in self.segments)

    @property
    def unread(self) -> tuple[Finding, ...]:
        """The listing's findings about files no analysis of this partition could read."""
        return tuple(f for f in self.findings if leaves_data_unread(f))


_LEFTOVER_CODES = {
    Leftover.DELETED: ("leftover_deleted_file",
                       "scheduled for deletion (data intact until file.delete.delay.ms)"),
    Leftover.CLEANED: ("leftover_cleaned_file",
                       "incomplete cleaner output (Kafka deletes it on startup)"),
    Leftover.SWAP: ("leftover_swap_file",
                    "cleaner/split output not yet swapped in (Kafka finishes it on startup)"),
}


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "non-regular file"


def _cannot_list(spath: str, e: OSError | SymlinkRefusedError) -> Finding:
    """Why a partition directory was not listed: a link (never followed), or the error."""
    if isinstance(e, SymlinkRefusedError):
        return symlink_found(spath)
    return finding("partition_dir_unreadable", spath, f"cannot list: {e.strerror or e}")


def _stat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat()
    except OSError:  # deleted by the broker between listing and stat
        return None


def load_partition_dir(path: str | os.PathLike[str],
                       only_base_offsets: Iterable[int] | None = None) -> PartitionDir:
    """List one partition directory (never opening a ``.log``) into a :class:`PartitionDir`.

    ``only_base_offsets`` restricts the segments (a single segment file given on the command
    line) while keeping companions and partition metadata.
    """
    pdir = as_path(path)
    return load_named_partition_dir(pdir, parse_partition_dir_name(pdir.name),
                                    only_base_offsets)


def load_named_partition_dir(pdir: Located, name: PartitionName | None,
                             only_base_offsets: Iterable[int] | None = None) -> PartitionDir:
    """:func:`load_partition_dir` of a directory whose name the caller has parsed already
    (a log dir's listing parses each one to order them)."""
    spath = str(pdir)
    listing = _Listing(pdir, set(only_base_offsets) if only_base_offsets is not None else None)
    if name is None:
        listing.findings.append(finding(
            "partition_dir_name_invalid", spath,
            f"{pdir.name!r} is not <topic>-<partition>; Kafka refuses to load such a directory"))
    elif name.state is not PartitionState.LIVE:
        listing.findings.append(finding(f"partition_{name.state.value}", spath,
                                        f"directory marked -{name.state.value}"))
    try:
        if pdir.is_symlink():  # a link out of the tree: not listed (a listing holds none)
            raise SymlinkRefusedError(SYMLINK_REFUSED, path=spath)
        with pdir.location.scandir(pdir) as it:
            dir_entries = sorted(it, key=lambda e: e.name)
    except (OSError, SymlinkRefusedError) as e:
        listing.findings.append(_cannot_list(spath, e))
        return PartitionDir(pdir, name, segments=(), snapshots=(), leftovers=(), orphans=(),
                            strays=(), temp_files=(), kraft_snapshots=(),
                            partition_metadata=None, leader_epochs=(),
                            findings=tuple(listing.findings))
    plain = listing.wanted is None
    for entry in dir_entries:
        if not (plain and listing.add_segment_file(entry)):
            listing.add(entry)
    return listing.partition_dir(name)


@dataclass(slots=True)
class _Listing:
    """What the listing of one partition directory has found so far, entry by entry."""

    pdir: Located
    wanted: set[int] | None  # the segments asked for (None: all)
    findings: list[Finding] = field(default_factory=list)
    groups: dict[int, dict[FileKind, tuple[Located, os.stat_result]]] = field(
        default_factory=dict)
    snapshots: list[SnapshotFile] = field(default_factory=list)
    leftovers: list[LeftoverFile] = field(default_factory=list)
    strays: list[Located] = field(default_factory=list)
    temps: list[Located] = field(default_factory=list)
    kraft: list[Located] = field(default_factory=list)
    metadata: PartitionMetadata | None = None
    epochs: tuple[EpochEntry, ...] = ()

    def add(self, entry: os.DirEntry) -> None:
        """One directory entry: a stray directory, a file that cannot be read, or a file of
        a kind Kafka writes, put where it belongs."""
        fpath = self.pdir.location.child(self.pdir, entry)
        if entry.is_symlink():
            self.findings.append(symlink_found(str(fpath)))
            return
        if entry_is_dir(entry):
            self.strays.append(fpath)
            self.findings.append(finding("stray_directory", str(fpath),
                                         "unexpected directory inside a partition directory"))
            return
        pf = _classified(entry.name)
        if self.wanted is not None and pf.base_offset is not None and \
                pf.base_offset not in self.wanted:
            return
        if pf.kind in _TEXT_FILE_KINDS and entry.is_file(follow_symlinks=False):
            self._text_file(fpath, pf.kind)  # the directory's type says regular: no stat
            return
        st = self._regular(entry, fpath)
        if st is not None:
            self._file(entry.name, fpath, pf, st)

    def add_segment_file(self, entry: os.DirEntry) -> bool:
        """The common entry in one step: a regular file with a canonical segment name (most
        of a large tree's files). False for anything else, left to :meth:`add`, which
        reaches the same answer for these by the longer way."""
        name = entry.name
        pf = _classified(name)
        if pf.kind not in _SEGMENT_FILE_KINDS or pf.leftover is not None or \
                name.find(".") != SEGMENT_NAME_DIGITS:
            return False
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        group = self.groups.get(pf.base_offset)
        if group is None:
            group = self.groups[pf.base_offset] = {}
        fpath = self.pdir.location.child(self.pdir, entry)
        group[pf.kind] = (fpath, st)
        if pf.kind is not FileKind.LOG:
            self._readable(fpath, st)
        return True

    def _readable(self, fpath: Located, st: os.stat_result) -> None:
        """A companion file (index, snapshot) this process cannot read is a finding at
        listing time, so every command says so, not only those that open it (the ``.log``
        itself is reported by whoever reads it). Files readable by all, as Kafka writes
        them (and every listed object: its mode says readable), cost no extra call."""
        if st.st_mode & stat.S_IROTH or os.access(fpath, os.R_OK):
            return
        self.findings.append(finding(
            "file_unreadable", str(fpath),
            f"could not be read: {os.strerror(errno.EACCES)}; the answer goes on without it"))

    def _regular(self, entry: os.DirEntry, fpath: Located) -> os.stat_result | None:
        """The entry's stat when it is a regular file still there; a finding otherwise."""
        st = _stat(entry)
        if st is None and entry.is_symlink():
            self.findings.append(finding("not_a_regular_file", str(fpath),
                                         "a symbolic link to nothing: not read"))
            return None
        if st is None:
            self.findings.append(finding("file_vanished", str(fpath),
                                         "listed but gone before stat (a live broker removed "
                                         "it)"))
            return None
        if not stat.S_ISREG(st.st_mode):
            self.findings.append(finding(
                "not_a_regular_file", str(fpath),
                f"a {_file_type(st.st_mode)} under a Kafka file name: not read (opening it "
                "could block or have side effects)"))
            return None
        return st

    def _file(self, file_name: str, fpath: Located, pf: PartitionFile, st: os.stat_result
              ) -> None:
        findings = self.findings
        if pf.leftover is not None and pf.base_offset is not None:
            code, why = _LEFTOVER_CODES[pf.leftover]
            self.leftovers.append(LeftoverFile(fpath, pf.kind, pf.base_offset, pf.leftover,
                                               st.st_size))
            findings.append(finding(code, str(fpath), why, offset=pf.base_offset))
        elif pf.kind is FileKind.SNAPSHOT and pf.base_offset is not None:
            self.snapshots.append(SnapshotFile(pf.base_offset, fpath, st.st_size))
            self._readable(fpath, st)
        elif pf.base_offset is not None and pf.kind in (
                FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX):
            if len(file_name.split(".", 1)[0]) != SEGMENT_NAME_DIGITS:
                findings.append(finding("segment_name_not_canonical",
                                        str(fpath), "base offset is not 20 zero-padded digits"))
            self.groups.setdefault(pf.base_offset, {})[pf.kind] = (fpath, st)
            if pf.kind is not FileKind.LOG:
                self._readable(fpath, st)
        elif pf.kind in _TEXT_FILE_KINDS:
            self._text_file(fpath, pf.kind)
        elif pf.kind is FileKind.TEMP:
            self.temps.append(fpath)
            findings.append(finding("leftover_tmp_file", str(fpath),
                                    "a checkpoint write that was never renamed into place"))
        elif pf.kind is FileKind.KRAFT_SNAPSHOT:
            self.kraft.append(fpath)
        elif pf.kind is not FileKind.QUORUM_STATE:
            self.strays.append(fpath)
            findings.append(finding("stray_file", str(fpath),
                                    "not a file Kafka writes in a partition directory"))

    def _text_file(self, fpath: Located, kind: FileKind) -> None:
        """``partition.metadata`` or ``leader-epoch-checkpoint``, known to be a regular file
        (by the listing's type or its ``stat``), read and parsed: what cannot be is a
        finding."""
        text, more = read_text_capped(fpath, listed=True)
        self.findings.extend(more)
        if text is None:
            return
        if kind is FileKind.PARTITION_METADATA:
            self.metadata, more = parse_partition_metadata(text, str(fpath))
        else:
            parsed, more = parse_leader_epoch_checkpoint(text, str(fpath))
            self.epochs = tuple(parsed)
        self.findings.extend(more)

    def partition_dir(self, name: PartitionName | None) -> PartitionDir:
        """Segments paired with their companions and leftovers, orphans named."""
        segments = _segments(self.groups, self.findings)
        leftover_by_base: dict[int, list[Located]] = {}
        for lf in self.leftovers:
            leftover_by_base.setdefault(lf.base_offset, []).append(lf.path)
        if leftover_by_base:  # rare: most partitions have none, and a copy per segment adds up
            segments = [dataclasses.replace(s, leftovers=tuple(leftover_by_base[s.base_offset]))
                        if s.base_offset in leftover_by_base else s for s in segments]
        orphans = tuple(p for _, kinds in sorted(self.groups.items())
                        if FileKind.LOG not in kinds for p, _ in kinds.values())
        return PartitionDir(
            self.pdir, name, segments=tuple(segments), snapshots=tuple(self.snapshots),
            leftovers=tuple(self.leftovers), orphans=orphans, strays=tuple(self.strays),
            temp_files=tuple(self.temps), kraft_snapshots=tuple(self.kraft),
            partition_metadata=self.metadata, leader_epochs=self.epochs,
            findings=tuple(self.findings), complete=self.wanted is None)


def _segments(groups: dict[int, dict[FileKind, tuple[Located, os.stat_result]]],
              findings: list[Finding]) -> list[SegmentFiles]:
    """Pair each ``.log`` with its companions; report missing and orphaned ones.

    ``LogLoader.loadSegmentFiles`` rebuilds a missing ``.index``; a missing ``.timeindex`` is
    recreated empty; orphan indexes are deleted on startup. The active segment may legitimately
    have no index files yet (created on first append, KAFKA-13603), hence INFO for it.
    """
    segments: list[SegmentFiles] = []
    with_log = [base for base, kinds in groups.items() if FileKind.LOG in kinds]
    active = max(with_log) if with_log else None
    for base in sorted(groups):
        kinds = groups[base]
        if FileKind.LOG not in kinds:
            for kind, (p, _) in sorted(kinds.items()):
                findings.append(finding("orphan_index_file", str(p),
                                        f".{kind.value} without a .log (Kafka deletes it on "
                                        f"startup)", offset=base))
            continue
        log, log_stat = kinds[FileKind.LOG]
        for kind in (FileKind.INDEX, FileKind.TIMEINDEX):
            if kind not in kinds:
                code = (f"active_segment_missing_{kind.value}" if base == active
                        else f"segment_missing_{kind.value}")
                findings.append(finding(code, str(log),
                                        f"no .{kind.value} beside this .log"
                                        + (" (active segment: created lazily)"
                                           if base == active else ""), offset=base))
        segments.append(SegmentFiles(
            base, log, log_stat.st_size,
            kinds.get(FileKind.INDEX, (None, 0))[0],
            kinds.get(FileKind.TIMEINDEX, (None, 0))[0],
            kinds.get(FileKind.TXNINDEX, (None, 0))[0],
            log_mtime_ns=log_stat.st_mtime_ns, sealed=base != active,
        ))
    return segments


def settle(pdir: PartitionDir, high_watermark: int | None, recovery_point: int | None, *,
           checkpointed: bool) -> PartitionDir:
    """Which segments Kafka can no longer shrink, given the log dir's checkpoints.

    A broker shrinks a segment file only when a follower truncates (``LocalLog.truncateTo``:
    to an offset at or above the high watermark, except after an unclean leader election; the
    segments after the target are deleted, the one holding it is truncated), when recovery
    after an unclean shutdown truncates a segment above the recovery point
    (``LogSegment.recover``), or when the active segment is trimmed at a roll
    (``FileRecords.trim``). So a segment is *sealed* when it is not the last one and every
    offset it can hold (up to the next segment's base offset) lies below both checkpoints.
    ``checkpointed`` says whether the log dir has checkpoint files at all: without any (a
    copy of a log dir, a test tree), only the last segment is treated as live.
    """
    settled = min((o for o in (high_watermark, recovery_point) if o is not None), default=None)
    if settled is None and not checkpointed:
        return pdir
    segments = list(pdir.segments)
    for i, seg in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        sealed = next_base is not None and settled is not None and next_base <= settled
        if sealed != seg.sealed:
            segments[i] = dataclasses.replace(seg, sealed=sealed)
    return dataclasses.replace(pdir, segments=tuple(segments))
