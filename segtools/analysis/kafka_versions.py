"""Which Kafka wrote this: the range of releases that could have written a log dir.

A check whose rule changed across Kafka releases must know which rule applies, and an operator
reading a copy of a data dir often does not know which broker wrote it. The files say a lot:
each piece of evidence below bounds the release from below (a feature that did not exist
before) or from above (something no later release writes). The range is the intersection of
every bound found; each bound names the file that showed it and the place in apache/kafka
the rule comes from. ``docs/kafka-versions.md`` explains the evidence.

Releases are compared as ``(major, minor)``; ``0.11`` is ``(0, 11)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from segtools.storage.logdirs import LogDir
from segtools.storage.partition import PartitionState
from segtools.storage.summary import SegmentSummary

Release = tuple[int, int]
OLDEST: Release = (0, 8)
NEWEST: Release | None = None  # no upper bound


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of evidence and the releases it allows: ``low`` inclusive, ``high`` inclusive
    (None: unbounded)."""

    name: str
    low: Release
    high: Release | None
    source: str  # the apache/kafka class, KIP or change it comes from


#: Every rule, once. A rule holds when its evidence is present; absence says nothing.
RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("meta.properties version 0 (ZooKeeper broker.id)", OLDEST, (3, 9),
         "MetaProperties; ZooKeeper mode removed in 4.0 (KIP-833)"),
    Rule("meta.properties version 1 (KRaft node.id)", (2, 8), None,
         "MetaProperties; KRaft from 2.8 (KIP-500)"),
    Rule("meta.properties directory.id", (3, 7), None, "KIP-858 (JBOD in KRaft), 3.7"),
    Rule("partition.metadata (topic ids)", (2, 8), None, "PartitionMetadataFile, KIP-516"),
    Rule("leader-epoch-checkpoint", (0, 11), None, "LeaderEpochFileCache, KIP-101"),
    Rule("log-start-offset-checkpoint", (0, 11), None, "LogManager, KIP-107 (DeleteRecords)"),
    Rule(".kafka_cleanshutdown as JSON (broker epoch)", (3, 7), None,
         "CleanShutdownFileHandler, 3.7 (KIP-966)"),
    Rule(".kafka_cleanshutdown empty", OLDEST, (3, 6),
         "CleanShutdownFileHandler writes JSON from 3.7"),
    Rule("-stray partition directory", (3, 6), None, "LocalLog.StrayDirSuffix, 3.6"),
    Rule("record batch v2 (magic 2)", (0, 11), None, "DefaultRecordBatch, KIP-98"),
    Rule("zstd batches", (2, 1), None, "CompressionType.ZSTD, KIP-110"),
    Rule("idempotent or transactional batches", (0, 11), None, "KIP-98"),
    Rule("KRaft metadata log (__cluster_metadata)", (2, 8), None, "KIP-500"),
)}


@dataclass(frozen=True, slots=True)
class Evidence:
    rule: Rule
    where: str  # the file or directory that showed it


@dataclass(frozen=True, slots=True)
class VersionRange:
    """The releases every piece of evidence allows (``low`` > ``high`` means the evidence
    disagrees: files from different brokers, or a copy assembled by hand)."""

    low: Release
    high: Release | None
    evidence: tuple[Evidence, ...]

    @property
    def consistent(self) -> bool:
        return self.high is None or self.low <= self.high

    @property
    def label(self) -> str:
        def fmt(r: Release) -> str:
            return f"{r[0]}.{r[1]}"

        if not self.evidence:
            return "unknown"
        if self.high is None:
            return f"{fmt(self.low)} or later"
        if self.low == self.high:
            return fmt(self.low)
        return f"{fmt(self.low)} to {fmt(self.high)}"

    def to_json(self) -> dict:
        return {"kafka_versions": self.label, "low": list(self.low),
                "high": list(self.high) if self.high else None,
                "consistent": self.consistent,
                "evidence": [{"rule": e.rule.name, "allows": allows(e.rule),
                              "source": e.rule.source, "where": e.where}
                             for e in self.evidence]}


def allows(rule: Rule) -> str:
    low = f"{rule.low[0]}.{rule.low[1]}"
    return f">= {low}" if rule.high is None else \
        (f"<= {rule.high[0]}.{rule.high[1]}" if rule.low == OLDEST else
         f"{low} to {rule.high[0]}.{rule.high[1]}")


def combine(evidence: Iterable[Evidence]) -> VersionRange:
    """The intersection of what each piece of evidence allows."""
    items = tuple(evidence)
    low, high = OLDEST, NEWEST
    for e in items:
        low = max(low, e.rule.low)
        if e.rule.high is not None:
            high = e.rule.high if high is None else min(high, e.rule.high)
    return VersionRange(low, high, items)


def _segment_evidence(summaries: Sequence[SegmentSummary], where: str) -> list[Evidence]:
    out = []
    if any(2 in s.magics for s in summaries):
        out.append(Evidence(RULES["record batch v2 (magic 2)"], where))
    if any("zstd" in s.codecs for s in summaries):
        out.append(Evidence(RULES["zstd batches"], where))
    if any(s.producer_id_count or s.transactional_batches for s in summaries):
        out.append(Evidence(RULES["idempotent or transactional batches"], where))
    return out


def log_dir_versions(log_dir: LogDir,
                     summaries: Iterable[SegmentSummary] = ()) -> VersionRange:
    """What the files of one log dir (and the segment summaries already read, if any) say
    about the Kafka releases that wrote it."""
    ev: list[Evidence] = []
    root = str(log_dir.path)
    meta = log_dir.meta
    if meta is not None:
        if meta.version == 0:
            ev.append(Evidence(RULES["meta.properties version 0 (ZooKeeper broker.id)"], root))
        elif meta.version == 1:
            ev.append(Evidence(RULES["meta.properties version 1 (KRaft node.id)"], root))
        if meta.directory_id:
            ev.append(Evidence(RULES["meta.properties directory.id"], root))
    if log_dir.clean_shutdown is not None:
        rule = (".kafka_cleanshutdown as JSON (broker epoch)"
                if log_dir.clean_shutdown.version is not None else ".kafka_cleanshutdown empty")
        ev.append(Evidence(RULES[rule], root))
    if log_dir.log_start_offsets or "log-start-offset-checkpoint" in log_dir.checkpoints:
        ev.append(Evidence(RULES["log-start-offset-checkpoint"], root))
    seen = set()
    for p in log_dir.partitions:
        for rule, present in (
                ("partition.metadata (topic ids)", p.partition_metadata is not None),
                ("leader-epoch-checkpoint", bool(p.leader_epochs)),
                ("-stray partition directory",
                 p.name is not None and p.name.state is PartitionState.STRAY),
                ("KRaft metadata log (__cluster_metadata)",
                 p.name is not None and p.name.is_metadata_log)):
            if present and rule not in seen:
                seen.add(rule)
                ev.append(Evidence(RULES[rule], str(p.path)))
    for e in _segment_evidence(tuple(summaries), root):
        if e.rule.name not in seen:
            seen.add(e.rule.name)
            ev.append(e)
    return combine(ev)
