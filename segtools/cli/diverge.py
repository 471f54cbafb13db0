"""``segtools diverge``: copies of the same partition from several brokers, compared.

Give partition directories copied from different brokers (or their log dirs, or one
directory holding the log-dir copies): every partition found in two or more of them is
compared batch by batch (base and last offset, CRC, partition leader epoch). The answer is
where they stop agreeing, which replica holds what the others lack (offset ranges, with the
leader epoch stamped on the batches and the one ``leader-epoch-checkpoint`` gives), and, with
the replica of the latest leader epoch as leader, where each follower would truncate on its
next fetch (``OffsetsForLeaderEpoch``) and how many offsets it would discard: the question
behind "who had the data when the leader moved".

Exit code 1 when the replicas diverged (conflicting batches at the same offsets) or there
are findings; a replica that is merely behind (a prefix of the others) is not a divergence.
"""

from __future__ import annotations

import argparse
import sys

from segtools.analysis.diverge import (
    Divergence,
    Replica,
    compare_copies,
    copies_by_partition,
    live_copies,
)
from segtools.cli import render
from segtools.cli.common import (
    add_command,
    add_paths,
    add_run_options,
    exit_code,
    open_tree,
    with_listing,
)
from segtools.cli.table import Wrapping
from segtools.errors import NothingToReadError, SegtoolsError
from segtools.findings import Finding

EXAMPLES = """examples:
  segtools diverge broker-1/orders-9 broker-2/orders-9 broker-3/orders-9
  segtools diverge /incident/copies --partition orders-9
  segtools diverge /incident/copies --format json | grep '"only_on"'
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "diverge", "compare copies of a partition from several brokers",
                    __doc__, EXAMPLES,
                    timeless="the copies are compared with each other, batch by batch")
    add_paths(p, "partition dirs, log dirs, or a directory of log-dir copies", metavar="DIR")
    p.add_argument("--partition", metavar="TOPIC-P",
                   help="only this partition (e.g. orders-9)")
    add_run_options(p, quiet=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    log_dirs, loose = open_tree(args.paths)
    comparable = copies_by_partition(log_dirs, args.partition)
    candidates = [p for copies in live_copies(log_dirs, args.partition).values()
                  for _, p in copies]
    # what could not be read among the copies asked about, and any log dir not listed at all
    findings: list[Finding] = with_listing(
        log_dirs, candidates, [*loose, *(f for d in log_dirs for f in d.findings
                                         if f.code in NothingToReadError.UNLISTED)])
    if not comparable:
        unread = next((f for f in findings if f.code in NothingToReadError.UNLISTED), None)
        raise SegtoolsError("need copies of the same partition from at least two log dirs"
                            + (f" (no two copies of {args.partition})" if args.partition
                               else "")
                            + (f"; {unread.path}: {unread.message}" if unread else ""),
                            path=" ".join(args.paths))
    out = Wrapping(sys.stdout) if args.format != "jsonl" else sys.stdout
    answered: list[Finding] = []
    for key, copies in comparable.items():
        rs = compare_copies(key, copies, limit=args.max_decompressed_bytes)
        read = list(rs.read_findings)
        result = rs.divergence
        answered += read + list(result.findings)
        if args.format == "jsonl":
            write_json(key, result, read, out)
        else:
            write_text(key, result, copies, read, out)
    for f in findings:  # then what listing met, once (a read finding was said above)
        out.write((render.dumps(f.to_json()) if args.format == "jsonl"
                   else render.finding_line(f)) + "\n")
    return exit_code([*findings, *answered])


def _epochs(r: Replica) -> str:
    return " ".join(f"{e.epoch}@{e.start_offset}" for e in r.epochs) or "none"


def write_json(key: str, d: Divergence, read: list[Finding], out) -> None:
    def emit(obj: dict) -> None:
        out.write(render.dumps(obj) + "\n")

    for r in d.replicas:
        emit({"type": "replica", "partition": key, "replica": r.label,
              "path": str(r.partition.path), "start_offset": r.start_offset,
              "end_offset": r.end_offset, "batches": len(r.batches),
              "latest_leader_epoch": r.latest_epoch,
              "leader_epoch_checkpoint": [{"epoch": e.epoch, "start_offset": e.start_offset}
                                          for e in r.epochs]})
    emit({**d.to_json(), "partition": key})
    for u in d.unique:
        emit({**u.to_json("only_on"), "partition": key})
    for t in d.truncations:
        emit({**t.to_json(), "partition": key})
    for f in read + list(d.findings):
        emit(f.to_json())


def _range(u) -> str:
    cp = "" if u.checkpoint_epoch == u.leader_epoch else \
        f", leader-epoch-checkpoint says {u.checkpoint_epoch}"
    return (f"{u.start_offset}..{u.end_offset} (leader epoch {u.leader_epoch}{cp}; "
            f"{u.batches} batch(es), {u.records} records, "
            f"{render.human_time(u.first_timestamp)}..{render.human_time(u.last_timestamp)})")


def write_text(key: str, d: Divergence, copies, read: list[Finding], out) -> None:
    out.write(f"{render.terminal_safe(key)}: {len(d.replicas)} copies\n")
    for r, (log_dir, _) in zip(d.replicas, copies, strict=True):
        node = f" (node {log_dir.meta.node_id})" if log_dir.meta and log_dir.meta.node_id \
            is not None else ""
        span = f"offsets {r.start_offset}..{r.end_offset - 1}" if r.batches else "empty"
        out.write(f"  {r.label}{node}: {span}, {len(r.batches)} batches, "
                  f"leader epochs {_epochs(r)}  "
                  f"[{render.terminal_safe(render.shown_path(r.partition.path))}]\n")
    if d.common_start > min(r.start_offset or 0 for r in d.replicas):
        out.write(f"offsets below {d.common_start} are not held by every copy (log start "
                  f"offsets differ) and are not compared\n")
    if d.agreed_until > d.common_start:
        out.write(f"all copies agree on offsets {d.common_start}..{d.agreed_until - 1} "
                  f"(same batches, CRCs and leader epochs)\n")
    if d.status == "identical":
        out.write("the copies are identical\n")
    elif d.status == "prefix":
        out.write("no conflicting batches; some copies end earlier (behind, not diverged)\n")
    else:
        out.write(f"FIRST DIFFERENCE at offset {d.first_difference}:\n")
        for label, b in d.differing:
            what = (f"batch {b.base_offset}..{b.last_offset}, leader epoch {b.leader_epoch}, "
                    f"crc {b.crc}" if b else "no batch (log ends)")
            out.write(f"  {label}: {what}\n")
    for u in d.unique:
        out.write(f"only on {u.replica}: {_range(u)}\n")
    for r in d.replicas:
        if r.end_offset < max(x.end_offset for x in d.replicas) and \
                not any(u.replica == r.label for u in d.unique):
            out.write(f"{r.label} ends at {r.end_offset}: it lacks offsets {r.end_offset}.."
                      f"{max(x.end_offset for x in d.replicas) - 1} the others hold\n")
    leader = d.leader
    out.write(f"presumed leader: {leader.label} (latest leader epoch {leader.latest_epoch})\n")
    for t in d.truncations:
        out.write(f"  {t.sentence}\n")
    for f in read + list(d.findings):
        out.write(render.finding_line(f) + "\n")
