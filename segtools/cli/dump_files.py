"""``segtools dump`` for the files beside the ``.log``: indexes, snapshots and checkpoints.

Line shapes follow ``DumpLogSegments`` (``offset: O position: P``, ``timestamp: T offset: O``,
``version: 0 producerId: ...``); ``--format jsonl`` prints ``index_entry`` / ``timeindex_entry``
(docs/json-contract.md) and ``txnindex_entry`` / ``snapshot_entry`` / ``checkpoint_entry`` objects.
``--verify-index`` checks each index entry against the sibling ``.log`` as Kafka's
``--verify-index-only`` does (and prints no entries); the broker's ``sanityCheck`` rules always
run and are reported as findings.

An index that is all zeros (an active segment's, preallocated, nothing indexed yet) has no
entry: Kafka writes the first one only after ``index.interval.bytes`` of data, so its position
is never 0. ``kafka-dump-log.sh`` prints one anyway (``offset: <base> position: 0``: it reads
slot 0 before checking for the zero run); the text says that it would, the JSON claims no
``index_entry`` the writer never wrote.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from segtools.analysis import integrity
from segtools.cli import render
from segtools.decode.table import BatchTable
from segtools.findings import Finding
from segtools.formats.checkpoints import (
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
)
from segtools.storage.index import OffsetIndex, TimeIndex, TransactionIndex
from segtools.storage.segment import Segment
from segtools.storage.small_files import read_producer_snapshot, read_text_capped

Emit = Callable[[dict, str], None]  # (json object, text line)


def _sibling_log(path: Path) -> Path:
    return path.with_name(path.name.split(".", 1)[0] + ".log")


def _log_table(path: Path) -> BatchTable:
    log = _sibling_log(path)
    if not log.exists():
        return BatchTable.empty()
    with Segment(log) as segment:
        return segment.table(verify_crc=False)[0]


def _dump_index(path: Path, args, emit: Emit, index, check, entry_line) -> list[Finding]:
    """Shared by both index kinds: every entry in the file as ``kafka-dump-log`` prints them
    (damaged ones included), what is wrong with the file (Kafka's sanity checks and
    segtools' stricter ones, always: dump never hides damage), and with ``--verify-index``
    only the check of the entries against the sibling ``.log``."""
    with index:
        findings = list(index.sanity_check())
        if args.verify_index:
            findings += check(str(path), *index.entry_arrays(), _log_table(path))
            if not findings:  # silence would read as "nothing was checked"
                emit({"type": "note", "path": str(path), "message": "index verified",
                      "entries": index.valid_entries},
                     f"{index.valid_entries} entr{'y' if index.valid_entries == 1 else 'ies'} "
                     "checked against the .log: every one agrees with the batch it names")
            return findings
        slots = index.dumped_slots()
        if not len(slots):
            emit({"type": "note", "path": str(path), "message": "empty"},
                 f"{render.terminal_safe(str(path))} is empty.")
        elif index.valid_entries == 0 and index.is_preallocated:
            entry = entry_line(slots[0])[0]
            slots, phantom = slots[:0], " ".join(f"{k}: {v}" for k, v in entry.items()
                                                 if k != "type")
            emit({"type": "note", "path": str(path), "message": "no entries yet",
                  "kafka_dump_log_prints": phantom},
                 f"(no entries yet; kafka-dump-log.sh prints \"{phantom}\", read from the "
                 "zeros)")
        for slot in slots:
            emit(*entry_line(slot))
        _padding_note(index, path, emit)
    return findings


def dump_offset_index(path: Path, args, emit: Emit) -> list[Finding]:
    try:
        log_size = _sibling_log(path).stat().st_size
    except OSError:  # no .log beside it, or retention removed it meanwhile
        log_size = None
    index = OffsetIndex(path, log_size=log_size)
    base = index.base_offset

    def line(slot) -> tuple[dict, str]:
        offset, position = base + int(slot["relative_offset"]), int(slot["position"])
        return ({"type": "index_entry", "offset": offset, "position": position},
                f"offset: {offset} position: {position}")

    return _dump_index(path, args, emit, index, integrity.offset_index_vs_log, line)


def dump_time_index(path: Path, args, emit: Emit) -> list[Finding]:
    index = TimeIndex(path)
    base = index.base_offset

    def line(slot) -> tuple[dict, str]:
        ts, offset = int(slot["timestamp"]), base + int(slot["relative_offset"])
        return ({"type": "timeindex_entry", "timestamp": ts, "offset": offset},
                f"timestamp: {ts} ({render.human_time(ts)}) offset: {offset}")

    return _dump_index(path, args, emit, index, integrity.time_index_vs_log, line)


def _padding_note(index, path: Path, emit: Emit) -> None:
    if index.is_preallocated:
        emit({"type": "note", "path": str(path), "message": "zero-filled preallocated tail",
              "padding_bytes": index.padding_bytes},
             f"({index.padding_bytes} bytes of zero-filled preallocation follow: an active "
             "segment)")


def dump_txn_index(path: Path, args, emit: Emit) -> list[Finding]:
    index = TransactionIndex(path)
    for e in index.entries():
        emit({"type": "txnindex_entry", "version": e.version, "producer_id": e.producer_id,
              "first_offset": e.first_offset, "last_offset": e.last_offset,
              "last_stable_offset": e.last_stable_offset},
             f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
             f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}")
    return list(index.sanity_check())


def dump_snapshot(path: Path, args, emit: Emit) -> list[Finding]:
    snapshot, findings = read_producer_snapshot(path)
    for e in snapshot.entries if snapshot else ():
        txn = ("OptionalLong.empty" if e.current_txn_first_offset < 0
               else f"OptionalLong[{e.current_txn_first_offset}]")
        emit({"type": "snapshot_entry", "producer_id": e.producer_id, "producer_epoch": e.epoch,
              "coordinator_epoch": e.coordinator_epoch,
              "current_txn_first_offset": (None if e.current_txn_first_offset < 0
                                           else e.current_txn_first_offset),
              "last_timestamp": e.timestamp, "last_sequence": e.last_sequence,
              "last_offset": e.last_offset, "offset_delta": e.offset_delta},
             f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: "
             f"{e.coordinator_epoch} currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp} "
             f"lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
             f"offsetDelta: {e.offset_delta}")
    return findings


def _text_entries(path: Path, parse) -> tuple[object, list[Finding]]:
    text, findings = read_text_capped(path)
    if text is None:
        return None, findings
    value, more = parse(text, str(path))
    return value, findings + list(more)


def dump_checkpoint(path: Path, args, emit: Emit) -> list[Finding]:
    name = path.name
    if name == "leader-epoch-checkpoint" or name.endswith(REMOTE_EPOCH_SUFFIX):
        entries, findings = _text_entries(path, parse_leader_epoch_checkpoint)
        for e in entries or ():
            emit({"type": "checkpoint_entry", "epoch": e.epoch, "start_offset": e.start_offset},
                 f"epoch: {e.epoch} startOffset: {e.start_offset}")
    elif name == "partition.metadata":
        meta, findings = _text_entries(path, parse_partition_metadata)
        if meta is not None:
            emit({"type": "partition_metadata", "version": meta.version,
                  "topic_id": meta.topic_id},
                 f"version: {meta.version} topic_id: {meta.topic_id}")
    elif name == "meta.properties":
        meta, findings = _text_entries(path, parse_meta_properties)
        if meta is not None:
            emit({"type": "meta_properties", **dict(meta.properties)},
                 " ".join(f"{k}={v}" for k, v in meta.properties))
    else:
        entries, findings = _text_entries(path, parse_offset_checkpoint)
        redactor = getattr(args, "redactor", None)
        for (name, partition), offset in sorted((entries or {}).items()):
            topic = redactor.topic(name) if redactor is not None else name
            emit({"type": "checkpoint_entry", "topic": topic, "partition": partition,
                  "offset": offset},
                 f"topic: {render.terminal_safe(topic)} partition: {partition} "
                 f"offset: {offset}")
    return findings


CHECKPOINT_NAMES = ("leader-epoch-checkpoint", "partition.metadata", "meta.properties",
                    "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                    "log-start-offset-checkpoint", "cleaner-offset-checkpoint")

#: A remote segment's leader-epoch checkpoint as Kafka's ``LocalTieredStorage`` stores it
#: (``<start offset>-<segment id>.leader_epoch_checkpoint``): the same text format.
REMOTE_EPOCH_SUFFIX = ".leader_epoch_checkpoint"

DUMPERS: dict[str, Callable[[Path, object, Emit], list[Finding]]] = {
    REMOTE_EPOCH_SUFFIX: dump_checkpoint,
    ".index": dump_offset_index,
    ".timeindex": dump_time_index,
    ".txnindex": dump_txn_index,
    ".snapshot": dump_snapshot,
}


def dumper_for(path: str):
    """The dumper for a non-log file, by suffix as ``DumpLogSegments`` chooses, or by the
    fixed names of checkpoint files; None for anything else."""
    name = os.path.basename(path)
    if name in CHECKPOINT_NAMES:
        return dump_checkpoint
    return DUMPERS.get(os.path.splitext(name)[1])

