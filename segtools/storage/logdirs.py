"""Walk one or many log dirs (JBOD): classify every file and directory, parse the root files.

Input paths may be log dirs, partition dirs or single segment files; the result is always a
list of :class:`LogDir`, sorted by path, each with its partitions sorted by name. Nothing is
opened for writing and the listing never opens ``.lock`` (locking it would stop a broker from
starting; gentle mode only asks who holds it, :mod:`segtools.storage.pagecache`). Problems
become findings, never tracebacks.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import pickle
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from segtools.findings import Finding, finding
from segtools.formats.checkpoints import (
    CleanShutdown,
    MetaProperties,
    TopicPartition,
    parse_clean_shutdown,
    parse_meta_properties,
    parse_offset_checkpoint,
)
from segtools.storage.files import entry_is_dir, symlink_found
from segtools.storage.located import location_findings
from segtools.storage.location import Located, as_path, resolve
from segtools.storage.partition import (
    REMOTE_LOG_INDEX_CACHE,
    FileKind,
    PartitionDir,
    PartitionName,
    classify_partition_file,
    load_named_partition_dir,
    parse_partition_dir_name,
    settle,
)
from segtools.storage.small_files import read_text_capped

META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"  # CleanShutdownFileHandler / LogLoader
LOCK_FILE = ".lock"  # LogManager.LockFileName
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"  # high watermarks
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT,
                      LOG_START_OFFSET_CHECKPOINT, CLEANER_OFFSET_CHECKPOINT)
ROOT_FILES = frozenset((META_PROPERTIES, CLEAN_SHUTDOWN, LOCK_FILE, BOOTSTRAP_CHECKPOINT,
                        *OFFSET_CHECKPOINTS))


@dataclass(frozen=True, slots=True)
class LogDir:
    """One ``log.dirs`` entry as found on disk."""

    path: Located
    meta: MetaProperties | None
    checkpoints: dict[str, dict[TopicPartition, int]]  # keyed by checkpoint file name
    clean_shutdown: CleanShutdown | None  # None: no .kafka_cleanshutdown (running or crashed)
    has_lock_file: bool
    bootstrap_checkpoint: Located | None
    partitions: tuple[PartitionDir, ...]
    other_files: tuple[Located, ...] = ()
    findings: tuple[Finding, ...] = field(default=())

    @property
    def recovery_points(self) -> dict[TopicPartition, int]:
        return self.checkpoints.get(RECOVERY_POINT_CHECKPOINT, {})

    @property
    def high_watermarks(self) -> dict[TopicPartition, int]:
        return self.checkpoints.get(REPLICATION_CHECKPOINT, {})

    @property
    def log_start_offsets(self) -> dict[TopicPartition, int]:
        return self.checkpoints.get(LOG_START_OFFSET_CHECKPOINT, {})

    @property
    def cleaner_offsets(self) -> dict[TopicPartition, int]:
        return self.checkpoints.get(CLEANER_OFFSET_CHECKPOINT, {})

    @property
    def all_findings(self) -> tuple[Finding, ...]:
        return self.findings + tuple(f for p in self.partitions for f in p.findings)


def _inode(path: Located) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _looks_like_partition_dir(path: Located) -> bool:
    """Decide by content first: a log dir named ``kafka-logs-1`` also parses as a partition."""
    try:
        with path.location.scandir(path) as it:
            names = [e.name for e in it]
    except OSError:
        return parse_partition_dir_name(path.name) is not None
    if any(n in ROOT_FILES for n in names):
        return False
    if any(classify_partition_file(n).kind is not FileKind.STRAY for n in names):
        return True
    return parse_partition_dir_name(path.name) is not None and not any(
        parse_partition_dir_name(n) for n in names)


@dataclass
class _Pending:
    """What the walk has collected for one log dir so far."""

    partitions: dict[Located, list[int] | None] = field(default_factory=dict)
    whole: bool = False  # the log dir itself was named: list every partition


def walk(paths: Iterable[str | os.PathLike[str]],
         storage_options: Mapping[str, Any] | None = None
         ) -> tuple[list[LogDir], list[Finding]]:
    """Group the given paths by log dir and load each one.

    A path may be local, a URI of an object store or go through an archive
    (:mod:`segtools.storage.location`); ``storage_options`` configure the stores.
    Returns the log dirs and the findings that belong to no log dir (missing paths).
    """
    pending, loose = _grouped(paths, storage_options)
    loaded = [load_log_dir(p, pending[p]) for p in sorted(pending)]
    return loaded, loose + location_findings(pending)


def walk_topic(paths: Iterable[str | os.PathLike[str]], topic: str
               ) -> tuple[list[LogDir], list[Finding]]:
    """:func:`walk` listing only ``topic``'s partition directories: a reader of one topic
    (the schema store's ``_schemas``, named by ``--schemas``) neither lists nor reads the
    files of the others, which in a broker's log dir are thousands of directories and two
    small files each."""
    pending, loose = _grouped(paths, None)
    loaded = []
    for path in sorted(pending):
        log_dir, refs = log_dir_root(path, pending[path])
        loaded.append(listed(log_dir, (r for r in refs
                                       if r.name is not None and r.name.topic == topic)))
    return loaded, loose + location_findings(pending)


def walk_roots(paths: Iterable[str | os.PathLike[str]]
               ) -> tuple[list[tuple[LogDir, tuple[PartitionRef, ...]]], list[Finding]] | None:
    """:func:`walk` up to the partition directories, which are found but not listed: each
    log dir with no partitions yet, and its partition directories in the order :func:`walk`
    gives them. A command that fans out lists them in its workers (:func:`list_partition`),
    so the listing of a large tree (a ``stat`` and a path for each of its files, two small
    files read per partition) runs on every core instead of before the workers start.
    None when a path is not on the local disk: a listed location (an object store, an
    archive) reports what its listing met once it is over, so it is walked whole."""
    pending, loose = _grouped(paths, None)
    if any(p.location.kind != "local" for p in pending):
        return None
    return [log_dir_root(p, pending[p]) for p in sorted(pending)], loose


def _grouped(paths: Iterable[str | os.PathLike[str]],
             storage_options: Mapping[str, Any] | None
             ) -> tuple[dict[Located, _Pending], list[Finding]]:
    """The given paths resolved and grouped by the log dir they belong to."""
    pending: dict[Located, _Pending] = {}
    loose: list[Finding] = []
    for path in _expand_containers((resolve(p, storage_options) for p in paths), loose):
        if not path.exists():
            loose.append(finding("path_not_found", str(path),
                                 "no such file or directory"))
        elif path.is_dir():
            if _looks_like_partition_dir(path):
                slot = pending.setdefault(path.parent, _Pending())
                slot.partitions[path] = None
            else:
                pending.setdefault(path, _Pending()).whole = True
        else:
            pf = classify_partition_file(path.name)
            if pf.base_offset is None:
                loose.append(finding("not_a_segment_file", str(path),
                                     "not a segment file (<20-digit offset>.<suffix>)"))
                continue
            slot = pending.setdefault(path.parent.parent, _Pending())
            bases = slot.partitions.setdefault(path.parent, [])
            if bases is not None:
                bases.append(pf.base_offset)
    return pending, loose


#: How deep a directory of log-dir copies may nest (``archive/broker-1/kafka-logs``).
MAX_CONTAINER_DEPTH = 4


def _has_root_files(path: Located) -> bool:
    try:
        with path.location.scandir(path) as it:
            return any(e.name in ROOT_FILES for e in it)
    except OSError:
        return False


def _has_log_dir_below(path: Located) -> bool:
    """A directory whose own subdirectories include a log dir (root files), and which holds
    no Kafka file itself: one level of a bundle's ``<broker>/<log dir>`` layout."""
    try:
        with path.location.scandir(path) as it:
            entries = list(it)
    except OSError:
        return False
    if any(classify_partition_file(e.name).kind is not FileKind.STRAY for e in entries):
        return False
    return any(_has_root_files(path.location.child(path, e)) for e in entries
               if e.is_dir(follow_symlinks=False))


def _is_container(path: Located) -> bool:
    """A directory that is neither a log dir nor a partition dir but holds such directories:
    a copy of several brokers' ``log.dirs``, or a tree of archived ones. A child with a log
    dir's root files is a log dir whatever its name (``broker-1`` also parses as a partition
    name)."""
    try:
        with path.location.scandir(path) as it:
            entries = list(it)
    except OSError:
        return False
    names = [e.name for e in entries]
    if any(n in ROOT_FILES for n in names):
        return False
    children = [path.location.child(path, e) for e in entries if e.is_dir(follow_symlinks=False)]
    if any(_has_root_files(c) for c in children):
        return True
    if any(_has_log_dir_below(c) for c in children):
        return True  # broker-1/kafka-logs: "broker-1" also parses as a partition name
    if any(parse_partition_dir_name(n) for n in names):
        return False
    return bool(children) and not _looks_like_partition_dir(path)


def _expand_containers(paths: Iterable[Located], loose: list[Finding],
                       depth: int = 0, seen: set | None = None) -> Iterator[Located]:
    """Replace container directories by the log dirs below them, in name order, following no
    symlink twice (an inode seen before is a loop or an alias)."""
    seen = set() if seen is None else seen
    for path in paths:
        try:
            container = path.is_dir() and _is_container(path)
        except OSError as e:  # a directory above it cannot be searched (mode 000, ...)
            loose.append(finding("log_dir_unreadable", str(path),
                                 f"cannot read: {e.strerror or e}"))
            continue
        if not container:
            yield path
            continue
        inode = _inode(path)
        if inode in seen:
            loose.append(finding("directory_seen_twice", str(path),
                                 "same directory reached again (symlink alias or loop); "
                                 "skipped"))
            continue
        seen.add(inode)
        if depth >= MAX_CONTAINER_DEPTH:
            loose.append(finding("unknown_directory", str(path),
                                 "holds no log dir within the depth segtools searches"))
            continue
        children = sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
        yield from _expand_containers(children, loose, depth + 1, seen)


@dataclass(frozen=True, slots=True)
class PartitionRef:
    """A partition directory of a log dir, found but not listed yet."""

    path: Located
    name: PartitionName | None  # None: the directory name does not parse
    base_offsets: tuple[int, ...] | None = None  # only these segments (files named alone)


def load_log_dir(path: str | os.PathLike[str], _scope: _Pending | None = None) -> LogDir:
    """Load one log dir: root files, then each partition directory (sorted by name)."""
    return listed(*log_dir_root(path, _scope))


def listed(log_dir: LogDir, refs: Iterable[PartitionRef]) -> LogDir:
    """A log dir of :func:`log_dir_root` with its partition directories listed."""
    return dataclasses.replace(log_dir, partitions=tuple(list_partition(log_dir, r)
                                                         for r in refs))


def list_partition(log_dir: LogDir, ref: PartitionRef) -> PartitionDir:
    """One partition directory of ``log_dir`` listed, its settled segments marked."""
    return settled(load_named_partition_dir(ref.path, ref.name, ref.base_offsets),
                   log_dir.checkpoints)


def log_dir_root(path: str | os.PathLike[str], _scope: _Pending | None = None
                 ) -> tuple[LogDir, tuple[PartitionRef, ...]]:
    """One log dir's root files, and its partition directories found (links and aliases
    left out, each a finding) in the order :func:`load_log_dir` lists them; the log dir's
    ``partitions`` stay empty."""
    root = as_path(path)
    scope = _scope or _Pending(whole=True)
    findings: list[Finding] = []
    seen: set[tuple[int, int]] = set()
    meta = None
    checkpoints: dict[str, dict[TopicPartition, int]] = {}
    clean = None
    has_lock = False
    bootstrap = None
    other: list[Located] = []
    partition_paths: list[tuple[Located, list[int] | None]] = []

    listed = True
    try:
        with root.location.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as e:
        entries = []
        listed = False
        if scope.whole:
            findings.append(finding("log_dir_unreadable", str(root),
                                    f"cannot list: {e.strerror or e}"))
    root_inode = _inode(root)
    if root_inode:
        seen.add(root_inode)

    for entry in entries:
        fpath = root / entry.name
        if entry.is_symlink():
            findings.append(symlink_found(str(fpath)))
            continue
        is_dir = entry_is_dir(entry)
        if is_dir:
            if scope.whole:
                if entry.name == REMOTE_LOG_INDEX_CACHE:
                    findings.append(finding("skipped_directory", str(fpath),
                                            "tiered-storage index cache (LogManager skips it)"))
                elif parse_partition_dir_name(entry.name) is None:
                    other.append(fpath)
                    findings.append(finding("unknown_directory", str(fpath),
                                            "not a partition directory; Kafka refuses to "
                                            "start with it in a log dir"))
                else:
                    partition_paths.append((fpath, None))
            continue
        name = entry.name
        # the listing's own type (no stat where the directory gives it): a regular file is
        # not checked again before it is read, anything else is, and refused with the reason
        regular = entry.is_file(follow_symlinks=False)
        if name == LOCK_FILE:
            has_lock = True  # noted, never opened
        elif name == META_PROPERTIES:
            text, more = read_text_capped(fpath, listed=regular)
            findings.extend(more)
            if text is not None:
                meta, more = parse_meta_properties(text, str(fpath))
                findings.extend(more)
        elif name in OFFSET_CHECKPOINTS:
            text, more = read_text_capped(fpath, listed=regular)
            findings.extend(more)
            if text is not None:
                checkpoints[name], more = parse_offset_checkpoint(text, str(fpath))
                findings.extend(more)
        elif name == CLEAN_SHUTDOWN:
            text, more = read_text_capped(fpath, listed=regular)
            findings.extend(more)
            if not _vanished(more):  # an unreadable marker is still there; a gone one is not
                clean, more = parse_clean_shutdown(text or "", str(fpath))
                findings.extend(more)
        elif name == BOOTSTRAP_CHECKPOINT:
            bootstrap = fpath
        elif name.endswith(".tmp"):
            other.append(fpath)
            findings.append(finding("leftover_tmp_file", str(fpath),
                                    "a checkpoint write that was never renamed into place"))
        else:
            other.append(fpath)

    if listed and scope.whole and meta is None and not any(
            f.path.endswith(META_PROPERTIES) for f in findings):
        findings.append(finding("meta_properties_missing", str(root),
                                "no meta.properties (not a broker log dir, or never started)"))
    # those the root's listing found are directories and no links by its own entries (no
    # ``lstat`` again); a path is compared by its text, which a located path keeps (its
    # hash parses the path again)
    found = len(partition_paths)
    partition_paths.extend(sorted(scope.partitions.items()))
    refs = []
    done: set[str] = set()
    for i, (ppath, bases) in enumerate(partition_paths):
        if (shown := str(ppath)) in done:
            continue
        done.add(shown)
        if i >= found and ppath.is_symlink():  # named below a log dir: not read
            if not any(f.path == shown for f in findings):
                findings.append(symlink_found(shown))
            continue
        inode = _inode(ppath)
        if inode is not None and inode in seen:
            findings.append(finding("directory_seen_twice", shown,
                                    "same directory reached again (symlink alias or loop); "
                                    "skipped"))
            continue
        if inode is not None:
            seen.add(inode)
        refs.append(PartitionRef(ppath, parse_partition_dir_name(ppath.name),
                                 None if bases is None else tuple(bases)))
    refs.sort(key=_partition_order)
    return (LogDir(root, meta, checkpoints, clean, has_lock, bootstrap, (), tuple(other),
                   tuple(findings)), tuple(refs))


def _vanished(findings: list[Finding]) -> bool:
    """Whether reading a listed file found it gone (``file_vanished``): nothing of it is
    known then, not even that it was there."""
    return any(f.code == "file_vanished" for f in findings)


def settled(pdir: PartitionDir, checkpoints: dict[str, dict[TopicPartition, int]]
             ) -> PartitionDir:
    """Mark the segments a broker could still shrink (:func:`settle`) from the checkpoints."""
    if pdir.name is None:
        return pdir
    tp = (pdir.name.topic, pdir.name.partition)
    return settle(pdir, checkpoints.get(REPLICATION_CHECKPOINT, {}).get(tp),
                  checkpoints.get(RECOVERY_POINT_CHECKPOINT, {}).get(tp),
                  checkpointed=any(name in checkpoints for name in (
                      REPLICATION_CHECKPOINT, RECOVERY_POINT_CHECKPOINT)))


def _partition_order(p: PartitionRef) -> tuple:
    """The order of a log dir's partitions: by topic, partition, state, directory name
    (what a listing adds cannot change it)."""
    if p.name is None:
        return ("\uffff", 0, "", p.path.name)
    return (p.name.topic, p.name.partition, p.name.state.value, p.path.name)


# --------------------------------------------------------------------------- a listing sent back


class _ListingPickler(pickle.Pickler):
    """Pickles listed partition directories with each file's path as its name in its
    directory, and each frozen value (a segment's files, a name, a finding) as the call
    that makes it: a path pickled whole is its parts, parsed again when it is unpickled,
    and a slotted dataclass is restored field by field after asking for its fields each
    time (together, most of what unpickling a listing cost)."""

    directory: Located | None = None

    def reducer_override(self, obj: object) -> Any:
        kind = type(obj)
        directory = self.directory
        if directory is not None and kind is type(directory):
            if obj is not directory and obj.location.kind == "local" \
                    and os.path.dirname(str(obj)) == str(directory):
                return _child, (directory, obj.name)
            return NotImplemented
        names = _init_fields(kind)
        if names is None:
            return NotImplemented
        return kind, tuple([getattr(obj, name) for name in names])


@functools.cache
def _init_fields(kind: type) -> tuple[str, ...] | None:
    """A dataclass's fields in its constructor's order, when the constructor takes every
    one (None: not a dataclass, or one that is restored as pickle restores it)."""
    if not dataclasses.is_dataclass(kind) or not isinstance(kind, type):
        return None
    fields = dataclasses.fields(kind)
    return tuple(f.name for f in fields) if all(f.init for f in fields) else None


@dataclass(frozen=True, slots=True)
class _Named:
    """What a location's ``child`` takes of a directory entry: its name."""

    name: str


def _child(directory: Located, name: str) -> Located:
    """``directory / name`` made as the listing made it (the name not parsed again)."""
    return directory.location.child(directory, _Named(name))


def packed(pdirs: Iterable[PartitionDir]) -> bytes:
    """Partition directories listed in a worker (:func:`list_partition`), as the bytes it
    hands back: :func:`unpacked` gives equal ones (the same paths, sizes, findings), for a
    few tenths of the cost of listing them again or of unpickling their paths whole."""
    out = io.BytesIO()
    pickler = _ListingPickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    for pdir in pdirs:
        pickler.directory = pdir.path
        pickler.dump(pdir)
        pickler.clear_memo()  # a partition's own directory is the only path it shares
    return out.getvalue()


def unpacked(data: bytes) -> list[PartitionDir]:
    """The partition directories of :func:`packed`, in their order."""
    source = io.BytesIO(data)
    out = []
    while source.tell() < len(data):
        out.append(pickle.load(source))
    return out
