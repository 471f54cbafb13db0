"""``segtools compaction``: what the log cleaner has left in a compacted partition, and what its
next pass would do.

Per partition: key reuse (records, distinct keys, superseded records and bytes, the keys with
the most versions), tombstones and whether the next clean removes each (delete horizon),
transaction markers the cleaner may drop, the clean/dirty split from
``cleaner-offset-checkpoint``, the dirty ratio against ``min.cleanable.dirty.ratio``, the first
uncleanable offset and why, whether ``max.compaction.lag.ms`` forces a clean, and an estimate
of what the next clean removes. ``--key K`` prints one key's history across segments and which
version survives. For ``compact,delete`` it also explains old records that outlive
retention.ms because their segment holds newer ones.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import sys

from segtools.analysis import compaction as comp
from segtools.analysis.explain import (
    CompactionReport,
    absent_key,
    compaction_report,
    describe_survivor,
    merged_survivors,
)
from segtools.analysis.partition_input import Loaded, PartitionInput
from segtools.cli import explain, render
from segtools.cli.common import add_command, clock_note, exit_code, moment, moment_line
from segtools.cli.explain import config_line, load
from segtools.cli.table import Column, Lines, terminal_width
from segtools.errors import SegtoolsError
from segtools.units import format_bytes, format_duration, format_time

EXAMPLES = """examples:
  segtools compaction /var/kafka-logs/payments-0
  segtools compaction /var/kafka-logs --config topics.txt --format json | jq .
  segtools compaction /var/kafka-logs/payments-0 --key user-42
  segtools compaction payments-0 --key 6b3031 --key-format hex --at 2024-03-01

A log dir lists only partitions whose cleanup.policy contains compact. A partition directory
named on the command line with no topic config has Kafka's default policy, delete (as
retention says): it is replayed as if compact, and the answer says the cleaner never runs.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "compaction", "explain what the log cleaner did and will do",
                    __doc__, EXAMPLES)
    explain.add_arguments(p)
    p.add_argument("--key", metavar="K", help="print this key's history and its survivor")
    p.add_argument("--key-format", choices=("utf8", "hex", "base64"), default="utf8",
                   help="how --key is written (default utf8)")
    p.add_argument("--bytes", choices=render.BYTES_MODES, default=None,
                   help="how keys are printed (default: utf8 for text, base64 for json)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="keys with most versions")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="tombstones listed per partition (counts are always complete)")
    p.set_defaults(run=run)


def parse_key(text: str, fmt: str) -> bytes:
    try:
        if fmt == "hex":
            return bytes.fromhex(text)
        if fmt == "base64":
            return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as e:
        raise SegtoolsError(f"--key {text!r} is not valid {fmt}: {e}") from None
    return text.encode("utf-8")


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    key = parse_key(args.key, args.key_format) if args.key is not None else None
    loaded = load(args)
    now = moment(args)
    report = compaction_report(loaded, args.paths, now_ms=now, key=key, top=args.top,
                               tombstone_limit=args.limit, limit=args.max_decompressed_bytes)
    absent = absent_key(report, lambda b: _k(b, args.bytes or args.key_format))
    if absent is not None:
        raise SegtoolsError(f"--key: {absent}", path=" ".join(args.paths))
    if args.format == "json":
        mode = args.bytes or "base64"
        doc = report.to_json(lambda b: render.render_bytes(b, mode))
        sys.stdout.write(render.dumps(doc) + "\n")
    else:
        print_text(loaded, report, args.bytes or "utf8", moment_line(args, now),
                   clock_note(args, now))
    return exit_code(loaded.findings)


# --------------------------------------------------------------------------- text


def _when(timestamp: int, now: int) -> str:
    if timestamp < 0:
        return "(no timestamp)"
    return f"{format_time(timestamp)} ({format_duration(now - timestamp)} old)"


def _k(key: bytes | None, mode: str) -> str:
    return "null" if key is None else render.terminal_safe(render.render_bytes(key, mode))


#: A key's history (docs/cli.md, "Text tables"): its fate last, whole, wrapped only on a
#: terminal too narrow for it.
HISTORY_COLUMNS = (Column("offset", right=True), Column("segment"), Column("timestamp"),
                   Column("value"), Column("next clean"))


def print_text(loaded: Loaded, report: CompactionReport, mode: str, clock: str,
               note: str | None = None) -> None:
    """``clock``: the run's moment (:func:`~segtools.cli.common.moment_line`); ``note``: what
    it means when it is now."""
    now = report.at_ms
    out = Lines(sys.stdout, terminal_width(sys.stdout))
    out(f"compaction {clock}; config from: "
        f"{', '.join(loaded.config_sources) or 'Kafka defaults only'}")
    if note:
        out(note)
    if not report.partitions:
        out("no compacted partition here (see the skipped list)")
    for e in report.partitions:
        print_partition(out, e.input, e.compaction, now, mode, e.not_compacted)
    for s in report.skipped:
        out(f"skipped {s.path}: {s.reason}")
    for f in loaded.findings:
        if f.severity != "info":
            out(f"{f.severity.upper()} {f.code} {f.path}: {f.message}")


def print_partition(out, pi: PartitionInput, pc: comp.PartitionCompaction, now: int,
                    mode: str, not_compacted: str | None = None) -> None:
    """``not_compacted``: why the cleaner never runs on a partition replayed only because
    it was named (its own policy is shown, as ``retention`` shows it)."""
    c = pc.config
    out()
    out(f"{pi.label}  {pi.dir.path}")
    out("  " + config_line(pi.config, ("cleanup.policy",)) + " · " +
        config_line(c, ("delete.retention.ms", "min.cleanable.dirty.ratio",
                        "min.compaction.lag.ms", "max.compaction.lag.ms")))
    if not_compacted is not None:
        out(f"  ! {not_compacted}")
    out(
        f"  log start {pc.log_start_offset} · first dirty {pc.first_dirty_offset} "
        f"({pc.first_dirty_source}) · first uncleanable {pc.first_uncleanable_offset} "
        f"({pc.first_uncleanable_reason}) · last stable {pc.last_stable_offset} · high "
        f"watermark {pc.high_watermark}{' (assumed)' if pc.high_watermark_assumed else ''} · "
        f"log end {pc.log_end_offset}")
    out(f"  clean {format_bytes(pc.clean_bytes)} | cleanable (dirty) "
                   f"{format_bytes(pc.cleanable_bytes)}: {pc.would_clean_text}")
    out(
        f"  key reuse: {pc.records} records, {pc.keyed_records} keyed, {pc.null_key_records} "
        f"without key, {pc.distinct_keys} distinct keys; {pc.superseded_records} superseded by "
        f"a later record ({format_bytes(pc.superseded_bytes)})")
    if pc.top_keys:
        tops = "; ".join(f"{_k(k.key, mode)} ×{k.versions} (@{k.first_offset}..@"
                         f"{k.last_offset}, {k.segments} segment(s)"
                         f"{', latest is a tombstone' if k.latest_is_tombstone else ''})"
                         for k in pc.top_keys)
        out(f"  most versions: {tops}")
    oldest = "" if pc.oldest_tombstone_timestamp is None else (
        f", oldest {format_time(pc.oldest_tombstone_timestamp)} "
        f"({format_duration(now - pc.oldest_tombstone_timestamp)} old)")
    out(f"  tombstones: {pc.tombstone_count}{oldest}; delete.retention.ms "
                   f"{format_duration(c.delete_retention_ms)}")
    for t in pc.tombstones:
        out(f"    @{t.offset} key {_k(t.key, mode)} written {_when(t.timestamp, now)}"
                       f", segment @{t.segment_base_offset}: {t.fate_text}")
    if pc.tombstone_count > len(pc.tombstones):
        out(f"    ... {pc.tombstone_count - len(pc.tombstones)} more (--limit)")
    if pc.markers or pc.open_transactions:
        out(f"  transaction markers: {len(pc.markers)}; open transactions: "
                       f"{pc.open_transactions}")
        for m in pc.markers:
            out(f"    @{m.offset} {m.control} producer {m.producer_id}: "
                           f"{m.fate_text}")
    out(
        f"  next clean, if run at --at: removes ~{pc.removed_records} records "
        f"(~{format_bytes(pc.removed_bytes)})"
        + (f" and {pc.removed_empty_batches} empty batch(es)" if pc.removed_empty_batches
           else "")
        + f", stamps a delete horizon on {pc.horizons_stamped} batch(es)")
    for fate, n, size in pc.removal:
        if fate.startswith("removed"):
            out(f"    {fate}: {n} ({format_bytes(size)})")
    for g in pc.merge_groups:
        if len(g.base_offsets) > 1:
            out(f"    merges {', '.join(f'@{b}' for b in g.base_offsets)} into one "
                           f"segment ({format_bytes(g.size)})")
    if pc.retention is not None:
        for line in merged_survivors(pc):
            out(f"  ! {line}")
    for note in pc.notes:
        out(f"  note: {note}")
    if pc.key_history is not None:
        print_history(out, pc, now, mode)


def print_history(out, pc: comp.PartitionCompaction, now: int, mode: str) -> None:
    if not pc.key_history:
        near = ", ".join(_k(k, mode) for k in pc.nearest_keys)
        out(f"  key {_k(pc.key, mode)}: not in this partition"
            + (f" (nearest keys: {near})" if near else ""))
        return
    out(f"  history of key {_k(pc.key, mode)}: {len(pc.key_history)} version(s)")
    last = comp.survivor(pc.key_history)
    with out.table(HISTORY_COLUMNS) as table:
        for r in pc.key_history:
            value = "tombstone" if r.tombstone else "value"
            if r.aborted:
                value += " (aborted txn)"
            mark = " ← survives" if last is not None and r.offset == last.offset else ""
            table.add(str(r.offset), f"@{r.segment_base_offset}", _when(r.timestamp, now),
                      value + mark, render.terminal_safe(r.fate_text))
    out(f"  survivor: {describe_survivor(pc.key_history, now)}")
