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

from rich.table import Table
from rich.text import Text

from segtools.analysis.tiered import TieredPartition, TieredReport, tiered_report
from segtools.cli import explain, render
from segtools.cli.common import add_command, exit_code
from segtools.cli.explain import console, load, now_ms, safe
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
    report = tiered_report(loaded, now_ms=now_ms(args), store=store)
    if args.format == "json":
        sys.stdout.write(render.dumps(report.to_json()))
        sys.stdout.write("\n")
    else:
        print_text(report)
    return exit_code(report.all_findings)


_STATE_STYLE = {"COPY_SEGMENT_FINISHED": "green", "COPY_SEGMENT_STARTED": "yellow",
                "DELETE_SEGMENT_STARTED": "yellow", "DELETE_SEGMENT_FINISHED": "dim"}


def print_text(report: TieredReport) -> None:
    out = console()
    out.print(safe(f"tiered storage at {format_time(report.at_ms)} ({report.at_ms} ms): "
                   f"{report.records} __remote_log_metadata record(s) in "
                   f"{len(report.metadata_partitions)} partition(s)"))
    if not report.partitions:
        out.print(safe("no tiered partition (remote.storage.enable) and no remote log "
                       "metadata here"))
    for p in report.partitions:
        print_partition(out, p)
    for f in report.all_findings:
        if f.severity != "info":
            out.print(safe(f"{f.severity.upper()} {f.code} {f.path}: {f.message}"))


def print_partition(out, p: TieredPartition) -> None:
    doc = p.to_json()
    out.print()
    out.print(Text.assemble((render.terminal_safe(p.label), "bold"), "  ",
                            (f"topic id {doc['topic_id']}", "dim")))
    local = doc["local"]
    if local is None:
        out.print(safe("  local: not in this log dir"))
    else:
        epochs = ", ".join(f"{e['epoch']}@{e['start_offset']}" for e in local["leader_epochs"])
        out.print(safe(f"  local: offsets {local['local_log_start_offset']} up to the log end "
                       f"offset {local['log_end_offset']} in {local['segments']} segment(s), "
                       f"{format_bytes(local['size'])}; log start offset "
                       f"{local['log_start_offset']}; leader epochs {epochs or 'none'}"))
    out.print(safe(f"  highest offset in remote storage: "
                   f"{doc['highest_offset_in_remote_storage']} · remote size "
                   f"{format_bytes(doc['remote_size'])}"
                   + (f" · partition delete: {doc['partition_delete']['state']}"
                      if doc["partition_delete"] else "")))
    if not doc["remote_segments"]:
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    columns = ["offsets", "segment id", "size", "newest record", "epochs", "state", "verdict"]
    if p.stored is not None:
        columns.append("in the store")
    for col in columns:
        table.add_column(col, no_wrap=col not in ("verdict", "in the store"))
    for s in doc["remote_segments"]:
        epochs = ", ".join(f"{e['epoch']}@{e['start_offset']}" for e in s["leader_epochs"])
        verdict = Text("")
        if "reason" in s:
            verdict = Text.assemble(("DELETE " if s["deletable"] else "keep ",
                                     "bold red" if s["deletable"] else "green"),
                                    (s["reason"], "bold"), "\n",
                                    (render.terminal_safe(s["reason_text"]), "dim"))
        cells = [f"{s['start_offset']}..{s['end_offset']}", safe(s["segment_id"]),
                 format_bytes(s["size"]), format_time(s["max_timestamp"]), epochs,
                 Text(s["state"], style=_STATE_STYLE.get(s["state"], "")), verdict]
        if p.stored is not None:
            cells.append(safe(_stored(s.get("store"))))
        table.add_row(*cells)
    out.print(table)


def _stored(store: dict | None) -> str:
    if store is None:
        return "-"
    content = store["content"]
    text = "no .log" if content is None else (
        f"{content['records']} records, {content['first_offset']}..{content['last_offset']}")
    if store["missing"]:
        text += f"; missing {', '.join(store['missing'])}"
    return text

