"""Every record of the Kafka-framed internal-topic fixtures decodes, with the values the
generator wrote (fixtures/java/Forensics.java), and nothing is left over or reported."""

from __future__ import annotations

from collections import Counter

import pytest

from segtools.analysis.partition_log import as_partition, iter_records, partitions_of
from segtools.formats.internal import consumer_offsets, transaction_state
from segtools.formats.internal.cluster_metadata import decode_frame
from segtools.formats.internal.control import decode_kraft_control
from tests.forensics import FORENSICS


def records_of(topic: str):
    findings = []
    out = [lr for p in partitions_of([FORENSICS], topic) for lr in iter_records(p, findings)]
    assert findings == []
    return out


def test_cluster_metadata_every_record_decodes():
    kinds = Counter()
    controls = Counter()
    for lr in records_of("__cluster_metadata"):
        if lr.batch.is_control:
            rec = decode_kraft_control(lr.record.control.type, lr.record.value)
            controls[rec.name] += 1
            assert lr.batch.producer_id == -1 and not lr.batch.is_transactional
        else:
            assert lr.record.key is None
            rec = decode_frame(lr.record.value)
            kinds[rec.name] += 1
    assert controls == {"LeaderChangeMessage": 2, "KRaftVersionRecord": 2, "VotersRecord": 2}
    for name in ("TopicRecord", "PartitionRecord", "ConfigRecord", "PartitionChangeRecord",
                 "RemoveTopicRecord", "RegisterBrokerRecord", "FenceBrokerRecord",
                 "UnfenceBrokerRecord", "FeatureLevelRecord", "ProducerIdsRecord",
                 "BrokerRegistrationChangeRecord", "RegisterControllerRecord",
                 "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord",
                 "NoOpRecord", "ZkMigrationStateRecord"):
        assert kinds[name] > 0, name
    assert kinds["PartitionRecord"] == 50 + 50 + 10 + 2 + 7


def test_leader_change_batch_holds_several_control_records():
    findings = []
    part = as_partition(FORENSICS / "__cluster_metadata-0")
    first = [lr for lr in iter_records(part, findings) if lr.batch.base_offset == 0]
    assert [lr.record.control.type for lr in first] == ["LEADER_CHANGE", "KRAFT_VERSION",
                                                        "KRAFT_VOTERS"]
    leader = decode_kraft_control("LEADER_CHANGE", first[0].record.value)
    assert leader.data["leaderId"] == 1
    assert [v["voterId"] for v in leader.data["grantingVoters"]] == [1, 2]
    voters = decode_kraft_control("KRAFT_VOTERS", first[2].record.value)
    assert voters.data["voters"][0]["endpoints"][0]["port"] == 9093


def test_consumer_offsets_every_record_decodes():
    types = Counter()
    versions = Counter()
    for lr in records_of("__consumer_offsets"):
        if lr.batch.is_control:
            continue
        rec = consumer_offsets.decode_record(lr.record.key, lr.record.value)
        types[rec.record_type] += 1
        versions[(rec.name, rec.value_version)] += 1
        if rec.name == "GroupMetadata" and rec.value is not None:
            for m in rec.value["members"]:
                consumer_offsets.decode_subscription(m["subscription"])
                consumer_offsets.decode_assignment(m["assignment"])
    assert set(types) == {0, 1, 2, 3, 4, 5, 6, 7, 8}
    for v in (0, 1, 3):
        assert versions[("OffsetCommit", v)] > 0
    assert versions[("GroupMetadata", 0)] and versions[("GroupMetadata", 3)]
    assert versions[("OffsetCommit", None)] == 2  # the analytics tombstones


def test_classic_member_metadata_tagged_struct():
    """A KIP-848 member that joined with the classic protocol: the nullable tagged struct."""
    for lr in records_of("__consumer_offsets"):
        if lr.batch.is_control:
            continue
        rec = consumer_offsets.decode_record(lr.record.key, lr.record.value)
        if rec.name == "ConsumerGroupMemberMetadata" and rec.key["memberId"] == "m-848-b" \
                and rec.value is not None:
            classic = rec.value["classicMemberMetadata"]
            assert classic["sessionTimeoutMs"] == 45000
            (proto,) = classic["supportedProtocols"]
            version, sub = consumer_offsets.decode_subscription(proto["metadata"])
            assert (proto["name"], version, sub["rackId"]) == ("range", 3, "eu-west-1c")
            return
    pytest.fail("no classic member record")


def test_transaction_state_every_record_decodes():
    statuses = Counter()
    versions = set()
    for lr in records_of("__transaction_state"):
        rec = transaction_state.decode_record(lr.record.key, lr.record.value)
        statuses[rec.status] += 1
        versions.add(rec.value_version)
    assert versions == {0, 1, None}
    assert {"Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort",
            "CompleteAbort", None} <= set(statuses)


def test_transaction_log_v1_tagged_fields():
    for lr in records_of("__transaction_state"):
        rec = transaction_state.decode_record(lr.record.key, lr.record.value)
        if rec.transactional_id == "orders-tx-v2" and rec.status == "CompleteCommit":
            assert rec.value_version == 1
            assert rec.value["previousProducerId"] == 6099
            assert rec.value["clientTransactionVersion"] == 2
            assert rec.value["nextProducerId"] == -1
            return
    pytest.fail("no v1 CompleteCommit")
