"""``--recommend`` on a ``compact,delete`` topic also tries the cleaner's settings
(``min.compaction.lag.ms``, ``min.cleanable.dirty.ratio``, ``max.compaction.lag.ms``), checked
on ledger-compact-0 of the ``whatif`` tree (bytes from ``fixtures/java/WhatIfFixtures.java``).

The partition: a never-repeated key an hour from ``T`` (168 bytes a batch), segment.ms one
day, so segment ``k`` holds hours ``25k .. 25k + 24`` (4,200 bytes) and its largest timestamp
is ``T + (25k + 24) h``; retention.ms is 7 days (168 h), min.cleanable.dirty.ratio 0.5, and
the cleaner looks every ``log.cleaner.backoff.ms`` (15 s) from ``T``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from segtools.analysis import simulation_input as si
from segtools.analysis import whatif
from segtools.analysis.config import TopicConfig, parse_config_text
from segtools.analysis.partition_input import load_inputs
from segtools.analysis.simulation import CLEANER_BACKOFF_MS
from segtools.storage.logdirs import walk
from tests.analysis.whatif_tree import CONFIG, DAY, NOW, SEGTOOLS, TREE, H, T


@pytest.fixture(scope="module")
def ledger() -> whatif.PartitionHistory:
    cfg_file = parse_config_text(CONFIG.read_text(), str(CONFIG))
    loaded = load_inputs(walk([str(TREE / "ledger-compact-0")])[0], config_file=cfg_file)
    pi = loaded.partitions[0]
    return whatif.PartitionHistory(pi, si.history(pi))


def _run(part: whatif.PartitionHistory, lag_hours: int):
    config = whatif.apply_changes(part.pi.config, {"min.compaction.lag.ms": lag_hours * H})
    return whatif.run_partition(part, config, now_ms=NOW, end_ms=NOW + 3 * DAY,
                                ingest=whatif.AUTO, partitions=1, from_disk=False)


def test_lag_longer_than_retention_minus_a_segment_cleans_each_segment_alone(ledger):
    """min.compaction.lag.ms = 147 h (7/8 of retention.ms).

    ``LogCleanerManager.cleanableOffsets`` ends the cleanable range at the first dirty
    non-active segment with ``largestTimestamp > now - lag``, so segment ``k`` is cleanable from
    ``T + (25k + 24 + 147) h``: segment 0 at T + 171 h (alone: segment 25's largest, 49 h, is
    past 171 - 147 = 24 h); nothing is clean yet, so the ratio is 1 and it is cleaned as one
    group (0), checkpoint 25. Retention takes it when ``now - 24 h > 168 h``, at the first
    cleaner tick after T + 192 h (192 h + 15 s), before segment 25 becomes cleanable at
    T + 196 h; so at every clean the only cleanable segment is alone in the log's cleaned
    part and ``groupSegmentsBySize`` never merges two: (25) at 196 h, (50) at 221 h, each
    deleted 21 h later. No record rides forward: the oldest lives 192 h and 15 s."""
    run = _run(ledger, 147)
    assert [(c.at_ms, c.groups, c.largest_timestamps) for c in run.cleanings[:3]] == [
        (T + 171 * H, ((0,),), (T + 24 * H,)),
        (T + 196 * H, ((25,),), (T + 49 * H,)),
        (T + 221 * H, ((50,),), (T + 74 * H,))]
    assert all(len(g) == 1 for c in run.cleanings for g in c.groups)
    assert [(d.at_ms, d.base_offsets, d.bytes) for d in run.deletions[:3]] == [
        (T + 192 * H + CLEANER_BACKOFF_MS, (0,), 4200),
        (T + 217 * H + CLEANER_BACKOFF_MS, (25,), 4200),
        (T + 242 * H + CLEANER_BACKOFF_MS, (50,), 4200)]


def test_shorter_lag_still_merges_old_records_forward(ledger):
    """min.compaction.lag.ms = 126 h (3/4 of retention.ms).

    * T + 150 h: segment 0 (largest 24 h) is cleanable, nothing is clean: ratio 1, group (0).
    * T + 175 h: segment 25 (largest 49 h) is cleanable; clean 4,200 (segment 0), dirty
      4,200: ``grabFilthiestCompactedLog`` wants the ratio *above* 0.5, so no clean.
    * T + 192 h + 15 s: retention deletes segment 0; the checkpoint (25) is the log start.
    * T + 200 h: segment 50 (largest 74 h) is cleanable too; nothing clean is left, dirty
      8,400: ratio 1, and both fit segment.bytes, so ``groupSegmentsBySize`` makes one group
      (25, 50) whose largest timestamp is 74 h: hour 25's records now wait for 74 h + 168 h
      and go at T + 242 h + 15 s, 217 h old, past retention.ms + 25 % (210 h)."""
    run = _run(ledger, 126)
    assert [(c.at_ms, c.groups, c.largest_timestamps) for c in run.cleanings[:2]] == [
        (T + 150 * H, ((0,),), (T + 24 * H,)),
        (T + 200 * H, ((25, 50),), (T + 74 * H,))]
    assert run.cleanings[1].read_bytes == 8400
    assert [(d.at_ms, d.base_offsets, d.bytes) for d in run.deletions[:2]] == [
        (T + 192 * H + CLEANER_BACKOFF_MS, (0,), 4200),
        (T + 242 * H + CLEANER_BACKOFF_MS, (25,), 8400)]


def test_compaction_candidates_only_for_compact_delete():
    """Lags from a quarter to all of retention.ms above today's, the two ratios above
    today's, and half of retention.ms as max.compaction.lag.ms; nothing for a topic that is
    not both compacted and deleted."""
    r = 7 * DAY
    both = TopicConfig(cleanup_policy=("compact", "delete"), retention_ms=r)
    assert whatif.compaction_candidates(both) == [
        {"min.compaction.lag.ms": r // 4}, {"min.compaction.lag.ms": r // 2},
        {"min.compaction.lag.ms": 3 * r // 4}, {"min.compaction.lag.ms": 7 * r // 8},
        {"min.compaction.lag.ms": r}, {"min.cleanable.dirty.ratio": 0.75},
        {"min.cleanable.dirty.ratio": 0.9}, {"max.compaction.lag.ms": r // 2}]
    late = TopicConfig(cleanup_policy=("compact", "delete"), retention_ms=r,
                       min_compaction_lag_ms=r // 2, min_cleanable_dirty_ratio=0.8,
                       max_compaction_lag_ms=DAY)
    assert whatif.compaction_candidates(late) == [
        {"min.compaction.lag.ms": 3 * r // 4}, {"min.compaction.lag.ms": 7 * r // 8},
        {"min.compaction.lag.ms": r}, {"min.cleanable.dirty.ratio": 0.9}]
    assert whatif.compaction_candidates(TopicConfig(retention_ms=r)) == []
    assert whatif.compaction_candidates(TopicConfig(cleanup_policy=("compact",),
                                                    retention_ms=r)) == []


def test_recommendation_tries_the_lags_and_keeps_the_segment_fix():
    """ledger-compact: the lags are tried nearest first; 1/4, 1/2 and 3/4 of retention.ms
    still merge old records forward (see above), 7/8 (147 h) does not and is the
    alternative; the ratios and the shorter max lag do not help (cleans still merge the
    cleaned head with the next segment). The recommendation stays the operators' fix,
    segment.bytes 8 KiB, since a segment change is preferred to compacting later. The cost
    shows the cleaner's work: the lag cleans each segment once, alone. quiet-events is not
    compacted: no lag is tried and there is no alternative."""
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE), "--config", str(CONFIG), "--at",
                           "2024-01-11T00:00Z", "--recommend", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    recs = {r["topic"]: r for r in json.loads(proc.stdout)["recommendations"]}
    ledger = recs["ledger-compact"]
    assert ledger["changes"] == {"segment.bytes": 8192}
    lags = [(t["changes"]["min.compaction.lag.ms"], t["meets"]) for t in ledger["tried"]
            if "min.compaction.lag.ms" in t["changes"]]
    assert lags == [(42 * H, False), (84 * H, False), (126 * H, False), (147 * H, True)]
    others = [t for t in ledger["tried"] if "min.cleanable.dirty.ratio" in t["changes"] or
              "max.compaction.lag.ms" in t["changes"]]
    assert len(others) == 3 and not any(t["meets"] for t in others)
    (alt,) = ledger["alternatives"]
    assert alt["changes"] == {"min.compaction.lag.ms": 147 * H}
    assert alt["after"]["oldest_age_ms_late"] <= 7 * DAY * 1.25
    assert alt["cost"]["after"]["min_compaction_lag_ms"] == 147 * H
    before, after = alt["cost"]["before"], alt["cost"]["after"]
    assert after["cleaner_passes"] > before["cleaner_passes"]
    assert after["cleaner_bytes_read"] < ledger["cost"]["after"]["cleaner_bytes_read"]
    quiet = recs["quiet-events"]
    assert "alternatives" not in quiet
    assert all(set(t["changes"]) <= {"segment.bytes", "segment.ms"} for t in quiet["tried"])
    assert "min_compaction_lag_ms" not in quiet["cost"]["before"]


def test_text_names_the_alternative():
    """The text output says the alternative in a line under the recommendation's cost table,
    its lag also as a duration, with the cleaner's passes: one per day-segment that becomes
    147 h old within the 30 days from --at (T + 240 h), i.e. whose largest timestamp
    (hour 25k + 24) lies between T + 199 h (segment 175, the first one not yet cleaned on
    disk) and T + 813 h: k = 7 .. 31, 25 passes."""
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE / "ledger-compact-0"), "--config",
                           str(CONFIG), "--at", "2024-01-11T00:00Z", "--recommend"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "also keeps it" in x)
    assert "min.compaction.lag.ms=529200000 (6d 3h)" in line and "25 cleaner passes" in line
    assert "recommendation: topic ledger-compact: with segment.bytes=8192" in proc.stdout
