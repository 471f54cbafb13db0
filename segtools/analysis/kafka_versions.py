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
from pathlib import Path

from segtools.errors import SegtoolsError
from segtools.storage.location import as_path
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
    Rule("bootstrap.checkpoint", (3, 3), None,
         "BootstrapDirectory writes it from 3.3 (KAFKA-13830, KIP-778)"),
    Rule("KRaft metadata.version (FeatureLevelRecord)", (3, 3), None,
         "MetadataVersion (server-common) names the release of each level; the record carries "
         "metadata.version from 3.3 (KIP-778)"),
    Rule("time index entry naming a record inside its batch (older convention)", (0, 10), (3, 6),
         "LogValidator.assignOffsetsNonCompressed: the record holding an uncompressed batch's "
         "largest timestamp up to 3.6; the batch's last offset from 3.7 (apache/kafka "
         "e905ef1edfb, #14697; KAFKA-16310 in 3.8)"),
)}

#: ``MetadataVersion``'s feature levels and the release each names (``IBP_3_0_IV1`` is level
#: 1, ...), read from apache/kafka's server-common at the 3.3.0 to 3.8.0 and 3.9.0-rc3 tags;
#: a level is declared unchanged in every later release. A broker finalizes a level only if
#: its release supports it; 3.9's ``LATEST_PRODUCTION`` is level 21, so a higher level needs a
#: later release. (Releases also declare the next release's first levels as unstable, usable
#: only with ``unstable.metadata.versions.enable``; those test setups are not what this bounds.)
METADATA_VERSIONS: dict[int, tuple[Release, str]] = {
    1: ((3, 0), "3.0-IV1"), 2: ((3, 1), "3.1-IV0"), 3: ((3, 2), "3.2-IV0"),
    4: ((3, 3), "3.3-IV0"), 5: ((3, 3), "3.3-IV1"), 6: ((3, 3), "3.3-IV2"),
    7: ((3, 3), "3.3-IV3"), 8: ((3, 4), "3.4-IV0"), 9: ((3, 5), "3.5-IV0"),
    10: ((3, 5), "3.5-IV1"), 11: ((3, 5), "3.5-IV2"), 12: ((3, 6), "3.6-IV0"),
    13: ((3, 6), "3.6-IV1"), 14: ((3, 6), "3.6-IV2"), 15: ((3, 7), "3.7-IV0"),
    16: ((3, 7), "3.7-IV1"), 17: ((3, 7), "3.7-IV2"), 18: ((3, 7), "3.7-IV3"),
    19: ((3, 7), "3.7-IV4"), 20: ((3, 8), "3.8-IV0"), 21: ((3, 9), "3.9-IV0"),
}
AFTER_KNOWN_LEVELS: Release = (4, 0)


@dataclass(frozen=True, slots=True)
class Evidence:
    rule: Rule
    where: str  # the file or directory that showed it
    detail: str = ""  # what the file said, when the rule's bound depends on it
    at_least: Release | None = None  # a lower bound finer than the rule's, read from the file

    @property
    def low(self) -> Release:
        return self.rule.low if self.at_least is None else max(self.rule.low, self.at_least)

    @property
    def high(self) -> Release | None:
        return self.rule.high


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
        if not self.consistent:  # an inverted range would read as a range; there is none
            return "no Kafka release matches all the evidence"
        if self.high is None:
            return f"{fmt(self.low)} or later"
        if self.low == self.high:
            return fmt(self.low)
        return f"{fmt(self.low)} to {fmt(self.high)}"

    def to_json(self) -> dict:
        return {"kafka_versions": self.label, "low": list(self.low),
                "high": list(self.high) if self.high else None,
                "consistent": self.consistent,
                "evidence": [{"rule": e.rule.name, "allows": allows(e),
                              "source": e.rule.source, "where": e.where,
                              **({"detail": e.detail} if e.detail else {})}
                             for e in self.evidence]}


def allows(evidence: Evidence) -> str:
    low, high = evidence.low, evidence.high
    text = f"{low[0]}.{low[1]}"
    return f">= {text}" if high is None else \
        (f"<= {high[0]}.{high[1]}" if low == OLDEST else f"{text} to {high[0]}.{high[1]}")


def combine(evidence: Iterable[Evidence]) -> VersionRange:
    """The intersection of what each piece of evidence allows."""
    items = tuple(evidence)
    low, high = OLDEST, NEWEST
    for e in items:
        low = max(low, e.low)
        if e.high is not None:
            high = e.high if high is None else min(high, e.high)
    return VersionRange(low, high, items)


def older_time_index_convention(s: SegmentSummary) -> bool:
    """The segment's last time index entry has the segment's largest timestamp but names an
    offset below the last offset of the first batch holding it: the record's offset, as
    leaders up to 3.6 wrote it. (From 3.7, and for followers, recovery and the cleaner in every
    release, the entry names that batch's last offset.) Read from the summary alone."""
    if s.timeindex_last is None or s.log_offset_of_max_timestamp is None or s.first_offset is None:
        return False
    ts, offset = s.timeindex_last
    return (ts == s.log_max_timestamp >= 0
            and s.first_offset <= offset < s.log_offset_of_max_timestamp)


def _segment_evidence(summaries: Sequence[SegmentSummary], where: str) -> list[Evidence]:
    out = []
    older = next((s for s in summaries if older_time_index_convention(s)), None)
    if older is not None:
        timeindex = str(as_path(older.path).with_suffix(".timeindex"))
        out.append(Evidence(RULES["time index entry naming a record inside its batch (older "
                                  "convention)"], timeindex,
                            f"last entry names offset {older.timeindex_last[1]}, inside the batch "
                            f"ending at {older.log_offset_of_max_timestamp}"))
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
    if log_dir.bootstrap_checkpoint is not None:
        ev.append(Evidence(RULES["bootstrap.checkpoint"], str(log_dir.bootstrap_checkpoint)))
    ev.extend(_metadata_version_evidence(log_dir))
    for e in _segment_evidence(tuple(summaries), root):
        if e.rule.name not in seen:
            seen.add(e.rule.name)
            ev.append(e)
    return combine(ev)


def metadata_version_release(level: int) -> tuple[Release, str]:
    """The first release that runs ``metadata.version`` level ``level``
    (:data:`METADATA_VERSIONS`), and the level's name."""
    if level in METADATA_VERSIONS:
        return METADATA_VERSIONS[level]
    if level > max(METADATA_VERSIONS):
        return AFTER_KNOWN_LEVELS, f"level {level}, above 3.9-IV0"
    return (3, 0), f"level {level}"


def _metadata_version_evidence(log_dir: LogDir) -> list[Evidence]:
    """The cluster's ``metadata.version`` from the metadata log (its latest value), else from the
    log dir's ``bootstrap.checkpoint`` (the level it was formatted with). The KRaft decoder is
    imported only when one of them is there."""
    sources: list[Path] = [p.path for p in log_dir.partitions
                           if p.name is not None and p.name.is_metadata_log]
    if log_dir.bootstrap_checkpoint is not None:
        sources.append(log_dir.bootstrap_checkpoint)
    if not sources:
        return []
    from segtools.analysis.cluster_metadata import metadata_version

    for path in sources:
        try:
            level = metadata_version(path)
        except SegtoolsError:
            continue
        if level is not None:
            release, name = metadata_version_release(level)
            return [Evidence(RULES["KRaft metadata.version (FeatureLevelRecord)"], str(path),
                             f"metadata.version {level} ({name})", release)]
    return []
