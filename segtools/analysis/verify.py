"""``verify``'s assembly: read every file of a partition once and run the integrity rules.

Each segment is walked once (compiled, CRCs checked), its table chunks fed to the index,
offset and leader-epoch rules of :mod:`segtools.analysis.integrity` as they come, so memory
stays flat whatever the segment holds; ``deep`` also decodes every record; ``salvage``
resynchronises past corrupt batches. Findings come out in a stable order: index findings of
every segment, then each segment's walk findings and offset steps, then leader epochs, then
producer snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from segtools.analysis import integrity
from segtools.analysis.config import ALWAYS_COMPACTED
from segtools.analysis.partition_log import file_records
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity, finding
from segtools.storage.index import OffsetIndex, TimeIndex, TransactionIndex
from segtools.storage.logdirs import LogDir
from segtools.storage.partition import Leftover, PartitionDir, SegmentFiles
from segtools.storage.segment import Segment, file_unreadable, unreadable, with_following
from segtools.storage.small_files import read_producer_snapshot
from segtools.storage.summary import KeptRead, small_segment_checks

#: What :func:`verify_partition` hands each small segment it read in compiled code.
Keep = Callable[[SegmentFiles, KeptRead], None]


@dataclass
class _SegmentResult:
    files: SegmentFiles
    index_findings: list[Finding]
    walk_findings: list[Finding]
    steps: integrity.OffsetSteps
    cleaned: bool


def _open_indexes(files: SegmentFiles, log_size: int, findings: list[Finding]):
    """The index checks for one segment (None where an index is absent or not trusted), and
    Kafka's own sanity checks on each index as findings."""
    offset_check = time_check = None
    if files.index is not None:
        with OffsetIndex(files.index, files.base_offset, log_size=log_size,
                         sealed=files.sealed) as index:
            findings.extend(index.sanity_check())
            if index.trusted:
                offset_check = integrity.OffsetIndexCheck(str(files.index),
                                                          *index.entry_arrays())
    if files.timeindex is not None:
        with TimeIndex(files.timeindex, files.base_offset, sealed=files.sealed) as tindex:
            findings.extend(tindex.sanity_check())
            if tindex.trusted:
                time_check = integrity.TimeIndexCheck(str(files.timeindex),
                                                      *tindex.entry_arrays())
    if files.txnindex is not None:
        findings.extend(TransactionIndex(files.txnindex, files.base_offset).sanity_check())
    return offset_check, time_check


def _checked_small(files: SegmentFiles, epochs: integrity.LeaderEpochs,
                   previous_last: int | None, limit: int, keep: Keep | None = None
                   ) -> _SegmentResult | None:
    """A small local segment about which no rule has anything to say, read and checked in
    compiled code (:func:`segtools.storage._summary.verify_small`); None when it needs the
    ordinary reading (:func:`_check_segment`), which then names every finding. ``keep`` is
    handed what was read."""
    fast = small_segment_checks(files, previous_last, epochs.last_epoch, limit,
                                keep is not None)
    if fast is None:
        return None
    segment_last, cleaned, new_epochs, inside, offset_steps, index_findings, kept = fast
    if keep is not None:
        keep(files, kept)
    for epoch, offset in new_epochs:
        epochs.first_offset.setdefault(epoch, offset)
        epochs.last_epoch = max(epochs.last_epoch, epoch)
    index_findings = list(index_findings)
    if files.txnindex is not None:
        index_findings.extend(TransactionIndex(files.txnindex, files.base_offset).sanity_check())
    if inside:
        index_findings.append(integrity.record_offset_convention(str(files.timeindex), inside))
    steps = integrity.OffsetSteps(str(files.log), files.base_offset, previous_last)
    steps.segment_last = segment_last
    if offset_steps:
        steps.add_steps(offset_steps)
    return _SegmentResult(files, index_findings, [], steps, cleaned)


def _check_segment(files: SegmentFiles, epochs: integrity.LeaderEpochs,
                   previous_last: int | None, *, deep: bool, salvage: bool,
                   limit: int, compacted: bool = False, keep: Keep | None = None,
                   following: SegmentFiles | None = None
                   ) -> _SegmentResult:
    if not (deep or salvage):
        checked = _checked_small(files, epochs, previous_last, limit, keep)
        if checked is not None:
            return checked
    index_findings: list[Finding] = []
    walk_findings: list[Finding] = []
    deep_findings: list[Finding] = []
    steps = integrity.OffsetSteps(str(files.log), files.base_offset, previous_last)
    cleaned = False
    first_base = None
    with Segment.open(files, decompress_limit=limit, following=following) as segment:
        offset_check, time_check = _open_indexes(files, segment.size, index_findings)
        chunks = segment.salvage() if salvage else segment.walk(verify_crc=True)
        for chunk in chunks:
            t = chunk.table
            walk_findings.extend(chunk.findings)
            steps.add(t)
            epochs.add(t)
            cleaned = cleaned or bool(integrity.cleaned(t).any())
            if first_base is None and len(t):
                first_base = int(t.base_offset[0])
            for check in (offset_check, time_check):
                if check is not None:
                    check.add(t)
            if deep:
                for records in segment.records(t):
                    deep_findings.extend(records.findings)
    if offset_check is not None:
        index_findings.extend(offset_check.finish())
    if time_check is not None:
        # the cleaner names its output after the first input segment even when it removed
        # that segment's first records: a first batch above the base offset is its mark
        above_base = first_base is not None and first_base > files.base_offset
        index_findings.extend(time_check.finish(compacted=compacted or cleaned or above_base))
    return _SegmentResult(files, index_findings, walk_findings + deep_findings, steps, cleaned)


def verify_partition(log_dir: LogDir, pdir: PartitionDir, *, deep: bool = False,
                     salvage: bool = False, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                     advance: Callable[[int], None] = lambda n: None,
                     keep: Keep | None = None) -> list[Finding]:
    """Every finding for one partition directory. ``keep`` is handed each small segment the
    compiled reading checked, with what it read (:class:`~segtools.storage.summary.KeptRead`),
    so that analyses run beside ``verify`` need not read it again."""
    findings = list(pdir.findings)
    epochs = integrity.LeaderEpochs(str(pdir.path))
    tp = (pdir.name.topic, pdir.name.partition) if pdir.name else None
    compacted = (tp in log_dir.cleaner_offsets or (tp is not None and tp[0] in ALWAYS_COMPACTED)
                 or any(lf.leftover in (Leftover.CLEANED, Leftover.SWAP)
                        for lf in pdir.leftovers))
    results: list[_SegmentResult] = []
    previous_last = None
    for files, following in with_following(pdir.segments):
        try:
            result = _check_segment(files, epochs, previous_last, deep=deep, salvage=salvage,
                                    limit=limit, compacted=compacted, keep=keep,
                                    following=following)
        except SegtoolsError as e:
            # an index that cannot be opened is its own finding, not the segment's
            index_path = e.path is not None and str(e.path) != str(files.log)
            findings.append(file_unreadable(str(e.path), e) if index_path
                            else unreadable(str(files.log), e))
        else:
            results.append(result)
            findings.extend(result.index_findings)
            if result.steps.segment_last is not None:
                previous_last = result.steps.segment_last
        advance(files.log_size)
    evidence = integrity.CompactionEvidence(
        cleaner_checkpoint=tp in log_dir.cleaner_offsets,
        cleaner_leftovers=any(lf.leftover in (Leftover.CLEANED, Leftover.SWAP)
                              for lf in pdir.leftovers),
        cleaned_batches=any(r.cleaned for r in results))
    for r in results:
        findings.extend(r.walk_findings)
        findings.extend(r.steps.findings(evidence))
    findings.extend(epochs.finish(pdir.leader_epochs or None))
    for snap in pdir.snapshots:
        findings.extend(read_producer_snapshot(snap.path)[1])
    for snap in pdir.kraft_snapshots:
        findings.extend(verify_snapshot_file(snap, limit=limit))
    return findings


def verify_snapshot_file(path: Path, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[Finding]:
    """A KRaft snapshot (``<offset>-<epoch>.checkpoint``) or ``bootstrap.checkpoint``: record
    batches whose CRCs and records must read, opened by a SnapshotHeader control record and
    closed by a SnapshotFooter (``RecordsSnapshotWriter``; ``RecordsSnapshotReader`` refuses a
    snapshot without them). A ``.checkpoint.part`` is one still being written."""
    spath = str(path)
    if spath.endswith(".part"):
        return [finding("kraft_snapshot_partial", spath,
                        "a snapshot still being written (.part): Kafka deletes it on startup")]
    findings: list[Finding] = []
    controls: list[str] = []
    first_batch_is_control = last_batch_is_control = None
    for lr in file_records(path, findings, limit=limit):
        if first_batch_is_control is None:
            first_batch_is_control = lr.batch.is_control
        last_batch_is_control = lr.batch.is_control
        if lr.record.control is not None:
            controls.append(lr.record.control.type)
    if not any(f.severity is Severity.ERROR for f in findings):
        if not controls or controls[0] != "SNAPSHOT_HEADER" or not first_batch_is_control:
            findings.append(finding("kraft_snapshot_header_missing", spath,
                                    "the first record is not a SnapshotHeader control record"))
        if not controls or controls[-1] != "SNAPSHOT_FOOTER" or not last_batch_is_control:
            findings.append(finding("kraft_snapshot_footer_missing", spath,
                                    "the last record is not a SnapshotFooter control record: "
                                    "the snapshot was not completed"))
    return findings


def verify_log_dir_files(log_dir: LogDir, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
                         ) -> list[Finding]:
    """Checks of files that belong to the log dir rather than a partition
    (``bootstrap.checkpoint``)."""
    if log_dir.bootstrap_checkpoint is None:
        return []
    return verify_snapshot_file(log_dir.bootstrap_checkpoint, limit=limit)
