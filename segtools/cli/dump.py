"""``segtools dump``: print a segment's batches and records, like ``kafka-dump-log.sh``.

Text output keeps Kafka's line shapes (an operator's muscle memory) with UTC times beside
epoch milliseconds; ``--format jsonl`` prints the DESIGN.md §3 objects, one per line.
"""

from __future__ import annotations

import argparse
import sys

from segtools.cli import render
from segtools.errors import NotAKafkaFileError
from segtools.findings import Finding, Severity
from segtools.model import Batch
from segtools.storage.segment import Segment

EXAMPLES = """examples:
  segtools dump 00000000000000000000.log
  segtools dump --deep --print-data --bytes utf8 /var/kafka-logs/orders-0/*.log
  segtools dump --deep --format jsonl --bytes base64 00000000000000000000.log | jq .
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump", help="print batches and records of .log files",
                       description=__doc__, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE", help=".log segment files")
    p.add_argument("--deep", "--deep-iteration", action="store_true",
                   help="decode the records inside each batch")
    p.add_argument("--print-data", "--print-data-log", action="store_true",
                   help="print keys, values and headers (implies --deep)")
    p.add_argument("--format", choices=("text", "jsonl"), default="text")
    p.add_argument("--bytes", choices=render.BYTES_MODES, default=None,
                   help="how keys/values are rendered (default: utf8 for text, base64 for jsonl)")
    p.add_argument("--no-crc", action="store_true", help="skip CRC verification")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    deep = args.deep or args.print_data
    mode = args.bytes or ("base64" if args.format == "jsonl" else "utf8")
    out = sys.stdout
    worst = 0
    for path in args.files:
        if not is_log_file(path):
            raise NotAKafkaFileError("not a .log segment (dump of other files comes later)",
                                     path=path)
        with Segment(path) as segment:
            if args.format == "text":
                out.write(f"Dumping {path}\nLog starting offset: {segment.base_offset}\n")
            worst = max(worst, _dump_segment(segment, deep, args, mode, out))
    return worst


LOG_SUFFIXES = (".log", ".log.deleted", ".log.cleaned", ".log.swap")


def is_log_file(path: str) -> bool:
    """Record data: a ``.log``, or one the broker renamed on its way out (evidence too)."""
    return path.endswith(LOG_SUFFIXES)


def _emit_finding(f: Finding, args, out) -> int:
    if args.format == "jsonl":
        out.write(render.dumps(f.to_json()) + "\n")
    else:
        out.write(f"{f.severity.upper()} {f.code} at position {f.position}: "
                  f"{render.terminal_safe(f.message)}\n")
    return 1 if f.severity in (Severity.WARNING, Severity.ERROR) else 0


def _emit_batch(b: Batch, args, out) -> None:
    if args.format == "jsonl":
        out.write(render.dumps(b.to_json()) + "\n")
    else:
        out.write(render.batch_text(b) + "\n")


#: Batches decoded per kernel call while streaming: bounds memory, amortises the call.
WINDOW = 1024


def _windows(items, size: int = WINDOW):
    """Split the shallow walk into windows of batches, each with the findings met on the way
    (a finding belongs after the batch at its position, or after the window if it has none)."""
    batches: list[Batch] = []
    findings: list[Finding] = []
    for item in items:
        if isinstance(item, Finding):
            findings.append(item)
            continue
        batches.append(item)
        if len(batches) >= size:
            yield batches, findings
            batches, findings = [], []
    if batches or findings:
        yield batches, findings


def _dump_segment(segment: Segment, deep: bool, args, mode: str, out) -> int:
    worst = 0
    walk = segment.batches(verify_crc=not args.no_crc)
    if not deep:
        for item in walk:
            if isinstance(item, Finding):
                worst = max(worst, _emit_finding(item, args, out))
            else:
                _emit_batch(item, args, out)
        return worst
    for batches, findings in _windows(walk):
        findings_at: dict[int | None, list[Finding]] = {}
        for f in findings:
            findings_at.setdefault(f.position, []).append(f)
        for br in segment.batch_records(batches):
            _emit_batch(br.batch, args, out)
            for r in br.records:
                if args.format == "jsonl":
                    out.write(render.dumps(render.record_json(r, mode)) + "\n")
                else:
                    out.write(render.record_text(r, br.batch, print_data=args.print_data,
                                                 mode=mode) + "\n")
            for f in findings_at.pop(br.batch.position, []):
                worst = max(worst, _emit_finding(f, args, out))
            if br.finding is not None:
                worst = max(worst, _emit_finding(br.finding, args, out))
        for f in (f for fs in findings_at.values() for f in fs):
            worst = max(worst, _emit_finding(f, args, out))
    return worst
