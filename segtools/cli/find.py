"""``segtools find``: locate a record by offset or timestamp the way the broker would.

By offset: the segment whose base offset is the largest at or below the target
(``LogSegments.floorSegment``), then its offset index and a short forward scan. By timestamp:
the first segment whose largest timestamp reaches the target (``UnifiedLog.
fetchOffsetByTimestamp``), then its time index, offset index and scan
(``LogSegment.findOffsetByTimestamp``). Prints the record with its segment, byte position and
batch, and how much the index saved (where the scan started, how many batches it read).

On a tiered partition an offset below the first local segment may be in remote storage: the
log dir's ``__remote_log_metadata`` names the remote segment, and with ``--remote-store`` (a
``LocalTieredStorage`` directory) it is read there, through its own offset index.
"""

from __future__ import annotations

import argparse
import sys

from segtools.analysis.tiered import remote_segment_for_offset
from segtools.cli import common, decoding, render
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.payloads.decoded import json_text
from segtools.payloads.records import decode_record
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.remote_store import LocalTieredStorage, open_store
from segtools.storage.seek import SeekResult, seek_offset, seek_timestamp
from segtools.storage.segment import Segment
from segtools.storage.summary import summarize

EXAMPLES = """examples:
  segtools find /var/kafka-logs/orders-3 --offset 1234567
  segtools find /var/kafka-logs --topic orders --partition 3 --offset 1234567
  segtools find /var/kafka-logs/orders-3 --timestamp 1714572120000 --format json
  segtools find /var/kafka-logs/orders-3 --offset 42 --decode
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "find", "locate a record by offset or timestamp via the indexes",
                           __doc__, EXAMPLES)
    common.add_paths(p, "log dirs or partition dirs")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--offset", type=int, help="the offset to find")
    target.add_argument("--timestamp", type=common.parse_time,
                        help="epoch ms or ISO-8601: the first record at or after it")
    common.add_selection(p)
    common.add_format(p)
    p.add_argument("--bytes", choices=render.BYTES_MODES, default=None)
    p.add_argument("--remote-store", metavar="DIR",
                   help="tiered storage: a LocalTieredStorage directory to read an offset "
                        "below the first local segment from")
    decoding.add_decode(p)
    common.add_decompress_limit(p)
    p.set_defaults(run=run)


def _segment_for_offset(pdir: PartitionDir, offset: int) -> SegmentFiles | None:
    floor = [s for s in pdir.segments if s.base_offset <= offset]
    return floor[-1] if floor else None


def _largest_timestamp(pdir: PartitionDir, files: SegmentFiles) -> int:
    if files.timeindex is not None and files is not pdir.active_segment:
        with TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed) as ti:
            if ti.trusted and ti.valid_entries:
                return ti.last_entry.timestamp
    return summarize(files, is_active=files is pdir.active_segment).largest_timestamp


def _seek(pdir: PartitionDir, args) -> tuple[SegmentFiles | None, SeekResult | None]:
    if args.offset is not None:
        candidates = [_segment_for_offset(pdir, args.offset)]
        candidates += [s for s in pdir.segments if candidates[0] is not None
                       and s.base_offset > candidates[0].base_offset]
    else:
        candidates = [s for s in pdir.segments
                      if _largest_timestamp(pdir, s) >= args.timestamp]
    for files in candidates:
        if files is None:
            continue
        oi = (OffsetIndex(files.index, files.base_offset, sealed=files.sealed)
              if files.index else None)
        ti = (TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed)
              if files.timeindex else None)
        with Segment.open(files, decompress_limit=args.max_decompressed_bytes) as segment:
            result = (seek_offset(segment, oi, args.offset) if args.offset is not None
                      else seek_timestamp(segment, oi, ti, args.timestamp))
        if result.record is not None:
            return files, result
    return None, None


def _remote(log_dirs, pdir: PartitionDir, args) -> tuple[object, SeekResult | None, str]:
    """An offset below the first local segment: the remote segment holding it, read from
    ``--remote-store`` when given (file, result, note)."""
    if args.offset is None or pdir.name is None or not pdir.segments or \
            args.offset >= pdir.segments[0].base_offset:
        return None, None, ""
    found = remote_segment_for_offset(log_dirs, pdir.name.topic, pdir.name.partition,
                                      args.offset)
    if found is None:
        return None, None, ""
    rp, seg = found
    where = (f"offset {args.offset} is in remote storage: segment {seg.segment_id} "
             f"({seg.start_offset}-{seg.end_offset}) per __remote_log_metadata")
    if not args.remote_store:
        return None, None, where + "; pass --remote-store DIR to read it"
    store = open_store(args.remote_store)
    if not isinstance(store, LocalTieredStorage):
        return None, None, where + f"; find reads LocalTieredStorage stores, not {store.layout}"
    files = store.files(rp.topic, rp.partition, rp.topic_id, seg.start_offset, seg.segment_id)
    if files.log is None:
        return None, None, where + f"; the store has no .log of it in {files.directory}"
    index = files.found.get("offset_index")
    oi = OffsetIndex(index, seg.start_offset) if index is not None else None
    with Segment(files.log, decompress_limit=args.max_decompressed_bytes) as segment:
        result = seek_offset(segment, oi, args.offset)
    return files.log, (result if result.record is not None else None), where


def run(args: argparse.Namespace) -> int:
    log_dirs, _ = common.open_tree(args.paths)
    pdirs = [p for d in log_dirs for p in d.partitions if common.selected(p, args)
             and (p.name is None or str(p.name.state) == "live")]
    if not pdirs:
        raise SegtoolsError("no partition matches", path=args.paths[0])
    mode = args.bytes or ("base64" if args.format == "jsonl" else "utf8")
    found_any = False
    notes = []
    findings: list[Finding] = []
    payloads = decoding.payload_decoder(args, log_dirs, findings)
    for pdir in pdirs:
        remote_log, result, note = _remote(log_dirs, pdir, args)
        if result is None:
            if note:
                notes.append(f"{pdir.path.name}: {note}")
            files, result = _seek(pdir, args)
            log = files.log if files is not None else None
        else:
            log = remote_log
        if result is None:
            continue
        found_any = True
        out = {
            "type": "found", "topic": pdir.name.topic if pdir.name else None,
            "partition": pdir.name.partition if pdir.name else None,
            "segment": str(log), "position": result.batch.position,
            "index_used": result.index_used, "scan_start_position": result.start_position,
            "batches_scanned": result.batches_scanned, "batch": result.batch.to_json(),
            "record": render.record_json(result.record, mode)}
        texts: dict[str, str] = {}
        if payloads is not None and result.record.control is None:
            decoded = decode_record(payloads, result.record.key, result.record.value,
                                    pdir.name.topic if pdir.name else None)
            for side, found in decoded.sides.items():
                if found is not None:
                    out["record"][f"{side}_decoded"] = found.value
                    out["record"][f"{side}_schema"] = found.schema.to_json()
                    texts[side] = json_text(found.value)
            findings.extend(finding(e.code, str(log), f"{side}: {e}",
                                    position=result.batch.position,
                                    offset=result.record.offset) for side, e in decoded.errors)
        if args.format == "jsonl":
            sys.stdout.write(render.dumps(out) + "\n")
        else:
            line = render.record_text(result.record, result.batch, print_data=True, mode=mode,
                                      key_text=texts.get("key"), value_text=texts.get("value"))
            how = (f"offset index -> byte {result.start_position}" if result.index_used
                   else "no usable index: scanned from byte 0")
            sys.stdout.write(
                f"{render.terminal_safe(pdir.path.name)}: offset {result.record.offset} in "
                f"{render.terminal_safe(str(log) if log is remote_log else log.name)} "
                f"at byte {result.batch.position} "
                f"({how}, {result.batches_scanned} batch(es) read)\n"
                f"{render.batch_text(result.batch)}\n"
                f"{line}\n")
    for note in notes:
        sys.stderr.write(f"segtools: {render.terminal_safe(note)}\n")
    decoding.say_sources(args.schema_notes)
    for f in findings:
        sys.stdout.write((render.dumps(f.to_json()) if args.format == "jsonl"
                          else render.finding_line(f)) + "\n")
    if not found_any:
        what = f"offset {args.offset}" if args.offset is not None else \
            f"timestamp {args.timestamp}"
        sys.stderr.write(f"segtools: no record at or after {what}\n")
        return common.EXIT_FINDINGS
    return common.exit_code(findings)
