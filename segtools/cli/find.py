"""``segtools find``: locate a record by offset or timestamp the way the broker would.

By offset: the segment whose base offset is the largest at or below the target
(``LogSegments.floorSegment``), then its offset index and a short forward scan. By timestamp:
the first segment whose largest timestamp reaches the target
(``UnifiedLog.fetchOffsetByTimestamp``), then its time index, offset index and scan
(``LogSegment.findOffsetByTimestamp``). Prints the record with its segment, byte position and
batch, and how much the index saved (where the scan started, how many batches it read).

On a tiered partition an offset below the first local segment may be in remote storage: the
log dir's ``__remote_log_metadata`` names the remote segment, and with ``--remote-store`` (a
``LocalTieredStorage`` directory) it is read there, through its own offset index.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from segtools.analysis.cluster_metadata import metadata_record
from segtools.analysis.tiered import remote_segment_for_offset
from segtools.cli import common, decoding, render
from segtools.cli.table import Wrapping
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.payloads.decoded import json_text
from segtools.payloads.records import decode_record
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.remote_store import segment_store
from segtools.storage.seek import SeekResult, seek_offset, seek_timestamp
from segtools.storage.segment import Segment, file_unreadable, unreadable
from segtools.storage.summary import summarize

#: Later than any record: a segment whose timestamps cannot be read is still tried.
MAX_TIMESTAMP = 2**63 - 1

EXAMPLES = """examples:
  segtools find /var/kafka-logs/orders-3 --offset 1234567
  segtools find /var/kafka-logs --topic orders --partition 3 --offset 1234567
  segtools find /var/kafka-logs/orders-3 --timestamp 1714572120000 --format json
  segtools find /var/kafka-logs/orders-3 --offset 42 --decode
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "find", "locate a record by offset or timestamp via the indexes",
                           __doc__, EXAMPLES,
                           timeless="--timestamp is a record's time, looked up as the "
                                    "broker does")
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
    """The segment's largest timestamp (its time index's last entry, else a walk); a segment
    that cannot be read counts as reaching every timestamp, so the seek tries it and says
    what stopped it."""
    try:
        if files.timeindex is not None and files is not pdir.active_segment:
            with TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed) as ti:
                if ti.trusted and ti.valid_entries:
                    return ti.last_entry.timestamp
        return summarize(files, is_active=files is pdir.active_segment).largest_timestamp
    except SegtoolsError:
        return MAX_TIMESTAMP


def _index(kind, path: Path | None, files: SegmentFiles, findings: list[Finding]):
    """The segment's index of ``kind``, or None (a scan from the segment's start) when it
    has none or it cannot be opened, which is then a finding."""
    if path is None:
        return None
    try:
        return kind(path, files.base_offset, sealed=files.sealed)
    except SegtoolsError as e:
        findings.append(file_unreadable(str(path), e))
        return None


def _seek(pdir: PartitionDir, args, findings: list[Finding]
          ) -> tuple[SegmentFiles | None, SeekResult | None]:
    """The first record at or after the target in ``pdir``; a segment that cannot be read
    is a finding, and the search goes on in the next (what a fetch past it would read)."""
    if args.offset is not None:
        floor = _segment_for_offset(pdir, args.offset)
        # below the first segment (deleted by retention) the first record at or after the
        # offset is in the first segment, as a fetch from the log start offset would read
        candidates = list(pdir.segments) if floor is None else \
            [s for s in pdir.segments if s.base_offset >= floor.base_offset]
    else:
        candidates = [s for s in pdir.segments
                      if _largest_timestamp(pdir, s) >= args.timestamp]
    for files in candidates:
        oi = _index(OffsetIndex, files.index, files, findings)
        ti = _index(TimeIndex, files.timeindex, files, findings)
        try:
            with Segment.open(files, decompress_limit=args.max_decompressed_bytes) as segment:
                result = (seek_offset(segment, oi, args.offset) if args.offset is not None
                          else seek_timestamp(segment, oi, ti, args.timestamp))
        except SegtoolsError as e:
            findings.append(unreadable(str(files.log), e))
            continue
        findings.extend(f for f in result.findings if not _said_by_crc_check(f, result))
        if result.record is not None:
            return files, result
    return None, None


@dataclass(frozen=True, slots=True)
class Remote:
    """An offset below the first local segment of a tiered partition: what the remote tier
    answers (``RemoteLogManager.read``), read from ``--remote-store`` when it can be."""

    log: Path | None
    result: SeekResult | None
    note: str


def _remote(log_dirs, pdir: PartitionDir, args) -> Remote | None:
    """None when the offset is not below the local log, or the remote metadata knows nothing
    of the partition (then the local log answers)."""
    if args.offset is None or pdir.name is None or not pdir.segments or \
            args.offset >= pdir.segments[0].base_offset:
        return None
    found = remote_segment_for_offset(log_dirs, pdir.name.topic, pdir.name.partition,
                                      args.offset)
    if found is None:
        return None
    rp, seg = found
    if seg.start_offset > args.offset:
        where = (f"offset {args.offset} is below the remote log start (its remote segment "
                 f"was deleted); the first offset after it is {seg.start_offset}, in remote "
                 f"segment {seg.segment_id} ({seg.start_offset}-{seg.end_offset})")
    else:
        where = (f"offset {args.offset} is in remote storage: segment {seg.segment_id} "
                 f"({seg.start_offset}-{seg.end_offset}) per __remote_log_metadata")
    if not args.remote_store:
        return Remote(None, None, where + "; pass --remote-store DIR to read it")
    # the store scan, the planner and tiered read remote segments from, refused alike when
    # its layout keeps no segment as plain files
    store = segment_store(args.remote_store)
    files = store.files(rp.topic, rp.partition, rp.topic_id, seg.start_offset, seg.segment_id)
    listed = store.as_log_segment(files, seg.start_offset)
    if listed is None:
        return Remote(None, None, where + f"; the store has no .log of it in {files.directory}")
    oi = OffsetIndex(listed.index, seg.start_offset) if listed.index is not None else None
    with Segment.open(listed, decompress_limit=args.max_decompressed_bytes) as segment:
        result = seek_offset(segment, oi, args.offset)
    if result.record is None:
        return Remote(listed.log, None, where + f"; its .log in the store holds no record "
                                                f"at or after {args.offset}")
    return Remote(listed.log, result, where)


def _said_by_crc_check(met: Finding, result: SeekResult) -> bool:
    """The walk's CRC finding on the batch returned, which :func:`_crc_finding` says in a
    consumer's words instead."""
    return met.code == "crc_mismatch" and result.batch is not None and \
        met.position == result.batch.position


def _crc_finding(log: Path, result: SeekResult) -> Finding | None:
    """The batch a record is returned from must be intact: a consumer checks its CRC
    (``check.crcs``, ``DefaultRecordBatch.ensureValid``) and refuses the whole batch."""
    batch = result.batch
    if batch.crc_valid is not False:
        return None
    return finding("crc_mismatch", str(log),
                   f"the record at offset {result.record.offset} is in a batch "
                   f"({batch.base_offset}..{batch.last_offset}) whose stored CRC {batch.crc} "
                   "does not match its bytes: a consumer would refuse this batch",
                   position=batch.position, offset=batch.base_offset)


def run(args: argparse.Namespace) -> int:
    log_dirs, loose = common.open_tree(args.paths)
    common.require_match(log_dirs, args)
    pdirs = [p for d in log_dirs for p in d.partitions if common.selected(p, args)
             and (p.name is None or str(p.name.state) == "live")]
    if not pdirs:
        raise SegtoolsError("no partition matches", path=args.paths[0])
    mode = args.bytes or ("base64" if args.format == "jsonl" else "utf8")
    out = sys.stdout if args.format == "jsonl" else Wrapping(sys.stdout)
    found_any = False
    notes = []
    findings: list[Finding] = list(loose)
    payloads = decoding.payload_decoder(args, log_dirs, findings)
    for pdir in pdirs:
        remote = _remote(log_dirs, pdir, args)
        if remote is not None:
            notes.append(f"{pdir.path.name}: {remote.note}")
            log, result = remote.log, remote.result
            shown = str(log)
        else:
            files, result = _seek(pdir, args, findings)
            log = files.log if files is not None else None
            shown = log.name if log is not None else ""
        if result is None:
            continue
        found_any = True
        record = result.record
        if pdir.name is not None and pdir.name.is_metadata_log:
            record = metadata_record(record)  # a config's secret shows [hidden], as in dump
        bad = _crc_finding(log, result)
        if bad is not None:
            findings.append(bad)
        found = {
            "type": "found", "topic": pdir.name.topic if pdir.name else None,
            "partition": pdir.name.partition if pdir.name else None,
            "segment": str(log), "position": result.batch.position,
            "index_used": result.index_used, "scan_start_position": result.start_position,
            "batches_scanned": result.batches_scanned, "batch": result.batch.to_json(),
            "record": render.record_json(record, mode)}
        texts: dict[str, str] = {}
        if payloads is not None and record.control is None:
            decoded = decode_record(payloads, record.key, record.value,
                                    pdir.name.topic if pdir.name else None)
            for side, payload in decoded.sides.items():
                if payload is not None:
                    found["record"][f"{side}_decoded"] = payload.value
                    found["record"][f"{side}_schema"] = payload.schema.to_json()
                    texts[side] = json_text(payload.value)
            findings.extend(finding(e.code, str(log), f"{side}: {e}",
                                    position=result.batch.position,
                                    offset=result.record.offset) for side, e in decoded.errors)
        if args.format == "jsonl":
            out.write(render.dumps(found) + "\n")
        else:
            line = render.record_text(record, result.batch, print_data=True, mode=mode,
                                      key_text=texts.get("key"), value_text=texts.get("value"))
            how = (f"offset index -> byte {result.start_position}" if result.index_used
                   else "no usable index: scanned from byte 0")
            out.write(
                f"{render.terminal_safe(pdir.path.name)}: offset {result.record.offset} in "
                f"{render.terminal_safe(shown)} at byte {result.batch.position} "
                f"({how}, {result.batches_scanned} batch(es) read)\n"
                f"{render.batch_text(result.batch)}\n"
                f"{line}\n")
    findings = common.with_listing(log_dirs, pdirs, findings)
    for f in findings:
        if args.format == "jsonl":
            out.write(render.dumps(f.to_json()) + "\n")
        else:
            out.write(render.finding_line(f) + "\n")
    for note in notes:
        sys.stderr.write(f"segtools: {render.terminal_safe(note)}\n")
    decoding.say_sources(args.schema_notes)
    if not found_any and not notes:
        what = f"offset {args.offset}" if args.offset is not None else \
            f"timestamp {args.timestamp}"
        sys.stderr.write(f"segtools: no record at or after {what}\n")
    if not found_any:
        return common.EXIT_FINDINGS
    return common.exit_code(findings)
