"""The trees a query's views read: the locations given, walked only as far as the query needs.

Walking a broker's log dir lists every partition directory and every segment in it (10,000
partitions are some 200,000 files), where a point query names one partition. When the
conditions pushed into a record view name its topics and partitions exactly, and every
location is a local log dir, the view reads a tree of only those partition directories: the
walk still reads each log dir's own files (the checkpoints say where a partition's log
starts, where its high watermark is, which segments a broker could still shrink), so the
rows are the ones the whole tree gives. Anything else (a container of log dirs, an archive,
an object store, a name that is not a partition directory of the log dir) reads the whole
tree, walked once and shared by every view that needs it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from segtools.errors import SegtoolsError
from segtools.payloads.schemas_topic import SCHEMAS_TOPIC
from segtools.sql.pushdown import Pushdown
from segtools.storage.logdirs import ROOT_FILES
from segtools.storage.partition import FileKind, classify_partition_file

if TYPE_CHECKING:  # the API hands its trees in; the room never reaches back up to it
    from segtools.api import LogDirs


class Trees:
    """The whole tree of ``paths`` (walked on first need), and the narrowed trees of the
    partitions a view's conditions name. ``open_tree`` walks some paths with the run's
    settings (the command's decompression cap and gentle choices)."""

    def __init__(self, paths: Sequence[str], open_tree: Callable[[tuple[str, ...]], LogDirs],
                 whole: LogDirs | None = None) -> None:
        self.paths = tuple(paths)
        self._open = open_tree
        self._whole = whole
        self._narrowed: dict[tuple[str, ...], LogDirs] = {}

    @classmethod
    def of(cls, tree: LogDirs) -> Trees:
        """A tree already walked: every view reads it (nothing is left to spare)."""
        return cls(tree.paths, lambda paths: tree, whole=tree)

    def require(self) -> None:
        """Each local location exists, as the walk requires (a query that reads no view
        walks nothing, and must still refuse a path that is not there)."""
        if self._whole is not None:
            return
        for path in self.paths:
            if "://" in path:
                continue
            try:
                os.lstat(path)
            except FileNotFoundError:
                raise SegtoolsError(f"{path}: no such file or directory", path=path) from None
            except OSError as e:  # below a directory that cannot be searched
                raise SegtoolsError(f"{path}: cannot read: {e.strerror or e}",
                                    path=path) from None

    def whole(self) -> LogDirs:
        """Every partition under the locations, walked once."""
        if self._whole is None:
            self._whole = self._open(self.paths)
        return self._whole

    def for_records(self, push: Pushdown, *, with_schemas: bool = False,
                    live_only: bool = True) -> LogDirs:
        """The tree a record, batch or segment view reads for ``push``: the partitions it
        names when it names them exactly, else the whole tree. ``with_schemas`` keeps the
        log dirs' ``_schemas`` partitions in it (decoding reads its schemas there).
        ``live_only``: the view reads only live partition directories; a renamed one
        (``<topic>-<n>.<uuid>-delete``, ``-future``) is not found by its plain name, so a
        view reading those walks the whole tree."""
        if self._whole is not None:
            return self._whole
        if not live_only:
            return self.whole()
        paths = partition_paths(self.paths, push, with_schemas=with_schemas)
        if paths is None:
            return self.whole()
        if paths not in self._narrowed:
            self._narrowed[paths] = self._open(paths)
        return self._narrowed[paths]


def partition_paths(paths: Sequence[str], push: Pushdown, *,
                    with_schemas: bool = False) -> tuple[str, ...] | None:
    """The partition directories of ``push``'s topics and partitions in the log dirs
    ``paths`` name, or None when the walk cannot be narrowed to them without changing what
    the whole tree reads (no exact topics and partitions, a location that is not a local log
    dir, a named partition that is not plainly a partition directory there, or none found:
    the whole tree then says what is there)."""
    if push.topics is None or push.partitions is None or push.empty():
        return None
    found: list[str] = []
    for path in paths:
        if "://" in path or not _is_log_dir(path):
            return None
        names = [f"{topic}-{partition}" for topic in push.topics
                 for partition in push.partitions]
        if with_schemas:
            names += [os.path.basename(p) for p in sorted(glob.glob(os.path.join(
                glob.escape(path), f"{glob.escape(SCHEMAS_TOPIC)}-*")))]
        for name in names:
            candidate = os.path.join(path, name)
            if os.path.lexists(candidate):
                if not _is_partition_dir(candidate):
                    return None
                found.append(candidate)
    return tuple(found) or None


def _is_log_dir(path: str) -> bool:
    """A local directory holding a log dir's own files (``meta.properties``, checkpoints,
    ``.lock``): the walk takes it as one log dir, never as a container of several."""
    return os.path.isdir(path) and not os.path.islink(path) and bool(_names(path) & ROOT_FILES)


def _is_partition_dir(path: str) -> bool:
    """A directory the walk takes as a partition directory whether it is named alone or
    found in its log dir: not a symlink (the log dir's walk skips those), holding a Kafka
    file and none of a log dir's own files."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    names = _names(path)
    return not names & ROOT_FILES and any(
        classify_partition_file(n).kind is not FileKind.STRAY for n in names)


def _names(path: str) -> set[str]:
    try:
        with os.scandir(path) as entries:
            return {e.name for e in entries}
    except OSError:
        return set()
