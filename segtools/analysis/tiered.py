"""The two tiers of a tiered partition side by side, and the remote tier's retention.

A topic with ``remote.storage.enable=true`` has its history in two places: the broker's log
dir (recent segments) and the remote store (older ones, known only through
``__remote_log_metadata``, see :mod:`segtools.analysis.remote_log`). This module joins them per
partition for the ``tiered`` view and applies retention to the remote part as the
``RemoteLogManager``'s expiration task (``RLMExpirationTask.cleanupExpiredRemoteLogSegments``)
does, over the segments of the local leader epoch lineage, oldest epoch first:

* a segment already at ``DELETE_SEGMENT_STARTED`` is deleted again (a retry);
* one whose epochs are all at or below the lineage's first and which ends below the log start
  offset goes (``isSegmentBreachByLogStartOffset``);
* otherwise, for a segment in the lineage (``isRemoteSegmentWithinLeaderEpochs``): time
  (``maxTimestampMs <= now - retention.ms``) then size: the *total* size, local segments not
  yet copied (``UnifiedLog.onlyLocalLogSegmentsSize``) plus copied remote ones, over
  ``retention.bytes``; each deleted segment takes its size off the excess;
* the walk stops at the first segment in the lineage that stays (deletion is a prefix), and
  segments whose epochs all precede the lineage's earliest epoch are removed as unreferenced.

The expiration task also stops at a segment being copied at that moment
(``segmentIdsBeingCopied``), which only the broker's memory knows: here a copy started less
than :data:`~segtools.analysis.remote_log.STUCK_AFTER_MS` ago is taken as in progress, and an
older one as abandoned, which the task weighs like any other segment. A delete that did not
finish is retried only if the walk reaches it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from segtools.analysis.config import TopicConfig
from segtools.analysis.partition_input import Loaded, PartitionInput, Skipped
from segtools.analysis.remote_input import (
    StoredSegment,
    StoreHoldings,
    remote_metadata,
    store_holdings,
)
from segtools.analysis.remote_log import (
    COPY_SEGMENT_FINISHED,
    COPY_SEGMENT_STARTED,
    DELETE_SEGMENT_FINISHED,
    DELETE_SEGMENT_STARTED,
    STUCK_AFTER_MS,
    RemoteLogMetadata,
    RemotePartition,
    RemoteSegment,
    check,
    is_within_leader_epochs,
)
from segtools.findings import Finding, finding
from segtools.formats.checkpoints import EpochEntry
from segtools.formats.internal.remote_log_metadata import TOPIC
from segtools.storage.location import RemotePath, as_path
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import parse_partition_dir_name
from segtools.storage.remote_store import RemoteStore
from segtools.units import format_bytes, format_duration, format_retention, format_time

# Remote reason codes (``retention --format json``: ``remote_segments[].reason``).
REMOTE_RETENTION_MS_BREACHED = "remote_retention_ms_breached"
REMOTE_RETENTION_BYTES_BREACHED = "remote_retention_bytes_breached"
REMOTE_LOG_START_OFFSET_BREACHED = "remote_log_start_offset_breached"
REMOTE_DELETE_RETRY = "remote_delete_retry"
REMOTE_LEADER_EPOCH_TRUNCATED = "remote_leader_epoch_truncated"
REMOTE_WITHIN_RETENTION = "remote_within_retention"
REMOTE_BLOCKED_BY_EARLIER_SEGMENT = "remote_blocked_by_earlier_segment"
REMOTE_COPY_UNFINISHED = "remote_copy_unfinished"
REMOTE_NOT_IN_LEADER_EPOCH_LINEAGE = "remote_not_in_leader_epoch_lineage"
REMOTE_ALREADY_DELETED = "remote_already_deleted"
REMOTE_DELETE_POLICY_DISABLED = "remote_delete_policy_disabled"


# --------------------------------------------------------------------------- the partitions


def loaded_log_dirs(loaded: Loaded) -> list[LogDir]:
    """The distinct log dirs the partition inputs come from."""
    seen: dict[Path | RemotePath, LogDir] = {}
    for pi in loaded.partitions:
        # the located path, not Path(...) of it: two buckets with the same keys stay two
        seen.setdefault(as_path(pi.log_dir.path), pi.log_dir)
    return list(seen.values())


def is_tiered(pi: PartitionInput) -> bool:
    return pi.config.remote_storage_enable


def local_lineage(pi: PartitionInput) -> tuple[EpochEntry, ...]:
    return tuple(pi.dir.leader_epochs)


def log_end_offset(pi: PartitionInput) -> int | None:
    return pi.summaries[-1].next_offset if pi.summaries else None


def highest_remote_offset(pi: PartitionInput, rp: RemotePartition | None) -> int:
    """``UnifiedLog.highestOffsetInRemoteStorage`` as the copy task sets it: -1 when nothing
    was copied."""
    if rp is None:
        return -1
    return rp.highest_offset(local_lineage(pi), log_end_offset(pi))


def remote_segment_for_offset(log_dirs: Sequence[LogDir], topic: str, partition: int,
                              offset: int) -> tuple[RemotePartition, RemoteSegment] | None:
    """The copied remote segment that holds ``offset`` of a partition, from the log dirs'
    ``__remote_log_metadata`` (the latest copy when several do): where a fetch below the local
    log start offset is served from (``RemoteLogManager.read``); for an offset below every
    copied segment, the first one after it (where the first record at or after it is)."""
    remote = remote_metadata(log_dirs)
    rp = remote_by_partition(remote).get((topic, partition))
    if rp is None:
        return None
    holding = [s for s in rp.live_segments if s.start_offset <= offset <= s.end_offset]
    if holding:
        return rp, max(holding, key=lambda s: s.copy_started_ms)
    # below the remote log start (its segment deleted): a fetch there is out of range, and
    # the first record at or after it is the start of the next copied segment
    later = [s for s in rp.live_segments if s.start_offset > offset]
    return (rp, min(later, key=lambda s: (s.start_offset, -s.copy_started_ms))) if later \
        else None


# --------------------------------------------------------------------------- remote retention


@dataclass(frozen=True, slots=True)
class RemoteVerdict:
    """What the expiration task does with one remote segment at ``now``, and why."""

    segment: RemoteSegment
    deletable: bool
    reason: str
    reason_text: str

    def to_json(self) -> dict:
        s = self.segment
        return {"segment_id": s.segment_id, "start_offset": s.start_offset,
                "end_offset": s.end_offset, "size": s.size_in_bytes,
                "max_timestamp": s.max_timestamp_ms, "state": s.state,
                "deletable": self.deletable, "reason": self.reason,
                "reason_text": self.reason_text}


def _filtered(lineage: Sequence[EpochEntry]) -> list[EpochEntry]:
    """``RemoteLogManager.buildFilteredLeaderEpochMap``: an epoch whose next epoch starts at the
    same offset holds no records and is dropped."""
    ordered = sorted(lineage, key=lambda e: e.epoch)
    return [e for i, e in enumerate(ordered)
            if i + 1 == len(ordered) or ordered[i + 1].start_offset != e.start_offset]


def remote_verdicts(rp: RemotePartition, config: TopicConfig, *, now_ms: int,
                    lineage: Sequence[EpochEntry], log_end_offset: int | None,
                    log_start_offset: int | None, only_local_size: int
                    ) -> tuple[RemoteVerdict, ...]:
    """Replay one run of ``cleanupExpiredRemoteLogSegments`` for ``rp`` (module doc)."""
    epochs = _filtered(lineage)
    leo = log_end_offset if log_end_offset is not None else \
        max((s.end_offset + 1 for s in rp.segments), default=0)
    lso = log_start_offset if log_start_offset is not None else 0
    out: dict[str, RemoteVerdict] = {}
    for s in rp.segments:
        if s.state == DELETE_SEGMENT_FINISHED:
            out[s.segment_id] = RemoteVerdict(s, False, REMOTE_ALREADY_DELETED,
                                              "deleted from remote storage "
                                              f"{format_time(s.state_changed_ms)}")
    valid = {s.segment_id for s in rp.segments
             if s.state in (COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED)
             and epochs and is_within_leader_epochs(s, leo, epochs)}
    remaining = 0
    if config.retention_bytes > -1:
        total = only_local_size + sum(s.size_in_bytes for s in rp.segments
                                      if s.segment_id in valid
                                      and s.state == COPY_SEGMENT_FINISHED)
        remaining = max(0, total - config.retention_bytes)
        excess_text = (f"local segments not yet copied ({format_bytes(only_local_size)}) and "
                       f"copied remote ones total {format_bytes(total)} > retention.bytes "
                       f"{format_bytes(config.retention_bytes)}")
    cutoff = now_ms - config.retention_ms if config.retention_ms > -1 else None
    stopped_at: str | None = None
    if config.delete:
        for e in epochs:
            if stopped_at is not None:
                break
            in_epoch = sorted((s for s in rp.segments
                               if any(x.epoch == e.epoch for x in s.leader_epochs)
                               and s.state != DELETE_SEGMENT_FINISHED),
                              key=lambda s: s.start_offset)
            for s in in_epoch:
                if s.segment_id in out:
                    continue
                if s.state == DELETE_SEGMENT_STARTED:
                    out[s.segment_id] = RemoteVerdict(
                        s, True, REMOTE_DELETE_RETRY,
                        f"its delete started {format_time(s.state_changed_ms)} and did not "
                        "finish; the expiration task deletes it again")
                    continue
                if s.state == COPY_SEGMENT_STARTED and \
                        now_ms - s.copy_started_ms <= STUCK_AFTER_MS:
                    out[s.segment_id] = RemoteVerdict(
                        s, False, REMOTE_COPY_UNFINISHED,
                        f"its copy started {format_time(s.copy_started_ms)}, so it is taken "
                        "as being copied: the expiration task stops at it "
                        "(segmentIdsBeingCopied)")
                    stopped_at = s.segment_id
                    break
                first = epochs[0].epoch
                if all(x.epoch <= first for x in s.leader_epochs) and s.end_offset < lso:
                    out[s.segment_id] = RemoteVerdict(
                        s, True, REMOTE_LOG_START_OFFSET_BREACHED,
                        f"ends at {s.end_offset} < log start offset {lso}")
                    continue
                if s.segment_id not in valid:
                    continue
                if cutoff is not None and s.max_timestamp_ms <= cutoff:
                    remaining = max(0, remaining - s.size_in_bytes)
                    age = now_ms - s.max_timestamp_ms
                    out[s.segment_id] = RemoteVerdict(
                        s, True, REMOTE_RETENTION_MS_BREACHED,
                        f"newest record {format_time(s.max_timestamp_ms)} is "
                        f"{format_duration(age)} old > retention.ms "
                        f"{format_retention(config.retention_ms)}")
                    continue
                if remaining > 0 and remaining - s.size_in_bytes >= 0:
                    remaining -= s.size_in_bytes
                    out[s.segment_id] = RemoteVerdict(
                        s, True, REMOTE_RETENTION_BYTES_BREACHED,
                        f"{excess_text}; the oldest remote segments go while the rest stays "
                        "at or above retention.bytes")
                    continue
                stopped_at = s.segment_id
                break
    earliest = epochs[0].epoch if epochs else None
    for s in rp.segments:
        if s.segment_id in out:
            continue
        if earliest is not None and s.leader_epochs and \
                all(x.epoch < earliest for x in s.leader_epochs):
            out[s.segment_id] = RemoteVerdict(
                s, True, REMOTE_LEADER_EPOCH_TRUNCATED,
                f"all its leader epochs precede the earliest local epoch {earliest}: "
                "unreferenced, removed after the retention pass")
        elif s.state == COPY_SEGMENT_STARTED:
            out[s.segment_id] = RemoteVerdict(
                s, False, REMOTE_COPY_UNFINISHED,
                f"its copy started {format_time(s.copy_started_ms)} and did not finish")
        elif s.state == DELETE_SEGMENT_STARTED:
            out[s.segment_id] = RemoteVerdict(
                s, False, REMOTE_BLOCKED_BY_EARLIER_SEGMENT,
                f"its delete started {format_time(s.state_changed_ms)} and did not finish; "
                "the expiration task retries it only when its walk reaches it, and the walk "
                "stops at an earlier segment it keeps")
        elif s.segment_id not in valid:
            out[s.segment_id] = RemoteVerdict(
                s, False, REMOTE_NOT_IN_LEADER_EPOCH_LINEAGE,
                "its leader epochs are not in the local leader epoch lineage "
                f"({', '.join(f'{e.epoch}@{e.start_offset}' for e in epochs) or 'unknown'})")
        elif not config.delete:
            out[s.segment_id] = RemoteVerdict(
                s, False, REMOTE_DELETE_POLICY_DISABLED,
                f"cleanup.policy={','.join(config.cleanup_policy)}: retention does not delete")
        else:
            expired = cutoff is not None and s.max_timestamp_ms <= cutoff
            blocked = stopped_at is not None and s.segment_id != stopped_at and expired
            reason = REMOTE_BLOCKED_BY_EARLIER_SEGMENT if blocked else REMOTE_WITHIN_RETENTION
            text = ("past retention itself but an earlier remote segment is kept, and the "
                    "expiration task stops at the first segment it keeps") if blocked else (
                f"newest record {format_time(s.max_timestamp_ms)}, within retention.ms "
                f"{format_retention(config.retention_ms)}" +
                (f" and retention.bytes {format_bytes(config.retention_bytes)}"
                 if config.retention_bytes > -1 else ""))
            out[s.segment_id] = RemoteVerdict(s, False, reason, text)
    return tuple(out[s.segment_id] for s in rp.segments)


def only_local_size(pi: PartitionInput, highest: int) -> int:
    """``UnifiedLog.onlyLocalLogSegmentsSize``: local segments whose base offset is at or past
    the highest offset in remote storage."""
    return sum(s.size for s in pi.summaries if s.base_offset >= highest)


# --------------------------------------------------------------------------- the remote store


def check_store(rp: RemotePartition, held: StoreHoldings, *, label: str
                ) -> tuple[tuple[StoredSegment, ...], list[Finding]]:
    """A reachable store's holdings of ``rp`` against the metadata: what a deleted segment
    left behind, what a finished copy lacks, a ``.log`` whose offsets or leader epochs are not
    those its metadata names, and segments no metadata names."""
    out, findings = [], []
    for s, stored in zip(rp.segments, held.segments, strict=True):
        files, content = stored.files, stored.content
        if s.state == DELETE_SEGMENT_FINISHED:
            if files.found:
                findings.append(finding(
                    "remote_segment_not_deleted", str(files.directory),
                    f"{label}: remote segment {s.segment_id} ({s.start_offset}-{s.end_offset}) "
                    "was deleted (DELETE_SEGMENT_FINISHED) but files of it remain in the store",
                    offset=s.start_offset))
            continue
        out.append(stored)
        if s.state == COPY_SEGMENT_FINISHED and not files.complete:
            code = "remote_segment_missing" if files.log is None else "remote_segment_incomplete"
            findings.append(finding(
                code, str(files.directory),
                f"{label}: remote segment {s.segment_id} ({s.start_offset}-{s.end_offset}) "
                f"finished copying but the store lacks its {', '.join(files.missing)}",
                offset=s.start_offset))
        if content is None:
            continue
        findings += content.findings
        if content.batches and (content.first_offset != s.start_offset
                                or content.last_offset != s.end_offset):
            findings.append(finding(
                "remote_segment_content_mismatch", str(files.log),
                f"{label}: remote segment {s.segment_id} should hold offsets "
                f"{s.start_offset}-{s.end_offset} but its .log holds "
                f"{content.first_offset}-{content.last_offset}", offset=s.start_offset))
        named = {e.epoch for e in s.leader_epochs}
        if content.batches and content.leader_epochs and set(content.leader_epochs) != named:
            findings.append(finding(
                "remote_segment_content_mismatch", str(files.log),
                f"{label}: remote segment {s.segment_id}'s batches carry leader epochs "
                f"{sorted(content.leader_epochs)}, its metadata names {sorted(named)}",
                offset=s.start_offset))
    known = {s.segment_id for s in rp.segments}
    for orphan in held.listed:
        if orphan not in known:
            findings.append(finding(
                "remote_store_orphan_segment", held.directory,
                f"{label}: the store holds segment {orphan}, which __remote_log_metadata "
                "does not name"))
    return tuple(out), findings


# --------------------------------------------------------------------------- the view


@dataclass(frozen=True, slots=True)
class TieredPartition:
    """One partition's two tiers. ``local`` is None for a partition this log dir does not
    hold (its metadata is in a metadata partition here, its data elsewhere)."""

    topic: str
    partition: int
    local: PartitionInput | None
    remote: RemotePartition | None
    highest_offset_in_remote_storage: int
    verdicts: tuple[RemoteVerdict, ...]
    findings: tuple[Finding, ...]
    stored: tuple[StoredSegment, ...] | None = None  # None: no remote store was given
    local_note: str | None = None  # why a partition this log dir holds has no local answer

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"

    def to_json(self) -> dict:
        pi = self.local
        local = None
        if pi is not None:
            local = {"path": str(pi.dir.path), "log_start_offset": pi.log_start_offset,
                     "local_log_start_offset": pi.summaries[0].base_offset
                     if pi.summaries else None,
                     "log_end_offset": log_end_offset(pi),
                     "size": sum(s.size for s in pi.summaries),
                     "segments": len(pi.summaries),
                     "leader_epochs": [{"epoch": e.epoch, "start_offset": e.start_offset}
                                       for e in local_lineage(pi)],
                     "remote_storage_enable": pi.config.remote_storage_enable,
                     "local_retention_ms": pi.config.local_retention_ms_effective,
                     "local_retention_bytes": pi.config.local_retention_bytes_effective}
        remote = self.remote
        by_id = {v.segment.segment_id: v for v in self.verdicts}
        stored = {x.segment_id: x for x in self.stored or ()}
        segments = []
        for s in (remote.segments if remote else ()):
            row = s.to_json()
            v = by_id.get(s.segment_id)
            if v is not None:
                row.update(deletable=v.deletable, reason=v.reason, reason_text=v.reason_text)
            if self.stored is not None:
                x = stored.get(s.segment_id)
                row["store"] = x.to_json() if x is not None else None
            segments.append(row)
        return {"topic": self.topic, "partition": self.partition,
                "topic_id": remote.topic_id if remote else
                (pi.dir.topic_id if pi is not None else None),
                "highest_offset_in_remote_storage": self.highest_offset_in_remote_storage,
                "remote_size": remote.remote_size if remote else 0,
                "metadata_partition": remote.metadata_partition if remote else None,
                "partition_delete": remote.delete.to_json() if remote and remote.delete
                else None,
                "local": local, "local_not_read": self.local_note,
                "remote_segments": segments,
                "findings": [f.to_json() for f in self.findings]}

    def rows(self) -> list[dict]:
        """One flat row per remote segment (the Spark rows)."""
        doc = self.to_json()
        return [{"topic": self.topic, "partition": self.partition,
                 "highest_offset_in_remote_storage": self.highest_offset_in_remote_storage,
                 **{k: seg.get(k) for k in ROW_FIELDS}} for seg in doc["remote_segments"]]


#: The per-segment columns of :meth:`TieredPartition.rows` after topic, partition and the
#: highest remote offset.
ROW_FIELDS = ("segment_id", "start_offset", "end_offset", "size", "max_timestamp", "broker_id",
              "state", "copy_started_ms", "state_changed_ms", "deletable", "reason")


@dataclass(frozen=True, slots=True)
class TieredReport:
    """``segtools tiered`` over a tree, as values."""

    at_ms: int
    partitions: tuple[TieredPartition, ...]
    metadata_partitions: tuple[str, ...]
    records: int
    findings: tuple[Finding, ...] = field(default=())
    store: RemoteStore | None = None

    @property
    def all_findings(self) -> tuple[Finding, ...]:
        return self.findings + tuple(itertools.chain.from_iterable(
            p.findings for p in self.partitions))

    def to_json(self) -> dict:
        return {"type": "tiered", "version": 1, "at": self.at_ms,
                "at_iso": format_time(self.at_ms),
                "metadata_partitions": list(self.metadata_partitions),
                "metadata_records": self.records,
                "remote_store": None if self.store is None else
                {"path": str(self.store.root), "layout": self.store.layout},
                "partitions": [p.to_json() for p in self.partitions],
                "findings": [f.to_json() for f in self.all_findings]}

    def rows(self) -> list[dict]:
        return [r for p in self.partitions for r in p.rows()]


def _metadata_path(remote: RemoteLogMetadata, rp: RemotePartition | None) -> str:
    """The ``__remote_log_metadata-N`` directory holding ``rp``'s events."""
    if rp is None:
        return ""
    suffix = f"{TOPIC}-{rp.metadata_partition}"
    return next((p for p in remote.metadata_partitions if Path(p).name == suffix), suffix)


def tiered_partition(pi: PartitionInput | None, rp: RemotePartition | None, *, now_ms: int,
                     metadata_path: str, store: RemoteStore | None = None) -> TieredPartition:
    """One partition's tiers joined, its remote verdicts and its findings; with ``store`` (a
    reachable remote store) its remote segments' files found and read too."""
    topic = pi.topic if pi is not None else rp.topic
    partition = pi.partition if pi is not None else rp.partition
    stored, store_findings = None, []
    if store is not None and rp is not None:
        stored, store_findings = check_store(rp, store_holdings(rp, store),
                                             label=f"{topic}-{partition}")
    if pi is None:
        highest = rp.highest_offset()
        findings = check(rp, now_ms=now_ms, path=metadata_path) + store_findings
        return TieredPartition(topic, partition, None, rp, highest, (), tuple(findings), stored)
    highest = highest_remote_offset(pi, rp)
    if rp is None:
        return TieredPartition(topic, partition, pi, None, highest, (), (), stored)
    lineage = local_lineage(pi)
    leo = log_end_offset(pi)
    findings = check(rp, now_ms=now_ms, path=str(pi.dir.path), local_epochs=lineage,
                     local_start_offset=pi.summaries[0].base_offset if pi.summaries else None,
                     log_end_offset=leo)
    verdicts = remote_verdicts(rp, pi.config, now_ms=now_ms, lineage=lineage,
                               log_end_offset=leo, log_start_offset=pi.log_start_offset,
                               only_local_size=only_local_size(pi, highest))
    return TieredPartition(topic, partition, pi, rp, highest, verdicts,
                           tuple(findings + store_findings), stored)


def remote_by_partition(remote: RemoteLogMetadata) -> dict[tuple[str, int], RemotePartition]:
    return {(p.topic, p.partition): p for p in remote.partitions}


def metadata_partitions_walked(loaded: Loaded) -> frozenset[int]:
    """The ``__remote_log_metadata`` partitions among what was named. A partition whose data
    this log dir does not hold is shown only when its metadata partition was named (the log
    dir, or that partition): a run on ``orders-0`` answers for ``orders-0``, whatever else
    the metadata beside it describes, so it agrees with the run on the whole log dir."""
    return frozenset(pi.partition for pi in loaded.partitions if pi.topic == TOPIC)


def tiered_report(loaded: Loaded, *, now_ms: int, remote: RemoteLogMetadata | None = None,
                  store: RemoteStore | None = None) -> TieredReport:
    """Every tiered partition of ``loaded`` (``remote.storage.enable``, or named by the remote
    metadata), with the remote metadata replayed from the same log dirs unless given; with
    ``store`` the remote segments are found and read there."""
    remote = remote if remote is not None else remote_metadata(loaded_log_dirs(loaded),
                                                               until_ms=now_ms)
    by_key = remote_by_partition(remote)
    walked = metadata_partitions_walked(loaded)
    not_read = unread_partitions(loaded)
    out = []
    seen = set()
    for pi in loaded.partitions:
        key = (pi.topic, pi.partition)
        rp = by_key.get(key)
        if key in seen or (rp is None and not is_tiered(pi)):
            continue
        seen.add(key)
        out.append(tiered_partition(pi, rp, now_ms=now_ms,
                                    metadata_path=_metadata_path(remote, rp), store=store))
    for key, rp in sorted(by_key.items()):
        if key not in seen and (rp.metadata_partition in walked or key in not_read):
            tp = tiered_partition(None, rp, now_ms=now_ms,
                                  metadata_path=_metadata_path(remote, rp), store=store)
            if key in not_read:
                tp = dataclasses.replace(tp, local_note=not_read[key].reason)
            out.append(tp)
    shown = [str(tp.local.dir.path) for tp in out if tp.local is not None]
    shown += [not_read[(tp.topic, tp.partition)].path for tp in out if tp.local_note]
    read = findings_under(loaded.findings, [*shown, *remote.metadata_partitions])
    read += root_files_unread(loaded.findings, shown)
    return TieredReport(now_ms, tuple(out), remote.metadata_partitions, remote.records,
                        tuple(dict.fromkeys([*read, *remote.findings])), store)


def unread_partitions(loaded: Loaded) -> dict[tuple[str, int], Skipped]:
    """The partitions this log dir holds but could not read (a segment at mode 000): their
    remote tier is still answered for, and their local one is said to be unread, not
    absent."""
    out = {}
    for s in loaded.skipped:
        name = parse_partition_dir_name(Path(s.path).name)
        if name is not None and s.unread is not None:
            out[(name.topic, name.partition)] = s
    return out


def root_files_unread(findings: Sequence[Finding], dirs: Sequence[str]) -> list[Finding]:
    """The files of the log dirs holding ``dirs`` that could not be read: their checkpoints
    give the partitions' log start offsets, so the answer says it went on without them."""
    roots = {str(Path(d).parent) for d in dirs}
    return [f for f in findings if f.code == "file_unreadable" and f.path
            and str(Path(f.path).parent) in roots]


def findings_under(findings: Sequence[Finding], dirs: Sequence[str]) -> list[Finding]:
    """What reading the tree met in the directories this view answers for: a damaged segment
    of a tiered partition is part of its answer, one of an unrelated topic is not (the exit
    code follows what the view shows)."""
    roots = tuple(str(Path(d)) + "/" for d in dirs)
    return [f for f in findings if f.path and (f.path + "/").startswith(roots)]
