"""Tiered storage: the remote log replay, its findings, both tiers' retention, and the faces
(CLI, API) on the Kafka-written ``tiered`` trees; the rules themselves on small values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import segtools
from segtools.analysis import remote_log as R
from segtools.analysis import tiered as T
from segtools.analysis.config import TopicConfig
from segtools.formats.checkpoints import EpochEntry
from tests.fixtures_manifest import FIXTURES

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TIERED = FIXTURES / "logdirs" / "tiered"
HOSTILE = FIXTURES / "logdirs" / "tiered-hostile"
AT = "2024-06-01T12:00:00Z"  # the moment the fixture's story is told at
NOW = 1_717_243_200_000
HOUR = 3_600_000


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, *argv], capture_output=True, text=True, timeout=120)


def seg(start: int, end: int, epochs=((0, None),), state=R.COPY_SEGMENT_FINISHED, *,
        started: int = NOW - 10 * HOUR, size: int = 100, max_ts: int = NOW - 11 * HOUR,
        sid: str | None = None) -> R.RemoteSegment:
    lead = tuple(EpochEntry(e, start if o is None else o) for e, o in epochs)
    return R.RemoteSegment(sid or f"s{start}-{end}-{state[:4]}", start, end, lead, size, max_ts,
                           1, state, started, started, False,
                           state in (R.COPY_SEGMENT_FINISHED, R.DELETE_SEGMENT_STARTED))


def partition(*segments: R.RemoteSegment) -> R.RemotePartition:
    epochs: dict[int, int] = {}
    for s in segments:
        if s.copy_finished:
            for e, end in s.epoch_end_offsets().items():
                epochs[e] = max(epochs.get(e, -1), end)
    return R.RemotePartition("t", "id", 0, segments, None, 0, epochs)


# --------------------------------------------------------------------------- the fixture story


def test_the_stuck_copy_gets_kafkas_verdict_in_both_tiers():
    """clicks.tiered-0: 400-499's copy started two days ago and never finished. Local
    retention (local.retention.ms 2 days) deletes 200-299 and 300-399, which are copied, and
    keeps 400-499 (UnifiedLog.isSegmentEligibleForDeletion); the remote tier keeps what is
    within retention.ms, and its walk stops at 100-199 before it reaches the half-done delete
    of the failed first copy of 300-399."""
    p = run("retention", str(TIERED / "clicks.tiered-0"), "--at", AT, "--format", "json",
            "--no-deep")
    assert p.returncode == 1, p.stderr
    [doc] = json.loads(p.stdout)["partitions"]
    assert [(s["base_offset"], s["deletable"], s["reason"]) for s in doc["segments"]] == [
        (200, True, "local_retention_ms_breached"), (300, True, "local_retention_ms_breached"),
        (400, False, "awaiting_remote_copy"), (500, False, "within_retention_ms")]
    assert [(s["start_offset"], s["end_offset"], s["state"], s["deletable"], s["reason"])
            for s in doc["remote_segments"]] == [
        (0, 99, "DELETE_SEGMENT_FINISHED", False, "remote_already_deleted"),
        (100, 199, "COPY_SEGMENT_FINISHED", False, "remote_within_retention"),
        (200, 299, "COPY_SEGMENT_FINISHED", False, "remote_within_retention"),
        (300, 399, "DELETE_SEGMENT_STARTED", False, "remote_blocked_by_earlier_segment"),
        (300, 399, "COPY_SEGMENT_FINISHED", False, "remote_within_retention"),
        (400, 499, "COPY_SEGMENT_STARTED", False, "remote_copy_unfinished")]
    codes = {f["code"]: f["severity"] for f in json.loads(p.stdout)["findings"]}
    assert codes["remote_segment_copy_unfinished"] == "warning"
    assert codes["remote_segment_delete_unfinished"] == "warning"


def test_a_week_later_the_remote_tier_expires_by_retention_ms():
    later = NOW + 3 * 24 * HOUR
    report = segtools.explain_retention(TIERED / "clicks.tiered-0", at=later, deep=False)
    [e] = report.partitions
    got = {(v.segment.start_offset, v.segment.state): v.reason for v in e.remote}
    assert got[(100, "COPY_SEGMENT_FINISHED")] == T.REMOTE_RETENTION_MS_BREACHED
    assert got[(200, "COPY_SEGMENT_FINISHED")] == T.REMOTE_WITHIN_RETENTION


def test_tiered_view_cli_and_api_agree_and_name_every_tier():
    p = run("tiered", str(TIERED), "--at", AT, "--format", "json", "--quiet")
    assert p.returncode == 1, p.stderr
    cli = json.loads(p.stdout)
    api = segtools.tiered(TIERED, at=AT)
    assert json.loads(json.dumps(api.to_json())) == cli
    by = {(x["topic"], x["partition"]): x for x in cli["partitions"]}
    assert set(by) == {("clicks.tiered", 0), ("clicks.tiered", 1), ("old.tiered", 0)}
    c0 = by[("clicks.tiered", 0)]
    assert c0["highest_offset_in_remote_storage"] == 399
    assert c0["local"]["local_log_start_offset"] == 200 and c0["local"]["log_start_offset"] == 100
    assert by[("clicks.tiered", 1)]["highest_offset_in_remote_storage"] == 149
    old = by[("old.tiered", 0)]
    assert old["local"] is None
    assert old["partition_delete"]["state"] == "DELETE_PARTITION_FINISHED"
    assert {f["code"] for f in cli["findings"]} == {
        "remote_segment_copy_unfinished", "remote_segment_delete_unfinished",
        "remote_leader_epoch_mismatch"}
    assert len(api.rows()) == sum(len(x["remote_segments"]) for x in cli["partitions"])
    text = run("tiered", str(TIERED / "clicks.tiered-0"), "--at", AT)
    assert "COPY_SEGMENT_STARTED" in text.stdout and "remote_segment_copy_unfinished" in \
        text.stdout


def test_hostile_metadata_gives_findings_never_a_traceback():
    p = run("tiered", str(HOSTILE), "--at", AT, "--format", "json")
    assert p.returncode == 1 and not p.stderr, p.stderr
    codes = [f["code"] for f in json.loads(p.stdout)["findings"]]
    assert codes.count("remote_log_metadata_undecodable") == 3
    assert codes.count("remote_log_metadata_unknown_version") == 3
    assert "remote_log_metadata_unknown_state" in codes
    assert "remote_log_metadata_snapshot_record" in codes


# --------------------------------------------------------------------------- the rules


def test_the_state_machine_refuses_what_kafkas_cache_refuses():
    r = R._Replay()
    tip = {"name": "t", "id": "id", "partition": 0}
    add = {"remoteLogSegmentId": {"topicIdPartition": tip, "id": "a"}, "startOffset": 0,
           "endOffset": 9, "brokerId": 1, "maxTimestampMs": 5, "eventTimestampMs": 10,
           "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}], "segmentSizeInBytes": 7,
           "customMetadata": None, "remoteLogSegmentState": 0}

    def update(state: int, sid: str = "a") -> dict:
        return {"remoteLogSegmentId": {"topicIdPartition": tip, "id": sid}, "brokerId": 1,
                "eventTimestampMs": 20, "customMetadata": None, "remoteLogSegmentState": state}

    r.apply(0, add, "p", 0, 0)
    r.apply(0, add, "p", 1, 0)  # added twice
    r.apply(1, update(3), "p", 2, 0)  # STARTED -> DELETE_SEGMENT_FINISHED
    r.apply(1, update(1), "p", 3, 0)
    r.apply(1, update(1), "p", 4, 0)  # a retry: the same state again is accepted
    r.apply(1, update(0), "p", 5, 0)  # FINISHED -> STARTED
    r.apply(1, update(1, "nobody"), "p", 6, 0)
    assert [f.offset for f in r.findings] == [1, 2, 5, 6]
    assert {f.code for f in r.findings} == {"remote_log_segment_invalid_transition"}
    assert r.by_key[("id", 0)].segments["a"].state == R.COPY_SEGMENT_FINISHED
    assert r.by_key[("id", 0)].epochs == {0: 9}


def test_unfinished_work_is_stuck_only_past_the_threshold():
    young = seg(100, 199, state=R.COPY_SEGMENT_STARTED, started=NOW - R.STUCK_AFTER_MS + 1)
    old = seg(200, 299, state=R.COPY_SEGMENT_STARTED, started=NOW - R.STUCK_AFTER_MS - 1)
    assert [f.code for f in R.check(partition(seg(0, 99), young), now_ms=NOW, path="p")] == []
    assert [f.code for f in R.check(partition(seg(0, 99), old), now_ms=NOW, path="p")] == [
        "remote_segment_copy_unfinished"]
    replaced = partition(seg(0, 99), seg(0, 99, state=R.COPY_SEGMENT_STARTED, sid="x",
                                         started=NOW - 2 * R.STUCK_AFTER_MS))
    assert [f.code for f in R.check(replaced, now_ms=NOW, path="p")] == [
        "remote_segment_copy_abandoned"]
    assert R.STUCK_AFTER_MS == 120 * 30_000  # 120 runs of remote.log.manager.task.interval.ms


def test_overlaps_gaps_and_the_gap_to_the_local_log():
    rp = partition(seg(0, 99), seg(50, 149), seg(200, 299))
    found = R.check(rp, now_ms=NOW, path="p", local_start_offset=400)
    assert [(f.code, f.offset) for f in found] == [
        ("remote_segments_overlap", 50), ("remote_segments_gap", 150),
        ("remote_segments_gap", 300)]


def test_leader_epoch_lineage_follows_kafkas_own_example():
    """RemoteLogManager.isRemoteSegmentWithinLeaderEpochs' comment: lineage {5: 10, 7: 15,
    9: 100}; after segment1 goes the lineage is {7: 51, 9: 100} and segment2, copied by the
    next leader with epochs {5: 14, 7: 15, 9: 100}, is still valid."""
    lineage = [EpochEntry(5, 10), EpochEntry(7, 15), EpochEntry(9, 100)]
    s1 = seg(5, 50, ((5, 10), (7, 15)))
    s2 = seg(14, 150, ((5, 14), (7, 15), (9, 100)))
    assert R.is_within_leader_epochs(s1, 200, lineage)
    assert R.is_within_leader_epochs(s2, 200, [EpochEntry(7, 51), EpochEntry(9, 100)])
    assert not R.is_within_leader_epochs(seg(0, 20, ((6, 0),)), 200, lineage)  # unknown epoch
    assert not R.is_within_leader_epochs(seg(95, 120, ((7, 95),)), 200, lineage)  # ends late


def test_highest_remote_offset_walks_the_local_lineage():
    rp = partition(seg(0, 99, ((0, 0),)), seg(100, 199, ((0, 100), (1, 150))))
    assert rp.highest_offset() == 199
    assert rp.highest_offset([EpochEntry(0, 0), EpochEntry(1, 150)], 300) == 199
    # epoch 1 is not local: epoch 0 ends at 150 locally, remote holds it up to 149
    assert rp.highest_offset([EpochEntry(0, 0), EpochEntry(2, 150)], 300) == 149
    # the local epoch 0 ends before the remote copy of it does: endOffsetFor - 1
    assert rp.highest_offset([EpochEntry(0, 0), EpochEntry(3, 120)], 300) == 119
    assert partition().highest_offset() == -1


def test_remote_retention_bytes_counts_both_tiers():
    """buildRetentionSizeData: local segments not yet copied plus copied remote segments over
    retention.bytes; the oldest remote segments go while the excess covers them."""
    rp = partition(seg(0, 99, size=100), seg(100, 199, size=100), seg(200, 299, size=100))
    config = TopicConfig(retention_ms=-1, retention_bytes=150, remote_storage_enable=True)
    got = T.remote_verdicts(rp, config, now_ms=NOW, lineage=[EpochEntry(0, 0)],
                            log_end_offset=400, log_start_offset=0, only_local_size=100)
    assert [(v.segment.start_offset, v.deletable, v.reason) for v in got] == [
        (0, True, T.REMOTE_RETENTION_BYTES_BREACHED),
        (100, True, T.REMOTE_RETENTION_BYTES_BREACHED),
        (200, False, T.REMOTE_WITHIN_RETENTION)]
    got = T.remote_verdicts(rp, config, now_ms=NOW, lineage=[EpochEntry(0, 0)],
                            log_end_offset=400, log_start_offset=150, only_local_size=0)
    assert [v.reason for v in got] == [T.REMOTE_LOG_START_OFFSET_BREACHED,
                                       T.REMOTE_RETENTION_BYTES_BREACHED,
                                       T.REMOTE_WITHIN_RETENTION]


def test_segments_before_the_earliest_local_epoch_are_unreferenced():
    rp = partition(seg(0, 99, ((1, 0),)), seg(100, 199, ((3, 100),)))
    got = T.remote_verdicts(rp, TopicConfig(retention_ms=-1), now_ms=NOW,
                            lineage=[EpochEntry(3, 100)], log_end_offset=300,
                            log_start_offset=100, only_local_size=0)
    assert [v.reason for v in got] == [T.REMOTE_LEADER_EPOCH_TRUNCATED,
                                       T.REMOTE_WITHIN_RETENTION]


@pytest.mark.parametrize(("highest", "want"), [
    (None, ["local_retention_ms_breached", "local_retention_ms_breached"]),
    (-1, ["awaiting_remote_copy", "blocked_by_earlier_segment"]),
    (99, ["local_retention_ms_breached", "awaiting_remote_copy"]),
])
def test_local_segments_wait_for_the_copy(highest, want):
    from segtools.analysis.retention import explain_retention
    from segtools.storage.summary import SegmentSummary

    segs = [SegmentSummary(path=f"{b}.log", base_offset=b, size=10, valid_bytes=10,
                           is_active=b == 100, mtime_ms=0, record_count=100, first_offset=b,
                           last_offset=b + 99, max_timestamp=NOW - 5 * 24 * HOUR,
                           max_timestamp_source="timeindex") for b in (0, 100)]
    config = TopicConfig(remote_storage_enable=True, local_retention_ms=24 * HOUR)
    pr = explain_retention(segs, config, now_ms=NOW, high_watermark=None,
                           log_start_offset=None, highest_remote_offset=highest)
    assert [v.reason for v in pr.segments[:len(want)]] == want


def test_the_report_shows_both_tiers_as_the_api_does():
    from segtools.report.model import build

    model = build([str(TIERED)], at=NOW)
    rows = {(t["topic"], t["partition"]): t for t in model.data["tiered"]}
    api = segtools.tiered(TIERED, at=AT)
    assert set(rows) == {(p.topic, p.partition) for p in api.partitions}
    for p in api.partitions:
        row = rows[(p.topic, p.partition)]
        assert row["highest_offset_in_remote_storage"] == p.highest_offset_in_remote_storage
        assert row["findings"] == [f.code for f in p.findings]
    assert {f.code for f in model.findings} >= {"remote_segment_copy_unfinished"}


# --------------------------------------------------------------------------- the remote store

STORE = FIXTURES / "remote" / "tiered"
REMOTE_DIR = STORE / "kafka-tiered-storage" / "clicks.tiered-0-UgjU_1Q2Ov-WHo0amwnGGw"


def test_remote_segments_are_found_and_read_in_a_local_tiered_storage():
    p = run("tiered", str(TIERED), "--at", AT, "--remote-store", str(STORE), "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    api = segtools.tiered(TIERED, at=AT, remote_store=STORE / "kafka-tiered-storage")
    assert json.loads(json.dumps(api.to_json())) == doc
    by = {(x["topic"], x["partition"]): x for x in doc["partitions"]}
    seen = {(s["start_offset"], s["state"]): s["store"]
            for s in by[("clicks.tiered", 0)]["remote_segments"]}
    assert seen[(0, "DELETE_SEGMENT_FINISHED")] is None
    for start in (100, 200, 300):
        store = seen[(start, "COPY_SEGMENT_FINISHED")]
        assert store["missing"] == []
        assert (store["content"]["first_offset"], store["content"]["last_offset"],
                store["content"]["records"]) == (start, start + 99, 100)
    stuck = seen[(400, "COPY_SEGMENT_STARTED")]  # the copy stopped after the .log
    assert stuck["content"]["records"] == 100
    assert stuck["missing"] == ["offset_index", "time_index", "leader_epoch_checkpoint",
                                "producer_snapshot"]
    assert seen[(300, "DELETE_SEGMENT_STARTED")]["content"] is None
    codes = [f["code"] for f in doc["findings"]]
    assert codes.count("remote_segment_missing") == 1  # clicks.tiered-1's 100-199
    assert "remote_segment_content_mismatch" not in codes


def test_a_remote_segment_reads_as_its_local_original(tmp_path):
    """The store's 200-299 is the broker's segment file: dump gives the same records, and the
    remote file name's start offset is its base offset."""
    remote = REMOTE_DIR / "00000000000000000200-K_D9QpBZO_mfztDlxKDOwA.log"
    local = TIERED / "clicks.tiered-0" / "00000000000000000200.log"
    assert remote.read_bytes() == local.read_bytes()

    def records(path: Path) -> list[dict]:
        out = run("dump", "--deep", "--format", "jsonl", str(path)).stdout.splitlines()
        return [json.loads(x) for x in out if json.loads(x)["type"] == "record"]

    assert records(remote) == records(local)
    head = json.loads(run("dump", "--format", "jsonl", str(remote)).stdout.splitlines()[0])
    assert head["base_offset"] == 200


def test_a_damaged_store_gives_findings(tmp_path):
    import shutil

    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    d = store / "kafka-tiered-storage" / REMOTE_DIR.name
    (d / "00000000000000000100-vx9gOvOrMRKv76ntp69O4w.timeindex").unlink()
    log = d / "00000000000000000200-K_D9QpBZO_mfztDlxKDOwA.log"
    log.write_bytes(log.read_bytes()[:-100])  # a torn last batch: 200-289 remain
    (d / "00000000000000000000-y13LZLYmMvKDvSvKx6e3Kg.log").write_bytes(b"")  # deleted, still here
    (d / "00000000000000000900-AAAAAAAAAAAAAAAAAAAAAA.log").write_bytes(b"")
    # 300-399 rewritten in leader epoch 7, which its metadata (0, 1) does not name
    from tests.builders import make_batch

    (d / "00000000000000000300-UeFtuQ_VP3GBTzih4Tpq_A.log").write_bytes(make_batch(
        [dict(timestamp_delta=0, offset_delta=i, key=None, value=b"v", headers=[])
         for i in range(100)], base_offset=300, partition_leader_epoch=7))
    report = segtools.tiered(TIERED, at=AT, remote_store=store)
    got = {(f.code, f.offset) for f in report.all_findings}
    assert {("remote_segment_incomplete", 100), ("remote_segment_content_mismatch", 200),
            ("remote_segment_content_mismatch", 300), ("remote_segment_not_deleted", 0)} <= got
    assert "remote_store_orphan_segment" in {c for c, _ in got}
    assert "truncated_tail" in {c for c, _ in got}


AIVEN = FIXTURES / "remote" / "tiered-aiven"
AIVEN_DIR = AIVEN / "clicks.tiered-UgjU_1Q2Ov-WHo0amwnGGw" / "0"


def test_the_aiven_layout_is_put_back_together_and_read():
    """100-199 is stored compressed (a variable chunk index), 200-299 plain (a fixed one):
    both come back byte for byte as the broker's segment; 300-399 is encrypted: not read, and
    the finding says a key is needed."""
    from segtools.storage import remote_store as S

    store = S.open_store(AIVEN)
    assert isinstance(store, S.AivenStore)
    local = TIERED / "clicks.tiered-0" / "00000000000000000200.log"
    stem = AIVEN_DIR / "00000000000000000200-K_D9QpBZO_mfztDlxKDOwA"
    manifest = S.parse_manifest(Path(f"{stem}.rsm-manifest").read_bytes())
    assert not manifest.compression and manifest.encryption_key_id is None
    assert S.assemble(manifest, Path(f"{stem}.log").read_bytes()) == local.read_bytes()
    compressed = S.parse_manifest(next(AIVEN_DIR.glob("*100-*.rsm-manifest")).read_bytes())
    assert compressed.compression and len(compressed.transformed_sizes) == 5
    report = segtools.tiered(TIERED / "clicks.tiered-0", at=AT, remote_store=AIVEN)
    doc = report.to_json()
    assert doc["remote_store"]["layout"] == "Aiven tiered-storage-for-apache-kafka"
    [c0] = [p for p in doc["partitions"] if (p["topic"], p["partition"]) == ("clicks.tiered", 0)]
    content = {(s["start_offset"], s["state"]): (s["store"] or {}).get("content")
               for s in c0["remote_segments"]}
    for start in (100, 200):
        got = content[(start, "COPY_SEGMENT_FINISHED")]
        assert (got["first_offset"], got["last_offset"], got["records"]) == (start, start + 99,
                                                                             100)
    assert content[(300, "COPY_SEGMENT_FINISHED")]["batches"] == 0
    codes = [f.code for f in report.all_findings]
    assert codes.count("remote_segment_encrypted") == 1
    assert "remote_segment_content_mismatch" not in codes


def test_a_damaged_aiven_object_is_a_finding(tmp_path):
    import shutil

    store = tmp_path / "bucket"
    shutil.copytree(AIVEN, store)
    d = store / AIVEN_DIR.relative_to(AIVEN)
    (d / "00000000000000000100-vx9gOvOrMRKv76ntp69O4w.rsm-manifest").write_text("{not json")
    log = d / "00000000000000000200-K_D9QpBZO_mfztDlxKDOwA.log"
    log.write_bytes(log.read_bytes()[:-10])
    report = segtools.tiered(TIERED / "clicks.tiered-0", at=AT, remote_store=store)
    bad = sorted(f.path.rsplit("/", 1)[-1][:20] for f in report.all_findings
                 if f.code == "remote_segment_unreadable")
    assert bad == ["00000000000000000100", "00000000000000000200"]


def test_find_reaches_an_offset_in_remote_storage():
    below = run("find", str(TIERED / "clicks.tiered-0"), "--offset", "150")
    assert below.returncode == 1
    assert "offset 150 is in remote storage: segment vx9gOvOrMRKv76ntp69O4w (100-199)" in \
        below.stderr
    p = run("find", str(TIERED / "clicks.tiered-0"), "--offset", "150", "--remote-store",
            str(STORE), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    found = json.loads(p.stdout)
    assert found["record"]["offset"] == 150 and found["segment"].endswith(
        "00000000000000000100-vx9gOvOrMRKv76ntp69O4w.log")
    assert found["index_used"] is True


def test_copies_turned_off_fall_back_to_plain_retention():
    """remote.log.copy.disable (Kafka 3.9): local segments no longer wait for a copy, and
    retention.ms, not local.retention.ms, applies (UnifiedLog.localRetentionMs)."""
    report = segtools.explain_retention(TIERED / "clicks.tiered-0", at=AT, deep=False,
                                        configs={"remote.log.copy.disable": True})
    [e] = report.partitions
    assert [v.reason for v in e.retention.segments] == ["within_retention_ms"] * 4


def test_the_expiration_walk_retries_deletes_and_stops_at_a_copy_in_progress():
    lineage = [EpochEntry(0, 0)]
    config = TopicConfig(retention_ms=24 * HOUR)
    rp = partition(seg(0, 99, state=R.DELETE_SEGMENT_STARTED),
                   seg(100, 199, state=R.COPY_SEGMENT_STARTED, started=NOW - HOUR // 2),
                   seg(200, 299, max_ts=NOW - 48 * HOUR))
    got = T.remote_verdicts(rp, config, now_ms=NOW, lineage=lineage, log_end_offset=400,
                            log_start_offset=0, only_local_size=0)
    assert [(v.deletable, v.reason) for v in got] == [
        (True, T.REMOTE_DELETE_RETRY), (False, T.REMOTE_COPY_UNFINISHED),
        (False, T.REMOTE_BLOCKED_BY_EARLIER_SEGMENT)]
    # an abandoned copy (started long ago) is weighed like any segment: past retention, it goes
    rp = partition(seg(100, 199, state=R.COPY_SEGMENT_STARTED, started=NOW - 72 * HOUR,
                       max_ts=NOW - 72 * HOUR), seg(200, 299, max_ts=NOW - 48 * HOUR))
    got = T.remote_verdicts(rp, config, now_ms=NOW, lineage=lineage, log_end_offset=400,
                            log_start_offset=0, only_local_size=0)
    assert [v.reason for v in got] == [T.REMOTE_RETENTION_MS_BREACHED,
                                       T.REMOTE_RETENTION_MS_BREACHED]

