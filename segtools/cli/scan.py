"""``segtools scan``: one table for a whole ``log.dirs`` tree (or JBOD dirs, or one partition).

A shallow walk of every segment (batch headers only, no decompression, CRC on request), so a
large tree is read at disk speed: one row per segment with offsets, size, counts, the max
timestamp retention will use and where it came from, codecs; then the leftovers a broker
leaves behind (``-delete``/``-future``/``-stray`` dirs, ``.deleted``/``.cleaned``/``.swap``
files) and every finding met on the way.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from rich import box
from rich.table import Table

from segtools.analysis.kafka_versions import allows, log_dir_versions
from segtools.cli import common, render
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import PartitionDir
from segtools.storage.segment import unreadable
from segtools.storage.summary import SegmentSummary, summarize

EXAMPLES = """examples:
  segtools scan /var/kafka-logs
  segtools scan /data/1/kafka /data/2/kafka --topic 'orders.*' --format csv > segments.csv
  segtools scan /var/kafka-logs/orders-3 --crc --format jsonl | jq 'select(.type=="segment")'
"""

CSV_FIELDS = ("log_dir", "topic", "partition", "state", "base_offset", "last_offset", "size",
              "batch_count", "record_count", "first_timestamp", "max_timestamp",
              "max_timestamp_source", "codecs", "magics", "is_active", "crc_errors", "path")


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "scan", "table of topics, partitions and segments in log dirs",
                           __doc__, EXAMPLES)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log dirs, partition dirs or segment files")
    common.add_selection(p)
    common.add_format(p, extra=("csv",))
    p.add_argument("--crc", action="store_true", help="also verify every batch CRC")
    common.add_quiet(p)
    common.add_decompress_limit(p)
    p.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class PartitionScan:
    log_dir: LogDir
    partition: PartitionDir
    segments: tuple[SegmentSummary, ...]
    unreadable: tuple[Finding, ...] = ()


def scan_tree(log_dirs: list[LogDir], args: argparse.Namespace,
              verify_crc: bool) -> Iterator[PartitionScan]:
    """Summaries of every selected partition, in walk order, with a progress bar."""
    chosen = [(d, p) for d in log_dirs for p in d.partitions if common.selected(p, args)]
    total = sum(s.log_size for _, p in chosen for s in p.segments)
    with common.progress(total, "scanning", quiet=args.quiet) as advance:
        for log_dir, pdir in chosen:
            summaries, problems = [], []
            for seg in pdir.segments:
                try:
                    summaries.append(summarize(seg, is_active=seg is pdir.active_segment,
                                               verify_crc=verify_crc,
                                               decompress_limit=args.max_decompressed_bytes))
                except SegtoolsError as e:
                    problems.append(unreadable(str(seg.log), e))
                advance(seg.log_size)
            yield PartitionScan(log_dir, pdir, tuple(summaries), tuple(problems))


def _row(ps: PartitionScan, s: SegmentSummary) -> dict:
    name = ps.partition.name
    return {
        "log_dir": str(ps.log_dir.path),
        "topic": name.topic if name else None,
        "partition": name.partition if name else None,
        "state": str(name.state) if name else None,
        **{k: v for k, v in s.to_json().items() if k != "findings"},
    }


def run(args: argparse.Namespace) -> int:
    log_dirs, loose = common.open_tree(args.paths)
    findings: list[Finding] = list(loose)
    for d in log_dirs:
        findings.extend(d.findings)
    scans = []
    for ps in scan_tree(log_dirs, args, args.crc):
        scans.append(ps)
        findings.extend(ps.partition.findings)
        findings.extend(ps.unreadable)
        findings.extend(f for s in ps.segments for f in s.findings)
        if args.format == "jsonl":  # stream: a huge tree prints as it goes
            for s in ps.segments:
                sys.stdout.write(render.dumps(_row(ps, s)) + "\n")
    versions = {str(d.path): log_dir_versions(
        d, (s for ps in scans if ps.log_dir is d for s in ps.segments)) for d in log_dirs}
    if args.format == "jsonl":
        for path, vr in versions.items():
            sys.stdout.write(render.dumps({"type": "log_dir", "path": path, **vr.to_json()})
                             + "\n")
        for f in findings:
            sys.stdout.write(render.dumps(f.to_json()) + "\n")
    elif args.format == "csv":
        writer = csv.DictWriter(sys.stdout, CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for ps in scans:
            for s in ps.segments:
                row = _row(ps, s)
                row["codecs"] = "+".join(row["codecs"])
                row["magics"] = "+".join(str(m) for m in row["magics"])
                writer.writerow(row)
    else:
        _print_tables(scans, findings)
        _print_versions(versions)
    return common.exit_code(findings)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _log_dir_label(log_dir, scans: list[PartitionScan]) -> str:
    """The log dir's name, with its broker or node id from meta.properties when known; the full
    path when two scanned log dirs share a name."""
    names = {ps.log_dir.path.name for ps in scans if ps.log_dir.path != log_dir.path}
    label = log_dir.path.name if log_dir.path.name not in names else str(log_dir.path)
    node = log_dir.meta.node_id if log_dir.meta is not None else None
    return f"{label} (node {node})" if node is not None else label


def _print_versions(versions: dict) -> None:
    """Which Kafka releases could have written each log dir, and why (docs/kafka-versions.md)."""
    console = common.console()
    for path, vr in versions.items():
        console.print(f"log dir {render.terminal_safe(path)}: written by Kafka {vr.label}"
                      + ("" if vr.consistent else " (the evidence disagrees: files from "
                         "different brokers?)"), markup=False)
        for e in vr.evidence:
            detail = f" [{e.detail}]" if e.detail else ""
            console.print(f"  {e.rule.name}{detail}: {allows(e)} ({e.rule.source})",
                          markup=False)


def _print_tables(scans: list[PartitionScan], findings: list[Finding]) -> None:
    console = common.console()
    table = Table(title="segments", box=box.SIMPLE_HEAD)
    # copies of the same partition from several brokers would print identical-looking rows
    several = len({ps.log_dir.path for ps in scans}) > 1
    if several:
        table.add_column("log dir")
    for col in ("partition", "base offset", "last offset", "size", "batches", "records",
                "max timestamp (UTC)", "from", "codecs", ""):
        table.add_column(col, justify="right" if col in (
            "base offset", "last offset", "size", "batches", "records") else "left")
    for ps in scans:
        label = render.terminal_safe(ps.partition.path.name)
        where = render.terminal_safe(_log_dir_label(ps.log_dir, scans))
        for s in ps.segments:
            marks = []
            if s.is_active:
                marks.append("active")
            if s.crc_errors:
                marks.append(f"{s.crc_errors} bad CRC")
            table.add_row(*((where,) if several else ()), label, str(s.base_offset),
                          "-" if s.last_offset is None else str(s.last_offset), _size(s.size),
                          str(s.batch_count), str(s.record_count),
                          render.human_time(s.max_timestamp), s.max_timestamp_source,
                          ",".join(s.codecs), " ".join(marks))
            label = where = ""
    console.print(table)
    leftovers = [f for f in findings if f.code.startswith(("leftover_", "partition_"))]
    if leftovers:
        console.print("[bold]leftovers[/bold] (evidence a broker left behind):")
        for f in leftovers:
            console.print(f"  {f.code}: {render.terminal_safe(f.path)}", markup=False)
    problems = [f for f in findings if f not in leftovers and str(f.severity) != "info"]
    if problems:
        console.print(f"[bold]{len(problems)} finding(s)[/bold]:")
        for f in problems:
            where = f" @ {f.position}" if f.position is not None else ""
            console.print(f"  {f.severity} {f.code} {render.terminal_safe(f.path)}{where}: "
                          f"{render.terminal_safe(f.message)}", markup=False)
