"""One small, frozen summary per segment, from a shallow walk: the input of every analysis.

Retention, compaction, ``scan`` and the Spark planner all start here, so the summary is a plain
value (JSON-serialisable, picklable) and is computed once per segment from batch headers only.

The *max timestamp* deserves care because retention hangs on it. ``LogSegment.largestTimestamp``
is the segment's max timestamp when it has one, else the file's mtime; for a segment loaded from
disk that max comes from the time index's last entry (``LogSegment.maxTimestampAndOffsetSoFar``
is seeded by ``timeIndex.lastEntry()``), because the final entry written at roll time is the
segment's largest timestamp. We report the value and where it came from: ``timeindex`` when the
index is trusted and not empty, ``log`` when only the batch walk has timestamps (an active
segment, or a lost time index), ``mtime`` when nothing carries a timestamp (v0 data).
"""

from __future__ import annotations

import dataclasses
import operator
import os
from dataclasses import dataclass, field

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.table import CODEC_LABELS, BatchTable, codec_label
from segtools.findings import Finding, Severity, finding
from segtools.storage import _summary, gentle
from segtools.storage.index import TimeIndex, padded_active
from segtools.storage.location import as_path, note_read
from segtools.storage.partition import SegmentFiles
from segtools.storage.segment import SMALL_FILE, Segment

MAX_PRODUCER_IDS = 64  # the summary stays small; the count says how many there were


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    path: str
    base_offset: int
    size: int
    valid_bytes: int  # bytes of whole batches; the rest is a torn or zero tail
    is_active: bool
    mtime_ms: int
    batch_count: int = 0
    record_count: int = 0  # v2 counts; v0/v1 wrappers count their offset span
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    log_max_timestamp: int = -1  # from the batch walk
    log_offset_of_max_timestamp: int | None = None  # shallow: last offset of that batch
    max_timestamp: int = -1  # what the broker's retention uses (see module doc)
    max_timestamp_source: str = "mtime"  # timeindex | log | mtime
    timeindex_last: tuple[int, int] | None = None
    codecs: tuple[str, ...] = ()
    magics: tuple[int, ...] = ()
    producer_ids: tuple[int, ...] = ()
    producer_id_count: int = 0
    transactional_batches: int = 0
    control_batches: int = 0
    #: Batches whose stored CRC does not match their bytes; None when CRCs were not checked
    #: (a count of 0 would claim a check that never ran).
    crc_errors: int | None = None
    findings: tuple[Finding, ...] = field(default=())

    def __reduce__(self) -> tuple:
        """Pickled as its values in field order (a worker process sends a tree's summaries
        back: a plain tuple is about half the cost of the dataclass's own state)."""
        return (_from_values, _VALUES(self))

    @property
    def next_offset(self) -> int:
        """The offset after this segment's last one (its base when it holds nothing)."""
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    @property
    def largest_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``: the max timestamp, or the mtime if there is none."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.mtime_ms

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["findings"] = [f.to_json() for f in self.findings]
        out["timeindex_last"] = list(self.timeindex_last) if self.timeindex_last else None
        return {"type": "segment", **out}

    @classmethod
    def from_json(cls, obj: dict) -> SegmentSummary:
        """Inverse of :meth:`to_json` (Spark ships summaries as rows or JSON)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in obj.items() if k in fields}
        data["findings"] = tuple(
            Finding(f["code"], Severity(f["severity"]), f["path"], f["message"],
                    f.get("position"), f.get("offset")) for f in obj.get("findings", ()))
        for name in ("codecs", "magics", "producer_ids"):
            data[name] = tuple(data.get(name, ()))
        if data.get("timeindex_last") is not None:
            data["timeindex_last"] = tuple(data["timeindex_last"])
        return cls(**data)


#: An index up to this size is read whole by the compiled summary and checks (a preallocated
#: one, 10 MiB of holes by default, goes to :class:`TimeIndex`, which skips holes).
SMALL_TIME_INDEX = 64 * 1024


_VALUES = operator.attrgetter(*(f.name for f in dataclasses.fields(SegmentSummary)))


def _from_values(*values) -> SegmentSummary:
    return SegmentSummary(*values)


def summarize(files: SegmentFiles, *, is_active: bool, verify_crc: bool = False,
              time_index: TimeIndex | None = None,
              decompress_limit: int = DEFAULT_DECOMPRESS_LIMIT,
              following: SegmentFiles | None = None) -> SegmentSummary:
    """Walk ``files.log`` shallowly and fold its batch table into a :class:`SegmentSummary`.

    A small segment of a location the compiled code reads by name (the local disk) is
    summarised in compiled code (:mod:`segtools.storage._summary`) when nothing in it calls
    for a finding; anything else takes the table walk, which names every finding. Both give
    the same summary. ``following``: the segment summarised next (see
    :meth:`Segment.open`)."""
    if time_index is None and as_path(files.log).location.compiled_reads:
        with gentle.watched(files.log, files.timeindex):
            fast = _summary.summarize_small(
                os.fsencode(files.log),
                None if files.timeindex is None else os.fsencode(files.timeindex),
                verify_crc, SMALL_FILE, SMALL_TIME_INDEX, decompress_limit)
        if fast is not None:
            return _compiled(files, is_active, fast, verify_crc)
    return _walked(files, is_active=is_active, verify_crc=verify_crc, time_index=time_index,
                   decompress_limit=decompress_limit, following=following)


def _fsencode(path) -> bytes | None:
    return None if path is None else os.fsencode(path)


@dataclass(frozen=True, slots=True)
class KeptRead:
    """A small segment as ``verify``'s compiled reading left it (:func:`small_segment_checks`
    with ``keep``): its fold, as :func:`summarize` would fold it, and the ``.log``'s bytes.
    With it the inputs' summary (:func:`kept_summary`) and the folds over the partition's
    batch tables read nothing again: each small file is read once per command."""

    fold: tuple
    data: bytes


def kept_summary(files: SegmentFiles, kept: KeptRead, *, is_active: bool) -> SegmentSummary:
    """:func:`summarize` of a segment whose compiled reading was kept: the same summary
    (that reading's fold answered only for a segment with nothing to report)."""
    return _compiled(files, is_active, kept.fold, False)


def small_segment_checks(files: SegmentFiles, previous_last: int | None, last_epoch: int,
                         limit: int = DEFAULT_DECOMPRESS_LIMIT, keep: bool = False
                         ) -> tuple | None:
    """``verify``'s rules over one small local segment, in compiled code, when none of them
    has anything to say (:func:`segtools.storage._summary.verify_small`); None when the
    segment needs the ordinary reading (or is not where the compiled code reads by name),
    which then names every finding.

    Returns ``(largest offset or None, whether a batch shows the cleaner's work, new leader
    epochs as (epoch, first offset) pairs, time index entries in the older record-offset
    convention, offset steps as (previous last, base, position, first batch), the time
    index's sanity findings)``: the one Kafka's check has for a preallocated tail
    (:func:`segtools.storage.index.padded_active`), else none; and, with ``keep``, what was
    read (:class:`KeptRead`; None without)."""
    if not as_path(files.log).location.compiled_reads:
        return None
    with gentle.watched(files.log, files.index, files.timeindex):
        fast = _summary.verify_small(
            os.fsencode(files.log), _fsencode(files.index), _fsencode(files.timeindex),
            files.base_offset, previous_last, last_epoch, SMALL_FILE, SMALL_TIME_INDEX, limit,
            keep)
    if fast is None:
        return None
    log, index, timeindex, *checked, padded, kept = fast
    for path, seen in ((files.log, log), (files.index, index), (files.timeindex, timeindex)):
        if seen is not None:
            note_read(path, *seen)
    sanity = () if padded is None or padded[1] <= 0 else \
        (padded_active(str(files.timeindex), *padded),)
    return (*checked, sanity, None if kept is None else KeptRead(*kept))


def _labels(bits: int, names) -> tuple:
    return tuple(names[i] for i in range(8) if bits >> i & 1)


_CODECS = {bits: tuple(sorted(_labels(bits, [codec_label(i) for i in range(8)])))
           for bits in range(256)}
_MAGICS = {bits: tuple(m for m in range(8) if bits >> m & 1) for bits in range(8)}
assert len(CODEC_LABELS) <= 8


def _compiled(files: SegmentFiles, is_active: bool, fast: tuple,
              verify_crc: bool) -> SegmentSummary:
    """The summary from :func:`_summary.summarize_small`'s fold (the time index read by the
    compiled code when plain, else by :class:`TimeIndex`, as in :func:`_walked`). The fold
    answers only for a segment with nothing to report, so no CRC it checked failed."""
    (size, mtime_ns, batches, valid_bytes, records, first_offset, last_offset, first_ts,
     fold_max, fold_max_offset, codecs, magics, producers, txn, control, index) = fast
    log = str(files.log)
    note_read(files.log, size, mtime_ns)
    findings: tuple[Finding, ...] = ()
    ti_last = None
    if index is not None:
        state, ts, rel, ti_size, ti_mtime_ns = index
        if state == _summary.INDEX_SLOW:
            with TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed) as ti:
                if ti.trusted and ti.valid_entries:
                    ti_last = tuple(ti.last_entry)
        else:
            note_read(files.timeindex, ti_size, ti_mtime_ns)
            if state == _summary.INDEX_LAST:
                ti_last = (ts, files.base_offset + rel)
    if ti_last is not None:
        max_ts, source = ti_last[0], "timeindex"
        if not is_active and fold_max != ti_last[0]:
            findings = (_max_mismatch(files, ti_last, fold_max),)
    elif fold_max >= 0:
        max_ts, source = fold_max, "log"
    else:
        max_ts, source = -1, "mtime"
    return SegmentSummary(
        path=log, base_offset=files.base_offset, size=size, valid_bytes=valid_bytes,
        is_active=is_active, mtime_ms=mtime_ns // 1_000_000, batch_count=batches,
        record_count=records, first_offset=first_offset, last_offset=last_offset,
        first_timestamp=first_ts, log_max_timestamp=fold_max,
        log_offset_of_max_timestamp=fold_max_offset, max_timestamp=max_ts,
        max_timestamp_source=source, timeindex_last=ti_last, codecs=_CODECS[codecs],
        magics=_MAGICS[magics],
        producer_ids=tuple(sorted(producers)[:MAX_PRODUCER_IDS]) if producers else (),
        producer_id_count=len(producers), transactional_batches=txn, control_batches=control,
        crc_errors=0 if verify_crc else None, findings=findings)


def _max_mismatch(files: SegmentFiles, ti_last: tuple[int, int], log_max: int) -> Finding:
    return finding(
        "timeindex_max_mismatch", str(files.timeindex),
        f"last time-index entry says {ti_last[0]} but the largest batch timestamp in "
        f"the log is {log_max}; retention uses the index's value", offset=ti_last[1])


def _walked(files: SegmentFiles, *, is_active: bool, verify_crc: bool,
            time_index: TimeIndex | None, decompress_limit: int,
            following: SegmentFiles | None = None) -> SegmentSummary:
    """:func:`summarize` by the table walk."""
    fold = _Fold()
    findings: list[Finding] = []
    with Segment.open(files, decompress_limit=decompress_limit,
                      following=following) as segment:
        mtime_ms = segment.mtime_ms
        for chunk in segment.walk(verify_crc=verify_crc):
            fold.add(chunk.table)
            findings.extend(chunk.findings)
        size = segment.size
    ti_last = None
    own_index = time_index is None and files.timeindex is not None
    if own_index:
        time_index = TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed)
    try:
        if time_index is not None and time_index.trusted and time_index.valid_entries:
            ti_last = tuple(time_index.last_entry)
    finally:
        if own_index:
            time_index.close()
    if ti_last is not None:
        max_ts, source = ti_last[0], "timeindex"
        if not is_active and fold.max_ts != ti_last[0]:
            findings.append(_max_mismatch(files, ti_last, fold.max_ts))
    elif fold.max_ts >= 0:
        max_ts, source = fold.max_ts, "log"
    else:
        max_ts, source = -1, "mtime"
    return SegmentSummary(
        path=str(files.log), base_offset=files.base_offset, size=size,
        valid_bytes=fold.valid_bytes, is_active=is_active, mtime_ms=mtime_ms,
        batch_count=fold.batches, record_count=fold.records, first_offset=fold.first_offset,
        last_offset=fold.last_offset, first_timestamp=fold.first_ts,
        log_max_timestamp=fold.max_ts, log_offset_of_max_timestamp=fold.max_ts_offset,
        max_timestamp=max_ts, max_timestamp_source=source, timeindex_last=ti_last,
        codecs=tuple(sorted(codec_label(c) for c in fold.codecs)),
        magics=tuple(sorted(fold.magics)),
        producer_ids=tuple(sorted(fold.producers)[:MAX_PRODUCER_IDS]),
        producer_id_count=len(fold.producers), transactional_batches=fold.txn,
        control_batches=fold.control, crc_errors=fold.crc_errors if verify_crc else None,
        findings=tuple(findings))


class _Fold:
    """Running totals over table chunks (mutable only while one summary is built)."""

    def __init__(self) -> None:
        self.batches = self.records = self.valid_bytes = 0
        self.txn = self.control = self.crc_errors = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.first_ts: int | None = None
        self.max_ts = -1
        self.max_ts_offset: int | None = None
        self.codecs: set[int] = set()
        self.magics: set[int] = set()
        self.producers: set[int] = set()

    def add(self, t: BatchTable) -> None:
        if not len(t):
            return
        self.batches += len(t)
        self.valid_bytes += int(t.size.sum())
        self.records += int(t.record_count.sum())
        if self.first_offset is None:
            self.first_offset = int(t.base_offset[0])
        last = int(t.last_offset.max())
        self.last_offset = last if self.last_offset is None else max(self.last_offset, last)
        if self.first_ts is None:
            stamped = np.flatnonzero(t.first_timestamp >= 0)
            if len(stamped):
                self.first_ts = int(t.first_timestamp[stamped[0]])
        i = int(np.argmax(t.max_timestamp))  # the first batch holding the max
        if t.max_timestamp[i] > self.max_ts:
            self.max_ts, self.max_ts_offset = int(t.max_timestamp[i]), int(t.last_offset[i])
        # sets of Python ints straight from the columns: cheaper than np.unique for the few
        # batches of a typical segment, and no slower for many
        self.codecs.update(t.codec.tolist())
        self.magics.update(t.magic.tolist())
        self.producers.update(t.producer_id[t.producer_id >= 0].tolist())
        self.txn += int(t.is_transactional.sum())
        self.control += int(t.is_control.sum())
        self.crc_errors += int((t.crc_valid == 0).sum())
