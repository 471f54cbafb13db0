"""Where a remote log segment's files are in a remote store, and reading them.

The bytes a ``RemoteStorageManager`` stores are the broker's own segment files (possibly cut
into chunks, compressed or encrypted), so once found and put back together they are read with
the same decoder as a log dir's. The layout is the plugin's choice; segtools knows two:

- Kafka's reference plugin, ``LocalTieredStorage`` (``storage/src/test/.../remote/storage/``,
  ``RemoteLogSegmentFileset`` and ``RemoteTopicPartitionDirectory``): under its ``dir``
  setting, ``kafka-tiered-storage/<topic>-<partition>-<topic id>/<20-digit start
  offset>-<segment id>`` + ``.log``, ``.index``, ``.timeindex``, ``.txnindex`` (only when the
  segment has one), ``.leader_epoch_checkpoint``, ``.snapshot``, written in that order by
  ``RemoteLogSegmentFileset.copy``, so a copy that stopped part-way leaves a prefix of that
  list. A copy that failed is removed (``fileset.delete()``), and so is a deleted segment.
- Aiven-Open's ``tiered-storage-for-apache-kafka`` (``ObjectKeyFactory``,
  ``KafkaRemoteStorageManager``, ``SegmentManifestV1``, ``*ChunkIndex``,
  ``ChunkSizesBinaryCodec``, ``transform/*``): objects ``<prefix><topic>-<topic id>/<partition>/
  <20-digit start offset>-<segment id>`` + ``.log`` (the segment in chunks of
  ``originalChunkSize`` bytes, each a zstd frame when ``compression`` is on, each AES-GCM
  encrypted with its IV in front when ``encryption`` is set), ``.indexes`` (the indexes one
  after the other) and ``.rsm-manifest`` (JSON: the chunk index, ``fixed`` or ``variable``,
  the latter as base64 of a zstd frame of the binary chunk sizes; the index positions;
  ``compression``; ``encryption`` with the data key wrapped by the plugin's key pair). A store
  given as a directory stands for the bucket (a prefix ending in ``/`` is a directory in it).
  Encrypted segments are not read: that needs the plugin's private key, and segtools says so
  rather than guess.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import walk
from segtools.decode.source import BufferSource
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.storage.location import RemotePath, resolve
from segtools.storage.partition import SegmentFiles
from segtools.storage.segment import Segment, unreadable
from segtools.storage.small_files import read_upto
from segtools.text import quoted

#: ``LocalTieredStorage.ROOT_STORAGE_DIR_NAME``: the directory made under its ``dir`` setting.
LOCAL_TIERED_STORAGE_DIR = "kafka-tiered-storage"
#: ``RemoteLogSegmentFileType``: each file of a copied segment, in the order ``copy`` writes
#: them, and whether it may be absent.
FILE_TYPES: tuple[tuple[str, str, bool], ...] = (
    ("segment", ".log", False), ("offset_index", ".index", False),
    ("time_index", ".timeindex", False), ("transaction_index", ".txnindex", True),
    ("leader_epoch_checkpoint", ".leader_epoch_checkpoint", False),
    ("producer_snapshot", ".snapshot", False))


_AIVEN_PARTITION = re.compile(r"\d+")
#: A manifest larger than this is not a manifest (a real one is a few hundred bytes).
MANIFEST_CAP = 16 * 1024 * 1024


def local_tiered_storage_root(path: str | os.PathLike[str],
                              storage_options: Mapping[str, Any] | None = None
                              ) -> Path | RemotePath:
    """The storage directory: ``path`` itself, or its ``kafka-tiered-storage`` (what
    ``LocalTieredStorage`` creates under the ``dir`` it is given). ``path`` may be any
    location (``s3://bucket/tiered``, an archive): a remote store's objects are read through
    the same seam as the log dirs."""
    root = resolve(path, storage_options)
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


def _content(walked, size: int) -> RemoteSegmentContent:
    findings: list[Finding] = []
    batches = records = 0
    first = last = None
    epochs: set[int] = set()
    for chunk in walked:
        findings.extend(chunk.findings)
        t = chunk.table
        if not len(t.base_offset):
            continue
        batches += len(t.base_offset)
        records += int((t.last_offset - t.base_offset + 1).sum())
        first = int(t.base_offset[0]) if first is None else first
        last = int(t.last_offset[-1])
        epochs.update(int(e) for e in set(t.leader_epoch.tolist()) if e >= 0)
    return RemoteSegmentContent(batches, records, first, last, tuple(sorted(epochs)), size,
                                tuple(findings))


def read_segment(path: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> RemoteSegmentContent:
    """Walk a remote ``.log`` as any segment: offsets, counts, leader epochs, findings."""
    try:
        segment = Segment(path, decompress_limit=limit)
    except SegtoolsError as e:
        return RemoteSegmentContent(0, 0, None, None, (), 0, (unreadable(str(path), e),))
    with segment:
        return _content(segment.walk(verify_crc=True), path.stat().st_size)


def read_bytes(data: bytes, path: str, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
               ) -> RemoteSegmentContent:
    """The same walk over a segment put back together in memory."""
    return _content(walk.walk(BufferSource(data), path=path, verify_crc=True, limit=limit),
                    len(data))


def listed_segment_ids(root: Path, topic: str, partition: int, topic_id: str
                       ) -> Sequence[str]:
    """The segment ids with a ``.log`` in a partition's directory of the store."""
    directory = root / f"{topic}-{partition}-{topic_id}"
    if not directory.is_dir():
        return ()
    return sorted(p.name[21:-4] for p in directory.glob("*.log") if len(p.name) > 25)


# --------------------------------------------------------------------------- the two layouts


class LocalTieredStorage:
    """Kafka's ``LocalTieredStorage`` under ``root`` (module doc)."""

    layout = "LocalTieredStorage"

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self, topic: str, partition: int, topic_id: str, start_offset: int,
              segment_id: str) -> RemoteSegmentFiles:
        return segment_files(self.root, topic, partition, topic_id, start_offset, segment_id)

    @staticmethod
    def as_log_segment(files: RemoteSegmentFiles, start_offset: int) -> SegmentFiles | None:
        """A copied segment as the files a log dir's sealed segment is read from (the one
        place a remote segment becomes :class:`SegmentFiles`), or None without its ``.log``."""
        if files.log is None:
            return None
        return SegmentFiles(base_offset=start_offset, log=files.log,
                            log_size=files.log.stat().st_size,
                            index=files.found.get("offset_index"),
                            timeindex=files.found.get("time_index"),
                            txnindex=files.found.get("transaction_index"), sealed=True)

    def content(self, files: RemoteSegmentFiles, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                ) -> RemoteSegmentContent | None:
        return read_segment(files.log, limit=limit) if files.log is not None else None

    def listed(self, topic: str, partition: int, topic_id: str) -> Sequence[str]:
        return listed_segment_ids(self.root, topic, partition, topic_id)

    def partition_dir(self, topic: str, partition: int, topic_id: str) -> Path:
        return self.root / f"{topic}-{partition}-{topic_id}"


#: Aiven's objects of one segment (``ObjectKeyFactory.Suffix``).
AIVEN_SUFFIXES = (("segment", ".log"), ("indexes", ".indexes"), ("manifest", ".rsm-manifest"))


@dataclass(frozen=True, slots=True)
class AivenManifest:
    """What ``SegmentManifestV1`` says about a segment's ``.log`` object."""

    original_chunk_size: int
    original_file_size: int
    transformed_sizes: tuple[int, ...]
    compression: bool
    encryption_key_id: str | None  # the key pair that wraps the data key; None: not encrypted


def _chunk_sizes(encoded: str, limit: int) -> list[int]:
    """``TransformedChunksDeserializer``: base64 of a zstd frame of ``ChunkSizesBinaryCodec``:
    count, then (count > 1) base, bytes per value, each value but the last as that many
    big-endian bytes above the base, and the last value in full."""
    raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(encoded, validate=True),
                                                  max_output_size=limit)
    (count,) = struct.unpack_from(">i", raw, 0)
    if count == 0:
        return []
    if count == 1:
        return [struct.unpack_from(">i", raw, 4)[0]]
    base, width = struct.unpack_from(">ib", raw, 4)
    if not 1 <= width <= 4 or len(raw) != 9 + (count - 1) * width + 4:
        raise ValueError("chunk sizes do not add up")
    values = [base + int.from_bytes(raw[9 + i * width:9 + (i + 1) * width], "big")
              for i in range(count - 1)]
    return [*values, struct.unpack_from(">i", raw, 9 + (count - 1) * width)[0]]


def parse_manifest(data: bytes, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> AivenManifest:
    """A ``.rsm-manifest`` (version 1); anything else is refused with the reason."""
    try:
        doc = json.loads(data)
        if str(doc.get("version")) != "1":
            raise ValueError(f"manifest version {quoted(str(doc.get('version')))} is not 1")
        index = doc["chunkIndex"]
        chunk, size = int(index["originalChunkSize"]), int(index["originalFileSize"])
        if chunk <= 0 or size < 0:
            raise ValueError("chunk or file size out of range")
        count = -(-size // chunk)
        if index["type"] == "fixed":
            sizes = [int(index["transformedChunkSize"])] * max(count - 1, 0) + \
                ([int(index["finalTransformedChunkSize"])] if count else [])
        elif index["type"] == "variable":
            sizes = _chunk_sizes(index["transformedChunks"], limit)
        else:
            raise ValueError(f"chunk index type {quoted(str(index['type']))}")
        if len(sizes) != count or any(n < 0 for n in sizes):
            raise ValueError(f"{len(sizes)} chunk sizes for {count} chunks")
        encryption = doc.get("encryption")
        key_id = None
        if encryption is not None:
            key_id = str(encryption.get("dataKey", "")).partition(":")[0] or "unnamed"
        return AivenManifest(chunk, size, tuple(sizes), bool(doc["compression"]), key_id)
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error, struct.error,
            zstandard.ZstdError) as e:
        raise SegtoolsError(f"not a readable segment manifest: {e}") from None


def assemble(manifest: AivenManifest, data: bytes) -> bytes:
    """The original segment from its ``.log`` object: each chunk cut out by the chunk index and,
    with compression, decompressed (no larger than ``originalChunkSize``)."""
    if sum(manifest.transformed_sizes) != len(data):
        raise SegtoolsError(f"the .log object holds {len(data)} bytes, its manifest's chunks "
                            f"{sum(manifest.transformed_sizes)}")
    parts, pos = [], 0
    for n in manifest.transformed_sizes:
        piece = data[pos:pos + n]
        pos += n
        if manifest.compression:
            try:
                piece = zstandard.ZstdDecompressor().decompress(
                    piece, max_output_size=manifest.original_chunk_size)
            except zstandard.ZstdError as e:
                raise SegtoolsError(f"a chunk does not decompress: {e}") from None
        parts.append(piece)
    out = b"".join(parts)
    if len(out) != manifest.original_file_size:
        raise SegtoolsError(f"the chunks make {len(out)} bytes, the manifest says "
                            f"{manifest.original_file_size}")
    return out


class AivenStore:
    """Aiven-Open's tiered-storage-for-apache-kafka objects under ``root`` (module doc)."""

    layout = "Aiven tiered-storage-for-apache-kafka"

    def __init__(self, root: Path) -> None:
        self.root = root

    def partition_dir(self, topic: str, partition: int, topic_id: str) -> Path:
        return self.root / f"{topic}-{topic_id}" / str(partition)

    def files(self, topic: str, partition: int, topic_id: str, start_offset: int,
              segment_id: str) -> RemoteSegmentFiles:
        directory = self.partition_dir(topic, partition, topic_id)
        stem = f"{start_offset:020d}-{segment_id}"
        found = {kind: directory / (stem + suffix) for kind, suffix in AIVEN_SUFFIXES
                 if (directory / (stem + suffix)).is_file()}
        missing = tuple(kind for kind, _ in AIVEN_SUFFIXES if kind not in found)
        return RemoteSegmentFiles(segment_id, directory, found, missing)

    def content(self, files: RemoteSegmentFiles, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                ) -> RemoteSegmentContent | None:
        log, manifest_path = files.found.get("segment"), files.found.get("manifest")
        if log is None or manifest_path is None:
            return None
        data, note = aiven_segment_bytes(log, manifest_path, limit=limit)
        if data is None:
            encrypted = note.code == "remote_segment_encrypted"
            return RemoteSegmentContent(0, 0, None, None, (),
                                        _size(log) if encrypted else 0, (note,))
        return read_bytes(data, str(log), limit=limit)

    def listed(self, topic: str, partition: int, topic_id: str) -> Sequence[str]:
        directory = self.partition_dir(topic, partition, topic_id)
        if not directory.is_dir():
            return ()
        return sorted(p.name[21:-len(".rsm-manifest")]
                      for p in directory.glob("*.rsm-manifest") if len(p.name) > 34)


RemoteStore = LocalTieredStorage | AivenStore


#: Files only a broker's log dir holds: a log dir given as a store is said to be one.
_LOG_DIR_FILES = ("meta.properties", "recovery-point-offset-checkpoint",
                  "replication-offset-checkpoint")
#: A LocalTieredStorage partition directory: ``<topic>-<partition>-<22-character topic id>``.
_LTS_PARTITION = re.compile(r".+-\d+-[A-Za-z0-9_-]{22}")


def aiven_segment_bytes(log: Path, manifest_path: Path, *,
                        limit: int = DEFAULT_DECOMPRESS_LIMIT) -> tuple[bytes | None,
                                                                         Finding | None]:
    """The segment an Aiven ``.log`` object holds, put back together from its chunks per its
    ``.rsm-manifest``; or None and the finding that says why not: encrypted (reading needs
    the plugin's private key), or a manifest or chunks that do not add up."""
    try:
        manifest = parse_manifest(read_manifest(manifest_path), limit=limit)
        if manifest.encryption_key_id is not None:
            return None, finding(
                "remote_segment_encrypted", str(log),
                "an Aiven tiered-storage object encrypted by the plugin (AES-GCM chunks; the "
                f"data key is wrapped by the key pair {quoted(manifest.encryption_key_id)}): "
                "reading "
                "it needs that private key, which segtools does not have and does not guess")
        if manifest.original_file_size > limit:
            raise SegtoolsError(f"the segment is {manifest.original_file_size} bytes, over "
                                "--max-decompressed-bytes")
        chunks = sum(manifest.transformed_sizes)
        return assemble(manifest, read_upto(log, chunks + 1)), None
    except (SegtoolsError, OSError, ValueError) as e:
        return None, finding("remote_segment_unreadable", str(log), str(e))


def read_manifest(path: Path) -> bytes:
    """A local ``.rsm-manifest``, read as every file of a tree is (:func:`read_upto`: a link
    is refused, whoever wrote the store could point one at a root-only file), and refused
    above :data:`MANIFEST_CAP`."""
    data = read_upto(path, MANIFEST_CAP + 1)
    if len(data) > MANIFEST_CAP:
        raise SegtoolsError("too large to be a segment manifest", path=str(path))
    return data


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def segment_store(path: str | os.PathLike[str],
                  storage_options: Mapping[str, Any] | None = None) -> LocalTieredStorage:
    """A store whose remote segments are read as a log dir's segments are (``scan``, the
    planner, ``find``): only ``LocalTieredStorage`` keeps a segment as plain files; the Aiven
    plugin's chunked objects are read by ``segtools tiered`` alone."""
    store = open_store(path, storage_options)
    if not isinstance(store, LocalTieredStorage):
        raise SegtoolsError(f"remote segments are read as log segments from a "
                            f"LocalTieredStorage directory, not from {store.layout} objects",
                            path=str(path))
    return store


def open_store(path: str | os.PathLike[str],
               storage_options: Mapping[str, Any] | None = None) -> RemoteStore:
    """The store at ``path``, its layout recognised: a ``kafka-tiered-storage`` directory or
    ``<topic>-<partition>-<topic id>`` directories of segment files (LocalTieredStorage), or
    ``<topic>-<topic id>/<partition>/`` directories of ``.rsm-manifest`` objects (Aiven)."""
    root = local_tiered_storage_root(path, storage_options)
    if root.name == LOCAL_TIERED_STORAGE_DIR:
        return LocalTieredStorage(root)
    if any((root / name).is_file() for name in _LOG_DIR_FILES):
        raise SegtoolsError("a Kafka log dir, not a remote store: --remote-store takes the "
                            "LocalTieredStorage directory (its 'dir' setting) or the Aiven "
                            "plugin's bucket under its prefix", path=str(root))
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if any(q.is_dir() and _AIVEN_PARTITION.fullmatch(q.name) and
               any(q.glob("*.rsm-manifest")) for q in sub.iterdir()):
            return AivenStore(root)
        if _LTS_PARTITION.fullmatch(sub.name) and any(sub.glob("*.log")):
            return LocalTieredStorage(root)
    raise SegtoolsError("no remote segments here in a layout segtools knows (LocalTieredStorage "
                        "or Aiven tiered-storage-for-apache-kafka)", path=str(root))

