"""``segtools producers``: how each producer batched, what its sequences say, and retried
duplicates.

Per topic, partition and producer (id and epoch; producers without idempotence are grouped):
batches, records per batch (p50/p90/p99/max), bytes per batch, codecs, how long batches stayed
open (CreateTime), and a verdict: ``unbatched`` (one record per batch), ``full`` (batches close
at a common size: ``batch.size``), ``lingered`` (batches close after one window: the likely
``linger.ms``) or ``mixed``, with what batching would save. Idempotent producers' sequences
are checked (gaps, duplicates, out-of-order, epoch bumps, wraps). ``--duplicates`` also reads
records to find sends a non-idempotent producer wrote twice within ``--window``.
"""

from __future__ import annotations

import argparse
import sys

from segtools.analysis import producers as prod
from segtools.cli import common, render
from segtools.cli.table import Wrapping
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.units import format_bytes, format_duration, parse_duration

EXAMPLES = """examples:
  segtools producers /var/kafka-logs
  segtools producers /var/kafka-logs --topic 'orders*' --format jsonl | jq .
  segtools producers /var/kafka-logs/metrics-0 --duplicates --window 5m
  segtools producers /var/kafka-logs --plot producers.png
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(
        sub, "producers", "how producers batch, their sequences, retried duplicates",
        __doc__, EXAMPLES, timeless="batches, sequences and retries are read from the log; "
                                    "how long a transaction has been open is transactions' "
                                    "answer")
    common.add_paths(p, "log dirs, partition dirs, or directories of log-dir copies")
    common.add_selection(p)
    p.add_argument("--duplicates", action="store_true",
                   help="also read records for sends written twice by non-idempotent producers")
    p.add_argument("--window", type=_duration, default=120_000, metavar="DURATION",
                   help="how far apart two copies of a retried send may be (default 2m; "
                        "ms, or with s/m/h)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the batching picture")
    common.add_run_options(p)
    p.set_defaults(run=run)


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    if args.plot and not args.plot.lower().endswith(".png"):
        raise SegtoolsError("--plot needs a .png file name", path=args.plot)
    log_dirs, loose = common.open_tree(args.paths)
    common.require_match(log_dirs, args)
    chosen = [p for d in log_dirs for p in d.partitions if common.selected(p, args)
              and p.name is not None and not p.name.is_metadata_log]
    findings: list[Finding] = list(loose)
    with common.progress(sum(p.size_bytes for p in chosen), "producers",
                         quiet=args.quiet) as advance:
        results = prod.analyse(chosen, limit=args.max_decompressed_bytes, advance=advance)
    dups = {r.path: prod.likely_duplicates(p, window_ms=args.window,
                                           limit=args.max_decompressed_bytes)
            for p, r in zip(chosen, results, strict=True)} if args.duplicates else {}
    for r in results:
        findings += r.findings
    findings = common.with_listing(log_dirs, chosen, findings)
    if args.plot:
        try:  # matplotlib is optional and heavy: imported only when a picture is wanted
            from segtools.cli import producers_plot
        except ImportError as e:
            raise SegtoolsError(f"--plot needs matplotlib ({e.name} is not installed)") \
                from None
        producers_plot.write(args.plot, results)
    if args.format == "jsonl":
        _write_jsonl(results, dups, findings)
    else:
        _write_text(results, dups, findings, args)
    return common.exit_code(findings)


def _write_jsonl(results, dups, findings) -> None:
    out = sys.stdout
    for r in results:
        for g in r.producers.values():
            out.write(render.dumps(g.to_json()) + "\n")
        for e in r.events:
            out.write(render.dumps(e.to_json()) + "\n")
        for d in dups.get(r.path, ()):
            out.write(render.dumps(d.to_json()) + "\n")
    for f in findings:
        out.write(render.dumps(f.to_json()) + "\n")


def _transaction(e) -> str:
    if e.open_transaction is None:
        return ""
    end = (f"ended by the marker at offset {e.closed_by} (epoch {e.closed_epoch})"
           if e.closed_by is not None else "no marker yet")
    return f"; its transaction open since offset {e.open_transaction}: {end}"


def _write_text(results, dups, findings, args) -> None:
    out = Wrapping(sys.stdout)
    for r in results:
        if not r.producers:
            continue
        out.write(f"{render.terminal_safe(r.topic)}-{r.partition}\n")
        for g in sorted(r.producers.values(), key=lambda g: -g.batches):
            j = g.to_json()
            rpb, bpb = j["records_per_batch"], j["bytes_per_batch"]
            who = ("non-idempotent" if g.producer_id == prod.NON_IDEMPOTENT
                   else f"producer {g.producer_id} epoch {g.producer_epoch}")
            window = (f", open p50 {format_duration(j['window_ms']['p50'])}"
                      if j["window_ms"] else "")
            verdict = g.verdict + (f" (closes at ~{format_bytes(g.ceiling)})" if g.ceiling
                                   else f" (linger.ms ~{g.linger_ms})" if g.linger_ms
                                   is not None else "")
            out.write(f"  {who}: {g.batches} batches, {g.records} records, "
                      f"{format_bytes(g.bytes)}; records/batch p50 {rpb['p50']} p90 "
                      f"{rpb['p90']} p99 {rpb['p99']} max {rpb['max']}; bytes/batch p50 "
                      f"{format_bytes(bpb['p50'])}{window}; "
                      f"{'/'.join(sorted(g.codecs))}; {verdict}\n")
        for e in r.events:
            if e.kind == "wrap":
                continue
            out.write(f"  sequence {e.kind}: producer {e.producer_id} epoch {e.producer_epoch} "
                      f"at offset {e.offset}: base {e.base_sequence}, expected {e.expected}"
                      + (f" ({e.explained})" if e.explained else "") + _transaction(e) + "\n")
        for d in dups.get(r.path, ()):
            out.write(f"  likely duplicate: offset {d.offset} repeats offset {d.first_offset}"
                      f" {d.delay_ms} ms later (same key, value and headers)\n")
    if args.duplicates and not any(dups.values()):
        out.write("no retried duplicates within the window\n")
    for f in findings:
        out.write(render.finding_line(f) + "\n")
