"""``segtools offsets``: consumer groups' committed offsets over time, from ``__consumer_offsets``.

Replays every ``__consumer_offsets-*`` partition under PATH (log dirs, partition dirs, or
directories of log-dir copies) the way the group coordinator loads them, and answers:

- the committed offsets of each group (``--group`` globs) at a moment (``--at``, default the
  end of the log), with the group's state, generation and members (consumer-protocol
  subscriptions and assignments decoded; KIP-848 groups member by member);
- the commit history of a topic-partition (``--history --topic T --partition P``), including
  transactional commits that were aborted or are still pending;
- **offset regressions**: a commit that moved a group's offset backwards (the signature of a
  reset to earliest, or of a consumer that lost its position), and offsets or groups that
  vanished (tombstones) and when.

Exit code 1 when there are findings or offset regressions.
"""

# Memory stays flat in the size of the log: the replay keeps the live state, and the anomalies
# are written to spool files (in memory up to a few MiB, then on disk) as they are found, and
# printed after the groups.

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from typing import IO

import numpy as np

from segtools.analysis.offsets import (
    ABORTED,
    APPLIED,
    CONSUMER_OFFSETS_TOPIC,
    Anomaly,
    GroupDeletion,
    GroupState,
    OffsetCommit,
    OffsetDeletion,
    OffsetRegression,
    OffsetsReplay,
    begin_replay,
)
from segtools.analysis.offsets_columns import (
    DeletionColumns,
    FoundColumns,
    GroupDeletionColumns,
    RegressionColumns,
)
from segtools.analysis.partition_log import live_partitions
from segtools.cli import render
from segtools.cli._anomaly_lines import (
    deletion_json,
    deletion_text,
    regression_json,
    regression_text,
)
from segtools.cli.common import (
    EXIT_FINDINGS,
    add_at,
    add_command,
    add_paths,
    add_run_options,
    exit_code,
    open_tree,
    progress,
    with_listing,
)
from segtools.cli.render import finding_line
from segtools.cli.table import Wrapping
from segtools.errors import SegtoolsError
from segtools.text import json_safe

EXAMPLES = """examples:
  segtools offsets /var/kafka-logs
  segtools offsets /var/kafka-logs --group 'billing*' --at 2023-11-20T09:07:00Z
  segtools offsets /var/kafka-logs --history --topic orders --partition 0
  segtools offsets /data/kafka --format json | grep '"offset_regression"'
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "offsets", "consumer group offsets over time, regressions, deletions",
                    __doc__, EXAMPLES)
    add_paths(p, "log dirs or __consumer_offsets partition dirs")
    p.add_argument("--group", action="append", metavar="GLOB",
                   help="only groups matching this glob (repeatable)")
    add_at(p, "the moment to answer for: epoch ms or ISO-8601 (default: end of log)")
    p.add_argument("--topic", help="only offsets of this topic")
    p.add_argument("--partition", type=int, help="only this partition of --topic")
    p.add_argument("--history", action="store_true",
                   help="print every commit (and tombstone) instead of the latest offsets")
    add_run_options(p)
    p.set_defaults(run=run)


#: Bytes of rendered anomalies a spool holds in memory before it moves to a temporary file.
SPOOL_BYTES = 8 * 1024 * 1024


def _spool() -> IO[str]:
    return tempfile.SpooledTemporaryFile(SPOOL_BYTES, "w+", encoding="utf-8")


def _part_file(section: str, directory: str) -> IO[str]:
    """A worker's lines of one section, kept (the run's directory goes with the run)."""
    return tempfile.NamedTemporaryFile("w", encoding="utf-8", prefix=f"{section}-",
                                       dir=directory, delete=False)


#: Rendered lines a section holds before they go to its spool in one write.
SPOOL_LINES = 4096

#: The sections anomalies are printed in, in order.
SECTIONS = ("regressions", "deletions", "groups")


class Anomalies(contextlib.ExitStack):
    """The replay's sink: each regression, deletion and removed group rendered as it is
    found (those ``--topic``/``--partition`` select), into one spool per section. A
    production log repeats a few groups and partitions in hundreds of thousands of lines:
    their terminal-safe names are made once each (:class:`_Names`), and lines reach the spool
    a few thousand at a time.

    When the partitions replay in worker processes, each worker renders its partition's lines
    into files of its own (:meth:`split`, in this run's temporary directory), and the section
    is its own spool followed by the partitions' files in the partitions' order
    (:meth:`adopt`): the lines are rendered where they are found, and none is held in
    memory to be sent back."""

    def __init__(self, args: argparse.Namespace, directory: str | None = None):
        super().__init__()
        self.args = args
        self.counts = dict.fromkeys(SECTIONS, 0)
        self.pending: dict[str, list[str]] = {section: [] for section in SECTIONS}
        self.pending_lines = dict.fromkeys(SECTIONS, 0)
        self.names = _Names()
        self.adopted: dict[str, list[str]] = {section: [] for section in SECTIONS}
        self.spools: dict[str, IO[str]] = {}
        if directory is None:  # this run's own: its spools, and its workers' directory
            self.directory = self.enter_context(
                tempfile.TemporaryDirectory(prefix="segtools-offsets-"))
            self.spools = {section: self.enter_context(_spool()) for section in SECTIONS}
        else:
            self.directory = directory

    def __call__(self, anomaly: Anomaly) -> None:
        args = self.args
        if isinstance(anomaly, GroupDeletion):
            if args.format == "jsonl":
                self._add("groups", render.dumps(anomaly.to_json()))
            elif args.topic is None:
                self._add("groups", f"  {render.human_time(anomaly.where.timestamp)}  "
                                    f"{self.names.group(anomaly.group)}  "
                                    f"{_where(anomaly.where)}")
            return
        c = getattr(anomaly, "current", anomaly)
        if not _tp_matches(c.topic, c.partition, args):
            return
        if args.format == "jsonl":
            line = render.dumps(anomaly.to_json())
        elif isinstance(anomaly, OffsetRegression):
            line = _regression_line(anomaly, self.names)
        else:
            line = _deletion_line(anomaly, self.names)
        self._add("regressions" if isinstance(anomaly, OffsetRegression) else "deletions", line)

    def take(self, found: FoundColumns) -> None:
        """A block's anomalies at once (:class:`segtools.analysis.offsets_columns.ColumnSink`),
        rendered from their columns: the same lines as :meth:`__call__` would make of their
        objects, one by one."""
        args, names = self.args, self.names
        jsonl = args.format == "jsonl"
        regressions, deletions = found.regressions, found.deletions
        if regressions.group:
            keep = _selected(regressions.topic, regressions.partition, args)
            if jsonl:
                self._extend_text("regressions", *_regression_json_text(regressions, names, keep))
            else:
                self._extend_text("regressions", *_regression_text(regressions, names, keep))
        if deletions.group:
            keep = _selected(deletions.topic, deletions.partition, args)
            if jsonl:
                self._extend_text("deletions", *_deletion_json_text(deletions, names, keep))
            else:
                self._extend_text("deletions", *_deletion_text(deletions, names, keep))
        removed = found.group_deletions
        if removed.group and (jsonl or args.topic is None):
            self._extend("groups", (_group_deletion_json_lines if jsonl else
                                    _group_deletion_lines)(removed, names))

    def _extend(self, section: str, lines: list[str]) -> None:
        self.pending[section].extend(lines)
        self._counted(section, len(lines))

    def _extend_text(self, section: str, text: str, lines: int) -> None:
        """``lines`` lines at once, joined by newlines (the last one not ended)."""
        if lines:
            self.pending[section].append(text)
            self._counted(section, lines)

    def _add(self, section: str, line: str) -> None:
        self.pending[section].append(line)
        self._counted(section, 1)

    def _counted(self, section: str, lines: int) -> None:
        self.counts[section] += lines
        self.pending_lines[section] += lines
        if self.pending_lines[section] >= SPOOL_LINES:
            self._flush(section)

    def _flush(self, section: str) -> None:
        pending = self.pending[section]
        if pending:
            spool = self.spools.get(section)
            if spool is None:  # a worker's: a file of its own in the run's directory
                spool = self.spools[section] = self.enter_context(
                    _part_file(section, self.directory))
            spool.write("\n".join(pending) + "\n")
            pending.clear()
            self.pending_lines[section] = 0

    def split(self) -> Anomalies:
        """A worker's sink for one partition (its lines in files of its own)."""
        return Anomalies(self.args, self.directory)

    def handover(self) -> tuple[tuple[str, str | None, int], ...]:
        """A worker's lines, written out: each section's file (None: no line) and count."""
        for section in SECTIONS:
            self._flush(section)
        self.close()
        return tuple((section, getattr(self.spools.get(section), "name", None),
                      self.counts[section]) for section in SECTIONS)

    def adopt(self, handed: tuple[tuple[str, str | None, int], ...]) -> None:
        """A worker's partition: its lines follow those taken before."""
        for section, name, count in handed:
            self.counts[section] += count
            if name is not None:
                self.adopted[section].append(name)

    def discard(self, handed: tuple[tuple[str, str | None, int], ...]) -> None:
        for _, name, _ in handed:
            if name is not None:
                os.unlink(name)

    def copy(self, section: str, out: IO[str]) -> None:
        self._flush(section)
        spool = self.spools[section]
        spool.seek(0)
        shutil.copyfileobj(spool, out)
        for name in self.adopted[section]:
            with open(name, encoding="utf-8") as part:
                shutil.copyfileobj(part, out)


class _Names:
    """Groups' and topic-partitions' terminal-safe text, and names as JSON strings, made once
    per name."""

    def __init__(self) -> None:
        self._groups: dict[str, str] = {}
        self._partitions: dict[tuple[str, int], str] = {}
        self._json: dict[str, tuple[str | None, str]] = {}
        #: The same texts as UTF-8, for the compiled writer (topic -> partition -> bytes).
        self.group_bytes: dict[str, bytes] = {}
        self.partition_bytes: dict[str, dict[int, bytes]] = {}
        self.json_bytes: dict[str, tuple[bytes | None, bytes]] = {}

    def json(self, name: str) -> tuple[str | None, str]:
        """``name`` as :func:`render.dumps` writes it inside an object: as UTF-8 text (None
        when it holds a lone surrogate: then the whole object is written in ASCII) and in
        ASCII escapes."""
        text = self._json.get(name)
        if text is None:
            raw = json.dumps(name, ensure_ascii=False)
            try:
                raw.encode("utf-8")
            except UnicodeEncodeError:
                utf8 = None
            else:
                utf8 = json_safe(raw)
            text = self._json[name] = (utf8, json.dumps(name))
        return text

    def group(self, group: str) -> str:
        text = self._groups.get(group)
        if text is None:
            text = self._groups[group] = render.terminal_safe(group)
        return text

    def partition(self, topic: str, partition: int) -> str:
        text = self._partitions.get((topic, partition))
        if text is None:
            text = self._partitions[(topic, partition)] = _tp(topic, partition)
        return text

    def group_utf8(self, group: str) -> bytes:
        text = self.group_bytes[group] = self.group(group).encode("utf-8")
        return text

    def json_utf8(self, name: str) -> tuple[bytes | None, bytes]:
        utf8, ascii_ = self.json(name)
        text = self.json_bytes[name] = (None if utf8 is None else utf8.encode("utf-8"),
                                        ascii_.encode("ascii"))
        return text

    def partition_utf8(self, topic: str, partition: int) -> bytes:
        text = self.partition_bytes.setdefault(topic, {})[partition] = \
            self.partition(topic, partition).encode("utf-8")
        return text


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        raise SegtoolsError("--partition needs --topic")
    log_dirs, _ = open_tree(args.paths)
    partitions = live_partitions(log_dirs, CONSUMER_OFFSETS_TOPIC)
    if not partitions:
        raise SegtoolsError(f"no {CONSUMER_OFFSETS_TOPIC} partitions found",
                            path=" ".join(args.paths))
    total = sum(p.size_bytes for p in partitions)
    with Anomalies(args) as anomalies:
        replaying = begin_replay(  # workers forked before the progress bar's thread starts
            partitions, at=args.at, groups=args.group, history=args.history, topic=args.topic,
            partition=args.partition, sink=anomalies, limit=args.max_decompressed_bytes)
        with progress(total, CONSUMER_OFFSETS_TOPIC, quiet=args.quiet) as advance:
            replay = replaying.result(advance)
        if args.group and not replay.groups and not anomalies.counts["groups"]:
            # a typo must not read as "no offsets": say that nothing matched
            raise SegtoolsError(f"--group: no group matches {', '.join(map(repr, args.group))}"
                                f" in {CONSUMER_OFFSETS_TOPIC}"
                                + ("" if args.at is None else " up to --at"),
                                path=" ".join(args.paths))
        if args.topic is not None and not replay.commits and not any(
                _tp_matches(t, p, args) for g in replay.groups.values() for t, p in g.offsets):
            which = args.topic if args.partition is None else f"{args.topic}-{args.partition}"
            raise SegtoolsError(f"--topic: no group committed offsets of {which!r} in "
                                f"{CONSUMER_OFFSETS_TOPIC}" + ("" if args.at is None
                                                               else " up to --at"),
                                path=" ".join(args.paths))
        # with what listing could not read: a partition at mode 000 is not one without groups
        replay = dataclasses.replace(replay, findings=tuple(
            with_listing(log_dirs, partitions, replay.findings)))
        if args.format == "jsonl":
            write_json(replay, anomalies, args, sys.stdout)
        else:
            write_text(replay, anomalies, args, Wrapping(sys.stdout))
    code = exit_code(replay.findings)
    return EXIT_FINDINGS if anomalies.counts["regressions"] else code


def _tp_matches(topic: str, partition: int, args) -> bool:
    return (args.topic is None or topic == args.topic) and \
        (args.partition is None or partition == args.partition)


def write_json(replay: OffsetsReplay, anomalies: Anomalies, args, out) -> None:
    def emit(obj: dict) -> None:
        out.write(render.dumps(obj) + "\n")

    for g in replay.groups.values():
        emit(g.to_json())
        if not args.history:
            for (topic, partition), c in sorted(g.offsets.items()):
                if _tp_matches(topic, partition, args):
                    emit(c.to_json("committed_offset"))
    if args.history:
        for c in replay.commits_for(args.topic, args.partition):
            emit(c.to_json())
    for section in SECTIONS:
        anomalies.copy(section, out)
    for f in replay.findings:
        emit(f.to_json())


def _tp(topic: str, partition: int) -> str:
    return render.terminal_safe(f"{topic}-{partition}")


def _where(c) -> str:
    return f"[{CONSUMER_OFFSETS_TOPIC}-{c.partition} @{c.offset}]"


def _group_line(g: GroupState) -> str:
    kind = {"classic": f"classic {g.protocol_type}", "consumer": "consumer (KIP-848)",
            "share": "share (KIP-932)", "offsets-only": "offsets only"}[g.kind]
    parts = [kind, g.state]
    if g.deleted_at is not None:
        parts[-1] += f" (removed {render.human_time(g.deleted_at.timestamp)})"
    if g.generation is not None:
        parts.append(f"generation {g.generation}")
    if g.protocol:
        parts.append(f"protocol {g.protocol}")
    if g.epoch is not None:
        parts.append(f"group epoch {g.epoch}")
    return (f"group {render.terminal_safe(g.group)}  [{', '.join(parts)}]  "
            f"{CONSUMER_OFFSETS_TOPIC}-{g.log_partition}")


def _assigned(partitions: dict[str, list[int]]) -> str:
    return " ".join(f"{t}[{','.join(map(str, p))}]" for t, p in sorted(partitions.items())) \
        or "nothing"


def _members(g: GroupState) -> list[str]:
    lines = []
    for m in g.members:
        asg = m.get("assignment", {}).get("partitions")
        lines.append(f"  member {m['member_id']} ({m['client_id']} {m['client_host']}) "
                     f"assigned {_assigned(asg) if asg is not None else '(opaque)'}")
    for member, parts in sorted(g.members848.items()):
        meta = parts.get("metadata", {})
        current = parts.get("current", {})
        via = " via the classic protocol" if meta.get("classic_protocol") else ""
        lines.append(f"  member {member} ({meta.get('clientId')} {meta.get('clientHost')}{via}) "
                     f"epoch {current.get('member_epoch')} {current.get('state')} assigned "
                     f"{_assigned(current.get('assigned', {}))}"
                     + (f", revoking {_assigned(current['pending_revocation'])}"
                        if current.get("pending_revocation") else ""))
    return [render.terminal_safe(line) for line in lines]


def _commit_line(c: OffsetCommit) -> str:
    txn = f", transactional (producer {c.producer_id})" if c.producer_id is not None else ""
    return (f"offset {c.offset}  leader epoch {c.leader_epoch}  committed "
            f"{render.human_time(c.effective_timestamp)}{txn}  {_where(c.where)}")


def _regression_line(r: OffsetRegression, names: _Names) -> str:
    c = r.current
    state = f"; group {r.group_state}, generation {r.generation}" if r.group_state else ""
    return (f"  {render.human_time(c.effective_timestamp)}  {names.group(c.group)}  "
            f"{names.partition(c.topic, c.partition)}: {r.previous.offset} -> {c.offset} "
            f"({c.offset - r.previous.offset}){state}  {_where(c.where)}")


def _deletion_line(d: OffsetDeletion, names: _Names) -> str:
    return (f"  {render.human_time(d.where.timestamp)}  {names.group(d.group)}  "
            f"{names.partition(d.topic, d.partition)} (was {d.last_offset})  "
            f"{_where(d.where)}")


#: The last millisecond :func:`render.human_time` shows as a date (9999-12-31T23:59:59.999).
_LAST_MS = 253402300799999


def _distinct_times(ms: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`render.human_time` of each distinct moment (numpy writes the dates), and each
    row's index into them. The commits of one request share their moment, so a block holds
    far fewer moments than rows: each is written once, and the rows take theirs by index."""
    moments, rows = np.unique(np.array(ms, np.int64), return_inverse=True)
    dates = np.datetime_as_string(np.clip(moments, 0, _LAST_MS).astype("datetime64[ms]"),
                                  unit="ms")
    texts = np.array([f"{d}Z" for d in dates.tolist()], object)
    texts[moments < 0] = "-"
    texts[moments > _LAST_MS] = "out-of-range"
    return texts, rows.astype(np.int64, copy=False)


def _human_times(ms: list[int]) -> list[str]:
    """:func:`render.human_time` of many moments at once."""
    texts, rows = _distinct_times(ms)
    return texts[rows].tolist()


def _utf8_times(ms: list[int]) -> tuple[list[bytes], np.ndarray]:
    """:func:`_distinct_times` as UTF-8 (the moments' texts are ASCII), for the writer."""
    texts, rows = _distinct_times(ms)
    return [t.encode("ascii") for t in texts.tolist()], rows


#: What every anomaly line's place in the log starts with.
_WHERE_HEAD = f"[{CONSUMER_OFFSETS_TOPIC}-".encode("ascii")


def _regression_text(c: RegressionColumns, names: _Names, keep: list[bool] | None
                     ) -> tuple[str, int]:
    """:func:`_regression_line` of each regression (those ``keep`` marks), joined by
    newlines, and how many: written by the compiled writer (``cli/_anomaly_lines.pyx``)
    over the block's columns, the names and moments made once each here."""
    moments, moment_of = _utf8_times(c.timestamp)
    text, lines = regression_text(
        moments, moment_of, c.group, c.topic, c.partition, c.previous_offset, c.offset,
        c.group_state, c.generation, c.log_partition, c.log_offset, keep,
        names.group_bytes, names.group_utf8, names.partition_bytes, names.partition_utf8,
        _WHERE_HEAD)
    return text.decode("utf-8"), lines


def _deletion_text(c: DeletionColumns, names: _Names, keep: list[bool] | None
                   ) -> tuple[str, int]:
    """:func:`_deletion_line` of each deletion (those ``keep`` marks), joined by
    newlines, and how many, written by the compiled writer."""
    moments, moment_of = _utf8_times(c.log_timestamp)
    text, lines = deletion_text(
        moments, moment_of, c.group, c.topic, c.partition, c.last_offset, c.log_partition,
        c.log_offset, keep, names.group_bytes, names.group_utf8, names.partition_bytes,
        names.partition_utf8, _WHERE_HEAD)
    return text.decode("utf-8"), lines


def _selected(topics: list[str], partitions: list[int], args) -> list[bool] | None:
    """Which anomalies ``--topic``/``--partition`` select (None: all)."""
    if args.topic is None:
        return None
    return [_tp_matches(t, p, args) for t, p in zip(topics, partitions, strict=True)]


def _group_deletion_lines(c: GroupDeletionColumns, names: _Names) -> list[str]:
    group = names.group
    return [f"  {when}  {group(g)}  [{CONSUMER_OFFSETS_TOPIC}-{lp} @{lo}]"
            for when, g, lp, lo in zip(_human_times(c.log_timestamp), c.group,
                                       c.log_partition, c.log_offset, strict=True)]


def _json_names(names: _Names, *texts: str) -> tuple[str, ...]:
    """Names as JSON strings the way :func:`render.dumps` writes one object holding them
    all: UTF-8 unless one of them holds a lone surrogate, then all in ASCII escapes."""
    both = [names.json(t) for t in texts]
    if all(utf8 is not None for utf8, _ in both):
        return tuple(utf8 for utf8, _ in both)
    return tuple(ascii_ for _, ascii_ in both)


def _regression_json_text(c: RegressionColumns, names: _Names, keep: list[bool] | None
                          ) -> tuple[str, int]:
    """:meth:`OffsetRegression.to_json` of each regression (those ``keep`` marks) as
    :func:`render.dumps` writes it, joined by newlines, and how many: written by the compiled
    writer, the names' JSON strings made once each here (:meth:`_Names.json`)."""
    text, lines = regression_json(
        c.group, c.topic, c.partition, c.previous_offset, c.offset, c.timestamp,
        c.previous_timestamp, c.commit_timestamp, c.group_state, c.generation,
        c.log_partition, c.log_offset, c.log_timestamp, keep, names.json_bytes,
        names.json_utf8)
    return text.decode("utf-8"), lines


def _deletion_json_text(c: DeletionColumns, names: _Names, keep: list[bool] | None
                        ) -> tuple[str, int]:
    """:meth:`OffsetDeletion.to_json` of each deletion, as :func:`_regression_json_text`
    writes its own."""
    text, lines = deletion_json(
        c.group, c.topic, c.partition, c.last_offset, c.log_partition, c.log_offset,
        c.log_timestamp, keep, names.json_bytes, names.json_utf8)
    return text.decode("utf-8"), lines


def _group_deletion_json_lines(c: GroupDeletionColumns, names: _Names) -> list[str]:
    """:meth:`GroupDeletion.to_json` of each removed group, as :func:`render.dumps` writes
    it."""
    return [f'{{"type":"group_deleted","group":{_json_names(names, g)[0]},"timestamp":{stamp},'
            f'"log_partition":{lp},"log_offset":{lo},"log_timestamp":{stamp}}}'
            for g, lp, lo, stamp in zip(c.group, c.log_partition, c.log_offset,
                                         c.log_timestamp, strict=True)]


def write_text(replay: OffsetsReplay, anomalies: Anomalies, args, out) -> None:
    moment = render.human_time(args.at) if args.at is not None else "the end of the log"
    out.write(f"{CONSUMER_OFFSETS_TOPIC}: {len(replay.paths)} partition(s), {replay.records} "
              f"records replayed up to {moment}\n")
    if not args.history:
        for g in replay.groups.values():
            offsets = [(tp, c) for tp, c in sorted(g.offsets.items())
                       if _tp_matches(*tp, args)]
            if args.topic is not None and not offsets:
                continue
            out.write("\n" + _group_line(g) + "\n")
            for line in _members(g):
                out.write(line + "\n")
            for (topic, partition), c in offsets:
                out.write(f"  {_tp(topic, partition):<24} {_commit_line(c)}\n")
            if not offsets:
                out.write("  (no committed offsets)\n")
    else:
        write_history(replay, args, out)
    if anomalies.counts["regressions"]:
        out.write("\noffset regressions (a commit moved the group's offset backwards):\n")
        anomalies.copy("regressions", out)
    if anomalies.counts["deletions"]:
        out.write("\noffsets deleted (tombstones):\n")
        anomalies.copy("deletions", out)
    if anomalies.counts["groups"]:
        out.write("\ngroups removed (tombstones):\n")
        anomalies.copy("groups", out)
    for f in replay.findings:
        out.write(finding_line(f) + "\n")


def write_history(replay: OffsetsReplay, args, out) -> None:
    last: dict[tuple[str, str, int], int] = {}
    out.write("\ncommit history"
              + (f" of {args.topic}" + (f"-{args.partition}" if args.partition is not None
                                        else "") if args.topic else "") + ":\n")
    for c in replay.commits_for(args.topic, args.partition):
        key = (c.group, c.topic, c.partition)
        head = (f"  {render.human_time(c.effective_timestamp)}  "
                f"{render.terminal_safe(c.group)}  {_tp(c.topic, c.partition)}  ")
        if c.offset is None:
            out.write(head + f"DELETED (was {last.pop(key, None)})  {_where(c.where)}\n")
            continue
        if c.status != APPLIED:
            why = (f"ABORTED by marker @{c.applied_at.offset}" if c.status == ABORTED
                   else "PENDING: no COMMIT/ABORT marker")
            out.write(head + f"offset {c.offset}  transaction of producer {c.producer_id} "
                      f"{why}; not applied  {_where(c.where)}\n")
            continue
        previous = last.get(key)
        delta = "" if previous is None else f" ({c.offset - previous:+d})"
        flag = "  REGRESSION" if previous is not None and c.offset < previous else ""
        txn = (f"  transactional (producer {c.producer_id}, committed by marker "
               f"@{c.applied_at.offset})" if c.producer_id is not None and c.applied_at
               else "")
        out.write(head + f"offset {c.offset}{delta}{flag}{txn}  {_where(c.where)}\n")
        last[key] = c.offset
