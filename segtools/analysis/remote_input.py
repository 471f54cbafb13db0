"""The remote tier's input: the ``__remote_log_metadata`` partitions of a tree, and what a
reachable remote store holds of each remote segment, read.

Tiered storage keeps a partition's history in two places: the log dir and a remote store,
known through ``__remote_log_metadata``. The rules over them (remote retention, the store held
against the metadata) are in :mod:`segtools.analysis.tiered` and
:mod:`segtools.analysis.remote_log`; finding and reading the files they need is here, as the
partition's own files are read in :mod:`segtools.analysis.partition_input`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from segtools.analysis.remote_log import (
    DELETE_SEGMENT_FINISHED,
    RemoteLogMetadata,
    RemotePartition,
    RemoteSegment,
    replay,
)
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.internal.remote_log_metadata import TOPIC
from segtools.storage.location import RemotePath, as_path
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import (
    PartitionDir,
    PartitionState,
    SegmentFiles,
    load_partition_dir,
    parse_partition_dir_name,
)
from segtools.storage.remote_store import (
    AivenManifest,
    LocalTieredStorage,
    RemoteSegmentContent,
    RemoteSegmentFiles,
    RemoteStore,
    aiven_segment_bytes,
    parse_manifest,
    read_manifest,
)
from segtools.storage.segment import unreadable
from segtools.storage.small_files import read_upto
from segtools.storage.summary import SegmentSummary, summarize
from segtools.text import quoted

# --------------------------------------------------------------------------- the metadata


def metadata_dirs(log_dirs: Sequence[LogDir]) -> list[PartitionDir]:
    """The live ``__remote_log_metadata-N`` partitions of these log dirs: those walked, and
    those beside a partition directory given on its own (its log dir holds them)."""
    # keyed by the located paths themselves: Path(...) of an object-store path would keep
    # only its key, look on the local disk and fold two buckets with the same keys into one
    found: dict[Path | RemotePath, PartitionDir] = {}
    for d in log_dirs:
        for p in d.partitions:
            if p.name is not None and p.name.topic == TOPIC and \
                    p.name.state is PartitionState.LIVE:
                found[as_path(p.path)] = p
        root = as_path(d.path)
        beside_dirs = sorted(root.iterdir(), key=str) if root.is_dir() else []
        for beside in beside_dirs:
            if not beside.name.startswith(f"{TOPIC}-"):
                continue
            if beside.is_dir() and not beside.is_symlink() and beside not in found:
                p = load_partition_dir(beside)
                if p.name is not None and p.name.state is PartitionState.LIVE:
                    found[beside] = p
    return list(found.values())


def remote_metadata(log_dirs: Sequence[LogDir], until_ms: int | None = None
                    ) -> RemoteLogMetadata:
    """The replayed ``__remote_log_metadata`` of these log dirs (up to ``until_ms``, a
    command's moment: :func:`~segtools.analysis.remote_log.replay`)."""
    return replay(metadata_dirs(log_dirs), until_ms)


def remote_only_partitions(log_dirs: Sequence[LogDir],
                           remote: Mapping[tuple[str, int], RemotePartition]
                           ) -> list[tuple[LogDir, PartitionDir]]:
    """The tiered partitions whose directory no log dir holds while the metadata walked
    names live remote segments of them (the partition was reassigned away, or its directory
    was lost with its local segments): their log is only in the remote tier. Each is given as
    the absent directory (no files) of the log dir holding its ``__remote_log_metadata``
    partition, so ``scan`` and the planner (the API, Spark) list its remote part as ``tiered``
    does. As in ``tiered``, only where that metadata partition was walked: a run on one
    partition answers for it alone (:func:`segtools.analysis.tiered.metadata_partitions_walked`)."""
    held = {(p.name.topic, p.name.partition) for d in log_dirs for p in d.partitions
            if p.name is not None and p.name.state is PartitionState.LIVE}
    out = []
    for d in log_dirs:
        walked = {p.name.partition for p in d.partitions if p.name is not None
                  and p.name.topic == TOPIC and p.name.state is PartitionState.LIVE}
        for key, rp in sorted(remote.items()):
            if key in held or rp.metadata_partition not in walked or not rp.live_segments:
                continue
            held.add(key)
            path = d.path / rp.label
            out.append((d, PartitionDir(path, parse_partition_dir_name(path.name), segments=(),
                                        snapshots=(), leftovers=(), orphans=(), strays=(),
                                        temp_files=(), kraft_snapshots=(),
                                        partition_metadata=None, leader_epochs=())))
    return out


# --------------------------------------------------------------------------- the store


@dataclass(frozen=True, slots=True)
class StoredSegment:
    """A remote segment's files in a reachable store, and what its ``.log`` holds."""

    segment_id: str
    files: RemoteSegmentFiles
    content: RemoteSegmentContent | None

    def to_json(self) -> dict:
        return {**self.files.to_json(),
                "content": self.content.to_json() if self.content is not None else None}


@dataclass(frozen=True, slots=True)
class StoreHoldings:
    """What a reachable store holds of one remote partition: each segment's files (in the
    metadata's order; a segment whose delete finished is not read, only looked for), and the
    segment ids the store lists under the partition's directory."""

    segments: tuple[StoredSegment, ...]
    listed: tuple[str, ...]
    directory: str


def store_holdings(rp: RemotePartition, store: RemoteStore) -> StoreHoldings:
    """Find each remote segment of ``rp`` in ``store`` and read its ``.log`` with the log dir's
    decoder (``store.content``)."""
    out = []
    for s in rp.segments:
        files = store.files(rp.topic, rp.partition, rp.topic_id, s.start_offset, s.segment_id)
        content = None if s.state == DELETE_SEGMENT_FINISHED else store.content(files)
        out.append(StoredSegment(s.segment_id, files, content))
    return StoreHoldings(tuple(out), tuple(store.listed(rp.topic, rp.partition, rp.topic_id)),
                         str(store.partition_dir(rp.topic, rp.partition, rp.topic_id)))


@dataclass(frozen=True, slots=True)
class RemoteSummary:
    """A copied remote segment summarised like a local one (``scan``'s remote rows)."""

    segment: RemoteSegment
    summary: SegmentSummary


@dataclass(frozen=True, slots=True)
class CopiedSegment:
    """A remote segment whose copy finished, with its files in the store read as a log dir's
    sealed segment."""

    segment: RemoteSegment
    files: SegmentFiles


def copied_segments(rp: RemotePartition, store: LocalTieredStorage
                    ) -> tuple[tuple[CopiedSegment, ...], tuple[Finding, ...]]:
    """The remote part of a tiered partition's log, the one list ``scan``, the planner (so
    the API and Spark) and ``tiered`` agree on: each ``COPY_SEGMENT_FINISHED`` segment (what
    ``RemoteLogManager.read`` serves a fetch below the local log start offset from) in offset
    order, its files found in the store; a segment the store lacks is a finding."""
    out, findings = [], []
    for s in sorted(rp.live_segments, key=lambda s: (s.start_offset, s.copy_started_ms)):
        files = store.files(rp.topic, rp.partition, rp.topic_id, s.start_offset, s.segment_id)
        try:
            listed = store.as_log_segment(files, s.start_offset)
        except OSError as e:
            findings.append(unreadable(str(files.log), SegtoolsError(str(e))))
            continue
        if listed is None:
            findings.append(finding(
                "remote_segment_missing", str(files.directory),
                f"{rp.label}: remote segment {s.segment_id} ({s.start_offset}-{s.end_offset}) "
                "finished copying but the store has no .log of it", offset=s.start_offset))
            continue
        out.append(CopiedSegment(s, listed))
    return tuple(out), tuple(findings)


def remote_summaries(rp: RemotePartition, store: LocalTieredStorage, *,
                     verify_crc: bool = False, limit: int = DEFAULT_DECOMPRESS_LIMIT
                     ) -> tuple[tuple[RemoteSummary, ...], tuple[Finding, ...]]:
    """Each segment of :func:`copied_segments`, its ``.log`` and ``.timeindex`` summarised by
    the very walk a log dir's segments get (:func:`segtools.storage.summary.summarize`), so a
    remote row and a local row mean the same."""
    copied, findings = copied_segments(rp, store)
    out, problems = [], list(findings)
    for c in copied:
        try:
            summary = summarize(c.files, is_active=False, verify_crc=verify_crc,
                                decompress_limit=limit)
        except OSError as e:
            problems.append(unreadable(str(c.files.log), SegtoolsError(str(e))))
            continue
        except SegtoolsError as e:
            problems.append(unreadable(str(c.files.log), e))
            continue
        out.append(RemoteSummary(c.segment, summary))
    return tuple(out), tuple(problems)


# --------------------------------------------------------------------------- one object


@dataclass(frozen=True, slots=True)
class AivenObject:
    """An Aiven plugin's ``.log`` object found on its own (``dump`` of a file in the bucket):
    the segment put back together from its chunks, or, when that needs what segtools does
    not have (the plugin's private key), the finding that says so instead of damage."""

    manifest: str
    data: bytes | None
    note: Finding | None


def aiven_object(log: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> AivenObject | None:
    """None when ``log`` is not an Aiven segment object (no ``.rsm-manifest`` beside it).
    Its chunks are zstd frames when ``compression`` is on (read as they are they would look
    like a torn batch) and AES-GCM when ``encryption`` is set (like a corrupt length)."""
    manifest_path = log.with_name(log.name.removesuffix(".log") + ".rsm-manifest")
    if log.suffix != ".log" or not manifest_path.is_file():
        return None
    data, note = aiven_segment_bytes(log, manifest_path, limit=limit)
    return AivenObject(str(manifest_path), data, note)


#: The ``.indexes`` object's sections as an Aiven manifest names them (``SegmentIndexesV1``),
#: each with the suffix the same index has as a file of its own (LocalTieredStorage's names),
#: so that each section is read by the reader of that file.
AIVEN_INDEX_SUFFIXES = {"offset": ".index", "timestamp": ".timeindex",
                        "producerSnapshot": ".snapshot", "transaction": ".txnindex",
                        "leaderEpoch": ".leader_epoch_checkpoint"}


@dataclass(frozen=True, slots=True)
class AivenManifestFile:
    """An Aiven plugin's ``.rsm-manifest`` as read: how the segment's ``.log`` object is
    chunked, compressed and encrypted, and where each index is in its ``.indexes`` object
    (``(name, position, size)``, in the manifest's order; a null index is absent)."""

    manifest: AivenManifest
    indexes: tuple[tuple[str, int, int], ...]


def read_aiven_manifest(path: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                        ) -> AivenManifestFile:
    """Raises :class:`SegtoolsError` when the file is not a manifest segtools can read."""
    try:
        raw = read_manifest(path)
    except OSError as e:
        raise SegtoolsError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    try:
        doc = json.loads(raw)
    except ValueError:
        raise SegtoolsError("not a segment manifest (not JSON)", path=str(path)) from None
    try:
        manifest = parse_manifest(raw, limit=limit)
    except SegtoolsError as e:
        raise e.with_path(str(path)) from None
    try:
        where = doc.get("segmentIndexes") or {}
        indexes = tuple((name, int(at["position"]), int(at["size"]))
                        for name, at in where.items() if at is not None)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise SegtoolsError(f"not a readable segment manifest: segmentIndexes: {e}",
                            path=str(path)) from None
    unknown = [name for name, _, _ in indexes if name not in AIVEN_INDEX_SUFFIXES]
    if unknown or any(pos < 0 or size < 0 for _, pos, size in indexes):
        raise SegtoolsError("not a readable segment manifest: segmentIndexes "
                            f"{unknown or 'out of range'}", path=str(path))
    return AivenManifestFile(manifest, indexes)


@dataclass(frozen=True, slots=True)
class AivenIndexes:
    """An Aiven plugin's ``.indexes`` object found on its own: the segment's index files one
    after the other, where its manifest says. Each section as ``(suffix, bytes)``: the file
    it stands for; or, when reading needs what segtools does not have, the note saying so."""

    manifest: str
    sections: tuple[tuple[str, bytes], ...]
    note: Finding | None


def aiven_indexes(path: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> AivenIndexes | None:
    """None when ``path`` is not an Aiven ``.indexes`` object (no ``.rsm-manifest`` beside
    it). Encrypted sections are AES-GCM under the segment's data key: a note, never damage."""
    manifest_path = path.with_name(path.name.removesuffix(".indexes") + ".rsm-manifest")
    if path.suffix != ".indexes" or not manifest_path.is_file():
        return None
    try:
        read = read_aiven_manifest(manifest_path, limit=limit)
        if read.manifest.encryption_key_id is not None:
            return AivenIndexes(str(manifest_path), (), finding(
                "remote_segment_encrypted", str(path),
                "an Aiven tiered-storage object encrypted by the plugin (each index AES-GCM "
                "under the segment's data key, wrapped by the key pair "
                f"{quoted(read.manifest.encryption_key_id)}): reading it needs that private key, "
                "which segtools does not have and does not guess"))
        end = max((pos + n for _, pos, n in read.indexes), default=0)
        if end > limit:
            raise SegtoolsError(f"its manifest places indexes up to byte {end}, over "
                                "--max-decompressed-bytes")
        data = read_upto(path, end)
        if end > len(data):
            raise SegtoolsError(f"the object holds {len(data)} bytes, its manifest places "
                                f"indexes up to byte {end}")
    except (SegtoolsError, OSError) as e:
        return AivenIndexes(str(manifest_path), (),
                            finding("remote_segment_unreadable", str(path), str(e)))
    return AivenIndexes(str(manifest_path),
                        tuple((AIVEN_INDEX_SUFFIXES[name], data[pos:pos + n])
                              for name, pos, n in read.indexes), None)
