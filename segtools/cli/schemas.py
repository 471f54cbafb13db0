"""``segtools schemas``: the schemas the ``_schemas`` topic holds, and where the data uses them.

Subjects, versions, ids, types, references and deleted flags as Schema Registry stored them, with
when each was registered (the ``_schemas`` record's time) and the compatibility settings; with
``--usage``, per topic which schema ids its keys and values carry, from which offset and time
to which, how many records and which producers wrote them. No registry needs to run.
"""

from __future__ import annotations

import argparse
import sys

from segtools.cli import common, decoding, render
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.payloads.schemas import LATEST
from segtools.payloads.schemas_topic import SCHEMAS_TOPIC
from segtools.payloads.sources import gather
from segtools.payloads.usage import usage
from segtools.storage.logdirs import LogDir, PartitionRef, listed
from segtools.storage.partition import PartitionDir

EXAMPLES = """examples:
  segtools schemas /var/kafka-logs
  segtools schemas /var/kafka-logs --usage
  segtools schemas --format jsonl /var/kafka-logs/_schemas-0
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "schemas", "the schemas in _schemas, and where the data uses them",
                           __doc__, EXAMPLES,
                           timeless="it reads the schemas the _schemas log holds and the "
                                    "records that name them")
    common.add_paths(p, "log dirs, partition dirs, or a _schemas partition")
    p.add_argument("--usage", action="store_true",
                   help="per topic: the schema ids its keys and values use, from when to "
                        "when, and the producers that wrote them")
    p.add_argument("--schemas", action="append", default=[], metavar="LOCATION",
                   help="where the _schemas topic is, when not among PATHS, or a directory "
                        "of schema files")
    common.add_selection(p)
    common.add_format(p)
    common.add_decompress_limit(p)
    p.set_defaults(run=run)


def _tree(args: argparse.Namespace
          ) -> tuple[list[LogDir], list[Finding], list[PartitionDir | PartitionRef]]:
    """The log dirs with the partitions the command reads listed (the ``_schemas`` ones;
    with ``--usage`` every one), what walking them met, and every partition found, whose
    names ``--topic`` and ``--partition`` select among: without ``--usage`` the other
    partitions' directories are neither listed nor their small files read (a broker's log
    dir has thousands). A tree not on the local disk is walked whole."""
    found = None if args.usage else common.open_roots(args.paths)
    if found is None:
        log_dirs, loose = common.open_tree(args.paths)
        return log_dirs, loose, [p for d in log_dirs for p in d.partitions]
    roots, loose = found
    return ([listed(d, [r for r in refs if r.name is not None
                        and r.name.topic == SCHEMAS_TOPIC]) for d, refs in roots],
            loose, [r for _, refs in roots for r in refs])


def run(args: argparse.Namespace) -> int:
    log_dirs, loose, every = _tree(args)
    common.require_match(log_dirs, args, every)
    findings: list[Finding] = list(loose)
    notes: list[str] = []
    chain = gather(log_dirs, findings, schemas=args.schemas, say=notes.append)
    histories = chain.histories()
    if not histories:
        raise SegtoolsError("no _schemas topic found (name one with --schemas)",
                            path=args.paths[0])
    jsonl = args.format == "jsonl"
    partitions = [p for d in log_dirs for p in d.partitions if common.selected(p, args)]
    rows = list(usage(partitions, findings, limit=args.max_decompressed_bytes,
                      known=lambda i: chain.by_id(i) is not None or chain.hard_deleted(i))) \
        if args.usage else []
    if args.topic:  # the selected topics' schemas only, not every subject of the registry
        topics = {p.name.topic for p in every if p.name is not None and common.selected(p, args)}
        ids = {row.schema_id for row in rows if row.schema_id is not None}
        histories = [h.for_topics(topics, ids) for h in histories]
    for history in histories:
        for v in history.versions:
            _line(jsonl, v.to_json(), _schema_text(v))
        for c in history.configs:
            _line(jsonl, c.to_json(),
                  f"{c.kind} {render.terminal_safe(c.subject or '(global)')}: "
                  f"{render.terminal_safe(c.value or '(cleared)')} at {_time(c.at_ms)}")
        for v in history.removed:
            obj = {**v.to_json(), "type": "schema_removed"}
            _line(jsonl, obj, f"hard-deleted: {render.terminal_safe(v.subject)} v{v.version} "
                              f"(id {v.id}) at {_time(v.removed_ms)}")
    if args.usage:
        for row in rows:
            subject = ""
            if row.schema_id is not None:
                named = chain.registrations(row.schema_id)
                subject = f" {render.terminal_safe(named[0].subject)} v{named[0].version}" \
                    if named else \
                    (" (hard-deleted)" if chain.hard_deleted(row.schema_id) else " (unknown)")
            what = "no frame" if row.schema_id is None else f"id {row.schema_id}{subject}"
            _line(jsonl, row.to_json(),
                  f"{render.terminal_safe(row.topic)} {row.side}: {what}: {row.records} "
                  f"record(s), offsets {row.first_offset}-{row.last_offset}, "
                  f"{_time(row.first_timestamp)} .. {_time(row.last_timestamp)}, producers "
                  f"{sorted(row.producer_ids) or '-'}")
    # with what listing could not read of the partitions read (a _schemas-0 at mode 000)
    read = [p for d in log_dirs for p in d.partitions if p.name is not None and
            (p.name.topic == SCHEMAS_TOPIC or (args.usage and common.selected(p, args)))]
    findings = common.with_listing(log_dirs, read, findings)
    for f in findings:
        _line(jsonl, f.to_json(), render.finding_line(f))
    decoding.say_sources(notes)
    return common.exit_code(findings)


def _time(ms: int | None) -> str:
    return "-" if ms is None else render.human_time(ms)


def _schema_text(v) -> str:
    refs = ", ".join(f"{render.terminal_safe(r.name)} -> {render.terminal_safe(r.subject)} "
                     f"{'latest' if r.version == LATEST else f'v{r.version}'}"
                     for r in v.references)
    return (f"{render.terminal_safe(v.subject)} v{v.version}: id {v.id} {v.schema_type}"
            f" registered {_time(v.registered_ms)}"
            f"{f' DELETED at {_time(v.deleted_ms)}' if v.deleted else ''}"
            f"{' references ' + refs if refs else ''}")


def _line(jsonl: bool, obj: dict, text: str) -> None:
    sys.stdout.write((render.dumps(obj) if jsonl else text) + "\n")
