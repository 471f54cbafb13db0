"""Text checkpoints and small metadata files of a log dir and of a partition dir.

Every parser takes the file's text and its path and returns ``(value, findings)``. Where Kafka
throws (``CheckpointFile``'s ``IOException``, ``PartitionMetadataReadBuffer``), segtools reports
a finding and keeps whatever entries it could read, because an operator diagnosing a broker
that will not start needs to see what is in the file, not a stack trace.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from segtools.findings import Finding, finding
from segtools.text import quoted

T = TypeVar("T")

CHECKPOINT_VERSION = 0  # every offset / epoch checkpoint (OffsetCheckpointFile, LeaderEpoch...)
PARTITION_METADATA_VERSION = 0

# java.util.regex \s; Python's str.split() would also split on Unicode spaces.
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # BufferedReader.readLine
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """``EpochEntry``: leader ``epoch`` started at ``start_offset``."""

    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """``partition.metadata``: the topic id, which survives a truncated directory name."""

    version: int
    topic_id: str  # Uuid.toString(): 22 chars of unpadded base64url

    @property
    def topic_id_hex(self) -> str:
        return uuid_bytes(self.topic_id).hex()


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """``meta.properties``: v0 (ZooKeeper: ``broker.id``) or v1 (KRaft: ``node.id``)."""

    version: int
    node_id: int | None  # broker.id for v0, node.id for v1
    cluster_id: str | None
    directory_id: str | None
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CleanShutdown:
    """``.kafka_cleanshutdown``: present after a clean shutdown; JSON since 3.7, empty before."""

    version: int | None
    broker_epoch: int | None


def _java_int(text: str, bounds: tuple[int, int]) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, ASCII digits, in range."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def _lines(text: str) -> Iterator[tuple[int, int, str]]:
    """(1-based line number, byte position, line) as ``BufferedReader.readLine`` yields them."""
    pos = 0
    byte_pos = 0
    number = 0
    for match in _LINE_BREAK.finditer(text):
        number += 1
        yield number, byte_pos, text[pos:match.start()]
        byte_pos += len(text[pos:match.end()].encode())
        pos = match.end()
    if pos < len(text):
        yield number + 1, byte_pos, text[pos:]


def _java_split(line: str) -> list[str]:
    """``Pattern.split``: leading empty field kept, trailing empty fields dropped."""
    fields = _JAVA_WHITESPACE.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _int_line(lines: Iterator[tuple[int, int, str]]
              ) -> tuple[int, int, str, int | None] | None:
    """The next header line (number, byte position, text) and the int32 it holds (None: not
    one); None past the end of the file."""
    read = next(lines, None)
    return None if read is None else (*read, _java_int(read[2], _INT32))


def parse_checkpoint(text: str, path: str, entry: Callable[[list[str]], T | None],
                     shape: str) -> tuple[list[T], list[Finding]]:
    """``CheckpointFile.CheckpointReadBuffer.read``: version line, count line, entries.

    An empty file, or one with only the version line, has no entries (as in Kafka).
    """
    findings: list[Finding] = []
    lines = iter(_lines(text))

    def bad(code: str, number: int, pos: int, message: str) -> None:
        findings.append(finding(code, path, f"line {number}: {message}",
                                position=pos))

    first = _int_line(lines)
    if first is None:
        return [], findings
    number, pos, line, version = first
    if version != CHECKPOINT_VERSION:
        bad("checkpoint_bad_version", number, pos,
            f"version line {quoted(line)} is not an integer" if version is None else
            f"unrecognized version {version} (expected {CHECKPOINT_VERSION}); Kafka refuses "
            f"the file")
        return [], findings
    second = _int_line(lines)
    if second is None:
        return [], findings
    count_number, count_pos, line, expected = second
    if expected is None:
        bad("checkpoint_bad_count", count_number, count_pos,
            f"entry count line {quoted(line)} is not an integer")
    entries: list[T] = []
    seen = 0
    for number, pos, line in lines:
        seen += 1
        value = entry(_java_split(line))
        if value is None:
            bad("checkpoint_bad_entry", number, pos,
                f"malformed entry {quoted(line)} (expected '{shape}')")
        else:
            entries.append(value)
    if expected is not None and expected != seen:  # malformed lines are reported above
        bad("checkpoint_count_mismatch", count_number, count_pos,
            f"expected {expected} entries but found {seen} entry lines")
    return entries, findings


def _offset_entry(fields: list[str]) -> tuple[TopicPartition, int] | None:
    if len(fields) != 3 or not fields[0]:
        return None
    partition = _java_int(fields[1], _INT32)
    offset = _java_int(fields[2], _INT64)
    if partition is None or offset is None:
        return None
    return (fields[0], partition), offset


def _epoch_entry(fields: list[str]) -> EpochEntry | None:
    if len(fields) != 2:
        return None
    epoch = _java_int(fields[0], _INT32)
    offset = _java_int(fields[1], _INT64)
    return None if epoch is None or offset is None else EpochEntry(epoch, offset)


def parse_offset_checkpoint(text: str, path: str
                            ) -> tuple[dict[TopicPartition, int], list[Finding]]:
    """``OffsetCheckpointFile``: ``topic partition offset`` per line.

    Used by recovery-point-offset-checkpoint, replication-offset-checkpoint (high watermarks),
    log-start-offset-checkpoint and cleaner-offset-checkpoint. A repeated partition keeps its
    last value, as Kafka's map does, and is reported.
    """
    pairs, findings = parse_checkpoint(text, path, _offset_entry, "topic partition offset")
    result: dict[TopicPartition, int] = {}
    for tp, offset in pairs:
        if tp in result:
            findings.append(finding("checkpoint_duplicate_entry", path,
                                    f"{tp[0]}-{tp[1]} appears more than once; the last wins"))
        result[tp] = offset
    return result, findings


def parse_leader_epoch_checkpoint(text: str, path: str
                                  ) -> tuple[list[EpochEntry], list[Finding]]:
    """``LeaderEpochCheckpointFile``: ``epoch startOffset`` per line, in epoch order."""
    entries, findings = parse_checkpoint(text, path, _epoch_entry, "epoch startOffset")
    for before, after in itertools.pairwise(entries):
        if after.epoch <= before.epoch or after.start_offset < before.start_offset:
            findings.append(finding(
                "leader_epoch_not_increasing", path,
                f"epoch {after.epoch}@{after.start_offset} does not follow "
                f"{before.epoch}@{before.start_offset} (LeaderEpochFileCache keeps both "
                f"increasing)", offset=after.start_offset))
            break
    return entries, findings


def uuid_bytes(text: str) -> bytes:
    """``Uuid.fromString``: base64url (padding optional) decoding to exactly 16 bytes."""
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]+={0,2}", text):
        raise ValueError(f"{quoted(text)} is not a base64url UUID")
    try:
        raw = base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    except binascii.Error as e:
        raise ValueError(f"{quoted(text)} is not a base64url UUID") from e
    if len(raw) != 16:
        raise ValueError(f"{quoted(text)} decodes to {len(raw)} bytes, not 16")
    return raw


def parse_partition_metadata(text: str, path: str
                             ) -> tuple[PartitionMetadata | None, list[Finding]]:
    """``PartitionMetadataReadBuffer.read``: ``version: 0`` then ``topic_id: <uuid>``,
    split on ``:\\s+``; the all-zero UUID is rejected."""
    findings: list[Finding] = []
    lines = list(_lines(text))

    def bad(number: int, message: str, code: str = "partition_metadata_malformed") -> None:
        pos = lines[number - 1][1] if number <= len(lines) else len(text.encode())
        findings.append(finding(code, path, f"line {number}: {message}",
                                position=pos))

    def field(number: int, key: str) -> str | None:
        if number > len(lines):
            bad(number, f"missing the '{key}: ...' line")
            return None
        parts = re.split(r":[ \t\n\x0b\f\r]+", lines[number - 1][2])
        if len(parts) != 2:
            bad(number, f"{quoted(lines[number - 1][2])} is not '{key}: <value>'")
            return None
        if parts[0] != key:
            findings.append(finding("partition_metadata_unexpected_key", path,
                                    f"line {number}: key {quoted(parts[0])}, expected {key!r} "
                                    f"(Kafka ignores the key)", position=lines[number - 1][1]))
        return parts[1]

    raw_version = field(1, "version")
    if raw_version is None:
        return None, findings
    version = _java_int(raw_version, _INT32)
    if version != PARTITION_METADATA_VERSION:
        bad(1, f"unrecognized version {quoted(raw_version)}", "partition_metadata_bad_version")
        return None, findings
    topic_id = field(2, "topic_id")
    if topic_id is None:
        return None, findings
    try:
        raw = uuid_bytes(topic_id)
    except ValueError as e:
        bad(2, str(e), "partition_metadata_bad_topic_id")
        return None, findings
    if raw == bytes(16):
        bad(2, "the all-zero topic id is invalid", "partition_metadata_bad_topic_id")
        return None, findings
    return PartitionMetadata(version, topic_id), findings


_PROP_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_property_lines(text: str) -> Iterator[tuple[int, str]]:
    """``Properties.load`` line reader: comments, blank lines, backslash continuations."""
    pending: list[str] = []
    start = 0
    for number, _, raw in _lines(text):
        line = raw.lstrip(" \t\f") if pending else raw
        if not pending:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def _unescape_property(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2: i + 6]):
                out.append(chr(int(text[i + 2: i + 6], 16)))
                i += 6
                continue
            out.append(_PROP_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_java_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load``: ``key=value``, ``key:value`` or ``key value``."""
    result: dict[str, str] = {}
    for _, line in _logical_property_lines(text):
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):  # one separator, possibly surrounded by whitespace
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape_property(key)] = _unescape_property(rest)
    return result


def parse_meta_properties(text: str, path: str
                          ) -> tuple[MetaProperties | None, list[Finding]]:
    """``MetaProperties.Builder(Properties)``: version defaults to 0; v0 may carry
    ``broker.id``; v1 requires ``node.id`` and ``cluster.id``; ``directory.id`` is a Uuid."""
    findings: list[Finding] = []
    props = parse_java_properties(text)

    def bad(message: str, code: str = "meta_properties_invalid") -> None:
        findings.append(finding(code, path, message))

    version = _java_int(props.get("version", "0"), _INT32)
    if version not in (0, 1):
        bad(f"unknown meta.properties version {quoted(str(props.get('version')))}",
            "meta_properties_bad_version")
        return None, findings
    id_key = "broker.id" if version == 0 else "node.id"
    node_id = None
    if id_key in props:
        node_id = _java_int(props[id_key], _INT32)
        if node_id is None:
            bad(f"{id_key} {quoted(props[id_key])} is not an integer")
    elif version == 1:
        bad("KRaft (version=1) meta.properties has no node.id")
    cluster_id = props.get("cluster.id")
    if version == 1 and cluster_id is None:
        bad("KRaft (version=1) meta.properties has no cluster.id")
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            uuid_bytes(directory_id)
        except ValueError as e:
            bad(f"directory.id: {e}")
    return MetaProperties(version, node_id, cluster_id, directory_id,
                          tuple(sorted(props.items()))), findings


def parse_clean_shutdown(text: str, path: str) -> tuple[CleanShutdown, list[Finding]]:
    """``CleanShutdownFileHandler``: empty (before 3.7) or ``{"version":0,"brokerEpoch":N}``."""
    if not text.strip():
        return CleanShutdown(None, None), []
    try:
        data = json.loads(text)
    except ValueError as e:
        return CleanShutdown(None, None), [finding(
            "clean_shutdown_malformed", path,
            f"not the JSON Kafka writes: {e}")]
    if not isinstance(data, dict):
        return CleanShutdown(None, None), [finding(
            "clean_shutdown_malformed", path, "JSON is not an object")]
    version, epoch = data.get("version"), data.get("brokerEpoch")
    findings = []
    if version != 0 or not isinstance(epoch, int):
        findings.append(finding("clean_shutdown_malformed", path,
                                f"unexpected content {quoted(json.dumps(data))}"))
    return CleanShutdown(version if isinstance(version, int) else None,
                         epoch if isinstance(epoch, int) else None), findings
