"""Replay a KRaft ``__cluster_metadata`` log: what the controller decided, and when.

The metadata log is the cluster's source of truth: topics, partitions and their leaders and
ISRs, configs, broker registrations and fencing, feature levels. Replaying its records in
offset order rebuilds the image brokers build (``MetadataDelta`` / ``PartitionRegistration
.merge`` / ``ConfigurationControlManager``) and, record by record, a timeline of changes.

Rules mirrored from Kafka:

- ``ConfigRecord`` with a null value deletes the config; a ``RemoveTopicRecord`` names only the
  topic id, so names come from the ``TopicRecord`` seen earlier, and the topic's configs go
  with it (``ReplicationControlManager.deleteTopic``).
- ``PartitionChangeRecord`` carries only what changed: a missing field is unchanged, leader -2
  is "no change", and a leader change bumps the leader epoch; every change bumps the
  partition epoch (``PartitionRegistration.merge``).
- Records between ``BeginTransactionRecord`` and ``EndTransactionRecord`` apply together;
  after ``AbortTransactionRecord`` they are discarded, and records of a transaction still
  open at the end of the log are not applied (KIP-868, ``MetadataBatchLoader``).
- If the log no longer starts at offset 0, the state before it lives in a snapshot
  (``<offset>-<epoch>.checkpoint``); the earliest snapshot that reaches the log start is
  loaded first.

Records are decoded by the compiled field programs (:mod:`segtools.decode.programs`, made
from the same declarations as the reference, which still decides every record they refuse)
and read field by field as the handlers ask. The replay keeps the image (topics, partitions,
brokers, configs: what is live) and streams the log once; the timeline's events and the
decoded records go to sinks as they happen when sinks are given (the CLI writes them out),
so memory does not grow with the log.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from segtools.analysis.partition_log import (
    LogRecord,
    file_chunks,
    file_records,
    iter_chunks,
    iter_records,
    metadata_partition,
)
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import chunks
from segtools.decode.programs import (
    ST_ERROR,
    ST_OK,
    ST_SKIP,
    Block,
    Decoder,
    cluster_metadata_family,
)
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.batch import CONTROL_TYPES
from segtools.formats.internal.cluster_metadata import (
    BY_API_KEY,
    CONFIG_RESOURCE_TYPES,
    FRAME_VERSION,
    LEADER_RECOVERY_STATES,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    MetadataRecord,
    UnknownMetadataRecordError,
    decode_frame,
    encode_frame,
)
from segtools.formats.internal.control import KRaftControlRecord, decode_kraft_control
from segtools.model import Record
from segtools.sensitive import HIDDEN, metadata_fields
from segtools.storage.location import as_path
from segtools.storage.partition import PartitionDir

_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
METADATA_VERSION_FEATURE = "metadata.version"


# ---------------------------------------------------------------------------- the image


@dataclass(slots=True)
class PartitionState:
    """``PartitionRegistration``: one partition as the controller last described it."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    directories: list[str] = field(default_factory=list)
    eligible_leader_replicas: list[int] | None = None
    last_known_elr: list[int] | None = None

    def to_json(self) -> dict:
        return {"replicas": self.replicas, "isr": self.isr, "leader": self.leader,
                "leader_epoch": self.leader_epoch, "partition_epoch": self.partition_epoch,
                "removing_replicas": self.removing_replicas,
                "adding_replicas": self.adding_replicas,
                "leader_recovery_state": LEADER_RECOVERY_STATES.get(
                    self.leader_recovery_state, self.leader_recovery_state)}


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: str
    created_offset: int
    created_timestamp: int
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerState:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    rack: str | None
    endpoints: list[str]
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: list[str]
    registered_timestamp: int

    def to_json(self) -> dict:
        return {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
                "incarnation_id": self.incarnation_id, "rack": self.rack,
                "endpoints": self.endpoints, "fenced": self.fenced,
                "in_controlled_shutdown": self.in_controlled_shutdown,
                "log_dirs": self.log_dirs, "registered_timestamp": self.registered_timestamp}


@dataclass(slots=True)
class MetadataImage:
    """The cluster as of the last applied record."""

    topics: dict[str, TopicState] = field(default_factory=dict)  # by topic id
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    controllers: dict[int, dict] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    next_producer_id: int | None = None
    raft_leader: int | None = None
    raft_epoch: int | None = None

    def topic_by_name(self, name: str) -> TopicState | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def topic_configs(self) -> dict[str, dict[str, str]]:
        """Every live topic with its config overrides (topics without any map to ``{}``),
        plus config entries of topic names the log never created (a truncated history)."""
        out = {t.name: dict(self.configs.get((TOPIC_RESOURCE, t.name), {}))
               for t in self.topics.values()}
        for (rtype, name), values in self.configs.items():
            if rtype == TOPIC_RESOURCE and values and name not in out:
                out[name] = dict(values)
        return dict(sorted(out.items()))


# ---------------------------------------------------------------------------- the timeline


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """One change the controller made (or a Raft leadership change), with where it is."""

    event: str
    offset: int
    timestamp: int
    raft_epoch: int  # the batch's partitionLeaderEpoch: the controller quorum's epoch
    details: dict

    def to_json(self) -> dict:
        return {"type": "metadata_event", "event": self.event, "offset": self.offset,
                "timestamp": self.timestamp, "raft_epoch": self.raft_epoch,
                **jsonable(self.details)}


@dataclass(frozen=True, slots=True)
class DecodedEntry:
    """One record as decoded (``--records``): a metadata record or a KRaft control record."""

    offset: int
    timestamp: int
    raft_epoch: int
    record: MetadataRecord | KRaftControlRecord

    def to_json(self) -> dict:
        rec = self.record
        if isinstance(rec, KRaftControlRecord):
            head = {"type": "control_record", "control_type": rec.control_type}
        else:
            head = {"type": "metadata_record", "api_key": rec.api_key}
        return {**head, "offset": self.offset, "timestamp": self.timestamp,
                "raft_epoch": self.raft_epoch, "record": rec.name, "version": rec.version,
                "data": jsonable(rec.data)}


@dataclass(frozen=True, slots=True)
class MetadataReplay:
    partition: Path
    image: MetadataImage
    events: tuple[MetadataEvent, ...]
    records: tuple[DecodedEntry, ...]
    findings: tuple[Finding, ...]
    records_applied: int
    noop_records: int
    snapshot: Path | None
    end_offset: int  # next offset after the last record read
    last_timestamp: int


def jsonable(value):
    """Bytes become base64 (as Kafka's JSON converters write binary fields)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


@dataclass(slots=True)
class _Position:
    offset: int
    timestamp: int
    raft_epoch: int


#: Control records that are not the controller's: transaction markers, snapshot frames.
_NOT_NARRATED = frozenset(("ABORT", "COMMIT", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"))


class _Replayer:
    """Applies records to a :class:`MetadataImage` and notes each change as an event."""

    def __init__(self, path: str, keep_records: bool, include_noop: bool,
                 on_event: Callable[[MetadataEvent], None] | None,
                 on_record: Callable[[DecodedEntry], None] | None, reveal_sensitive: bool):
        self.path = path
        self.reveal_sensitive = reveal_sensitive
        self.image = MetadataImage()
        self.events: list[MetadataEvent] = []
        self.records: list[DecodedEntry] = []
        self.on_event = on_event or self.events.append
        self.on_record = on_record or self.records.append
        self.findings: list[Finding] = []
        self.keep_records = keep_records
        self.include_noop = include_noop
        self.pending: list[tuple[_Position, MetadataRecord]] | None = None
        self.pending_name: str | None = None
        self.applied = 0
        self.noops = 0
        self.silent = False  # snapshot records: applied, not narrated
        self.end_offset = 0
        self.last_timestamp = -1
        fam = cluster_metadata_family()
        self.decoder = Decoder(fam)
        self.decoder_programs = {tv: (name, prog) for tv, (name, prog)
                                 in fam.value_programs.items()}
        self.noop_key = next(k for k, m in BY_API_KEY.items() if m.name == "NoOpRecord")

    # -- plumbing

    def emit(self, pos: _Position, event: str, **details) -> None:
        if not self.silent:
            self.on_event(MetadataEvent(event, pos.offset, pos.timestamp, pos.raft_epoch,
                                        details))

    def finding(self, code: str, message: str, offset: int) -> None:
        self.findings.append(finding(code, self.path, message, offset=offset))

    def topic_name(self, topic_id: str) -> str | None:
        topic = self.image.topics.get(topic_id)
        return topic.name if topic else None

    # -- entry points

    def control(self, pos: _Position, control_type: str, value: bytes | None) -> None:
        try:
            rec = decode_kraft_control(control_type, value)
        except SegtoolsError as e:
            self.finding("control_record_undecodable",
                         f"{control_type} control record: {e}", pos.offset)
            return
        if self.keep_records:
            self.on_record(DecodedEntry(pos.offset, pos.timestamp, pos.raft_epoch, rec))
        data = rec.data
        if control_type == "LEADER_CHANGE":
            self.image.raft_leader = data["leaderId"]
            self.image.raft_epoch = pos.raft_epoch
            self.emit(pos, "raft_leader_change", leader_id=data["leaderId"],
                      voters=[v["voterId"] for v in data["voters"]],
                      granting_voters=[v["voterId"] for v in data["grantingVoters"]])
        elif control_type == "KRAFT_VERSION":
            self.emit(pos, "kraft_version", kraft_version=data["kRaftVersion"])
        elif control_type == "KRAFT_VOTERS":
            self.emit(pos, "voters", voters=[
                {"voter_id": v["voterId"], "directory_id": v["voterDirectoryId"],
                 "endpoints": [f"{e['name']}://{e['host']}:{e['port']}" for e in v["endpoints"]]}
                for v in data["voters"]])

    def block(self, b: Block, chunk: chunks.Chunk, lo: int, skip_below: int) -> None:
        """A block of decoded records, in offset order (records below ``skip_below`` are the
        snapshot's: not read again)."""
        n = len(b)
        cols, table = chunk.columns, chunk.table
        batch = cols.batch[lo:lo + n]
        epochs = table.leader_epoch[batch].tolist()
        controls = chunks.control_types(cols, slice(lo, lo + n)).tolist()
        programs = self.decoder_programs
        # NoOpRecords (a controller writes one every metadata.max.idle.interval.ms) are only
        # counted, unless they are shown, kept or inside a metadata transaction
        counted = None if self.keep_records or self.include_noop else self.noop_key
        for i, (offset, timestamp, status, api_key, version) in enumerate(zip(
                cols.offset[lo:lo + n].tolist(), cols.timestamp[lo:lo + n].tolist(),
                b.status.tolist(), b.rtype.tolist(), b.vver.tolist(), strict=True)):
            if offset < skip_below:
                continue
            if api_key == counted and status == ST_OK and self.pending is None:
                self.noops += 1
            elif status == ST_SKIP:  # a control batch's record
                kind = "INVALID" if controls[i] < 0 else CONTROL_TYPES.get(controls[i],
                                                                           "UNKNOWN")
                if kind not in _NOT_NARRATED:
                    self.control(_Position(offset, timestamp, epochs[i]), kind,
                                 b.raw_value(i))
            elif status == ST_ERROR:
                self.refused(_Position(offset, timestamp, epochs[i]), b.raw_value(i))
            else:
                name, program = programs[(api_key, version)]
                self.metadata(_Position(offset, timestamp, epochs[i]),
                              MetadataRecord(api_key, name, version,
                                             program.materialize(b.data, b.vals[i].tolist(),
                                                                 b)))
            if not self.silent:
                self.end_offset = offset + 1
                self.last_timestamp = max(self.last_timestamp, timestamp)

    def refused(self, pos: _Position, value: bytes | None) -> None:
        """A record the programs refused: the reference decoder says why (its message is the
        finding's), or, should it read the record after all, its reading stands."""
        try:
            rec = decode_frame(value)
        except UnknownMetadataRecordError as e:
            self.finding("metadata_record_unknown_type",
                         f"{e}; skipped (a newer controller's record type)", pos.offset)
            return
        except SegtoolsError as e:
            self.finding("metadata_record_undecodable", str(e), pos.offset)
            return
        self.metadata(pos, rec)

    def metadata(self, pos: _Position, rec: MetadataRecord) -> None:
        """One record, its secrets hidden first (:func:`segtools.sensitive.metadata_fields`),
        so no event, kept record or state the replay hands out holds them."""
        shown = metadata_fields(rec.name, rec.data, reveal=self.reveal_sensitive)
        if shown is not rec.data:
            rec = MetadataRecord(rec.api_key, rec.name, rec.version, shown)
        if self.keep_records:
            self.on_record(DecodedEntry(pos.offset, pos.timestamp, pos.raft_epoch,
                                        rec))
        name = rec.name
        if name == "BeginTransactionRecord":
            if self.pending is not None:
                self.finding("metadata_transaction_nested",
                             "BeginTransactionRecord while a metadata transaction is open; "
                             "the open one's records are discarded", pos.offset)
            self.pending, self.pending_name = [], rec.data["name"]
            self.emit(pos, "transaction_begin", name=rec.data["name"])
        elif name in ("EndTransactionRecord", "AbortTransactionRecord"):
            if self.pending is None:
                self.finding("metadata_transaction_unmatched",
                             f"{name} without a BeginTransactionRecord", pos.offset)
                return
            pending, self.pending = self.pending, None
            if name == "EndTransactionRecord":
                for p, r in pending:
                    self.apply(p, r)
                self.emit(pos, "transaction_end", name=self.pending_name, records=len(pending))
            else:
                self.emit(pos, "transaction_aborted", name=self.pending_name,
                          reason=rec.data["reason"], discarded=len(pending),
                          discarded_records=[r.name for _, r in pending])
        elif self.pending is not None:
            self.pending.append((pos, rec))
        else:
            self.apply(pos, rec)

    def finish(self, end_offset: int) -> None:
        if self.pending is not None:
            self.finding("metadata_transaction_open",
                         f"metadata transaction {self.pending_name!r} has no End/Abort record "
                         f"by the end of the log; its {len(self.pending)} record(s) are not "
                         f"applied", end_offset)

    # -- applying records

    def apply(self, pos: _Position, rec: MetadataRecord) -> None:
        handler = getattr(self, "_" + rec.name, None)
        if rec.name == "NoOpRecord":
            self.noops += 1
            if self.include_noop:
                self.emit(pos, "noop")
            return
        self.applied += 1
        if handler is None:
            self.emit(pos, "record", record=rec.name, data=jsonable(rec.data))
        else:
            handler(pos, rec.data)

    def _TopicRecord(self, pos: _Position, d: dict) -> None:
        self.image.topics[d["topicId"]] = TopicState(d["name"], d["topicId"], pos.offset,
                                                     pos.timestamp)
        self.emit(pos, "topic_created", topic=d["name"], topic_id=d["topicId"])

    def _RemoveTopicRecord(self, pos: _Position, d: dict) -> None:
        topic = self.image.topics.pop(d["topicId"], None)
        if topic is None:
            self.finding("metadata_unknown_topic",
                         f"RemoveTopicRecord for unknown topic id {d['topicId']}", pos.offset)
            return
        configs = self.image.configs.pop((TOPIC_RESOURCE, topic.name), {})
        self.emit(pos, "topic_removed", topic=topic.name, topic_id=topic.topic_id,
                  partitions=len(topic.partitions), configs_removed=configs)

    def _PartitionRecord(self, pos: _Position, d: dict) -> None:
        topic = self.image.topics.get(d["topicId"])
        if topic is None:
            self.finding("metadata_unknown_topic",
                         f"PartitionRecord {d['partitionId']} for unknown topic id "
                         f"{d['topicId']}", pos.offset)
            return
        state = PartitionState(
            list(d["replicas"]), list(d["isr"]), d["leader"], d["leaderEpoch"],
            d["partitionEpoch"], list(d["removingReplicas"]), list(d["addingReplicas"]),
            d["leaderRecoveryState"], list(d["directories"]), d["eligibleLeaderReplicas"],
            d["lastKnownElr"])
        topic.partitions[d["partitionId"]] = state
        self.emit(pos, "partition_created", topic=topic.name, partition=d["partitionId"],
                  **state.to_json())

    def _PartitionChangeRecord(self, pos: _Position, d: dict) -> None:
        topic = self.image.topics.get(d["topicId"])
        state = topic.partitions.get(d["partitionId"]) if topic else None
        if state is None:
            self.finding("metadata_unknown_partition",
                         f"PartitionChangeRecord for unknown partition {d['partitionId']} of "
                         f"topic id {d['topicId']}", pos.offset)
            return
        changes: dict[str, dict] = {}

        def change(attr: str, key: str, new) -> None:
            old = getattr(state, attr)
            if new != old:
                changes[key] = {"from": old, "to": new}
            setattr(state, attr, new)

        for attr, key in (("replicas", "replicas"), ("isr", "isr"),
                          ("removing_replicas", "removingReplicas"),
                          ("adding_replicas", "addingReplicas"),
                          ("directories", "directories"),
                          ("eligible_leader_replicas", "eligibleLeaderReplicas"),
                          ("last_known_elr", "lastKnownElr")):
            if d[key] is not None:
                change(attr, attr, list(d[key]))
        if d["leader"] != NO_LEADER_CHANGE:
            change("leader", "leader", d["leader"])
            state.leader_epoch += 1
        if d["leaderRecoveryState"] != -1:
            change("leader_recovery_state", "leader_recovery_state", d["leaderRecoveryState"])
        state.partition_epoch += 1
        self.emit(pos, "partition_changed", topic=topic.name, partition=d["partitionId"],
                  leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
                  partition_epoch=state.partition_epoch, changes=changes)

    def _ConfigRecord(self, pos: _Position, d: dict) -> None:
        key = (d["resourceType"], d["resourceName"])
        configs = self.image.configs.setdefault(key, {})
        previous = configs.get(d["name"])
        resource_type = CONFIG_RESOURCE_TYPES.get(d["resourceType"], str(d["resourceType"]))
        if d["value"] is None:
            configs.pop(d["name"], None)
            self.emit(pos, "config_deleted", resource_type=resource_type,
                      resource=d["resourceName"], name=d["name"], previous=previous)
        else:
            configs[d["name"]] = d["value"]
            self.emit(pos, "config_set", resource_type=resource_type,
                      resource=d["resourceName"], name=d["name"], value=d["value"],
                      previous=previous)

    def _RegisterBrokerRecord(self, pos: _Position, d: dict) -> None:
        broker = BrokerState(
            d["brokerId"], d["brokerEpoch"], d["incarnationId"], d["rack"],
            [f"{e['name']}://{e['host']}:{e['port']}" for e in d["endPoints"]],
            d["fenced"], d["inControlledShutdown"], list(d["logDirs"]), pos.timestamp)
        self.image.brokers[d["brokerId"]] = broker
        self.emit(pos, "broker_registered", **broker.to_json(),
                  features={f["name"]: [f["minSupportedVersion"], f["maxSupportedVersion"]]
                            for f in d["features"]})

    def _UnregisterBrokerRecord(self, pos: _Position, d: dict) -> None:
        self.image.brokers.pop(d["brokerId"], None)
        self.emit(pos, "broker_unregistered", broker_id=d["brokerId"],
                  broker_epoch=d["brokerEpoch"])

    def _fence(self, pos: _Position, broker_id: int, epoch: int, fenced: bool) -> None:
        broker = self.image.brokers.get(broker_id)
        if broker is not None:
            broker.fenced = fenced
        self.emit(pos, "broker_fenced" if fenced else "broker_unfenced", broker_id=broker_id,
                  broker_epoch=epoch)

    def _FenceBrokerRecord(self, pos: _Position, d: dict) -> None:
        self._fence(pos, d["id"], d["epoch"], True)

    def _UnfenceBrokerRecord(self, pos: _Position, d: dict) -> None:
        self._fence(pos, d["id"], d["epoch"], False)

    def _BrokerRegistrationChangeRecord(self, pos: _Position, d: dict) -> None:
        """Fenced: -1 unfenced, 0 unchanged, 1 fenced (``BrokerRegistrationFencingChange``);
        InControlledShutdown: 1 = entered controlled shutdown."""
        broker_id, epoch = d["brokerId"], d["brokerEpoch"]
        if d["fenced"] in (-1, 1):
            self._fence(pos, broker_id, epoch, d["fenced"] == 1)
        broker = self.image.brokers.get(broker_id)
        if d["inControlledShutdown"] == 1:
            if broker is not None:
                broker.in_controlled_shutdown = True
            self.emit(pos, "broker_controlled_shutdown", broker_id=broker_id,
                      broker_epoch=epoch)
        if d["logDirs"]:
            if broker is not None:
                broker.log_dirs = list(d["logDirs"])
            self.emit(pos, "broker_log_dirs", broker_id=broker_id, broker_epoch=epoch,
                      log_dirs=list(d["logDirs"]))

    def _RegisterControllerRecord(self, pos: _Position, d: dict) -> None:
        endpoints = [f"{e['name']}://{e['host']}:{e['port']}" for e in d["endPoints"]]
        self.image.controllers[d["controllerId"]] = {"incarnation_id": d["incarnationId"],
                                                     "endpoints": endpoints}
        self.emit(pos, "controller_registered", controller_id=d["controllerId"],
                  incarnation_id=d["incarnationId"], endpoints=endpoints)

    def _FeatureLevelRecord(self, pos: _Position, d: dict) -> None:
        previous = self.image.features.get(d["name"])
        self.image.features[d["name"]] = d["featureLevel"]
        self.emit(pos, "feature_level", feature=d["name"], level=d["featureLevel"],
                  previous=previous)

    def _ProducerIdsRecord(self, pos: _Position, d: dict) -> None:
        self.image.next_producer_id = d["nextProducerId"]
        self.emit(pos, "producer_ids", broker_id=d["brokerId"], broker_epoch=d["brokerEpoch"],
                  next_producer_id=d["nextProducerId"])

    def _ZkMigrationStateRecord(self, pos: _Position, d: dict) -> None:
        self.emit(pos, "zk_migration_state", state=d["zkMigrationState"])


# ---------------------------------------------------------------------------- reading


def _snapshot_for(partition: PartitionDir, log_start: int) -> tuple[Path | None, int]:
    """The earliest snapshot that reaches the log start (its name is its end offset)."""
    best: tuple[int, Path] | None = None
    for path in partition.kraft_snapshots:
        m = _SNAPSHOT_NAME.fullmatch(path.name)
        if m is None:
            continue
        end = int(m.group(1))
        if end >= log_start and (best is None or end < best[0]):
            best = (end, path)
    return (best[1], best[0]) if best else (None, 0)


def timeline(path: PartitionDir | str | os.PathLike[str], *, at: int | None = None,
             keep_records: bool = False, include_noop: bool = False,
             limit: int = DEFAULT_DECOMPRESS_LIMIT,
             on_event: Callable[[MetadataEvent], None] | None = None,
             on_record: Callable[[DecodedEntry], None] | None = None,
             advance: Callable[[int], None] | None = None,
             reveal_sensitive: bool = False) -> MetadataReplay:
    """Replay a ``__cluster_metadata`` partition (or the one inside a log dir) up to ``at``
    (epoch ms, inclusive; the end of the log when None): reading stops at the first batch past
    it. Events (and with ``keep_records`` the decoded records) go to ``on_event`` /
    ``on_record`` as they happen when given, and are then not kept in the result;
    ``advance(bytes)`` is told the progress. Sensitive configs and SCRAM credentials read
    :data:`segtools.sensitive.HIDDEN` everywhere in the result unless ``reveal_sensitive``
    (Kafka's own ``DescribeConfigs`` never returns them)."""
    partition = metadata_partition(path)
    spath = str(partition.path)
    replayer = _Replayer(spath, keep_records, include_noop, on_event, on_record,
                         reveal_sensitive)
    findings: list[Finding] = []
    log_start = partition.segments[0].base_offset if partition.segments else 0
    snapshot, snapshot_end = (None, 0)
    if log_start > 0:
        snapshot, snapshot_end = _snapshot_for(partition, log_start)
        if snapshot is None:
            replayer.finding("metadata_history_incomplete",
                             f"the log starts at offset {log_start} and no snapshot reaches it; "
                             "topics and configs created before are missing", log_start)
    replayer.end_offset = snapshot_end
    sources: list[tuple[bool, Iterator[chunks.Chunk]]] = []
    if snapshot is not None:
        sources.append((True, file_chunks(snapshot, findings, at=at, limit=limit)))
    sources.append((False, iter_chunks(partition, findings, at=at, after=snapshot_end,
                                       limit=limit, advance=advance)))
    for from_snapshot, source in sources:
        replayer.silent = from_snapshot
        for chunk in source:
            for lo, block in replayer.decoder.blocks(chunk):
                replayer.block(block, chunk, lo, -1 if from_snapshot else snapshot_end)
        replayer.silent = False
    replayer.finish(replayer.end_offset)
    return MetadataReplay(partition.path, replayer.image, tuple(replayer.events),
                          tuple(replayer.records), tuple(findings + replayer.findings),
                          replayer.applied, replayer.noops, snapshot, replayer.end_offset,
                          replayer.last_timestamp)


#: The start of a FeatureLevelRecord's frame: frame version 1, apiKey 12 (one uvarint byte each).
_FEATURE_LEVEL_FRAME = bytes((FRAME_VERSION, 12))
#: The first byte of every metadata record's frame (the frame version, a one-byte varint).
_METADATA_FRAME = bytes((FRAME_VERSION,))


def _metadata_version_in(records: Iterator[LogRecord]) -> int | None:
    level = None
    for lr in records:
        value = lr.record.value
        if lr.batch.is_control or value is None or bytes(value[:2]) != _FEATURE_LEVEL_FRAME:
            continue
        data = decode_frame(value).data
        if data["name"] == METADATA_VERSION_FEATURE:
            level = data["featureLevel"]
    return level


def metadata_version(path: PartitionDir | Path, *,
                     limit: int = DEFAULT_DECOMPRESS_LIMIT) -> int | None:
    """The ``metadata.version`` feature level a KRaft cluster last finalized
    (``FeatureLevelRecord``), read cheaply: only records framed as that record are decoded,
    from the latest snapshot and the log after it (the whole log when there is no snapshot), or
    from one file of batches (a ``bootstrap.checkpoint``). None when no such record is there;
    unreadable parts raise :class:`SegtoolsError` or are skipped as the walk's findings."""
    findings: list[Finding] = []
    if isinstance(path, PurePath) and as_path(path).is_file():
        return _metadata_version_in(file_records(path, findings, limit=limit))
    partition = metadata_partition(path)
    latest = max(((int(m.group(1)), p) for p in partition.kraft_snapshots
                  if (m := _SNAPSHOT_NAME.fullmatch(p.name))), default=None)
    level, end = None, 0
    if latest is not None:
        end = latest[0]
        level = _metadata_version_in(file_records(latest[1], findings, limit=limit))
    newer = _metadata_version_in(iter_records(
        partition, findings, want=lambda t: (t.last_offset >= end) & ~t.is_control,
        limit=limit))
    return newer if newer is not None else level


def topic_configs(partition_dir_or_path: PartitionDir | str | os.PathLike[str], *,
                  at: int | None = None) -> dict[str, dict[str, str]]:
    """Topic name -> config name -> value, as the metadata log leaves them (or as of ``at``).

    Only overrides are recorded in the log; a config absent here takes the broker or
    Kafka default. Topics created inside an aborted metadata transaction, and removed
    topics, are not returned. Raises :class:`SegtoolsError` if the path holds no
    ``__cluster_metadata-0`` partition.
    """
    return timeline(partition_dir_or_path, at=at,
                    on_event=lambda event: None).image.topic_configs()


def metadata_record(record: Record) -> Record:
    """A ``__cluster_metadata`` record as a face shows it (``dump``, ``find``, the report's
    samples): its value through :func:`metadata_value`; a control record as it is."""
    if record.control is not None:
        return record
    return replace(record, value=metadata_value(record.value))


def metadata_value(value: bytes | None, *, reveal: bool = False) -> bytes | None:
    """A ``__cluster_metadata`` record value as it may be shown raw (a preview, a dump's
    payload): re-encoded with :func:`metadata_fields`' hidden fields when it holds a secret,
    unchanged when it holds none. A value that does not decode (a record version newer than
    segtools knows, trailing bytes, damage) cannot be shown to hold no secret, a
    ``ConfigRecord``'s password may sit in it whole, so it reads :data:`HIDDEN` as a whole:
    ``reveal`` shows it as stored, and ``verify``/``metadata`` say why it did not decode.
    A value that is not framed as a metadata record at all (the Raft log's control records:
    leader changes, voters, kraft.version, which start with their own int16 version 0) holds
    no config and is shown as stored."""
    if reveal or value is None:
        return value
    try:
        rec = decode_frame(bytes(value))
    except SegtoolsError:
        return HIDDEN.encode() if bytes(value[:1]) == _METADATA_FRAME else value
    shown = metadata_fields(rec.name, rec.data)
    if shown is rec.data:
        return value
    as_bytes = {k: (HIDDEN.encode() if v == HIDDEN and isinstance(rec.data[k], bytes) else v)
                for k, v in shown.items()}
    return encode_frame(BY_API_KEY[rec.api_key], as_bytes, rec.version)
