"""Replay ``__consumer_offsets``: committed offsets over time, group state, and the anomalies.

The group coordinator rebuilds its state by replaying its partitions record by record
(``GroupMetadataManager.replay`` / ``OffsetMetadataManager.replay``); so does this module, with
a clock: any moment's committed offsets can be read back, and every change is kept.

- An offset commit (record types 0/1) sets the group's offset for a topic-partition; a
  tombstone deletes it (expiry, ``DeleteOffsets``, group or topic deletion).
- A commit written inside a transaction (``TxnOffsetCommit``: a transactional batch) is held
  per producer id and applied only when that producer's COMMIT marker follows in the same
  partition; an ABORT marker discards it (``OffsetMetadataManager.replayEndTransactionMarker``).
- Classic groups (type 2) carry members whose subscription/assignment are consumer-protocol
  bytes when ``protocolType`` is ``consumer``; KIP-848 groups (types 3-8) are spread over
  several record types, tombstoned one by one.
- A record whose key type is unknown to this reader is reported and skipped, never decoded
  with a guessed schema.

Anomalies answered: an **offset regression** is an applied commit below the group's previous
committed offset for that partition (a reset to earliest, a rewind, or a consumer that lost
its position); an **offset deletion** is a tombstone (the offsets vanished, and when).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from segtools.analysis.partition_log import iter_records
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity, finding
from segtools.formats.internal.consumer_offsets import (
    CONSUMER_GROUP_TYPES,
    CONSUMER_PROTOCOL_TYPE,
    GROUP_METADATA_TYPE,
    MEMBER_STATES,
    OFFSET_COMMIT_TYPES,
    SHARE_GROUP_TYPES,
    CoordinatorRecord,
    UnknownRecordTypeError,
    decode_assignment,
    decode_record,
    decode_subscription_lenient,
)
from segtools.formats.internal.generated import UnsupportedVersionError
from segtools.model import Batch, Record
from segtools.storage.partition import PartitionDir

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

APPLIED, ABORTED, PENDING = "applied", "aborted", "pending"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a record sits: ``__consumer_offsets-<partition>`` at ``offset``."""

    partition: int
    offset: int
    timestamp: int  # the record's timestamp: when the coordinator appended it

    def to_json(self) -> dict:
        return {"log_partition": self.partition, "log_offset": self.offset,
                "log_timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One offset commit record (or tombstone: ``offset`` None) and what became of it."""

    group: str
    topic: str
    partition: int
    offset: int | None
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    value_version: int | None
    where: Location
    producer_id: int | None = None  # set for transactional commits
    status: str = APPLIED
    applied_at: Location | None = None  # the COMMIT marker for transactional commits

    @property
    def effective_timestamp(self) -> int:
        """When the commit took effect: its append, or its transaction's COMMIT marker."""
        return (self.applied_at or self.where).timestamp

    def to_json(self, kind: str = "offset_commit") -> dict:
        out = {"type": kind, "group": self.group, "topic": self.topic,
               "partition": self.partition, "offset": self.offset,
               "leader_epoch": self.leader_epoch, "metadata": self.metadata,
               "commit_timestamp": self.commit_timestamp,
               "expire_timestamp": self.expire_timestamp,
               "value_version": self.value_version, "status": self.status,
               "transactional": self.producer_id is not None,
               "producer_id": self.producer_id, **self.where.to_json()}
        if self.applied_at is not None:
            out["marker_offset"] = self.applied_at.offset
            out["marker_timestamp"] = self.applied_at.timestamp
        return out


@dataclass(frozen=True, slots=True)
class OffsetRegression:
    """An applied commit that moved a group's offset backwards."""

    previous: OffsetCommit
    current: OffsetCommit
    group_state: str | None  # the classic group's state when it happened (Empty: admin reset)
    generation: int | None

    def to_json(self) -> dict:
        c, p = self.current, self.previous
        return {"type": "offset_regression", "group": c.group, "topic": c.topic,
                "partition": c.partition, "previous_offset": p.offset, "offset": c.offset,
                "delta": c.offset - p.offset, "timestamp": c.effective_timestamp,
                "previous_timestamp": p.effective_timestamp,
                "commit_timestamp": c.commit_timestamp, "group_state": self.group_state,
                "generation": self.generation, **c.where.to_json()}


@dataclass(frozen=True, slots=True)
class OffsetDeletion:
    """A tombstone: the group's committed offset for a partition vanished."""

    group: str
    topic: str
    partition: int
    last_offset: int | None  # what was committed before (None: nothing seen)
    where: Location

    def to_json(self) -> dict:
        return {"type": "offset_deleted", "group": self.group, "topic": self.topic,
                "partition": self.partition, "last_offset": self.last_offset,
                "timestamp": self.where.timestamp, **self.where.to_json()}


@dataclass(slots=True)
class GroupState:
    """A group as the coordinator would hold it at the replay's end (or ``at``)."""

    group: str
    log_partition: int
    kind: str = "offsets-only"  # classic | consumer | share | offsets-only
    protocol_type: str | None = None
    generation: int | None = None
    protocol: str | None = None
    leader: str | None = None
    state_timestamp: int | None = None
    members: list[dict] = field(default_factory=list)
    epoch: int | None = None  # KIP-848 group epoch
    assignment_epoch: int | None = None
    members848: dict[str, dict] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name (KIP-848)
    offsets: dict[tuple[str, int], OffsetCommit] = field(default_factory=dict)
    deleted_at: Location | None = None

    @property
    def state(self) -> str:
        """Classic groups: Empty without members (what ``--reset-offsets`` requires), else
        Stable (the log holds no PreparingRebalance/CompletingRebalance); Dead once removed."""
        if self.deleted_at is not None:
            return "Dead"
        if self.kind == "classic":
            return "Stable" if self.members else "Empty"
        if self.kind in ("consumer", "share"):
            return "Stable" if self.members848 else "Empty"
        return "Empty"

    def to_json(self) -> dict:
        out = {"type": "group", "group": self.group, "kind": self.kind, "state": self.state,
               "log_partition": self.log_partition, "protocol_type": self.protocol_type,
               "generation": self.generation, "protocol": self.protocol,
               "leader": self.leader, "state_timestamp": self.state_timestamp,
               "members": self.members}
        if self.kind in ("consumer", "share"):
            out.update(group_epoch=self.epoch, assignment_epoch=self.assignment_epoch,
                       members=[{"member_id": m, **v} for m, v in sorted(self.members848.items())])
        out["deleted_timestamp"] = self.deleted_at.timestamp if self.deleted_at else None
        out["offsets"] = len(self.offsets)
        return out


@dataclass(frozen=True, slots=True)
class OffsetsReplay:
    paths: tuple[Path, ...]
    groups: dict[str, GroupState]
    commits: tuple[OffsetCommit, ...]  # every commit and tombstone, each partition in log order
    regressions: tuple[OffsetRegression, ...]
    deletions: tuple[OffsetDeletion, ...]
    group_deletions: tuple[tuple[str, Location], ...]
    findings: tuple[Finding, ...]
    records: int

    def history(self, topic: str | None = None, partition: int | None = None
                ) -> list[OffsetCommit]:
        """Commits and tombstones for a topic(-partition), in the order they happened."""
        return [c for c in self.commits
                if (topic is None or c.topic == topic)
                and (partition is None or c.partition == partition)]


# ---------------------------------------------------------------------------- decoding helpers


def describe_protocol(protocol_type: str, subscription: bytes, assignment: bytes
                      ) -> tuple[dict, list[str]]:
    """Expand a classic member's subscription/assignment when the protocol is ``consumer``
    (``DumpLogSegments.prepareGroupMetadataValue``); other protocols stay opaque."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return {"subscription_bytes": len(subscription),
                "assignment_bytes": len(assignment)}, []
    out: dict = {}
    problems = []
    try:
        version, sub, layout = decode_subscription_lenient(subscription)
        out["subscription"] = {
            "version": version, "topics": sub["topics"],
            "owned_partitions": {tp["topic"]: tp["partitions"] for tp in sub["ownedPartitions"]},
            "generation_id": sub["generationId"], "rack_id": sub["rackId"],
            "user_data_bytes": None if sub["userData"] is None else len(sub["userData"])}
        if layout != min(version, 3):
            out["subscription"]["read_as_version"] = layout
    except SegtoolsError as e:
        problems.append(f"subscription: {e}")
    try:
        version, asg = decode_assignment(assignment)
        out["assignment"] = {
            "version": version,
            "partitions": {tp["topic"]: tp["partitions"] for tp in asg["assignedPartitions"]},
            "user_data_bytes": None if asg["userData"] is None else len(asg["userData"])}
    except SegtoolsError as e:
        problems.append(f"assignment: {e}")
    return out, problems


def group_matches(group: str, patterns: Iterable[str] | None) -> bool:
    pats = list(patterns or ())
    return not pats or any(fnmatch.fnmatchcase(group, p) for p in pats)


# ---------------------------------------------------------------------------- the replay


class _Replayer:
    """The coordinator's load, record by record, with every change kept."""

    def __init__(self, at: int | None, groups: list[str] | None,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT):
        self.at = at
        self.limit = limit
        self.patterns = groups
        self.groups: dict[str, GroupState] = {}
        self.commits: list[OffsetCommit] = []
        self.regressions: list[OffsetRegression] = []
        self.deletions: list[OffsetDeletion] = []
        self.group_deletions: list[tuple[str, Location]] = []
        self.findings: list[Finding] = []
        self.records = 0

    def group(self, name: str, log_partition: int) -> GroupState:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = GroupState(name, log_partition)
        return g

    def partition(self, pdir: PartitionDir) -> None:
        log_partition = pdir.name.partition if pdir.name else -1
        path = str(pdir.path)
        pending: dict[int, list[OffsetCommit]] = {}
        read_findings: list[Finding] = []
        for lr in iter_records(pdir, read_findings, limit=self.limit):
            batch, record = lr.batch, lr.record
            where = Location(log_partition, record.offset, record.timestamp)
            if self.at is not None and batch.max_timestamp > self.at:
                break
            self.records += 1
            if batch.is_control:
                self._marker(batch, record, where, pending)
                continue
            try:
                rec = decode_record(record.key, record.value)
            except UnknownRecordTypeError as e:
                self.findings.append(Finding(
                    "consumer_offsets_unknown_record_type", Severity.WARNING, path,
                    f"record type {e.record_type} is not one this reader knows (a newer "
                    f"broker's record, e.g. streams groups); skipped, not guessed at",
                    offset=record.offset))
                continue
            except UnsupportedVersionError as e:
                self.findings.append(Finding("consumer_offsets_unknown_version",
                                             Severity.WARNING, path, str(e),
                                             offset=record.offset))
                continue
            except SegtoolsError as e:
                self.findings.append(Finding("consumer_offsets_record_undecodable",
                                             Severity.ERROR, path, str(e),
                                             offset=record.offset))
                continue
            if not group_matches(rec.group_id, self.patterns):
                continue
            self._record(rec, batch, where, pending, path)
        self.findings.extend(read_findings)
        for pid, commits in pending.items():
            for c in commits:
                self.commits.append(replace(c, status=PENDING))
            self.findings.append(Finding(
                "transactional_offset_commit_pending", Severity.INFO, path,
                f"producer {pid} has {len(commits)} transactional offset commit(s) with no "
                f"COMMIT/ABORT marker by the end of the replay (not applied)",
                offset=commits[0].where.offset))

    def _marker(self, batch: Batch, record: Record, where: Location,
                pending: dict[int, list[OffsetCommit]]) -> None:
        control = record.control
        if control is None or control.type not in ("COMMIT", "ABORT"):
            return
        commits = pending.pop(batch.producer_id, [])
        for c in commits:
            if control.type == "COMMIT":
                self._apply(replace(c, applied_at=where))
            else:
                self.commits.append(replace(c, status=ABORTED, applied_at=where))

    def _record(self, rec: CoordinatorRecord, batch: Batch, where: Location,
                pending: dict[int, list[OffsetCommit]], path: str) -> None:
        g = self.group(rec.group_id, where.partition)
        if rec.record_type in OFFSET_COMMIT_TYPES:
            v = rec.value or {}
            commit = OffsetCommit(
                rec.group_id, rec.key["topic"], rec.key["partition"],
                v.get("offset") if rec.value is not None else None,
                v.get("leaderEpoch", -1), v.get("metadata", ""), v.get("commitTimestamp", -1),
                v.get("expireTimestamp", -1), rec.value_version, where,
                batch.producer_id if batch.is_transactional else None)
            if batch.is_transactional:
                pending.setdefault(batch.producer_id, []).append(commit)
            else:
                self._apply(commit)
        elif rec.record_type == GROUP_METADATA_TYPE:
            self._classic(g, rec, where, path)
        elif rec.record_type in CONSUMER_GROUP_TYPES or rec.record_type in SHARE_GROUP_TYPES:
            self._modern(g, rec, where)

    def _apply(self, commit: OffsetCommit) -> None:
        g = self.group(commit.group, commit.where.partition)
        key = (commit.topic, commit.partition)
        previous = g.offsets.get(key)
        self.commits.append(commit)
        if commit.offset is None:
            g.offsets.pop(key, None)
            self.deletions.append(OffsetDeletion(
                commit.group, commit.topic, commit.partition,
                previous.offset if previous else None, commit.where))
            return
        if previous is not None and previous.offset is not None \
                and commit.offset < previous.offset:
            self.regressions.append(OffsetRegression(
                previous, commit, g.state if g.kind == "classic" else None, g.generation))
        g.offsets[key] = commit

    def _classic(self, g: GroupState, rec: CoordinatorRecord, where: Location,
                 path: str) -> None:
        if rec.value is None:
            g.deleted_at = where
            g.members = []
            self.group_deletions.append((g.group, where))
            return
        v = rec.value
        g.deleted_at = None
        g.kind = "classic"
        g.protocol_type = v["protocolType"]
        g.generation = v["generation"]
        g.protocol = v["protocol"]
        g.leader = v["leader"]
        g.state_timestamp = v["currentStateTimestamp"]
        g.members = []
        for m in v["members"]:
            expanded, problems = describe_protocol(v["protocolType"], m["subscription"],
                                                   m["assignment"])
            for p in problems:
                self.findings.append(Finding(
                    "consumer_protocol_undecodable", Severity.WARNING, path,
                    f"group {g.group} member {m['memberId']}: {p}", offset=where.offset))
            quirk = expanded.get("subscription", {}).get("read_as_version")
            if quirk is not None:
                self.findings.append(finding(
                    "consumer_protocol_older_layout", path,
                    f"group {g.group} member {m['memberId']}: a version "
                    f"{expanded['subscription']['version']} subscription laid out as version "
                    f"{quirk} (as some non-Java clients, e.g. kafka-go, write it); read as "
                    "such, the coordinator never parses it", offset=where.offset))
            g.members.append({"member_id": m["memberId"],
                              "group_instance_id": m["groupInstanceId"],
                              "client_id": m["clientId"], "client_host": m["clientHost"],
                              "rebalance_timeout_ms": m["rebalanceTimeout"],
                              "session_timeout_ms": m["sessionTimeout"], **expanded})

    def _modern(self, g: GroupState, rec: CoordinatorRecord, where: Location) -> None:
        """KIP-848 / KIP-932 records: each keyed part of the group is set or tombstoned."""
        g.kind = "consumer" if rec.record_type in CONSUMER_GROUP_TYPES else "share"
        g.deleted_at = None
        name, v = rec.name, rec.value
        member = rec.key.get("memberId")
        if name.endswith("GroupMetadata"):
            g.epoch = v["epoch"] if v else None
            if v is None:
                g.deleted_at = where
                self.group_deletions.append((g.group, where))
        elif name.endswith("PartitionMetadata") and v is not None:
            g.topic_names = {t["topicId"]: t["topicName"] for t in v["topics"]}
        elif name.endswith("TargetAssignmentMetadata"):
            g.assignment_epoch = v["assignmentEpoch"] if v else None
        elif member is not None:
            slot = {"MemberMetadata": "metadata", "TargetAssignmentMember": "target",
                    "CurrentMemberAssignment": "current"}
            part = next((p for suffix, p in slot.items() if name.endswith(suffix)), None)
            if part is None:
                return
            entry = g.members848.setdefault(member, {})
            if v is None:
                entry.pop(part, None)
                if not entry:
                    g.members848.pop(member)
                return
            entry[part] = self._member_part(g, part, v)

    @staticmethod
    def _member_part(g: GroupState, part: str, v: dict) -> dict:
        def by_name(tps: list[dict]) -> dict[str, list[int]]:
            return {g.topic_names.get(tp["topicId"], tp["topicId"]): tp["partitions"]
                    for tp in tps}

        if part == "metadata":
            out = {k: v[k] for k in ("instanceId", "rackId", "clientId", "clientHost",
                                     "subscribedTopicNames", "subscribedTopicRegex",
                                     "rebalanceTimeoutMs", "serverAssignor")}
            out["classic_protocol"] = v["classicMemberMetadata"] is not None
            return out
        if part == "target":
            return {"partitions": by_name(v["topicPartitions"])}
        state = v["state"]
        return {"member_epoch": v["memberEpoch"],
                "previous_member_epoch": v["previousMemberEpoch"],
                "state": MEMBER_STATES.get(state, f"UNKNOWN({state})"),
                "assigned": by_name(v["assignedPartitions"]),
                "pending_revocation": by_name(v.get("partitionsPendingRevocation", []))}


def replay_offsets(partitions: Iterable[PartitionDir], *, at: int | None = None,
                   groups: list[str] | None = None,
                   advance: Callable[[int], None] | None = None,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT) -> OffsetsReplay:
    """Replay ``__consumer_offsets`` partitions up to ``at`` (epoch ms, inclusive; the end of
    the logs when None), keeping only groups matching the ``groups`` globs (all when None).
    ``advance(bytes)`` is called after each partition (a progress bar)."""
    replayer = _Replayer(at, groups, limit)
    parts = list(partitions)
    for pdir in parts:
        replayer.partition(pdir)
        if advance is not None:
            advance(pdir.size_bytes)
    order = sorted(replayer.commits, key=lambda c: (c.effective_timestamp, c.where.partition,
                                                    c.where.offset))
    return OffsetsReplay(tuple(p.path for p in parts), replayer.groups, tuple(order),
                         tuple(replayer.regressions), tuple(replayer.deletions),
                         tuple(replayer.group_deletions), tuple(replayer.findings),
                         replayer.records)
