"""Replaying __cluster_metadata: topic configs, the timeline, metadata transactions, snapshots,
and records this reader cannot decode."""

from __future__ import annotations

import pytest

from segtools.analysis.cluster_metadata import timeline, topic_configs
from segtools.errors import SegtoolsError
from segtools.formats.internal.cluster_metadata import BY_API_KEY, encode_frame
from segtools.formats.internal.generated import write_uvarint
from tests.forensics import FORENSICS, records_batch, write_partition

METADATA = FORENSICS / "__cluster_metadata-0"
T_F = 1_700_470_800_000  # 2023-11-20T09:00:00Z, Forensics.T_F
DAY = 86_400_000


def test_topic_configs_are_what_the_log_sets():
    configs = topic_configs(METADATA)
    assert configs["payments-compact"] == {"cleanup.policy": "compact,delete",
                                           "retention.ms": "604800000",
                                           "delete.retention.ms": "86400000",
                                           "segment.bytes": "700"}
    # changed the day before, and segment.bytes deleted by a null-valued ConfigRecord
    assert configs["orders.v2-eu"] == {"retention.ms": "86400000"}
    assert configs["big-value"] == {"max.message.bytes": "2097152"}
    assert configs["payments.txn"] == {}
    assert configs["__consumer_offsets"]["cleanup.policy"] == "compact"
    assert "tmp.scratch" not in configs  # RemoveTopicRecord
    assert "aborted.topic" not in configs  # created inside an aborted metadata transaction
    assert topic_configs(FORENSICS) == configs  # a log dir holding the partition works too


def test_topic_configs_at_a_time():
    before = topic_configs(METADATA, at=T_F - DAY - 1)
    assert before["orders.v2-eu"] == {"retention.ms": "604800000", "segment.bytes": "65536"}
    assert before["tmp.scratch"] == {"retention.ms": "3600000"}


def test_topic_configs_refuses_other_paths(tmp_path):
    with pytest.raises(SegtoolsError):
        topic_configs(FORENSICS / "payments.hanging-0")
    with pytest.raises(SegtoolsError):
        topic_configs(tmp_path / "missing")


def events_of(replay, kind):
    return [e for e in replay.events if e.event == kind]


def test_timeline_leader_and_isr_changes():
    replay = timeline(METADATA)
    assert replay.findings == ()
    changes = [e for e in events_of(replay, "partition_changed")
               if e.details["topic"] == "orders.v2-eu" and e.details["partition"] == 9]
    assert [(c.details["leader"], c.details["leader_epoch"], c.details["isr"])
            for c in changes] == [(1, 1, [2, 1]), (2, 2, [2]), (2, 2, [2, 1])]
    assert changes[1].timestamp == T_F + 30 * 60_000 + 9_000
    assert changes[1].details["changes"] == {"isr": {"from": [2, 1], "to": [2]},
                                             "leader": {"from": 1, "to": 2}}
    state = replay.image.topic_by_name("orders.v2-eu").partitions[9]
    assert (state.leader, state.leader_epoch, state.partition_epoch) == (2, 2, 3)


def test_timeline_raft_leaders_brokers_features():
    replay = timeline(METADATA)
    leaders = [(e.details["leader_id"], e.raft_epoch) for e in
               events_of(replay, "raft_leader_change")]
    assert leaders == [(1, 1), (2, 2)]
    fenced = [(e.details["broker_id"], e.timestamp) for e in events_of(replay, "broker_fenced")]
    assert (1, T_F + 30 * 60_000 + 9_000) in fenced
    assert replay.image.features == {"metadata.version": 21}
    assert sorted(replay.image.brokers) == [1, 2, 3]
    assert replay.image.brokers[1].broker_epoch == 21 and not replay.image.brokers[1].fenced
    assert replay.image.raft_leader == 2 and replay.noop_records == 3


def test_aborted_metadata_transaction_is_discarded():
    replay = timeline(METADATA)
    (aborted,) = events_of(replay, "transaction_aborted")
    assert aborted.details["discarded_records"] == ["TopicRecord", "ConfigRecord"]
    assert aborted.details["reason"] == "Controller failover"
    assert replay.image.topic_by_name("aborted.topic") is None
    assert replay.image.topic_by_name("tmp.scratch") is None
    (removed,) = events_of(replay, "topic_removed")
    assert removed.details["configs_removed"] == {"retention.ms": "3600000"}


def test_open_transaction_at_the_end_is_not_applied():
    replay = timeline(METADATA, at=T_F + 30 * 60_000 - 1)  # before the failover's abort
    assert replay.image.topic_by_name("aborted.topic") is None
    assert [f.code for f in replay.findings] == ["metadata_transaction_open"]


def frame(record: str, version: int = 0, **data) -> bytes:
    schema = next(m for m in BY_API_KEY.values() if m.name == record)
    return encode_frame(schema, data, version)


def test_unknown_record_type_and_garbage_are_reported(tmp_path):
    unknown = bytearray()
    for n in (1, 99, 0):
        write_uvarint(unknown, n)
    good = frame("TopicRecord", name="t", topicId="AAAAAAAAAAAAAAAAAAAAAQ")
    pdir = write_partition(tmp_path, "__cluster_metadata-0", [
        records_batch([(None, bytes(unknown) + b"\x00")], base_offset=0, timestamp=1),
        records_batch([(None, good + b"\x00")], base_offset=1, timestamp=2),
        records_batch([(None, b"\x00\x02\x00\x00")], base_offset=2, timestamp=3),
        records_batch([(None, good)], base_offset=3, timestamp=4),
    ])
    replay = timeline(pdir)
    assert [(f.code, f.offset) for f in replay.findings] == [
        ("metadata_record_unknown_type", 0), ("metadata_record_undecodable", 1),
        ("metadata_record_undecodable", 2)]
    assert replay.image.topic_configs() == {"t": {}}


def test_snapshot_supplies_the_state_before_the_log_start(tmp_path):
    """A log that starts at 2 (older segments deleted after a snapshot) replays the snapshot
    ``00000000000000000002-0000000001.checkpoint`` first."""
    pdir = write_partition(tmp_path, "__cluster_metadata-0", [
        records_batch([(None, frame("ConfigRecord", resourceType=2, resourceName="a",
                                    name="retention.ms", value="5"))],
                      base_offset=2, timestamp=10)], base=2)
    (pdir / "00000000000000000002-0000000001.checkpoint").write_bytes(records_batch(
        [(None, frame("TopicRecord", name="a", topicId="AAAAAAAAAAAAAAAAAAAAAQ")),
         (None, frame("ConfigRecord", resourceType=2, resourceName="a", name="cleanup.policy",
                      value="compact"))], base_offset=0, timestamp=5))
    replay = timeline(pdir)
    assert replay.snapshot is not None and replay.findings == ()
    assert replay.image.topic_configs() == {"a": {"cleanup.policy": "compact",
                                                  "retention.ms": "5"}}
    (pdir / "00000000000000000002-0000000001.checkpoint").unlink()
    replay = timeline(pdir)
    assert [f.code for f in replay.findings] == ["metadata_history_incomplete"]
