"""Where a remote log segment's files are in a remote store, and reading them.

The bytes a ``RemoteStorageManager`` stores are the broker's own segment files, so once found
they are read with the same decoder as a log dir's. The layout is the plugin's choice; segtools
knows Kafka's reference plugin, ``LocalTieredStorage`` (``storage/src/test/.../remote/storage/``,
``RemoteLogSegmentFileset`` and ``RemoteTopicPartitionDirectory``): under its ``dir`` setting,

    kafka-tiered-storage/<topic>-<partition>-<topic id>/<20-digit start offset>-<segment id>.log
                                                        ... .index, .timeindex, .txnindex (only
                                                        when the segment has one),
                                                        .leader_epoch_checkpoint, .snapshot

written in that order by ``RemoteLogSegmentFileset.copy``, so a copy that stopped part-way
leaves a prefix of that list. A copy that failed is removed (``fileset.delete()``), and so is
a deleted segment (``deleteLogSegmentData``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.storage.segment import Segment, unreadable

#: ``LocalTieredStorage.ROOT_STORAGE_DIR_NAME``: the directory made under its ``dir`` setting.
LOCAL_TIERED_STORAGE_DIR = "kafka-tiered-storage"
#: ``RemoteLogSegmentFileType``: each file of a copied segment, in the order ``copy`` writes
#: them, and whether it may be absent.
FILE_TYPES: tuple[tuple[str, str, bool], ...] = (
    ("segment", ".log", False), ("offset_index", ".index", False),
    ("time_index", ".timeindex", False), ("transaction_index", ".txnindex", True),
    ("leader_epoch_checkpoint", ".leader_epoch_checkpoint", False),
    ("producer_snapshot", ".snapshot", False))


def local_tiered_storage_root(path: str | Path) -> Path:
    """The storage directory: ``path`` itself, or its ``kafka-tiered-storage`` (what
    ``LocalTieredStorage`` creates under the ``dir`` it is given)."""
    root = Path(path)
    if not root.is_dir():
        raise SegtoolsError("not a directory (a LocalTieredStorage dir was expected)",
                            path=str(root))
    inner = root / LOCAL_TIERED_STORAGE_DIR
    return inner if inner.is_dir() else root


@dataclass(frozen=True, slots=True)
class RemoteSegmentFiles:
    """One remote segment's files as found in the store (``missing``: mandatory file types
    that are not there)."""

    segment_id: str
    directory: Path
    found: dict[str, Path] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def log(self) -> Path | None:
        return self.found.get("segment")

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict:
        return {"directory": str(self.directory),
                "files": {k: str(v) for k, v in self.found.items()},
                "missing": list(self.missing)}


def segment_files(root: Path, topic: str, partition: int, topic_id: str, start_offset: int,
                  segment_id: str) -> RemoteSegmentFiles:
    """``RemoteLogSegmentFileset.openFileset``'s names, looked up in ``root``."""
    directory = root / f"{topic}-{partition}-{topic_id}"
    stem = f"{start_offset:020d}-{segment_id}"
    found, missing = {}, []
    for kind, suffix, optional in FILE_TYPES:
        path = directory / (stem + suffix)
        if path.is_file():
            found[kind] = path
        elif not optional:
            missing.append(kind)
    return RemoteSegmentFiles(segment_id, directory, found, tuple(missing))


@dataclass(frozen=True, slots=True)
class RemoteSegmentContent:
    """What a remote ``.log`` holds, read with the log dir's decoder (batch headers, CRCs)."""

    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None
    leader_epochs: tuple[int, ...]
    size: int
    findings: tuple[Finding, ...]

    def to_json(self) -> dict:
        return {"batches": self.batches, "records": self.records,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "leader_epochs": list(self.leader_epochs), "size": self.size,
                "findings": [f.to_json() for f in self.findings]}


def read_segment(path: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> RemoteSegmentContent:
    """Walk a remote ``.log`` as any segment: offsets, counts, leader epochs, findings."""
    findings: list[Finding] = []
    batches = records = 0
    first = last = None
    epochs: set[int] = set()
    try:
        segment = Segment(path, decompress_limit=limit)
    except SegtoolsError as e:
        return RemoteSegmentContent(0, 0, None, None, (), 0, (unreadable(str(path), e),))
    with segment:
        for chunk in segment.walk(verify_crc=True):
            findings.extend(chunk.findings)
            t = chunk.table
            if not len(t.base_offset):
                continue
            batches += len(t.base_offset)
            records += int((t.last_offset - t.base_offset + 1).sum())
            first = int(t.base_offset[0]) if first is None else first
            last = int(t.last_offset[-1])
            epochs.update(int(e) for e in set(t.leader_epoch.tolist()) if e >= 0)
    return RemoteSegmentContent(batches, records, first, last, tuple(sorted(epochs)),
                                path.stat().st_size, tuple(findings))


def listed_segment_ids(root: Path, topic: str, partition: int, topic_id: str
                       ) -> Sequence[str]:
    """The segment ids with a ``.log`` in a partition's directory of the store."""
    directory = root / f"{topic}-{partition}-{topic_id}"
    if not directory.is_dir():
        return ()
    return sorted(p.name[21:-4] for p in directory.glob("*.log") if len(p.name) > 25)
