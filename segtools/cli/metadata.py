"""``segtools metadata``: what the KRaft controller decided, as a timeline, from disk alone.

Replays a ``__cluster_metadata-0`` log (the partition directory, or a log dir holding it):
Raft leader changes, broker registrations and fencing, topics created and removed, partition
leader / ISR changes (with leader and partition epochs), config changes, feature levels and
metadata transactions (records of an aborted one are shown as discarded, never applied). Ends
with the state the log leaves: brokers, topics with their config overrides, features.
``--records`` prints every record decoded instead, as ``kafka-dump-log
--cluster-metadata-decoder`` would. ``--format json`` prints one object per line.
"""

# The log is read once and nothing per record is kept: events and records are written as they
# are replayed (the text timeline through a spool, so its summary line can come first).

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterable

from segtools.analysis.cluster_metadata import (
    DecodedEntry,
    MetadataEvent,
    MetadataReplay,
    timeline,
)
from segtools.analysis.partition_log import metadata_partition
from segtools.cli import render
from segtools.cli.common import (
    add_at,
    add_command,
    add_run_options,
    exit_code,
    progress,
    with_listing,
)
from segtools.cli.render import finding_line
from segtools.cli.table import Wrapping
from segtools.storage.partition import CLUSTER_METADATA_TOPIC

#: Bytes of the text timeline held in memory before its spool moves to a temporary file.
SPOOL_BYTES = 8 * 1024 * 1024

EXAMPLES = """examples:
  segtools metadata /var/kafka-metadata/__cluster_metadata-0
  segtools metadata /var/kafka-logs --topic orders --at 2023-11-20T09:31:00Z
  segtools metadata /var/kafka-logs --broker 1
  segtools metadata /var/kafka-logs --records --format json | jq .record
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "metadata", "timeline of a KRaft __cluster_metadata log",
                    __doc__, EXAMPLES)
    p.add_argument("path", metavar="PATH",
                   help="__cluster_metadata-0 directory, or the log dir that holds it")
    add_at(p, "stop at this time (epoch ms or ISO-8601; default: end of the log)")
    p.add_argument("--topic", help="only events about this topic")
    p.add_argument("--broker", type=int,
                   help="only events about this broker id (registration, fencing, Raft "
                        "leadership, partition leader/ISR changes involving it)")
    p.add_argument("--records", action="store_true",
                   help="print every record decoded instead of the timeline")
    p.add_argument("--include-noop", action="store_true", help="show NoOpRecords too")
    p.add_argument("--show-sensitive", action="store_true",
                   help="show password-type configs (ssl.*.password, sasl.jaas.config, ...) "
                        "and SCRAM credentials as stored, instead of [hidden] (Kafka itself "
                        "never shows them)")
    add_run_options(p)
    p.set_defaults(run=run)


def _about_topic(e: MetadataEvent, topic: str) -> bool:
    d = e.details
    return d.get("topic") == topic or (d.get("resource_type") == "TOPIC"
                                       and d.get("resource") == topic)


def _about_broker(e: MetadataEvent, broker: int) -> bool:
    d = e.details
    if broker in (d.get("broker_id"), d.get("controller_id")):
        return True
    if e.event == "raft_leader_change":
        return d["leader_id"] == broker
    if e.event != "partition_changed":
        return False
    values = [v for c in d["changes"].values() for v in (c["from"], c["to"])]
    return any(v == broker or (isinstance(v, list) and broker in v) for v in values)


def selected(e: MetadataEvent, topic: str | None, broker: int | None) -> bool:
    return (topic is None or _about_topic(e, topic)) and \
        (broker is None or _about_broker(e, broker))


def select(events: Iterable[MetadataEvent], topic: str | None,
           broker: int | None) -> list[MetadataEvent]:
    return [e for e in events if selected(e, topic, broker)]


def record_line(entry: DecodedEntry, args) -> str:
    if args.format == "jsonl":
        return render.dumps(entry.to_json())
    return (f"offset {entry.offset} {render.human_time(entry.timestamp)} epoch "
            f"{entry.raft_epoch} {entry.record.name} v{entry.record.version} "
            f"{render.terminal_safe(render.dumps(entry.to_json()['data']))}")


def event_line(e: MetadataEvent, args) -> str | None:
    """The event as printed, or None when the text timeline hides it (partition creations,
    unless a topic or broker is asked about)."""
    if args.format == "jsonl":
        return render.dumps(e.to_json())
    if e.event == "partition_created" and args.topic is None and args.broker is None:
        return None
    return (f"{render.human_time(e.timestamp)}  @{e.offset:<6} epoch {e.raft_epoch}  "
            f"{render.terminal_safe(describe(e))}")


def run(args: argparse.Namespace) -> int:
    partition = metadata_partition(args.path)
    out = Wrapping(sys.stdout) if args.format != "jsonl" else sys.stdout
    with tempfile.SpooledTemporaryFile(SPOOL_BYTES, "w+", encoding="utf-8") as spool, \
            progress(partition.size_bytes, CLUSTER_METADATA_TOPIC, quiet=args.quiet) as advance:
        timeline_out = spool if args.format != "jsonl" else out

        def on_event(e: MetadataEvent) -> None:
            if not args.records and selected(e, args.topic, args.broker):
                line = event_line(e, args)
                if line is not None:
                    timeline_out.write(line + "\n")

        replay = timeline(partition, at=args.at, limit=args.max_decompressed_bytes,
                          keep_records=args.records, include_noop=args.include_noop,
                          on_event=on_event,
                          on_record=lambda entry: out.write(record_line(entry, args) + "\n"),
                          advance=advance, reveal_sensitive=args.show_sensitive)
        if not args.records:
            if args.format == "jsonl":
                out.write(render.dumps(state_json(replay, args.topic)) + "\n")
            else:
                write_text(replay, spool, args, out)
    findings = with_listing((), [partition], replay.findings)
    for f in findings:
        if args.format == "jsonl":
            out.write(render.dumps(f.to_json()) + "\n")
        else:
            out.write(finding_line(f) + "\n")
    return exit_code(findings)


def state_json(replay: MetadataReplay, topic: str | None = None) -> dict:
    image = replay.image
    configs = image.topic_configs()
    topics = []
    for t in sorted(image.topics.values(), key=lambda t: t.name):
        if topic is not None and t.name != topic:
            continue
        topics.append({"topic": t.name, "topic_id": t.topic_id,
                       "configs": configs.get(t.name, {}),
                       "partitions": {str(p): s.to_json()
                                      for p, s in sorted(t.partitions.items())}})
    return {"type": "metadata_state", "path": str(replay.partition),
            "end_offset": replay.end_offset, "last_timestamp": replay.last_timestamp,
            "raft_leader": image.raft_leader, "raft_epoch": image.raft_epoch,
            "features": image.features,
            "brokers": [b.to_json() for _, b in sorted(image.brokers.items())],
            "controllers": {str(k): v for k, v in sorted(image.controllers.items())},
            "topics": topics,
            "broker_configs": {name or "<cluster default>": values
                               for (rtype, name), values in sorted(image.configs.items())
                               if rtype == 4 and values},
            "records_applied": replay.records_applied, "noop_records": replay.noop_records}


def _ids(xs) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]" if xs is not None else "-"


def describe(e: MetadataEvent) -> str:
    """One human line per event."""
    d = e.details
    match e.event:
        case "raft_leader_change":
            return (f"controller {d['leader_id']} is the Raft leader (voters "
                    f"{_ids(d['voters'])}, votes from {_ids(d['granting_voters'])})")
        case "kraft_version":
            return f"kraft.version {d['kraft_version']}"
        case "voters":
            return "voters: " + ", ".join(f"{v['voter_id']} {' '.join(v['endpoints'])}"
                                          for v in d["voters"])
        case "transaction_begin":
            return f"metadata transaction begins: {d['name']}"
        case "transaction_end":
            return f"metadata transaction ends: {d['name']} ({d['records']} records applied)"
        case "transaction_aborted":
            return (f"metadata transaction ABORTED: {d['name']} ({d['reason']}); "
                    f"{d['discarded']} records discarded: {', '.join(d['discarded_records'])}")
        case "feature_level":
            was = f" (was {d['previous']})" if d["previous"] is not None else ""
            return f"feature {d['feature']} = {d['level']}{was}"
        case "controller_registered":
            return f"controller {d['controller_id']} registered {' '.join(d['endpoints'])}"
        case "broker_registered":
            return (f"broker {d['broker_id']} registered: epoch {d['broker_epoch']}, rack "
                    f"{d['rack']}, {' '.join(d['endpoints'])}"
                    f"{', fenced' if d['fenced'] else ''}")
        case "broker_unregistered":
            return f"broker {d['broker_id']} unregistered"
        case "broker_fenced" | "broker_unfenced":
            return f"broker {d['broker_id']} {e.event[7:]} (epoch {d['broker_epoch']})"
        case "broker_controlled_shutdown":
            return f"broker {d['broker_id']} in controlled shutdown"
        case "broker_log_dirs":
            return f"broker {d['broker_id']} log dirs {', '.join(d['log_dirs'])}"
        case "producer_ids":
            return f"producer id block to broker {d['broker_id']}: next id {d['next_producer_id']}"
        case "topic_created":
            return f"topic {d['topic']} created (id {d['topic_id']})"
        case "topic_removed":
            dropped = ", ".join(f"{k}={v}" for k, v in d["configs_removed"].items()) or "none"
            return (f"topic {d['topic']} removed (id {d['topic_id']}, {d['partitions']} "
                    f"partition(s); configs dropped: {dropped})")
        case "partition_created":
            return (f"partition {d['topic']}-{d['partition']} created: replicas "
                    f"{_ids(d['replicas'])} isr {_ids(d['isr'])} leader {d['leader']} "
                    f"(leader epoch {d['leader_epoch']})")
        case "partition_changed":
            changes = "; ".join(
                f"{k} {_ids(c['from']) if isinstance(c['from'], list) else c['from']} -> "
                f"{_ids(c['to']) if isinstance(c['to'], list) else c['to']}"
                for k, c in d["changes"].items()) or "no visible change"
            return (f"partition {d['topic']}-{d['partition']}: {changes} (leader epoch "
                    f"{d['leader_epoch']}, partition epoch {d['partition_epoch']})")
        case "config_set":
            was = f" (was {d['previous']})" if d["previous"] is not None else ""
            return (f"config {d['resource_type'].lower()} {d['resource'] or '<default>'}: "
                    f"{d['name']}={d['value']}{was}")
        case "config_deleted":
            return (f"config {d['resource_type'].lower()} {d['resource'] or '<default>'}: "
                    f"{d['name']} deleted (was {d['previous']})")
        case "zk_migration_state":
            return f"ZooKeeper migration state {d['state']}"
        case "noop":
            return "NoOpRecord"
        case _:
            return f"{d.get('record', e.event)} {render.dumps(d.get('data', d))}"


def write_text(replay: MetadataReplay, timeline_lines, args, out) -> None:
    out.write(f"{replay.partition}: replayed to offset {replay.end_offset}"
              f"{' (at ' + render.human_time(args.at) + ')' if args.at is not None else ''}, "
              f"{replay.records_applied} records applied, {replay.noop_records} NoOp\n")
    if replay.snapshot is not None:
        out.write(f"state before the log start loaded from snapshot {replay.snapshot}\n")
    timeline_lines.seek(0)
    shutil.copyfileobj(timeline_lines, out)
    image = replay.image
    out.write("\nstate at the end of the replay:\n")
    out.write(f"  raft leader: {image.raft_leader} (epoch {image.raft_epoch}); features: "
              + (", ".join(f"{k}={v}" for k, v in sorted(image.features.items())) or "none")
              + "\n")
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        out.write(f"  broker {b.broker_id}: epoch {b.broker_epoch}, rack {b.rack}, "
                  f"{' '.join(b.endpoints)}, {'FENCED' if b.fenced else 'unfenced'}\n")
    configs = image.topic_configs()
    for t in sorted(image.topics.values(), key=lambda t: t.name):
        if args.topic is not None and t.name != args.topic:
            continue
        cfg = ", ".join(f"{k}={v}" for k, v in configs.get(t.name, {}).items()) or "no overrides"
        out.write(f"  topic {t.name} ({t.topic_id}): {len(t.partitions)} partition(s); {cfg}\n")
        if args.topic is not None:
            for p, s in sorted(t.partitions.items()):
                out.write(f"    {t.name}-{p}: leader {s.leader} (epoch {s.leader_epoch}) "
                          f"isr {_ids(s.isr)} replicas {_ids(s.replicas)}\n")
