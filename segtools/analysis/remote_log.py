"""Tiered storage: what ``__remote_log_metadata`` says each partition has in remote storage.

``TopicBasedRemoteLogMetadataManager`` keeps no other record of the remote tier: every copy and
delete the ``RemoteLogManager`` makes is an event in that topic, and a broker rebuilds its
``RemoteLogMetadataCache`` by replaying them. This module does the same replay, per user
topic partition, from a log dir's ``__remote_log_metadata-*`` partitions:

- ``RemoteLogSegmentMetadataRecord`` adds a segment in ``COPY_SEGMENT_STARTED``
  (``RemoteLogMetadataCache.addCopyInProgressSegment`` accepts no other state);
- ``RemoteLogSegmentMetadataUpdateRecord`` moves it along ``RemoteLogSegmentState``:
  ``COPY_SEGMENT_STARTED`` -> ``COPY_SEGMENT_FINISHED`` or ``DELETE_SEGMENT_STARTED``;
  ``COPY_SEGMENT_FINISHED`` -> ``DELETE_SEGMENT_STARTED`` -> ``DELETE_SEGMENT_FINISHED``; the
  same state again is a retry (``isValidTransition``); anything else is refused;
- ``RemotePartitionDeleteMetadataRecord`` moves the partition along
  ``DELETE_PARTITION_MARKED`` -> ``STARTED`` -> ``FINISHED`` (``RemotePartitionDeleteState``).

The highest offset in remote storage follows ``RemoteLogManager.findHighestRemoteOffset``:
``RemoteLogLeaderEpochState`` remembers, per leader epoch, the highest offset any segment that
finished copying holds in that epoch (deletion does not lower it), and the local leader epoch
lineage is walked from its newest epoch down to the first epoch the remote tier has.
``UnifiedLog`` deletes a local segment by local retention only at or below that offset.

Findings need a clock (``now_ms``): a copy or a delete is only stuck once it has been in
progress far longer than the tasks that drive it (see :data:`STUCK_AFTER_MS`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from segtools.analysis.partition_log import iter_chunks
from segtools.decode.programs import ST_OK, ST_SKIP, Decoder, remote_log_metadata_family
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats.checkpoints import EpochEntry
from segtools.formats.internal.generated import UnsupportedVersionError
from segtools.formats.internal.remote_log_metadata import (
    PARTITION_DELETE,
    PARTITION_DELETE_STATES,
    SEGMENT_METADATA,
    SEGMENT_METADATA_SNAPSHOT,
    SEGMENT_METADATA_UPDATE,
    SEGMENT_STATES,
    decode_frame,
)
from segtools.storage.partition import PartitionDir
from segtools.units import format_duration

COPY_SEGMENT_STARTED = "COPY_SEGMENT_STARTED"
COPY_SEGMENT_FINISHED = "COPY_SEGMENT_FINISHED"
DELETE_SEGMENT_STARTED = "DELETE_SEGMENT_STARTED"
DELETE_SEGMENT_FINISHED = "DELETE_SEGMENT_FINISHED"
DELETE_PARTITION_FINISHED = "DELETE_PARTITION_FINISHED"

#: ``remote.log.manager.task.interval.ms`` default: how often the copy and expiration tasks run.
TASK_INTERVAL_MS = 30_000
#: A copy (or a delete) still in progress this long after it started is stuck: one hour is 120
#: runs of the copy and expiration tasks (``remote.log.manager.task.interval.ms``, 30 s), whose
#: failures retry with a back-off capped at 30 s (``remote.log.manager.task.retry.backoff.max.ms``),
#: and time to upload a default 1 GiB segment at under 300 KiB/s. A copy is one segment, made
#: in one go by ``RLMCopyTask.copyLogSegment``, which writes ``COPY_SEGMENT_FINISHED`` as soon
#: as the plugin returns; nothing legitimate keeps it open that long.
STUCK_AFTER_MS = 120 * TASK_INTERVAL_MS

_SEGMENT_MOVES = {
    COPY_SEGMENT_STARTED: (COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED),
    COPY_SEGMENT_FINISHED: (DELETE_SEGMENT_STARTED,),
    DELETE_SEGMENT_STARTED: (DELETE_SEGMENT_FINISHED,),
    DELETE_SEGMENT_FINISHED: (),
}
_PARTITION_MOVES = {
    None: ("DELETE_PARTITION_MARKED",),
    "DELETE_PARTITION_MARKED": ("DELETE_PARTITION_STARTED",),
    "DELETE_PARTITION_STARTED": (DELETE_PARTITION_FINISHED,),
    DELETE_PARTITION_FINISHED: (),
}


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class RemoteSegment:
    """One remote log segment (``RemoteLogSegmentMetadata``) and where its story stands."""

    segment_id: str
    start_offset: int
    end_offset: int
    leader_epochs: tuple[EpochEntry, ...]  # segmentLeaderEpochs, by epoch
    size_in_bytes: int
    max_timestamp_ms: int
    broker_id: int  # the broker that started the copy
    state: str
    copy_started_ms: int  # the COPY_SEGMENT_STARTED event's timestamp
    state_changed_ms: int  # the latest accepted event's timestamp
    has_custom_metadata: bool = False
    copy_finished: bool = False  # reached COPY_SEGMENT_FINISHED at some point

    @property
    def live(self) -> bool:
        """Copied and not (being) deleted: the data a fetch can read remotely."""
        return self.state == COPY_SEGMENT_FINISHED

    def epoch_end_offsets(self) -> dict[int, int]:
        """``RemoteLogMetadataCache.highestOffsetForEpoch(epoch, segment)``: the last offset of
        each of the segment's epochs (the next epoch's start - 1, or the segment's end)."""
        out = {}
        for i, e in enumerate(self.leader_epochs):
            nxt = self.leader_epochs[i + 1].start_offset if i + 1 < len(self.leader_epochs) \
                else self.end_offset + 1
            out[e.epoch] = nxt - 1
        return out

    def to_json(self) -> dict:
        return {"segment_id": self.segment_id, "start_offset": self.start_offset,
                "end_offset": self.end_offset,
                "leader_epochs": [{"epoch": e.epoch, "start_offset": e.start_offset}
                                  for e in self.leader_epochs],
                "size": self.size_in_bytes, "max_timestamp": self.max_timestamp_ms,
                "broker_id": self.broker_id, "state": self.state,
                "copy_started_ms": self.copy_started_ms,
                "state_changed_ms": self.state_changed_ms,
                "has_custom_metadata": self.has_custom_metadata,
                "copy_finished": self.copy_finished}


@dataclass(frozen=True, slots=True)
class PartitionDelete:
    """The latest accepted ``RemotePartitionDeleteMetadata`` of a partition."""

    state: str
    broker_id: int
    event_ms: int
    marked_ms: int

    def to_json(self) -> dict:
        return {"state": self.state, "broker_id": self.broker_id, "event_ms": self.event_ms,
                "marked_ms": self.marked_ms}


@dataclass(frozen=True, slots=True)
class RemotePartition:
    """One user topic partition's remote tier, as the replayed events leave it."""

    topic: str
    topic_id: str
    partition: int
    segments: tuple[RemoteSegment, ...]  # by start offset, then copy start
    delete: PartitionDelete | None
    metadata_partition: int  # the __remote_log_metadata partition holding its events
    highest_epoch_offsets: Mapping[int, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def live_segments(self) -> tuple[RemoteSegment, ...]:
        return tuple(s for s in self.segments if s.live)

    @property
    def remote_size(self) -> int:
        """Bytes in ``COPY_SEGMENT_FINISHED`` segments (what ``buildRetentionSizeData`` counts,
        before its leader-epoch filter)."""
        return sum(s.size_in_bytes for s in self.live_segments)

    def highest_offset(self, local_epochs: Sequence[EpochEntry] = (),
                       log_end_offset: int | None = None) -> int:
        """``RemoteLogManager.findHighestRemoteOffset``: -1 when nothing was copied. Without a
        local lineage (no ``leader-epoch-checkpoint``), the highest offset any epoch reached."""
        if not self.highest_epoch_offsets:
            return -1
        if not local_epochs:
            return max(self.highest_epoch_offsets.values())
        lineage = sorted(local_epochs, key=lambda e: e.epoch)
        for i in range(len(lineage) - 1, -1, -1):
            epoch = lineage[i].epoch
            remote = self.highest_epoch_offsets.get(epoch)
            if remote is None:
                continue
            # LeaderEpochFileCache.endOffsetFor: the next epoch's start, or the log end offset
            end = lineage[i + 1].start_offset if i + 1 < len(lineage) else log_end_offset
            if end is not None and end <= remote:
                return end - 1
            return remote
        return -1

    def to_json(self, local_epochs: Sequence[EpochEntry] = (),
                log_end_offset: int | None = None) -> dict:
        return {"topic": self.topic, "topic_id": self.topic_id, "partition": self.partition,
                "metadata_partition": self.metadata_partition,
                "highest_offset_in_remote_storage": self.highest_offset(local_epochs,
                                                                        log_end_offset),
                "remote_size": self.remote_size,
                "partition_delete": self.delete.to_json() if self.delete else None,
                "segments": [s.to_json() for s in self.segments]}


@dataclass(frozen=True, slots=True)
class RemoteLogMetadata:
    """Every partition the replay met, the findings of reading it, and what it read."""

    partitions: tuple[RemotePartition, ...]
    findings: tuple[Finding, ...]
    records: int
    metadata_partitions: tuple[str, ...]  # the __remote_log_metadata-N dirs read


# --------------------------------------------------------------------------- the replay


@dataclass(slots=True)
class _Partition:
    topic: str
    topic_id: str
    partition: int
    metadata_partition: int
    segments: dict[str, RemoteSegment] = field(default_factory=dict)
    delete: PartitionDelete | None = None
    epochs: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Replay:
    findings: list[Finding] = field(default_factory=list)
    by_key: dict[tuple[str, int], _Partition] = field(default_factory=dict)
    by_segment: dict[str, _Partition] = field(default_factory=dict)
    records: int = 0

    def note(self, code: str, path: str, offset: int, message: str) -> None:
        self.findings.append(finding(code, path, message, offset=offset))

    def partition(self, tip: Mapping, metadata_partition: int) -> _Partition:
        key = (tip["id"], tip["partition"])
        p = self.by_key.get(key)
        if p is None:
            p = self.by_key[key] = _Partition(tip["name"], tip["id"], tip["partition"],
                                              metadata_partition)
        return p

    def apply(self, api_key: int, data: Mapping, path: str, offset: int,
              metadata_partition: int) -> None:
        if api_key == SEGMENT_METADATA:
            self._add(data, path, offset, metadata_partition)
        elif api_key == SEGMENT_METADATA_UPDATE:
            self._update(data, path, offset)
        elif api_key == PARTITION_DELETE:
            self._partition_delete(data, path, offset, metadata_partition)
        elif api_key == SEGMENT_METADATA_SNAPSHOT:
            self.note("remote_log_metadata_snapshot_record", path, offset,
                      f"a RemoteLogSegmentMetadataSnapshotRecord (segment "
                      f"{data['segmentId']}) in the topic: it names no topic partition, so "
                      "the replay cannot place it (Kafka writes these to snapshot files)")

    def _state(self, code: int, names: Mapping[int, str], path: str, offset: int,
               what: str) -> str | None:
        name = names.get(code)
        if name is None:
            self.note("remote_log_metadata_unknown_state", path, offset,
                      f"{what} has state id {code}, which Kafka does not define; the record "
                      "is ignored")
        return name

    def _add(self, data: Mapping, path: str, offset: int, metadata_partition: int) -> None:
        state = self._state(data["remoteLogSegmentState"], SEGMENT_STATES, path, offset,
                            "RemoteLogSegmentMetadataRecord")
        if state is None:
            return
        seg_id = data["remoteLogSegmentId"]["id"]
        if state != COPY_SEGMENT_STARTED or seg_id in self.by_segment:
            why = "it is already known" if seg_id in self.by_segment else f"its state is {state}"
            self.note("remote_log_segment_invalid_transition", path, offset,
                      f"remote segment {seg_id} added again or not as COPY_SEGMENT_STARTED "
                      f"({why}): RemoteLogMetadataCache refuses it")
            return
        p = self.partition(data["remoteLogSegmentId"]["topicIdPartition"], metadata_partition)
        epochs = tuple(sorted((EpochEntry(e["leaderEpoch"], e["offset"])
                               for e in data["segmentLeaderEpochs"]), key=lambda e: e.epoch))
        ts = data["eventTimestampMs"]
        p.segments[seg_id] = RemoteSegment(
            seg_id, data["startOffset"], data["endOffset"], epochs,
            data["segmentSizeInBytes"], data["maxTimestampMs"], data["brokerId"], state, ts, ts,
            data["customMetadata"] is not None)
        self.by_segment[seg_id] = p

    def _update(self, data: Mapping, path: str, offset: int) -> None:
        state = self._state(data["remoteLogSegmentState"], SEGMENT_STATES, path, offset,
                            "RemoteLogSegmentMetadataUpdateRecord")
        if state is None:
            return
        seg_id = data["remoteLogSegmentId"]["id"]
        p = self.by_segment.get(seg_id)
        if p is None:
            self.note("remote_log_segment_invalid_transition", path, offset,
                      f"an update to {state} for remote segment {seg_id}, which no "
                      "RemoteLogSegmentMetadataRecord added (RemoteResourceNotFoundException)")
            return
        seg = p.segments[seg_id]
        if state != seg.state and state not in _SEGMENT_MOVES[seg.state]:
            self.note("remote_log_segment_invalid_transition", path, offset,
                      f"remote segment {seg_id} of {p.topic}-{p.partition} cannot go from "
                      f"{seg.state} to {state} (RemoteLogSegmentState.isValidTransition); "
                      "the update is ignored")
            return
        finished = seg.copy_finished or state == COPY_SEGMENT_FINISHED
        p.segments[seg_id] = replace(seg, state=state,
                                     state_changed_ms=data["eventTimestampMs"],
                                     copy_finished=finished,
                                     has_custom_metadata=seg.has_custom_metadata
                                     or data["customMetadata"] is not None)
        if state == COPY_SEGMENT_FINISHED:
            for epoch, end in p.segments[seg_id].epoch_end_offsets().items():
                p.epochs[epoch] = max(p.epochs.get(epoch, -1), end)

    def _partition_delete(self, data: Mapping, path: str, offset: int,
                          metadata_partition: int) -> None:
        state = self._state(data["remotePartitionDeleteState"], PARTITION_DELETE_STATES,
                            path, offset, "RemotePartitionDeleteMetadataRecord")
        if state is None:
            return
        p = self.partition(data["topicIdPartition"], metadata_partition)
        now = p.delete.state if p.delete else None
        if state != now and state not in _PARTITION_MOVES[now]:
            self.note("remote_log_segment_invalid_transition", path, offset,
                      f"the remote partition delete of {p.topic}-{p.partition} cannot go from "
                      f"{now or 'nothing'} to {state} (RemotePartitionDeleteState."
                      "isValidTransition); the record is ignored")
            return
        marked = p.delete.marked_ms if p.delete else data["eventTimestampMs"]
        p.delete = PartitionDelete(state, data["brokerId"], data["eventTimestampMs"], marked)

    def refused(self, value: bytes | None, path: str, offset: int) -> None:
        """A record the programs could not read: the reference says why."""
        try:
            decode_frame(value)
        except UnsupportedVersionError as e:
            self.note("remote_log_metadata_unknown_version", path, offset, f"{e}; skipped")
        except SegtoolsError as e:
            self.note("remote_log_metadata_undecodable", path, offset, str(e))


def _metadata_partition_number(partition: PartitionDir) -> int:
    return partition.name.partition if partition.name is not None else -1


def replay(partitions: Iterable[PartitionDir], until_ms: int | None = None) -> RemoteLogMetadata:
    """Replay ``__remote_log_metadata`` partitions (each in offset order; events of one user
    partition all go to one metadata partition, ``RemoteLogMetadataTopicPartitioner``).
    ``until_ms``: only the events that happened by then (``eventTimestampMs``): the remote
    tier as it stood at a command's ``--at``, not with the copies and deletes after it."""
    r = _Replay()
    read: list[str] = []
    decoder = Decoder(remote_log_metadata_family())
    for part in partitions:
        read.append(str(part.path))
        number = _metadata_partition_number(part)
        for chunk in iter_chunks(part, r.findings):
            cols = chunk.columns
            for lo, block in decoder.blocks(chunk):
                for i in range(len(block)):
                    status = block.status[i]
                    if status == ST_SKIP:
                        continue
                    offset = int(cols.offset[lo + i])
                    r.records += 1
                    if status != ST_OK or block.vver[i] < 0:
                        r.refused(block.raw_value(i), chunk.path, offset)
                        continue
                    value = block.value(i)
                    if until_ms is not None and value.get("eventTimestampMs", -1) > until_ms:
                        continue
                    r.apply(int(block.rtype[i]), value, chunk.path, offset, number)
    parts = tuple(sorted(
        (RemotePartition(p.topic, p.topic_id, p.partition,
                         tuple(sorted(p.segments.values(),
                                      key=lambda s: (s.start_offset, s.copy_started_ms))),
                         p.delete, p.metadata_partition, dict(p.epochs))
         for p in r.by_key.values()), key=lambda p: (p.topic, p.partition)))
    return RemoteLogMetadata(parts, tuple(r.findings), r.records, tuple(read))


# --------------------------------------------------------------------------- the checks


def is_within_leader_epochs(segment: RemoteSegment, log_end_offset: int,
                            lineage: Sequence[EpochEntry]) -> bool:
    """``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs``: whether the segment belongs to
    the local leader epoch lineage (only such segments count for retention)."""
    if not lineage or not segment.leader_epochs:
        return False
    local = {e.epoch: e.start_offset for e in lineage}
    epochs = sorted(local)
    seg = sorted(segment.leader_epochs, key=lambda e: e.epoch)
    if seg[-1].epoch < epochs[0] or seg[-1].epoch > epochs[-1]:
        return False
    first = next((e.epoch for e in seg if e.epoch >= epochs[0]), None)
    if first is None:
        return False
    for i, e in enumerate(seg):
        if e.epoch < first:
            continue
        if e.epoch not in local:
            return False
        j = bisect.bisect_left(epochs, e.epoch)
        if e.epoch == first and j > 0 and e.start_offset < local[e.epoch]:
            return False
        # the segment's end of this epoch must not pass the lineage's end of it
        epoch_end = seg[i + 1].start_offset - 1 if i + 1 < len(seg) else segment.end_offset
        lineage_end = local[epochs[j + 1]] - 1 if j + 1 < len(epochs) else log_end_offset - 1
        if epoch_end > lineage_end:
            return False
    return True


def counted_as_copied(segment: RemoteSegment, log_end_offset: int,
                      lineage: Sequence[EpochEntry]) -> int | None:
    """The highest offset of ``segment`` that ``findHighestRemoteOffset`` can count as copied:
    the metadata cache keeps the highest offset per leader epoch whatever the lineage, and the
    broker caps each epoch it shares with the local lineage at that epoch's local end
    (``LeaderEpochFileCache.endOffsetFor``). None when it shares no epoch."""
    local = sorted(lineage, key=lambda e: e.epoch)
    starts = {e.epoch: e.start_offset for e in local}
    seg = sorted(segment.leader_epochs, key=lambda e: e.epoch)
    best = None
    for i, e in enumerate(seg):
        if e.epoch not in starts:
            continue
        j = next(k for k, x in enumerate(local) if x.epoch == e.epoch)
        lineage_end = local[j + 1].start_offset - 1 if j + 1 < len(local) else log_end_offset - 1
        epoch_end = seg[i + 1].start_offset - 1 if i + 1 < len(seg) else segment.end_offset
        if e.start_offset <= lineage_end:
            best = max(best if best is not None else -1, min(epoch_end, lineage_end))
    return best


def _age(now_ms: int, since: int) -> str:
    return format_duration(max(0, now_ms - since))


def check(rp: RemotePartition, *, now_ms: int, path: str,
          local_epochs: Sequence[EpochEntry] | None = None,
          local_start_offset: int | None = None, log_end_offset: int | None = None,
          stuck_after_ms: int = STUCK_AFTER_MS) -> list[Finding]:
    """The findings of one partition's remote tier at ``now_ms``; with the local log's leader
    epochs and offsets, also where the two tiers disagree."""
    out: list[Finding] = []
    label = rp.label
    live = rp.live_segments
    for s in rp.segments:
        if s.state == COPY_SEGMENT_STARTED and now_ms - s.copy_started_ms > stuck_after_ms:
            covered = any(o.start_offset <= s.start_offset and o.end_offset >= s.end_offset
                          for o in live)
            code = "remote_segment_copy_abandoned" if covered \
                else "remote_segment_copy_unfinished"
            tail = ("a later copy holds these offsets, so this one is an abandoned attempt "
                    "whose objects may linger in the store") if covered else \
                ("local retention keeps these offsets and everything after them on the "
                 "broker until they are copied")
            out.append(finding(code, path,
                               f"{label}: the copy of offsets {s.start_offset}-{s.end_offset} "
                               f"(remote segment {s.segment_id}, broker {s.broker_id}) started "
                               f"{_age(now_ms, s.copy_started_ms)} ago and never finished; "
                               f"{tail}", offset=s.start_offset))
        elif s.state == DELETE_SEGMENT_STARTED and \
                now_ms - s.state_changed_ms > stuck_after_ms:
            out.append(finding("remote_segment_delete_unfinished", path,
                               f"{label}: the delete of remote segment {s.segment_id} (offsets "
                               f"{s.start_offset}-{s.end_offset}) started "
                               f"{_age(now_ms, s.state_changed_ms)} ago and never finished; the "
                               "expiration task retries it when its walk reaches it",
                               offset=s.start_offset))
    if rp.delete is not None and rp.delete.state != DELETE_PARTITION_FINISHED and \
            now_ms - rp.delete.event_ms > stuck_after_ms:
        out.append(finding("remote_partition_delete_unfinished", path,
                           f"{label}: the deletion of the partition's remote data is at "
                           f"{rp.delete.state} since {_age(now_ms, rp.delete.event_ms)} ago"))
    ordered = sorted(live, key=lambda s: (s.start_offset, s.end_offset))
    for prev, cur in itertools.pairwise(ordered):
        if cur.start_offset <= prev.end_offset:
            out.append(finding("remote_segments_overlap", path,
                               f"{label}: remote segments {prev.segment_id} "
                               f"({prev.start_offset}-{prev.end_offset}) and {cur.segment_id} "
                               f"({cur.start_offset}-{cur.end_offset}) overlap",
                               offset=cur.start_offset))
        elif cur.start_offset > prev.end_offset + 1:
            out.append(finding("remote_segments_gap", path,
                               f"{label}: no remote segment holds offsets "
                               f"{prev.end_offset + 1}-{cur.start_offset - 1}",
                               offset=prev.end_offset + 1))
    if ordered and local_start_offset is not None and \
            local_start_offset > max(s.end_offset for s in ordered) + 1:
        high = max(s.end_offset for s in ordered)
        out.append(finding("remote_segments_gap", path,
                           f"{label}: offsets {high + 1}-{local_start_offset - 1} are neither in "
                           "remote storage nor on the broker", offset=high + 1))
    if local_epochs and log_end_offset is not None:
        for s in live:
            if not is_within_leader_epochs(s, log_end_offset, local_epochs):
                epochs = ", ".join(f"{e.epoch}@{e.start_offset}" for e in s.leader_epochs)
                local = ", ".join(f"{e.epoch}@{e.start_offset}" for e in local_epochs)
                counted = counted_as_copied(s, log_end_offset, local_epochs)
                copied = (f"findHighestRemoteOffset still counts its offsets up to {counted} "
                          "(the epochs the lineage shares) as copied") if counted is not None \
                    else "none of its offsets count as copied (findHighestRemoteOffset)"
                out.append(finding("remote_leader_epoch_mismatch", path,
                                   f"{label}: remote segment {s.segment_id} "
                                   f"({s.start_offset}-{s.end_offset}, epochs {epochs}) is not in "
                                   f"the local leader epoch lineage ({local}): the expiration "
                                   "task skips it (isRemoteSegmentWithinLeaderEpochs), so "
                                   f"remote retention never deletes it; {copied}",
                                   offset=s.start_offset))
    return out
