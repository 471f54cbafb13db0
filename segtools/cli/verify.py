"""``segtools verify``: integrity across every file of a partition, as findings.

Batch CRCs and framing; ``.index`` and ``.timeindex`` against the log (and Kafka's own sanity
checks on them); ``.txnindex`` and producer snapshots; offset gaps between and inside segments,
classified (compaction gap, hole, overlap); batch leader epochs against
``leader-epoch-checkpoint``; truncated and zero-filled tails. Each problem is a finding with a
stable code; the exit code is 1 when any finding is a warning or an error.

``--salvage`` resynchronises past a corrupt batch on the next header whose CRC validates and
reports the exact byte and offset ranges lost.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from functools import partial

from segtools import fanout
from segtools.analysis.verify import verify_log_dir_files, verify_partition
from segtools.cli import common, decoding, render
from segtools.cli.table import Lines, terminal_width
from segtools.findings import Finding, Severity
from segtools.payloads.check import MAX_EXAMPLES, TopicPayloads, check_payloads

EXAMPLES = """examples:
  segtools verify /var/kafka-logs
  segtools verify /var/kafka-logs/orders-3 --deep
  segtools verify --salvage --format jsonl orders-3/00000000000000123456.log
  segtools verify /var/kafka-logs --decode --max-examples 3
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "verify", "check CRCs, indexes, offsets and epochs; findings",
                           __doc__, EXAMPLES,
                           timeless="it holds the files against each other and against "
                                    "Kafka's rules, never against a clock")
    common.add_paths(p, "log dirs, partition dirs or segment files")
    common.add_selection(p)
    p.add_argument("--deep", action="store_true",
                   help="also decompress and decode every record")
    p.add_argument("--salvage", action="store_true",
                   help="resynchronise past corrupt batches and report what was lost")
    decoding.add_decode(p)
    p.add_argument("--max-examples", type=int, default=MAX_EXAMPLES, metavar="N",
                   help="with --decode: findings listed per topic and code before the rest "
                        f"are only counted (default {MAX_EXAMPLES})")
    common.add_format(p)
    common.add_decompress_limit(p)
    common.add_quiet(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    log_dirs, loose = common.open_tree(args.paths)
    common.require_match(log_dirs, args)
    chosen = [(d, p) for d in log_dirs for p in d.partitions if common.selected(p, args)]
    counts = Counter()
    results = fanout.ordered(  # workers forked before the progress bar's thread starts
        partial(_verify_one, deep=args.deep, salvage=args.salvage,
                limit=args.max_decompressed_bytes), chosen,
        segments=sum(len(p.segments) for _, p in chosen))
    with common.progress(sum(s.log_size for _, p in chosen for s in p.segments), "verifying",
                         quiet=args.quiet) as advance:
        tree_level = list(loose)
        for d in log_dirs:
            tree_level += d.findings
            tree_level += verify_log_dir_files(d, limit=args.max_decompressed_bytes)
        findings: list[Finding] = list(tree_level)
        for (_, pdir), found in zip(chosen, results, strict=True):
            advance(sum(s.log_size for s in pdir.segments))
            counts["partitions"] += 1
            counts["segments"] += len(pdir.segments)
            findings.extend(found)
            if args.format == "jsonl":
                for f in found:
                    sys.stdout.write(render.dumps(f.to_json()) + "\n")
    payload_findings: list[Finding] = []
    payloads = _payloads(args, log_dirs, [p for _, p in chosen], payload_findings)
    findings.extend(payload_findings)
    by_severity = Counter(str(f.severity) for f in findings)
    if args.format == "jsonl":
        for f in tree_level + payload_findings:
            sys.stdout.write(render.dumps(f.to_json()) + "\n")
        for row in payloads:
            sys.stdout.write(render.dumps(row.to_json()) + "\n")
        sys.stdout.write(render.dumps({
            "type": "summary", "partitions": counts["partitions"],
            "segments": counts["segments"], "errors": by_severity["error"],
            "warnings": by_severity["warning"], "info": by_severity["info"]}) + "\n")
    else:
        _print_text(findings, counts, by_severity)
        for row in payloads:
            why = ", ".join(f"{n} {code}" for code, n in sorted(row.undecoded.items()))
            sys.stdout.write(f"payloads of {render.terminal_safe(row.topic)}: {row.records} "
                             f"record(s), {row.decoded} key(s)/value(s) decoded"
                             f"{', not decoded: ' + why if why else ''}\n")
    decoding.say_sources(args.schema_notes)
    return common.exit_code(findings)


def _payloads(args: argparse.Namespace, log_dirs, partitions, findings: list[Finding]
              ) -> list[TopicPayloads]:
    """``--decode``: every key and value decoded, counted per topic (none without it)."""
    decoder = decoding.payload_decoder(args, log_dirs, findings)
    if decoder is None:
        return []
    return check_payloads(partitions, decoder, findings, max_examples=args.max_examples,
                          limit=args.max_decompressed_bytes)


def _verify_one(job: tuple, *, deep: bool, salvage: bool, limit: int) -> list[Finding]:
    """One partition's findings (a job :func:`segtools.fanout.ordered` may run elsewhere)."""
    log_dir, pdir = job
    return verify_partition(log_dir, pdir, deep=deep, salvage=salvage, limit=limit)


def _print_text(findings: list[Finding], counts: Counter, by_severity: Counter) -> None:
    """One line per finding (docs/cli.md): severity, code, file, byte, offset, message; on a
    narrow terminal the line wraps with its continuation indented, nothing cut."""
    out = sys.stdout
    say = Lines(out, terminal_width(out))
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    for f in sorted(findings, key=lambda f: (order[f.severity], f.path, f.position or 0)):
        where = f" @ byte {f.position}" if f.position is not None else ""
        off = f" offset {f.offset}" if f.offset is not None else ""
        say(f"{f.severity.upper():7} {f.code:32} {f.path}{where}{off}: {f.message}")
    out.write(f"verified {counts['partitions']} partition(s), {counts['segments']} segment(s): "
              f"{by_severity['error']} error(s), {by_severity['warning']} warning(s), "
              f"{by_severity['info']} note(s)\n")
