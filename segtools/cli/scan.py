"""``segtools scan``: one table for a whole ``log.dirs`` tree (or JBOD dirs, or one partition).

A shallow walk of every segment (batch headers only, no decompression, CRC on request), so a
large tree is read at disk speed: one row per segment with offsets, size, counts, the max
timestamp retention will use and where it came from, codecs; then the leftovers a broker
leaves behind (``-delete``/``-future``/``-stray`` dirs, ``.deleted``/``.cleaned``/``.swap``
files) and every finding met on the way. With ``--remote-store`` a tiered partition's copied
remote segments (named by the log dir's ``__remote_log_metadata``) are read from the store by
the same walk and listed before its local ones, marked ``remote``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain

from segtools import fanout
from segtools.analysis.kafka_versions import (
    allows,
    log_dir_versions,
    older_time_index_convention,
)
from segtools.analysis.remote_input import (
    RemoteSummary,
    remote_metadata,
    remote_only_partitions,
    remote_summaries,
)
from segtools.analysis.tiered import remote_by_partition
from segtools.cli import common, render
from segtools.cli.table import Column, Lines, TextTable
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import PartitionDir
from segtools.storage.remote_store import segment_store
from segtools.storage.segment import unreadable, with_following
from segtools.storage.summary import SegmentSummary, summarize

EXAMPLES = """examples:
  segtools scan /var/kafka-logs
  segtools scan /data/1/kafka /data/2/kafka --topic 'orders.*' --format csv
  segtools scan /var/kafka-logs/orders-3 --crc --format jsonl | jq .size
  # with a tiered partition's remote segments (a LocalTieredStorage dir):
  segtools scan /var/kafka-logs --remote-store /mnt/tiered
"""

CSV_FIELDS = ("log_dir", "topic", "partition", "state", "base_offset", "last_offset", "size",
              "batch_count", "record_count", "first_timestamp", "max_timestamp",
              "max_timestamp_source", "codecs", "magics", "is_active", "crc_errors", "path", "tier",
              "remote_segment_id")


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "scan", "table of topics, partitions and segments in log dirs",
                           __doc__, EXAMPLES,
                           timeless="it lists what the files hold; a segment's age is "
                                    "retention's answer")
    common.add_paths(p, "log dirs, partition dirs or segment files")
    common.add_selection(p)
    common.add_format(p, extra=("csv",))
    p.add_argument("--crc", action="store_true", help="also verify every batch CRC")
    common.add_quiet(p)
    common.add_decompress_limit(p)
    p.add_argument("--remote-store", metavar="DIR",
                   help="Kafka's LocalTieredStorage directory (its 'dir' setting): list each "
                        "tiered partition's copied remote segments too, read from there")
    p.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class PartitionScan:
    log_dir: LogDir
    partition: PartitionDir
    segments: tuple[SegmentSummary, ...]
    unreadable: tuple[Finding, ...] = ()
    remote: tuple[RemoteSummary, ...] = ()  # the copied remote segments (--remote-store)


def scan_tree(log_dirs: list[LogDir], args: argparse.Namespace,
              verify_crc: bool) -> Iterator[PartitionScan]:
    """Summaries of every selected partition, in walk order, with a progress bar; large
    trees are summarised on every core (:mod:`segtools.fanout`)."""
    chosen = [(d, p) for d in log_dirs for p in d.partitions if common.selected(p, args)]
    total = sum(s.log_size for _, p in chosen for s in p.segments)
    segments = sum(len(p.segments) for _, p in chosen)
    summarised = fanout.ordered(partial(summarize_partition, verify_crc=verify_crc,
                                        limit=args.max_decompressed_bytes),
                                [p for _, p in chosen], segments=segments)
    with common.progress(total, "scanning", quiet=args.quiet) as advance:
        for (log_dir, pdir), (summaries, problems) in zip(chosen, summarised, strict=True):
            advance(sum(s.log_size for s in pdir.segments))
            yield PartitionScan(log_dir, pdir, summaries, problems)


def summarize_partition(pdir: PartitionDir, *, verify_crc: bool, limit: int
                        ) -> tuple[tuple[SegmentSummary, ...], tuple[Finding, ...]]:
    """One partition's segment summaries, and a finding per segment that could not be read."""
    summaries, problems = [], []
    for seg, following in with_following(pdir.segments):
        try:
            summaries.append(summarize(seg, is_active=seg is pdir.active_segment,
                                       verify_crc=verify_crc, decompress_limit=limit,
                                       following=following))
        except SegtoolsError as e:
            problems.append(unreadable(str(seg.log), e))
    return tuple(summaries), tuple(problems)


def _row(ps: PartitionScan, s: SegmentSummary, remote: RemoteSummary | None = None) -> dict:
    name = ps.partition.name
    return {
        "type": "segment",  # first, as on every JSON line (docs/json-contract.md)
        "log_dir": str(ps.log_dir.path),
        "topic": name.topic if name else None,
        "partition": name.partition if name else None,
        "state": str(name.state) if name else None,
        **{k: v for k, v in s.to_json().items() if k != "findings"},
        "tier": "local" if remote is None else "remote",
        "remote_segment_id": None if remote is None else remote.segment.segment_id,
    }


def _rows(ps: PartitionScan) -> Iterator[dict]:
    """A partition's rows in offset order: the remote part of its log, then the local one."""
    for r in ps.remote:
        yield _row(ps, r.summary, r)
    for s in ps.segments:
        yield _row(ps, s)


class RemoteTier:
    """The remote store and the log dirs' ``__remote_log_metadata``, replayed once."""

    def __init__(self, log_dirs: list[LogDir], path: str) -> None:
        self.store = segment_store(path)
        self.partitions = remote_by_partition(remote_metadata(log_dirs))
        self.log_dirs = log_dirs

    def remote_only(self, args: argparse.Namespace) -> Iterator[PartitionScan]:
        """The selected tiered partitions no log dir holds a directory of: their log is
        only in the store (:func:`remote_only_partitions`), listed after the local ones."""
        for log_dir, pdir in remote_only_partitions(self.log_dirs, self.partitions):
            if common.selected(pdir, args):
                yield PartitionScan(log_dir, pdir, ())

    def add(self, ps: PartitionScan, args: argparse.Namespace) -> PartitionScan:
        name = ps.partition.name
        rp = self.partitions.get((name.topic, name.partition)) if name is not None and \
            str(name.state) == "live" else None
        if rp is None:
            return ps
        remote, problems = remote_summaries(rp, self.store, verify_crc=args.crc,
                                            limit=args.max_decompressed_bytes)
        return replace(ps, remote=remote, unreadable=ps.unreadable + problems)


def run(args: argparse.Namespace) -> int:
    log_dirs, loose = common.open_tree(args.paths)
    common.require_match(log_dirs, args)
    # the store is checked before any output: a refused one prints nothing but the error
    tier = RemoteTier(log_dirs, args.remote_store) if args.remote_store else None
    findings: list[Finding] = list(loose)
    for d in log_dirs:
        findings.extend(d.findings)
    witnesses: dict[str, Witnesses] = {str(d.path): Witnesses() for d in log_dirs}
    out = sys.stdout
    if args.format == "csv":
        writer = csv.DictWriter(out, CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
    elif args.format == "text":
        rows = SegmentRows(log_dirs, out)
    scanned = scan_tree(log_dirs, args, args.crc)
    for ps in scanned if tier is None else chain(scanned, tier.remote_only(args)):
        if tier is not None:
            ps = tier.add(ps, args)
        findings.extend(f for r in ps.remote for f in r.summary.findings)
        findings.extend(ps.partition.findings)
        findings.extend(ps.unreadable)
        findings.extend(f for s in ps.segments for f in s.findings)
        witnesses[str(ps.log_dir.path)].add(ps.segments)
        # every format streams: a huge tree prints as it goes, in flat memory
        if args.format == "jsonl":
            for row in _rows(ps):
                out.write(render.dumps(row) + "\n")
        elif args.format == "csv":
            for row in _rows(ps):
                row["codecs"] = "+".join(row["codecs"])
                row["magics"] = "+".join(str(m) for m in row["magics"])
                writer.writerow(row)
        else:
            rows.add(ps)
    versions = {str(d.path): log_dir_versions(d, witnesses[str(d.path)].kept)
                for d in log_dirs}
    if args.format == "jsonl":
        for path, vr in versions.items():
            out.write(render.dumps({"type": "log_dir", "path": path, **vr.to_json()}) + "\n")
        for f in findings:
            out.write(render.dumps(f.to_json()) + "\n")
    elif args.format == "text":
        rows.close(args.crc)
        say = Lines(out, rows.table.width)
        _print_findings(findings, say)
        _print_versions(versions, say)
    return common.exit_code(findings)


class Witnesses:
    """The few summaries the version evidence needs (:func:`log_dir_versions` asks only
    whether some segment shows each sign, and which is first), so a tree's summaries need
    not all be held until the end."""

    def __init__(self) -> None:
        self.kept: list[SegmentSummary] = []
        self._signs: set[str] = set()

    def add(self, summaries: tuple[SegmentSummary, ...]) -> None:
        for s in summaries:
            signs = {name for name, test in _SIGNS if name not in self._signs and test(s)}
            if signs:
                self._signs |= signs
                self.kept.append(s)


_SIGNS = (("older", older_time_index_convention), ("v2", lambda s: 2 in s.magics),
          ("zstd", lambda s: "zstd" in s.codecs),
          ("producers", lambda s: bool(s.producer_id_count or s.transactional_batches)))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def log_dir_labels(log_dirs: list[LogDir]) -> dict[str, str]:
    """Each log dir's name, with its broker or node id from meta.properties when known; the
    full path when two log dirs share a name (counted once: linear in the log dirs)."""
    names = Counter(d.path.name for d in log_dirs)
    out = {}
    for d in log_dirs:
        label = d.path.name if names[d.path.name] == 1 else str(d.path)
        node = d.meta.node_id if d.meta is not None else None
        out[str(d.path)] = f"{label} (node {node})" if node is not None else label
    return out


#: ``scan``'s text columns (docs/cli.md): the log dir only when several were scanned.
COLUMNS = (Column("partition"), Column("base offset", right=True),
           Column("last offset", right=True), Column("size", right=True),
           Column("batches", right=True), Column("records", right=True),
           Column("max timestamp (UTC)", width=24), Column("from", width=9),
           Column("codecs"), Column("marks"))


class SegmentRows:
    """The segment table, one row per segment as each partition is summarised."""

    def __init__(self, log_dirs: list[LogDir], out) -> None:
        self.several = len(log_dirs) > 1  # copies of a partition from several brokers
        self.labels = log_dir_labels(log_dirs)
        self.table = TextTable(((Column("log dir"),) if self.several else ()) + COLUMNS, out)

    def add(self, ps: PartitionScan) -> None:
        label = render.terminal_safe(ps.partition.path.name)
        where = (render.terminal_safe(self.labels[str(ps.log_dir.path)]),) \
            if self.several else ()
        for s, remote in [(r.summary, r) for r in ps.remote] + [(s, None) for s in ps.segments]:
            marks = [] if remote is None else ["remote"]
            if s.is_active:
                marks.append("active")
            if s.crc_errors:
                marks.append(f"{s.crc_errors}-bad-CRC")
            self.table.add(*where, label, str(s.base_offset),
                           "-" if s.last_offset is None else str(s.last_offset), _size(s.size),
                           str(s.batch_count), str(s.record_count),
                           render.human_time(s.max_timestamp), s.max_timestamp_source,
                           ",".join(s.codecs) or "-", ",".join(marks) or "-")

    def close(self, crc_checked: bool) -> None:
        """The count, and whether the CRCs were checked: a table without ``N-bad-CRC``
        marks vouches for them only then."""
        self.table.close()
        checked = "batch CRCs checked" if crc_checked else \
            "batch CRCs not checked (--crc checks them)"
        self.table.out.write(f"{self.table.rows} segment(s)\n{checked}\n")


def _print_versions(versions: dict, say: Lines) -> None:
    """Which Kafka releases could have written each log dir, and why (docs/kafka-versions.md)."""
    for path, vr in versions.items():
        if not vr.evidence:
            say(f"log dir {path}: no file in it names the Kafka version that wrote it")
        elif vr.consistent:
            say(f"log dir {path}: written by Kafka {vr.label}")
        else:
            say(f"log dir {path}: {vr.label} (files from different brokers?)")
        for e in vr.evidence:
            detail = f" [{e.detail}]" if e.detail else ""
            say(f"{e.rule.name}{detail}: {allows(e)} ({e.rule.source})", "  ")


#: What a broker leaves behind on its way (renamed files, directories being deleted, moved or
#: no longer owned): evidence, not damage. An unreadable partition dir is not one of them.
LEFTOVER_CODES = ("leftover_", "partition_delete", "partition_future", "partition_stray")


def _is_leftover(f: Finding) -> bool:
    return f.code.startswith(LEFTOVER_CODES)


def _print_findings(findings: list[Finding], say: Lines) -> None:
    leftovers = [f for f in findings if _is_leftover(f)]
    if leftovers:
        say("leftovers (evidence a broker left behind):")
        for f in leftovers:
            say(f"{f.code}: {f.path}", "  ")
    problems = [f for f in findings if not _is_leftover(f) and str(f.severity) != "info"]
    if problems:
        say(f"{len(problems)} finding(s):")
        for f in problems:
            where = f" @ {f.position}" if f.position is not None else ""
            say(f"{f.severity} {f.code} {f.path}{where}: {f.message}", "  ")
