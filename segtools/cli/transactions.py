"""``segtools transactions``: producers' transactions, hanging ones, and their on-disk traces.

For every partition under PATH (log dirs, partition dirs, or directories of log-dir copies):
each transactional producer's transactions (first offset, batches, records, and the COMMIT or
ABORT marker that closed them); **hanging transactions** (data with no marker up to the end
of the log, open longer than ``transaction.max.timeout.ms``), with the last stable offset
they pin and how many offsets ``read_committed`` consumers cannot see; the aborted
transactions checked against the ``.txnindex`` files; producer state checked against the
``.snapshot`` files. ``__transaction_state`` partitions are decoded into a per
transactional-id timeline (its latest ``--changes`` state changes), which also names the
owners of hanging producers.

Exit code 1 when there are findings (a hanging transaction is one).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

from segtools.analysis.transaction_state import (
    CHANGES_PER_ID,
    TRANSACTION_STATE_TOPIC,
    TransactionalId,
    TransactionStateChange,
)
from segtools.analysis.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    HangingTransaction,
    TransactionScan,
    partition_json,
    partition_label,
    transactions_report,
)
from segtools.cli import render
from segtools.cli.common import (
    add_at,
    add_command,
    add_paths,
    add_run_options,
    clock_note,
    exit_code,
    moment,
    moment_line,
    open_tree,
    progress,
    whole_partition,
    with_listing,
)
from segtools.cli.table import Wrapping
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.units import format_duration

EXAMPLES = """examples:
  segtools transactions /var/kafka-logs
  segtools transactions /var/kafka-logs/payments-0 --max-timeout-ms 60000
  segtools transactions /var/kafka-logs --producer-id 5001 --format json | jq .
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "transactions",
                    "transactions per producer, hanging ones, .txnindex and .snapshot checks",
                    __doc__, EXAMPLES)
    add_paths(p, "log dirs, partition dirs, or directories of log-dir copies")
    p.add_argument("--topic", help="only partitions of this topic")
    p.add_argument("--producer-id", type=int, help="only this producer id")
    p.add_argument("--max-timeout-ms", type=int, default=DEFAULT_MAX_TIMEOUT_MS,
                   help="transaction.max.timeout.ms: an open transaction older than this "
                        "hangs (default %(default)s)")
    add_at(p, "measure every age at this moment, one clock for every log: epoch ms or "
              "ISO-8601 (default: now)", aliases=("--now",))
    p.add_argument("--changes", type=int, default=CHANGES_PER_ID, metavar="N",
                   help="__transaction_state changes kept per transactional id, the latest "
                        "(default %(default)s; 0: all)")
    add_run_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    at_ms = moment(args)
    log_dirs, loose = open_tree(args.paths)
    partitions = [whole_partition(d, p) for d in log_dirs for p in d.partitions
                  if p.name is not None and (args.topic is None or p.name.topic == args.topic)]
    with progress(sum(p.size_bytes for p in partitions), "transactions",
                  quiet=args.quiet) as advance:
        report = transactions_report(partitions, max_timeout_ms=args.max_timeout_ms,
                                     now=at_ms, keep=max(args.changes, 0),
                                     limit=args.max_decompressed_bytes, advance=advance)
    findings = with_listing(log_dirs, partitions, [*loose, *report.findings])
    results = [(pt.scan, list(pt.hanging), list(pt.findings)) for pt in report.partitions
               if args.producer_id is None or args.producer_id in pt.scan.producers]
    if args.producer_id is not None and not results and not any(
            c.value and c.value["producerId"] == args.producer_id
            for t in report.state.ids.values() for c in t.changes):
        # a typo must not read as "nothing wrong": the findings below are other producers'
        raise SegtoolsError(f"--producer-id: no producer {args.producer_id} in the partitions "
                            "or the transaction state read", path=" ".join(args.paths))
    out = Wrapping(sys.stdout) if args.format != "jsonl" else sys.stdout
    if args.format == "jsonl":
        write_json(results, list(report.changes), findings, args, out)
    else:
        out.write(f"transactions {moment_line(args, at_ms)}\n")
        note = clock_note(args, at_ms)
        if note:
            out.write(note + "\n")
        write_text(results, report.state.ids, list(report.open_ids), findings, args, out)
    return exit_code(findings)


def _wanted(pid: int, args) -> bool:
    return args.producer_id is None or pid == args.producer_id


def write_json(results, changes: list[TransactionStateChange], findings, args, out) -> None:
    def emit(obj: dict) -> None:
        out.write(render.dumps(obj) + "\n")

    for scan, hanging, _ in results:
        txns = [t for t in scan.transactions if _wanted(t.producer_id, args)]
        for obj in partition_json(scan, txns):
            emit(obj)
        for h in hanging:
            if _wanted(h.transaction.producer_id, args):
                emit(h.to_json())
    for c in changes:
        if c.value is None or _wanted(c.value["producerId"], args):
            emit(c.to_json())
    for f in findings:
        emit(f.to_json())


def _verdict(findings: list[Finding], prefix: str) -> str:
    bad = [f for f in findings if f.code.startswith(prefix)]
    return "consistent with the log" if not bad else f"{len(bad)} finding(s), see below"


def _partition_text(scan: TransactionScan, hanging: list[HangingTransaction],
                    findings: list[Finding], args, out) -> None:
    label = partition_label(scan.partition)
    lso, leo = scan.last_stable_offset, scan.log_end_offset
    held = f" ({leo - lso} offsets held back from read_committed)" if lso < leo else ""
    out.write(f"\n{render.terminal_safe(label)}  "
              f"({render.terminal_safe(render.shown_path(scan.partition.path))})\n"
              f"  log offsets {scan.log_start_offset}..{leo - 1}, last stable offset "
              f"{lso}{held}\n")
    by_producer = defaultdict(list)
    for t in scan.transactions:
        if _wanted(t.producer_id, args):
            by_producer[(t.producer_id, t.producer_epoch)].append(t)
    for (pid, epoch), txns in sorted(by_producer.items()):
        counts = ", ".join(f"{sum(t.marker == m for t in txns)} {m or 'OPEN'}"
                           for m in ("COMMIT", "ABORT", None)
                           if any(t.marker == m for t in txns))
        out.write(f"  producer {pid} epoch {epoch}: {len(txns)} transaction(s): {counts}\n")
        for t in txns:
            span = (f"{t.first_offset}..{t.last_data_offset} ({t.batches} batch(es), "
                    f"{t.records} records)" if t.first_offset is not None
                    else "(no data in this partition)")
            if t.marker is None:
                out.write(f"    {span} -> OPEN since {render.human_time(t.first_timestamp)}\n")
            else:
                out.write(f"    {span} -> {t.marker} @{t.marker_offset} at "
                          f"{render.human_time(t.marker_timestamp)} (coordinator epoch "
                          f"{t.coordinator_epoch})\n")
    for h in hanging:
        t = h.transaction
        if not _wanted(t.producer_id, args):
            continue
        owner = f" (transactional.id {h.transactional_id})" if h.transactional_id else ""
        out.write(f"  HANGING: producer {t.producer_id} epoch {t.producer_epoch}{owner}: first "
                  f"offset {t.first_offset}, {t.records} records in {t.batches} batch(es), "
                  f"the first written {format_duration(h.age_ms)} ago, no marker; pins the last "
                  "stable "
                  f"offset at {h.pinned_lso} ({h.log_end_offset - h.pinned_lso} offsets held "
                  "back)\n")
    aborted = sum(t.marker == "ABORT" and t.first_offset is not None for t in scan.transactions)
    indexes = sum(s.txnindex is not None for s in scan.partition.segments)
    out.write(f"  .txnindex: {indexes} file(s) for {aborted} aborted transaction(s): "
              f"{_verdict(findings, 'txnindex_')}\n")
    for snap in scan.partition.snapshots:
        state = scan.snapshots_state.get(snap.offset, {})
        mine = [f for f in findings if f.path == str(snap.path)]
        out.write(f"  {snap.path.name}: {len(state)} producer(s) at offset {snap.offset}: "
                  f"{_verdict(mine, 'snapshot_')}\n")


def _state_text(ids: dict[str, TransactionalId], open_ids, args, out) -> None:
    out.write(f"\n{TRANSACTION_STATE_TOPIC}: {len(ids)} transactional id(s)\n")
    open_set = {c.transactional_id for c in open_ids}
    for tid, t in ids.items():
        pids = {c.value["producerId"] for c in t.changes if c.value}
        if args.producer_id is not None and args.producer_id not in pids:
            continue
        mark = "  (OPEN)" if tid in open_set else ""
        out.write(f"  {render.terminal_safe(tid)}  {TRANSACTION_STATE_TOPIC}-"
                  f"{t.log_partition}{mark}\n")
        if t.total > len(t.changes):
            out.write(f"    ({t.total - len(t.changes)} earlier change(s); --changes shows "
                      f"more)\n")
        for c in t.changes:
            if c.value is None:
                out.write(f"    {render.human_time(c.timestamp)}  REMOVED (tombstone)  "
                          f"@{c.offset}\n")
                continue
            v = c.value
            parts = " ".join(f"{p['topic']}[{','.join(map(str, p['partitionIds']))}]"
                             for p in v["transactionPartitions"] or [])
            out.write(f"    {render.human_time(c.timestamp)}  {c.status:<16} producer "
                      f"{v['producerId']} epoch {v['producerEpoch']}  "
                      f"{render.terminal_safe(parts)}  @{c.offset} (v{c.value_version})\n")


def write_text(results, ids: dict[str, TransactionalId], open_ids, findings, args,
               out) -> None:
    if not results and not ids:
        out.write("no transactional data found\n")
    for scan, hanging, more in results:
        _partition_text(scan, hanging, more, args, out)
    if ids:
        _state_text(ids, open_ids, args, out)
    if findings:
        out.write("\n")
    for f in findings:
        out.write(render.finding_line(f) + "\n")
