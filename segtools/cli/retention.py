"""``segtools retention``: would Kafka's delete policy remove each segment at ``--at``, and why.

For every partition under PATH: the effective topic config and where each value came from,
the high watermark and log start offset (from the log dir's checkpoints, or what was assumed),
and per segment its offsets, size, largest timestamp and its source (time index, log scan, or
file mtime), age, verdict, reason and the earliest time it becomes deletable. Rules mirror
``UnifiedLog.deleteOldSegments`` (see ``segtools.analysis.retention``). ``--forecast DAYS``
projects, with no new data, when each segment goes; ``--plot FILE.png|FILE.html`` draws it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from segtools.analysis import config as cfg
from segtools.analysis.forecast import Forecast, combine, forecast_partition
from segtools.analysis.retention import (
    WITHIN_RETENTION_MS,
    PartitionRetention,
    StaleRecords,
    explain_retention,
    format_bytes,
    format_duration,
    format_retention,
    format_time,
    stale_records,
)
from segtools.cli import render
from segtools.cli.common import add_quiet, exit_code, open_tree, parse_time, progress
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.storage.logdirs import LogDir, settled
from segtools.storage.partition import (
    PartitionDir,
    PartitionState,
    SegmentFiles,
    load_partition_dir,
)
from segtools.storage.segment import Segment
from segtools.storage.summary import SegmentSummary, summarize

EXAMPLES = """examples:
  segtools retention /var/kafka-logs
  segtools retention /var/kafka-logs/orders-0 --at 2024-03-01T12:00Z --retention-ms 86400000
  segtools retention /var/kafka-logs --config orders-configs.txt --format json | jq .
  segtools retention /var/kafka-logs/orders-0 --forecast 10 --plot orders.png

--config FILE takes Java properties or what `kafka-configs --describe [--all]` prints
(sections "Dynamic configs for topic X are:" apply to topic X; broker log.* names work too).
"""

#: Config flags: ``--retention-ms`` ... one per config the analyses read.
FLAG_CONFIGS = tuple(cfg.DEFINITIONS)
DAY_MS = 86_400_000


def _config_type(name: str):
    def parse(text: str) -> str:
        try:
            cfg.parse_value(name, text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    return parse


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """PATH, --at, the topic-config flags, --format, --quiet (shared with ``compaction``)."""
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log dirs, partition dirs, or directories of log-dir copies")
    p.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                   help="the moment to evaluate: epoch ms or ISO-8601 (UTC unless a zone is "
                        "given); default: now")
    p.add_argument("--format", choices=("text", "json"), default="text")
    g = p.add_argument_group(
        "topic config", "priority: these flags > --config FILE > configs recovered from a "
                        "__cluster_metadata log in the tree > Kafka defaults")
    g.add_argument("--config", metavar="FILE",
                   help="properties, or kafka-configs --describe output")
    for name in FLAG_CONFIGS:
        g.add_argument(f"--{name.replace('.', '-')}", dest=_dest(name), type=_config_type(name),
                       metavar="V", help=argparse.SUPPRESS if name in _QUIET_FLAGS else None)
    add_quiet(p)


_QUIET_FLAGS = {"segment.index.bytes", "file.delete.delay.ms", "segment.jitter.ms"}


def _dest(name: str) -> str:
    return "cfg_" + name.replace(".", "_")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retention", help="explain which segments retention deletes, and why",
                       description=__doc__, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(p)
    p.add_argument("--forecast", type=float, metavar="DAYS",
                   help="project sizes with no new data for DAYS days after --at")
    p.add_argument("--plot", metavar="FILE",
                   help="draw the forecast (and why) to FILE.png or FILE.html "
                        "(implies --forecast 14 when not given)")
    p.add_argument("--no-deep", action="store_true",
                   help="skip reading record timestamps of kept segments (the count of "
                        "records older than retention that they still hold)")
    p.set_defaults(run=run)


# --------------------------------------------------------------------------- loading


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


def flags_from_args(args: argparse.Namespace) -> dict[str, str]:
    return {name: getattr(args, _dest(name)) for name in FLAG_CONFIGS
            if getattr(args, _dest(name), None) is not None}


def load(args: argparse.Namespace) -> Loaded:
    """Walk PATH, summarise every live partition's segments, resolve each topic's config."""
    log_dirs, loose = open_tree(args.paths)
    findings: list[Finding] = list(loose)
    config_file = cfg.read_config_file(args.config) if args.config else None
    meta_paths = [p.path for d in log_dirs for p in d.partitions
                  if p.name is not None and p.name.is_metadata_log]
    metadata, meta_where, more = cfg.load_cluster_metadata(meta_paths, at=args.at)
    findings += more
    sources = ["flags"] if flags_from_args(args) else []
    if config_file:
        sources.append(f"--config {config_file.path}")
    if metadata:
        sources.append(f"__cluster_metadata {meta_where}")
    flags = flags_from_args(args)
    todo: list[tuple[LogDir, PartitionDir]] = []
    skipped: list[Skipped] = []
    for d in log_dirs:
        findings += d.findings
        for p in d.partitions:
            findings += p.findings
            if p.name is None:
                skipped.append(Skipped(str(p.path), "not a <topic>-<partition> directory"))
            elif p.name.is_metadata_log:
                skipped.append(Skipped(str(p.path), "KRaft metadata log: its retention "
                                       "follows metadata.max.retention.* and snapshots"))
            elif p.name.state in _SKIP_STATE:
                skipped.append(Skipped(str(p.path), _SKIP_STATE[p.name.state]))
            else:
                # retention and cleaning see the whole partition, even when one segment file
                # was named on the command line
                whole = settled(load_partition_dir(p.path), d.checkpoints) if p.segments else p
                if whole.segments:
                    todo.append((d, whole))
                else:
                    skipped.append(Skipped(str(p.path), "no segments"))
    total = sum(s.log_size or 0 for _, p in todo for s in p.segments)
    out = []
    with progress(total, "summarising", quiet=args.quiet) as advance:
        for d, p in todo:
            summaries = []
            for s in p.segments:
                summaries.append(summarize(s, is_active=s is p.active_segment))
                advance(s.log_size or 0)
            findings += [f for s in summaries for f in s.findings]
            tp = (p.name.topic, p.name.partition)
            out.append(PartitionInput(
                d, p, p.name.topic, p.name.partition, tuple(summaries),
                cfg.resolve(p.name.topic, flags=flags, config_file=config_file,
                            metadata=metadata, metadata_detail=meta_where),
                d.high_watermarks.get(tp), d.log_start_offsets.get(tp),
                d.cleaner_offsets.get(tp)))
    return Loaded(tuple(out), tuple(skipped), tuple(findings), tuple(sources))


def now_ms(args: argparse.Namespace) -> int:
    return args.at if args.at is not None else int(time.time() * 1000)


# --------------------------------------------------------------------------- deep pass


def record_times(files: SegmentFiles) -> tuple[np.ndarray, np.ndarray]:
    """Every data record's timestamp in one segment and its share of its batch's bytes,
    from the record kernel's columns (control batches left out)."""
    ts_parts: list[np.ndarray] = []
    size_parts: list[np.ndarray] = []
    with Segment.open(files) as seg:
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


def deep_segments(pr: PartitionRetention) -> list:
    """Segments the deep pass reads: kept because their newest record is within retention."""
    if pr.config.local_retention_ms_effective < 0:
        return []
    return [v for v in pr.segments if v.reason == WITHIN_RETENTION_MS and v.record_count]


def stale_in_kept(pi: PartitionInput, pr: PartitionRetention,
                  advance=lambda n: None) -> dict[int, StaleRecords]:
    """The deep pass: records older than retention.ms inside segments kept because their
    newest record is within retention."""
    retention_ms = pr.config.local_retention_ms_effective
    out: dict[int, StaleRecords] = {}
    files = {s.base_offset: s for s in pi.dir.segments}
    for v in deep_segments(pr):
        ts, sizes = record_times(files[v.base_offset])
        advance(v.size)
        bases = np.full(ts.shape[0], v.base_offset, np.int64)
        out |= stale_records(bases, ts, sizes, cutoff_ms=pr.now_ms - retention_ms)
    return out


# --------------------------------------------------------------------------- run


@dataclass(frozen=True, slots=True)
class Explained:
    input: PartitionInput
    retention: PartitionRetention
    forecast: Forecast | None


def run(args: argparse.Namespace) -> int:
    if args.plot and not args.plot.lower().endswith((".png", ".html", ".htm")):
        raise SegtoolsError("--plot needs a .png or .html file name", path=args.plot)
    if args.forecast is not None and not 0 < args.forecast <= 36500:
        raise SegtoolsError("--forecast DAYS must be between 0 and 36500")
    loaded = load(args)
    now = now_ms(args)
    days = args.forecast if args.forecast is not None else (14.0 if args.plot else None)
    until = now + int(days * DAY_MS) if days is not None else None
    verdicts = [(pi, explain_retention(pi.summaries, pi.config, now_ms=now,
                                       high_watermark=pi.high_watermark,
                                       log_start_offset=pi.log_start_offset))
                for pi in loaded.partitions]
    deep = 0 if args.no_deep else sum(v.size for _, pr in verdicts for v in deep_segments(pr))
    explained = []
    with progress(deep, "reading record timestamps", quiet=args.quiet) as advance:
        for pi, pr in verdicts:
            if not args.no_deep:
                pr = pr.with_stale(stale_in_kept(pi, pr, advance))
            fc = forecast_partition(pr, until_ms=until) if until is not None else None
            explained.append(Explained(pi, pr, fc))
    topics = topic_forecasts(explained) if until is not None else {}
    if args.plot:
        try:  # matplotlib is heavy (and optional): imported only when a picture is wanted
            from segtools.cli import plot
        except ImportError as e:
            raise SegtoolsError(f"--plot needs matplotlib ({e.name} is not installed)") \
                from None
        plot.write(args.plot, explained, topics, now_ms=now, until_ms=until)
    if args.format == "json":
        sys.stdout.write(render.dumps(document(loaded, explained, topics, now, args.plot)))
        sys.stdout.write("\n")
    else:
        print_text(loaded, explained, topics, now, args.plot)
    return exit_code(loaded.findings)


def topic_forecasts(explained: Sequence[Explained]) -> dict[str, Forecast]:
    by_topic: dict[str, list[tuple[str, Forecast]]] = {}
    for e in explained:
        if e.forecast is not None:
            by_topic.setdefault(e.input.topic, []).append((e.input.label, e.forecast))
    return {t: combine(items) for t, items in by_topic.items()}


def hw_source(pi: PartitionInput) -> str:
    return ("replication-offset-checkpoint" if pi.high_watermark is not None
            else "assumed: log end offset (no replication-offset-checkpoint entry)")


def lso_source(pi: PartitionInput) -> str:
    return ("log-start-offset-checkpoint" if pi.log_start_offset is not None
            else "no checkpoint entry, so the first segment's base, as Kafka assumes")


def document(loaded: Loaded, explained: Sequence[Explained], topics: dict[str, Forecast],
             now: int, plot_path: str | None) -> dict:
    """The ``--format json`` document (one object)."""
    partitions = []
    for e in explained:
        pi = e.input
        obj = {"topic": pi.topic, "partition": pi.partition, "path": str(pi.dir.path),
               "log_dir": str(pi.log_dir.path), **e.retention.to_json(),
               "high_watermark_source": hw_source(pi),
               "log_start_offset_source": lso_source(pi)}
        if e.forecast is not None:
            obj["forecast"] = e.forecast.to_json()
        partitions.append(obj)
    topic_rows = {}
    for e in explained:
        t = topic_rows.setdefault(e.input.topic, {"topic": e.input.topic, "partitions": 0,
                                                  "size": 0, "deletable_bytes": 0})
        t["partitions"] += 1
        t["size"] += e.retention.size
        t["deletable_bytes"] += e.retention.deletable_bytes
    for name, fc in topics.items():
        topic_rows[name]["forecast"] = fc.to_json()
    return {"type": "retention", "version": 1, "at": now, "at_iso": format_time(now),
            "config_sources": list(loaded.config_sources),
            "partitions": partitions, "topics": list(topic_rows.values()),
            "skipped": [s.to_json() for s in loaded.skipped],
            "findings": [f.to_json() for f in loaded.findings],
            "plot": plot_path}


# --------------------------------------------------------------------------- text


#: Text width when stdout is not a terminal (a file, a pager, a CI log): wide enough that the
#: reason column stays readable.
PIPE_WIDTH = 160


def console() -> Console:
    """Rich on stdout; no colour or wrapping surprises when piped."""
    terminal = sys.stdout.isatty()
    width = None if terminal else PIPE_WIDTH
    return Console(file=sys.stdout, width=width, highlight=False, emoji=False,
                   color_system="auto" if terminal else None, soft_wrap=False)


def safe(text: object) -> Text:
    return Text(render.terminal_safe(str(text)))


def config_line(c: cfg.TopicConfig, names: Iterable[str]) -> str:
    parts = []
    for name in names:
        value = c.value(name)
        if name == "cleanup.policy":
            shown = ",".join(value)
        elif value == cfg.LONG_MAX:
            shown = "Long.MAX_VALUE (never)"
        elif name.endswith(".ms"):
            shown = format_retention(value) if name == "retention.ms" else \
                f"{value} ({format_duration(value)})"
        else:
            shown = str(value)
        parts.append(f"{name}={shown} [{c.source(name).source}]")
    return " · ".join(parts)


_VERDICT_STYLE = {True: "bold red", False: "green"}


def print_text(loaded: Loaded, explained: Sequence[Explained], topics: dict[str, Forecast],
               now: int, plot_path: str | None) -> None:
    out = console()
    out.print(safe(f"retention at {format_time(now)} ({now} ms); config from: "
                   f"{', '.join(loaded.config_sources) or 'Kafka defaults only'}"))
    for e in explained:
        print_partition(out, e)
    for s in loaded.skipped:
        out.print(safe(f"skipped {s.path}: {s.reason}"), style="dim")
    for name, fc in topics.items():
        print_forecast(out, name, fc)
    for f in loaded.findings:
        if f.severity != "info":
            out.print(safe(f"{f.severity.upper()} {f.code} {f.path}: {f.message}"))
    if plot_path:
        out.print(safe(f"plot written to {plot_path}"))


def print_partition(out: Console, e: Explained) -> None:
    pi, pr = e.input, e.retention
    out.print()
    out.print(Text.assemble((render.terminal_safe(pi.label), "bold"), "  ",
                            (render.terminal_safe(str(pi.dir.path)), "dim")))
    out.print(safe("  " + config_line(pr.config, ("cleanup.policy", "retention.ms",
                                                  "retention.bytes"))))
    out.print(safe(f"  high watermark {pr.high_watermark} ({hw_source(pi)}) · log start offset "
                   f"{pr.log_start_offset} ({lso_source(pi)}) · log end offset "
                   f"{pr.log_end_offset} · {format_bytes(pr.size)} in {len(pr.segments)} "
                   f"segment(s), {format_bytes(pr.deletable_bytes)} deletable"))
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col, kw in (("segment", {"no_wrap": True}), ("size", {"justify": "right"}),
                    ("largest timestamp (source)", {"no_wrap": True}),
                    ("age", {"justify": "right", "no_wrap": True}), ("verdict", {}),
                    ("eligible at", {"no_wrap": True}), ("reason", {"ratio": 1})):
        table.add_column(col, **kw)
    for v in pr.segments:
        last = "" if v.last_offset is None else v.last_offset
        reason = Text.assemble((v.reason, "bold"), "\n", (v.reason_text, "dim"))
        if v.stale and v.stale.count:
            reason.append(f"\nholds {v.stale.count} records older than retention "
                          f"({format_bytes(v.stale.bytes)})", style="yellow")
        table.add_row(
            safe(f"@{v.base_offset}..{last}" + (" (active)" if v.is_active else "")),
            format_bytes(v.size), f"{format_time(v.max_timestamp)} ({v.max_timestamp_source})",
            format_duration(v.age_ms),
            Text("DELETE" if v.deletable else "keep", style=_VERDICT_STYLE[v.deletable]),
            format_time(v.eligible_at), reason)
    out.print(table)
    for c in pr.callouts:
        out.print(Text.assemble(("  ! ", "yellow"), (c.code, "bold"), ": ",
                                render.terminal_safe(c.message)))
    if e.forecast is not None and e.forecast.steps:
        out.print(safe(f"  forecast: {format_bytes(e.forecast.start_size)} now -> "
                       f"{format_bytes(e.forecast.end_size)} at "
                       f"{format_time(e.forecast.end_ms)} ({len(e.forecast.steps)} step(s))"))


def print_forecast(out: Console, topic: str, fc: Forecast) -> None:
    out.print()
    out.print(safe(f"forecast for topic {topic}, no new data, {format_time(fc.start_ms)} -> "
                   f"{format_time(fc.end_ms)}: {format_bytes(fc.start_size)} -> "
                   f"{format_bytes(fc.end_size)}"), style="bold")
    if not fc.steps:
        out.print(safe("  nothing is deleted in this window"))
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in ("when", "partition", "segments deleted", "freed", "topic size after"):
        table.add_column(col)
    for s in fc.steps:
        table.add_row(format_time(s.at_ms), safe(s.label),
                      safe(", ".join(f"@{b}" for b in s.removed)),
                      format_bytes(s.removed_bytes), format_bytes(s.size_after))
    out.print(table)
