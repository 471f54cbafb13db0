"""Reading planned byte ranges into Arrow record batches, at any of the three levels.

The walk and the decode are the CLI's (:class:`segtools.storage.segment.Segment`): the
compiled batch table for headers, the record kernel's columns for records. What this module
adds is the consumer's view of them: which batches a range owns, which a consumer would see
(control batches, aborted transactions), which rows fall inside the offset bounds, and how a
corrupt batch shows up (a row flagged ``crc_valid=false``, and a finding handed to the
caller's ``report``, which may log it or raise).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import lazy_loader
import numpy as np
import pyarrow as pa

from segtools import fanout
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import chunks, walk
from segtools.decode.buffers import BufferPool, aligned
from segtools.decode.chunks import ArrowColumns, Chunk, Layout, view_lengths
from segtools.decode.source import Source
from segtools.decode.table import CODEC_LABELS, BatchTable, codec_label
from segtools.errors import SegtoolsError, VanishedError
from segtools.fetch import arrow
from segtools.fetch.columns import PER_RECORD, Level
from segtools.fetch.plan import ByteRange
from segtools.findings import Finding, finding
from segtools.formats import batch as v2
from segtools.storage.partition import CLUSTER_METADATA_TOPIC, SegmentFiles
from segtools.storage.segment import Segment, unreadable
from segtools.storage.source import WINDOW_SLACK
from segtools.storage.summary import SegmentSummary, summarize

#: The transactions analysis (with the coordinator's log and the producer-state fold behind
#: it: 20-50 ms of a command's start) loads for a ``read_committed`` read only.
transactions = lazy_loader.load("segtools.analysis.transactions", suppress_warning=True)
#: The metadata log's record reader (secrets hidden) loads only when __cluster_metadata is read.
cluster_metadata = lazy_loader.load("segtools.analysis.cluster_metadata", suppress_warning=True)

#: The read goes up to the end of the files: no last-stable-offset cut (a consumer at the
#: log end would stop at the LSO; a read of files has no "now" to stop at).
_NO_LSO = 2**63 - 1
#: Bytes of batches walked per table chunk, decoded per kernel call: one Arrow batch of up to
#: the walk's 65,536 batches, 140k records of 100 B. Four times the walk's own default (4 MiB,
#: sized for the CPU caches): the Python work per Arrow batch (about twenty columns) then
#: costs a quarter as much per record, and the record kernel does not lose by it.
WALK_BYTES = 16 * 1024 * 1024
#: Bytes of batches per Arrow batch at most: a walk chunk (16 MiB, or 65,536 batches) is one.
WINDOW_BYTES = 2 * WALK_BYTES
#: Bytes of a mapping's pages the reader maps per step while it waits for the walk (about
#: 0.2 ms: the walk's next chunk is rarely kept waiting for it).
PREFAULT_STEP = 2 * 1024 * 1024
#: Bytes of the blocks record columns are cut from (recycled once a batch is let go).
ARROW_BLOCK = 8 * 1024 * 1024
#: A ``pread`` window's buffer: one walk chunk (the window grows to the chunk,
#: ``storage.source.PREAD_CHUNK_STRIDE``). Inline, the window being read and the one the
#: consumer's last Arrow batch points into are in use at once; with the walk ahead on its
#: own thread, up to six (the next window, copied ahead by the reader, among them). The
#: pool keeps four: the others come from Arrow's allocator, which keeps them for the next.
#: A window is read into its buffer up to a page in (its file position's place in a page:
#: ``storage.source.phase``), with room in front when it was copied ahead
#: (``storage.source.COPY_AHEAD_ROOM``).
WINDOW_BUFFER = WALK_BYTES + WINDOW_SLACK
WINDOW_BUFFERS = 4
#: Walked chunks waiting for the reader when the walk runs on a thread of its own.
WALK_AHEAD = 1

Report = Callable[[Finding], None]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Scan:
    """What one read builds: the level, the columns (canonical names) and their schema, and
    the consumer's rules."""

    level: Level
    columns: tuple[str, ...]
    schema: pa.Schema
    include_control: bool = False
    read_committed: bool = False
    verify_crc: bool = True
    check_crc: bool = False  # a corrupt batch fails the read: CRCs must be checked
    max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT
    reveal_sensitive: bool = False  # __cluster_metadata values as stored (Selection's)

    @property
    def walk_crc(self) -> bool:
        """Check CRCs when the answer depends on them: the ``crc_valid`` column, a read that
        fails on corruption, or a shallow read that trusts ``count`` only of intact batches."""
        return self.verify_crc and ("crc_valid" in self.columns or self.check_crc
                                    or not self.deep)

    @property
    def deep(self) -> bool:
        """Whether any requested column differs between the records of one batch."""
        return bool(PER_RECORD.intersection(self.columns))

    def target(self, i: int) -> pa.DataType:
        return self.schema.field(i).type

    def batch(self, arrays: list[pa.Array]) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


@dataclass(frozen=True, slots=True)
class ReadBuffers:
    """The buffers a read of records writes into: the blocks its columns are cut from (one
    pool for the reader's thread, one for the records decoded beside the walk) and the
    buffers of ``pread`` windows (a live segment, or any under a restored page cache).

    A dataset keeps one across its reads (``segtools.open(...).to_arrow()`` called again),
    so a read writes into pages mapped by the one before instead of fresh ones: on 256 MiB
    of 500 x 100 B batches read under a running broker, fresh column blocks were about a
    tenth of the call's CPU. A buffer is handed out again only when nothing else refers to
    it (:class:`BufferPool`), so an Arrow batch a consumer holds from an earlier read keeps
    its blocks and window out of reuse for as long as it lives; two reads of one dataset
    at once each take buffers the other does not hold. Each pool is bounded: what a
    dataset keeps between reads is what one read held at once, at most (up to eight
    blocks each, of one to four times ``ARROW_BLOCK``, and four windows)."""

    blocks: BufferPool
    ahead: BufferPool
    windows: BufferPool

    @classmethod
    def new(cls, blocks: Callable[[int], np.ndarray] | None = None) -> ReadBuffers:
        """``blocks`` makes the column blocks (fresh anonymous mappings by default, handed
        back to the system once the pool lets go of them). The windows' come from Arrow's
        allocator, which keeps one let go for the next."""
        make = aligned if blocks is None else blocks
        return cls(BufferPool(ARROW_BLOCK, allocate=make), BufferPool(ARROW_BLOCK, allocate=make),
                   BufferPool(WINDOW_BUFFER, size=WINDOW_BUFFERS, allocate=arrow.memory))

    def clear(self) -> None:
        """Let go of every buffer kept (those still held elsewhere live on there)."""
        for pool in (self.blocks, self.ahead, self.windows):
            pool.clear()


def read(pieces: Iterable[ByteRange], scan: Scan, report: Report,
         blocks: Callable[[int], np.ndarray] = aligned,
         buffers: ReadBuffers | None = None) -> Iterator[pa.RecordBatch]:
    """All Arrow batches of the given ranges, in order.

    ``buffers``: those of the reads before (a dataset's: :class:`ReadBuffers`); else new
    ones, whose column blocks ``blocks`` makes: fresh anonymous mappings by default, handed
    back to the system as soon as the read lets go of them, so that a long stream's peak
    memory stays flat. A process that runs one short read after another (a Spark worker, a
    task at a time) passes :func:`arrow.heap` instead: each read's pool is new, and fresh
    pages cost it more than the copying into them (see ``heap``)."""
    if scan.level is Level.SEGMENTS:
        yield from _segment_rows(list(pieces), scan, report)
        return
    if buffers is None:
        buffers = ReadBuffers.new(blocks)
    pieces = list(pieces)
    for i, piece in enumerate(pieces):
        segment = _open(piece, scan, buffers.windows, _walked_next(pieces, i))
        if isinstance(segment, Finding):
            report(segment)
            continue
        with segment:
            if scan.level is Level.BATCHES:
                yield from _batch_rows(segment, piece, scan, report)
            else:
                yield from _record_rows(segment, piece, scan, report, buffers.blocks,
                                        buffers.ahead)


def _walked_next(pieces: list[ByteRange], i: int) -> SegmentFiles | None:
    """The segment read after piece ``i``, when the read walks it from its start (a cold
    segment's reads ahead then run on into it: :meth:`Segment.open`'s ``following``)."""
    if i + 1 >= len(pieces):
        return None
    nxt = pieces[i + 1]
    return nxt.files if nxt.start == 0 and nxt.files.log != pieces[i].files.log else None


def _open(piece: ByteRange, scan: Scan, windows: BufferPool | None = None,
          following: SegmentFiles | None = None) -> Segment | Finding:
    """The segment, or the finding that says why it cannot be read: gone since planning (a
    live broker deletes segments between planning and reading: retention, a cleaner's swap),
    or unreadable (mode 000, an I/O error). Either way the other ranges are read."""
    try:
        return Segment.open(piece.files, decompress_limit=scan.max_decompressed_bytes,
                            windows=windows, following=following)
    except VanishedError:
        return _vanished(piece)
    except SegtoolsError as e:
        return unreadable(str(piece.files.log), e)
    except OSError as e:
        return unreadable(str(piece.files.log), SegtoolsError(e.strerror or str(e)))


def _vanished(piece: ByteRange) -> Finding:
    return finding("segment_vanished", str(piece.files.log),
                   "segment deleted since the read was planned (retention, or a cleaner's "
                   "swap); its rows are missing from the result")


# -------------------------------------------------------------------------- the walk


def _boundary_ok(segment: Segment, piece: ByteRange) -> bool:
    """The cut came from the offset index (or a batch table): check that a batch starts
    there and that it does not begin after the indexed offset (the entry names the append's
    last offset)."""
    first, _ = segment.table(piece.start, until=piece.start + 1, verify_crc=False)
    if not len(first) or first.position[0] != piece.start:
        return False
    return piece.start_offset_hint is None or int(first.base_offset[0]) <= \
        piece.start_offset_hint


def owned(segment: Segment, piece: ByteRange, verify_crc: bool, report: Report,
          reader: _Records | None = None) -> Iterator[object]:
    """The batches whose position lies in ``[start, end)``, a table chunk at a time; the
    findings met there go to ``report``.

    A range starts where the offset index said a batch starts; if the bytes there are not a
    batch (an index that lies), the walk starts at byte 0 instead and skips what precedes the
    range, so ownership stays exact: the previous range, walking on from its own start, owns
    any batch that straddles the cut.

    A mapped segment is walked on a thread of its own, a chunk ahead of the reader
    (``fanout.ahead``), which meanwhile looks after the mapping's pages (:class:`_Pages`).
    With a ``reader`` (:class:`_Records`), what is yielded for each chunk is what the reader
    makes of it: it starts beside the walk (on the walk's thread, when it has one) and ends
    here, and its CRC findings join the walk's before they are reported."""
    start = piece.start
    if start > 0 and not _boundary_ok(segment, piece):
        start = 0
    threaded = (getattr(segment.source, "shared_windows", False)
                and piece.end - start > WALK_BYTES and fanout.workers() > 1)
    if threaded:  # the queue holds one walked chunk, the walk reads the next
        segment.source.walk_ahead(WALK_AHEAD + 2)
    source = _KeepPages(segment.source) if threaded else segment.source
    chunks_walked = walk.walk(source, start, until=piece.end, path=segment.path,
                              verify_crc=verify_crc, limit=segment.decompress_limit,
                              chunk_bytes=WALK_BYTES,
                              leave_crc=reader is not None and reader.leave_crc,
                              growing=segment.growing)
    share = _Share() if threaded and reader is not None else None
    walked = _planned(chunks_walked, piece, start, reader, share)
    pages = _Pages(segment.source, start, piece.end)
    if threaded:
        walked = fanout.ahead(walked, depth=WALK_AHEAD, name="segtools-walk-ahead",
                              idle=pages)
    try:
        while True:
            asked = time.perf_counter()
            try:
                chunk, out = next(walked)
            except StopIteration:
                return
            if share is not None:
                share.waited(time.perf_counter() - asked)
            if reader is not None:
                chunk, out = reader.finish(chunk, out)
            if threaded and len(chunk.table):  # every chunk before this one is done with
                pages.walked(int(chunk.table.position[0]), chunk.stop)
            for f in chunk.findings:
                position = piece.start if f.position is None else f.position
                if piece.start <= position < piece.end:
                    report(f)
            yield out
    finally:
        walked.close()


def _planned(chunks_walked: Iterator[walk.Walked], piece: ByteRange, start: int,
             reader: _Records | None, share: _Share | None) -> Iterator[tuple[walk.Walked, object]]:
    """Each chunk, its table without the batches before the range (a walk that had to start
    at byte 0), started on by the ``reader`` when there is one (its ``share`` of the decode,
    when the reader has a thread of its own)."""
    first = True
    try:
        for chunk in chunks_walked:
            t = chunk.table
            if start < piece.start and len(t) and t.position[0] < piece.start:
                t = t.take(t.position >= piece.start)
            if reader is None:
                yield chunk, t
            else:  # the reader decodes the first chunk whole: it has nothing else to do yet
                yield chunk, reader.plan(chunk, t, share.fraction if share and not first
                                         else 0.0)
            first = False
    finally:
        chunks_walked.close()


class _Share:
    """How much of each chunk's decode the walk's thread does before it hands the chunk
    over (the reader does the rest, and builds the Arrow batches): the share of the chunk's
    bytes whose records, and CRCs, it decodes and checks.

    Mapping pages, checking CRCs and decoding records may run on either thread, so the two
    are kept busy alike by moving that share: whenever the reader found the next chunk not
    ready it takes more of the decode, else the walk's thread does. Which thread decodes a
    batch changes no result: the steps of one chunk's decode follow each other."""

    #: Waiting longer than this for a chunk counts as having waited (a thread's wake-up
    #: takes about a tenth of it).
    WAITED = 0.0005
    STEP = 0.1

    def __init__(self) -> None:
        self.fraction = 0.5

    def waited(self, seconds: float) -> None:
        """On the reader's thread: it waited ``seconds`` for the chunk it now holds."""
        if seconds > self.WAITED:
            self.fraction = max(0.0, self.fraction - self.STEP)
        else:
            self.fraction = min(1.0, self.fraction + self.STEP)


class _KeepPages:
    """A mapped source whose pages the walk never hands back: walking ahead on its own
    thread, it would drop those of the chunk the reader decodes, which would then be faulted
    in again and kept. The reader hands them back itself (:class:`_Pages`)."""

    def __init__(self, source: Source):
        self._source = source

    def __getattr__(self, name: str) -> object:
        return getattr(self._source, name)

    def release(self, upto: int) -> None:
        return None


class _Pages:
    """A mapped segment's pages, looked after by the reader while it waits for the walk
    (``fanout.ahead``'s ``idle``), a step at a time: those behind the chunk it holds handed
    back, those of the chunk after the one being walked mapped. Mapping pages costs about as
    much as a CRC-32C of them from memory and dropping them half as much (0.020 and 0.010 s
    per 256 MiB); on the walk's thread, dropping 64 MiB at once kept the reader waiting for
    2.6 ms. Never more than two chunks ahead of what the reader holds, never more than two
    behind, so memory stays flat whichever thread is the slower. A source read through
    ``pread`` windows has no pages to map: the reader copies the walk's next window ahead
    instead (its ``copy_ahead``), the walk's thread's main cost there."""

    def __init__(self, source: Source, start: int, end: int):
        self._source = source
        self._prefault = getattr(source, "prefault", None)
        self._copy_ahead = getattr(source, "copy_ahead", None)
        self._end = end
        self._next = start + WALK_BYTES  # the walk is faulting in its first chunk itself
        self._limit = min(end, start + 2 * WALK_BYTES)
        self._done = self._released = start

    def walked(self, start: int, stop: int) -> None:
        """The reader holds a chunk from ``start`` to ``stop``: it is done with the bytes
        before ``start``, and the walk is past ``stop``."""
        self._done = max(self._done, start)
        self._next = max(self._next, stop + WALK_BYTES)
        self._limit = min(self._end, stop + 2 * WALK_BYTES)
        if self._done - self._released > 2 * WALK_BYTES:  # the reader never waits: now
            self._release(self._done)

    def _release(self, upto: int) -> None:
        self._source.release(upto)
        self._released = upto

    def __call__(self) -> bool:
        if self._done - self._released >= PREFAULT_STEP:
            self._release(min(self._done, self._released + 4 * PREFAULT_STEP))
            return True
        if self._copy_ahead is not None:
            return self._copy_ahead()
        if self._prefault is None or self._next >= self._limit:
            return False
        hi = min(self._limit, self._next + PREFAULT_STEP)
        self._prefault(self._next, hi)
        self._next = hi
        return True


class _Visibility:
    """Which batches a consumer would see: Kafka's fetch-side rules, for a table at once."""

    def __init__(self, piece: ByteRange, scan: Scan):
        self.piece = piece
        self.control = scan.include_control or scan.level is Level.BATCHES
        self.committed = (transactions.ReadCommitted(piece.aborted, last_stable_offset=_NO_LSO)
                          if scan.read_committed and piece.aborted else None)

    def _bounded(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Batches with ``last`` at or above the lower offset bound and ``first`` below the
        upper one: (base, last) asks for an overlap, (last, base) for lying wholly inside."""
        p = self.piece
        ok = np.ones(len(first), bool)
        if p.min_offset is not None:
            ok &= last >= p.min_offset
        if p.max_offset is not None:
            ok &= first < p.max_offset
        return ok

    def keep(self, t: BatchTable) -> np.ndarray:
        keep = self._bounded(t.base_offset, t.last_offset)
        if self.piece.min_timestamp is not None:
            keep &= t.max_timestamp >= self.piece.min_timestamp
        if not self.control:
            keep &= ~t.is_control
        if self.committed is not None:  # CompletedFetch: aborted transactional data skipped
            aborted = ~self.committed.keep_mask(t, stop_at_lso=False) & ~t.is_control
            keep &= ~aborted
        return keep

    def whole(self, t: BatchTable) -> np.ndarray:
        """Every record of the batch lies inside the offset bounds."""
        return self._bounded(t.last_offset, t.base_offset)


def _windows(t: BatchTable, visible: _Visibility) -> Iterator[BatchTable]:
    """The visible batches of a chunk, in tables of about ``WINDOW_BYTES`` of batches."""
    keep = visible.keep(t)
    if not keep.all():
        t = t.take(keep)
    if not len(t):
        return
    ends = np.cumsum(t.size)
    lo = 0
    while lo < len(t):
        hi = max(lo + 1, int(np.searchsorted(ends, (ends[lo - 1] if lo else 0)
                                              + WINDOW_BYTES, side="right")))
        yield t.take(slice(lo, hi))
        lo = hi


def _visible_tables(segment: Segment, piece: ByteRange, scan: Scan, visible: _Visibility,
                    report: Report) -> Iterator[BatchTable]:
    """The visible batches of a range, in tables of about ``WINDOW_BYTES`` of batches."""
    for t in owned(segment, piece, scan.walk_crc, report):
        yield from _windows(t, visible)


# ----------------------------------------------------------------- batch-level columns


def _labels(codecs: np.ndarray) -> np.ndarray:
    names = np.array(list(CODEC_LABELS) + [codec_label(i) for i in range(5, 8)], dtype=object)
    return names[codecs]


def _batch_values(t: BatchTable, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """One batch-level field for every row of ``t``: values, and validity (None: no nulls)."""
    if name == "position":
        return t.position, None
    if name == "producer_id":
        return t.producer_id, None
    if name == "producer_epoch":
        return t.producer_epoch.astype(np.int32), None
    if name == "leader_epoch":
        return t.leader_epoch, None
    if name == "is_transactional":
        return t.is_transactional, None
    if name == "is_control":
        return t.is_control, None
    if name == "compression":
        return _labels(t.codec), None
    if name == "crc_valid":
        return t.crc_valid == 1, t.crc_valid >= 0
    if name == "magic":
        return t.magic.astype(np.int32), None
    if name == "timestampType":
        return t.timestamp_type_id.astype(np.int32), None
    if name in ("batch_base_offset", "base_offset"):
        return t.base_offset, None
    if name in ("batch_last_offset", "last_offset"):
        return t.last_offset, None
    if name in ("batch_size", "size"):
        return t.size.astype(np.int32), None
    if name in ("batch_count", "count"):
        return t.count, t.magic == 2
    if name == "crc":
        return t.crc.astype(np.int64), None
    if name == "base_sequence":
        return t.base_sequence, None
    if name == "last_sequence":
        return t.last_sequence.astype(np.int32), None
    raise KeyError(name)


#: Batch fields shown as timestamps (epoch ms in the header; -1 shows as null).
def _batch_times(t: BatchTable, name: str) -> np.ndarray | None:
    if name == "base_timestamp":
        return np.where(t.is_v2 & ~t.has_delete_horizon, t.base_timestamp, -1)
    if name in ("max_timestamp", "batch_max_timestamp"):
        return t.max_timestamp
    if name == "delete_horizon":
        return np.where(t.has_delete_horizon, t.base_timestamp, -1)
    return None


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _constants(piece: ByteRange) -> dict[str, object]:
    info = piece.partition
    return {"topic": info.topic, "partition": info.partition, "log_dir": info.log_dir,
            "segment_base_offset": piece.files.base_offset, "tier": piece.tier}


#: The table columns each batch-level field is derived from (fields that are never null).
_DERIVED_FROM = {
    "producer_id": ("producer_id",), "producer_epoch": ("producer_epoch",),
    "leader_epoch": ("leader_epoch",), "crc_valid": ("crc_valid",),
    "is_transactional": ("magic", "attributes"), "is_control": ("magic", "attributes"),
    "compression": ("attributes",), "magic": ("magic",),
    "timestampType": ("magic", "attributes"),
}


class _Constant:
    """Which of a table's columns hold one value in every row (each checked once), and the
    table's first row, from which the fields derived from such columns are read."""

    def __init__(self, t: BatchTable):
        self.t = t
        self.known: dict[str, bool] = {}

    @functools.cached_property
    def first(self) -> BatchTable:
        """Taken once per chunk: a table's row is a copy of each of its columns, and a chunk
        of records has about ten fields whose value is the same for every batch."""
        return self.t.take(slice(0, 1))

    def __call__(self, column: str) -> bool:
        same = self.known.get(column)
        if same is None:
            a = getattr(self.t, column)
            same = self.known[column] = bool(len(a) and np.all(a == a[0]))
        return same


def _per_batch(t: BatchTable, expand: Callable[[np.ndarray], np.ndarray], n: int, name: str,
               target: pa.DataType, constant: _Constant | None = None) -> pa.Array:
    """A batch-level field for ``n`` rows; ``expand`` maps a value per batch to one per row.
    A field derived from columns that hold one value throughout is that value, repeated:
    worked out from the first batch alone."""
    sources = _DERIVED_FROM.get(name)
    if constant is not None and sources and all(constant(c) for c in sources):
        values, valid = _batch_values(constant.first, name)
        first = None if valid is not None and not valid[0] else values[0]
        return arrow.repeated(first.item() if hasattr(first, "item") else first, n, target)
    times = _batch_times(t, name)
    if times is not None:
        return arrow.timestamps_ms(expand(times))
    values, valid = _batch_values(t, name)
    return arrow.per_batch(values, expand, n, target, valid)


# ------------------------------------------------------------------------- records


#: What a chunk's records are made of, in order (:class:`_Records`).
_SHALLOW, _DECODED, _DEEP, _STEPS, _PLAIN = range(5)


def _record_rows(segment: Segment, piece: ByteRange, scan: Scan, report: Report,
                 pool: BufferPool, ahead: BufferPool) -> Iterator[pa.RecordBatch]:
    """``pool``: blocks for the columns built here; ``ahead``: for those decoded beside the
    walk (each pool is used by one thread)."""
    reader = _Records(segment, piece, scan, ahead, pool)
    layout = Layout(arrow=True, headers="headers" in scan.columns, pool=pool)
    for parts in owned(segment, piece, scan.walk_crc, report, reader):
        for kind, part in parts:
            if kind == _SHALLOW:
                yield _shallow_records(part, piece, scan)
                continue
            decoded = part if kind == _DECODED else chunks.decode(
                segment.source, part, path=segment.path, limit=segment.decompress_limit,
                layout=layout)
            for chunk in decoded:
                yield from _chunk_records(chunk, piece, scan, report, pool)


class _Records:
    """What a walked chunk's records are made of: the batches whose rows are their header's
    (a shallow read of intact v2 batches), and the rest, decoded before the chunk's findings
    are reported when they are uncompressed v2 batches, else when the reader gets to them (a
    compressed run is inflated a buffer at a time).

    :meth:`plan` runs beside the walk (on its thread, when it has one) and may decode the
    first part of a run of uncompressed batches there (:class:`chunks.PlainDecode`);
    :meth:`finish` runs on the reader's thread and decodes the rest.

    The walk leaves the CRC of each large v2 batch to the record kernel, which checks it
    just before it decodes the batch's records (``walk.LEAVE_CRC_FROM``). The CRCs of
    batches not decoded are checked after (:func:`walk.checked`), so every CRC is known, and
    every finding in its place, before the chunk's findings are reported."""

    def __init__(self, segment: Segment, piece: ByteRange, scan: Scan, ahead: BufferPool,
                 pool: BufferPool):
        self.segment = segment
        self.scan = scan
        self.visible = _Visibility(piece, scan)
        self.leave_crc = scan.deep and scan.walk_crc
        headers = "headers" in scan.columns
        # blocks for the columns decoded beside the walk, and for those decoded here
        self.ahead = Layout(arrow=True, headers=headers, pool=ahead, crc=self.leave_crc)
        self.here = Layout(arrow=True, headers=headers, pool=pool, crc=self.leave_crc)

    def plan(self, chunk: walk.Walked, t: BatchTable, share: float) -> list:
        """The parts of the chunk's records, the first ``share`` of its uncompressed
        batches' bytes decoded."""
        segment, scan = self.segment, self.scan
        parts: list[tuple[int, object]] = []
        for window in _windows(t, self.visible):
            deep = window
            if not scan.deep:  # only batch-level columns: a v2 batch with a good CRC has `count`
                shallow = window.is_v2 & (window.crc_valid == 1) & self.visible.whole(window)
                if shallow.any():
                    parts.append((_SHALLOW, window.take(shallow)))
                    deep = window.take(~shallow)
            if not len(deep):
                continue
            if not _plain(deep, segment.decompress_limit):
                parts.append((_DEEP, deep))
                continue
            steps = chunks.PlainDecode.of(segment.source, deep, segment.path,
                                          segment.decompress_limit, self.ahead)
            if steps is None:
                parts.append((_PLAIN, deep))
                continue
            if share > 0:
                ends = np.cumsum(deep.size)
                steps.step.run(int(np.searchsorted(ends, share * int(ends[-1]), side="right")))
            parts.append((_STEPS, steps))
        return parts

    def finish(self, chunk: walk.Walked, parts: list) -> tuple[walk.Walked, list]:
        """On the reader's thread: the uncompressed batches decoded, every CRC checked."""
        segment = self.segment
        left = chunk.left is not None
        done: list[tuple[int, object]] = []
        for kind, part in parts:
            if kind in (_STEPS, _PLAIN):
                if kind == _STEPS:
                    decoded, table = [part.chunk()], part.step.table
                else:
                    decoded, table = list(chunks.decode(
                        segment.source, part, path=segment.path,
                        limit=segment.decompress_limit, layout=self.here)), part
                if left:
                    _copy_checks(table, chunk.table)
                done.append((_DECODED, decoded))
            else:
                done.append((kind, part))
        chunk = walk.checked(chunk, segment.source, segment.path)
        if left:
            for kind, part in done:
                if kind == _DEEP:
                    _copy_checks(chunk.table, part)
        return chunk, done


def _copy_checks(src: BatchTable, dst: BatchTable) -> None:
    """``src``'s CRC checks into the same batches of ``dst`` (a table of some of its rows, or
    the table it is some rows of), unless the two share them already (one is a slice of the
    other): a table taken by a mask is a copy."""
    if np.may_share_memory(src.crc_valid, dst.crc_valid):
        return
    if len(src) <= len(dst):
        dst.crc_valid[np.searchsorted(dst.position, src.position)] = src.crc_valid
    else:
        dst.crc_valid[:] = src.crc_valid[np.searchsorted(src.position, dst.position)]


def _plain(t: BatchTable, limit: int) -> bool:
    """Whether every batch is an uncompressed v2 batch within the cap on one batch's bytes
    (``chunks.decode`` reads them all from the source's own bytes, in one run)."""
    return bool(not t.codec.any() and (t.magic == 2).all()
                and int(t.size.max()) - v2.RECORD_BATCH_OVERHEAD <= limit)


def _shallow_records(t: BatchTable, piece: ByteRange, scan: Scan) -> pa.RecordBatch:
    take = np.repeat(np.arange(len(t), dtype=np.int32), t.count)
    constants = _constants(piece)
    arrays = []
    for i, name in enumerate(scan.columns):
        if name in constants:
            arrays.append(arrow.repeated(constants[name], int(take.size), scan.target(i)))
        else:
            arrays.append(arrow.conform(
                _per_batch(t, lambda a: a[take], int(take.size), name, scan.target(i)),
                scan.target(i)))
    return scan.batch(arrays)


def _chunk_records(chunk: Chunk, piece: ByteRange, scan: Scan, report: Report,
                   pool: BufferPool | None = None) -> Iterator[pa.RecordBatch]:
    """Kernel errors are reported; the records before a fault are kept, as Kafka's iterator
    returns them before it throws (and as ``segtools dump`` prints them)."""
    for f in chunk.findings:
        report(f)
    cols = chunk.columns
    assert isinstance(cols, ArrowColumns)
    if len(cols) == 0:
        return
    keep = None
    if piece.min_offset is not None:
        keep = cols.offset >= piece.min_offset
    if piece.max_offset is not None:
        below = cols.offset < piece.max_offset
        keep = below if keep is None else keep & below
    if keep is not None and not keep.all():
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return
        cols = cols.take(rows)
    if cols.key_bytes + cols.value_bytes <= arrow.MAX_COLUMN_BYTES:
        yield _columns_batch(chunk.table, cols, piece, scan, pool)
        return
    sizes = (view_lengths(cols.key_views).astype(np.int64)
             + view_lengths(cols.value_views))
    for part in arrow.row_slices(sizes):
        yield _columns_batch(chunk.table, cols.take(np.arange(part.start, part.stop)), piece,
                             scan, pool)


def _columns_batch(t: BatchTable, cols: ArrowColumns, piece: ByteRange, scan: Scan,
                   pool: BufferPool | None) -> pa.RecordBatch:
    n = len(cols)
    counts = cols.records

    def expand(a: np.ndarray) -> np.ndarray:
        return np.repeat(a, counts)

    constants = _constants(piece)
    constant = _Constant(t)
    arrays: list[pa.Array] = []
    for i, name in enumerate(scan.columns):
        target = scan.target(i)
        if name == "key":
            array = arrow.views_array(cols.data, cols.view_base, cols.key_views, cols.key_valid,
                                      cols.key_nulls, cols.key_bytes, target, pool)
        elif name == "value":
            array = arrow.views_array(cols.data, cols.view_base, cols.value_views,
                                      cols.value_valid, cols.value_nulls, cols.value_bytes,
                                      target, pool)
            if constants["topic"] == CLUSTER_METADATA_TOPIC and not scan.reveal_sensitive:
                array = _metadata_values_shown(array, target)
        elif name == "offset":
            array = arrow.column(cols.offset, target)
        elif name == "timestamp":
            array = arrow.micros_array(cols.micros, cols.micros_valid, cols.micros_nulls)
        elif name == "headers":
            array = arrow.headers_from_spans(cols.data, cols.headers_pos, cols.headers_count,
                                             target)
        elif name == "key_size":
            array = arrow.sizes(view_lengths(cols.key_views), cols.key_valid, cols.key_nulls)
        elif name == "value_size":
            array = arrow.sizes(view_lengths(cols.value_views), cols.value_valid,
                                cols.value_nulls)
        elif name in constants:
            array = arrow.repeated(constants[name], n, target)
        else:
            array = _per_batch(t, expand, n, name, target, constant)
        arrays.append(arrow.conform(array, target))
    return scan.batch(arrays)


def _metadata_values_shown(values: pa.Array, target: pa.DataType) -> pa.Array:
    """``__cluster_metadata`` values re-encoded with their sensitive configs and SCRAM
    credentials hidden (:func:`~segtools.analysis.cluster_metadata.metadata_value`), as the
    CLI and the report show them: the API's, the SQL face's and Spark's rows are outputs
    too. The metadata log is small (a few records per config change), so one Python call
    per record costs nothing that matters."""
    text = pa.types.is_string(target) or pa.types.is_large_string(target)
    shown = []
    for v in values.to_pylist():
        raw = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
        out = cluster_metadata.metadata_value(raw)
        shown.append(out.decode("utf-8", "replace") if text and out is not None else out)
    built = pa.string() if text else pa.binary()
    return arrow.text_from_values(shown, built)  # conformed to ``target`` by the caller


# -------------------------------------------------------------------------- batches


def _batch_rows(segment: Segment, piece: ByteRange, scan: Scan,
                report: Report) -> Iterator[pa.RecordBatch]:
    visible = _Visibility(piece, scan)
    for t in _visible_tables(segment, piece, scan, visible, report):
        constants = _constants(piece)
        arrays: list[pa.Array] = []
        for i, name in enumerate(scan.columns):
            target = scan.target(i)
            if name in constants:
                array = arrow.repeated(constants[name], len(t), target)
            else:
                array = _per_batch(t, _same, len(t), name, target)
            arrays.append(arrow.conform(array, target))
        yield scan.batch(arrays)


# ------------------------------------------------------------------------- segments


def segment_row(summary: SegmentSummary, piece: ByteRange) -> dict[str, object]:
    info = piece.partition
    return {
        "topic": info.topic, "partition": info.partition, "log_dir": info.log_dir,
        "partition_dir": info.path, "path": summary.path, "base_offset": summary.base_offset,
        "next_offset": summary.next_offset, "size": summary.size,
        "valid_bytes": summary.valid_bytes, "is_active": summary.is_active,
        "mtime": summary.mtime_ms, "batch_count": summary.batch_count,
        "record_count": summary.record_count, "first_offset": summary.first_offset,
        "last_offset": summary.last_offset, "first_timestamp": summary.first_timestamp,
        "max_timestamp": summary.max_timestamp,
        "max_timestamp_source": summary.max_timestamp_source,
        "largest_timestamp": summary.largest_timestamp, "codecs": list(summary.codecs),
        "magics": list(summary.magics), "producer_id_count": summary.producer_id_count,
        "transactional_batches": summary.transactional_batches,
        "control_batches": summary.control_batches, "crc_errors": summary.crc_errors,
        "findings": [{"code": f.code, "severity": str(f.severity), "position": f.position,
                      "offset": f.offset, "message": f.message} for f in summary.findings],
        "high_watermark": info.high_watermark, "log_start_offset": info.log_start_offset,
        "recovery_point": info.recovery_point, "cleaner_offset": info.cleaner_offset,
        "summary_json": json.dumps(summary.to_json(), separators=(",", ":")),
        "tier": piece.tier,
    }


_SEGMENT_TIMES = ("mtime", "first_timestamp", "max_timestamp", "largest_timestamp")


def _segment_rows(pieces: list[ByteRange], scan: Scan,
                  report: Report) -> Iterator[pa.RecordBatch]:
    rows = []
    for piece in pieces:
        try:
            summary = summarize(piece.files, is_active=piece.is_active,
                                verify_crc=scan.verify_crc,
                                decompress_limit=scan.max_decompressed_bytes)
        except SegtoolsError as e:
            if not piece.files.log.exists():  # a local path or a location's listing
                report(_vanished(piece))
            else:  # unreadable (mode 000, an I/O error): said, and the other rows read
                report(unreadable(str(piece.files.log), e))
            continue
        for f in summary.findings:
            report(f)
        rows.append(segment_row(summary, piece))
    if not rows:
        return
    arrays = []
    for i, name in enumerate(scan.columns):
        target = scan.target(i)
        values = [row[name] for row in rows]
        if name in _SEGMENT_TIMES:
            array = arrow.timestamps_ms(np.array([-1 if v is None else v for v in values],
                                                 np.int64))
        else:
            array = pa.array(values, type=target)
        arrays.append(arrow.conform(array, target))
    yield scan.batch(arrays)
