"""``__consumer_offsets`` replay on the forensics fixture: the reset-to-earliest regression, the
tombstoned group, transactional commits applied only on COMMIT, KIP-848 and legacy groups."""

from __future__ import annotations

import struct

from segtools.analysis.offsets import ABORTED, APPLIED, PENDING, replay_offsets
from segtools.analysis.partition_log import as_partition, partitions_of
from segtools.formats.internal.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    RECORD_TYPES,
    SHARE_GROUP_METADATA_VALUE,
    decode_assignment,
    decode_record,
)
from tests.forensics import FORENSICS, marker_batch, records_batch, write_partition

T_F = 1_700_470_800_000  # 2023-11-20T09:00:00Z
MIN = 60_000
T_RESET = T_F + 7 * MIN + 30_000  # 09:07:30Z
T_EXPIRE = T_F + 50 * MIN


def replay(**kw):
    return replay_offsets(partitions_of([FORENSICS], "__consumer_offsets"), **kw)


def test_reset_to_earliest_is_an_offset_regression():
    r = replay()
    assert r.findings == ()
    found = sorted((x.current.group, x.current.topic, x.current.partition, x.previous.offset,
                    x.current.offset, x.current.effective_timestamp, x.group_state,
                    x.generation, x.current.where.partition, x.current.where.offset)
                   for x in r.regressions)
    assert found == [
        ("billing", "orders.v2-eu", 0, 240, 0, T_RESET, "Empty", 2, 9, 12),
        ("billing", "orders.v2-eu", 1, 200, 0, T_RESET, "Empty", 2, 9, 13),
    ]
    billing = r.groups["billing"]
    assert {tp: c.offset for tp, c in billing.offsets.items()} == {
        ("orders.v2-eu", 0): 60, ("orders.v2-eu", 1): 50}
    assert (billing.state, billing.generation) == ("Stable", 3)


def test_offsets_at_a_time():
    before = replay(at=T_RESET - 1, groups=["bill*"])
    assert list(before.groups) == ["billing"]
    billing = before.groups["billing"]
    assert {tp: c.offset for tp, c in billing.offsets.items()} == {
        ("orders.v2-eu", 0): 240, ("orders.v2-eu", 1): 200}
    assert (billing.state, billing.generation) == ("Empty", 2)
    assert before.regressions == ()


def test_history_of_one_partition():
    r = replay(groups=["billing"], history=True)
    assert [c.offset for c in r.commits_for("orders.v2-eu", 0)] == [50, 100, 150, 200, 240, 0,
                                                                30, 60]
    only = replay(groups=["billing"], history=True, topic="orders.v2-eu", partition=0)
    assert list(only.commits) == r.commits_for("orders.v2-eu", 0)
    assert replay(groups=["billing"]).commits == ()  # the live state only, unless asked


def test_tombstones_make_offsets_and_groups_vanish():
    r = replay()
    assert sorted((d.group, d.topic, d.partition, d.last_offset, d.where.timestamp)
                  for d in r.deletions) == [
        ("analytics", "payments-compact", 0, 60, T_EXPIRE),
        ("analytics", "payments-compact", 1, 40, T_EXPIRE)]
    assert [(g, w.timestamp) for g, w in r.group_deletions] == [("analytics", T_EXPIRE)]
    analytics = r.groups["analytics"]
    assert analytics.state == "Dead" and analytics.offsets == {}
    before = replay(at=T_EXPIRE - 1, groups=["analytics"])
    assert {tp: c.offset for tp, c in before.groups["analytics"].offsets.items()} == {
        ("payments-compact", 0): 60, ("payments-compact", 1): 40}


def test_transactional_commits_follow_their_markers():
    r = replay(groups=["payments-processor"], history=True)
    history = r.commits_for("payments.txn", 0)
    assert [(c.offset, c.status, c.producer_id) for c in history] == [
        (12, APPLIED, 4001), (20, ABORTED, 4001)]
    assert history[0].applied_at.offset == 2 and history[1].applied_at.offset == 4
    (committed,) = r.groups["payments-processor"].offsets.values()
    assert committed.offset == 12  # the aborted 20 never applied
    between = replay(at=T_F + 2 * MIN + 500, groups=["payments-processor"], history=True)
    assert between.groups["payments-processor"].offsets == {}  # marker not yet written
    assert [c.status for c in between.commits] == [PENDING]
    assert [f.code for f in between.findings] == ["transactional_offset_commit_pending"]


def test_classic_members_with_consumer_protocol():
    g = replay().groups["billing"]
    (member,) = g.members
    assert member["client_host"] == "/10.0.0.12"
    assert member["subscription"]["topics"] == ["orders.v2-eu"]
    assert member["subscription"]["rack_id"] == "eu-west-1a"
    assert member["assignment"]["partitions"] == {"orders.v2-eu": [0, 1]}


def test_kip848_group():
    g = replay().groups["inventory-848"]
    assert (g.kind, g.epoch, g.assignment_epoch, g.state) == ("consumer", 3, 3, "Stable")
    assert list(g.members848) == ["m-848-a"]
    assert g.members848["m-848-a"]["current"]["assigned"] == {"orders.v2-eu": [2, 3]}
    two = replay(at=T_F + 60_000, groups=["inventory-848"]).groups["inventory-848"]
    assert sorted(two.members848) == ["m-848-a", "m-848-b"]
    assert two.members848["m-848-b"]["metadata"]["classic_protocol"] is True
    assert two.members848["m-848-a"]["current"]["state"] == "UNREVOKED_PARTITIONS"
    assert two.members848["m-848-a"]["current"]["pending_revocation"] == {"orders.v2-eu": [3]}


def test_legacy_record_versions():
    r = replay(groups=["legacy-app"], history=True)
    assert [(c.value_version, c.offset, c.expire_timestamp) for c in r.commits] == [
        (0, 11, -1), (1, 17, T_F - 3_600_000 + 60_000 + 7 * 86_400_000)]
    (member,) = r.groups["legacy-app"].members
    assert member["assignment"] == {"version": 0, "partitions": {"orders.v2-eu": [4]},
                                    "user_data_bytes": None}


def _key(record_type: int, group: str, topic: str = "t", partition: int = 0) -> bytes:
    return struct.pack(">h", record_type) + OFFSET_COMMIT_KEY.write(
        {"group": group, "topic": topic, "partition": partition}, 1)


def _value(offset: int, ts: int) -> bytes:
    return struct.pack(">h", 3) + OFFSET_COMMIT_VALUE.write(
        {"offset": offset, "metadata": "", "commitTimestamp": ts}, 3)


def test_unknown_record_type_is_reported_not_guessed(tmp_path):
    """A newer broker's record type 17 is reported and skipped; the records around it still
    apply, and a pending transactional commit is never applied."""
    pdir = write_partition(tmp_path, "__consumer_offsets-0", [
        records_batch([(_key(1, "g"), _value(5, 1))], base_offset=0, timestamp=1),
        records_batch([(_key(17, "g"), _value(99, 2))], base_offset=1, timestamp=2),
        records_batch([(struct.pack(">h", 1) + b"\x00", _value(1, 2))], base_offset=2,
                      timestamp=2),
        records_batch([(_key(1, "g"), _value(3, 3))], base_offset=3, timestamp=3),
        records_batch([(_key(1, "g", partition=1), _value(7, 4))], base_offset=4,
                      timestamp=4, producer_id=9, producer_epoch=0, transactional=True),
    ])
    r = replay_offsets([as_partition(pdir)])
    assert [(f.code, f.offset) for f in r.findings] == [
        ("consumer_offsets_unknown_record_type", 1),
        ("consumer_offsets_record_undecodable", 2),
        ("transactional_offset_commit_pending", 4)]
    assert {tp: c.offset for tp, c in r.groups["g"].offsets.items()} == {("t", 0): 3}
    assert [(x.previous.offset, x.current.offset) for x in r.regressions] == [(5, 3)]


def test_abort_marker_discards_only_its_producer(tmp_path):
    pdir = write_partition(tmp_path, "__consumer_offsets-0", [
        records_batch([(_key(1, "g"), _value(5, 1))], base_offset=0, timestamp=1,
                      producer_id=1, producer_epoch=0, transactional=True),
        records_batch([(_key(1, "h"), _value(6, 1))], base_offset=1, timestamp=1,
                      producer_id=2, producer_epoch=0, transactional=True),
        marker_batch("ABORT", offset=2, timestamp=2, producer_id=1),
        marker_batch("COMMIT", offset=3, timestamp=3, producer_id=2),
    ])
    r = replay_offsets([as_partition(pdir)])
    assert "g" not in r.groups or r.groups["g"].offsets == {}
    assert r.groups["h"].offsets[("t", 0)].offset == 6


def test_share_group_and_assignment_versions_decode():
    key = struct.pack(">h", 11) + struct.pack(">h", 2) + b"sg"
    value = struct.pack(">h", 0) + SHARE_GROUP_METADATA_VALUE.write({"epoch": 4}, 0)
    rec = decode_record(key, value)
    assert (rec.name, rec.group_id, rec.value) == ("ShareGroupMetadata", "sg", {"epoch": 4})
    # a newer assignment version is read with the newest layout known (ConsumerProtocol)
    data = struct.pack(">h", 9) + CONSUMER_PROTOCOL_ASSIGNMENT.write(
        {"assignedPartitions": [{"topic": "x", "partitions": [1]}]}, 3)
    assert decode_assignment(data)[0] == 9


def test_share_group_member_metadata_is_shown(tmp_path):
    """A KIP-932 member's metadata declares fewer fields than a consumer group member's (no
    instance id, regex, rebalance timeout, assignor): shown with what it has."""
    key = struct.pack(">h", 10) + RECORD_TYPES[10][1].write(
        {"groupId": "sg", "memberId": "m1"}, 10)
    value = struct.pack(">h", 0) + RECORD_TYPES[10][2].write(
        {"rackId": None, "clientId": "c1", "clientHost": "/10.0.0.1",
         "subscribedTopicNames": ["t"]}, 0)
    pdir = write_partition(tmp_path, "__consumer_offsets-0", [
        records_batch([(key, value)], base_offset=0, timestamp=1)])
    g = replay_offsets([as_partition(pdir)]).groups["sg"]
    assert (g.kind, g.members848["m1"]["metadata"]) == ("share", {
        "rackId": None, "clientId": "c1", "clientHost": "/10.0.0.1",
        "subscribedTopicNames": ["t"], "classic_protocol": False})
