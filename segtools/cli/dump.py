"""``segtools dump``: print what is in Kafka's files, like ``kafka-dump-log.sh`` and more.

For a ``.log``: batch lines (default) or batches and records (``--deep``), keys, values and
headers with ``--print-data``; a range of offsets or timestamps is found through the segment's
indexes (binary search, then a short scan), never by reading from byte 0. Text output keeps
Kafka's line shapes (an operator's muscle memory) with UTC times beside epoch milliseconds and
every control character escaped; ``--format jsonl`` prints the DESIGN.md §3 objects, one per
line. Indexes, producer snapshots and checkpoint files print their entries.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from segtools import jsonl
from segtools.analysis import transactions
from segtools.cli import common, decoders, render
from segtools.cli.dump_files import dumper_for
from segtools.errors import NotAKafkaFileError
from segtools.findings import Finding
from segtools.model import Batch, Record
from segtools.records import Chunk, record_at, records_finding
from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.seek import start_position_for_offset
from segtools.storage.segment import Segment

EXAMPLES = """examples:
  segtools dump 00000000000000000000.log
  segtools dump --deep --print-data --bytes utf8 /var/kafka-logs/orders-0/*.log
  segtools dump --deep --format jsonl --bytes base64 00000000000000000000.log | jq .
  segtools dump --deep --start-offset 1200 --end-offset 1300 00000000000000001000.log
  segtools dump --deep --start-time 2024-05-01T14:00:00Z 00000000000000001000.log
  segtools dump 00000000000000000000.index --verify-index
  segtools dump leader-epoch-checkpoint 00000000000000000020.snapshot
"""

LOG_SUFFIXES = (".log", ".log.deleted", ".log.cleaned", ".log.swap")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump", help="print batches, records, index entries, checkpoints",
                       description=__doc__, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help=".log, .index, .timeindex, .txnindex, .snapshot or checkpoint files")
    p.add_argument("--deep", "--deep-iteration", action="store_true",
                   help="decode the records inside each batch")
    p.add_argument("--print-data", "--print-data-log", action="store_true",
                   help="print keys, values and headers (implies --deep)")
    p.add_argument("--format", choices=("text", "jsonl"), default="text")
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
    p.add_argument("--verify-index", "--verify-index-only", action="store_true",
                   help="check index entries against the .log instead of printing them")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="run the broker's index sanity checks")
    common.add_decompress_limit(p)
    common.add_quiet(p)
    p.set_defaults(run=run)


def is_log_file(path: str) -> bool:
    """Record data: a ``.log``, or one the broker renamed on its way out (evidence too)."""
    return path.endswith(LOG_SUFFIXES)


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
    """Writes text lines, or JSON lines as UTF-8 bytes, to stdout; remembers the findings."""

    def __init__(self, fmt: str):
        self.fmt = fmt
        self.findings: list[Finding] = []
        self.raw = sys.stdout.buffer if fmt == "jsonl" else None

    def emit(self, obj: dict, text: str) -> None:
        if self.raw is not None:
            self.raw.write((render.dumps(obj) + "\n").encode())
        else:
            sys.stdout.write(text + "\n")

    def write_bytes(self, data) -> None:
        self.raw.write(data)

    def finding(self, f: Finding) -> None:
        self.findings.append(f)
        where = f" at position {f.position}" if f.position is not None else ""
        self.emit(f.to_json(), f"{f.severity.upper()} {f.code}{where}: "
                               f"{render.terminal_safe(f.message)}")


def run(args: argparse.Namespace) -> int:
    out = Output(args.format)
    window = Window(args.start_offset, args.end_offset, args.start_time, args.end_time)
    deep = args.deep or args.print_data or args.decoder is not None or (
        window.bounded and args.format == "jsonl")
    mode = args.bytes or ("base64" if args.format == "jsonl" else "utf8")
    total = sum(_size_or_zero(Path(n)) for n in args.files if is_log_file(n))
    # a bar only when the data goes elsewhere: on the terminal it would tear the output
    quiet = args.quiet or sys.stdout.isatty()
    with common.progress(total, "dumping", quiet=quiet) as advance:
        for name in args.files:
            _dump_file(name, window, deep, args, mode, out, advance)
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
    path = Path(name)
    if path.is_dir():
        raise NotAKafkaFileError("is a directory (use 'segtools scan' for trees)", path=name)
    if is_log_file(name):
        with Segment(path, decompress_limit=args.max_decompressed_bytes) as segment:
            out.emit({"type": "file", "path": name, "base_offset": segment.base_offset},
                     f"Dumping {render.terminal_safe(name)}\n"
                     f"Log starting offset: {segment.base_offset}")
            _dump_log(segment, path, window, deep, args, mode, out, advance)
        return
    dumper = dumper_for(name)
    if dumper is None:
        raise NotAKafkaFileError("not a file segtools knows how to dump", path=name)
    if not path.exists():
        raise NotAKafkaFileError("no such file", path=name)
    out.emit({"type": "file", "path": name}, f"Dumping {render.terminal_safe(name)}")
    for f in dumper(path, args, out.emit):
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


#: Batches decoded per kernel call while streaming: bounds memory, amortises the call.
WINDOW = 1024


def _windows(items: Iterator[Batch | Finding], window: Window, size: int = WINDOW):
    """Split the shallow walk into groups of batches inside the window, each with the findings
    met on the way; stops at the first batch past the end offset."""
    batches: list[Batch] = []
    findings: list[Finding] = []
    for item in items:
        if isinstance(item, Finding):
            findings.append(item)
            continue
        if window.batch_after(item):
            break
        if window.batch_before(item):
            continue
        batches.append(item)
        if len(batches) >= size:
            yield batches, findings
            batches, findings = [], []
    if batches or findings:
        yield batches, findings


def _dump_log(segment: Segment, path: Path, window: Window, deep: bool, args, mode: str,
              out: Output, advance) -> None:
    start = _start_position(path, segment, window) if window.bounded else 0
    end = args.max_bytes if args.max_bytes is not None else None
    walk = segment.batches(start, end, verify_crc=not args.no_crc)
    if args.read_committed:
        walk = _committed_only(walk, path)
    released = progressed = start
    text = args.format == "text"
    for batches, findings in _windows(walk, window):
        if batches:
            segment.release(released, batches[0].position)
            released = batches[0].position
            advance(batches[-1].end - progressed)
            progressed = batches[-1].end
        findings_at: dict[int | None, list[Finding]] = {}
        for f in findings:
            findings_at.setdefault(f.position, []).append(f)
        decoded = segment.batch_records(batches) if deep else (
            _Shallow(b) for b in batches)
        if deep and not text and args.decoder is None:
            _jsonl_window(segment, batches, findings_at, window, mode, out)
            decoded = ()
        for br in decoded:
            out.emit(br.batch.to_json(), render.batch_text(br.batch))
            for r in br.records:
                if window.keeps(r):
                    _emit_record(r, br.batch, args, mode, out)
            for f in findings_at.pop(br.batch.position, []):
                out.finding(f)
            if br.finding is not None:
                out.finding(br.finding)
        for f in (f for fs in findings_at.values() for f in fs):
            if not (args.max_bytes is not None and f.code == "truncated_tail"):
                out.finding(f)


def _emit_record(r: Record, batch: Batch, args, mode: str, out: Output) -> None:
    obj = render.record_json(r, mode)
    if args.decoder is None:
        out.emit(obj, render.record_text(r, batch, print_data=args.print_data, mode=mode)
                 if out.raw is None else "")
        return
    found = decoders.decode(args.decoder, r)
    obj["decoded"] = found
    line = render.record_text(r, batch, print_data=False, mode=mode) if out.raw is None else ""
    out.emit(obj, line + render.terminal_safe(decoders.text(found)))


def _committed_only(walk: Iterator[Batch | Finding], path: Path) -> Iterator[Batch | Finding]:
    """Keep what a read_committed consumer is given (``CompletedFetch``): the aborted ranges
    and last stable offset come from the whole partition the segment belongs to."""
    view = transactions.read_committed(path.parent)
    for item in walk:
        if isinstance(item, Finding) or view.keep(item):
            yield item


def _jsonl_window(segment: Segment, batches: list[Batch],
                  findings_at: dict[int | None, list[Finding]], window: Window, mode: str,
                  out: Output) -> None:
    """The fast path of ``--deep --format jsonl``: record lines come from the compiled
    renderer (:mod:`segtools.jsonl`) a chunk at a time; batch lines, control records, the rare
    record it hands back, and findings are written by Python in their places."""
    for item in segment.chunks(batches):
        if isinstance(item, Chunk):
            _jsonl_chunk(item, findings_at, window, mode, out)
            continue
        out.emit(item.batch.to_json(), "")  # a legacy entry: few records, Python path
        for r in item.records:
            if window.keeps(r):
                out.emit(render.record_json(r, mode), "")
        for f in findings_at.pop(item.batch.position, []):
            out.finding(f)
        if item.finding is not None:
            out.finding(item.finding)


def _jsonl_chunk(chunk: Chunk, findings_at, window: Window, mode: str, out: Output) -> None:
    cols, batches = chunk.columns, chunk.batches
    keep = np.ones(len(cols), dtype=bool)
    if window.start_offset is not None:
        keep &= cols.offset >= window.start_offset
    if window.end_offset is not None:
        keep &= cols.offset <= window.end_offset
    if window.start_time is not None:
        keep &= cols.timestamp >= window.start_time
    if window.end_time is not None:
        keep &= cols.timestamp <= window.end_time
    is_control = np.array([b.is_control for b in batches], dtype=bool)
    rows = np.flatnonzero(keep & ~is_control[cols.batch])
    seq = jsonl.sequences(cols, np.array([b.base_sequence for b in batches], dtype=np.int64))
    data_end = batches[-1].end if chunk.in_file else len(cols.data)
    current = -1

    def close(b: int) -> None:
        for f in findings_at.pop(batches[b].position, []):
            out.finding(f)
        if cols.err_code[b]:
            out.finding(records_finding(chunk, b))

    def goto(b: int) -> None:
        nonlocal current
        while current < b:
            if current >= 0:
                close(current)
            current += 1
            batch = batches[current]
            out.emit(batch.to_json(), "")
            if batch.is_control:
                for i in np.flatnonzero((cols.batch == current) & keep):
                    out.emit(render.record_json(record_at(chunk, int(i)), mode), "")

    for part, data, line_end, python_rows in jsonl.render_rows(
            cols, rows, seq, jsonl.MODES[mode], data_end):
        python = set(python_rows.tolist())
        part_batch = cols.batch[part]
        cuts = [0, *(np.flatnonzero(np.diff(part_batch)) + 1).tolist(), len(part)]
        written = 0
        for s, e in itertools.pairwise(cuts):
            goto(int(part_batch[s]))
            if not python.intersection(range(s, e)):
                out.write_bytes(data[written:line_end[e - 1]])
                written = int(line_end[e - 1])
                continue
            for j in range(s, e):
                if j in python:
                    out.emit(render.record_json(record_at(chunk, int(part[j])), mode), "")
                else:
                    out.write_bytes(data[written:line_end[j]])
                    written = int(line_end[j])
    goto(len(batches) - 1)
    close(len(batches) - 1)


@dataclass(frozen=True, slots=True)
class _Shallow:
    batch: Batch
    records: tuple = ()
    finding: None = None
