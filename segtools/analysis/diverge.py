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

import numpy as np

from segtools.analysis.partition_log import iter_tables
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.table import BatchTable
from segtools.findings import Finding, finding
from segtools.formats.checkpoints import EpochEntry
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import PartitionDir, PartitionState
from segtools.text import distinct_names


@dataclass(frozen=True, slots=True)
class BatchId:
    """What must be equal for two replicas to hold the same batch."""

    base_offset: int
    last_offset: int
    crc: int
    leader_epoch: int
    records: int
    max_timestamp: int


#: :class:`BatchId` as a row of a numpy structured array: a replica's batches are compared as
#: columns (millions of one-record batches cost no Python object each).
BATCH_ID = np.dtype([("base_offset", np.int64), ("last_offset", np.int64), ("crc", np.uint32),
                     ("leader_epoch", np.int32), ("records", np.int64),
                     ("max_timestamp", np.int64)])


class BatchIds(Sequence[BatchId]):
    """A replica's batches in log order, as columns; indexing gives a :class:`BatchId` (for
    showing one batch) or, for a slice, another :class:`BatchIds`."""

    __slots__ = ("rows",)

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    @classmethod
    def from_table(cls, t: BatchTable) -> BatchIds:
        rows = np.empty(len(t), BATCH_ID)
        rows["base_offset"], rows["last_offset"] = t.base_offset, t.last_offset
        rows["crc"], rows["leader_epoch"] = t.crc, t.leader_epoch
        rows["records"] = np.where(t.count >= 0, t.count, 1)  # a legacy entry counts as one
        rows["max_timestamp"] = t.max_timestamp
        return cls(rows)

    @classmethod
    def concat(cls, parts: Sequence[BatchIds]) -> BatchIds:
        return cls(np.concatenate([p.rows for p in parts]) if parts else np.empty(0, BATCH_ID))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return BatchIds(self.rows[i])
        r = self.rows[i]
        return BatchId(int(r["base_offset"]), int(r["last_offset"]), int(r["crc"]),
                       int(r["leader_epoch"]), int(r["records"]), int(r["max_timestamp"]))

    def column(self, name: str) -> np.ndarray:
        return self.rows[name]


def _identity(rows: np.ndarray) -> np.ndarray:
    """Each row as one opaque value, so whole batches compare and match with numpy."""
    packed = np.ascontiguousarray(rows)
    return packed.view(np.dtype((np.void, BATCH_ID.itemsize)))


@dataclass(frozen=True, slots=True)
class Replica:
    label: str
    partition: PartitionDir
    batches: BatchIds
    epochs: tuple[EpochEntry, ...]  # leader-epoch-checkpoint

    @property
    def start_offset(self) -> int | None:
        return int(self.batches.rows["base_offset"][0]) if len(self.batches) else None

    @property
    def end_offset(self) -> int:
        """The log end offset (next offset after the last batch)."""
        return int(self.batches.rows["last_offset"][-1]) + 1 if len(self.batches) else 0

    @property
    def latest_epoch(self) -> int:
        if self.epochs:
            return self.epochs[-1].epoch
        return int(self.batches.rows["leader_epoch"].max()) if len(self.batches) else -1

    def checkpoint_epochs(self, offsets: np.ndarray) -> np.ndarray:
        """The epoch ``leader-epoch-checkpoint`` assigns to each offset (-2 where none
        applies): the last entry, in file order, starting at or below it."""
        out = np.full(len(offsets), -2, np.int64)
        for e in self.epochs:  # a handful of entries; later ones win, as in the file
            out[offsets >= e.start_offset] = e.epoch
        return out

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

    @property
    def sentence(self) -> str:
        """What the follower would do, in the words every face shows (the CLI's text and the
        report), so they cannot tell it differently."""
        if self.discarded:
            return (f"{self.replica} (latest epoch {self.epoch}) would truncate to "
                    f"{self.truncate_to}: epoch {self.epoch} ends at {self.leader_end_offset} "
                    f"on {self.leader}; offsets {self.truncate_to}.."
                    f"{self.truncate_to + self.discarded - 1} ({self.discarded}) discarded")
        return (f"{self.replica} keeps its whole log (epoch {self.epoch} ends at "
                f"{self.leader_end_offset} on {self.leader})")

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
    """A replica's batch identities, from the batch table of a shallow walk."""
    parts = [BatchIds.from_table(t) for _, _, t in iter_tables(partition, findings,
                                                                  limit=limit)]
    return Replica(label, partition, BatchIds.concat(parts), partition.leader_epochs)


def _ranges(replica: Replica, rows: np.ndarray) -> list[EpochRange]:
    """Consecutive batches with the same stamped and checkpoint epochs, grouped."""
    if not len(rows):
        return []
    base, last = rows["base_offset"], rows["last_offset"]
    epoch, cp = rows["leader_epoch"], replica.checkpoint_epochs(base)
    breaks = np.ones(len(rows), bool)
    breaks[1:] = (epoch[1:] != epoch[:-1]) | (cp[1:] != cp[:-1]) | (base[1:] != last[:-1] + 1)
    starts = np.flatnonzero(breaks)
    ends = np.append(starts[1:], len(rows)) - 1
    records = np.add.reduceat(rows["records"], starts)
    ts = rows["max_timestamp"]
    latest = np.maximum.reduceat(ts, starts)
    return [EpochRange(replica.label, int(base[a]), int(last[b]), int(epoch[a]),
                       None if cp[a] == -2 else int(cp[a]), int(b - a + 1), int(n), int(ts[a]),
                       int(t))
            for a, b, n, t in zip(starts.tolist(), ends.tolist(), records.tolist(),
                                  latest.tolist(), strict=True)]


def _epoch_findings(replica: Replica) -> list[Finding]:
    """Batches whose stamped epoch disagrees with ``leader-epoch-checkpoint`` (the first)."""
    rows = replica.batches.rows
    cp = replica.checkpoint_epochs(rows["base_offset"])
    bad = np.flatnonzero((rows["leader_epoch"] >= 0) & (cp != -2) & (cp != rows["leader_epoch"]))
    if not len(bad):
        return []
    b = replica.batches[int(bad[0])]
    return [finding(
        "leader_epoch_checkpoint_mismatch", str(replica.partition.path),
        f"{replica.label}: batch {b.base_offset}..{b.last_offset} carries leader epoch "
        f"{b.leader_epoch} but leader-epoch-checkpoint assigns epoch {int(cp[bad[0]])}",
        offset=b.base_offset)]


def _first_mismatch(ids: list[np.ndarray], active: list[int], lo: int, hi: int) -> int | None:
    """The first index in ``[lo, hi)`` where the active replicas' batches are not all equal."""
    first = ids[active[0]][lo:hi]
    differs = np.zeros(hi - lo, bool)
    for k in active[1:]:
        differs |= ids[k][lo:hi] != first
    found = np.flatnonzero(differs)
    return lo + int(found[0]) if len(found) else None


def compare(replicas: Sequence[Replica]) -> Divergence:
    """Compare replicas of one partition (at least two), batch by batch from the highest log
    start: they agree while every replica's batch at the same index is identical; the first
    index where they are not is where their histories split. When a replica's log ends, the
    others go on being compared among themselves."""
    if len(replicas) < 2:
        raise ValueError("need at least two replicas")
    findings: list[Finding] = []
    for r in replicas:
        findings += _epoch_findings(r)
    common_start = max((r.start_offset or 0) for r in replicas)
    cursors = [r.batches.rows[r.batches.rows["last_offset"] >= common_start] for r in replicas]
    ids = [_identity(c) for c in cursors]
    i = 0
    agreed, all_agree_index = common_start, None
    first_difference = None
    differing: list[tuple[str, BatchId | None]] = []
    while True:
        active = [k for k, c in enumerate(cursors) if len(c) > i]
        if not active:
            break
        if len(active) < len(cursors) and all_agree_index is None:
            all_agree_index = i  # a replica's log ended here; the others go on together
        upto = min(len(cursors[k]) for k in active)
        j = _first_mismatch(ids, active, i, upto) if len(active) > 1 else None
        stop = upto if j is None else j
        if all_agree_index is None and stop > i:
            agreed = int(cursors[active[0]]["last_offset"][stop - 1]) + 1
        if j is not None:
            shown = [BatchIds(c)[j] if len(c) > j else None for c in cursors]
            first_difference = min(b.base_offset for b in shown if b is not None)
            differing = [(r.label, b) for r, b in zip(replicas, shown, strict=True)]
            break
        i = upto
    if all_agree_index is None:
        all_agree_index = i
    if first_difference is not None:
        status = "diverged"
    elif len({r.end_offset for r in replicas}) == 1:
        status = "identical"
    else:
        status = "prefix"
    unique = []
    tails = [k[all_agree_index:] for k in ids]
    for k, r in enumerate(replicas):
        others = [tails[j] for j in range(len(replicas)) if j != k]
        seen = np.isin(tails[k], np.concatenate(others)) if others else \
            np.zeros(len(tails[k]), bool)
        unique += _ranges(r, cursors[k][all_agree_index:][~seen])
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
    if first_difference is not None:
        findings += _divergence_findings(replicas, leader, first_difference, truncations)
    return Divergence(tuple(replicas), common_start, agreed, first_difference, status,
                      tuple(differing), tuple(unique), tuple(truncations),
                      tuple(findings))


def _divergence_findings(replicas: Sequence[Replica], leader: Replica, first_difference: int,
                         truncations: Sequence[Truncation]) -> list[Finding]:
    """A divergence is a finding, whoever shows it (``diverge``, the report, the API): the
    copy that truncates loses what follows the leader's epoch end; without a truncation to
    name (no leader epoch to compare), the split itself is the finding."""
    names = ", ".join(r.label for r in replicas)
    lossy = [t for t in truncations if t.discarded > 0]
    if not lossy:
        return [finding("replica_diverged", str(leader.partition.path),
                        f"copies {names} hold different batches from offset "
                        f"{first_difference}", offset=first_difference)]
    by_label = {r.label: r for r in replicas}
    return [finding("replica_diverged", str(by_label[t.replica].partition.path),
                    f"copies {names} differ from offset {first_difference}; {t.sentence}",
                    offset=t.truncate_to) for t in lossy]


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """Every copy of one partition found under the given paths, compared."""

    key: str  # "<topic>-<partition>"
    copies: tuple[tuple[LogDir, PartitionDir], ...]
    replicas: tuple[Replica, ...]
    divergence: Divergence
    read_findings: tuple[Finding, ...]  # what reading the copies met


def _labels(copies: list[tuple[LogDir, PartitionDir]]) -> list[str]:
    """Each copy by its log dir's short name (:func:`segtools.text.distinct_names`)."""
    return distinct_names(d.path for d, _ in copies)


def live_copies(log_dirs: Iterable[LogDir], partition: str | None = None
                ) -> dict[str, list[tuple[LogDir, PartitionDir]]]:
    """Every live copy of each partition (``<topic>-<partition>``, or only ``partition``),
    listed or not, by partition in name order."""
    groups: dict[str, list[tuple[LogDir, PartitionDir]]] = defaultdict(list)
    for d in log_dirs:
        for p in d.partitions:
            if p.name is None or p.name.state is not PartitionState.LIVE:
                continue
            key = f"{p.name.topic}-{p.name.partition}"
            if partition is None or key == partition:
                groups[key].append((d, p))
    return dict(sorted(groups.items()))


def copies_by_partition(log_dirs: Iterable[LogDir], partition: str | None = None
                        ) -> dict[str, list[tuple[LogDir, PartitionDir]]]:
    """Live copies of each partition held by two log dirs or more. A copy whose directory
    could not be listed is left out: it holds what could not be read, not an empty log, and
    comparing it would have it lack every offset (its listing finding says what happened)."""
    groups = {key: [(d, p) for d, p in copies if not unlisted(p)]
              for key, copies in live_copies(log_dirs, partition).items()}
    return {k: v for k, v in groups.items() if len(v) >= 2}


def unlisted(p: PartitionDir) -> bool:
    """Whether the partition's directory could not be listed (mode 000)."""
    return any(f.code == "partition_dir_unreadable" for f in p.findings)


def compare_copies(key: str, copies: list[tuple[LogDir, PartitionDir]], *,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT) -> ReplicaSet:
    """Load every copy of one partition and compare them."""
    read: list[Finding] = []
    replicas = tuple(load_replica(label, p, read, limit=limit)
                     for label, (_, p) in zip(_labels(copies), copies, strict=True))
    return ReplicaSet(key, tuple(copies), replicas, compare(replicas), tuple(read))
