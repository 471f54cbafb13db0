"""The shallow walk: a log's batches as :class:`~segtools.decode.table.BatchTable` chunks.

The compiled kernel (:func:`segtools.decode._walk.walk`) reads the headers of a whole window
of batches per call and computes every CRC on the way. This module feeds it windows from a
:class:`~segtools.decode.source.Source`, cuts the result into tables of bounded size, inflates
the few legacy wrappers whose base offset needs it, and turns the kernel's events and stop
codes into findings.

The end of data follows ``FileLogInputStream.nextBatch``: 17 or fewer bytes left, or a batch
whose declared length runs past the end, is a torn tail (a crash, or a copy taken while the
broker wrote); a zero-filled remainder is a preallocated file. Both end the walk quietly in
Kafka; here each is reported once, as a finding at its position. Where Kafka would throw and
give up on the whole file, the walk reports the batch and carries on wherever the length field
still says where the next batch starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT, crc32c
from segtools.decode import _walk, legacy
from segtools.decode.source import Source
from segtools.decode.table import BatchTable, allocate
from segtools.errors import SegtoolsError
from segtools.findings import Finding, finding
from segtools.formats import batch as v2
from segtools.formats import legacy as legacy_spec

#: Rows per table chunk: bounds the memory of a walk over a segment of small batches
#: (about 80 bytes a row: 5 MiB per chunk).
TABLE_ROWS = 65536
def _check_layout() -> None:
    """The compiled walk reads headers at named offsets; they must be the spec's (the construct
    declarations in :mod:`segtools.formats`), checked once at import."""
    header = v2.field_offsets(v2.RecordBatchHeader)
    for name in ("length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "records_count"):
        if _walk.LAYOUT[name] != header[name]:
            raise AssertionError(f"compiled walk reads {name} at {_walk.LAYOUT[name]}, the "
                                 f"spec says {header[name]}")
    entry = v2.field_offsets(legacy_spec.LegacyLogEntry)
    message = v2.field_offsets(legacy_spec.MessageBody)
    base = entry["message"]
    expected = {"legacy_crc": entry["crc"], "legacy_attributes": base + message["attributes"],
                "legacy_timestamp": base + message["timestamp"],
                "v2_overhead": v2.RECORD_BATCH_OVERHEAD}
    for name, at in expected.items():
        if _walk.LAYOUT[name] != at:
            raise AssertionError(f"compiled walk reads {name} at {_walk.LAYOUT[name]}, the "
                                 f"spec says {at}")


_check_layout()


def first_nonzero(buf: np.ndarray, lo: int, hi: int) -> int:
    """Index of the first non-zero byte in ``buf[lo:hi]``, or -1: where a zero-filled tail
    (a preallocated file, a hole) ends, found in compiled code."""
    return _walk.first_nonzero(buf, lo, hi)


#: Bytes of batches per table chunk: a consumer that decodes a chunk's records right after
#: the walk finds its bytes still in the CPU caches.
CHUNK_BYTES = 4 * 1024 * 1024
#: Bytes asked of the source per kernel call. A mapped source hands pages back behind this
#: stride, so a long walk's resident memory stays flat.
WINDOW_BYTES = 64 * 1024 * 1024
#: A v2 batch longer than this is checksummed in windows (pages handed back behind), not in
#: one call: a header may claim 2 GiB, and a sparse file can hold it.
BIG_BATCH = 16 * 1024 * 1024
#: A v2 batch's CRC is left to the reader (``leave_crc``) only from this size on: a small
#: batch's CRC overlaps the reading of the next headers in the walk, and costs more in the
#: record kernel (one-record batches of 200 B: 25 ns a batch more there).
LEAVE_CRC_FROM = 4096
_EVENT_ROWS = 4096
_EVENT_COLUMNS = {"position": np.int64, "code": np.int8, "arg": np.int64, "arg2": np.int64,
                  "arg3": np.int64}


#: ``crc_valid`` of a v2 batch whose CRC the walk left to the reader (``leave_crc``).
CRC_PENDING = _walk.CRC_PENDING


@dataclass(frozen=True, slots=True)
class Walked:
    """One chunk of a walk: the batches found and the findings met, both in file order.
    ``stop`` is where the walk will go on (the end of data after the last chunk). ``left``:
    the rows whose CRC the walk left to the reader (``walk(leave_crc=True)``), whose
    findings are not among ``findings`` until :func:`checked` adds them."""

    table: BatchTable
    findings: tuple[Finding, ...]
    stop: int
    left: np.ndarray | None = None


def _finding(code: str, path: str, message: str, position: int | None,
             offset: int | None = None) -> Finding:
    return finding(code, path, message, position=position, offset=offset)


def truncated_while_reading(path: str, position: int) -> Finding:
    return _finding("segment_truncated_while_reading", path,
                    "the file shrank while it was being read (a follower truncating its log, "
                    "or a copy in progress); the walk stops here", position)


def crc_mismatch(path: str, position: int, magic: int, base_offset: int, last_offset: int,
                 crc: int) -> Finding:
    return _finding("crc_mismatch", path,
                    f"stored CRC {crc} does not match the batch bytes (magic {magic}, offsets "
                    f"{base_offset}..{last_offset})", position, base_offset)


def _event_finding(path: str, position: int, code: int, arg: int, arg2: int,
                   arg3: int) -> Finding:
    if code == _walk.EV_INVALID_MAGIC:
        return _finding("invalid_magic", path,
                        f"magic byte {arg} is not 0, 1 or 2; skipped {arg3} bytes by its "
                        "length field", position, arg2)
    if code == _walk.EV_BATCH_TOO_SMALL:
        return _finding("batch_too_small", path,
                        f"v2 batch of {arg} bytes is smaller than its 61-byte header", position)
    if code == _walk.EV_INVALID_COMPRESSION:
        text = (f"compression id {arg} is not one Kafka defines" if arg3 == 2 else
                f"compression id {arg} is not valid for magic {arg3}")
        return _finding("invalid_compression", path, text, position, arg2)
    return _finding("corrupt_message", path,
                    legacy.corrupt_message_text(arg, arg3), position, arg2)


class _Buffers:
    """Kernel output for one chunk: table columns and events, reused until handed out."""

    def __init__(self, rows: int):
        self.arrays = allocate(rows)
        self.columns = _walk.Columns(self.arrays)
        self.events = {k: np.empty(_EVENT_ROWS, t) for k, t in _EVENT_COLUMNS.items()}
        self.event_view = _walk.Events(self.events)
        self.rows = 0
        self.nev = 0
        self.late: list[tuple[int, int, Finding]] = []  # (position, rank, finding)


def _fix_legacy_wrappers(buffers: _Buffers, first_event: int, data: np.ndarray, base: int,
                         path: str, limit: int) -> None:
    """Inflate each compressed legacy wrapper met in this window to learn its base offset
    (needs the window's bytes, so it runs before the window is replaced)."""
    ev = buffers.events
    for i in np.flatnonzero(ev["code"][first_event:buffers.nev] == _walk.EV_LEGACY_NEEDS_BASE):
        row = int(ev["arg"][first_event + i])
        position = int(buffers.arrays["position"][row])
        size = int(buffers.arrays["size"][row])
        try:
            buffers.arrays["base_offset"][row] = legacy.wrapper_base_offset(
                data, position - base, size, limit=limit)
        except SegtoolsError as e:
            buffers.late.append((position, 2, _finding(
                "corrupt_message", path, e.message, position,
                int(buffers.arrays["last_offset"][row]))))


def _checksum_big_batches(buffers: _Buffers, first_event: int, source: Source) -> int | None:
    """The CRC-32C of each batch the kernel left to us (longer than :data:`BIG_BATCH`), summed
    over source windows with their pages handed back behind. Returns the position of a batch
    the file no longer holds in full (it shrank under the reader), else None."""
    ev = buffers.events
    for i in np.flatnonzero(ev["code"][first_event:buffers.nev] == _walk.EV_CRC_LATER):
        row = int(ev["arg"][first_event + i])
        position = int(buffers.arrays["position"][row])
        end = position + int(buffers.arrays["size"][row])
        crc, pos = 0, position + v2.CRC_COVERAGE_START
        while pos < end:  # fresh windows: the walk's own window must stay intact
            data, base, avail = source.window(pos, min(end, pos + source.stride), keep=True)
            if avail <= pos:
                buffers.rows = row  # the batch is gone: so is everything after it
                return position
            crc = crc32c(data[pos - base:avail - base], crc)
            source.release(avail)
            pos = avail
        buffers.arrays["crc_valid"][row] = crc == int(buffers.arrays["crc"][row])
    return None


def _chunk(buffers: _Buffers, path: str, stop: int, leave: bool = False) -> Walked:
    """Hand out the rows and findings gathered so far (findings merged in file order: a
    batch's CRC finding, then its other findings, as Kafka's reader would meet them)."""
    n = buffers.rows
    table = BatchTable.from_columns(buffers.arrays, n)
    left = np.flatnonzero(table.crc_valid == CRC_PENDING) if leave else None
    items = list(buffers.late)
    ev = buffers.events
    for i in range(buffers.nev):
        code = int(ev["code"][i])
        if code in (_walk.EV_LEGACY_NEEDS_BASE, _walk.EV_CRC_LATER):
            continue
        position = int(ev["position"][i])
        items.append((position, 1, _event_finding(path, position, code, int(ev["arg"][i]),
                                                  int(ev["arg2"][i]), int(ev["arg3"][i]))))
    for i in np.flatnonzero(table.crc_valid == 0):
        items.append((int(table.position[i]), 0, crc_mismatch(
            path, int(table.position[i]), int(table.magic[i]), int(table.base_offset[i]),
            int(table.last_offset[i]), int(table.crc[i]))))
    items.sort(key=lambda item: (item[0], item[1]))
    return Walked(table, tuple(f for _, _, f in items), stop, left)


def check_left(data: np.ndarray, base: int, t: BatchTable) -> int:
    """Check the CRCs left to the reader (``crc_valid`` :data:`CRC_PENDING`) of the batches of
    ``t`` that ``data`` holds whole (``data[0]`` is the byte at file position ``base``);
    returns how many it could not."""
    return _walk.check_left(data, base, t.position, t.size, t.crc, t.crc_valid)


def checked(chunk: Walked, source: Source, path: str = "") -> Walked:
    """``chunk`` with every CRC its walk left to the reader known, and the findings of those
    that do not match among the walk's, where a walk that checked them itself puts them.

    The record kernel checks the CRCs of the batches it decodes (their bytes are then read
    once); the rest (batches no consumer decodes, or decoded another way) are checked here,
    from ``source``. A batch the source no longer holds whole is left unchecked (-1)."""
    left = chunk.left
    if left is None:
        return chunk
    t = chunk.table
    todo = left[t.crc_valid[left] == CRC_PENDING]
    if len(todo):
        lo, hi = int(t.position[todo[0]]), int(t.position[todo[-1]] + t.size[todo[-1]])
        data, base, avail = source.window(lo, hi, keep=True)
        if check_left(data[:max(0, avail - base)], base, t):
            t.crc_valid[t.crc_valid == CRC_PENDING] = -1
    bad = left[t.crc_valid[left] == 0]
    findings = chunk.findings
    if len(bad):
        # a batch's CRC finding comes before anything else found at its position
        items = [(int(t.position[i]), 0, crc_mismatch(
            path, int(t.position[i]), int(t.magic[i]), int(t.base_offset[i]),
            int(t.last_offset[i]), int(t.crc[i]))) for i in bad]
        items += [(f.position, 1, f) for f in findings]
        items.sort(key=lambda item: (item[0], item[1]))
        findings = tuple(f for _, _, f in items)
    return Walked(t, findings, chunk.stop)


def _tail(source: Source, path: str, pos: int, end: int, stop: int,
          data: np.ndarray, base: int, avail: int, growing: bool) -> Finding | None:
    """The finding for why the walk ended before ``end`` (None: it reached it); in a file a
    running broker is appending to (``growing``), a cut last batch is an append in flight."""
    remaining = end - pos
    if stop == _walk.STOP_END:
        return None
    if stop == _walk.STOP_SHORT_TAIL:
        if source.zero_from(pos, end) is None:
            return _finding("zero_filled_tail", path,
                            f"{remaining} zero bytes after the last batch", pos)
        if growing:
            return _in_flight(path, pos, remaining, None)
        return _finding("truncated_tail", path,
                        f"{remaining} bytes after the last batch are too few for a batch "
                        "header", pos)
    prefix = data[pos - base:pos - base + v2.LOG_OVERHEAD]
    base_offset = int(prefix[:8].view(">i8")[0])
    length = int(prefix[8:12].view(">i4")[0])
    if stop == _walk.STOP_BAD_LENGTH:
        if source.zero_from(pos, end) is None:
            return _finding("zero_filled_tail", path,
                            f"{remaining} zero bytes after the last batch (preallocated "
                            "segment or crash before the data was written)", pos)
        return _finding("corrupt_batch_length", path,
                        f"batch length {length} is below the minimum {v2.MIN_LENGTH}; the "
                        "framing is lost from here", pos, base_offset)
    if stop == _walk.STOP_TORN:
        if growing:
            return _in_flight(path, pos, remaining, base_offset)
        return _finding("truncated_tail", path,
                        f"last batch declares {v2.LOG_OVERHEAD + length} bytes but only "
                        f"{remaining} remain (torn write or partial copy)", pos, base_offset)
    return None


def _in_flight(path: str, position: int, remaining: int, base_offset: int | None) -> Finding:
    """A running broker's append that the size seen at open cut: Kafka's own reader of a log
    (``FileLogInputStream.nextBatch``) ends the data before a batch it does not hold whole,
    and so does a fetch; the next read sees the batch whole."""
    return _finding("append_in_flight", path,
                    f"the last {remaining} bytes are a batch the broker is still writing; the "
                    "data ends before it, as a fetch's does", position, base_offset)


def walk(source: Source, start: int = 0, end: int | None = None, *, until: int | None = None,
         path: str = "", verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT,
         rows: int = TABLE_ROWS, chunk_bytes: int = CHUNK_BYTES,
         leave_crc: bool = False, growing: bool = False) -> Iterator[Walked]:
    """The batches of ``source`` from byte ``start``, as table chunks of at most ``rows`` rows
    and about ``chunk_bytes`` bytes of batches.

    Data ends at ``end`` (default: the size seen at open); ``until`` stops the walk before the
    first batch that starts at or after it (a Spark task's byte range). The last chunk carries
    the finding for how the data ended, if it ended early.

    ``leave_crc`` (with ``verify_crc``): v2 batches of :data:`LEAVE_CRC_FROM` bytes or more
    are not checked here but left to the reader that decodes their records next
    (``crc_valid`` :data:`CRC_PENDING`, the rows in :attr:`Walked.left`), which then passes
    each chunk through :func:`checked`. A batch's bytes are then read from memory once
    instead of twice.

    ``growing``: a running broker is appending to the file (its active segment), so a last
    batch cut short at the size seen at open is an append in flight, not a torn write.
    """
    end = source.size if end is None else min(end, source.size)
    until = end if until is None else min(until, end)
    leave = bool(verify_crc and leave_crc)
    mode = _walk.CRC_LEAVE if leave else int(bool(verify_crc))
    capacity = max(1, min(rows, (min(end - start, chunk_bytes)) // 26 + 1))
    buffers = _Buffers(capacity)
    pos = chunk_start = start
    # a source that copies windows into private memory ends a chunk with each window, so that
    # decoding the chunk's records right after reuses those bytes instead of reading them again;
    # its windows then grow with the chunks asked for, up to its ``chunk_stride``
    per_window = getattr(source, "chunk_per_window", False)
    widest = min(chunk_bytes, getattr(source, "chunk_stride", 0)) if per_window else 0
    stride = max(source.stride, widest, v2.RECORD_BATCH_OVERHEAD)  # a header at least
    want = stride
    released = start
    data, base, avail, hi = None, 0, 0, 0
    while True:
        if data is None:
            hi = min(end, pos + want)
            data, base, avail = source.window(pos, hi)
        first_event = buffers.nev
        chunk_until = min(until, chunk_start + chunk_bytes)
        n, nev, stop_pos, stop = _walk.walk(data, base, pos, chunk_until, end, avail,
                                            mode, BIG_BATCH, buffers.columns,
                                            buffers.rows, buffers.event_view, buffers.nev,
                                            LEAVE_CRC_FROM)
        buffers.rows, buffers.nev = n, nev
        _fix_legacy_wrappers(buffers, first_event, data, base, path, limit)
        shrank = _checksum_big_batches(buffers, first_event, source)
        pos = stop_pos
        if shrank is not None:
            buffers.late.append((shrank, 3, truncated_while_reading(path, shrank)))
            yield _chunk(buffers, path, shrank, leave)
            return
        if stop in (_walk.STOP_FULL, _walk.STOP_EVENTS_FULL) or (
                stop == _walk.STOP_END and pos < until):  # a chunk is full: hand it out
            yield _chunk(buffers, path, pos, leave)
            buffers = _Buffers(capacity)
            chunk_start = pos
            continue
        if stop == _walk.STOP_WINDOW:
            if avail < hi:  # the file shrank under us: what it held is all there is
                buffers.late.append((pos, 3, truncated_while_reading(path, pos)))
                yield _chunk(buffers, path, pos, leave)
                return
            if per_window and buffers.rows:  # a chunk's batches all lie in the window in hand
                yield _chunk(buffers, path, pos, leave)
                buffers = _Buffers(capacity)
                chunk_start = pos
            want = _next_window(data, base, pos, avail, end, stride)
            data = None
            if chunk_start - released >= WINDOW_BYTES:
                # only up to the chunk not yet handed out: its records are decoded after it
                # is, and pages dropped before that would be faulted back in and kept
                source.release(chunk_start)
                released = chunk_start
            continue
        tail = _tail(source, path, pos, end, stop, data, base, avail, growing)
        if tail is not None:
            buffers.late.append((pos, 3, tail))
        yield _chunk(buffers, path, pos, leave)
        return


def _next_window(data: np.ndarray, base: int, pos: int, avail: int, end: int,
                 stride: int) -> int:
    """Bytes to ask for next: the source's stride, or the whole next batch when it is longer
    (a v2 batch past :data:`BIG_BATCH` only needs its header: its CRC is summed in windows)."""
    if pos + v2.HEADER_SIZE_UP_TO_MAGIC <= avail:
        length = int(data[pos - base + 8:pos - base + 12].view(">i4")[0])
        size = v2.LOG_OVERHEAD + length
        if data[pos - base + 16] == 2 and size > BIG_BATCH:
            return max(stride, v2.RECORD_BATCH_OVERHEAD)
        return max(stride, min(size, end - pos))
    return stride


def table(source: Source, start: int = 0, end: int | None = None, **kw
          ) -> tuple[BatchTable, tuple[Finding, ...]]:
    """The whole walk as one table (for callers that want every row at once)."""
    tables, findings = [], []
    for chunk in walk(source, start, end, **kw):
        tables.append(chunk.table)
        findings.extend(chunk.findings)
    return BatchTable.concat(tables), tuple(findings)


#: Rows a small segment's table is first walked into. A broker's small segments hold a few
#: to a few tens of batches: a table this small is kept as the kernel filled it (the rows left
#: over cost little), where one sized for the file's bytes (a row per 61 bytes) was then cut
#: and copied column by column; a segment of more batches is walked again at that size.
FIRST_ROWS = 64


def whole_table(data: bytes, *, verify_crc: bool = True) -> BatchTable | None:
    """The batch table of a segment held whole in memory (a small file read in one call), or
    None when its walk would have anything to say (an event, a torn or zero tail, a CRC
    mismatch, a compressed legacy wrapper): :func:`walk` then reads it and names it. For a
    broker's many small segments the kernel is most of the work here, not a generator's
    per-window bookkeeping; a clean segment's table is the one :func:`walk` gives."""
    # room for v2 batches (61 bytes at least): a log of smaller v0/v1 messages fills it and
    # takes the ordinary walk
    most = max(1, min(TABLE_ROWS, len(data) // v2.RECORD_BATCH_OVERHEAD + 1))
    if most > FIRST_ROWS:
        arrays, rows, stop = _walk_whole(data, FIRST_ROWS, verify_crc)
        if stop == _walk.STOP_END:
            return _clean(BatchTable(**{name: column[:rows] for name, column in arrays.items()}),
                          verify_crc)
        if stop != _walk.STOP_FULL:
            return None
    arrays, rows, stop = _walk_whole(data, most, verify_crc)
    if stop != _walk.STOP_END:
        return None
    return _clean(BatchTable.from_columns(arrays, rows), verify_crc)


def _walk_whole(data: bytes, capacity: int, verify_crc: bool
                ) -> tuple[dict[str, np.ndarray], int, int]:
    """The kernel over all of ``data`` into a table of ``capacity`` rows, with room for the
    first event only (which already says "walk"): the columns, the rows written and why it
    stopped (an event stops it as the table's end does not: ``STOP_EVENTS_FULL``)."""
    n = len(data)
    arrays = allocate(capacity)
    events = {k: np.empty(3, t) for k, t in _EVENT_COLUMNS.items()}
    rows, nev, _, stop = _walk.walk(data, 0, 0, n, n, n, verify_crc, BIG_BATCH,
                                    _walk.Columns(arrays), 0, _walk.Events(events), 0)
    return arrays, rows, _walk.STOP_EVENTS_FULL if nev else stop


def _clean(table: BatchTable, verify_crc: bool) -> BatchTable | None:
    """``table``, unless a CRC it checked did not match."""
    if verify_crc and (table.crc_valid == 0).any():
        return None
    return table
