"""The ``_schemas`` topic, read as Schema Registry reads it back at start-up.

The registry (and Karapace) stores every change as one record of a compacted, one-partition
topic (``kafkastore.topic``, ``_schemas`` by default; ``KafkaStore``): keys and values are JSON
written by Jackson from the ``SchemaRegistryKey`` / ``SchemaRegistryValue`` classes of
schema-registry's ``core/.../storage/`` package. The key's ``keytype`` says what the record is:

- ``SCHEMA`` (``SchemaKey``: subject, version, magic 1) with a ``SchemaValue`` (subject,
  version, id, ``schemaType`` absent for Avro, references, schema, deleted): a registration,
  a soft delete (the same key again with ``deleted: true``), or with a null value a hard
  delete (``KafkaStoreMessageHandler`` drops the version);
- ``CONFIG`` / ``MODE`` (subject null for the global setting): compatibility level, mode;
- ``DELETE_SUBJECT`` (``DeleteSubjectValue``: subject, version): every version of the subject
  up to ``version`` soft-deleted; ``CLEAR_SUBJECT``: a hard-deleted subject's cleanup;
- ``NOOP``: written by the leader to find the end of the log; nothing to replay.

Replaying keeps the history, not only the last state: the first record of a version gives its
registration time, later ones its deleted flag. The rows come from the partition reader in
this module's second half, or from Spark rows: the replay itself opens nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.model import Batch, Record
from segtools.payloads.schemas import (
    AVRO,
    SCHEMA_TYPES,
    ConfigChange,
    RegisteredSchema,
    SchemaReference,
    Schemas,
)
from segtools.storage.location import as_path
from segtools.storage.partition import PartitionDir, PartitionState, load_partition_dir
from segtools.storage.segment import Segment, unreadable

#: The registry's default store topic (``kafkastore.topic``), Karapace's too.
SCHEMAS_TOPIC = "_schemas"


@dataclass(frozen=True, slots=True)
class StoreRecord:
    """One record of the store topic: what the replay needs of it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


class _Undecodable(ValueError):
    pass


def _json_object(data: bytes | None, what: str) -> dict | None:
    if data is None:
        return None
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise _Undecodable(f"{what} is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise _Undecodable(f"{what} is not a JSON object")
    return obj


def _is_int32(value) -> bool:
    """An id or a version as the registry's records hold them: Java ``Integer`` fields
    (``SchemaKey``, ``SchemaValue``), which Jackson does not fill from a bool, a fraction or a
    number past 32 bits; the registry's reader skips such a record, and so does segtools."""
    return isinstance(value, int) and not isinstance(value, bool) and \
        -(1 << 31) <= value < (1 << 31)


def _reference(obj) -> SchemaReference:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or \
            not isinstance(obj.get("subject"), str) or not _is_int32(obj.get("version")):
        raise _Undecodable("a reference without name, subject and version")
    return SchemaReference(obj["name"], obj["subject"], obj["version"])


def _schema_value(obj: dict, record: StoreRecord) -> RegisteredSchema:
    subject, version, schema_id = obj.get("subject"), obj.get("version"), obj.get("id")
    schema = obj.get("schema")
    if not isinstance(subject, str) or not _is_int32(version) or \
            not _is_int32(schema_id) or not isinstance(schema, str):
        raise _Undecodable("a SCHEMA value without subject, version, id (32-bit integers) "
                           "and schema")
    schema_type = obj.get("schemaType") or AVRO
    if schema_type not in SCHEMA_TYPES:
        raise _Undecodable(f"unknown schemaType {schema_type!r}")
    refs = obj.get("references") or []
    if not isinstance(refs, list):
        raise _Undecodable("references is not a list")
    deleted = obj.get("deleted", False)
    if not isinstance(deleted, bool | None):  # SchemaValue.deleted is a Boolean
        raise _Undecodable(f"deleted is {deleted!r}, not true or false")
    return RegisteredSchema(schema_id, subject, version, schema_type, schema,
                            tuple(_reference(r) for r in refs), bool(deleted),
                            record.timestamp, record.offset)


class _Replay:
    """The registry's in-memory store, rebuilt record by record (``KafkaStoreMessageHandler``)."""

    def __init__(self, source: str):
        self.live: dict[tuple[str, int], RegisteredSchema] = {}
        self.removed: list[RegisteredSchema] = []
        self.configs: list[ConfigChange] = []
        self.source = source

    def take(self, record: StoreRecord) -> None:
        key = _json_object(record.key, "key")
        if key is None:
            raise _Undecodable("a null key")
        keytype = key.get("keytype")
        value = _json_object(record.value, "value")
        if keytype == "SCHEMA":
            self._schema(key, value, record)
        elif keytype in ("CONFIG", "MODE"):
            subject = key.get("subject")
            field = "compatibilityLevel" if keytype == "CONFIG" else "mode"
            setting = None if value is None else value.get(field)
            if setting is not None and not isinstance(setting, str):  # an enum's name
                raise _Undecodable(f"a {keytype} value whose {field} is not a name")
            self.configs.append(ConfigChange("compatibility" if keytype == "CONFIG" else "mode",
                                             subject if isinstance(subject, str) else None,
                                             setting if isinstance(setting, str) else None,
                                             record.timestamp, record.offset))
        elif keytype == "DELETE_SUBJECT":
            self._delete_subject(value, record)
        elif keytype not in ("CLEAR_SUBJECT", "NOOP", "CONTEXT", "DELETE_CONTEXT"):
            raise _Undecodable(f"unknown keytype {keytype!r}")

    def _schema(self, key: dict, value: dict | None, record: StoreRecord) -> None:
        subject, version = key.get("subject"), key.get("version")
        if not isinstance(subject, str) or not _is_int32(version):
            raise _Undecodable("a SCHEMA key without subject and version")
        if value is None:  # a hard delete: the registry forgets the version
            gone = self.live.pop((subject, version), None)
            if gone is not None:
                self.removed.append(replace(gone, removed_ms=record.timestamp))
            return
        parsed = _schema_value(value, record)
        first = self.live.get((subject, version))
        # a soft delete or a rewrite keeps when the version was registered, and a soft delete
        # is dated by the first record that said it
        deleted_ms = None
        if parsed.deleted:
            deleted_ms = first.deleted_ms if first is not None and first.deleted \
                else record.timestamp
        if first is not None:
            parsed = replace(parsed, registered_ms=first.registered_ms, offset=first.offset)
        self.live[(subject, version)] = replace(parsed, deleted_ms=deleted_ms)

    def _delete_subject(self, value: dict | None, record: StoreRecord) -> None:
        if value is None:
            return
        subject, upto = value.get("subject"), value.get("version")
        if not isinstance(subject, str) or not _is_int32(upto):
            raise _Undecodable("a DELETE_SUBJECT value without subject and version")
        for (s, v), schema in list(self.live.items()):
            if s == subject and v <= upto and not schema.deleted:
                self.live[(s, v)] = replace(schema, deleted=True, deleted_ms=record.timestamp)

    def result(self) -> Schemas:
        return Schemas(list(self.live.values()), self.removed, self.configs, self.source)


def replay(records: Iterable[StoreRecord], source: str, findings: list[Finding]) -> Schemas:
    """The registry's state and history after ``records`` (in offset order); a record that is
    not the registry's JSON is a ``schemas_record_undecodable`` finding and is passed over, as
    the registry's reader logs and skips it."""
    state = _Replay(source)
    for record in records:
        try:
            state.take(record)
        except _Undecodable as e:
            findings.append(finding("schemas_record_undecodable", source,
                                    f"{SCHEMAS_TOPIC} record: {e}", offset=record.offset))
    return state.result()


# --------------------------------------------------------------------------- reading it


def schemas_partitions(partitions: Iterable[PartitionDir]) -> list[PartitionDir]:
    """The live partitions of the store topic among ``partitions``."""
    return [p for p in partitions if p.name is not None and p.name.topic == SCHEMAS_TOPIC
            and p.name.state is PartitionState.LIVE]


def beside(log_dir: Path) -> list[PartitionDir]:
    """The store topic's partitions in a log dir, when only some of its partitions were
    named (``dump orders-0`` still finds ``_schemas-0`` next to it)."""
    found = []
    for path in sorted(as_path(log_dir).glob(f"{SCHEMAS_TOPIC}-*")):
        if path.is_dir():
            found.append(load_partition_dir(path))
    return schemas_partitions(found)


def store_records(partition: PartitionDir, findings: list[Finding]) -> Iterator[StoreRecord]:
    """Every data record of a store partition, oldest first."""
    for _, r in data_records(partition, findings):
        yield StoreRecord(r.offset, r.timestamp, r.key, r.value)


def data_records(partition: PartitionDir, findings: list[Finding], *,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT) -> Iterator[tuple[Batch, Record]]:
    """Every data record of a partition with its batch, oldest first (control batches
    skipped); what cannot be read is a finding and the read goes on. ``limit`` caps what one
    batch may inflate to."""
    for files in partition.segments:
        try:
            segment = Segment.open(files, decompress_limit=limit)
        except SegtoolsError as e:
            findings.append(unreadable(str(files.log), e))
            continue
        with segment:
            for chunk in segment.walk():
                findings.extend(chunk.findings)
                for br in segment.batch_records(chunk.table):
                    if br.finding is not None:
                        findings.append(br.finding)
                    if br.batch.is_control:
                        continue
                    for r in br.records:
                        yield br.batch, r


def read_schemas(partitions: Sequence[PartitionDir], findings: list[Finding]) -> Schemas:
    """The registry's history from the store partitions found (normally just ``_schemas-0``)."""
    out = Schemas(source=", ".join(str(p.path) for p in partitions))
    for p in partitions:
        out.extend(replay(store_records(p, findings), str(p.path), findings))
    return out
