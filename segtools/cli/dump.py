"""``segtools dump``: print what is in Kafka's files, like ``kafka-dump-log.sh`` and more.

For a ``.log``: batch lines (default) or batches and records (``--deep``), keys, values and
headers with ``--print-data``; a range of offsets or timestamps is found through the segment's
indexes (binary search, then a short scan), never by reading from byte 0. Text output keeps
the line shapes ``kafka-dump-log.sh`` prints, so what you already grep for still matches, with
UTC times beside epoch milliseconds and every control character escaped; ``--format jsonl``
prints one JSON object per line, with fields that are only ever added to, never renamed.
Indexes, producer snapshots and checkpoint files print their entries; what is wrong with an
index (Kafka's own sanity checks, and stricter ones) is always reported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from segtools import fanout
from segtools.analysis.cluster_metadata import metadata_record
from segtools.analysis.remote_input import (
    AivenIndexes,
    AivenObject,
    aiven_indexes,
    aiven_object,
    read_aiven_manifest,
)
from segtools.cli import _jsonl, common, decoding, jsonl, render
from segtools.cli.dump_files import dumper_for
from segtools.decode.chunks import BatchRecords, Chunk, _empty_columns, batch_records, record
from segtools.decode.table import BatchTable
from segtools.errors import NotAKafkaFileError, SegtoolsError
from segtools.findings import Finding, finding
from segtools.model import Batch, Record
from segtools.payloads.columns import Payloads, Topics, decode_side
from segtools.payloads.decoded import SchemaUse, json_text
from segtools.payloads.decoder import PayloadDecoder
from segtools.payloads.records import decode_record, topic_of
from segtools.payloads.schemas import subject_topic
from segtools.redact import Redactor, redactor
from segtools.sensitive import holds_cluster_metadata
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.location import resolve
from segtools.storage.partition import is_record_batch_file
from segtools.storage.seek import start_position_for_offset
from segtools.storage.segment import Segment
from segtools.units import format_bytes

EXAMPLES = """examples:
  segtools dump 00000000000000000000.log
  segtools dump --deep --print-data --bytes utf8 /var/kafka-logs/orders-0/*.log
  segtools dump --deep --format jsonl 00000000000000000000.log | jq .
  segtools dump --deep --start-offset 1200 --end-offset 1300 orders-0/*.log
  segtools dump --deep --start-time 2024-05-01T14:00Z 00000000000000001000.log
  segtools dump 00000000000000000000.index --verify-index
  segtools dump leader-epoch-checkpoint 00000000000000000020.snapshot
  segtools dump --deep --decode --format jsonl /var/kafka-logs/orders-0/*.log
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "dump", "print batches, records, index entries, checkpoints",
                           __doc__, EXAMPLES,
                           timeless="it prints what the files hold, as they hold it")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help=".log, .index, .timeindex, .txnindex, .snapshot or checkpoint files")
    p.add_argument("--deep", "--deep-iteration", action="store_true",
                   help="decode the records inside each batch")
    p.add_argument("--print-data", "--print-data-log", action="store_true",
                   help="print keys, values and headers (implies --deep)")
    common.add_format(p)
    p.add_argument("--bytes", choices=render.BYTES_MODES, default=None,
                   help="how keys/values are rendered (default: utf8 for text, base64 for jsonl)")
    p.add_argument("--no-crc", action="store_true", help="skip CRC verification")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="read only the first N bytes of each .log")
    p.add_argument("--start-offset", type=int, metavar="O", help="first offset to print")
    p.add_argument("--end-offset", type=int, metavar="O", help="last offset to print")
    p.add_argument("--start-time", type=common.parse_time, metavar="T",
                   help="first timestamp to print (epoch ms or ISO-8601)")
    p.add_argument("--end-time", type=common.parse_time, metavar="T",
                   help="last timestamp to print (epoch ms or ISO-8601)")
    p.add_argument("--read-committed", action="store_true",
                   help="show what a read_committed consumer gets: no aborted data, no "
                        "control batches, nothing past the last stable offset")
    decoder = p.add_mutually_exclusive_group()
    decoder.add_argument("--offsets-decoder", dest="decoder", action="store_const",
                         const="offsets", help="decode __consumer_offsets records")
    decoder.add_argument("--transaction-log-decoder", dest="decoder", action="store_const",
                         const="transaction_log", help="decode __transaction_state records")
    decoder.add_argument("--cluster-metadata-decoder", dest="decoder", action="store_const",
                         const="cluster_metadata", help="decode __cluster_metadata records")
    decoder.add_argument("--remote-log-metadata-decoder", dest="decoder", action="store_const",
                         const="remote_log_metadata",
                         help="decode __remote_log_metadata records (tiered storage)")
    p.add_argument("--verify-index", "--verify-index-only", action="store_true",
                   help="check index entries against the .log instead of printing them")
    # kafka-dump-log.sh's flag, accepted so a command line copied from it runs; not shown in
    # --help because dump always runs those checks (an option that changes nothing misleads)
    p.add_argument("--index-sanity-check", action="store_true", help=argparse.SUPPRESS)
    decoding.add_decode(p)
    common.add_redact(p)
    common.add_decompress_limit(p)
    common.add_quiet(p)
    p.set_defaults(run=run)


def is_log_file(path: str) -> bool:
    """Record batches: a ``.log`` (or one the broker renamed on its way out: evidence too), a
    KRaft snapshot or ``bootstrap.checkpoint``."""
    return is_record_batch_file(path)


def is_kraft_snapshot(path: str) -> bool:
    """A record-batch file that is not a segment (a KRaft snapshot, ``bootstrap.checkpoint``):
    its offsets count from 0 inside it. A ``.log`` without a segment's name is not one."""
    return not os.path.basename(path).endswith((".log", ".log.deleted", ".log.cleaned",
                                                ".log.swap"))


@dataclass(frozen=True, slots=True)
class Window:
    """The offsets and timestamps asked for; None = unbounded."""

    start_offset: int | None = None
    end_offset: int | None = None
    start_time: int | None = None
    end_time: int | None = None

    def batch_before(self, b: Batch) -> bool:
        return (self.start_offset is not None and b.last_offset < self.start_offset) or \
            (self.start_time is not None and b.max_timestamp < self.start_time)

    def batch_after(self, b: Batch) -> bool:
        return self.end_offset is not None and b.base_offset > self.end_offset

    def keeps(self, r: Record) -> bool:
        return not ((self.start_offset is not None and r.offset < self.start_offset)
                    or (self.end_offset is not None and r.offset > self.end_offset)
                    or (self.start_time is not None and r.timestamp < self.start_time)
                    or (self.end_time is not None and r.timestamp > self.end_time))

    @property
    def bounded(self) -> bool:
        return any(v is not None for v in (self.start_offset, self.end_offset,
                                           self.start_time, self.end_time))


class Output:
    """Writes text lines, or JSON lines as UTF-8 bytes, to stdout; remembers the findings
    (as found: the exit code does not depend on redaction)."""

    def __init__(self, fmt: str, redactor: Redactor | None = None):
        self.fmt = fmt
        self.findings: list[Finding] = []
        self.raw = sys.stdout.buffer if fmt == "jsonl" else None
        self.redactor = redactor
        #: the segment being dumped is KRaft metadata: its secrets are hidden record by record
        self.metadata = False

    def emit(self, obj: dict, text: str) -> None:
        if self.raw is not None:
            self.raw.write((render.dumps(obj) + "\n").encode())
        else:
            sys.stdout.write(text + "\n")

    def write_bytes(self, data) -> None:
        self.raw.write(data)

    def finding(self, f: Finding) -> None:
        self.findings.append(f)
        if self.redactor is not None:
            f = self.redactor.finding(f)
        where = f" at position {f.position}" if f.position is not None else ""
        self.emit(f.to_json(), f"{f.severity.upper()} {f.code}{where}: "
                               f"{render.terminal_safe(f.message)}")


def run(args: argparse.Namespace) -> int:
    redact = redactor(args.redact, args.redact_key)
    if redact is not None and args.decoder is not None:
        raise SegtoolsError("--redact cannot be combined with an internal-topic decoder: the "
                            "decoded keys and values are the data it would hide")
    args.redactor = redact
    out = Output(args.format, redact)
    args.payloads = decoding.payload_decoder(
        args, [resolve(n).parent.parent for n in args.files], out.findings)
    for f in list(out.findings):  # what reading the schemas met
        out.findings.remove(f)
        out.finding(f)
    if redact is not None:
        out.emit({"type": "redaction", "kinds": sorted(redact.kinds), "stable": redact.stable,
                  "note": redact.describe()}, f"# {redact.describe()}")
    window = Window(args.start_offset, args.end_offset, args.start_time, args.end_time)
    deep = args.deep or args.print_data or args.decoder is not None or \
        args.payloads is not None or (
        window.bounded and args.format == "jsonl")
    mode = args.bytes or ("base64" if args.format == "jsonl" else "utf8")
    total = sum(_size_or_zero(resolve(n)) for n in args.files if is_log_file(n))
    # a bar only when the data goes elsewhere: on the terminal it would tear the output
    quiet = args.quiet or sys.stdout.isatty()
    with common.progress(total, "dumping", quiet=quiet) as advance:
        for name in args.files:
            try:
                _dump_file(name, window, deep, args, mode, out, advance)
            except NotAKafkaFileError:
                raise
            except SegtoolsError as e:
                if len(args.files) == 1:  # nothing else to answer: the error line, exit 2
                    raise
                # one unreadable file among several: a finding that names it (dump's finding
                # lines leave the path to the file's heading), and the others are dumped
                out.finding(finding("segment_unreadable" if is_log_file(name)
                                    else "file_unreadable", name,
                                    f"{render.terminal_safe(name)} could not be read: {e}"))
    decoding.say_sources(args.schema_notes)
    return common.exit_code(out.findings)


def _size_or_zero(path: Path) -> int:
    """For the progress bar only: a file retention deleted meanwhile counts as empty (opening
    it reports the error properly)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _dump_file(name: str, window: Window, deep: bool, args, mode: str, out: Output,
               advance) -> None:
    path = resolve(name)  # a local file, an object or an archive member (storage/location.py)
    shown = out.redactor.path(name) if out.redactor is not None else name
    if path.is_dir():
        raise NotAKafkaFileError("is a directory (use 'segtools scan' for trees)", path=name)
    aiven = aiven_object(path, limit=args.max_decompressed_bytes) \
        if isinstance(path, Path) and is_log_file(name) else None
    if aiven is not None:
        _dump_aiven(aiven, path, shown, window, deep, args, mode, out, advance)
        return
    if is_log_file(name):
        with Segment(path, decompress_limit=args.max_decompressed_bytes) as segment:
            if segment.base_offset is not None:
                out.emit({"type": "file", "path": shown, "base_offset": segment.base_offset},
                         f"Dumping {render.terminal_safe(shown)}\n"
                         f"Log starting offset: {segment.base_offset}")
            elif is_kraft_snapshot(name):  # offsets count from 0 inside it
                out.emit({"type": "file", "path": shown, "kind": "kraft_snapshot"},
                         f"Dumping {render.terminal_safe(shown)}\n"
                         "KRaft snapshot (record batches, offsets from 0 inside the file)")
            else:
                out.emit({"type": "file", "path": shown, "kind": "unnamed_log"},
                         f"Dumping {render.terminal_safe(shown)}\n"
                         "not named as a Kafka segment (<20-digit base offset>.log): read as "
                         "record batches, offsets as stored")
            _dump_log(segment, path, window, deep, args, mode, out, advance)
        return
    if not path.exists():
        raise NotAKafkaFileError("no such file or directory", path=name)
    if isinstance(path, Path) and name.endswith(".rsm-manifest"):
        _dump_aiven_manifest(path, shown, args, out)
        return
    indexes = aiven_indexes(path, limit=args.max_decompressed_bytes) \
        if isinstance(path, Path) and name.endswith(".indexes") else None
    if indexes is not None:
        _dump_aiven_indexes(indexes, path, shown, args, out)
        return
    dumper = dumper_for(name)
    if dumper is None:
        raise NotAKafkaFileError("not a file segtools knows how to dump", path=name)
    out.emit({"type": "file", "path": shown}, f"Dumping {render.terminal_safe(shown)}")
    for f in dumper(path, args, out.emit):
        out.finding(f)


def _dump_aiven(aiven: AivenObject, path: Path, shown: str, window: Window, deep: bool, args,
                mode: str, out: Output, advance) -> None:
    """An Aiven plugin's ``.log`` object: dumped as the segment its chunks make (put back
    together in a temporary file outside the store), or, encrypted, said to be so."""
    out.emit({"type": "file", "path": shown, "kind": "aiven_segment_object",
              "manifest": aiven.manifest},
             f"Dumping {render.terminal_safe(shown)}\n"
             "an Aiven tiered-storage object: "
             + ("its chunks put back together per its .rsm-manifest"
                if aiven.data is not None else "not read, see below"))
    if aiven.data is None:
        out.finding(aiven.note)
        return
    with tempfile.TemporaryDirectory(prefix="segtools-aiven-") as scratch:
        whole = Path(scratch) / path.name
        whole.write_bytes(aiven.data)
        with Segment(whole, decompress_limit=args.max_decompressed_bytes) as segment:
            _dump_log(segment, whole, window, deep, args, mode, out, advance)


def _dump_aiven_manifest(path: Path, shown: str, args, out: Output) -> None:
    """An Aiven plugin's ``.rsm-manifest``: how its segment is stored, and what reading the
    segment takes (dump the ``.log`` beside it; for an encrypted one, the private key)."""
    read = read_aiven_manifest(path, limit=args.max_decompressed_bytes)
    m = read.manifest
    stem = render.terminal_safe(path.name.removesuffix(".rsm-manifest"))
    encrypted = m.encryption_key_id is not None
    stored = (f"an Aiven tiered-storage manifest: the segment's {stem}.log object is "
              f"{format_bytes(m.original_file_size)} in {len(m.transformed_sizes)} chunk(s) "
              f"of {format_bytes(m.original_chunk_size)}"
              + (", each zstd-compressed" if m.compression else "")
              + (", each encrypted (AES-GCM, the data key wrapped by the key pair "
                 f"{render.terminal_safe(repr(m.encryption_key_id))})" if encrypted else "")
              + f"; its indexes in {stem}.indexes: "
              + (", ".join(f"{name} at byte {pos} ({size} B)"
                           for name, pos, size in read.indexes) or "none"))
    hint = "" if encrypted else (f"\nto read the segment: segtools dump {stem}.log (put back "
                                 f"together per this manifest), and {stem}.indexes")
    out.emit({"type": "file", "path": shown, "kind": "aiven_manifest",
              "original_file_size": m.original_file_size,
              "original_chunk_size": m.original_chunk_size,
              "chunks": len(m.transformed_sizes), "compression": m.compression,
              "encryption_key_id": m.encryption_key_id,
              "indexes": [{"index": name, "position": pos, "size": size}
                          for name, pos, size in read.indexes]},
             f"Dumping {render.terminal_safe(shown)}\n{stored}{hint}")
    if encrypted:
        out.finding(finding("remote_segment_encrypted", str(path),
                            "reading the segment and its indexes needs the private key of the "
                            f"key pair {m.encryption_key_id!r}, which segtools does not have "
                            "and does not guess"))


def _dump_aiven_indexes(indexes: AivenIndexes, path: Path, shown: str, args,
                        out: Output) -> None:
    """An Aiven plugin's ``.indexes`` object: each index it holds, dumped as the file it
    stands for (from a temporary copy outside the store), or, encrypted, said to be so."""
    out.emit({"type": "file", "path": shown, "kind": "aiven_indexes_object",
              "manifest": indexes.manifest},
             f"Dumping {render.terminal_safe(shown)}\n"
             "an Aiven tiered-storage object: the segment's indexes one after the other, "
             + ("each dumped below as the file it stands for" if indexes.note is None
                else "not read, see below"))
    if indexes.note is not None:
        out.finding(indexes.note)
        return
    stem = path.name.removesuffix(".indexes")
    with tempfile.TemporaryDirectory(prefix="segtools-aiven-") as scratch:
        for suffix, data in indexes.sections:
            part = Path(scratch) / (stem + suffix)
            part.write_bytes(data)
            out.emit({"type": "file", "path": f"{shown}#{suffix.lstrip('.')}",
                      "kind": "aiven_index_section"},
                     f"{render.terminal_safe(stem + suffix)} ({len(data)} B):")
            for f in dumper_for(part.name)(part, args, out.emit):
                out.finding(f)


def _start_position(path: Path, segment: Segment, window: Window) -> int:
    """Where to start reading: found through the indexes (``OffsetIndex.lookup``; for times
    ``TimeIndex.lookup`` then the offset index, as ``LogSegment.findOffsetByTimestamp``)."""
    index_path = path.with_name(path.name.split(".", 1)[0] + ".index")
    time_path = index_path.with_suffix(".timeindex")
    if segment.base_offset is None or not index_path.exists():
        return 0
    with OffsetIndex(index_path, segment.base_offset, log_size=segment.size) as oi:
        target = window.start_offset
        if window.start_time is not None and time_path.exists():
            with TimeIndex(time_path, segment.base_offset) as ti:
                if ti.trusted and ti.valid_entries:
                    by_time = ti.lookup(window.start_time).offset
                    target = by_time if target is None else max(target, by_time)
        if target is None:
            return 0
        return start_position_for_offset(oi, target)[0]


def _findings_by_position(findings) -> tuple[np.ndarray, list[Finding]]:
    """The walk's findings in file order, with their positions (None sorts first)."""
    ordered = sorted(findings, key=lambda f: -1 if f.position is None else f.position)
    return np.array([-1 if f.position is None else f.position for f in ordered],
                    np.int64), ordered


class _Findings:
    """The walk's findings of one table chunk, printed where they belong: right after the
    batch at their position, or before the next batch shown (a finding about a skipped batch,
    a byte range with no batch, the tail)."""

    def __init__(self, findings, out: Output, skip_tail: bool):
        self.positions, self.items = _findings_by_position(
            f for f in findings if not (skip_tail and f.code == "truncated_tail"))
        self.done = 0
        self.out = out

    def upto(self, position: int, *, inclusive: bool) -> None:
        stop = int(np.searchsorted(self.positions, position,
                                   side="right" if inclusive else "left"))
        for f in self.items[self.done:stop]:
            self.out.finding(f)
        self.done = max(self.done, stop)

    def pending_before(self, positions: np.ndarray) -> np.ndarray:
        """For each batch position: whether a finding waits in ``[position, next)``."""
        nxt = np.empty_like(positions)
        nxt[:-1] = positions[1:]
        if len(nxt):
            nxt[-1] = 2**62
        lo = np.searchsorted(self.positions, positions, side="left")
        hi = np.searchsorted(self.positions, nxt, side="left")
        return hi > np.maximum(lo, self.done)

    def rest(self) -> None:
        for f in self.items[self.done:]:
            self.out.finding(f)
        self.done = len(self.items)


def _shown(t: BatchTable, window: Window, committed) -> tuple[np.ndarray, bool]:
    """Rows of a table chunk to print, and whether the window's end was reached."""
    keep = np.ones(len(t), bool)
    if window.start_offset is not None:
        keep &= t.last_offset >= window.start_offset
    if window.start_time is not None:
        keep &= t.max_timestamp >= window.start_time
    ended = False
    if window.end_offset is not None:
        after = np.flatnonzero(t.base_offset > window.end_offset)
        if len(after):
            keep[int(after[0]):] = False
            ended = True
    if committed is not None:
        keep &= committed.keep_mask(t)
    return keep, ended


def _record_mask(cols, window: Window) -> np.ndarray:
    keep = np.ones(len(cols), bool)
    if window.start_offset is not None:
        keep &= cols.offset >= window.start_offset
    if window.end_offset is not None:
        keep &= cols.offset <= window.end_offset
    if window.start_time is not None:
        keep &= cols.timestamp >= window.start_time
    if window.end_time is not None:
        keep &= cols.timestamp <= window.end_time
    return keep


@dataclass(frozen=True, slots=True)
class _Read:
    """What the file gave for one table chunk: the batches to show, the walk's findings, and
    whether the window ended here. Its records follow as separate items (one chunk each, so a
    reader running ahead holds few buffers), then ``None``."""

    table: BatchTable
    shown: BatchTable
    findings: tuple[Finding, ...]
    ended: bool


def _reads(segment: Segment, start: int, end: int | None, window: Window, committed,
           deep: bool, verify_crc: bool) -> Iterator[_Read | Chunk | None]:
    """Walk and decode (everything that touches the file, so it can run ahead of printing)."""
    for walked in segment.walk(start, end, verify_crc=verify_crc):
        t = walked.table
        keep, ended = _shown(t, window, committed)
        shown = t.take(keep)
        findings = walked.findings
        if ended:  # nothing after the last batch shown belongs to this dump
            last = shown.position[-1] if len(shown) else -1
            findings = tuple(f for f in findings if f.position is None or f.position <= last)
        yield _Read(t, shown, findings, ended)
        if deep and len(shown):
            yield from segment.records(shown)
        if len(t):
            segment.release(int(t.position[-1]))
        yield None
        if ended:
            return


def _grouped(items: Iterator[_Read | Chunk | None]) -> Iterator[tuple[_Read, Iterator[Chunk]]]:
    """Each table chunk with an iterator over its records' chunks (consumed in order)."""
    for head in items:
        assert isinstance(head, _Read)

        def chunks() -> Iterator[Chunk]:
            for item in items:
                if item is None:
                    return
                yield item

        body = chunks()
        yield head, body
        for _ in body:  # whatever the consumer left unread
            pass


def _dump_log(segment: Segment, path: Path, window: Window, deep: bool, args, mode: str,
              out: Output, advance) -> None:
    start = _start_position(path, segment, window) if window.bounded else 0
    end = args.max_bytes if args.max_bytes is not None else None
    committed = None
    if args.read_committed:  # the partition's transactions: only this option needs them
        from segtools.analysis.transactions import read_committed
        committed = read_committed(path.parent)
    # the compiled renderer writes keys and values straight from the columns: redaction goes
    # through the Python path, record by record
    out.metadata = holds_cluster_metadata(path)
    compiled = out.raw is not None and args.decoder is None and out.redactor is None \
        and not out.metadata
    progressed = start
    reads = _reads(segment, start, end, window, committed, deep, not args.no_crc)
    if segment.size > _AHEAD_BYTES:
        reads = fanout.ahead(reads, depth=2)
    for read, records in _grouped(reads):
        findings = _Findings(read.findings, out, skip_tail=args.max_bytes is not None)
        if compiled:
            _jsonl_batches(read, records, findings, window, deep, mode, out,
                           args.payloads, path)
        else:
            _python_batches(read, records, findings, window, deep, args, mode, out, path)
        findings.rest()
        if len(read.table):
            advance(int(read.table.end[-1]) - progressed)
            progressed = int(read.table.end[-1])


#: Below this size a dump is read and printed in one thread (a thread costs more than it saves).
_AHEAD_BYTES = 8 * 1024 * 1024


def _python_batches(read: _Read, records: Iterator[Chunk], findings: _Findings, window: Window,
                    deep: bool, args, mode: str, out: Output, path: Path) -> None:
    """Text output (and the internal-topic decoders): one batch at a time, Kafka's lines."""
    shown = read.shown
    items = batch_records(records) if deep else (
        BatchRecords(shown.batch(j), []) for j in range(len(shown)))
    for br in items:
        findings.upto(br.batch.position, inclusive=False)
        out.emit(br.batch.to_json(), render.batch_text(br.batch))
        for r in br.records:
            if window.keeps(r):
                _emit_record(r, br.batch, args, mode, out, path)
        findings.upto(br.batch.position, inclusive=True)
        if br.finding is not None:
            out.finding(br.finding)


#: Output bytes rendered per compiled call.
_JSONL_BUFFER = 16 << 20


def _jsonl_batches(read: _Read, records: Iterator[Chunk], findings: _Findings, window: Window,
                   deep: bool, mode: str, out: Output, payloads: PayloadDecoder | None = None,
                   path: Path | None = None) -> None:
    """``--format jsonl``: batch and record lines from the compiled renderer
    (:mod:`segtools.cli._jsonl`), findings and the rare record it hands back written by
    Python in their places."""
    shown = read.shown
    if not len(shown):
        return
    if deep:
        for chunk in records:
            decoded = _DecodedLines(payloads, chunk, window, path, out.findings) \
                if payloads is not None and path is not None else None
            _jsonl_chunk(chunk.table, chunk.columns, chunk, findings, window, mode, out, decoded)
            if chunk.truncated is not None:
                out.finding(chunk.truncated[1])
    else:
        _jsonl_chunk(shown, _NO_RECORDS, None, findings, window, mode, out)


_NO_RECORDS = _empty_columns(np.zeros(0, np.uint8))


def _jsonl_chunk(t: BatchTable, cols, chunk: Chunk | None, findings: _Findings,
                 window: Window, mode: str, out: Output,
                 decoded: _DecodedLines | None = None) -> None:
    keep = _record_mask(cols, window).astype(np.uint8)
    errors = chunk.errors if chunk is not None else {}
    stop_after = findings.pending_before(t.position)
    for j in errors:
        stop_after[j] = True
    stop_after = stop_after.astype(np.uint8)
    batches, records = _jsonl.Batches(t), _jsonl.Records(cols)
    state = np.zeros(3, np.int64)
    buf = np.empty(_JSONL_BUFFER, np.uint8)
    findings.upto(int(t.position[0]), inclusive=False)
    while True:
        n, why = _jsonl.render(batches, records, keep, stop_after, jsonl.MODES[mode], buf, state)
        out.write_bytes(buf[:n] if decoded is None else decoded.splice(buf[:n].tobytes()))
        if why == _jsonl.DONE:
            return
        if why == _jsonl.PYTHON_RECORD:
            i = int(state[1])
            obj = render.record_json(record(chunk, i), mode)
            out.emit(obj if decoded is None else decoded.fields(obj, i), "")
            if decoded is not None:
                for f in decoded.findings(i):
                    out.finding(f)
            state[1] = i + 1
        elif why == _jsonl.BATCH_END:
            j = int(state[0]) - 1
            findings.upto(int(t.position[j]), inclusive=True)
            if j in errors:
                out.finding(errors[j])
            if j + 1 < len(t):
                findings.upto(int(t.position[j + 1]), inclusive=False)
        elif n == 0:  # FULL with nothing written: one record larger than the buffer
            i = int(state[1])
            need = _jsonl.need_bytes(records, i, jsonl.MODES[mode])
            buf = np.empty(max(need + (1 << 10), len(buf)), np.uint8)


def _emit_record(r: Record, batch: Batch, args, mode: str, out: Output, path: Path) -> None:
    if out.metadata:
        r = metadata_record(r)
    if args.payloads is not None and r.control is None:
        _emit_decoded(r, batch, args, mode, out, path)
        return
    if out.redactor is not None:
        r = out.redactor.record(r, topic_of(path))
    obj = render.record_json(r, mode)
    if args.decoder is None:
        out.emit(obj, render.record_text(r, batch, print_data=args.print_data, mode=mode)
                 if out.raw is None else "")
        return
    from segtools.cli import decoders  # the internal-topic schemas, only when asked for

    found = decoders.decode(args.decoder, r)
    obj["decoded"] = found
    line = render.record_text(r, batch, print_data=False, mode=mode) if out.raw is None else ""
    out.emit(obj, line + render.terminal_safe(decoders.text(found)))


def _emit_decoded(r: Record, batch: Batch, args, mode: str, out: Output, path: Path) -> None:
    """A record with its key and value decoded (``--decode``): the decoded JSON beside the
    bytes, then a ``payload_*`` finding for each side that did not decode. Redaction hides the
    decoded values as it hides the bytes (the same token)."""
    topic = topic_of(path)
    decoded = decode_record(args.payloads, r.key, r.value, topic)
    shown = out.redactor.record(r, topic) if out.redactor is not None else r
    obj = render.record_json(shown, mode)
    texts: dict[str, str | None] = {}
    for side, raw in (("key", shown.key), ("value", shown.value)):
        found = decoded.sides[side]
        if found is None:
            continue
        hide = out.redactor is not None and raw is not None and raw != getattr(r, side)
        obj[f"{side}_decoded"] = render.render_bytes(raw, "utf8") if hide else found.value
        obj[f"{side}_schema"] = found.schema.to_json()
        subject = obj[f"{side}_schema"]["subject"]
        if out.redactor is not None and subject is not None:  # the subject names the topic
            parts = subject_topic(subject)
            obj[f"{side}_schema"]["subject"] = out.redactor.text(subject) if parts is None \
                else out.redactor.topic(parts[0]) + parts[1]
        texts[side] = render.render_bytes(raw, "utf8") if hide else json_text(found.value)
    out.emit(obj, render.record_text(shown, batch, print_data=True, mode=mode,
                                     key_text=texts.get("key"), value_text=texts.get("value"))
             if out.raw is None else "")
    for side, error in decoded.errors:
        out.finding(finding(error.code, str(path), f"{side}: {error}",
                            position=batch.position, offset=r.offset))


class _DecodedLines:
    """``--decode`` on the compiled JSON-lines path: a chunk's keys and values decoded as
    columns (Avro through the compiled transcoder), then spliced into the record lines the
    compiled renderer wrote, each record's ``payload_*`` findings written after its line."""

    RECORD = b'{"type":"record"'

    def __init__(self, decoder: PayloadDecoder, chunk: Chunk, window: Window, path: Path,
                 found: list[Finding]):
        cols = chunk.columns
        topics = Topics.one(topic_of(path), len(cols))
        self.sides = [
            (side, decode_side(decoder, Payloads(cols.data, pos, length), topics, is_key))
            for side, pos, length, is_key in (("key", cols.key_pos, cols.key_len, True),
                                              ("value", cols.value_pos, cols.value_len, False))]
        # per side that decoded anything: its name, texts and schema JSON by row
        self.shown = [(b',"%s_decoded":' % side.encode(), _texts(d.decoded),
                       b',"%s_schema":' % side.encode(), _schema_json(d.schemas))
                      for side, d in self.sides if d.decoded.null_count < len(d.decoded)]
        failed = np.zeros(len(cols), bool)
        for _, d in self.sides:
            failed |= d.errors.is_valid().to_numpy(zero_copy_only=False)
        self.failed = failed
        self.order = np.flatnonzero(_record_mask(cols, window))
        self.next = 0
        self.chunk = chunk
        self.path = str(path)
        self.found = found  # the dump's findings: the exit code counts these too

    def _suffix(self, i: int) -> bytes:
        parts = []
        for decoded_key, texts, schema_key, schemas in self.shown:
            text = texts(i)
            if text is not None:
                if b"\xe2\x80" in text:  # U+2028/2029 escaped: one JSON line stays one line
                    text = text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(
                        b"\xe2\x80\xa9", b"\\u2029")
                parts += (decoded_key, text, schema_key, schemas(i))
        return b"".join(parts)

    def findings(self, i: int) -> list[Finding]:
        cols, table = self.chunk.columns, self.chunk.table
        out = []
        for side, decoded in self.sides:
            code = decoded.errors[i].as_py()
            if code is not None:
                out.append(finding(code, self.path, f"{side}: {decoded.messages[i]}",
                                   position=int(table.position[cols.batch[i]]),
                                   offset=int(cols.offset[i])))
        return out

    def splice(self, data: bytes) -> bytes:
        if self.RECORD not in data:
            return data
        lines = data.split(b"\n")
        out = []
        append, order, failed, suffix = out.append, self.order, self.failed, self._suffix
        record = self.RECORD
        for line in lines[:-1]:
            if not line.startswith(record):
                append(line)
                continue
            i = order[self.next]
            self.next += 1
            append(line[:-1] + suffix(i) + b"}")
            if failed[i]:
                for f in self.findings(int(i)):
                    self.found.append(f)
                    append(render.dumps(f.to_json()).encode())
        append(lines[-1])
        return b"\n".join(out)

    def fields(self, obj: dict, i: int) -> dict:
        """A record Python renders (one the compiled renderer hands back): the same fields."""
        self.next += 1
        for side, decoded in self.sides:
            if decoded.decoded[i].is_valid:
                obj[f"{side}_decoded"] = json.loads(decoded.decoded[i].as_py())
                obj[f"{side}_schema"] = decoded.schemas[i].to_json()
        return obj


def _texts(column: pa.Array):
    """Row -> the JSON text's bytes (None for null), straight from the string column's
    buffers."""
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], np.int32)[column.offset:column.offset + len(column) + 1] \
        if buffers[1] is not None else None
    data = buffers[2].to_pybytes() if buffers[2] is not None else b""
    valid = column.is_valid().to_numpy(zero_copy_only=False)

    def text(i: int) -> bytes | None:
        if not valid[i]:
            return None
        return data[offsets[i]:offsets[i + 1]]

    return text


def _schema_json(uses: list[SchemaUse | None]):
    """Row -> the ``*_schema`` object's JSON bytes, once per distinct schema use."""
    cache: dict[int, bytes] = {}  # by identity: a column's rows share one SchemaUse

    def schema(i: int) -> bytes:
        use = uses[i]
        found = cache.get(id(use))
        if found is None:
            found = cache[id(use)] = render.dumps(use.to_json()).encode()
        return found

    return schema
