"""One partition input for the retention and compaction analyses (and the faces over them).

Retention, compaction, the Spark analyses and the report all start from the same thing: a
partition's segment summaries, its topic config with where each value came from, and what the
log dir's checkpoints say (high watermark, log start offset, cleaner offset). The config's
sources that are files (``--config``, the ``__cluster_metadata`` log) are read here; the
resolution rules they feed stay in :mod:`segtools.analysis.config`. Building it once,
here, keeps the faces from each re-deriving it; reading record timestamps of kept segments (the
"stale records" retention cannot remove) lives here too, as it needs the partition's files.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from segtools import fanout
from segtools.analysis import config as cfg
from segtools.analysis.partition_log import METADATA_PARTITION_DIR
from segtools.analysis.retention import (
    WITHIN_RETENTION_MS,
    PartitionRetention,
    StaleRecords,
    explain_retention,
    stale_records,
)
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.storage.files import open_regular_file
from segtools.storage.location import as_path
from segtools.storage.logdirs import LogDir, PartitionRef, listed, settled
from segtools.storage.partition import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PartitionDir,
    PartitionState,
    SegmentFiles,
    load_partition_dir,
)
from segtools.storage.segment import Segment, unreadable
from segtools.storage.summary import KeptRead, SegmentSummary, kept_summary, summarize


@dataclass(frozen=True, slots=True)
class PartitionInput:
    """One partition, summarised, with its config and checkpoint entries."""

    log_dir: LogDir
    dir: PartitionDir
    topic: str
    partition: int
    summaries: tuple[SegmentSummary, ...]
    config: cfg.TopicConfig
    high_watermark: int | None
    log_start_offset: int | None
    cleaner_offset: int | None

    @property
    def label(self) -> str:
        """``topic-partition``; a ``-future`` copy (a log-dir move in progress, whose old
        segments ``LogManager.cleanupLogs`` also deletes) is marked."""
        future = self.dir.name is not None and self.dir.name.state is PartitionState.FUTURE
        return f"{self.topic}-{self.partition}" + (" (-future)" if future else "")


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str
    unread: Finding | None = None  # what could not be read, when that is why

    def to_json(self) -> dict:
        return {"path": self.path, "reason": self.reason}


_SKIP_STATE = {
    PartitionState.DELETE: "pending deletion (-delete): Kafka removes the whole directory, "
                           "retention does not apply",
    PartitionState.STRAY: "stray replica (-stray): this broker no longer owns it",
}


@dataclass(frozen=True, slots=True)
class Loaded:
    partitions: tuple[PartitionInput, ...]
    skipped: tuple[Skipped, ...]
    findings: tuple[Finding, ...]
    config_sources: tuple[str, ...]


def metadata_logs(log_dirs: Sequence[LogDir]) -> list[Path]:
    """The ``__cluster_metadata-0`` partitions that hold these log dirs' topic configs: the
    ones walked, and the one beside a partition directory given on its own (a KRaft broker's
    log dir holds it), so a partition path resolves the same config as its log dir."""
    return _metadata_logs((d, d.partitions) for d in log_dirs)


def _metadata_logs(log_dirs: Iterable[tuple[LogDir, Iterable[PartitionDir | PartitionRef]]]
                   ) -> list[Path]:
    found: dict[Path, None] = {}
    for d, partitions in log_dirs:
        for p in partitions:
            if p.name is not None and p.name.is_metadata_log:
                found[as_path(p.path)] = None
        beside = as_path(d.path) / METADATA_PARTITION_DIR
        if beside.is_dir() and not beside.is_symlink():
            found.setdefault(beside, None)
    return list(found)


def read_config_file(path: str) -> cfg.ConfigFile:
    """The ``--config`` file, read (at most 4 MiB) and parsed by
    :func:`~segtools.analysis.config.parse_config_text`."""
    try:
        # a FIFO given as --config must not hang; the user named it, so a link is followed
        with open_regular_file(path, follow_symlinks=True) as fh:
            text = fh.read(4 * 1024 * 1024).decode("utf-8", errors="replace")
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None
    return cfg.parse_config_text(text, path)


def load_cluster_metadata(partition_paths, *, at: int | None = None,
                          ) -> tuple[dict[str, dict[str, str]], str, list[Finding]]:
    """Topic configs from the first ``__cluster_metadata-0`` partition given, as of ``at``
    (None: the end of the log), decoded by :mod:`segtools.analysis.cluster_metadata`
    (imported lazily: a tree without a metadata log must not pay for the KRaft decoder)."""
    findings: list[Finding] = []
    for path in partition_paths:
        try:
            cluster_metadata = importlib.import_module("segtools.analysis.cluster_metadata")
        except ImportError:
            findings.append(finding(
                "cluster_metadata_decoder_missing", str(path),
                "a __cluster_metadata log is here but this build cannot decode it; topic "
                "configs fall back to --config and Kafka defaults"))
            return {}, "", findings
        try:
            configs = (cluster_metadata.topic_configs(path) if at is None
                       else cluster_metadata.topic_configs(path, at=at))
        except SegtoolsError as e:
            findings.append(finding("cluster_metadata_unreadable",
                                    e.path or str(path), f"topic configs not recovered: {e}"))
            continue
        return {t: dict(c) for t, c in configs.items()}, str(path), findings
    return {}, "", findings


@dataclass(frozen=True, slots=True)
class Planned:
    """What :func:`load_inputs` knows before any segment is read: the partitions to
    summarise (with their log dirs), those skipped for their name or state, the findings
    of the listing and of the config's sources, and the config's resolution inputs. A face
    that shows partitions as they come (``segtools retention``) starts from here."""

    todo: tuple[tuple[LogDir, PartitionDir], ...]
    skipped: tuple[Skipped, ...]
    findings: tuple[Finding, ...]
    config_sources: tuple[str, ...]
    flags: Mapping[str, str]
    config_file: cfg.ConfigFile | None
    metadata: Mapping[str, Mapping[str, str]]
    metadata_detail: str
    #: log dirs whose partition directories are not listed yet (:func:`plan_unlisted`):
    #: the workers list and plan them; ``todo`` and ``skipped`` then hold none of them
    unlisted: tuple[tuple[LogDir, tuple[PartitionRef, ...]], ...] = ()

    def config(self, topic: str) -> cfg.TopicConfig:
        return cfg.resolve(topic, flags=self.flags, config_file=self.config_file,
                           metadata=self.metadata, metadata_detail=self.metadata_detail)


@dataclass(frozen=True, slots=True)
class Summarised:
    """One planned partition once its segments are read: its input, or why it is skipped
    (exactly one of the two), with the findings its reading met, in order."""

    findings: tuple[Finding, ...]
    input: PartitionInput | None
    skipped: Skipped | None = None
    #: the deep pass's old records in kept segments, by base offset, when it was asked for
    #: (:func:`summarised`'s ``stale_at``)
    stale: Mapping[int, StaleRecords] | None = None


def plan_inputs(log_dirs: Sequence[LogDir], *, flags: Mapping[str, str] | None = None,
                config_file: cfg.ConfigFile | None = None, at: int | None = None) -> Planned:
    """The first half of :func:`load_inputs`: which partitions, the config's sources (the
    ``__cluster_metadata`` log replayed to ``at``), and the listing's findings."""
    return with_listing(_sources(metadata_logs(log_dirs), flags, config_file, at), log_dirs)


def plan_unlisted(roots: Sequence[tuple[LogDir, Sequence[PartitionRef]]], *,
                  flags: Mapping[str, str] | None = None,
                  config_file: cfg.ConfigFile | None = None, at: int | None = None
                  ) -> Planned:
    """:func:`plan_inputs` over log dirs whose partition directories are not listed yet
    (:func:`segtools.storage.logdirs.walk_roots`): the config's sources, and the
    partitions left in ``unlisted`` for the workers to list and plan one by one
    (:func:`planned_partition`)."""
    planned = _sources(_metadata_logs(roots), flags, config_file, at)
    return replace(planned, unlisted=tuple((d, tuple(refs)) for d, refs in roots))


def listed_plan(planned: Planned) -> Planned:
    """A plan of :func:`plan_unlisted` with its partitions listed here: what
    :func:`plan_inputs` gives over the listed tree."""
    if not planned.unlisted:
        return planned
    return with_listing(replace(planned, unlisted=()),
                        [listed(d, refs) for d, refs in planned.unlisted])


def _sources(meta_paths: Sequence[Path], flags: Mapping[str, str] | None,
             config_file: cfg.ConfigFile | None, at: int | None) -> Planned:
    """A plan with no partition yet: the config's sources and what reading them met."""
    flags = dict(flags or {})
    metadata, meta_where, findings = load_cluster_metadata(meta_paths, at=at)
    sources = ["flags"] if flags else []
    if config_file:
        sources.append(f"--config {config_file.path}")
    if metadata:
        sources.append(f"__cluster_metadata {meta_where}")
    return Planned((), (), tuple(findings), tuple(sources), flags, config_file, metadata,
                   meta_where)


def with_listing(planned: Planned, log_dirs: Sequence[LogDir]) -> Planned:
    """``planned`` with the listed ``log_dirs``' partitions planned and their findings."""
    findings = list(planned.findings)
    todo: list[tuple[LogDir, PartitionDir]] = []
    skipped = list(planned.skipped)
    for d in log_dirs:
        findings += d.findings
        for p in d.partitions:
            findings += p.findings
            whole, skip = planned_partition(d, p)
            if whole is not None:
                todo.append((d, whole))
            else:
                skipped.append(skip)
    return replace(planned, todo=planned.todo + tuple(todo), skipped=tuple(skipped),
                   findings=tuple(findings))


def planned_partition(d: LogDir, p: PartitionDir
                      ) -> tuple[PartitionDir, None] | tuple[None, Skipped]:
    """One listed partition of ``d``: to summarise (the whole directory, even when one of
    its segment files was named: retention and cleaning see the whole partition), or why
    it is skipped."""
    if p.name is None:
        return None, Skipped(str(p.path), "not a <topic>-<partition> directory")
    if p.name.is_metadata_log:
        return None, Skipped(str(p.path), "KRaft metadata log: its retention follows "
                             "metadata.max.retention.* and snapshots")
    if p.name.state in _SKIP_STATE:
        return None, Skipped(str(p.path), _SKIP_STATE[p.name.state])
    whole = settled(load_partition_dir(p.path), d.checkpoints) \
        if p.segments and not p.complete else p
    if whole.segments:
        return whole, None
    unlisted = next((f for f in p.findings if f.code == "partition_dir_unreadable"), None)
    if unlisted is not None:  # not "no segments": they could not be listed
        why = unlisted.message.removeprefix("cannot list: ")
        return None, Skipped(str(p.path), f"its directory could not be listed ({why}): its "
                             "retention and cleaning are not explained", unlisted)
    return None, Skipped(str(p.path), "no segments")


def summarised(planned: Planned, *, limit: int = DEFAULT_DECOMPRESS_LIMIT,
               advance: Callable[[int], None] = lambda n: None,
               stale_at: int | None = None,
               made: Mapping[str, Summaries] | None = None) -> Iterator[Summarised]:
    """The second half of :func:`load_inputs`: every planned partition, in order, as its
    summaries come back from the workers (forked here, before the caller starts anything
    else), so a face can explain and show one partition while the workers read the next.
    A topic's config is resolved once, when its first partition comes (the resolution is
    pure in the topic's name; a tree holds a few partitions of each topic).

    ``stale_at`` (epoch ms): the workers also run retention's deep pass at that moment
    (:func:`stale_in_kept`, for a partition that is not tiered: its verdicts need no other
    partition), so the records read for it are read beside the summaries, not after them.
    ``made``: partitions already summarised (by directory path,
    :func:`partition_summaries`), which are not read again."""
    made = made or {}
    todo = [t for t in planned.todo if str(t[1].path) not in made]
    read = fanout.ordered(partial(_read, planned=planned, limit=limit, stale_at=stale_at),
                          todo, segments=sum(len(p.segments) for _, p in todo))
    results = ((*made[str(p.path)], None) if str(p.path) in made else next(read)
               for _, p in planned.todo)
    return _summarised(planned, results, advance)


def _read(todo: tuple[LogDir, PartitionDir], *, planned: Planned, limit: int,
          stale_at: int | None
          ) -> tuple[tuple[SegmentSummary, ...], Finding | None, dict[int, StaleRecords] | None]:
    """One partition's job for :func:`summarised`: its summaries (or the finding of the
    segment that could not be read) and, at ``stale_at``, the deep pass's answer."""
    d, p = todo
    summaries, unread = _summaries(p, limit=limit)
    if stale_at is None or unread is not None:
        return summaries, unread, None
    pi = _input(d, p, summaries, planned.config(p.name.topic))
    if not may_be_within_retention(summaries, pi.config, stale_at):
        return summaries, unread, {}
    pr = explain_retention(summaries, pi.config, now_ms=stale_at,
                           high_watermark=pi.high_watermark,
                           log_start_offset=pi.log_start_offset)
    return summaries, unread, stale_in_kept(pi, pr, limit=limit)


def _input(d: LogDir, p: PartitionDir, summaries: tuple[SegmentSummary, ...],
           config: cfg.TopicConfig) -> PartitionInput:
    tp = (p.name.topic, p.name.partition)
    return PartitionInput(d, p, tp[0], tp[1], summaries, config, d.high_watermarks.get(tp),
                          d.log_start_offsets.get(tp), d.cleaner_offsets.get(tp))


def _summarised(planned: Planned, results: Iterator, advance: Callable[[int], None]
                ) -> Iterator[Summarised]:
    configs: dict[str, cfg.TopicConfig] = {}
    for (d, p), (summaries, unread, stale) in zip(planned.todo, results, strict=True):
        advance(sum(s.log_size or 0 for s in p.segments))
        if unread is None:
            topic = p.name.topic
            config = configs.get(topic)
            if config is None:
                config = configs[topic] = planned.config(topic)
        else:
            config = None
        yield decided(d, p, (summaries, unread), config, stale)


def decided(d: LogDir, p: PartitionDir, made: Summaries, config: cfg.TopicConfig | None,
            stale: Mapping[int, StaleRecords] | None = None) -> Summarised:
    """One planned partition once its segments are read: its input, or why it is skipped
    (``config``: its topic's, which a partition whose segment could not be read needs not).
    Pure in what it is given, so a worker that reads the partition decides as the parent
    would."""
    summaries, unread = made
    found = tuple(f for s in summaries for f in s.findings)
    if unread is not None:
        return Summarised((*found, unread), None, Skipped(
            str(p.path), f"{Path(unread.path).name} could not be read "
            f"({unread.message.removeprefix('could not be read: ')}): its retention and "
            "cleaning are not explained", unread))
    assert config is not None
    lineage = _lineage_unread(p)
    if config.remote_storage_enable and lineage is not None:
        why = lineage.message.removeprefix("cannot read: ")
        return Summarised(found, None, Skipped(
            str(p.path), f"its {LEADER_EPOCH_CHECKPOINT_FILE} could not be read ({why}): "
            "a tiered partition's retention and remote verdicts follow its leader epoch "
            "lineage, so they are not explained", lineage))
    return Summarised(found, _input(d, p, summaries, config), stale=stale)


def gathered(planned: Planned, items: Iterable[Summarised]) -> Loaded:
    """The :class:`Loaded` of a plan once every partition came back."""
    out: list[PartitionInput] = []
    skipped = list(planned.skipped)
    findings = list(planned.findings)
    for item in items:
        findings += item.findings
        if item.input is not None:
            out.append(item.input)
        else:
            skipped.append(item.skipped)
    return Loaded(tuple(out), tuple(skipped), tuple(findings), planned.config_sources)


def load_inputs(log_dirs: Sequence[LogDir], *, flags: Mapping[str, str] | None = None,
                config_file: cfg.ConfigFile | None = None, at: int | None = None,
                limit: int = DEFAULT_DECOMPRESS_LIMIT,
                advance: Callable[[int], None] = lambda n: None,
                made: Mapping[str, Summaries] | None = None) -> Loaded:
    """Summarise every live partition's segments under ``log_dirs`` and resolve each topic's
    config (flags > config file > ``__cluster_metadata`` in the tree > Kafka's defaults): the
    one partition input of the retention and compaction analyses, whatever path was given.
    ``made``: partitions already summarised (:func:`summarised`)."""
    planned = plan_inputs(log_dirs, flags=flags, config_file=config_file, at=at)
    return gathered(planned, summarised(planned, limit=limit, advance=advance, made=made))


def _lineage_unread(p: PartitionDir) -> Finding | None:
    """The finding of a ``leader-epoch-checkpoint`` that could not be read. A tiered
    partition's remote verdicts (``isRemoteSegmentWithinLeaderEpochs``) and the highest
    offset in remote storage local retention waits for follow that lineage: without it they
    would be answered from an empty one, every remote segment "not in the lineage"."""
    return next((f for f in p.findings if f.code == "file_unreadable" and f.path
                 and Path(f.path).name == LEADER_EPOCH_CHECKPOINT_FILE), None)


#: One partition's summaries, or the finding of the segment that could not be read.
Summaries = tuple[tuple[SegmentSummary, ...], Finding | None]


def _summaries(p: PartitionDir, *, limit: int,
               kept: Mapping[str, KeptRead] | None = None) -> Summaries:
    """Every segment of one partition, summarised (a job for :func:`fanout.ordered`), or the
    finding of the first segment that could not be read: retention and the cleaner decide
    over a partition's whole log (sizes, the newest timestamps), so a partition with a hole
    is not explained; the rest of the tree still is. ``kept``: small segments ``verify``
    already read (by ``.log`` path), summarised from that reading."""
    out = []
    for s in p.segments:
        held = kept.get(str(s.log)) if kept else None
        if held is not None:
            out.append(kept_summary(s, held, is_active=s is p.active_segment))
            continue
        try:
            out.append(summarize(s, is_active=s is p.active_segment, decompress_limit=limit))
        except SegtoolsError as e:
            return (), unreadable(str(s.log), e)
    return tuple(out), None


def partition_summaries(p: PartitionDir, *, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                        kept: Mapping[str, KeptRead] | None = None) -> Summaries | None:
    """What :func:`load_inputs` would summarise of one listed partition directory (None: a
    directory it does not summarise, or one it lists again), for an analysis that read the
    partition first and hands the summaries over (``made``)."""
    if p.name is None or p.name.is_metadata_log or p.name.state in _SKIP_STATE or \
            not p.segments or not p.complete:
        return None
    return _summaries(p, limit=limit, kept=kept)


def input_bytes(log_dirs: Sequence[LogDir]) -> int:
    """Bytes :func:`load_inputs` summarises (a progress bar's total)."""
    return sum(s.log_size or 0 for d in log_dirs for p in d.partitions for s in p.segments)


# --------------------------------------------------------------------------- deep pass


def record_times(files: SegmentFiles, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Every data record's timestamp in one segment and its share of its batch's bytes,
    from the record kernel's columns (control batches left out)."""
    ts_parts: list[np.ndarray] = []
    size_parts: list[np.ndarray] = []
    with Segment.open(files, decompress_limit=limit) as seg:
        for walked in seg.walk(verify_crc=False):
            t = walked.table
            for chunk in seg.records(t.take(~t.is_control)):
                cols, ct = chunk.columns, chunk.table
                if not len(cols):
                    continue
                per_record = np.bincount(cols.batch, minlength=len(ct))
                share = ct.size / np.maximum(np.where(ct.count > 0, ct.count, per_record), 1)
                ts_parts.append(np.asarray(cols.timestamp, np.int64))
                size_parts.append(share[cols.batch])
    if not ts_parts:
        return np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(ts_parts), np.concatenate(size_parts)


def may_be_within_retention(summaries: Sequence[SegmentSummary], config: cfg.TopicConfig,
                             now_ms: int) -> bool:
    """Whether a segment of these could be kept as ``within_retention_ms`` (what the deep
    pass reads): only one whose records are within retention.ms can (a kept segment past it
    is blocked, or was kept by a rule that stops the time pass, each with its own reason).
    Most partitions of a large, old tree have none, and are not replayed to find out."""
    retention_ms = config.local_retention_ms_effective
    return retention_ms >= 0 and any(
        s.record_count and now_ms - s.largest_timestamp <= retention_ms for s in summaries)


def deep_segments(pr: PartitionRetention) -> list:
    """Segments the deep pass reads: kept because their newest record is within retention."""
    if pr.config.local_retention_ms_effective < 0:
        return []
    return [v for v in pr.segments if v.reason == WITHIN_RETENTION_MS and v.record_count]


def stale_in_kept(pi: PartitionInput, pr: PartitionRetention, *,
                  limit: int = DEFAULT_DECOMPRESS_LIMIT,
                  advance: Callable[[int], None] = lambda n: None) -> dict[int, StaleRecords]:
    """The deep pass: records older than retention.ms inside segments kept because their
    newest record is within retention."""
    retention_ms = pr.config.local_retention_ms_effective
    out: dict[int, StaleRecords] = {}
    files = {s.base_offset: s for s in pi.dir.segments}
    for v in deep_segments(pr):
        ts, sizes = record_times(files[v.base_offset], limit=limit)
        advance(v.size)
        bases = np.full(ts.shape[0], v.base_offset, np.int64)
        out |= stale_records(bases, ts, sizes, cutoff_ms=pr.now_ms - retention_ms)
    return out
