"""Copies of one partition from several brokers, compared batch by batch.

Replication copies the leader's batches byte for byte: a follower's batch at a given base
offset has the leader's CRC, last offset and partition leader epoch (the leader stamps the
epoch, ``LogValidator``; it is outside the CRC). So two replicas agree exactly as long as their
batch headers agree, and the first batch where they do not is where their histories split —
typically a follower holding batches of an old leader epoch that the new leader never had.

Kafka resolves such a split when the follower fetches: it asks the leader where its latest
epoch ends (``OffsetsForLeaderEpoch`` / the fetch's diverging-epoch reply, answered by
``LeaderEpochFileCache.endOffsetFor``) and truncates to that offset (or to its own log end,
whichever is lower). :func:`compare` reports, for each replica, what the others lack (offset
ranges, grouped by the leader epoch of the batches and of ``leader-epoch-checkpoint``), and
what that truncation would throw away, taking as leader the replica with the latest epoch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from segtools.analysis.partition_log import iter_batches
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.findings import Finding, Severity
from segtools.formats.checkpoints import EpochEntry
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import PartitionDir, PartitionState


@dataclass(frozen=True, slots=True)
class BatchId:
    """What must be equal for two replicas to hold the same batch."""

    base_offset: int
    last_offset: int
    crc: int
    leader_epoch: int
    records: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class Replica:
    label: str
    partition: PartitionDir
    batches: tuple[BatchId, ...]
    epochs: tuple[EpochEntry, ...]  # leader-epoch-checkpoint

    @property
    def start_offset(self) -> int | None:
        return self.batches[0].base_offset if self.batches else None

    @property
    def end_offset(self) -> int:
        """The log end offset (next offset after the last batch)."""
        return self.batches[-1].last_offset + 1 if self.batches else 0

    @property
    def latest_epoch(self) -> int:
        if self.epochs:
            return self.epochs[-1].epoch
        return max((b.leader_epoch for b in self.batches), default=-1)

    def checkpoint_epoch_at(self, offset: int) -> int | None:
        """The epoch ``leader-epoch-checkpoint`` assigns to ``offset``."""
        found = None
        for e in self.epochs:
            if e.start_offset <= offset:
                found = e.epoch
        return found

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """``LeaderEpochFileCache.endOffsetFor``: (the largest epoch <= ``epoch`` this replica
        knows, the offset where it ended: the next higher epoch's start, or the log end)."""
        known = [e for e in self.epochs if e.epoch <= epoch]
        if not known:
            return -1, -1
        later = [e for e in self.epochs if e.epoch > epoch]
        return known[-1].epoch, (later[0].start_offset if later else self.end_offset)


@dataclass(frozen=True, slots=True)
class EpochRange:
    """Consecutive batches of one replica with the same leader epoch."""

    replica: str
    start_offset: int
    end_offset: int  # inclusive (the last batch's last offset)
    leader_epoch: int
    checkpoint_epoch: int | None
    batches: int
    records: int
    first_timestamp: int
    last_timestamp: int

    def to_json(self, kind: str) -> dict:
        return {"type": kind, "replica": self.replica, "start_offset": self.start_offset,
                "end_offset": self.end_offset, "leader_epoch": self.leader_epoch,
                "checkpoint_epoch": self.checkpoint_epoch, "batches": self.batches,
                "records": self.records, "first_timestamp": self.first_timestamp,
                "last_timestamp": self.last_timestamp}


@dataclass(frozen=True, slots=True)
class Truncation:
    """What a follower would do on its next fetch from ``leader``."""

    replica: str
    leader: str
    epoch: int  # the follower's latest epoch, as asked
    leader_end_offset: int  # where that epoch ends on the leader
    truncate_to: int
    discarded: int  # offsets thrown away (follower LEO - truncate_to)

    def to_json(self) -> dict:
        return {"type": "truncation", "replica": self.replica, "leader": self.leader,
                "follower_epoch": self.epoch, "leader_end_offset": self.leader_end_offset,
                "truncate_to": self.truncate_to, "discarded_offsets": self.discarded}


@dataclass(frozen=True, slots=True)
class Divergence:
    replicas: tuple[Replica, ...]
    common_start: int  # the highest log start: offsets below it are not compared
    agreed_until: int  # every replica holds identical batches below this offset
    first_difference: int | None  # None: identical, or one is a prefix of the others
    status: str  # identical | prefix | diverged
    differing: tuple[tuple[str, BatchId | None], ...]  # each replica's batch there
    unique: tuple[EpochRange, ...]  # batches only one replica holds (at or after agreement)
    truncations: tuple[Truncation, ...]
    findings: tuple[Finding, ...]

    @property
    def leader(self) -> Replica:
        return max(self.replicas, key=lambda r: (r.latest_epoch, r.end_offset))

    def to_json(self) -> dict:
        return {"type": "divergence", "status": self.status,
                "replicas": [r.label for r in self.replicas],
                "common_start_offset": self.common_start,
                "agreed_until_offset": self.agreed_until,
                "first_difference_offset": self.first_difference,
                "presumed_leader": self.leader.label,
                "at_first_difference": [
                    {"replica": label, "base_offset": b.base_offset if b else None,
                     "last_offset": b.last_offset if b else None, "crc": b.crc if b else None,
                     "leader_epoch": b.leader_epoch if b else None}
                    for label, b in self.differing]}


def load_replica(label: str, partition: PartitionDir, findings: list[Finding], *,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT) -> Replica:
    batches = tuple(BatchId(b.base_offset, b.last_offset, b.crc, b.partition_leader_epoch,
                            b.count if b.count is not None else 1, b.max_timestamp)
                    for _, _, b in iter_batches(partition, findings, limit=limit))
    return Replica(label, partition, batches, partition.leader_epochs)


def _ranges(replica: Replica, batches: Sequence[BatchId]) -> list[EpochRange]:
    out: list[EpochRange] = []
    for b in batches:
        cp = replica.checkpoint_epoch_at(b.base_offset)
        last = out[-1] if out else None
        if last is not None and last.leader_epoch == b.leader_epoch \
                and last.checkpoint_epoch == cp and last.end_offset + 1 == b.base_offset:
            out[-1] = EpochRange(replica.label, last.start_offset, b.last_offset,
                                 b.leader_epoch, cp, last.batches + 1,
                                 last.records + b.records, last.first_timestamp,
                                 max(last.last_timestamp, b.max_timestamp))
        else:
            out.append(EpochRange(replica.label, b.base_offset, b.last_offset, b.leader_epoch,
                                  cp, 1, b.records, b.max_timestamp, b.max_timestamp))
    return out


def _epoch_findings(replica: Replica) -> list[Finding]:
    """Batches whose stamped epoch disagrees with ``leader-epoch-checkpoint``."""
    out = []
    for b in replica.batches:
        cp = replica.checkpoint_epoch_at(b.base_offset)
        if b.leader_epoch >= 0 and cp is not None and cp != b.leader_epoch:
            out.append(Finding(
                "leader_epoch_checkpoint_mismatch", Severity.WARNING,
                str(replica.partition.path),
                f"{replica.label}: batch {b.base_offset}..{b.last_offset} carries leader epoch "
                f"{b.leader_epoch} but leader-epoch-checkpoint assigns epoch {cp}",
                offset=b.base_offset))
            break
    return out


def compare(replicas: Sequence[Replica]) -> Divergence:
    """Compare replicas of one partition (at least two)."""
    if len(replicas) < 2:
        raise ValueError("need at least two replicas")
    findings: list[Finding] = []
    for r in replicas:
        findings += _epoch_findings(r)
    common_start = max((r.start_offset or 0) for r in replicas)
    cursors = [[b for b in r.batches if b.last_offset >= common_start] for r in replicas]
    i = 0
    agreed, all_agree_index = common_start, None
    first_difference = None
    differing: list[tuple[str, BatchId | None]] = []
    while True:
        current = [c[i] if i < len(c) else None for c in cursors]
        present = [b for b in current if b is not None]
        if not present:
            break
        if len(set(present)) > 1:
            first_difference = min(b.base_offset for b in present)
            differing = [(r.label, b) for r, b in zip(replicas, current, strict=True)]
            break
        if len(present) < len(current) and all_agree_index is None:
            all_agree_index = i  # a replica's log ended here; the others go on together
        if all_agree_index is None:
            agreed = present[0].last_offset + 1
        i += 1
    if all_agree_index is None:
        all_agree_index = i
    if first_difference is not None:
        status = "diverged"
    elif len({r.end_offset for r in replicas}) == 1:
        status = "identical"
    else:
        status = "prefix"
    unique = []
    identities = [set(c[all_agree_index:]) for c in cursors]
    for k, r in enumerate(replicas):
        tail = cursors[k][all_agree_index:]
        others = set().union(*(identities[j] for j in range(len(replicas)) if j != k))
        unique += _ranges(r, [b for b in tail if b not in others])
    leader = max(replicas, key=lambda r: (r.latest_epoch, r.end_offset))
    truncations = []
    for r in replicas:
        if r is leader or not r.epochs:
            continue
        epoch = r.latest_epoch
        known, end = leader.end_offset_for(epoch)
        if known < 0:
            continue
        truncate_to = min(end, r.end_offset)
        truncations.append(Truncation(r.label, leader.label, epoch, end, truncate_to,
                                      r.end_offset - truncate_to))
    return Divergence(tuple(replicas), common_start, agreed, first_difference, status,
                      tuple(differing), tuple(unique), tuple(truncations),
                      tuple(findings))


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """Every copy of one partition found under the given paths, compared."""

    key: str  # "<topic>-<partition>"
    copies: tuple[tuple[LogDir, PartitionDir], ...]
    replicas: tuple[Replica, ...]
    divergence: Divergence
    read_findings: tuple[Finding, ...]  # what reading the copies met


def _labels(copies: list[tuple[LogDir, PartitionDir]]) -> list[str]:
    """The log dir's name (``broker-1``); its full path when names repeat."""
    names = [d.path.name for d, _ in copies]
    return [n if names.count(n) == 1 else str(d.path)
            for n, (d, _) in zip(names, copies, strict=True)]


def copies_by_partition(log_dirs: Iterable[LogDir], partition: str | None = None
                        ) -> dict[str, list[tuple[LogDir, PartitionDir]]]:
    """Live copies of each partition (``<topic>-<partition>``) held by two log dirs or more."""
    groups: dict[str, list[tuple[LogDir, PartitionDir]]] = defaultdict(list)
    for d in log_dirs:
        for p in d.partitions:
            if p.name is None or p.name.state is not PartitionState.LIVE:
                continue
            key = f"{p.name.topic}-{p.name.partition}"
            if partition is None or key == partition:
                groups[key].append((d, p))
    return {k: v for k, v in sorted(groups.items()) if len(v) >= 2}


def compare_copies(key: str, copies: list[tuple[LogDir, PartitionDir]], *,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT) -> ReplicaSet:
    """Load every copy of one partition and compare them."""
    read: list[Finding] = []
    replicas = tuple(load_replica(label, p, read, limit=limit)
                     for label, (_, p) in zip(_labels(copies), copies, strict=True))
    return ReplicaSet(key, tuple(copies), replicas, compare(replicas), tuple(read))
