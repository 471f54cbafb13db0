"""Replay ``__consumer_offsets``: committed offsets over time, group state, and the anomalies.

The group coordinator rebuilds its state by replaying its partitions record by record
(``GroupMetadataManager.replay`` / ``OffsetMetadataManager.replay``); so does this module, with
a clock: any moment's committed offsets can be read back.

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

Production partitions hold millions of records, so the records are decoded as columns by the
compiled field programs (:mod:`segtools.decode.programs`, made from the same declarations as
the reference decoder, which still decides every record the programs refuse). An offset
commit costs a few list reads and one tuple; the replay keeps what is live (each group, its
offsets per partition, the latest metadata of its members, open transactions) and no
record once it is superseded. A group's member list and KIP-848 member parts are kept as their
latest value bytes and decoded once, at the end. The history of commits is kept only when
asked for (and then only for the topic and partition asked about); anomalies go to a sink as
they are found when one is given (the CLI spools them), else into the result.
"""

from __future__ import annotations

import fnmatch
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from segtools import fanout
from segtools.analysis import _offsets
from segtools.analysis.offsets_columns import (
    ColumnSink,
    DeletionColumns,
    FoundColumns,
    GroupDeletionColumns,
    RegressionColumns,
    spliced,
)
from segtools.analysis.partition_log import iter_chunks
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import chunks
from segtools.decode.programs import (
    F_INTERN,
    SCALAR,
    SPAN,
    ST_ERROR,
    ST_OK,
    ST_SKIP,
    Block,
    Decoder,
    blob,
    consumer_offsets_family,
    spans,
    versioned,
    versioned_fields,
)
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.internal.consumer_offsets import (
    CONSUMER_GROUP_TYPES,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONSUMER_PROTOCOL_TYPE,
    GROUP_METADATA_TYPE,
    GROUP_METADATA_VALUE,
    MEMBER_STATES,
    OFFSET_COMMIT_TYPES,
    RECORD_TYPES,
    SHARE_GROUP_TYPES,
    UnknownRecordTypeError,
    decode_assignment,
    decode_record,
    decode_subscription_lenient,
)
from segtools.formats.internal.generated import UnsupportedVersionError
from segtools.storage.partition import PartitionDir

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

APPLIED, ABORTED, PENDING = "applied", "aborted", "pending"


class Location(NamedTuple):
    """Where a record sits: ``__consumer_offsets-<partition>`` at ``offset``. (The replay's
    per-record answers are named tuples: cheap to make by the hundred thousand.)"""

    partition: int
    offset: int
    timestamp: int  # the record's timestamp: when the coordinator appended it

    def to_json(self) -> dict:
        return {"log_partition": self.partition, "log_offset": self.offset,
                "log_timestamp": self.timestamp}


class OffsetCommit(NamedTuple):
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


class OffsetRegression(NamedTuple):
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


class OffsetDeletion(NamedTuple):
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


class GroupDeletion(NamedTuple):
    """A group's tombstone: the group was removed (expired, or deleted by an admin)."""

    group: str
    where: Location

    def to_json(self) -> dict:
        return {"type": "group_deleted", "group": self.group,
                "timestamp": self.where.timestamp, **self.where.to_json()}


#: What a replay hands its sink as it finds it.
Anomaly = OffsetRegression | OffsetDeletion | GroupDeletion


@dataclass(frozen=True, slots=True)
class OffsetsReplay:
    """A replay's answer. ``commits`` is the history asked for (empty unless the replay was
    asked for one), in the order the commits took effect; the anomalies are empty when they
    went to a sink."""

    paths: tuple[Path, ...]
    groups: dict[str, GroupState]
    commits: tuple[OffsetCommit, ...]
    regressions: tuple[OffsetRegression, ...]
    deletions: tuple[OffsetDeletion, ...]
    group_deletions: tuple[GroupDeletion, ...]
    findings: tuple[Finding, ...]
    records: int

    def commits_for(self, topic: str | None = None, partition: int | None = None
                    ) -> list[OffsetCommit]:
        """Commits and tombstones for a topic(-partition), in the order they happened. Named
        apart from the replay's ``history=True`` argument, which decides whether there are
        any commits to filter."""
        return [c for c in self.commits
                if (topic is None or c.topic == topic)
                and (partition is None or c.partition == partition)]

    def history(self, topic: str | None = None, partition: int | None = None
                ) -> list[OffsetCommit]:
        """Deprecated name of :meth:`commits_for` (it read as the ``history=True`` flag);
        kept for one release."""
        warnings.warn("OffsetsReplay.history() is deprecated; use commits_for()",
                      DeprecationWarning, stacklevel=2)
        return self.commits_for(topic, partition)


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

class AppliedCommit(NamedTuple):
    """An applied commit as the replay holds it (an :class:`OffsetCommit` is built only to be
    shown): where it was written, the producer of a transactional commit, and the COMMIT/ABORT
    marker that decided it."""

    offset: int | None  # None: a tombstone
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int
    expire_timestamp: int
    value_version: int | None
    log_partition: int
    log_offset: int
    log_timestamp: int
    producer_id: int | None
    marker_offset: int | None  # the marker's two fields stay last (see _Replayer._marker)
    marker_timestamp: int | None


#: The integer fields of an :class:`AppliedCommit`, in the order of a state row
#: (``_offsets.S_WIDTH`` columns; metadata is kept beside them).
_INT_FIELDS = tuple(i for i, f in enumerate(AppliedCommit._fields) if f != "metadata")

#: What each KIP-848 / KIP-932 record type sets on a group, from its name as the coordinator's
#: replay dispatches on it (``GroupCoordinatorShard.replay``).
_GROUP_EPOCH, _TOPICS, _ASSIGNMENT_EPOCH = "epoch", "topics", "assignment_epoch"
_MEMBER_PARTS = {"MemberMetadata": "metadata", "TargetAssignmentMember": "target",
                 "CurrentMemberAssignment": "current"}
#: What the compiled loop calls each (``_offsets.R_*``): a member's parts last, in its order.
_ROLE_CODES = {None: _offsets.R_NONE, _GROUP_EPOCH: _offsets.R_EPOCH,
               _TOPICS: _offsets.R_TOPICS, _ASSIGNMENT_EPOCH: _offsets.R_ASSIGNMENT_EPOCH,
               "metadata": _offsets.R_METADATA, "target": _offsets.R_TARGET,
               "current": _offsets.R_CURRENT}
_PARTS = tuple(_MEMBER_PARTS.values())


#: How many partition metadata values the replay keeps for the compiled loop's KIP-848
#: groups before it drops those no group or present member part names any more (a group
#: writes one at each change of its subscribed topics: a long log holds many).
TOPIC_VALUES_KEPT = 4096

#: What the replay does with a row the compiled loop hands it (most common first).
(_MODERN, _REGRESSED, _DELETED, _PLAIN, _MARKER, _ERROR, _SPECIAL, _NONE, _REMOVED,
 _SUSPECT) = range(10)

#: The rows of anomalies the compiled loop found and applied.
_LOOP_FOUND = (_REGRESSED, _DELETED, _REMOVED)

#: A group's state as the compiled loop gives it (``_offsets.G_*``).
_STATES = {_offsets.G_OTHER: None, _offsets.G_EMPTY: "Empty", _offsets.G_STABLE: "Stable",
           _offsets.G_DEAD: "Dead"}
_STATE_NAMES = np.array([_STATES[code] for code in range(len(_STATES))], object)


def _role(name: str) -> str | None:
    if name.endswith("GroupMetadata"):
        return _GROUP_EPOCH
    if name.endswith("GroupPartitionMetadata"):
        return _TOPICS
    if name.endswith("TargetAssignmentMetadata"):
        return _ASSIGNMENT_EPOCH
    return next((p for suffix, p in _MEMBER_PARTS.items() if name.endswith(suffix)), None)


@dataclass(frozen=True, slots=True)
class _Slots:
    """The columns the replay reads, named against the declarations (a field they no longer
    declare, or declare with another type, fails here)."""

    topic: int
    partition: int
    member: int
    offset: int
    leader_epoch: int
    metadata: int
    commit_timestamp: int
    expire_timestamp: int
    protocol_type: int
    generation: int
    protocol: int
    leader: int
    state_timestamp: int
    members: int
    member_id: int  # in a member's own row (GroupMetadataValue.members)
    subscription: int
    assignment: int
    member_keyed: frozenset[int]  # record types whose key names a member
    member_list: list[int]
    roles: dict[int, str | None]  # KIP-848 / KIP-932 record type -> what it sets
    role_codes: np.ndarray  # record type -> what it sets, for the compiled loop (R_*)
    scalar_slot: np.ndarray  # record type -> the slot of the epoch it sets (0: none)
    topic_names: list[int]  # record types that set a group's topic names (partition metadata)


@cache
def _slots() -> _Slots:
    fam = consumer_offsets_family()
    for t, (name, prog) in fam.key_programs.items():
        group = "group" if "group" in prog.slots else "groupId"
        if fam.slot(name, group, SPAN, value=False) != 0 or \
                not prog.slots[group].flags & F_INTERN:
            raise AssertionError(f"record type {t}: the key must start with its group id")
    member_keyed = frozenset(t for t, (_, p) in fam.key_programs.items() if "memberId" in p.slots)
    members = {fam.slot(fam.key_programs[t][0], "memberId", SPAN, value=False)
               for t in member_keyed}
    if len(members) != 1:
        raise AssertionError("member ids sit in different key slots")
    roles = {t: _role(name) for t, (name, _, _) in RECORD_TYPES.items()
             if t in CONSUMER_GROUP_TYPES or t in SHARE_GROUP_TYPES}
    epochs = {_GROUP_EPOCH: "epoch", _ASSIGNMENT_EPOCH: "assignmentEpoch"}
    scalar_slot = np.zeros(max(RECORD_TYPES) + 1, np.int64)
    role_codes = np.zeros(max(RECORD_TYPES) + 1, np.int8)
    for t, r in roles.items():
        role_codes[t] = _ROLE_CODES[r]
        if r in epochs:
            scalar_slot[t] = fam.slot(RECORD_TYPES[t][0], epochs[r], SCALAR)
    if [_ROLE_CODES[p] - _offsets.R_METADATA for p in _PARTS] != list(range(_offsets.PARTS)):
        raise AssertionError("a member's parts are numbered apart from the compiled loop's")
    commit, group = "OffsetCommit", "GroupMetadata"
    element = next(p for (t, _), (_, p) in fam.value_programs.items()
                   if t == GROUP_METADATA_TYPE).slots["members"].sub
    for (t, _), (_, p) in fam.value_programs.items():
        if t == GROUP_METADATA_TYPE and p.slots["members"].sub.slots.keys() != \
                element.slots.keys():
            raise AssertionError("GroupMetadataValue members differ between versions")
    return _Slots(fam.slot(commit, "topic", SPAN, value=False),
                  fam.slot(commit, "partition", SCALAR, value=False), members.pop(),
                  fam.slot(commit, "offset", SCALAR), fam.slot(commit, "leaderEpoch", SCALAR),
                  fam.slot(commit, "metadata", SPAN), fam.slot(commit, "commitTimestamp", SCALAR),
                  fam.slot(commit, "expireTimestamp", SCALAR),
                  fam.slot(group, "protocolType", SPAN), fam.slot(group, "generation", SCALAR),
                  fam.slot(group, "protocol", SPAN), fam.slot(group, "leader", SPAN),
                  fam.slot(group, "currentStateTimestamp", SCALAR),
                  fam.slot(group, "members", SPAN), element.slots["memberId"].slot,
                  element.slots["subscription"].slot, element.slots["assignment"].slot,
                  member_keyed, sorted(member_keyed), roles, role_codes, scalar_slot,
                  sorted(t for t, r in roles.items() if r == _TOPICS))


class _TopicNames:
    """A KIP-848 group's topic id -> name map, from its latest partition metadata value,
    decoded when first needed (member assignments name topics by id)."""

    __slots__ = ("_names", "_raw", "_type", "_version")

    def __init__(self, record_type: int, raw: bytes, version: int):
        self._type, self._raw, self._version, self._names = record_type, raw, version, None

    def names(self) -> dict[str, str]:
        if self._names is None:
            schema = RECORD_TYPES[self._type][2]
            v = schema.read_exact(memoryview(self._raw)[2:], self._version)
            self._names = {t["topicId"]: t["topicName"] for t in v["topics"]}
        return self._names


class _Part(NamedTuple):
    """A KIP-848 member's metadata, target or current assignment: its latest value bytes,
    and the topic names the group had when it was written."""

    part: str
    record_type: int
    raw: bytes
    version: int
    topics: _TopicNames | None

    def decode(self) -> dict:
        schema = RECORD_TYPES[self.record_type][2]
        v = schema.read_exact(memoryview(self.raw)[2:], self.version)
        return _member_part(self.topics.names() if self.topics else {}, self.part, v)


def _member_part(names: dict[str, str], part: str, v: Mapping) -> dict:
    def by_name(tps: list[dict]) -> dict[str, list[int]]:
        return {names.get(tp["topicId"], tp["topicId"]): tp["partitions"] for tp in tps}

    if part == "metadata":  # a share group's member declares fewer of these
        out = {k: v[k] for k in ("instanceId", "rackId", "clientId", "clientHost",
                                 "subscribedTopicNames", "subscribedTopicRegex",
                                 "rebalanceTimeoutMs", "serverAssignor") if k in v}
        out["classic_protocol"] = v.get("classicMemberMetadata") is not None
        return out
    if part == "target":
        return {"partitions": by_name(v["topicPartitions"])}
    state = v["state"]
    return {"member_epoch": v["memberEpoch"],
            "previous_member_epoch": v["previousMemberEpoch"],
            "state": MEMBER_STATES.get(state, f"UNKNOWN({state})"),
            "assigned": by_name(v["assignedPartitions"]),
            "pending_revocation": by_name(v.get("partitionsPendingRevocation", []))}


def _classic_members(raw: bytes, version: int) -> list[dict]:
    """A classic group's members as its latest ``GroupMetadataValue`` lists them, with their
    consumer-protocol subscription and assignment expanded."""
    v = GROUP_METADATA_VALUE.read_exact(memoryview(raw)[2:], version)
    out = []
    for m in v["members"]:
        expanded, _ = describe_protocol(v["protocolType"], m["subscription"], m["assignment"])
        out.append({"member_id": m["memberId"], "group_instance_id": m["groupInstanceId"],
                    "client_id": m["clientId"], "client_host": m["clientHost"],
                    "rebalance_timeout_ms": m["rebalanceTimeout"],
                    "session_timeout_ms": m["sessionTimeout"], **expanded})
    return out


class _LeftToPython(NamedTuple):
    """What the compiled loop hands back of a block: the rows left to Python (block rows, in
    log order), the event of each (applied and regressed, deleted, or nothing), and, for a
    key the loop changed, what it held before (state row, whether present, its metadata) and
    the key and commit that changed it (``_offsets.C_*`` columns; a regression's metadata in
    ``current_metadata``): a transactional commit applied at its marker sits at the marker's
    row."""

    rows: np.ndarray
    events: np.ndarray
    previous: np.ndarray
    was_present: np.ndarray
    previous_metadata: list[str | None]
    current: np.ndarray
    current_metadata: list[str]
    group_state: np.ndarray  # the group's state then (``_offsets.G_*``)
    generation: np.ndarray  # the group's generation then (``_offsets.NONE``: none)

    def joined(self, rows: np.ndarray) -> _LeftToPython:
        """These rows and more (folded rows Python must apply, in log order, none of them
        among these: no event), in log order. Both are sorted: each goes to its place."""
        if not len(rows):
            return self
        mine = np.arange(len(self.rows)) + np.searchsorted(rows, self.rows)
        total = len(self.rows) + len(rows)

        def placed(values: np.ndarray, fill: np.ndarray) -> np.ndarray:
            out = np.empty((total, *values.shape[1:]), values.dtype)
            out[...] = fill
            out[mine] = values
            return out

        joined_rows = placed(self.rows, np.int64(0))
        joined_rows[np.arange(len(rows)) + np.searchsorted(self.rows, rows)] = rows
        return _LeftToPython(
            joined_rows, placed(self.events, np.int8(_offsets.PYTHON)),
            placed(self.previous, np.int64(0)), placed(self.was_present, np.int8(0)),
            self.previous_metadata, placed(self.current, np.int64(0)), self.current_metadata,
            placed(self.group_state, np.int8(0)), placed(self.generation, np.int64(0)))


def _sort_into(anomaly: Anomaly, regressions: list, deletions: list,
               group_deletions: list) -> None:
    """``anomaly`` appended to the list of its kind."""
    if isinstance(anomaly, OffsetRegression):
        regressions.append(anomaly)
    elif isinstance(anomaly, OffsetDeletion):
        deletions.append(anomaly)
    else:
        group_deletions.append(anomaly)


class _Found:
    """A block's anomalies in the order found, for a :class:`ColumnSink`: those of the
    compiled loop as their rows (with the group's state of their moment), the others as the
    objects Python made; :meth:`columns` reads the loop's from the block's arrays at once.
    When Python makes none in a block, the loop's come at once (:meth:`bulk`)."""

    def __init__(self) -> None:
        self.regressions: list[int | OffsetRegression] = []  # a row of the loop's, or one made
        self.states: list[str | None] = []  # the group's state of each of the loop's rows
        self.generations: list[int | None] = []
        self.deletions: list[int | OffsetDeletion] = []
        # (group, log partition, offset, timestamp) of each removed group
        self.group_deletions: list[tuple[str, int, int, int]] = []

    def __bool__(self) -> bool:
        return bool(self.regressions or self.deletions or self.group_deletions)

    def regressed(self, x: int, group_state: str | None, generation: int | None) -> None:
        self.regressions.append(x)
        self.states.append(group_state)
        self.generations.append(generation)

    def deleted(self, x: int) -> None:
        self.deletions.append(x)

    def add(self, anomaly: Anomaly) -> None:
        if isinstance(anomaly, GroupDeletion):
            w = anomaly.where
            self.group_deletions.append((anomaly.group, w.partition, w.offset, w.timestamp))
        else:
            _sort_into(anomaly, self.regressions, self.deletions, [])

    def bulk(self, regressed: list[int], states: list, generations: list, deleted: list[int],
             removed: Iterable[tuple[str, int, int, int]]) -> None:
        """The loop's regressions (with their groups' states and generations), deletions
        and removed groups of a block at once, in log order."""
        self.regressions += regressed
        self.states += states
        self.generations += generations
        self.deletions += deleted
        self.group_deletions += removed

    def columns(self, left: _LeftToPython, texts: list[str]) -> FoundColumns:
        """The anomalies as columns, and this accumulator emptied."""
        block = _BlockRows(left, texts)
        removed = self.group_deletions
        out = FoundColumns(
            _regression_columns(block, self.regressions, self.states, self.generations),
            _deletion_columns(block, self.deletions),
            GroupDeletionColumns(*(list(c) for c in zip(*removed, strict=True)))
            if removed else GroupDeletionColumns())
        self.regressions, self.states, self.generations = [], [], []
        self.deletions, self.group_deletions = [], []
        return out


class _Rows(NamedTuple):
    """Anomalies found in a block, split: which are the loop's rows (``compiled``, in the
    order found), the objects Python made, and for the rows their keys and the commits that
    made them (``_offsets.C_*`` columns), their keys' states before and whether each key held
    a commit."""

    compiled: np.ndarray
    made: list
    current: np.ndarray
    before: np.ndarray
    was_present: list[bool]

    def column(self, field: int) -> list[int]:
        """A state column of the commits that made the rows."""
        return self.current[:, _offsets.C_STATE + field].tolist()


class _BlockRows(NamedTuple):
    """What the compiled loop's anomalies are read from: what the loop left to Python (with
    each changed key's state before and the commit that changed it) and the interned
    strings."""

    left: _LeftToPython
    texts: list[str]

    def at(self, found: list) -> _Rows:
        """``found`` (rows of the loop's, or objects) split, the rows read."""
        compiled = np.array([isinstance(e, int) for e in found], bool)
        xs = np.array([e for e in found if isinstance(e, int)], np.int64)
        return _Rows(compiled, [e for e in found if not isinstance(e, int)],
                     self.left.current[xs], self.left.previous[xs],
                     [p != 0 for p in self.left.was_present[xs].tolist()])

    def names(self, codes: np.ndarray) -> list[str]:
        texts = self.texts
        return [texts[c] for c in codes.tolist()]


def _took_effect(state: np.ndarray) -> list[int]:
    """When each commit of these state rows took effect: its transaction's marker, or its
    own append (:attr:`OffsetCommit.effective_timestamp`)."""
    marked = state[:, _offsets.S_MARKER_OFFSET] != _offsets.NONE
    return np.where(marked, state[:, _offsets.S_MARKER_TIMESTAMP],
                    state[:, _offsets.S_LOG_TIMESTAMP]).tolist()


def _regression_columns(block: _BlockRows, found: list, states: list, generations: list
                        ) -> RegressionColumns:
    """Regressions found by the loop (read from its rows) and by Python (objects), in the
    order found."""
    out = RegressionColumns()
    if not found:
        return out
    rows = block.at(found)
    compiled, made, current, before = rows.compiled, rows.made, rows.current, rows.before
    currents = [r.current for r in made]
    previous = [r.previous for r in made]
    for name, first, rest in (
            ("group", block.names(current[:, _offsets.C_GROUP]), [c.group for c in currents]),
            ("topic", block.names(current[:, _offsets.C_TOPIC]), [c.topic for c in currents]),
            ("partition", current[:, _offsets.C_PARTITION].tolist(),
             [c.partition for c in currents]),
            ("previous_offset", before[:, _offsets.S_OFFSET].tolist(),
             [p.offset for p in previous]),
            ("offset", rows.column(_offsets.S_OFFSET), [c.offset for c in currents]),
            ("timestamp", _took_effect(current[:, _offsets.C_STATE:]),
             [c.effective_timestamp for c in currents]),
            ("previous_timestamp", _took_effect(before),
             [p.effective_timestamp for p in previous]),
            ("commit_timestamp", rows.column(_offsets.S_COMMIT_TIMESTAMP),
             [c.commit_timestamp for c in currents]),
            ("group_state", states, [r.group_state for r in made]),
            ("generation", generations, [r.generation for r in made]),
            ("log_partition", rows.column(_offsets.S_LOG_PARTITION),
             [c.where.partition for c in currents]),
            ("log_offset", rows.column(_offsets.S_LOG_OFFSET),
             [c.where.offset for c in currents]),
            ("log_timestamp", rows.column(_offsets.S_LOG_TIMESTAMP),
             [c.where.timestamp for c in currents])):
        setattr(out, name, spliced(compiled, first, rest))
    return out


def _deletion_columns(block: _BlockRows, found: list) -> DeletionColumns:
    """Deletions found by the loop (read from its rows) and by Python (objects), in the
    order found."""
    out = DeletionColumns()
    if not found:
        return out
    rows = block.at(found)
    compiled, made, current = rows.compiled, rows.made, rows.current
    last = [v if p else None
            for v, p in zip(rows.before[:, _offsets.S_OFFSET].tolist(), rows.was_present,
                            strict=True)]
    for name, first, rest in (
            ("group", block.names(current[:, _offsets.C_GROUP]), [d.group for d in made]),
            ("topic", block.names(current[:, _offsets.C_TOPIC]), [d.topic for d in made]),
            ("partition", current[:, _offsets.C_PARTITION].tolist(),
             [d.partition for d in made]),
            ("last_offset", last, [d.last_offset for d in made]),
            ("log_partition", rows.column(_offsets.S_LOG_PARTITION),
             [d.where.partition for d in made]),
            ("log_offset", rows.column(_offsets.S_LOG_OFFSET), [d.where.offset for d in made]),
            ("log_timestamp", rows.column(_offsets.S_LOG_TIMESTAMP),
             [d.where.timestamp for d in made])):
        setattr(out, name, spliced(compiled, first, rest))
    return out


class _State:
    """The applied commit of every key code (a group, topic and partition): integer columns
    in one array, metadata strings beside them, filled by the compiled loop
    (``_offsets.apply_commits``) and by :meth:`set`. ``order`` is the row that made a key
    present: the insertion order a dict would keep (a key deleted by a tombstone and committed
    again goes last). ``fast`` marks the keys the compiled loop may apply."""

    def __init__(self) -> None:
        self.present = np.zeros(0, np.int8)
        self.order = np.zeros(0, np.int64)
        self.state = np.zeros((0, _offsets.S_WIDTH), np.int64)
        self.metadata: list[str | None] = []
        self.fast = np.zeros(0, np.int8)
        self.blocked = np.zeros(0, np.int64)

    def ensure(self, keys: int) -> None:
        if keys <= len(self.present):
            return
        cap = max(1024, 2 * keys)
        grow = cap - len(self.present)
        self.present = np.concatenate([self.present, np.zeros(grow, np.int8)])
        self.order = np.concatenate([self.order, np.zeros(grow, np.int64)])
        self.state = np.concatenate([self.state, np.zeros((grow, _offsets.S_WIDTH),
                                                          np.int64)])
        self.fast = np.concatenate([self.fast, np.zeros(grow, np.int8)])
        self.blocked = np.concatenate([self.blocked, np.full(grow, -1, np.int64)])
        self.metadata += [None] * grow

    def get(self, k: int) -> AppliedCommit | None:
        return self.unpack(self.state[k].tolist(), self.metadata[k]) if self.present[k] \
            else None

    @staticmethod
    def unpack(ints: list[int], metadata: str) -> AppliedCommit:
        """A state row as the replay's commit (a tombstone's has no value version)."""
        off, epoch, cts, ets, vv, lp, lo, lts, pid, ao, ats = ints
        none = _offsets.NONE
        if vv == none:
            off = vv = None
        return AppliedCommit(off, epoch, metadata, cts, ets, vv, lp, lo, lts,
                             None if pid == none else pid, None if ao == none else ao,
                             None if ao == none else ats)

    def set(self, k: int, c: AppliedCommit, row: int) -> None:
        if not self.present[k]:
            self.present[k] = 1
            self.order[k] = row
        none = _offsets.NONE
        self.state[k] = [none if c[f] is None else c[f] for f in _INT_FIELDS]
        self.metadata[k] = c.metadata

    def delete(self, k: int) -> None:
        self.present[k] = 0
        self.metadata[k] = None

    def items(self) -> list[tuple[int, AppliedCommit]]:
        keys = np.flatnonzero(self.present)
        return [(k, self.get(k)) for k in keys[np.argsort(self.order[keys])].tolist()]


class _Replayer:
    """The coordinator's load, record by record over decoded columns."""

    def __init__(self, at: int | None, groups: list[str] | None, limit: int, history: bool,
                 topic: str | None, partition: int | None,
                 sink: Callable[[Anomaly], None] | None):
        """``_group_fast[g]``: the compiled loop may fold group ``g``'s own records (the group
        is known and none of its commits waits for a transaction's marker, whose regressions
        would read the group's state out of order); ``_group_runs``: the loop's count of each
        group's runs (``_offsets.apply_commits``)."""
        self.at = at
        self.limit = limit
        self.patterns = groups
        self.history = history
        self.history_topic = topic
        self.history_partition = partition
        self.sink = sink
        # a sink that takes columns gets each block's anomalies at once
        self._found = _Found() if isinstance(sink, ColumnSink) else None
        self.decoder = Decoder(consumer_offsets_family())
        self.slots = _slots()
        self.groups: dict[str, GroupState] = {}
        self._by_code: list[GroupState | None] = []  # by interned group id
        self._wanted: list[bool] = []  # by interned string: a group the replay is asked about
        self._wanted_np = np.zeros(0, bool)
        self.current = _State()
        # transactional commits are held by the compiled loop (``_offsets.HeldCommits``, per
        # producer code) unless a history is kept (its aborted and pending commits are
        # objects) or a block holds a record only the reference reads (which Python applies
        # out of the loop's order): then by Python (``pending``), from then on
        self._loop_holds = not history
        self._held_commits = _offsets.HeldCommits()
        self._producers: dict[int, int] = {}  # producer id -> its code in _held_commits
        # the KIP-848 / KIP-932 groups' records are applied by the compiled loop while it
        # holds the transactional commits (``_offsets.ModernGroups``), else by ``_modern``
        # (the rule, which reads and writes the groups themselves): the loop's state is then
        # handed over (``_modern_to_python``), as it is at the end
        self._modern_groups = _offsets.ModernGroups()
        self._member_of = np.zeros(0, np.int64)  # by key code: its member's number (-2: unmet)
        self._member_numbers: dict[tuple[int, str], int] = {}  # (group, member id) -> number
        self._member_names: list[str] = []  # by member number
        self._topic_values: dict[int, tuple[int, bytes, int]] = {}  # row -> partition metadata
        self._topic_limit = TOPIC_VALUES_KEPT  # how many before the unreferenced go
        # and the classic groups' metadata likewise (``_offsets.ClassicGroups``)
        self._classic_groups = _offsets.ClassicGroups()
        # the group's state and generation at the row Python applies, as the loop said
        self._now: tuple[str | None, int | None] | None = None
        self._held: dict[int, int] = {}  # key code -> transactional commits awaiting markers
        self._held_groups: dict[int, int] = {}  # group code -> the same, per group
        self._group_fast = np.zeros(0, np.int8)  # by interned string (see above)
        self._met = np.zeros(0, bool)  # by interned string: a group the replay has met
        self._known = np.zeros(0, bool)  # by key code: a commit key the replay knows
        self._group_runs = np.zeros(0, np.int64)
        self._row = 0  # the row being applied, in the whole replay
        self._keys: dict[int, tuple[int, str, int, bool]] = {}  # -> group, topic, partition, kept
        self._members: dict[str, tuple[bytes, int] | None] = {}  # classic group -> latest value
        self._member_count: dict[str, int] = {}
        self._topic_names: dict[str, _TopicNames] = {}
        self.commits: list[OffsetCommit] = []
        self.regressions: list[OffsetRegression] = []
        self.deletions: list[OffsetDeletion] = []
        self.group_deletions: list[GroupDeletion] = []
        self.findings: list[Finding] = []
        self.records = 0
        fam = self.decoder.family
        members = {v: p.slots["members"].sub for (t, v), (_, p) in fam.value_programs.items()
                   if t == GROUP_METADATA_TYPE}
        # a member's program by GroupMetadataValue version, looked up for a block at once
        self._elements = np.zeros((max(members) + 1, 2), np.int32)
        for v, p in members.items():
            self._elements[v] = p.first, p.count
        self._element_defaults = next(iter(members.values())).defaults
        self._subscriptions, self._assignments = (
            np.array([[p.first, p.count] for p in (fam.extra[f"{m.name}-v{v}"]
                                                   for v in range(m.valid.high + 1))], np.int32)
            for m in (CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT))

    # -- plumbing

    def _sync(self) -> None:
        """Interned strings seen for the first time: is each a group asked about?"""
        texts = self.decoder.texts
        if len(texts) > len(self._wanted):
            for s in texts[len(self._wanted):]:
                self._wanted.append(group_matches(s, self.patterns))
                self._by_code.append(None)
            self._wanted_np = np.array(self._wanted, bool)
            grow = len(texts) - len(self._group_fast)
            self._group_fast = np.concatenate([self._group_fast, np.zeros(grow, np.int8)])
            self._met = np.concatenate([self._met, np.zeros(grow, bool)])
            self._group_runs = np.concatenate([self._group_runs, np.zeros(grow, np.int64)])

    def _group(self, code: int, log_partition: int) -> GroupState:
        g = self._by_code[code]
        if g is None:
            name = self.decoder.texts[code]
            g = self.groups.get(name)
            if g is None:
                g = self.groups[name] = GroupState(name, log_partition)
            self._by_code[code] = g
            self._met[code] = True
            self._group_fast[code] = code not in self._held_groups
        return g

    def _key(self, k: int, group: int, topic: str, partition: int) -> None:
        kept = self.history and (self.history_topic is None or topic == self.history_topic) \
            and (self.history_partition is None or partition == self.history_partition)
        self._keys[k] = (group, topic, partition, kept)
        self._know(k + 1)
        self._known[k] = True
        self.current.ensure(k + 1)
        self.current.fast[k] = not kept and k not in self._held

    def _know(self, keys: int) -> None:
        """Room in ``_known`` for ``keys`` key codes."""
        if keys > len(self._known):
            grow = max(1024, 2 * keys) - len(self._known)
            self._known = np.concatenate([self._known, np.zeros(grow, bool)])

    def _commit(self, k: int, c: AppliedCommit, status: str = APPLIED) -> OffsetCommit:
        group, topic, partition, _ = self._keys[k]
        lp = c.log_partition
        return OffsetCommit(self.decoder.texts[group], topic, partition, c.offset,
                            c.leader_epoch, c.metadata, c.commit_timestamp, c.expire_timestamp,
                            c.value_version, Location(lp, c.log_offset, c.log_timestamp),
                            c.producer_id, status,
                            None if c.marker_offset is None
                            else Location(lp, c.marker_offset, c.marker_timestamp))

    def _emit(self, anomaly: Anomaly) -> None:
        if self._found is not None:
            self._found.add(anomaly)
        elif self.sink is not None:
            self.sink(anomaly)
        else:
            _sort_into(anomaly, self.regressions, self.deletions, self.group_deletions)

    def _state_of(self, g: GroupState) -> tuple[str | None, int | None]:
        """A group's state (None but for a classic group's) and generation at the row being
        applied: as the compiled loop said when it applies the groups' own records, else
        as Python holds them."""
        if self._now is not None:
            return self._now
        return self._classic_state(g) if g.kind == "classic" else None, g.generation

    def _classic_state(self, g: GroupState) -> str:
        """:attr:`GroupState.state` of a classic group while its members are still bytes."""
        if g.deleted_at is not None:
            return "Dead"
        return "Stable" if self._member_count.get(g.group) else "Empty"

    # -- reading

    def partition(self, pdir: PartitionDir, advance: Callable[[int], None] | None) -> None:
        log_partition = pdir.name.partition if pdir.name else -1
        path = str(pdir.path)
        pending: dict[int, list[tuple[int, AppliedCommit]]] = {}
        read_findings: list[Finding] = []
        for chunk in iter_chunks(pdir, read_findings, at=self.at, limit=self.limit,
                                 advance=advance):
            for lo, block in self.decoder.blocks(chunk):
                self._block(block, chunk, lo, log_partition, path, pending)
        self.findings.extend(read_findings)
        self._pending_in_loop(pending)
        for pid, commits in pending.items():
            for k, c in commits:
                self._release(k)
                if self._keys[k][3]:
                    self.commits.append(self._commit(k, c, PENDING))
            self.findings.append(finding(
                "transactional_offset_commit_pending", path,
                f"producer {pid} has {len(commits)} transactional offset commit(s) with no "
                f"COMMIT/ABORT marker by the end of the replay (not applied)",
                offset=commits[0][1].log_offset))

    def _pending_in_loop(self, pending: dict[int, list[tuple[int, AppliedCommit]]]) -> None:
        """The commits the compiled loop holds, handed to Python's ``pending`` (each
        producer's in log order, the producers in the order their first came) and held by
        Python from now on. At a partition's end, or before a block the loop cannot hold
        through."""
        held = self._held_commits
        if not held.live:
            return
        codes = {code: pid for pid, code in self._producers.items()}
        for code in held.open_producers():
            for e in held.entries(code):
                k = int(held.key[e, 0])
                self._hold(pending, codes[code], k,
                           self.current.unpack(held.state[e].tolist(), held.metadata[e]))
        held.clear()

    def _producer_codes(self, pids: np.ndarray) -> np.ndarray:
        """Each producer id's code in the loop's held commits (made when first met)."""
        known = self._producers
        for pid in np.unique(pids).tolist():
            known.setdefault(pid, len(known))
        lookup = np.fromiter(known.keys(), np.int64, len(known))
        codes = np.fromiter(known.values(), np.int64, len(known))
        at = np.argsort(lookup)
        return codes[at[np.searchsorted(lookup, pids, sorter=at)]]

    def _block(self, b: Block, chunk: chunks.Chunk, lo: int, lp: int, path: str,
               pending: dict[int, list[tuple[int, AppliedCommit]]]) -> None:
        """One block of records. Plain offset commits (most of a real log) are applied by the
        compiled loop, and the groups' own records it may fold are reduced to those whose
        effect no later one overwrites; every other row goes to Python, one at a time, in log
        order."""
        n = len(b)
        self.records += n
        self._sync()
        table, cols = chunk.table, chunk.columns
        batch = cols.batch[lo:lo + n]
        ok = b.status == ST_OK
        gcode = np.where(ok, b.vals[:, 0], 0)
        wanted = ok & self._wanted_np[gcode] if len(self._wanted_np) else np.zeros(n, bool)
        txn = table.is_transactional[batch]
        commit = wanted & (b.rtype <= OFFSET_COMMIT_TYPES[-1])
        plain = commit & ~txn
        kinds = plain.astype(np.int8) + 2 * (~ok | (wanted & ~plain)).astype(np.int8)
        suspects = self._suspects(b, wanted)
        errors = (b.status == ST_ERROR).any()
        if self._loop_holds and not self._loop_may_hold(b, commit, errors):
            self._loop_holds = False
            self._now = None
            self._pending_in_loop(pending)
            self._groups_to_python()
        pids = np.where(txn | table.is_control[batch], table.producer_id[batch], -1)
        producers = np.zeros(n, np.int64)
        if self._loop_holds:
            held = commit & txn
            kinds[held] = _offsets.HELD
            control = np.flatnonzero(b.status == ST_SKIP)
            kinds[control] = _offsets.OTHER_GROUP
            markers = chunks.control_types(cols, lo + control)
            kinds[control[markers == 0]] = _offsets.ABORT
            kinds[control[markers == 1]] = _offsets.COMMIT
            txn_rows = np.flatnonzero(kinds >= _offsets.HELD)
            if len(txn_rows):
                producers[txn_rows] = self._producer_codes(pids[txn_rows])
            self._held_commits.ensure(self._held_commits.live + int(held.sum()),
                                      len(self._producers))
            plain = commit  # the keys the loop holds for, met with the plain ones
        if not errors:
            # a record only the reference reads is applied by Python out of the loop's order:
            # a block holding one folds nothing, and meets its groups as Python reaches them
            self._meet(b, wanted, plain, lp)
            if self._loop_holds:  # the loop applies the groups' own records itself
                modern = wanted & (b.rtype > GROUP_METADATA_TYPE)
                self._meet_members(b, modern)
                kinds[modern] = _offsets.MODERN
                kinds[wanted & (b.rtype == GROUP_METADATA_TYPE)] = _offsets.CLASSIC
            else:
                foldable = wanted & ~txn & (b.vver >= 0) & (b.rtype >= GROUP_METADATA_TYPE)
                foldable[list(suspects)] = False
                kinds[foldable] = _offsets.FOLDABLE
        offsets = np.ascontiguousarray(cols.offset[lo:lo + n])
        stamps = np.ascontiguousarray(cols.timestamp[lo:lo + n])
        first_row = self.records - n
        left = self._compiled(b, kinds, np.where(ok, b.vals[:, 0], -1), offsets, stamps, lp,
                              first_row, producers, pids, suspects)
        self._keep_modern_values(b, kinds, first_row)
        self._keep_classic_values(b, first_row)
        if not len(left.rows):
            return
        rows = left.rows
        status, rtype, ev = b.status[rows], b.rtype[rows], left.events
        keep = (status == ST_OK) & (rtype > OFFSET_COMMIT_TYPES[-1])
        markers = chunks.control_types(cols, lo + rows)
        act = np.full(len(rows), _SPECIAL, np.int8)
        act[keep & (rtype > GROUP_METADATA_TYPE)] = _MODERN
        act[kinds[rows] == 1] = _PLAIN
        control = status == ST_SKIP
        act[control] = np.where((markers[control] == 0) | (markers[control] == 1), _MARKER,
                                _NONE)
        act[status == ST_ERROR] = _ERROR
        act[ev == _offsets.REGRESSED] = _REGRESSED
        act[ev == _offsets.DELETED] = _DELETED
        act[ev == _offsets.REMOVED] = _REMOVED
        act[ev == _offsets.SUSPECT] = _SUSPECT
        # an anomaly's group is its key's (a marker's row holds those of the commits it applied)
        groups = np.where(ev != _offsets.PYTHON, left.current[:, _offsets.C_GROUP], gcode[rows])
        self._python_rows(b, left, act, keep, markers, groups.tolist(), offsets[rows].tolist(),
                          stamps[rows].tolist(), pids[rows].tolist(), lp, path, first_row,
                          pending, suspects)
        if self._found:
            self.sink.take(self._found.columns(left, self.decoder.texts))

    def _loop_may_hold(self, b: Block, commit: np.ndarray, errors: bool) -> bool:
        """Whether the compiled loop may hold this block's transactional commits: no record
        only the reference reads (``errors``: Python applies it out of the loop's order) and
        no offset commit whose metadata span lies outside the block's data (the loop leaves
        such a row to Python, which it cannot do while it holds a commit of the key)."""
        rows = np.flatnonzero(commit & (b.vver >= 0))
        p, m = b.vals[rows, self.slots.metadata], b.vals[rows, self.slots.metadata + 1]
        return not errors and not ((p < 0) | (m < 0) | (p + m > len(b.data))).any()

    def _meet(self, b: Block, wanted: np.ndarray, plain: np.ndarray, lp: int) -> None:
        """The groups and commit keys a block holds for the first time, made known before the
        compiled loop runs, so that it applies their commits and folds their records from
        their first row on (else a log's first block, or a new group's, is Python's alone).
        Groups are met in the order of their first rows, as Python would meet them."""
        rows = np.flatnonzero(wanted)
        rows = rows[~self._met[b.vals[rows, 0]]]  # most blocks: none
        codes, first = np.unique(b.vals[rows, 0], return_index=True)
        for code in codes[np.argsort(first)].tolist():
            if self._by_code[code] is None:
                self._group(code, lp)
        self._know(len(self.decoder.keys))
        rows = np.flatnonzero(plain)
        rows = rows[~self._known[b.key_code[rows]]]  # most blocks: none
        keys, first = np.unique(b.key_code[rows], return_index=True)
        s, texts = self.slots, self.decoder.texts
        for k, i in zip(keys.tolist(), rows[first].tolist(), strict=True):
            if k not in self._keys:
                row = b.vals[i]
                self._key(k, int(row[0]), texts[row[s.topic]], int(row[s.partition]))

    def _meet_members(self, b: Block, modern: np.ndarray) -> None:
        """The members whose parts a block holds for the first time, numbered for the
        compiled loop (``_offsets.ModernGroups``) by group and member id (the rule's
        ``members848`` key), from the ids in their keys; a key without one gets -1 (the
        rule skips its part)."""
        s = self.slots
        keys = len(self.decoder.keys)
        if keys > len(self._member_of):
            grow = max(1024, 2 * keys) - len(self._member_of)
            self._member_of = np.concatenate([self._member_of, np.full(grow, -2, np.int64)])
        rows = np.flatnonzero(modern & np.isin(b.rtype, s.member_list))
        rows = rows[self._member_of[b.key_code[rows]] == -2]  # most blocks: none
        if not len(rows):
            return
        _, first = np.unique(b.key_code[rows], return_index=True)
        rows = rows[first]
        names = spans(b.data, b.vals[rows, s.member], b.vals[rows, s.member + 1], True)
        for i, name in zip(rows.tolist(), names, strict=True):
            number = -1
            if name is not None:
                group = int(b.vals[i, 0])
                number = self._member_numbers.get((group, name), -1)
                if number < 0:
                    number = self._member_numbers[(group, name)] = \
                        self._modern_groups.member(group)
                    self._member_names.append(name)
            self._member_of[b.key_code[i]] = number

    def _keep_modern_values(self, b: Block, kinds: np.ndarray, first_row: int) -> None:
        """After the compiled loop: the bytes of the member parts it set in this block (the
        latest of each), and of the partition metadata they or their groups now name."""
        mg = self._modern_groups
        rows = np.zeros(0, np.int64)
        if mg.n_touched:
            touched = mg.touched[:mg.n_touched]
            touched = touched[mg.present.reshape(-1)[touched] != 0]  # not tombstoned since
            at = mg.value_row.reshape(-1)[touched] - first_row
            raw = mg.raw
            for f, value in zip(touched.tolist(),
                                spans(b.data, b.value_pos[at], b.value_len[at], False),
                                strict=True):
                raw[f] = value
            rows = mg.value_topics.reshape(-1)[touched]
        named = np.flatnonzero(kinds == _offsets.MODERN)
        named = named[(b.vver[named] >= 0)
                      & (self.slots.role_codes[b.rtype[named]] == _offsets.R_TOPICS)]
        if not len(named) and not len(rows):
            return
        current = named[mg.topics[b.vals[named, 0]] == first_row + named]
        rows = np.union1d(rows[rows >= first_row] - first_row, current)
        values = self._topic_values
        for i, value in zip(rows.tolist(), spans(b.data, b.value_pos[rows], b.value_len[rows],
                                                 False), strict=True):
            values[first_row + i] = (int(b.rtype[i]), value, int(b.vver[i]))
        if len(values) > self._topic_limit:  # those no group or present part names go
            named = set(mg.topics[mg.topics >= 0].tolist())
            named.update(mg.value_topics[mg.present != 0].tolist())
            self._topic_values = {row: v for row, v in values.items() if row in named}
            self._topic_limit = max(TOPIC_VALUES_KEPT, 2 * len(self._topic_values))

    def _keep_classic_values(self, b: Block, first_row: int) -> None:
        """After the compiled loop: the bytes of the classic groups' last values it set in
        this block."""
        cg = self._classic_groups
        if not cg.n_touched:
            return
        touched = cg.touched[:cg.n_touched]
        at = cg.value_row[touched] - first_row
        raw = cg.raw
        for g, value in zip(touched.tolist(),
                            spans(b.data, b.value_pos[at], b.value_len[at], False), strict=True):
            raw[g] = value

    def _groups_to_python(self) -> None:
        """What the compiled loop applied of the groups' own records, set on the groups as
        the rules (``_classic``, ``_modern``) would have left them, and the loop's state
        cleared: before Python applies them instead, and at the end. Of a group's classic
        and KIP-848 records, the later decides its kind (a ``GroupMetadataValue`` or any
        KIP-848 record) and its deletion (any record)."""
        cg = self._classic_groups
        none = _offsets.NONE
        for code in np.flatnonzero(cg.last_row >= 0).tolist():
            g = self._by_code[code]
            value_row, raw = int(cg.value_row[code]), cg.raw[code]
            version = int(cg.version[code])
            if value_row >= 0:
                v = GROUP_METADATA_VALUE.read_exact(memoryview(raw)[2:], version)
                g.kind = "classic"
                g.protocol_type, g.protocol, g.leader, g.state_timestamp = (
                    v["protocolType"], v["protocol"], v["leader"], v["currentStateTimestamp"])
                g.generation = int(cg.generation[code])
            offset, timestamp, lp = cg.removed[code].tolist()
            g.deleted_at = None if offset == none else Location(lp, offset, timestamp)
            self._member_count[g.group] = int(cg.members[code])
            self._members[g.group] = (raw, version) if int(cg.last_row[code]) == value_row \
                else None
        self._modern_to_python()
        cg.clear()

    def _modern_to_python(self) -> None:
        """The KIP-848 / KIP-932 part of :meth:`_groups_to_python`."""
        mg, cg = self._modern_groups, self._classic_groups
        names: dict[int, _TopicNames] = {}

        def topic_names(row: int) -> _TopicNames | None:
            if row < 0:
                return None
            if row not in names:
                names[row] = _TopicNames(*self._topic_values[row])
            return names[row]

        none = _offsets.NONE
        for code in np.flatnonzero(mg.last_row >= 0).tolist():
            g = self._by_code[code]
            last = int(mg.last_row[code])
            if code >= len(cg.last_row) or last > cg.value_row[code]:
                g.kind = "consumer" if int(mg.last_type[code]) in CONSUMER_GROUP_TYPES \
                    else "share"
            if code >= len(cg.last_row) or last > cg.last_row[code]:
                offset, timestamp, lp = mg.removed[code].tolist()
                g.deleted_at = None if offset == none else Location(lp, offset, timestamp)
            epoch, assignment_epoch = int(mg.epoch[code]), int(mg.assignment_epoch[code])
            g.epoch = None if epoch == none else epoch
            g.assignment_epoch = None if assignment_epoch == none else assignment_epoch
            if mg.topics[code] >= 0:
                self._topic_names[g.group] = topic_names(int(mg.topics[code]))
        members = np.flatnonzero(mg.live[:mg.members] > 0)
        for m in members[np.argsort(mg.created[members], kind="stable")].tolist():
            present = np.flatnonzero(mg.present[m])
            entry = {}
            for r in present[np.argsort(mg.added[m, present], kind="stable")].tolist():
                entry[_PARTS[r]] = _Part(_PARTS[r], int(mg.value_type[m, r]),
                                         mg.raw[m * _offsets.PARTS + r],
                                         int(mg.value_version[m, r]),
                                         topic_names(int(mg.value_topics[m, r])))
            self._by_code[int(mg.group_of[m])].members848[self._member_names[m]] = entry
        mg.clear()
        self._member_of[:] = -2
        self._member_numbers.clear()
        self._member_names.clear()
        self._topic_values.clear()

    def _compiled(self, b: Block, kinds: np.ndarray, groups: np.ndarray, offsets: np.ndarray,
                  stamps: np.ndarray, lp: int, first_row: int, producers: np.ndarray,
                  pids: np.ndarray, suspects: dict[int, list[int]]) -> _LeftToPython:
        """The compiled loop (``_offsets.apply_commits``) over a block: it applies the plain
        commits of keys it may apply to the state arrays, holds transactional commits for
        their markers and applies or drops them there, marks the groups' records it may
        fold, and returns the rows it leaves to Python (with what a regressed or deleted key
        held before) and, among the folded rows, those Python must still apply."""
        s, state, n = self.slots, self.current, len(b)
        state.ensure(len(self.decoder.keys))
        room = n + self._held_commits.live + n  # a marker answers for each commit it held
        rows = np.empty(room, np.int64)
        events = np.empty(room, np.int8)
        previous = np.empty((room, _offsets.S_WIDTH), np.int64)
        was_present = np.empty(room, np.int8)
        current = np.empty((room, _offsets.C_WIDTH), np.int64)
        previous_metadata: list[str | None] = []
        current_metadata: list[str] = []
        group_state = np.empty(room, np.int8)
        generation = np.empty(room, np.int64)
        suspect = np.zeros(n, np.int8)
        suspect[list(suspects)] = 1
        run = np.empty(n, np.int64)
        self._group_runs[:] = 0  # runs are numbered within the block
        self._modern_groups.ensure(len(self.decoder.texts), 0, n)
        self._classic_groups.ensure(len(self.decoder.texts), n)
        count = _offsets.apply_commits(
            kinds, b.key_code, b.vver, b.vals, s.offset, s.leader_epoch, s.metadata,
            s.commit_timestamp, s.expire_timestamp, s.topic, s.partition, offsets, stamps, lp,
            first_row, b.data, state.fast, state.blocked, state.present, state.order,
            state.state, state.metadata, rows, events, previous, was_present,
            previous_metadata, current, current_metadata, group_state, generation, b.rtype,
            s.role_codes, s.scalar_slot, self._member_of, self._modern_groups,
            self._classic_groups, suspect, s.generation, s.members,
            np.ascontiguousarray(groups, np.int64), self._group_fast, self._group_runs, run,
            producers, np.ascontiguousarray(pids, np.int64), self._held_commits)
        left = _LeftToPython(rows[:count], events[:count], previous[:count],
                             was_present[:count], previous_metadata, current[:count],
                             current_metadata, group_state[:count], generation[:count])
        return left.joined(self._unsuperseded(b, run))

    def _unsuperseded(self, b: Block, run: np.ndarray) -> np.ndarray:
        """The folded rows (``run`` >= 0) whose effect on their group no later row of the
        same run overwrites: the last classic ``GroupMetadataValue`` of each group's run (it
        replaces the whole group), the last of each KIP-848 / KIP-932 key and record type in
        a run, and the first of each (a member's parts are added in the order their first
        records came), and every partition metadata record (a member's part keeps the topic
        names of its moment)."""
        folded = np.flatnonzero(run >= 0)
        if not len(folded):
            return folded
        rtype = b.rtype[folded]
        runs = run[folded]
        span = int(runs.max()) + 1
        classic = rtype == GROUP_METADATA_TYPE
        # a run is numbered within its group and the block; a group's key codes are its own;
        # a classic group's records are one key (negative: apart from the others)
        keys = np.where(classic, -1 - (b.vals[folded, 0] * span + runs),
                        (b.key_code[folded].astype(np.int64) * (max(RECORD_TYPES) + 1)
                         + rtype) * span + runs)
        order = np.argsort(keys, kind="stable")
        edges = np.flatnonzero(keys[order][1:] != keys[order][:-1])
        first = order[np.concatenate([[0], edges + 1])]
        last = order[np.concatenate([edges, [len(order) - 1]])]
        keep = np.isin(rtype, self.slots.topic_names)
        keep[last] = True
        keep[first[~classic[first]]] = True
        return folded[keep]

    def _python_rows(self, b: Block, left: _LeftToPython, act: np.ndarray, keep: np.ndarray,
                     markers: np.ndarray, groups: list[int], offs: list[int],
                     times: list[int], pids: list[int], lp: int, path: str, first_row: int,
                     pending: dict[int, list[tuple[int, AppliedCommit]]],
                     suspects: dict[int, list[int]]) -> None:
        """The rows the compiled loop left, one at a time, by what each asks for."""
        s, state, vals, rows = self.slots, self.current, b.vals, left.rows
        rtype = b.rtype[rows]
        # what the Python rows read, as lists: values and member ids of the records kept as
        # bytes (group metadata, KIP-848 parts), the epochs KIP-848 records set
        raws = spans(b.data, b.value_pos[rows], np.where(keep, b.value_len[rows], -1), False)
        members = spans(b.data, vals[rows, s.member],
                        np.where(np.isin(rtype, s.member_list) & keep,
                                 vals[rows, s.member + 1], -1), True)
        scalars = vals[rows, s.scalar_slot[np.clip(rtype, 0, len(s.scalar_slot) - 1)]].tolist()
        vv = b.vver[rows].tolist()
        metadata = iter(left.previous_metadata)  # one per row the loop regressed or deleted
        current_metadata = iter(left.current_metadata)  # one per row the loop regressed
        found = self._found
        by_code, modern, rtypes = self._by_code, self._modern, rtype.tolist()
        rows_, acts = rows.tolist(), act.tolist()
        # the loop applies the groups' own records while it holds the transactional commits:
        # it says each row's group's state and generation then
        loop_says = self._loop_holds
        states, generations = left.group_state.tolist(), left.generation.tolist()
        xs: Iterable[int] = range(len(rows))
        if found is not None and loop_says and np.isin(act, (*_LOOP_FOUND, _SUSPECT)).all():
            # the loop's anomalies at once: the other rows make none
            xs = self._found_at_once(act, groups, offs, times, lp, left)
        for x in xs:
            i, a = rows_[x], acts[x]
            if a == _MODERN:
                code, version = groups[x], vv[x]
                modern(by_code[code] or self._group(code, lp), rtypes[x], lp, offs[x], times[x],
                       version >= 0, scalars[x], raws[x], version, members[x])
                continue
            self._row = first_row + i
            if loop_says:
                self._now = (_STATES[states[x]],
                             None if generations[x] == _offsets.NONE else generations[x])
            if found is not None and a == _REGRESSED:  # rendered from the block's columns
                found.regressed(x, *self._state_of(by_code[groups[x]]))
                continue
            if a == _REMOVED:  # a group's tombstone, applied by the loop
                self._emit(GroupDeletion(by_code[groups[x]].group,
                                         Location(lp, offs[x], times[x])))
                continue
            if a == _SUSPECT:  # a classic group's metadata, applied by the loop
                self._suspect(b, i, by_code[groups[x]], Location(lp, offs[x], times[x]), path,
                              suspects[i])
                continue
            if found is not None and a == _DELETED:
                found.deleted(x)
                continue
            if a in (_REGRESSED, _DELETED):  # applied by the compiled loop: report it
                current = left.current[x].tolist()
                k = current[_offsets.C_KEY]
                previous_metadata = next(metadata)
                before = state.unpack(left.previous[x].tolist(), previous_metadata) \
                    if left.was_present[x] else None
                made = state.unpack(current[_offsets.C_STATE:],
                                    next(current_metadata) if a == _REGRESSED else "")
                if a == _DELETED:
                    self._deleted(k, by_code[groups[x]], before,
                                  Location(made.log_partition, made.log_offset,
                                           made.log_timestamp))
                else:
                    self._regressed(k, by_code[groups[x]], before, made)
                continue
            where = Location(lp, offs[x], times[x])
            if a == _PLAIN:  # a plain commit left to Python: a new key, ...
                row = vals[i].tolist()
                k = int(b.key_code[i])
                if k not in self._keys:
                    self._key(k, groups[x], self.decoder.texts[row[s.topic]], row[s.partition])
                g = by_code[groups[x]] or self._group(groups[x], lp)
                self._apply(k, g, self._row_commit(b, row, vv[x], where, None))
            elif a == _MARKER:
                self._marker(pids[x], markers[x] == 1, where, pending)
            elif a == _ERROR:
                self._refused(b.raw_key(i), b.raw_value(i), where,
                              pids[x] if pids[x] >= 0 else None, pending, path)
            elif a == _SPECIAL:
                self._special(b, i, rtypes[x], groups[x], vv[x], pids[x], where, path, pending,
                              raws[x], suspects.get(i, ()))

    def _found_at_once(self, act: np.ndarray, groups: list[int], offs: list[int],
                       times: list[int], lp: int, left: _LeftToPython) -> list[int]:
        """The regressions, deletions and removed groups the compiled loop applied, handed
        to the column sink's accumulator at once (the loop says each regression's group
        state and generation); the rows left for Python to apply."""
        regressed = np.flatnonzero(act == _REGRESSED)
        generations = left.generation[regressed].astype(object)
        generations[left.generation[regressed] == _offsets.NONE] = None
        texts = self.decoder.texts
        self._found.bulk(regressed.tolist(), _STATE_NAMES[left.group_state[regressed]].tolist(),
                         generations.tolist(), np.flatnonzero(act == _DELETED).tolist(),
                         [(texts[groups[x]], lp, offs[x], times[x])
                          for x in np.flatnonzero(act == _REMOVED).tolist()])
        return np.flatnonzero(~np.isin(act, _LOOP_FOUND)).tolist()

    def _suspects(self, b: Block, wanted: np.ndarray) -> dict[int, list[int]]:
        """Group metadata records among the ``wanted`` rows whose members'
        consumer-protocol bytes do not all read cleanly (the subscription exactly at its own
        version's layout, the assignment at its own): row -> member indices, for
        :func:`describe_protocol` to say what is wrong. One compiled call for the block."""
        s = self.slots
        meta = np.flatnonzero(wanted & (b.rtype == GROUP_METADATA_TYPE) & (b.vver >= 0))
        meta = meta[b.vals[meta, s.members + 1] > 0]
        if not len(meta):
            return {}
        elements = self._elements[b.vver[meta]]
        bad = versioned_fields(self.decoder.family.ops, elements, self._element_defaults,
                                 b.data, np.ascontiguousarray(b.vals[meta, s.members]),
                                 np.ascontiguousarray(b.vals[meta, s.members + 1]),
                                 s.subscription, self._subscriptions, True, s.assignment,
                                 self._assignments, False)
        out: dict[int, list[int]] = {}
        for r, k in bad:
            out.setdefault(int(meta[r]), []).append(k)
        return out

    def _row_commit(self, b: Block, row: list[int], version: int, where: Location,
                    pid: int | None) -> AppliedCommit:
        """An offset commit (or tombstone) from its decoded slots."""
        s = self.slots
        if version < 0:
            return self._applied(None, None, where, pid)
        return AppliedCommit(row[s.offset], row[s.leader_epoch], b.text(row, s.metadata),
                             row[s.commit_timestamp], row[s.expire_timestamp], version,
                             where.partition, where.offset, where.timestamp, pid, None, None)

    def _special(self, b: Block, i: int, t: int, code: int, version: int, pid: int,
                 where: Location, path: str, pending: dict[int, list[tuple[int, AppliedCommit]]],
                 raw: bytes | None, bad: list[int]) -> None:
        """A transactional offset commit, or a classic group's metadata (``bad``: its
        members whose consumer-protocol bytes did not read cleanly), decoded."""
        s = self.slots
        g = self._group(code, where.partition)
        row = b.vals[i].tolist()
        if t in OFFSET_COMMIT_TYPES:  # inside a transaction: held until its marker
            k = int(b.key_code[i])
            if k not in self._keys:
                self._key(k, code, self.decoder.texts[row[s.topic]], row[s.partition])
            self._hold(pending, pid, k, self._row_commit(b, row, version, where, pid))
        elif t == GROUP_METADATA_TYPE:
            if version < 0:
                self._classic(g, where, path, None, 0, None, None, [])
                return
            ptype = b.text(row, s.protocol_type)
            fields = (ptype, row[s.generation], b.text(row, s.protocol), b.text(row, s.leader),
                      row[s.state_timestamp])
            self._classic(g, where, path, fields, row[s.members + 1], raw, version,
                          self._suspects_of(b, i, row, ptype, bad))

    def _suspects_of(self, b: Block, i: int, row: list[int], protocol_type: str | None,
                     bad: list[int]) -> list[tuple[str, bytes, bytes]]:
        """A classic group's members (``bad``: their indices) whose consumer-protocol bytes
        did not read cleanly, as (member id, subscription, assignment)."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not bad:
            return []
        s, data = self.slots, b.data
        members = b.elements(b.value_program(i)[1], "members", row)
        return [(b.text(m, s.member_id), blob(data, m[s.subscription], m[s.subscription + 1]),
                 blob(data, m[s.assignment], m[s.assignment + 1]))
                for m in (members[j] for j in bad)]

    def _suspect(self, b: Block, i: int, g: GroupState, where: Location, path: str,
                 bad: list[int]) -> None:
        """A classic group's metadata the compiled loop applied, whose members'
        consumer-protocol bytes did not all read cleanly: what is wrong with them."""
        row = b.vals[i].tolist()
        ptype = b.text(row, self.slots.protocol_type)
        self._protocol_findings(g, where, path, ptype, self._suspects_of(b, i, row, ptype, bad))

    def _refused(self, key: bytes | None, value: bytes | None, where: Location,
                 pid: int | None, pending: dict[int, list[tuple[int, AppliedCommit]]],
                 path: str) -> None:
        """A record the programs refused: the reference decoder says why (its message is the
        finding's), or, should it read the record after all, its reading stands."""
        try:
            rec = decode_record(key, value)
        except UnknownRecordTypeError as e:
            self.findings.append(finding(
                "consumer_offsets_unknown_record_type", path,
                f"record type {e.record_type} is not one this reader knows (a newer "
                f"broker's record, e.g. streams groups); skipped, not guessed at",
                offset=where.offset))
            return
        except UnsupportedVersionError as e:
            self.findings.append(finding("consumer_offsets_unknown_version", path, str(e),
                                         offset=where.offset))
            return
        except SegtoolsError as e:
            self.findings.append(finding("consumer_offsets_record_undecodable", path, str(e),
                                         offset=where.offset))
            return
        code = self.decoder.code(rec.group_id)
        self._sync()
        if not self._wanted[code]:
            return
        g = self._group(code, where.partition)
        t, v = rec.record_type, rec.value
        if t in OFFSET_COMMIT_TYPES:
            k = self.decoder.key_code(key[2:])
            if k not in self._keys:
                self._key(k, code, rec.key["topic"], rec.key["partition"])
            c = self._applied(v, rec.value_version, where, pid)
            if pid is not None:
                self._hold(pending, pid, k, c)
            else:
                self._apply(k, g, c)
        elif t == GROUP_METADATA_TYPE:
            if v is None:
                self._classic(g, where, path, None, 0, None, None, [])
                return
            suspects = []
            for m in v["members"] if v["protocolType"] == CONSUMER_PROTOCOL_TYPE else ():
                sub, asg = m["subscription"], m["assignment"]
                if not self._protocol_ok(sub, asg):
                    suspects.append((m["memberId"], sub, asg))
            fields = (v["protocolType"], v["generation"], v["protocol"], v["leader"],
                      v["currentStateTimestamp"])
            self._classic(g, where, path, fields, len(v["members"]), value, rec.value_version,
                          suspects)
        else:
            role = self.slots.roles[t]
            epoch = {_GROUP_EPOCH: "epoch", _ASSIGNMENT_EPOCH: "assignmentEpoch"}.get(role)
            self._modern(g, t, where.partition, where.offset, where.timestamp, v is not None,
                         v[epoch] if v is not None and epoch else None, value,
                         rec.value_version, rec.key.get("memberId"))

    @staticmethod
    def _applied(value: Mapping | None, version: int | None, where: Location,
               pid: int | None) -> AppliedCommit:
        if value is None:
            return AppliedCommit(None, -1, "", -1, -1, None, where.partition, where.offset,
                                 where.timestamp, pid, None, None)
        return AppliedCommit(value["offset"], value["leaderEpoch"], value["metadata"],
                             value["commitTimestamp"], value["expireTimestamp"], version,
                             where.partition, where.offset, where.timestamp, pid, None, None)

    # -- applying

    def _hold(self, pending: dict[int, list[tuple[int, AppliedCommit]]], pid: int, k: int,
              c: AppliedCommit) -> None:
        """A transactional commit waits for its marker; meanwhile its key's later commits
        are applied by Python, in order, not by the compiled loop."""
        pending.setdefault(pid, []).append((k, c))
        self._held[k] = self._held.get(k, 0) + 1
        self.current.fast[k] = 0
        group = self._keys[k][0]
        self._held_groups[group] = self._held_groups.get(group, 0) + 1
        self._group_fast[group] = 0

    def _release(self, k: int) -> None:
        self._held[k] -= 1
        if not self._held[k]:
            del self._held[k]
            self.current.fast[k] = not self._keys[k][3]
        group = self._keys[k][0]
        self._held_groups[group] -= 1
        if not self._held_groups[group]:
            del self._held_groups[group]
            self._group_fast[group] = 1

    def _marker(self, pid: int, commit: bool, where: Location,
                pending: dict[int, list[tuple[int, AppliedCommit]]]) -> None:
        """A COMMIT applies the producer's held commits, an ABORT discards them."""
        for k, c in pending.pop(pid, []):
            self._release(k)
            # the marker's fields are the commit's last two (a namedtuple's _replace costs
            # more than the rest of a marker's work)
            decided = AppliedCommit(*c[:-2], where.offset, where.timestamp)
            if commit:
                self._apply(k, self._by_code[self._keys[k][0]], decided)
            elif self._keys[k][3]:
                self.commits.append(self._commit(k, decided, ABORTED))

    def _apply(self, k: int, g: GroupState, c: AppliedCommit) -> None:
        """One commit (or tombstone) applied to its key, in Python (the compiled loop does
        the same to the keys it may apply)."""
        previous = self.current.get(k)
        if self.history and self._keys[k][3]:
            self.commits.append(self._commit(k, c))
        if c.offset is None:
            if previous is not None:
                self.current.delete(k)
            self._deleted(k, g, previous, Location(c.log_partition, c.log_offset,
                                                   c.log_timestamp))
            return
        if previous is not None and c.offset < previous.offset:
            self._regressed(k, g, previous, c)
        self.current.set(k, c, self._row)

    def _deleted(self, k: int, g: GroupState, previous: AppliedCommit | None,
                 where: Location) -> None:
        _, topic, partition, _ = self._keys[k]
        self._emit(OffsetDeletion(g.group, topic, partition,
                                  None if previous is None else previous.offset, where))

    def _regressed(self, k: int, g: GroupState, previous: AppliedCommit, c: AppliedCommit) -> None:
        self._emit(OffsetRegression(self._commit(k, previous), self._commit(k, c),
                                    *self._state_of(g)))

    def _classic(self, g: GroupState, where: Location, path: str, fields: tuple | None,
                 members: int, raw: bytes | None, version: int | None,
                 suspects: list[tuple[str, bytes, bytes]]) -> None:
        """A classic group's metadata (None: its tombstone). ``fields`` are its protocol
        type, generation, protocol, leader and state timestamp; ``suspects`` the members
        whose consumer-protocol bytes did not read cleanly, for the reference to explain."""
        if fields is None:
            g.deleted_at = where
            g.members = []
            self._members[g.group] = None
            self._member_count[g.group] = 0
            self._emit(GroupDeletion(g.group, where))
            return
        g.deleted_at = None
        g.kind = "classic"
        (g.protocol_type, g.generation, g.protocol, g.leader, g.state_timestamp) = fields
        self._member_count[g.group] = members
        self._members[g.group] = (raw, version)
        self._protocol_findings(g, where, path, g.protocol_type, suspects)

    def _protocol_findings(self, g: GroupState, where: Location, path: str,
                           protocol_type: str | None,
                           suspects: list[tuple[str, bytes, bytes]]) -> None:
        """What :func:`describe_protocol` finds wrong with a classic group's members'
        consumer-protocol bytes."""
        for member_id, subscription, assignment in suspects:
            expanded, problems = describe_protocol(protocol_type, subscription, assignment)
            for p in problems:
                self.findings.append(finding(
                    "consumer_protocol_undecodable", path,
                    f"group {g.group} member {member_id}: {p}", offset=where.offset))
            quirk = expanded.get("subscription", {}).get("read_as_version")
            if quirk is not None:
                self.findings.append(finding(
                    "consumer_protocol_older_layout", path,
                    f"group {g.group} member {member_id}: a version "
                    f"{expanded['subscription']['version']} subscription laid out as version "
                    f"{quirk} (as some non-Java clients, e.g. kafka-go, write it); read as "
                    "such, the coordinator never parses it", offset=where.offset))

    def _protocol_ok(self, subscription: bytes, assignment: bytes) -> bool:
        """The compiled check that a member's consumer-protocol bytes read cleanly: the
        subscription exactly at its own version's layout, the assignment at its own (what
        ``versioned_fields`` checks for a record's members at once). Anything else
        is left to :func:`describe_protocol`, which says what."""
        ops = self.decoder.family.ops
        return (versioned(ops, self._subscriptions, subscription, 0, len(subscription), True)
                and versioned(ops, self._assignments, assignment, 0, len(assignment), False))

    def _modern(self, g: GroupState, record_type: int, lp: int, offset: int, timestamp: int,
                present: bool, scalar: int | None, raw: bytes | None, version: int | None,
                member: str | None) -> None:
        """KIP-848 / KIP-932 records: each keyed part of the group is set or tombstoned
        (``present`` False). ``scalar`` is the epoch a group or assignment record sets; the
        record sits at ``offset`` of log partition ``lp``."""
        g.kind = "consumer" if record_type in CONSUMER_GROUP_TYPES else "share"
        g.deleted_at = None
        role = self.slots.roles[record_type]
        if role == _GROUP_EPOCH:
            g.epoch = scalar if present else None
            if not present:
                g.deleted_at = Location(lp, offset, timestamp)
                self._emit(GroupDeletion(g.group, g.deleted_at))
        elif role == _TOPICS:
            if present:
                self._topic_names[g.group] = _TopicNames(record_type, raw, version)
        elif role == _ASSIGNMENT_EPOCH:
            g.assignment_epoch = scalar if present else None
        elif role is not None and member is not None:
            entry = g.members848.setdefault(member, {})
            if not present:
                entry.pop(role, None)
                if not entry:
                    g.members848.pop(member)
                return
            entry[role] = _Part(role, record_type, raw, version,
                                self._topic_names.get(g.group))

    def finish(self) -> None:
        """The state the replay ends in, as values: offsets, members, topic names."""
        self._groups_to_python()
        for k, c in self.current.items():
            group, topic, partition, _ = self._keys[k]
            self._by_code[group].offsets[(topic, partition)] = self._commit(k, c)
        for name, latest in self._members.items():
            self.groups[name].members = [] if latest is None else _classic_members(*latest)
        for g in self.groups.values():
            for parts in g.members848.values():
                for role, part in parts.items():
                    parts[role] = part.decode()
        for name, names in self._topic_names.items():
            self.groups[name].topic_names = names.names()


@runtime_checkable
class SplitSink(Protocol):
    """A sink that partitions replayed in worker processes fill (the CLI's spools, whose
    lines are rendered where the anomalies are found): each worker makes its own with
    :meth:`split`, and what its :meth:`handover` returns (it must pickle) reaches this
    process, which takes them in the partitions' order (:meth:`adopt`), or drops them when
    the replay runs again in one process (:meth:`discard`). A sink that is only a callable gets
    each worker's anomalies back as values, in the order they were found."""

    def __call__(self, anomaly: Anomaly) -> None: ...

    def split(self) -> SplitSink: ...

    def handover(self) -> object: ...

    def adopt(self, handed: object) -> None: ...

    def discard(self, handed: object) -> None: ...


#: A replay's bytes weighed in the segments :mod:`segtools.fanout` counts: replaying 16 KiB
#: of ``__consumer_offsets`` costs about what summarising one segment's headers does, so a
#: log of a few tens of MiB goes to worker processes and the fixtures stay in this one.
REPLAY_BYTES_PER_SEGMENT = 16 * 1024


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a replay is asked (the arguments of :func:`replay_offsets`), for each process."""

    at: int | None
    groups: list[str] | None
    limit: int
    history: bool
    topic: str | None
    partition: int | None

    def replayer(self, sink: Callable[[Anomaly], None] | None) -> _Replayer:
        return _Replayer(self.at, self.groups, self.limit, self.history, self.topic,
                         self.partition, sink)


class _OnePartition(NamedTuple):
    """A worker's answer for one partition: its replay, and its sink's handover (a
    :class:`SplitSink`'s, or the anomalies found, for a sink that is only a callable)."""

    replay: OffsetsReplay
    handed: object


def _taking_effect(c: OffsetCommit) -> tuple[int, int, int]:
    """The order of a replay's history: when each commit took effect, then where it sits."""
    return c.effective_timestamp, c.where.partition, c.where.offset


def _answer(replayer: _Replayer, parts: Sequence[PartitionDir]) -> OffsetsReplay:
    return OffsetsReplay(tuple(p.path for p in parts), replayer.groups,
                         tuple(sorted(replayer.commits, key=_taking_effect)),
                         tuple(replayer.regressions), tuple(replayer.deletions),
                         tuple(replayer.group_deletions), tuple(replayer.findings),
                         replayer.records)


def _serial(parts: Sequence[PartitionDir], asked: _Asked,
            sink: Callable[[Anomaly], None] | None,
            advance: Callable[[int], None] | None) -> OffsetsReplay:
    """Every partition in this process, through one replayer, in the order given."""
    replayer = asked.replayer(sink)
    for pdir in parts:
        replayer.partition(pdir, advance)
    replayer.finish()
    return _answer(replayer, parts)


def _replay_one(asked: _Asked, sink: Callable[[Anomaly], None] | None,
                pdir: PartitionDir) -> _OnePartition:
    """One partition, replayed on its own (a job :func:`segtools.fanout.ordered` runs in a
    worker process)."""
    if isinstance(sink, SplitSink):
        own = sink.split()
        replayer = asked.replayer(own)
        handed: Callable[[], object] = own.handover
    elif sink is not None:
        found: list[Anomaly] = []
        replayer = asked.replayer(found.append)
        handed = found.copy
    else:
        replayer = asked.replayer(None)
        handed = type(None)
    replayer.partition(pdir, None)
    replayer.finish()
    return _OnePartition(_answer(replayer, (pdir,)), handed())


def _merged(parts: Sequence[PartitionDir], replays: Sequence[OffsetsReplay]
            ) -> OffsetsReplay | None:
    """The partitions' replays as one replay of them all would answer, in the partitions'
    order (groups as first met, anomalies and findings as found, the history in the order
    the commits took effect), or None when a group's records lie in two partitions: one
    replay keeps its state across them, and only one replay says what that gives."""
    groups: dict[str, GroupState] = {}
    for r in replays:
        for name, g in r.groups.items():
            if groups.setdefault(name, g) is not g:
                return None

    def joined(field_name: str) -> tuple:
        return tuple(itertools.chain.from_iterable(getattr(r, field_name) for r in replays))

    return OffsetsReplay(tuple(p.path for p in parts), groups,
                         tuple(sorted(joined("commits"), key=_taking_effect)),
                         joined("regressions"), joined("deletions"), joined("group_deletions"),
                         joined("findings"), sum(r.records for r in replays))


class OffsetsReplaying:
    """A replay begun. A group lives in one partition of ``__consumer_offsets`` (its
    coordinator's: ``GroupCoordinatorService.partitionFor``), so partitions replay
    independently: a large log's go to :mod:`segtools.fanout`'s worker processes, forked
    here (before the caller starts a thread: a progress bar's), largest first so that the
    last to finish is a small one; :meth:`result` merges their answers into the one a single
    replay gives, byte for byte. Copies of one partition (log dirs of several brokers) hold
    the same groups: they replay in one process, as does a log too small to be worth a
    worker's start, or a run with one worker (``--jobs 1``)."""

    def __init__(self, partitions: Iterable[PartitionDir], asked: _Asked,
                 sink: Callable[[Anomaly], None] | None, processes: int | None):
        self.parts = list(partitions)
        self.asked = asked
        self.sink = sink
        numbers = [p.name.partition if p.name else -1 for p in self.parts]
        weight = sum(p.size_bytes for p in self.parts) // REPLAY_BYTES_PER_SEGMENT
        self._order = sorted(range(len(self.parts)), key=lambda i: -self.parts[i].size_bytes)
        self._jobs: Iterator[_OnePartition] | None = None
        if len(set(numbers)) == len(numbers) and \
                fanout.planned(len(self.parts), segments=weight, processes=processes) > 1:
            self._jobs = fanout.ordered(partial(_replay_one, asked, sink),
                                        [self.parts[i] for i in self._order],
                                        segments=weight, processes=processes)

    @property
    def forked(self) -> bool:
        """Whether the partitions went to worker processes."""
        return self._jobs is not None

    def result(self, advance: Callable[[int], None] | None = None) -> OffsetsReplay:
        """The replay's answer; ``advance(bytes)`` is told the progress (a partition at a
        time when they replay in workers)."""
        if self._jobs is None:
            return _serial(self.parts, self.asked, self.sink, advance)
        done: list[_OnePartition | None] = [None] * len(self.parts)
        for i, one in zip(self._order, self._jobs, strict=True):
            done[i] = one
            if advance is not None:
                advance(self.parts[i].size_bytes)
        answers = [one for one in done if one is not None]
        merged = _merged(self.parts, [one.replay for one in answers])
        if merged is None:
            if isinstance(self.sink, SplitSink):
                for one in answers:
                    self.sink.discard(one.handed)
            return _serial(self.parts, self.asked, self.sink, None)
        for one in answers:
            if isinstance(self.sink, SplitSink):
                self.sink.adopt(one.handed)
            elif self.sink is not None:
                for anomaly in one.handed:
                    self.sink(anomaly)
        return merged


def begin_replay(partitions: Iterable[PartitionDir], *, at: int | None = None,
                 groups: list[str] | None = None, history: bool = False,
                 topic: str | None = None, partition: int | None = None,
                 sink: Callable[[Anomaly], None] | None = None,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT,
                 processes: int | None = None) -> OffsetsReplaying:
    """:func:`replay_offsets` begun: its workers (when it has any) forked and started now,
    the answer from :meth:`OffsetsReplaying.result`. ``processes``: how many worker
    processes at most (None: :func:`segtools.fanout.workers`; 1: this process only)."""
    return OffsetsReplaying(partitions, _Asked(at, groups, limit, history, topic, partition),
                            sink, processes)


def replay_offsets(partitions: Iterable[PartitionDir], *, at: int | None = None,
                   groups: list[str] | None = None, history: bool = False,
                   topic: str | None = None, partition: int | None = None,
                   sink: Callable[[Anomaly], None] | None = None,
                   advance: Callable[[int], None] | None = None,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT,
                   processes: int | None = None) -> OffsetsReplay:
    """Replay ``__consumer_offsets`` partitions up to ``at`` (epoch ms, inclusive; the end of
    the logs when None), keeping only groups matching the ``groups`` globs (all when None).

    ``history`` keeps every commit, tombstone, aborted and pending commit (of ``topic`` and
    ``partition`` when given) in :attr:`OffsetsReplay.commits`; without it memory holds only
    the live state. ``sink`` receives each regression, deletion and group deletion as it is
    found (they are then not kept; when the partitions replay in worker processes, each
    partition's once it is done, in the partitions' order: a :class:`SplitSink` is filled in
    the workers); ``advance(bytes)`` is told the progress. ``processes`` as
    :func:`begin_replay`'s."""
    return begin_replay(partitions, at=at, groups=groups, history=history, topic=topic,
                        partition=partition, sink=sink, limit=limit,
                        processes=processes).result(advance)
