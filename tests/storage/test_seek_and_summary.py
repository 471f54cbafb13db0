"""Seeks through Kafka-written fixtures land where the broker's lookups would land, and the
segment summaries agree with what Kafka's reader dumped.

Rules mirrored: ``OffsetIndex.lookup`` (largest entry <= target, else the segment start) +
``LogSegment.translateOffset`` (scan forward to the first batch whose last offset reaches the
target), and ``LogSegment.findOffsetByTimestamp`` (time index, then offset index, then the first
record whose timestamp reaches the target).
"""

from __future__ import annotations

import pytest

from segtools.storage.index import OffsetIndex, TimeIndex
from segtools.storage.logdirs import walk
from segtools.storage.seek import seek_offset, seek_timestamp
from segtools.storage.segment import Segment
from segtools.storage.summary import summarize
from tests.fixtures_manifest import FIXTURES, LOGS, expected_lines

SEGMENTS = [(p, s) for d in walk([FIXTURES / "logdirs"])[0] for p in d.partitions
            for s in p.segments]
IDS = [f"{p.path.name}/{s.base_offset}" for p, s in SEGMENTS]
EXPECTED = {str(FIXTURES / e["path"]): expected_lines(e) for e in LOGS}


def kafka_records(seg_files):
    return [r for r in EXPECTED[str(seg_files.log)] if r["type"] == "record"]


def brute_first_at_or_after(records, key, target):
    return next((r for r in records if r[key] >= target), None)


@pytest.mark.parametrize(("pdir", "seg_files"), SEGMENTS, ids=IDS)
def test_offset_seek_every_offset(pdir, seg_files):
    records = kafka_records(seg_files)
    if not records:
        return
    index = OffsetIndex(seg_files.index, seg_files.base_offset) if seg_files.index else None
    with Segment(seg_files.log) as segment:
        for target in range(seg_files.base_offset, records[-1]["offset"] + 2):
            want = brute_first_at_or_after(records, "offset", target)
            got = seek_offset(segment, index, target)
            if want is None:
                assert got.record is None
                continue
            assert got.record.offset == want["offset"], target
            if index is not None and index.trusted and index.valid_entries:
                indexed = index.lookup(target)
                assert got.start_position == indexed.position
                assert indexed.offset <= max(target, seg_files.base_offset)


@pytest.mark.parametrize(("pdir", "seg_files"), SEGMENTS, ids=IDS)
def test_timestamp_seek(pdir, seg_files):
    records = kafka_records(seg_files)
    if not records or all(r["timestamp"] < 0 for r in records):
        return
    oi = OffsetIndex(seg_files.index, seg_files.base_offset) if seg_files.index else None
    ti = TimeIndex(seg_files.timeindex, seg_files.base_offset) if seg_files.timeindex else None
    stamps = sorted({r["timestamp"] for r in records})
    targets = stamps + [t + 1 for t in stamps] + [stamps[0] - 1]
    with Segment(seg_files.log) as segment:
        for target in targets:
            # Kafka's answer: first batch (in log order) whose max timestamp reaches the target,
            # then its first record at or past it; brute force over the dumped batches.
            want = None
            batch_max = None
            for line in EXPECTED[str(seg_files.log)]:
                if line["type"] == "batch":
                    batch_max = line["max_timestamp"]
                elif batch_max is not None and batch_max >= target and \
                        line["timestamp"] >= target:
                    want = line
                    break
            got = seek_timestamp(segment, oi, ti, target)
            if want is None:
                assert got.record is None, target
            else:
                assert got.record is not None and got.record.offset == want["offset"], target


@pytest.mark.parametrize(("pdir", "seg_files"), SEGMENTS, ids=IDS)
def test_summary_agrees_with_kafka_dump(pdir, seg_files):
    lines = EXPECTED.get(str(seg_files.log), [])
    batches = [b for b in lines if b["type"] == "batch"]
    summary = summarize(seg_files, is_active=seg_files is pdir.active_segment, verify_crc=True)
    assert summary.batch_count == len(batches)
    assert summary.crc_errors == sum(1 for b in batches if not b["crc_valid"])
    if batches:
        assert summary.last_offset == max(b["last_offset"] for b in batches)
        assert summary.log_max_timestamp == max(b["max_timestamp"] for b in batches)
        assert set(summary.codecs) == {b["compression"] for b in batches}
        assert summary.control_batches == sum(b["is_control"] for b in batches)
    if summary.max_timestamp_source == "timeindex":
        assert summary.max_timestamp == summary.log_max_timestamp
    assert summary.to_json()["type"] == "segment"


def test_summary_json_round_trip():
    _, seg_files = SEGMENTS[0]
    s = summarize(seg_files, is_active=True, verify_crc=True)
    from segtools.storage.summary import SegmentSummary
    assert SegmentSummary.from_json(s.to_json()) == s
