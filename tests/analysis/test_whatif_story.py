"""The what-if from the disk as it is: customers.compact-0's stale story (the ``whatif`` tree,
bytes from ``fixtures/java/WhatIfFixtures.java``), the start of every simulation against
``segtools retention`` on every fixture partition, and the ingest model of a topic as it is
written now.

customers.compact-0 at ``--at`` (``NOW`` = T + 240 h, the story's day 60; day 0 is T - 50 d):
segment @0..419 (137,802 bytes) holds 400 keys written once on day 0 and 20 imported on day 58
at 03:00 and 03:10, merged by the cleaner (``MemoryRecords.filterTo``), so its largest
timestamp is day 58 03:10 = T + 8 d 3 h 10 min; the active segment @420 holds a hot key written
every ten minutes since day 59 03:20. cleanup.policy=compact,delete, retention.ms 7 d,
segment.ms 1 d, segment.bytes 1 MiB, min.cleanable.dirty.ratio 0.5; the cleaner checkpoint is
420.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from segtools.analysis import simulation_input as si
from segtools.analysis import whatif
from segtools.analysis.config import parse_config_text
from segtools.analysis.explain import retention_report
from segtools.analysis.partition_input import load_inputs
from segtools.analysis.simulation import CLEANER_BACKOFF_MS, MIN_HISTORY_MS
from segtools.storage.logdirs import walk
from tests.analysis.whatif_tree import CONFIG, DAY, NOW, SEGTOOLS, TREE, H, T
from tests.fixtures_manifest import FIXTURES

END = NOW + 30 * DAY
DAY0 = T - 50 * DAY
MERGED_NEWEST = DAY0 + 58 * DAY + 3 * H + 10 * 60_000
RETENTION = 7 * DAY


def _config_file():
    return parse_config_text(CONFIG.read_text(), str(CONFIG))


@pytest.fixture(scope="module")
def customers() -> whatif.PartitionHistory:
    loaded = load_inputs(walk([str(TREE / "customers.compact-0")])[0],
                         config_file=_config_file())
    pi = loaded.partitions[0]
    return whatif.PartitionHistory(pi, si.history(pi))


def _run(part: whatif.PartitionHistory, change: dict):
    config = whatif.apply_changes(part.pi.config, change)
    return whatif.run_partition(part, config, now_ms=NOW, end_ms=END, ingest=whatif.AUTO,
                                partitions=1)


def test_the_disk_is_the_story(customers):
    """The fixture holds what the story says: the merged segment, its day-58 largest
    timestamp, and records from day 0 in it."""
    assert next((s.base_offset, s.size, s.max_timestamp) for s in customers.pi.summaries) == \
        (0, 137_802, MERGED_NEWEST)
    assert customers.pi.cleaner_offset == 420
    assert int(customers.history.unit_ts.min()) == DAY0


def test_current_config_keeps_day_zero_records_to_the_horizon(customers):
    """Today's config. The hot key's segment started at day 59 03:20 = NOW - 20 h 40 min, so
    ``segment.ms`` (1 d, strictly exceeded) rolls it at the first hot append after NOW + 3 h
    20 min, NOW + 3 h 30 min, and a day-segment every day after. The first dirty range worth
    cleaning (``min.cleanable.dirty.ratio`` 0.5 against the 137,802 clean bytes) comes with the
    third day-segment; ``groupSegmentsBySize`` puts @0 (137,802 B) and the three day-segments
    (about 47 KB each) in one group under 1 MiB, so the merged segment takes the hot key's
    newest timestamp and the day-0 records ride forward, each clean before @0's largest
    timestamp is 7 days old. Nothing is ever deleted: at the horizon's end (day 90) the
    oldest record is day 0's, 90 days old (more than 4 x retention.ms)."""
    run = _run(customers, {})
    assert run.rolls[0].at_ms == NOW + 3 * H + 30 * 60_000
    first = run.cleanings[0]
    assert first.groups[0][:2] == (0, 420) and len(first.groups[0]) == 4
    assert first.at_ms < MERGED_NEWEST + RETENTION
    assert all(c.groups[0][0] == 0 and len(c.groups[0]) > 1 for c in run.cleanings)
    assert run.deletions == ()
    o = whatif.outcome([run], NOW, END)
    assert o.oldest_age_ms_start == NOW - DAY0 == 60 * DAY
    assert o.oldest_age_ms_end == END - DAY0 == 90 * DAY >= 4 * RETENTION
    assert o.oldest_age_ms_late == 90 * DAY


def test_small_segments_let_retention_take_them(customers):
    """segment.bytes 16 KiB. The active segment already holds 47,368 bytes, so the next
    append rolls (``size > maxSegmentBytes - messagesSize``); @0 (137,802 B) is larger than
    segment.bytes on its own, so ``groupSegmentsBySize`` never groups it with a newer segment
    and a clean leaves its largest timestamp at day 58 03:10 (nothing in it is superseded).
    ``deleteRetentionMsBreachedSegments`` takes it once ``now - largestTimestamp >
    retention.ms``: the first cleaner tick (15 s grid from NOW) after day 65 03:10 is
    day 65 03:10:15, within retention.ms of the merged segment's newest record (plus one
    tick). From then on nothing older than the hot key's recent segments is left: over the
    horizon's second half the oldest record is well under 1.5 x retention.ms."""
    run = _run(customers, {"segment.bytes": 16384})
    assert run.rolls[0].reason == "segment.bytes"
    assert all(c.groups[0] == (0,) for c in run.cleanings if c.groups[0][0] == 0)
    gone = run.deletions[0]
    assert gone.base_offsets == (0,) and gone.bytes == 137_802
    assert gone.at_ms == MERGED_NEWEST + RETENTION + CLEANER_BACKOFF_MS
    o = whatif.outcome([run], NOW, END)
    assert o.oldest_age_ms_max == gone.at_ms - 1 - DAY0
    assert o.oldest_age_ms_late <= 1.5 * RETENTION
    assert o.oldest_age_ms_end <= 1.5 * RETENTION


def test_recommend_proposes_the_change_that_achieves_it():
    """``--recommend`` on the story finds a segment.bytes (nearest first: 512 KiB still lets
    a group reach the day-segment that holds the hot key's newest record, 256 KiB does not:
    the group of @0 and two day-segments is full before the third, and the hot records in it
    are superseded, so the merged segment keeps day 58's largest timestamp), and its figures
    are the what-if's: the current config keeps 90-day-old records, the proposed one none
    older than 1.5 x retention.ms over the horizon's second half."""
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE / "customers.compact-0"),
                           "--config", str(CONFIG), "--at", "2024-01-11T00:00Z",
                           "--recommend", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (rec,) = doc["recommendations"]
    (name, value), = rec["changes"].items()
    assert (name, value) == ("segment.bytes", 262_144)
    assert rec["before"]["oldest_age_ms_late"] == 90 * DAY
    assert rec["after"]["oldest_age_ms_late"] <= 1.5 * RETENTION
    topic = next(w for w in doc["what_if"] if w["partition"] is None)
    assert topic["changes"] == rec["changes"]
    assert topic["current"]["oldest_age_ms_end"] >= 4 * RETENTION
    assert topic["proposed"]["oldest_age_ms_end"] <= 1.5 * RETENTION


# --------------------------------------------------------------------------- every fixture


def _trees() -> list:
    return sorted(p for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())


@pytest.mark.parametrize("tree", _trees(), ids=lambda p: p.name)
def test_the_simulation_starts_where_retention_stands(tree):
    """On every fixture partition, at ``--at`` (an hour after the tree's newest batch, so
    most segments are kept and some hold stale records): the what-if's current config starts
    with the partition's size, and its oldest record after the first retention check is
    ``segtools retention``'s oldest stale record, or where nothing is stale the oldest record
    of the segments it keeps (read here from the records themselves)."""
    import segtools

    config_file = _config_file() if tree.name == "whatif" else None
    log_dirs = walk([str(tree)])[0]
    loaded = load_inputs(log_dirs, config_file=config_file)
    if not loaded.partitions:
        pytest.skip("no partition to simulate")
    newest = max((s.max_timestamp for pi in loaded.partitions for s in pi.summaries),
                 default=NOW)
    at = newest + H
    retention = {e.input.label + str(e.input.dir.path): e for e in retention_report(
        loaded, now_ms=at).partitions}
    report = whatif.what_if_report(loaded, {}, now_ms=at, horizon_days=1)
    items = [w for w in report.items if w.partition is not None]
    assert len(items) == len(loaded.partitions)
    for pi, w in zip(loaded.partitions, items, strict=True):
        e = retention[pi.label + str(pi.dir.path)]
        pr = e.retention
        assert w.current.start_bytes == pr.size, pi.label
        kept = [v for v in pr.segments if not v.deletable]
        stale = [v.stale.oldest_timestamp for v in kept if v.stale and v.stale.count]
        if stale:
            expected = at - min(stale)
        else:
            bases = {v.base_offset for v in kept}
            table = segtools.open(str(pi.dir.path)).to_arrow().read_all()
            ts = [t for t, b in zip(table["timestamp"].to_pylist(),
                                    table["segment_base_offset"].to_pylist(), strict=True)
                  if b in bases and t is not None]
            expected = at - int(min(ts).timestamp() * 1000) if ts else None
        assert w.current.oldest_age_ms_start == expected, pi.label


# --------------------------------------------------------------------------- ingest


def test_steady_recent_ingest_is_never_simulated_empty():
    """Every partition of the ``whatif`` tree is written steadily up to --at (a batch an hour
    at least); replayed from its last day, no config empties it: the trough stays above 0
    under today's config and under segments as small as Kafka allows, which roll on every
    append and are deleted as soon as retention allows."""
    loaded = load_inputs(walk([str(TREE)])[0], config_file=_config_file())
    for change in ({}, {"segment.bytes": 14}):
        report = whatif.what_if_report(loaded, change, now_ms=NOW, horizon_days=30)
        for w in report.items:
            assert w.current.trough_bytes > 0, w.label
            assert w.proposed.trough_bytes > 0, (w.label, change)


def test_the_ingest_model_is_said():
    """The header says how the future is modelled, in the text and in the JSON."""
    proc = subprocess.run([SEGTOOLS, "retention", str(TREE / "quiet-events-0"), "--config",
                           str(CONFIG), "--at", "2024-01-11T00:00Z", "--what-if",
                           "segment.ms=86400000", "--horizon", "5"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "starting from the segments on disk" in first
    assert "ingest: each partition's last 1d of history (its recent rate)" in first


def test_a_history_too_short_to_extrapolate_recommends_nothing():
    """The sample tree's partitions were written within seconds (big-value: 275 KiB in
    3.5 s) or an hour, less than MIN_HISTORY_MS (a day, the ingest model's window): no future
    appends are modelled from them, the what-if names them, and ``--recommend`` recommends
    nothing for their topics (a month of traffic from 3.5 s of data would be arithmetic, not
    evidence)."""
    assert MIN_HISTORY_MS == DAY
    proc = subprocess.run([SEGTOOLS, "retention", str(FIXTURES / "logdirs" / "sample"),
                           "--at", "2023-11-16T00:00Z", "--recommend", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    topics = {w["topic"]: w for w in doc["what_if"] if w["partition"] is None}
    assert topics["big-value"]["too_short"] == ["big-value-0"]
    assert topics["corrupt-crc"]["too_short"] == ["corrupt-crc-0"]
    short = {t for t, w in topics.items() if w["too_short"]}
    assert not short & {r["topic"] for r in doc["recommendations"]}
    assert topics["big-value"]["unrecommended"] == \
        "a partition's history is too short to extrapolate"
    assert all(w["unrecommended"] is None for w in doc["what_if"] if w["partition"] is not None)
    big = topics["big-value"]
    # no replay: nothing is appended, so the size never grows past what is on disk
    assert big["current"]["peak_bytes"] <= big["current"]["start_bytes"]
    text = subprocess.run([SEGTOOLS, "retention", str(FIXTURES / "logdirs" / "sample"),
                           "--at", "2023-11-16T00:00Z", "--recommend"],
                          capture_output=True, text=True, timeout=300).stdout
    assert "big-value-0: the history spans less than 1d, too short to extrapolate" in text
    # an empty second half is said in words, never as an age of "-"
    assert "topic big-value: " in text and "at most - old" not in text
    assert "no change proposed because a partition's history is too short to extrapolate: " \
        "under the current config the size moves between 0 B and 275.3 KiB and the topic " \
        "is empty over the horizon's second half" in text


def test_batches_without_a_timestamp_are_no_history():
    """legacy's mixed.upgrade-0 starts with v0 messages (no timestamp, -1) and then has 11
    seconds of v1/v2 batches (2017-07-14T04:40:07Z to 04:40:18Z). Counted from -1, its
    history looked 47 years long and ``--recommend`` advised a segment.ms from those 11
    seconds; the timed batches alone are what the history covers, far less than a day."""
    loaded = load_inputs(walk([str(FIXTURES / "logdirs" / "legacy" / "mixed.upgrade-0")])[0])
    (pi,) = loaded.partitions
    h = si.history(pi)
    assert int(h.batch_ts[0]) == -1 and int(h.batch_ts[-1]) - int(h.batch_ts[4]) == 11_750
    assert whatif.PartitionHistory(pi, h).too_short
    report = whatif.what_if_report(loaded, None, now_ms=int(h.batch_ts[-1]) + H,
                                   horizon_days=30, recommend=True)
    assert report.recommendations == ()
    assert all(w.too_short == ("mixed.upgrade-0",) for w in report.items)


def test_records_from_after_the_moment_are_not_an_empty_log():
    """payloads' plain-0 at 2023-11-16 (its 377 bytes are timestamped 2024-05-01, 167 days
    later): the log keeps them all month, so the what-if must not call it empty. Their ages
    are negative, as ``segtools retention`` gives them ("167d 14h in the FUTURE"), and the
    sentence says the records are in the future (it said "the topic is empty over the
    horizon's second half" beside a size that stays at 377 B)."""
    from segtools.timestamps import to_millis

    loaded = load_inputs(walk([str(FIXTURES / "logdirs" / "payloads" / "plain-0")])[0])
    at = to_millis("2023-11-16T00:00Z")
    report = whatif.what_if_report(loaded, {}, now_ms=at, horizon_days=30)
    topic = report.items[-1]
    newest = max(s.max_timestamp for s in loaded.partitions[0].summaries)
    c = topic.current
    assert c.late_trough_bytes == c.peak_bytes == 377
    assert c.oldest_age_ms_end is not None and c.oldest_age_ms_end < 0
    assert c.oldest_age_ms_late == c.oldest_age_ms_end > at + 30 * DAY - newest
    said = whatif.topic_sentence(topic)
    assert "empty" not in said
    assert "every record left is timestamped at least 137d 14h in the future" in said


def test_the_docs_quote_the_sentence_recommend_prints():
    """docs/retention-and-compaction.md quotes the stories' recommendation for
    customers.compact; the tool's own line, so the figures cannot drift (they did: 274.8 KiB
    quoted where the tool said 274.1 KiB)."""
    doc = (FIXTURES.parent / "docs" / "retention-and-compaction.md").read_text()
    quoted = next(block for block in doc.split("```")
                  if block.lstrip().startswith("topic customers.compact:"))
    run = subprocess.run([SEGTOOLS, "retention", str(TREE), "--config",
                          str(CONFIG), "--at", "2024-01-11T00:00Z", "--recommend", "-q"],
                         capture_output=True, text=True, timeout=600)
    printed = next(line for line in run.stdout.splitlines()
                   if line.startswith("topic customers.compact:"))
    assert " ".join(quoted.split()) == " ".join(printed.split())
