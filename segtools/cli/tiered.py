"""``segtools tiered``: what a tiered partition holds in remote storage, and what is stuck.

Replays the log dir's __remote_log_metadata partitions (what the broker's remote log
metadata manager wrote for every copy and delete) and shows, per tiered partition: the local
segments' offsets and leader epochs, the highest offset in remote storage (below which local
retention may delete), every remote segment with its offsets, size, newest record, broker and
state, what the expiration task would do with it at --at, and the findings: copies or deletes
that never finished, gaps and overlaps, leader epochs that the two tiers disagree on.
"""

from __future__ import annotations

import argparse
import sys

from segtools.analysis.tiered import TieredPartition, TieredReport, tiered_report
from segtools.cli import explain, render
from segtools.cli.common import add_command, clock_note, exit_code, moment, moment_line
from segtools.cli.explain import load
from segtools.cli.render import terminal_safe
from segtools.cli.table import Column, Lines, terminal_width
from segtools.storage.remote_store import open_store
from segtools.units import format_bytes, format_time

EXAMPLES = """examples:
  segtools tiered /var/kafka-logs
  segtools tiered /var/kafka-logs/orders-0 --at 2024-06-01T12:00Z
  segtools tiered /var/kafka-logs --format json | jq '.partitions[]'
  # remote segments read from Kafka's LocalTieredStorage directory:
  segtools tiered /var/kafka-logs --remote-store /mnt/tiered
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "tiered", "tiered storage: remote segments, stuck copies, both tiers",
                    __doc__, EXAMPLES)
    explain.add_arguments(p)
    p.add_argument("--remote-store", metavar="DIR",
                   help="a reachable remote store: Kafka's LocalTieredStorage directory (its "
                        "'dir' setting), or a directory holding the Aiven plugin's objects "
                        "(the bucket, under its prefix); each remote segment is found there "
                        "and read with the same decoder")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args.remote_store) if args.remote_store else None
    loaded = load(args)
    now = moment(args)
    report = tiered_report(loaded, now_ms=now, store=store)
    if args.format == "json":
        sys.stdout.write(render.dumps(report.to_json()))
        sys.stdout.write("\n")
    else:
        print_text(report, moment_line(args, now), clock_note(args, now))
    return exit_code(report.all_findings)


#: The remote segments' table (docs/cli.md, "Text tables"): the reason code whole, its words
#: last, where a narrow terminal wraps them under themselves.
SEGMENT_COLUMNS = (Column("offsets"), Column("segment id", width=22), Column("size", right=True),
                   Column("newest record", width=20), Column("epochs"), Column("state"),
                   Column("verdict"))
STORE_COLUMN = Column("in the store")
WHY_COLUMN = Column("why")
#: Notes that explain a cell of the table (what reading a segment needs), printed although
#: they are not problems.
SAID_WHEN_INFO = frozenset({"remote_segment_encrypted"})


def print_text(report: TieredReport, clock: str, note: str | None = None) -> None:
    """``clock``: the run's moment (:func:`~segtools.cli.common.moment_line`); ``note``: what
    it means when it is now."""
    say = Lines(sys.stdout, terminal_width(sys.stdout))
    say(f"tiered storage {clock}: {report.records} __remote_log_metadata record(s) in "
        f"{len(report.metadata_partitions)} partition(s)")
    if note:
        say(note)
    if not report.partitions and report.records:  # read, but none names one by the moment
        say("no tiered partition (remote.storage.enable), and no __remote_log_metadata "
            f"record names one by {clock.removeprefix('at ')}")
    elif not report.partitions:
        say("no tiered partition (remote.storage.enable) and no remote log metadata here")
    for p in report.partitions:
        print_partition(say, p)
    shown = [f for f in report.all_findings
             if f.severity != "info" or f.code in SAID_WHEN_INFO]
    if shown:
        say()
    for f in shown:
        say(f"{f.severity.upper()} {f.code} {f.path}: {f.message}")


def print_partition(say: Lines, p: TieredPartition) -> None:
    doc = p.to_json()
    say()
    say(f"{p.label}  topic id {doc['topic_id']}")
    local = doc["local"]
    if local is None:
        say(f"  local: {p.local_note or 'not in this log dir'}")
    else:
        epochs = ", ".join(f"{e['epoch']}@{e['start_offset']}" for e in local["leader_epochs"])
        say(f"  local: offsets {local['local_log_start_offset']} up to the log end offset "
            f"{local['log_end_offset']} in {local['segments']} segment(s), "
            f"{format_bytes(local['size'])}; log start offset {local['log_start_offset']}; "
            f"leader epochs {epochs or 'none'}")
    say(f"  highest offset in remote storage: {doc['highest_offset_in_remote_storage']} · "
        f"remote size {format_bytes(doc['remote_size'])}"
        + (f" · partition delete: {doc['partition_delete']['state']}"
           if doc["partition_delete"] else ""))
    if not doc["remote_segments"]:
        return
    columns = [*SEGMENT_COLUMNS, *((STORE_COLUMN,) if p.stored is not None else ()), WHY_COLUMN]
    with say.table(columns) as table:
        for s in doc["remote_segments"]:
            epochs = ", ".join(f"{e['epoch']}@{e['start_offset']}" for e in s["leader_epochs"])
            verdict = ("DELETE " if s["deletable"] else "keep ") + s["reason"] \
                if "reason" in s else "-"
            cells = [f"{s['start_offset']}..{s['end_offset']}", s["segment_id"],
                     format_bytes(s["size"]), format_time(s["max_timestamp"]), epochs,
                     s["state"], verdict]
            if p.stored is not None:
                cells.append(_stored(s.get("store")))
            cells.append(s.get("reason_text", ""))
            table.add(*(terminal_safe(c) for c in cells))
def _stored(store: dict | None) -> str:
    if store is None:
        return "-"
    content = store["content"]
    codes = {f["code"] for f in content["findings"]} if content is not None else set()
    if content is None:
        text = "no .log"
    elif "remote_segment_encrypted" in codes:
        text = "encrypted: not read, needs the plugin's private key (see INFO below)"
    elif not content["batches"] and codes:
        text = f"not read: {', '.join(sorted(codes))} (see below)"
    else:
        text = (f"{content['records']} records, "
                f"{content['first_offset']}..{content['last_offset']}")
    if store["missing"]:
        text += f"; missing {', '.join(store['missing'])}"
    return text

