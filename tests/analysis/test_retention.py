"""explain_retention on hand-built partitions: every expected verdict follows from Kafka's rules
(UnifiedLog.deleteOldSegments / deletableSegments / deleteRetention*BreachedSegments)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from segtools import units
from segtools.analysis import retention as r
from segtools.analysis.config import TopicConfig
from segtools.analysis.forecast import combine, forecast_partition
from segtools.storage.summary import SegmentSummary
from tests.analysis.scenarios import DAY, HOUR, T0, daily, future_blocker, seg

WEEK = 7 * DAY


def explain(segs, config=None, *, now, hw=None, lso=None):
    return r.explain_retention(segs, config or TopicConfig(), now_ms=now, high_watermark=hw,
                               log_start_offset=lso)


def reasons(pr):
    return [v.reason for v in pr.segments]


def test_future_timestamp_blocks_every_later_segment():
    segs, now = future_blocker()
    pr = explain(segs, now=now)
    assert reasons(pr) == [r.RETENTION_MS_BREACHED] * 3 + [
        r.WITHIN_RETENTION_MS, r.BLOCKED_BY_EARLIER_SEGMENT, r.BLOCKED_BY_EARLIER_SEGMENT,
        r.WITHIN_RETENTION_MS, r.WITHIN_RETENTION_MS]
    assert [v.deletable for v in pr.segments] == [True] * 3 + [False] * 5
    blocker = pr.segments[3]
    assert [v.blocked_by for v in pr.segments[4:6]] == [blocker.base_offset] * 2
    # the blocker's own expiry is its future max timestamp + retention.ms (+1: strictly >);
    # everything behind it waits for it (prefix rule), even the ones already expired
    release = segs[3].max_timestamp + WEEK + 1
    assert blocker.eligible_at == release
    assert [v.eligible_at for v in pr.segments[4:]] == [release] * 4
    # deletable segments became eligible when their own newest record passed retention
    assert [v.eligible_at for v in pr.segments[:3]] == [s.max_timestamp + WEEK + 1
                                                        for s in segs[:3]]
    future = [c for c in pr.callouts if c.code == "future_timestamp"]
    assert len(future) == 1 and future[0].segments == (300, 400, 500)
    assert "holds back 2 later segment(s)" in future[0].message
    assert pr.deletable_bytes == 3 << 20


def test_future_timestamp_in_microseconds_is_never():
    segs = daily(3)
    segs[1] = seg(100, 199, 1000, first_ts=T0 + DAY, max_ts=T0 * 1000)  # micros as millis
    pr = explain(segs, now=T0 + 20 * DAY)
    assert reasons(pr) == [r.RETENTION_MS_BREACHED, r.WITHIN_RETENTION_MS,
                           r.BLOCKED_BY_EARLIER_SEGMENT]
    assert pr.segments[1].eligible_at is None and pr.segments[2].eligible_at is None
    assert any("beyond year 9999" in c.message for c in pr.callouts)


def test_time_rule_is_strictly_greater_than():
    segs = daily(2)
    edge = segs[0].max_timestamp + WEEK
    assert reasons(explain(segs, now=edge))[0] == r.WITHIN_RETENTION_MS
    assert reasons(explain(segs, now=edge + 1))[0] == r.RETENTION_MS_BREACHED
    assert explain(segs, now=edge).segments[0].eligible_at == edge + 1


def test_retention_bytes_cut_line():
    # sizes 100..500, total 1500; retention.bytes 800 -> diff 700: 100 (600), 200 (400),
    # 300 (100) go; 400 would leave -300, so the walk stops there
    segs = [seg(i * 10, i * 10 + 9, size, max_ts=T0 + i * HOUR, active=i == 4)
            for i, size in enumerate((100, 200, 300, 400, 500))]
    pr = explain(segs, TopicConfig(retention_bytes=800), now=T0 + DAY)
    assert reasons(pr) == [r.RETENTION_BYTES_BREACHED] * 3 + [r.WITHIN_RETENTION_MS] * 2
    # diff - size == 0 still deletes (>= 0): retention.bytes 900 -> diff 600 = 100+200+300
    pr = explain(segs, TopicConfig(retention_bytes=900), now=T0 + DAY)
    assert [v.deletable for v in pr.segments] == [True, True, True, False, False]
    # one byte more and the third one stays
    pr = explain(segs, TopicConfig(retention_bytes=901), now=T0 + DAY)
    assert [v.deletable for v in pr.segments] == [True, True, False, False, False]
    # size below retention.bytes: the size pass does not run at all
    pr = explain(segs, TopicConfig(retention_bytes=1501), now=T0 + DAY)
    assert not any(v.deletable for v in pr.segments)
    # time retention off: kept segments are kept by the size rule, and never become eligible
    pr = explain(segs, TopicConfig(retention_bytes=800, retention_ms=-1), now=T0 + DAY)
    assert reasons(pr)[3:] == [r.WITHIN_RETENTION_BYTES] * 2
    assert [v.eligible_at for v in pr.segments[3:]] == [None, None]
    assert [v.eligible_at for v in pr.segments[:3]] == [T0 + DAY] * 3


def test_size_pass_sees_what_the_log_start_pass_left():
    # LSO breach removes the 500-byte head first; the size pass then sees 300 bytes, not 800
    segs = [seg(0, 9, 500, max_ts=T0), seg(10, 19, 100, max_ts=T0),
            seg(20, 29, 100, max_ts=T0), seg(30, 39, 100, max_ts=T0, active=True)]
    pr = explain(segs, TopicConfig(retention_bytes=250), now=T0 + HOUR, lso=10)
    assert reasons(pr) == [r.LOG_START_OFFSET_BREACHED, r.WITHIN_RETENTION_MS,
                           r.WITHIN_RETENTION_MS, r.WITHIN_RETENTION_MS]


def test_log_start_offset_breach_needs_the_next_segment_at_or_below_it():
    segs = daily(4)  # bases 0, 100, 200, 300
    pr = explain(segs, now=T0 + 4 * DAY, lso=200)  # nothing expired by time
    assert reasons(pr) == [r.LOG_START_OFFSET_BREACHED, r.LOG_START_OFFSET_BREACHED,
                           r.WITHIN_RETENTION_MS, r.WITHIN_RETENTION_MS]
    pr = explain(segs, now=T0 + 4 * DAY, lso=199)
    assert reasons(pr)[:2] == [r.LOG_START_OFFSET_BREACHED, r.WITHIN_RETENTION_MS]
    assert "log start offset 199" in pr.segments[0].reason_text


def test_high_watermark_bounds_deletion():
    segs = daily(5)  # all expired at T0 + 30d
    pr = explain(segs, now=T0 + 30 * DAY, hw=200)
    # @0 ends at 100 <= 200, @100 ends at 200 <= 200: deletable; @200 ends at 300 > 200
    assert reasons(pr) == [r.RETENTION_MS_BREACHED] * 2 + [r.ABOVE_HIGH_WATERMARK] * 3
    assert [v.eligible_at for v in pr.segments[2:]] == [None] * 3
    assert any(c.code == "above_high_watermark" for c in pr.callouts)
    assert not pr.high_watermark_assumed


def test_missing_high_watermark_assumes_log_end_offset():
    pr = explain(daily(3), now=T0 + 30 * DAY)
    assert pr.high_watermark == 300 and pr.high_watermark_assumed
    assert pr.log_start_offset == 0 and pr.log_start_offset_assumed
    assert any(c.code == "high_watermark_assumed" for c in pr.callouts)


def test_expired_active_segment_is_rolled_then_deleted():
    segs = daily(3)
    pr = explain(segs, now=T0 + 30 * DAY, hw=300)
    assert all(v.deletable for v in pr.segments) and pr.rolled
    assert "rolls a new empty segment at 300" in pr.segments[-1].reason_text
    assert any(c.code == "active_segment_rolled" for c in pr.callouts)
    # one offset short of the log end offset and the active segment stays (HW bound)
    pr = explain(segs, now=T0 + 30 * DAY, hw=299)
    assert reasons(pr)[-1] == r.ABOVE_HIGH_WATERMARK and not pr.rolled


def test_empty_last_segment_is_kept():
    segs = daily(3)
    segs[-1] = seg(200, 299, 1000, first_ts=T0 + 2 * DAY, max_ts=T0 + 2 * DAY + HOUR)
    segs.append(seg(300, None, 0, mtime=T0, active=True))
    pr = explain(segs, now=T0 + 30 * DAY)
    assert reasons(pr) == [r.RETENTION_MS_BREACHED] * 3 + [r.EMPTY_ACTIVE_SEGMENT]
    assert pr.segments[-1].eligible_at is None and not pr.rolled
    # an empty segment that is not the last one (a cleaner leftover) is not protected
    mid_empty = [seg(0, 9, 10, max_ts=T0), seg(10, None, 0, mtime=T0),
                 seg(20, 29, 10, max_ts=T0 + 40 * DAY, active=True)]
    assert reasons(explain(mid_empty, now=T0 + 30 * DAY))[:2] == [r.RETENTION_MS_BREACHED] * 2


def test_compact_only_topic_gets_only_the_log_start_rule():
    segs = daily(4)
    compact = TopicConfig(cleanup_policy=("compact",))
    pr = explain(segs, compact, now=T0 + 30 * DAY, lso=200)
    assert reasons(pr) == [r.LOG_START_OFFSET_BREACHED] * 2 + [r.DELETE_POLICY_DISABLED] * 2
    assert [v.eligible_at for v in pr.segments[2:]] == [None, None]
    assert any(c.code == "delete_policy_disabled" for c in pr.callouts)
    both = TopicConfig(cleanup_policy=("compact", "delete"))
    assert all(v.deletable for v in explain(segs, both, now=T0 + 30 * DAY).segments)


def test_mtime_fallback_when_no_timestamps():
    segs = [seg(0, 9, 100, mtime=T0), seg(10, 19, 100, mtime=T0 + 5 * DAY, active=True)]
    pr = explain(segs, now=T0 + 8 * DAY)
    assert [v.max_timestamp_source for v in pr.segments] == ["mtime", "mtime"]
    assert [v.max_timestamp for v in pr.segments] == [T0, T0 + 5 * DAY]
    assert reasons(pr) == [r.RETENTION_MS_BREACHED, r.WITHIN_RETENTION_MS]
    assert pr.segments[1].eligible_at == T0 + 5 * DAY + WEEK + 1
    assert "file mtime" in pr.segments[0].reason_text
    assert next(c for c in pr.callouts if c.code == "mtime_fallback").segments == (0, 10)


def test_infinite_retention_never_deletes_by_time():
    pr = explain(daily(3), TopicConfig(retention_ms=-1), now=T0 + 365 * DAY)
    assert reasons(pr) == [r.RETENTION_UNLIMITED] * 3
    assert all("both -1" in v.reason_text for v in pr.segments)
    assert not any(v.deletable for v in pr.segments)
    assert all(v.eligible_at is None for v in pr.segments)


def test_eligible_at_respects_the_prefix_when_timestamps_go_backwards():
    segs = [seg(0, 9, 10, max_ts=T0 + 3 * DAY), seg(10, 19, 10, max_ts=T0 + DAY),
            seg(20, 29, 10, max_ts=T0 + DAY + 12 * HOUR, active=True)]
    pr = explain(segs, now=T0 + 9 * DAY)
    # @10 expired on its own at T0+8d, but @0 keeps it until T0+10d
    assert reasons(pr) == [r.WITHIN_RETENTION_MS, r.BLOCKED_BY_EARLIER_SEGMENT,
                           r.BLOCKED_BY_EARLIER_SEGMENT]
    assert [v.eligible_at for v in pr.segments] == [T0 + 10 * DAY + 1] * 3


def test_quiet_active_segment_callout():
    segs = [seg(0, 99, 1000, first_ts=T0, max_ts=T0 + 8 * DAY, active=True)]
    pr = explain(segs, now=T0 + 10 * DAY)
    quiet = [c for c in pr.callouts if c.code == "quiet_active_segment"]
    assert quiet and "only go as a whole" in quiet[0].message


def test_stale_records_from_columns():
    bases = np.array([0, 0, 0, 100, 100])
    ts = np.array([T0 - 5, T0 + 5, -1, T0 - 9, T0 + 1])
    sizes = np.array([10.0, 10.0, 10.0, 7.0, 7.0])
    stale = r.stale_records(bases, ts, sizes, cutoff_ms=T0)
    assert stale == {0: r.StaleRecords(1, 10, T0 - 5), 100: r.StaleRecords(1, 7, T0 - 9)}
    segs = [seg(0, 9, 10, first_ts=T0 - 5, max_ts=T0 + WEEK),
            seg(100, 109, 10, first_ts=T0 - 9, max_ts=T0 + WEEK, active=True)]
    pr = explain(segs, now=T0 + WEEK).with_stale(stale)
    assert pr.segments[0].stale == r.StaleRecords(1, 10, T0 - 5)
    callout = next(c for c in pr.callouts if c.code == "stale_records")
    assert callout.segments == (0, 100) and "2 records" in callout.message


def test_json_contract_and_pickling():
    segs, now = future_blocker()
    pr = explain(segs, now=now)
    doc = pr.to_json()
    for key in ("config", "high_watermark", "log_start_offset", "segments", "callouts"):
        assert key in doc
    for obj in doc["segments"]:
        for key in ("base_offset", "last_offset", "size", "max_timestamp",
                    "max_timestamp_source", "deletable", "reason", "reason_text",
                    "eligible_at"):
            assert key in obj
        assert obj["reason"] in r.DELETABLE_REASONS + r.KEPT_REASONS
        assert obj["max_timestamp_source"] in ("timeindex", "log", "mtime")
    assert doc["config"]["retention.ms"] == {"value": WEEK, "source": "default",
                                             "detail": "LogConfig default"}
    assert pickle.loads(pickle.dumps(pr)) == pr
    # the Spark path: summaries rebuilt from JSON give the same verdicts
    rebuilt = [SegmentSummary.from_json(s.to_json()) for s in segs]
    assert explain(rebuilt, now=now) == pr


def test_empty_partition():
    pr = explain([], now=T0)
    assert pr.segments == () and pr.size == 0 and pr.log_end_offset is None


@pytest.mark.parametrize("ms, text", [(0, "0s"), (999, "999ms"), (61_000, "1m 01s"),
                                      (3 * HOUR + 5 * 60_000, "3h 05m"), (WEEK, "7d"),
                                      (WEEK + HOUR, "7d 1h"), (-DAY, "-1d"),
                                      (4 * 365 * DAY, "4y")])
def test_format_duration(ms, text):
    assert units.format_duration(ms) == text


def test_forecast_steps_and_topic_sum():
    segs, now = future_blocker()
    pr = explain(segs, now=now)
    fc = forecast_partition(pr, until_ms=now + 60 * DAY)
    # now: the three expired go; then everything at the blocker's release
    assert [s.at_ms for s in fc.steps] == [now, segs[3].max_timestamp + WEEK + 1]
    assert fc.steps[0].removed == (0, 100, 200)
    assert fc.steps[1].removed == (300, 400, 500, 600, 700)
    assert fc.start_size == 8 << 20 and fc.end_size == 0
    assert fc.size_at(now - 1) == 8 << 20 and fc.size_at(now + DAY) == 5 << 20
    short = forecast_partition(pr, until_ms=now + 10 * DAY)
    assert len(short.steps) == 1 and short.end_size == 5 << 20
    other = forecast_partition(explain(daily(2), now=now), until_ms=now + 60 * DAY)
    topic = combine([("t-0", fc), ("t-1", other)])
    assert topic.start_size == fc.start_size + other.start_size
    assert topic.end_size == 0
    assert [s.label for s in topic.steps] == ["t-0", "t-1", "t-0"]
    assert topic.size_at(now) == 5 << 20


def test_every_reason_code_matches_its_message():
    """Each kept/deleted reason code is explained by a sentence about that rule (no code
    whose text describes another rule)."""
    words = {r.WITHIN_RETENTION_MS: "retention", r.WITHIN_RETENTION_BYTES: "retention.bytes",
             r.RETENTION_UNLIMITED: "both -1", r.RETENTION_MS_BREACHED: "retention",
             r.RETENTION_BYTES_BREACHED: "retention.bytes",
             r.BLOCKED_BY_EARLIER_SEGMENT: "start of the log",
             r.DELETE_POLICY_DISABLED: "cleanup.policy"}
    cases = [TopicConfig(), TopicConfig(retention_ms=-1), TopicConfig(retention_ms=-1,
             retention_bytes=1), TopicConfig(retention_bytes=1),
             TopicConfig(cleanup_policy=("compact",))]
    seen = set()
    for config in cases:
        for now in (T0, T0 + 3 * DAY, T0 + 365 * DAY):
            for v in explain(daily(3), config, now=now).segments:
                if v.reason in words:
                    seen.add(v.reason)
                    assert words[v.reason] in v.reason_text, (v.reason, v.reason_text)
    assert {r.RETENTION_UNLIMITED, r.WITHIN_RETENTION_BYTES} <= seen
