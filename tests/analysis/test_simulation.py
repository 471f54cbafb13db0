"""The log lifecycle simulator against the ``whatif`` tree (written by Kafka's own classes,
``fixtures/java/WhatIfFixtures.java``) and hand-worked expectations from Kafka's code.

The tree's clock: ``T`` = 2024-01-01T00:00Z; each topic writes for 240 hours; ``--at`` is
``T + 240 h``. The topic configs (``fixtures/configs/whatif-topic-configs.txt``) are
segment.bytes 64 KiB (standing for 1 GiB), segment.ms and retention.ms 7 days; ledger-compact
has cleanup.policy=compact,delete and segment.ms 1 day.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import segtools
from segtools.analysis import simulation_input as si
from segtools.analysis import whatif
from segtools.analysis.config import TopicConfig, parse_config_text, resolve
from segtools.analysis.partition_input import load_inputs
from segtools.analysis.retention import explain_retention
from segtools.analysis.simulation import (
    CLEANER_BACKOFF_MS,
    RETENTION_CHECK_INTERVAL_MS,
    ROLL_FIRST,
    ROLL_SEGMENT_BYTES,
    ROLL_SEGMENT_MS,
    SERIES_BUCKETS,
    History,
    bounded_series,
    simulate,
)
from segtools.storage.logdirs import walk
from tests.analysis.whatif_tree import CONFIG, DAY, NOW, SEGTOOLS, TREE, H, T
from tests.fixtures_manifest import FIXTURES

END = NOW + 30 * DAY


@pytest.fixture(scope="module")
def runs() -> dict:
    """Each partition of the tree under today's config, its history replayed from its first
    batch (how the rules are held to the segments Kafka wrote), then 30 days past --at."""
    cfg_file = parse_config_text(CONFIG.read_text(), str(CONFIG))
    loaded = load_inputs(walk([str(TREE)])[0], config_file=cfg_file)
    out = {}
    for pi in loaded.partitions:
        part = whatif.PartitionHistory(pi, si.history(pi))
        out[pi.topic] = (pi, whatif.run_partition(part, pi.config, now_ms=NOW, end_ms=END,
                                                  ingest=whatif.AUTO, partitions=1,
                                                  from_disk=False))
    return out


def _layout(segments) -> list[tuple[int, int, int]]:
    return [(s.base_offset, s.size, s.max_timestamp) for s in segments]


def test_quiet_topic_rolls_on_segment_ms_and_goes_whole(runs):
    """quiet-events-0: one ~168-byte batch an hour, so 64 KiB is never reached.

    ``LogSegment.shouldRoll``: ``timeWaitedForRoll(now, maxTimestampInMessages)`` is the new
    batch's max timestamp minus ``rollingBasedTimestamp`` (the first batch's max timestamp,
    T), and it must be *greater than* segment.ms (7 d = 168 h). Hour 168's batch waits
    exactly 168 h and stays; hour 169's rolls, so segment 0 holds offsets 0..168 and segment
    169 starts at T + 169 h. Segment 0's largest timestamp is T + 168 h; ``UnifiedLog
    .deleteRetentionMsBreachedSegments`` takes it when ``now - largestTimestamp > retention.ms``
    (strictly), i.e. after T + 336 h; the first ``log.retention.check.interval.ms`` tick
    (every 5 min from the first append) after that is T + 336 h + 5 min, and it goes whole:
    all 169 batches, 28,420 bytes.
    """
    pi, run = runs["quiet-events"]
    assert [(r.at_ms, r.base_offset, r.reason) for r in run.rolls[:2]] == [
        (T, 0, ROLL_FIRST), (T + 169 * H, 169, ROLL_SEGMENT_MS)]
    first = run.deletions[0]
    assert first.at_ms == T + 336 * H + RETENTION_CHECK_INTERVAL_MS
    assert first.base_offsets == (0,) and first.bytes == 28_420
    assert first.reason == "retention_ms_breached"
    assert _layout(run.at_now) == _layout(pi.summaries)


def test_busy_topic_rolls_on_segment_bytes(runs):
    """busy-clicks-0: a 5-record batch (590 or 591 bytes) every 20 minutes.

    ``shouldRoll``'s size rule is ``size > maxSegmentBytes - messagesSize``: after 110
    batches a segment holds 64,950 bytes and 64,950 > 65,536 - 590, so the 111th batch
    (offset 550) starts a new segment, at T + 110 x 20 min, long before segment.ms. Segment 0's
    largest timestamp is batch 109's, T + 36 h 20 min; it is past retention after
    T + 204 h 20 min, and the 5-minute tick grid deletes it at T + 204 h 25 min.
    """
    _, run = runs["busy-clicks"]
    rolls = run.rolls[1:6]
    assert [r.base_offset for r in rolls] == [550, 1100, 1650, 2200, 2750]
    assert {r.reason for r in rolls} == {ROLL_SEGMENT_BYTES}
    assert rolls[0].at_ms == T + 110 * 20 * 60_000
    first = run.deletions[0]
    assert first.at_ms == T + 204 * H + 25 * 60_000
    assert first.base_offsets == (0,) and first.bytes == 64_950


def test_compact_delete_cleaner_merges_never_repeated_keys_forward(runs):
    """ledger-compact-0: a never-repeated key an hour, 168 bytes a batch, segment.ms 1 day.

    Rolls at hours 25, 50, 75 ... (``shouldRoll`` as above, 24 h strictly exceeded). The
    cleaner (``LogCleanerManager.grabFilthiestCompactedLog``, every
    ``log.cleaner.backoff.ms`` when idle) takes the log when
    ``cleanableBytes / (cleanBytes + cleanableBytes) > min.cleanable.dirty.ratio`` (0.5),
    cleanable being the non-active segments from the first dirty offset:

    * T + 25 h: [0] dirty, nothing clean: ratio 1 -> clean; ``groupSegmentsBySize`` makes
      one group (0); checkpoint 25.
    * T + 50 h: 4,200 clean, 4,200 dirty: 0.5 is not above 0.5 -> no clean.
    * T + 75 h: 4,200 clean, 8,400 dirty: 0.67 -> clean; the groups run over every segment
      below the end offset 75 while their sizes fit segment.bytes: (0, 25, 50), one segment
      of 12,600 bytes whose largest timestamp is hour 74's (``cleanSegments`` keeps every
      record: no key repeats).
    * T + 100/125/150 h: 0.25, 0.4, 0.5 -> no clean; T + 175 h: 16,800 / 29,400 = 0.57 ->
      (0, 75, 100, 125, 150) merge into one 29,400-byte segment with largest timestamp
      T + 174 h, so records from hour 0 now live until T + 174 h + 7 d.

    That is exactly what the fixture's writer did with Kafka's ``MemoryRecords.filterTo``, so
    the simulated segments at --at equal the ones on disk.
    """
    pi, run = runs["ledger-compact"]
    before = [(c.at_ms, c.groups, c.largest_timestamps) for c in run.cleanings
              if c.at_ms <= NOW]
    assert before == [(T + 25 * H, ((0,),), (T + 24 * H,)),
                      (T + 75 * H, ((0, 25, 50),), (T + 74 * H,)),
                      (T + 175 * H, ((0, 75, 100, 125, 150),), (T + 174 * H,))]
    assert _layout(run.at_now) == _layout(pi.summaries)
    assert _layout(pi.summaries)[0] == (0, 29_400, T + 174 * H)
    # the merged segment goes only when its youngest member expires (15 s cleaner ticks)
    first = run.deletions[0]
    assert first.base_offsets[0] == 0
    assert first.at_ms == T + 174 * H + 7 * DAY + CLEANER_BACKOFF_MS


def test_current_run_agrees_with_todays_verdicts(runs):
    """At --at, the segments the simulation left are exactly the ones today's verdicts
    (``explain_retention`` on the real segments) keep, and every segment they would delete
    now was deleted by a retention check before --at. (customers.compact's merge was placed
    by hand, so no replay of its surviving records reproduces it: the what-if starts from the
    disk for that reason, tested below.)"""
    for topic, (pi, run) in runs.items():
        if topic == "customers.compact":
            continue
        today = explain_retention(pi.summaries, pi.config, now_ms=NOW,
                                  high_watermark=pi.high_watermark,
                                  log_start_offset=pi.log_start_offset)
        kept = [v for v in today.segments if not v.deletable]
        assert [s.base_offset for s in run.at_now] == [v.base_offset for v in kept], topic
        assert [s.size for s in run.at_now] == [v.size for v in kept], topic
        gone = {b for d in run.deletions if d.at_ms <= NOW for b in d.base_offsets}
        assert {v.base_offset for v in today.segments if v.deletable} == gone, topic
    assert [v.base_offset for v in explain_retention(
        runs["busy-clicks"][0].summaries, runs["busy-clicks"][0].config, now_ms=NOW,
        high_watermark=None, log_start_offset=None).segments if v.deletable] == [0]


def _recommend() -> dict:
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE), "--config", str(CONFIG), "--at",
                           "2024-01-11T00:00Z", "--recommend", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_recommendation_is_the_operators_fix():
    """Both stories end with a smaller segment.bytes: quiet-events (1 day of data, 4 KiB, so it
    rolls daily instead of weekly) and ledger-compact (8 KiB: two day-segments no longer fit
    one group, so nothing rides forward). Over the horizon's second half the oldest record
    falls from two weeks to about retention.ms + one segment, the swing from ~50 % to ~13 %;
    busy-clicks already keeps its promise and gets no recommendation (customers.compact's
    is tested on its own, below)."""
    doc = _recommend()
    assert doc["type"] == "what_if_report" and doc["at"] == NOW
    recs = {r["topic"]: r for r in doc["recommendations"]}
    assert set(recs) == {"quiet-events", "ledger-compact", "customers.compact"}
    assert recs["quiet-events"]["changes"] == {"segment.bytes": 4096}
    assert recs["ledger-compact"]["changes"] == {"segment.bytes": 8192}
    for topic in ("quiet-events", "ledger-compact"):
        r = recs[topic]
        assert r["type"] == "recommendation" and r["why"] and set(r["cost"]) == {"before",
                                                                                 "after"}
        assert r["before"]["oldest_age_ms_late"] > 13 * DAY
        assert r["after"]["oldest_age_ms_late"] <= 7 * DAY * 1.25
        assert r["before"]["swing_late"] > 0.45 and r["after"]["swing_late"] < 0.2
    items = {(w["topic"], w["partition"]): w for w in doc["what_if"]}
    assert set(items) == {(t, p) for t in ("quiet-events", "busy-clicks", "ledger-compact",
                                           "customers.compact")
                          for p in (0, None)}
    quiet = items[("quiet-events", None)]
    assert quiet["type"] == "what_if" and quiet["changes"] == {"segment.bytes": 4096}
    for side in ("current", "proposed"):
        s = quiet[side]
        assert {"peak_bytes", "trough_bytes", "oldest_age_ms_max", "oldest_age_ms_end",
                "series"} <= set(s)
        assert 0 < len(s["series"]) <= 2 * SERIES_BUCKETS + 2  # and the first and last rows
        assert all(len(row) == 3 for row in s["series"])
    assert quiet["current"]["peak_bytes"] > quiet["proposed"]["peak_bytes"]


def test_what_if_text_and_errors(tmp_path):
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE / "quiet-events-0"), "--config",
                           str(CONFIG), "--at", "2024-01-11T00:00Z", "--what-if",
                           "segment.ms=86400000", "--horizon", "20", "--plot",
                           str(tmp_path / "w.png")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "topic quiet-events: " in proc.stdout
    assert "with segment.ms=86400000 the size moves between" in proc.stdout
    assert "oldest record, max" in proc.stdout
    assert (tmp_path / "w.png").read_bytes()[:4] == b"\x89PNG"
    bad = subprocess.run([SEGTOOLS, "retention", str(TREE), "--what-if", "segment.bytes"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "NAME=VALUE" in bad.stderr


def test_parse_changes_keeps_list_values():
    assert whatif.parse_changes("cleanup.policy=compact,delete,segment.ms=1000") == {
        "cleanup.policy": ("compact", "delete"), "segment.ms": 1000}
    with pytest.raises(ValueError):
        whatif.parse_changes("log.dirs=/tmp")


def test_tombstone_kept_until_its_horizon_then_removed():
    """``MemoryRecords.filterTo`` stamps ``now + delete.retention.ms`` into a kept batch holding
    a tombstone; a later clean past that horizon drops it (``shouldRetainRecord``). Key 0 is
    written at hour 0, then deleted by a tombstone at hour 1; hourly rolls (segment.ms just
    under 1 h) and a ratio of 0.01 make the cleaner run after every roll. The active segment
    is never cleaned, so the tombstone is first seen at hour 2 (stamped 2 h + 5 h = 7 h) and
    dropped by the first clean at or after hour 7."""
    n = 30
    ts = T + np.arange(n) * H
    keys = np.r_[0, 0, np.arange(1, n - 1)]
    tomb = np.zeros(n, bool)
    tomb[1] = True
    h = History.from_records(np.arange(n), np.arange(n), ts, np.full(n, 100), np.arange(n),
                             np.arange(n), ts, np.full(n, 100.0), keys, tomb,
                             np.full(n, -1))
    c = TopicConfig(cleanup_policy=("compact",), segment_ms=H - 1, delete_retention_ms=5 * H,
                    min_cleanable_dirty_ratio=0.01)
    run = simulate(h, c, now_ms=T + n * H, end_ms=T + n * H)
    assert run.cleanings[0].removed_bytes == 0  # the tombstone is still in the active segment
    removing = [x for x in run.cleanings if x.removed_bytes]
    # the clean that first sees the tombstone drops the value it supersedes and stamps it
    assert removing[0].removed_bytes == 100 and removing[0].at_ms == T + 2 * H
    # the next removal is the tombstone itself, at the first clean past the horizon
    assert removing[1].removed_bytes == 100
    assert T + 7 * H <= removing[1].at_ms < T + 8 * H


def test_config_resolution_is_unchanged_by_changes():
    base = resolve("t")
    changed = whatif.apply_changes(base, {"segment.bytes": 1 << 20})
    assert changed.segment_bytes == 1 << 20 and base.segment_bytes == 1 << 30
    assert changed.source("segment.bytes").source == "what_if"


def test_api_gives_the_cli_document():
    """``segtools.what_if`` and ``retention --what-if --format json`` are one assembly."""
    api = segtools.what_if(str(TREE / "quiet-events-0"), changes="segment.ms=86400000",
                           at="2024-01-11T00:00Z", horizon_days=10, config=str(CONFIG))
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE / "quiet-events-0"), "--config",
                           str(CONFIG), "--at", "2024-01-11T00:00Z", "--what-if",
                           "segment.ms=86400000", "--horizon", "10", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    cli = json.loads(proc.stdout)
    cli.pop("plot")
    assert json.loads(json.dumps(api.to_json())) == cli


def test_ingest_rate_respaces_the_replay():
    """``--ingest BYTES_PER_S``: the quiet topic's replay at 1 KB/s fills 64 KiB segments in
    about a minute, so every future roll is a ``segment.bytes`` roll; replayed at its own rate
    (~4 KB a day) it rolls only on ``segment.ms``."""
    cfg_file = parse_config_text(CONFIG.read_text(), str(CONFIG))
    loaded = load_inputs(walk([str(TREE / "quiet-events-0")])[0], config_file=cfg_file)
    part = whatif.PartitionHistory(loaded.partitions[0], si.history(loaded.partitions[0]))
    config = loaded.partitions[0].config
    end = NOW + 2 * H
    fast = whatif.run_partition(part, config, now_ms=NOW, end_ms=end,
                                ingest=whatif.Ingest(1000.0), partitions=1)
    auto = whatif.run_partition(part, config, now_ms=NOW, end_ms=end, ingest=whatif.AUTO,
                                partitions=1)
    future = [r for r in fast.rolls if r.at_ms > NOW]
    assert len(future) >= 60 and {r.reason for r in future} == {ROLL_SEGMENT_BYTES}
    assert all(r.reason != ROLL_SEGMENT_BYTES for r in auto.rolls)


def test_series_starts_at_the_moment_and_ends_at_the_horizon():
    """A chart starts at ``--at``: a first row that is neither its bucket's highest nor its
    lowest size is still kept (busy-clicks' first retention check left 360,190 B, between the
    bucket's 361,963 B peak and its 297,013 B trough, and its chart began 65 minutes late)."""
    times = np.arange(10, dtype=np.int64) * 1000
    size = np.array([5, 9, 1, 4, 4, 4, 4, 4, 4, 3], np.int64)
    oldest = np.array([0, 0, 2, 2, 2, 2, 2, 2, 2, -1], np.int64)
    rows = bounded_series(times, size, oldest, buckets=1)
    assert rows == ((0, 5, 0), (1000, 9, 0), (2000, 1, 2), (9000, 3, None))
    report = whatif.what_if_report(
        load_inputs(walk([str(TREE / "busy-clicks-0")])[0],
                    config_file=parse_config_text(CONFIG.read_text(), str(CONFIG))),
        {"segment.bytes": 16384}, now_ms=NOW, horizon_days=2)
    for item in report.items:
        for run in (item.current, item.proposed):
            assert run.series[0][0] == NOW and run.series[-1][0] == report.end_ms
            assert run.series[0][1] == 360_190


def test_a_batch_without_a_record_timestamp_stays_without_one_in_the_replay():
    """sample's edge-cases-0 holds a batch whose oldest record timestamp is unknown (-1). The
    replay kept each unit's spread below its largest timestamp, and the spread to -1 made
    that batch's copies 53 years old: "the oldest record is at most 53y old" beside a start
    of 7 hours. Replayed at 100 kB/s for 10 days under 7-day retention, no record may be
    older than retention plus the time a 4 KiB or 1 GiB segment takes to fill and expire."""
    report = segtools.what_if(str(FIXTURES / "logdirs" / "sample" / "edge-cases-0"),
                              changes="segment.bytes=4096", at="2023-11-15T06:14Z",
                              horizon_days=10, ingest_bytes_per_s=100_000)
    for item in report.items:
        for run in (item.current, item.proposed):
            assert run.oldest_age_ms_start < DAY
            assert 7 * DAY <= run.oldest_age_ms_max < 8 * DAY, item


def test_a_segment_without_record_timestamps_is_aged_by_its_file_mtime():
    """Magic 0 batches carry no timestamp: Kafka ages their segment by the file's
    ``lastModified`` (``LogSegment.largestTimestamp``), as ``segtools retention`` does. A run
    from the disk given the files' mtimes keeps two segments written an hour before ``now``
    under a week's retention; without them (a face that has none) it deletes both at the
    first check (the active one rolled first), as if they dated from 1970."""
    rows = {"segment_base_offset": [0, 0, 2, 2], "position": [0, 70, 0, 70],
            "base_offset": [0, 1, 2, 3], "last_offset": [0, 1, 2, 3],
            "base_timestamp": [-1] * 4, "max_timestamp": [-1] * 4, "size": [70] * 4}
    h = si.from_batch_rows(rows)
    config = TopicConfig(retention_ms=7 * DAY)
    aged = simulate(si.on_disk(h, [0, 2], 280, [NOW - H, NOW - H]), config, now_ms=NOW,
                    end_ms=NOW + H, from_disk=True)
    unaged = simulate(si.on_disk(h, [0, 2], 280), config, now_ms=NOW, end_ms=NOW + H,
                      from_disk=True)
    assert [d.base_offsets for d in aged.deletions] == []
    assert [d.base_offsets for d in unaged.deletions] == [(0, 2)]
