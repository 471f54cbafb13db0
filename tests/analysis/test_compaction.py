"""explain_compaction: figures on Kafka-written fixtures checked against a brute-force pass over
what Kafka's own reader dumped (fixtures/expected), and hand-built transaction cases."""

from __future__ import annotations

import json

import pytest

from segtools.analysis import compaction as comp
from segtools.analysis import explain
from segtools.analysis.cleaner_input import read_records
from segtools.analysis.config import TopicConfig
from segtools.analysis.partition_input import load_inputs
from segtools.cli.main import main
from segtools.storage.logdirs import walk
from tests.analysis.scenarios import DAY, HOUR, T0, seg
from tests.fixtures_manifest import LOGS, SAMPLE, expected_lines

COMPACT = TopicConfig(cleanup_policy=("compact",))
NOV16 = 1_700_092_800_000  # 2023-11-16T00:00Z: before the fixture's delete horizon
LATER = 1_700_200_000_000  # 2023-11-17T05:46Z: after it (1700111640000)


def analyse(partition: str, now: int, key: bytes | None = None, config=COMPACT):
    log_dirs, _ = walk([SAMPLE / partition])
    [pi] = load_inputs(log_dirs, at=now).partitions
    cols, first_batch = read_records(pi)
    return comp.explain_compaction(
        cols, pi.summaries, config, now_ms=now, high_watermark=pi.high_watermark,
        log_start_offset=pi.log_start_offset, cleaner_offset=pi.cleaner_offset, key=key,
        tombstone_limit=1000, first_batch_timestamps=first_batch)


def dumped(partition: str) -> list[tuple[int, dict, dict]]:
    """(segment base, batch line, record line) from Kafka's reader, live .log files only."""
    out = []
    entries = sorted((e for e in LOGS if f"/{partition}/" in e["path"]
                      and e["path"].endswith(".log")), key=lambda e: e["path"])
    for entry in entries:
        base = int(entry["path"].rsplit("/", 1)[1].split(".")[0])
        batch = None
        for line in expected_lines(entry):
            if line["type"] == "batch":
                batch = line
            elif line["type"] == "record" and not batch["is_control"]:
                out.append((base, batch, line))
    return out


def brute_force_clean(rows, *, first_dirty: int, first_uncleanable: int, now: int):
    """Cleaner.shouldRetainRecord, written plainly: the map covers
    [first_dirty, first_uncleanable); segments below first_uncleanable are rewritten."""
    latest: dict[str, int] = {}
    for _, _, rec in rows:
        if rec["key"] is not None and first_dirty <= rec["offset"] < first_uncleanable:
            latest[rec["key"]] = max(latest.get(rec["key"], -1), rec["offset"])
    removed = {}
    for base, batch, rec in rows:
        if base >= first_uncleanable:
            continue
        horizon = batch["delete_horizon_ms"]
        if rec["key"] is None:
            removed[rec["offset"]] = comp.REMOVED_NO_KEY
        elif rec["offset"] < latest.get(rec["key"], -1):
            removed[rec["offset"]] = comp.REMOVED_SUPERSEDED
        elif rec["value"] is None and horizon is not None and now >= horizon:
            removed[rec["offset"]] = comp.REMOVED_TOMBSTONE
    return removed


@pytest.mark.parametrize("partition, first_dirty, first_uncleanable, now", [
    ("payments-compact-0", 40, 60, NOV16),
    ("payments-compact-0", 40, 60, LATER),
    ("payments-compact-1", 0, 36, NOV16),
])
def test_fixture_figures_match_brute_force(partition, first_dirty, first_uncleanable, now):
    rows = dumped(partition)
    pc = analyse(partition, now)
    keys = [rec["key"] for _, _, rec in rows if rec["key"] is not None]
    last = {}
    for _, _, rec in rows:
        if rec["key"] is not None:
            last[rec["key"]] = rec["offset"]
    superseded = [(b, rec) for b, b_, rec in ((b, bt, r) for b, bt, r in rows)
                  if rec["key"] is not None and rec["offset"] < last[rec["key"]]]
    assert pc.records == len(rows)
    assert pc.keyed_records == len(keys)
    assert pc.distinct_keys == len(set(keys))
    assert pc.superseded_records == len(superseded)
    share = {(b, rec["offset"]): bt["size"] / bt["count"] for b, bt, rec in rows}
    assert pc.superseded_bytes == pytest.approx(
        sum(share[(b, rec["offset"])] for b, rec in superseded))
    tombstones = [rec for _, _, rec in rows if rec["key"] is not None and rec["value"] is None]
    assert pc.tombstone_count == len(tombstones)
    assert [t.offset for t in pc.tombstones] == [t["offset"] for t in tombstones]
    assert pc.first_dirty_offset == first_dirty
    assert pc.first_uncleanable_offset == first_uncleanable
    # every record's fate, one key at a time, against the brute force
    expected = brute_force_clean(rows, first_dirty=first_dirty,
                                 first_uncleanable=first_uncleanable, now=now)
    import base64

    seen = {}
    for k in set(keys):
        for r in analyse(partition, now, key=base64.b64decode(k)).key_history:
            seen[r.offset] = r.fate
    removed = {o: f for o, f in seen.items() if f.startswith("removed")}
    assert removed == expected
    assert pc.removed_records == len(expected)


def test_clean_dirty_split_and_ratio_on_the_cleaned_fixture():
    pc = analyse("payments-compact-0", NOV16)
    # cleaner-offset-checkpoint says 40: segments @0 (625 B) and @25 (661 B) are clean,
    # @40 (671 B) and @55 (245 B) are dirty; the empty active segment @60 is uncleanable
    assert pc.first_dirty_source == "cleaner-offset-checkpoint"
    assert (pc.clean_bytes, pc.cleanable_bytes) == (625 + 661, 671 + 245)
    assert pc.dirty_ratio == pytest.approx(916 / 2202)
    assert not pc.would_clean and "not eligible yet" in pc.would_clean_text
    assert "active segment" in pc.first_uncleanable_reason
    assert dict(pc.uncleanable_bounds) == {"last_stable_offset": 60, "active_segment": 60}
    # the delete-horizon batch (20..24, horizon 1700111640000) keeps its tombstone until then
    [t21] = [t for t in pc.tombstones if t.offset == 21]
    assert t21.delete_horizon_ms == 1_700_111_640_000
    assert t21.fate == comp.KEPT_TOMBSTONE_HORIZON
    assert analyse("payments-compact-0", LATER).tombstones[0].fate == comp.REMOVED_TOMBSTONE
    # a tombstone never cleaned gets its horizon stamped by the next clean
    [t46] = [t for t in pc.tombstones if t.offset == 46]
    assert t46.fate == comp.KEPT_TOMBSTONE_STAMPED and t46.delete_horizon_ms is None
    assert pc.horizons_stamped == 1
    # the cleaner's empty batch (15..19, pid 5000) is that producer's last batch: kept while
    # the producer counts as active, dropped after producer.id.expiration.ms
    assert comp.KEPT_EMPTY_BATCH in {f for f, _, _ in pc.removal}
    later = analyse("payments-compact-0", LATER)
    assert later.removed_empty_batches == 1
    assert (comp.REMOVED_EMPTY_BATCH, 1, 61.0) in later.removal
    # merging: the whole log (2.2 KiB) fits one segment.bytes
    assert [g.base_offsets for g in pc.merge_groups] == [(0, 25, 40, 55)]


def test_never_cleaned_fixture_is_eligible():
    pc = analyse("payments-compact-1", NOV16)
    assert pc.first_dirty_source.startswith("log start offset")
    assert pc.clean_bytes == 0 and pc.cleanable_bytes == 529 + 514 + 531
    assert pc.dirty_ratio == 1.0 and pc.would_clean
    # 7 keys reused across the 4 segments: cust-0 has 6 versions in 3 segments
    assert [(k.key, k.versions, k.segments) for k in pc.top_keys[:2]] == [
        (b"cust-0", 6, 3), (b"cust-1", 6, 4)]


def test_key_history_and_survivor():
    pc = analyse("payments-compact-1", NOV16, key=b"cust-1")
    history = pc.key_history
    assert [(r.offset, r.segment_base_offset) for r in history] == [
        (1, 0), (8, 0), (15, 12), (22, 12), (29, 24), (36, 36)]
    # the map covers [0, 36): offset 29 is the latest there, so 1..22 go and 29 stays;
    # 36 is in the active segment, which no clean touches
    assert [r.fate for r in history] == [comp.REMOVED_SUPERSEDED] * 4 + [
        comp.KEPT, comp.KEPT_PAST_MAP]
    assert comp.survivor(history).offset == 36
    assert "survives compaction; 5 older version(s) go" in explain.describe_survivor(
        history, NOV16)
    assert analyse("payments-compact-1", NOV16, key=b"nope").key_history == ()


def rec(offset, key, *, base=0, flags=0, pid=-1, tomb=False, horizon=-1, ts=T0):
    return comp.CompactionRecord(offset, ts, key, tomb, base, flags, pid, horizon, 10.0)


TXN = comp.FLAG_TRANSACTIONAL
ABORT = comp.FLAG_CONTROL | comp.FLAG_TRANSACTIONAL | comp.FLAG_ABORT
COMMIT = comp.FLAG_CONTROL | comp.FLAG_TRANSACTIONAL | comp.FLAG_COMMIT


def fates_of(pc, records):
    return {r.offset: r.fate for r in pc.markers} | {
        r.offset: r.fate for k in {x.key for x in records if x.key}
        for r in comp.explain_compaction(records, *pc_args(), key=k, **kw()).key_history}


def pc_args():
    return ([seg(0, 5, 100, max_ts=T0), seg(10, 10, 10, max_ts=T0, active=True)], COMPACT)


def kw():
    return {"now_ms": T0 + HOUR, "high_watermark": 11, "log_start_offset": None,
            "cleaner_offset": None}


def test_transactions_aborted_data_markers_and_open_transactions():
    records = [rec(0, b"a", flags=TXN, pid=7), rec(1, b"b", flags=TXN, pid=7),
               rec(2, None, flags=ABORT, pid=7), rec(3, b"a", flags=TXN, pid=8),
               rec(4, None, flags=COMMIT, pid=8), rec(5, b"a"),
               rec(10, b"c", base=10, flags=TXN, pid=9)]
    pc = comp.explain_compaction(records, *pc_args(), **kw())
    assert pc.open_transactions == 1 and pc.last_stable_offset == 10
    assert pc.first_uncleanable_offset == 10
    assert fates_of(pc, records) == {
        0: comp.REMOVED_ABORTED, 1: comp.REMOVED_ABORTED,
        2: comp.KEPT_MARKER_TXN_DATA,  # this pass still meets the aborted batches
        3: comp.REMOVED_SUPERSEDED, 4: comp.KEPT_MARKER_TXN_DATA, 5: comp.KEPT,
        10: comp.KEPT_PAST_MAP}
    assert [m.control for m in pc.markers] == ["ABORT", "COMMIT"]
    assert pc.records == 3 and pc.distinct_keys == 2  # aborted data is not counted


def test_markers_of_emptied_transactions_are_stamped_then_dropped():
    records = [rec(0, None, flags=ABORT, pid=7), rec(1, None, flags=COMMIT, pid=8,
                                                     horizon=T0),
               rec(2, b"x"), rec(10, b"y", base=10)]
    pc = comp.explain_compaction(records, *pc_args(), **kw())
    assert [(m.offset, m.fate) for m in pc.markers] == [
        (0, comp.KEPT_MARKER_STAMPED), (1, comp.REMOVED_MARKER)]
    assert pc.horizons_stamped == 1


def test_compaction_lags():
    segs = [seg(0, 9, 100, first_ts=T0, max_ts=T0 + HOUR),
            seg(10, 19, 100, first_ts=T0 + DAY, max_ts=T0 + DAY + HOUR),
            seg(20, 29, 100, first_ts=T0 + 2 * DAY, max_ts=T0 + 2 * DAY, active=True)]
    records = [rec(i, b"k%d" % (i % 3), base=i // 10 * 10) for i in range(30)]
    now = T0 + DAY + 2 * HOUR
    common = {"now_ms": now, "high_watermark": 30, "log_start_offset": None,
              "cleaner_offset": 10}
    # min.compaction.lag.ms 2h: @10's newest record (T0+1d+1h) is too young to clean
    lagged = TopicConfig(cleanup_policy=("compact",), min_compaction_lag_ms=2 * HOUR)
    pc = comp.explain_compaction(records, segs, lagged, **common)
    assert pc.first_uncleanable_offset == 10 and "min.compaction.lag.ms" in \
        pc.first_uncleanable_reason
    assert pc.cleanable_bytes == 0 and not pc.would_clean
    # max.compaction.lag.ms 1h: the dirty segment @10's first batch is 1h past it -> forced
    forced = TopicConfig(cleanup_policy=("compact",), max_compaction_lag_ms=HOUR,
                         min_cleanable_dirty_ratio=0.99)
    pc = comp.explain_compaction(records, segs, forced, **common,
                                 first_batch_timestamps={0: T0, 10: T0 + DAY, 20: T0 + 2 * DAY})
    assert pc.max_compaction_delay_ms == HOUR
    assert pc.would_clean and "forces a clean" in pc.would_clean_text


def test_compact_delete_old_records_survive_in_kept_segments():
    segs = [seg(0, 9, 100, first_ts=T0, max_ts=T0 + 8 * DAY),
            seg(10, 19, 100, first_ts=T0 + 9 * DAY, max_ts=T0 + 9 * DAY, active=True)]
    records = [rec(0, b"old", ts=T0), rec(1, b"new", ts=T0 + 8 * DAY),
               rec(10, b"x", base=10, ts=T0 + 9 * DAY)]
    both = TopicConfig(cleanup_policy=("compact", "delete"))
    pc = comp.explain_compaction(records, segs, both, now_ms=T0 + 10 * DAY,
                                 high_watermark=20, log_start_offset=None, cleaner_offset=None)
    [v0, _] = pc.retention.segments
    assert not v0.deletable and v0.stale.count == 1 and v0.stale.oldest_timestamp == T0
    assert any("older than retention.ms survive" in line for line in explain.merged_survivors(pc))


def test_records_and_columns_agree():
    records = [rec(0, b"a"), rec(1, None), rec(2, b"a", tomb=True), rec(10, b"b", base=10)]
    a = comp.explain_compaction(records, *pc_args(), **kw())
    b = comp.explain_compaction(comp.CompactionColumns.from_records(records), *pc_args(),
                                **kw())
    assert a == b
    assert a.null_key_records == 1 and a.superseded_records == 1


def test_cli_compaction_json_and_key(capsys):
    code = main(["compaction", str(SAMPLE / "payments-compact-0"), "--at", "2023-11-16",
                 "--format", "json", "--key", "k02"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    [p] = doc["partitions"]
    assert p["config"]["cleanup.policy"] == {"value": "delete", "source": "default",
                                             "detail": "LogConfig default"}
    assert "never compacts" in p["not_compacted"]  # replayed as if compact, and said so
    assert p["first_dirty_offset"] == 40 and p["key_reuse"]["distinct_keys"] == 35
    assert [h["offset"] for h in p["key_history"]] == [2, 58]
    assert p["survivor"].startswith("offset 58")
    code = main(["compaction", str(SAMPLE), "--at", "2023-11-16", "-q"])
    out = capsys.readouterr().out
    assert "no compacted partition" in out and "cleanup.policy=delete (default)" in out
    assert code == 1  # torn-tail-0's truncated tail is a finding
