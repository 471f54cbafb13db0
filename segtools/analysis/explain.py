"""Retention and compaction explained over a whole tree: the one assembly every face calls.

:func:`segtools.analysis.retention.explain_retention` and
:func:`segtools.analysis.compaction.explain_compaction` answer for one partition. A person asks
about a tree: every live partition's verdicts, the deep pass over kept segments, a forecast per
partition and per topic, the compacted partitions and why the others were skipped, with the
config sources and findings met on the way. Assembling that here, once, means ``segtools
retention``/``segtools compaction``, ``segtools.explain_retention()``/``explain_compaction()``
and the HTML report cannot give different answers for the same tree (a test compares the CLI's
``--format json`` with the API on every fixture tree).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from segtools import fanout
from segtools.analysis import compaction as comp
from segtools.analysis import config as cfg
from segtools.analysis.cleaner_input import read_records
from segtools.analysis.forecast import Forecast, combine, forecast_partition
from segtools.analysis.partition_input import (
    Loaded,
    PartitionInput,
    Planned,
    Skipped,
    Summarised,
    decided,
    deep_segments,
    gathered,
    listed_plan,
    may_be_within_retention,
    partition_summaries,
    planned_partition,
    stale_in_kept,
    summarised,
)
from segtools.analysis.remote_input import remote_metadata
from segtools.analysis.remote_log import RemoteLogMetadata
from segtools.analysis.retention import PartitionRetention, StaleRecords, explain_retention
from segtools.analysis.tiered import (
    RemoteVerdict,
    highest_remote_offset,
    is_tiered,
    loaded_log_dirs,
    remote_by_partition,
    tiered_partition,
)
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.storage.logdirs import LogDir, PartitionRef, list_partition
from segtools.storage.partition import PartitionDir
from segtools.timestamps import DAY_MS
from segtools.units import format_bytes, format_duration, format_time


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# --------------------------------------------------------------------------- retention


def high_watermark_source(pi: PartitionInput) -> str:
    """Where the high watermark the verdicts use came from (the JSON contract's words)."""
    return ("replication-offset-checkpoint" if pi.high_watermark is not None
            else "assumed: log end offset (no replication-offset-checkpoint entry)")


def log_start_offset_source(pi: PartitionInput) -> str:
    return ("log-start-offset-checkpoint" if pi.log_start_offset is not None
            else "no checkpoint entry, so the first segment's base, as Kafka assumes")


@dataclass(frozen=True, slots=True)
class RetentionExplained:
    """One partition: its input, the verdicts (with the deep pass's stale records) and, when
    asked for, its forecast."""

    input: PartitionInput
    retention: PartitionRetention
    forecast: Forecast | None
    #: a tiered partition's remote segments and what the expiration task does with them
    #: (None: not tiered, or no __remote_log_metadata in the tree)
    remote: tuple[RemoteVerdict, ...] | None = None

    def to_json(self) -> dict:
        pi = self.input
        obj = {"topic": pi.topic, "partition": pi.partition, "path": str(pi.dir.path),
               "log_dir": str(pi.log_dir.path), **self.retention.to_json(),
               "high_watermark_source": high_watermark_source(pi),
               "log_start_offset_source": log_start_offset_source(pi)}
        if self.forecast is not None:
            obj["forecast"] = self.forecast.to_json()
        if self.remote is not None:
            obj["remote_segments"] = [v.to_json() for v in self.remote]
        return obj


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """``segtools retention`` over a tree, as values."""

    at_ms: int
    config_sources: tuple[str, ...]
    partitions: tuple[RetentionExplained, ...]
    topics: dict[str, Forecast]  # per topic, when a forecast was asked for
    skipped: tuple[Skipped, ...]
    findings: tuple[Finding, ...]

    def to_json(self, plot: str | None = None) -> dict:
        """The ``--format json`` document (``plot``: the picture's path, when one was drawn)."""
        topic_rows: dict[str, dict] = {}
        for e in self.partitions:
            t = topic_rows.setdefault(e.input.topic, {"topic": e.input.topic, "partitions": 0,
                                                      "size": 0, "deletable_bytes": 0})
            t["partitions"] += 1
            t["size"] += e.retention.size
            t["deletable_bytes"] += e.retention.deletable_bytes
        for name, fc in self.topics.items():
            topic_rows[name]["forecast"] = fc.to_json()
        return {"type": "retention", "version": 1, "at": self.at_ms,
                "at_iso": format_time(self.at_ms),
                "config_sources": list(self.config_sources),
                "partitions": [e.to_json() for e in self.partitions],
                "topics": list(topic_rows.values()),
                "skipped": [s.to_json() for s in self.skipped],
                "findings": [f.to_json() for f in self.findings], "plot": plot}


def topic_forecasts(explained: Sequence[RetentionExplained]) -> dict[str, Forecast]:
    """One forecast per topic: the sum of its partitions' (each step names its partition)."""
    return _by_topic((e.input.topic, e.input.label, e.forecast) for e in explained)


def _by_topic(forecasts: Iterable[tuple[str, str, Forecast | None]]) -> dict[str, Forecast]:
    """Partitions' forecasts (topic, label, forecast) summed per topic, in first-seen order."""
    by_topic: dict[str, list[tuple[str, Forecast]]] = {}
    for topic, label, fc in forecasts:
        if fc is not None:
            by_topic.setdefault(topic, []).append((label, fc))
    return {t: combine(items) for t, items in by_topic.items()}


def tiered_metadata(loaded: Loaded, now_ms: int | None = None) -> RemoteLogMetadata | None:
    """The tree's replayed ``__remote_log_metadata`` when a partition is tiered and the tree
    holds that topic, as it stood at ``now_ms``; None otherwise (then tiered verdicts assume
    every segment is copied)."""
    if not any(is_tiered(pi) for pi in loaded.partitions):
        return None
    remote = remote_metadata(loaded_log_dirs(loaded), until_ms=now_ms)
    return remote if remote.metadata_partitions else None


def verdicts(loaded: Loaded, now_ms: int) -> list[tuple[PartitionInput, PartitionRetention]]:
    """Every partition's verdicts before the deep pass (what the deep pass then reads); a
    tiered partition's local segments wait for the copy (``highestOffsetInRemoteStorage``)."""
    remote = tiered_metadata(loaded, now_ms)
    by_key = remote_by_partition(remote) if remote is not None else {}
    return [(pi, explain_retention(
        pi.summaries, pi.config, now_ms=now_ms, high_watermark=pi.high_watermark,
        log_start_offset=pi.log_start_offset,
        highest_remote_offset=highest_remote_offset(pi, by_key.get((pi.topic, pi.partition)))
        if remote is not None and is_tiered(pi) else None))
            for pi in loaded.partitions]


def deep_bytes(found: Sequence[tuple[PartitionInput, PartitionRetention]]) -> int:
    """Bytes the deep pass reads (a progress bar's total)."""
    return sum(v.size for _, pr in found for v in deep_segments(pr))


def retention_report(loaded: Loaded, *, now_ms: int, forecast_days: float | None = None,
                     deep: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                     found: Sequence[tuple[PartitionInput, PartitionRetention]] | None = None,
                     advance: Callable[[int], None] = lambda n: None,
                     each: Callable[[RetentionExplained], None] = lambda e: None
                     ) -> RetentionReport:
    """Retention at ``now_ms`` for every partition of ``loaded``: verdicts, the deep pass
    (records older than retention.ms in kept segments) unless ``deep`` is off, and with
    ``forecast_days`` the size forecast per partition and per topic. ``found`` reuses the
    verdicts of :func:`verdicts` (a face that sized a progress bar from them); ``each`` is
    handed every partition's answer as soon as it is made (a face that shows it then)."""
    until = _until(now_ms, forecast_days)
    remote = tiered_metadata(loaded, now_ms)
    by_key = remote_by_partition(remote) if remote is not None else {}
    explained = []
    findings = list(loaded.findings) + list(remote.findings if remote is not None else ())
    for pi, pr in (found if found is not None else verdicts(loaded, now_ms)):
        tiers = None
        if remote is not None and is_tiered(pi):
            tiers = tiered_partition(pi, by_key.get((pi.topic, pi.partition)), now_ms=now_ms,
                                     metadata_path=str(pi.dir.path))
            findings += tiers.findings
        stale = stale_in_kept(pi, pr, limit=limit, advance=advance) if deep else None
        e = _explained(pi, pr, until, stale, tiers.verdicts if tiers is not None else None)
        each(e)
        explained.append(e)
    topics = topic_forecasts(explained) if until is not None else {}
    return RetentionReport(now_ms, loaded.config_sources, tuple(explained), topics,
                           loaded.skipped, tuple(findings))


def _until(now_ms: int, forecast_days: float | None) -> int | None:
    return now_ms + int(forecast_days * DAY_MS) if forecast_days is not None else None


def _explained(pi: PartitionInput, pr: PartitionRetention, until: int | None,
               stale: Mapping[int, StaleRecords] | None,
               remote: tuple[RemoteVerdict, ...] | None = None) -> RetentionExplained:
    """One partition's answer from its verdicts: the deep pass's answer (None: not asked
    for) and the forecast added."""
    if stale is not None:
        pr = pr.with_stale(stale)
    fc = forecast_partition(pr, until_ms=until) if until is not None else None
    return RetentionExplained(pi, pr, fc, remote)


def streamed_retention(planned: Planned, *, now_ms: int, forecast_days: float | None = None,
                       deep: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                       advance: Callable[[int], None] = lambda n: None,
                       each: Callable[[RetentionExplained], None] = lambda e: None
                       ) -> tuple[Loaded, RetentionReport]:
    """:func:`retention_report` over a tree as its partitions' summaries come back from the
    workers: each partition is explained (and handed to ``each``) while the workers read
    the next ones (and run the deep pass beside the summaries), so a face's own work overlaps
    the reading instead of following it. The answer is the one :func:`retention_report`
    gives over :func:`load_inputs`'s result.
    A tiered partition's verdicts need the whole tree's ``__remote_log_metadata`` replayed
    first, so a tree that holds one is read whole before anything is explained.
    ``advance`` is told the bytes summarised (the deep pass's reads go untold)."""
    if _any_tiered(planned):
        loaded = gathered(planned, summarised(planned, limit=limit, advance=advance))
        return loaded, retention_report(loaded, now_ms=now_ms, forecast_days=forecast_days,
                                        deep=deep, limit=limit, each=each)
    items = summarised(planned, limit=limit, advance=advance, stale_at=now_ms if deep else None)
    until = _until(now_ms, forecast_days)
    explained: list[RetentionExplained] = []

    def explain_each(items: Iterable[Summarised]) -> Iterator[Summarised]:
        for item in items:
            pi = item.input
            if pi is not None:
                pr = explain_retention(pi.summaries, pi.config, now_ms=now_ms,
                                       high_watermark=pi.high_watermark,
                                       log_start_offset=pi.log_start_offset)
                e = _explained(pi, pr, until, item.stale)
                each(e)
                explained.append(e)
            yield item

    loaded = gathered(planned, explain_each(items))
    topics = topic_forecasts(explained) if until is not None else {}
    return loaded, RetentionReport(now_ms, loaded.config_sources, tuple(explained), topics,
                                   loaded.skipped, loaded.findings)


def _any_tiered(planned: Planned) -> bool:
    """Whether a planned partition's topic is tiered (a config that does not resolve counts
    as one: the tree is then read whole, and the resolution fails where it always did)."""
    return _topic_configs(planned) is None


def _topic_configs(planned: Planned) -> dict[str, cfg.TopicConfig] | None:
    """Every planned topic's config (a partition not listed yet counts by its name); None
    when one is tiered or does not resolve (:func:`_any_tiered`)."""
    configs: dict[str, cfg.TopicConfig] = {}
    names = [p.name for _, p in planned.todo] + [
        r.name for _, refs in planned.unlisted for r in refs
        if r.name is not None and not r.name.is_metadata_log]
    for name in names:
        if name.topic in configs:
            continue
        try:
            config = configs[name.topic] = planned.config(name.topic)
        except SegtoolsError:
            return None
        if config.remote_storage_enable:
            return None
    return configs


@dataclass(frozen=True, slots=True)
class RetentionShown:
    """One partition of :func:`shown_retention`, as a worker hands it back: what the face
    rendered of its answer (None: skipped), and only the small values the tree's tail needs,
    so neither its listing, its summaries nor its verdicts cross back to this process."""

    findings: tuple[Finding, ...]  # what reading its segments met
    skipped: Skipped | None
    text: str | None
    topic: str
    label: str
    forecast: Forecast | None
    log_bytes: int  # what was summarised (a progress bar's step)
    #: a partition listed by the worker (:attr:`Planned.unlisted`): what the listing met,
    #: and why it is not summarised (its name, its state, no segments), as a plan says
    listing: tuple[Finding, ...] = ()
    unplanned: Skipped | None = None


@dataclass(frozen=True, slots=True)
class RetentionTail:
    """What :func:`shown_retention` leaves after the partitions were shown: the parts of a
    :class:`RetentionReport` that follow them."""

    at_ms: int
    config_sources: tuple[str, ...]
    topics: dict[str, Forecast]
    skipped: tuple[Skipped, ...]
    findings: tuple[Finding, ...]


#: A partition not listed yet counts as this many segments when deciding whether to fork
#: workers (:func:`segtools.fanout.planned`): its listing, two small files read and its
#: segments' summaries cost about what four segments' summaries do.
UNLISTED_PARTITION_WEIGHT = 4


def shown_retention(planned: Planned, render: Callable[[RetentionExplained], str], *,
                    now_ms: int, forecast_days: float | None = None, deep: bool = True,
                    limit: int = DEFAULT_DECOMPRESS_LIMIT,
                    advance: Callable[[int], None] = lambda n: None,
                    write: Callable[[str], None]) -> RetentionTail:
    """:func:`streamed_retention` for a face that only shows each partition: the workers
    list (when ``planned`` left its partitions unlisted), read, explain and ``render`` each
    one, and this process only writes what comes back, in the tree's order. On a large
    tree the listing, explaining and rendering (most of what this process did) then run on
    every core instead of on the one the results are collected on. The text, the skipped
    partitions and the findings are those ``render`` and :func:`streamed_retention` give
    over the listed plan; a tree with a tiered partition is listed and explained here,
    after its remote metadata is replayed (:func:`streamed_retention`)."""
    configs = _topic_configs(planned)
    if configs is None:
        _, report = streamed_retention(listed_plan(planned), now_ms=now_ms,
                                       forecast_days=forecast_days, deep=deep, limit=limit,
                                       advance=advance, each=lambda e: write(render(e)))
        return RetentionTail(now_ms, report.config_sources, report.topics, report.skipped,
                             report.findings)
    until = _until(now_ms, forecast_days)
    job = partial(_shown, configs=configs, now_ms=now_ms, until=until, deep=deep, limit=limit,
                  render=render)
    jobs: list[tuple[LogDir, PartitionDir | PartitionRef]] = [
        *planned.todo, *((d, r) for d, refs in planned.unlisted for r in refs)]
    weight = sum(len(p.segments) if isinstance(p, PartitionDir) else UNLISTED_PARTITION_WEIGHT
                 for _, p in jobs)
    shown = fanout.ordered(job, jobs, segments=weight)
    plan_findings = list(planned.findings)
    plan_skipped = list(planned.skipped)
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    forecasts = []

    def take(one: RetentionShown) -> None:
        advance(one.log_bytes)
        plan_findings.extend(one.listing)
        if one.unplanned is not None:
            plan_skipped.append(one.unplanned)
        findings.extend(one.findings)
        if one.skipped is not None:
            skipped.append(one.skipped)
        if one.text is not None:
            write(one.text)
            forecasts.append((one.topic, one.label, one.forecast))

    for _ in planned.todo:
        take(next(shown))
    for d, refs in planned.unlisted:
        plan_findings.extend(d.findings)
        for _ in refs:
            take(next(shown))
    topics = _by_topic(forecasts) if until is not None else {}
    return RetentionTail(now_ms, planned.config_sources, topics,
                         (*plan_skipped, *skipped), (*plan_findings, *findings))


def _shown(job: tuple[LogDir, PartitionDir | PartitionRef], *,
           configs: Mapping[str, cfg.TopicConfig], now_ms: int, until: int | None,
           deep: bool, limit: int, render: Callable[[RetentionExplained], str]
           ) -> RetentionShown:
    """One partition's job for :func:`shown_retention`: list and plan it (when it is not
    listed yet), read, decide, explain, render."""
    d, p = job
    listing: tuple[Finding, ...] = ()
    if isinstance(p, PartitionRef):
        listed_dir = list_partition(d, p)
        listing = listed_dir.findings
        whole, unplanned = planned_partition(d, listed_dir)
        if whole is None:
            return RetentionShown((), None, None, "", "", None, 0, listing, unplanned)
        p = whole
    log_bytes = sum(s.log_size or 0 for s in p.segments)
    made = partition_summaries(p, limit=limit)
    assert made is not None  # planned partitions are whole, named, live and not empty
    found = decided(d, p, made, configs[p.name.topic])
    pi = found.input
    if pi is None:
        return RetentionShown(found.findings, found.skipped, None, p.name.topic, "", None,
                              log_bytes, listing)
    pr = explain_retention(pi.summaries, pi.config, now_ms=now_ms,
                           high_watermark=pi.high_watermark,
                           log_start_offset=pi.log_start_offset)
    stale = None
    if deep:
        stale = stale_in_kept(pi, pr, limit=limit) \
            if may_be_within_retention(pi.summaries, pi.config, now_ms) else {}
    e = _explained(pi, pr, until, stale)
    return RetentionShown(found.findings, None, render(e), pi.topic, pi.label, e.forecast,
                          log_bytes, listing)


# --------------------------------------------------------------------------- compaction


@dataclass(frozen=True, slots=True)
class CompactionExplained:
    """One partition's cleaner replay. ``input`` keeps the partition's own config (what
    ``retention`` shows too); ``not_compacted`` says why the cleaner would never run on it
    when it was analysed only because it was named (its policy Kafka's default, delete):
    the replay is then what the cleaner would do under ``cleanup.policy=compact``."""

    input: PartitionInput
    compaction: comp.PartitionCompaction
    not_compacted: str | None = None

    def to_json(self, render: Callable[[bytes], str] = _base64) -> dict:
        pi, pc = self.input, self.compaction
        obj = {"topic": pi.topic, "partition": pi.partition, "path": str(pi.dir.path),
               "log_dir": str(pi.log_dir.path), **pc.to_json(render),
               "survivor": describe_survivor(pc.key_history, pc.now_ms)
               if pc.key_history is not None else None,
               "not_compacted": self.not_compacted}
        if self.not_compacted is not None:  # the policy the partition has, not the one replayed
            obj["config"] = {**obj["config"],
                             "cleanup.policy": pi.config.to_json()["cleanup.policy"]}
        return obj


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """``segtools compaction`` over a tree, as values."""

    at_ms: int
    config_sources: tuple[str, ...]
    partitions: tuple[CompactionExplained, ...]
    skipped: tuple[Skipped, ...]
    findings: tuple[Finding, ...]

    def to_json(self, render: Callable[[bytes], str] = _base64) -> dict:
        """The ``--format json`` document; ``render`` writes key bytes (base64 by default,
        as the CLI's ``--bytes``)."""
        return {"type": "compaction", "version": 1, "at": self.at_ms,
                "at_iso": format_time(self.at_ms),
                "config_sources": list(self.config_sources),
                "partitions": [e.to_json(render) for e in self.partitions],
                "skipped": [s.to_json() for s in self.skipped],
                "findings": [f.to_json() for f in self.findings]}


def absent_key(report: CompactionReport, render: Callable[[bytes], str]) -> str | None:
    """When the key asked for is in none of the partitions analysed, the sentence every face
    says (a selection that selects nothing, like a ``--topic`` that matches no topic): which
    partitions were read and the keys nearest to it; None otherwise."""
    asked = [e.compaction for e in report.partitions if e.compaction.key is not None]
    if not asked or any(pc.key_history for pc in asked):
        return None
    near = sorted({k for pc in asked for k in pc.nearest_keys})[:6]
    where = (f"{report.partitions[0].input.label}" if len(asked) == 1
             else f"any of the {len(asked)} partitions analysed")
    return (f"no record has key {render(asked[0].key)!r} in {where}"
            + (f" (nearest keys: {', '.join(repr(render(k)) for k in near)})" if near else ""))


def _named(paths: Sequence[str]) -> set[str]:
    return {os.path.realpath(p) for p in paths}


def _realpaths() -> Callable[[str], str]:
    """``os.path.realpath``, each parent directory resolved once (a tree's partitions share
    a few log dirs; resolving costs a ``lstat`` per component). A name that is itself a
    link, or ``.``/``..``, is resolved in full."""
    parents: dict[str, str] = {}

    def real(path: str) -> str:
        head, name = os.path.split(path)
        if not name or name in (".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        if head not in parents:
            parents[head] = os.path.realpath(head)
        return os.path.join(parents[head], name)

    return real


#: What a partition analysed only because it was named is: with no topic config its policy
#: is Kafka's default (``log.cleanup.policy``: delete), as ``retention`` says, so the cleaner
#: never visits it.
NOT_COMPACTED = ("cleanup.policy=delete (Kafka's default; no topic config was given): the log "
                 "cleaner never compacts this partition; shown is what it would do with "
                 "cleanup.policy=compact (give the topic's config with --config to say "
                 "otherwise)")


def select_compacted(loaded: Loaded, paths: Sequence[str]
                     ) -> tuple[list[tuple[PartitionInput, str | None]], list[Skipped]]:
    """Compacted partitions, each with None; a partition dir named on the command line
    whose policy is unknown is analysed as if compacted, with :data:`NOT_COMPACTED`. Which
    partitions a tree's answer covers is the faces' shared policy, so it lives here, beside
    the one assembly they call, not in the cleaner's rules."""
    named = _named(paths)
    real = _realpaths()
    chosen, skipped = [], list(loaded.skipped)
    for pi in loaded.partitions:
        if pi.config.compact:
            chosen.append((pi, None))
        elif pi.config.source("cleanup.policy").source == cfg.SOURCE_DEFAULT and \
                real(os.fspath(pi.dir.path)) in named:
            chosen.append((pi, NOT_COMPACTED))
        else:
            src = pi.config.source("cleanup.policy")
            skipped.append(Skipped(str(pi.dir.path), (
                f"cleanup.policy={','.join(pi.config.cleanup_policy)} ({src.source}), so not "
                "compacted; give the topic's config (cleanup.policy=compact) or name the "
                "partition directory")))
    return chosen, skipped


def describe_survivor(history: Sequence[comp.RecordFate], now_ms: int) -> str:
    """What a full compaction leaves of a key, in a sentence."""
    last = comp.survivor(history)
    if last is None:
        return "no committed version: nothing survives"
    if last.tombstone:
        return (f"the latest version (offset {last.offset}) is a tombstone: the key is "
                "deleted; the tombstone itself goes once its delete horizon has passed")
    return (f"offset {last.offset} ({format_time(last.timestamp)}, "
            f"{format_duration(now_ms - last.timestamp)} old) survives compaction; "
            f"{len(history) - 1} older version(s) go")


def merged_survivors(pc: comp.PartitionCompaction) -> list[str]:
    """For ``compact,delete``: old records kept because they share a segment with newer ones
    (retention compares the segment's largest timestamp), and the merges the next clean would
    make, which extend that."""
    out = []
    if pc.retention is None:
        return out
    for v in pc.retention.segments:
        if v.stale and v.stale.count and not v.deletable:
            out.append(
                f"segment @{v.base_offset}: {v.stale.count} records "
                f"({format_bytes(v.stale.bytes)}) older than retention.ms survive, the oldest "
                f"from {format_time(v.stale.oldest_timestamp)}, because the segment's newest "
                f"record ({format_time(v.max_timestamp)}) is within retention")
    kept = {v.base_offset: v for v in pc.retention.segments if not v.deletable}
    for g in pc.merge_groups:
        members = [kept[b] for b in g.base_offsets if b in kept]
        if len(g.base_offsets) > 1 and any(v.max_timestamp < g.largest_timestamp
                                           for v in members):
            names = ", ".join(f"@{b}" for b in g.base_offsets)
            out.append(
                f"the next clean merges {names} into one segment ({format_bytes(g.size)} <= "
                f"segment.bytes); its largest timestamp becomes {format_time(g.largest_timestamp)}"
                ", so every record kept from them lives until that expires")
    return out


def compaction_report(loaded: Loaded, named: Sequence[str], *, now_ms: int,
                      key: bytes | None = None, top: int = 10, tombstone_limit: int = 20,
                      limit: int = DEFAULT_DECOMPRESS_LIMIT) -> CompactionReport:
    """The cleaner replayed at ``now_ms`` over every compacted partition of ``loaded``
    (``named``: the paths given, so a partition directory named on its own is analysed as
    compacted even when its policy is unknown)."""
    chosen, skipped = select_compacted(loaded, named)
    results = []
    for pi, why_not in chosen:
        cols, first_batch = read_records(pi, limit=limit)
        replayed = pi.config if why_not is None else replace(
            pi.config, cleanup_policy=("compact",),
            provenance=(*pi.config.provenance, ("cleanup.policy", cfg.ConfigValue(
                cfg.SOURCE_ASSUMED, "the partition was named; its own policy is delete"))))
        results.append(CompactionExplained(pi, comp.explain_compaction(
            cols, pi.summaries, replayed, now_ms=now_ms, high_watermark=pi.high_watermark,
            log_start_offset=pi.log_start_offset, cleaner_offset=pi.cleaner_offset, key=key,
            top=top, tombstone_limit=tombstone_limit, first_batch_timestamps=first_batch),
            why_not))
    return CompactionReport(now_ms, loaded.config_sources, tuple(results), tuple(skipped),
                            loaded.findings)
