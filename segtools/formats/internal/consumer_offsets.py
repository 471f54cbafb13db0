"""``__consumer_offsets`` records: coordinator keys and values, and the consumer protocol.

Serde: ``CoordinatorRecordSerde`` + ``GroupCoordinatorRecordSerde``. A key is an int16
*record type* followed by the key struct (the type doubles as the key's version); a value is an
int16 version followed by the value struct, or null: a tombstone. Types 0 and 1 are both offset
commits (brokers write 1), 2 is classic group metadata, 3-8 the KIP-848 consumer-group records
and 9-15 the KIP-932 share-group records. Any other type is unknown to this reader and is
reported, never guessed at (newer brokers add types, e.g. streams groups, KIP-1071).

When a classic group's ``protocolType`` is ``consumer``, each member's subscription and
assignment bytes are themselves version-prefixed ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment`` messages (``ConsumerProtocol``; expanded by
``DumpLogSegments.prepareGroupMetadataValue``).
"""

from __future__ import annotations

from dataclasses import dataclass

from segtools.errors import SegtoolsError
from segtools.formats.internal.generated import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    Message,
    SchemaError,
    UnsupportedVersionError,
    array,
    field,
    message,
    struct_of,
    tagged,
    version_prefix,
)


class UnknownRecordTypeError(UnsupportedVersionError):
    """``CoordinatorLoader.UnknownRecordTypeException``: a key type this reader lacks."""

    def __init__(self, record_type: int):
        super().__init__(f"unknown __consumer_offsets record type {record_type}")
        self.record_type = record_type


def _group_key(name: str, record_type: int, *, member: bool = False) -> Message:
    fields = [field("GroupId", STRING, str(record_type))]
    if member:
        fields.append(field("MemberId", STRING, str(record_type)))
    return message(name, str(record_type), "none", *fields)


_TOPIC_PARTITIONS = struct_of("TopicPartitions", field("TopicId", UUID),
                              field("Partitions", array(INT32)))
_TOPIC_METADATA = struct_of(
    "TopicMetadata", field("TopicId", UUID), field("TopicName", STRING),
    field("NumPartitions", INT32),
    field("PartitionMetadata", array(struct_of(
        "PartitionMetadata", field("Partition", INT32), field("Racks", array(STRING))))))

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey", "0-1", "none",
    field("group", STRING, "0-1"),
    field("topic", STRING, "0-1"),
    field("partition", INT32, "0-1"))

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue", "0-4", "4+",
    field("offset", INT64),
    field("leaderEpoch", INT32, "3+", default=-1),
    field("metadata", STRING),
    field("commitTimestamp", INT64),
    field("expireTimestamp", INT64, "1", default=-1))

GROUP_METADATA_KEY = message("GroupMetadataKey", "2", "none", field("group", STRING, "2"))

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue", "0-4", "4+",
    field("protocolType", STRING),
    field("generation", INT32),
    field("protocol", STRING, nullable="0+"),
    field("leader", STRING, nullable="0+"),
    field("currentStateTimestamp", INT64, "2+", default=-1),
    field("members", array(struct_of(
        "MemberMetadata",
        field("memberId", STRING),
        field("groupInstanceId", STRING, "3+", nullable="3+", default=None),
        field("clientId", STRING),
        field("clientHost", STRING),
        field("rebalanceTimeout", INT32, "1+", default=-1),
        field("sessionTimeout", INT32),
        field("subscription", BYTES),
        field("assignment", BYTES)))))

CONSUMER_GROUP_METADATA_VALUE = message(
    "ConsumerGroupMetadataValue", "0", "0+", field("Epoch", INT32))

CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
    "ConsumerGroupPartitionMetadataValue", "0", "0+", field("Topics", array(_TOPIC_METADATA)))

CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    field("InstanceId", STRING, nullable="0+"),
    field("RackId", STRING, nullable="0+"),
    field("ClientId", STRING),
    field("ClientHost", STRING),
    field("SubscribedTopicNames", array(STRING)),
    field("SubscribedTopicRegex", STRING, nullable="0+"),
    field("RebalanceTimeoutMs", INT32, default=-1),
    field("ServerAssignor", STRING, nullable="0+"),
    tagged("ClassicMemberMetadata", struct_of(
        "ClassicMemberMetadata",
        field("SessionTimeoutMs", INT32),
        field("SupportedProtocols", array(struct_of(
            "ClassicProtocol", field("Name", STRING), field("Metadata", BYTES))))),
        0, "0+", versions="0+", nullable="0+", default=None))

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", field("AssignmentEpoch", INT32))

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    field("TopicPartitions", array(_TOPIC_PARTITIONS)))

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    field("MemberEpoch", INT32),
    field("PreviousMemberEpoch", INT32),
    field("State", INT8),
    field("AssignedPartitions", array(_TOPIC_PARTITIONS)),
    field("PartitionsPendingRevocation", array(_TOPIC_PARTITIONS)))

SHARE_GROUP_PARTITION_METADATA_VALUE = message(
    "ShareGroupPartitionMetadataValue", "0", "0+", field("Topics", array(_TOPIC_METADATA)))

SHARE_GROUP_MEMBER_METADATA_VALUE = message(
    "ShareGroupMemberMetadataValue", "0", "0+",
    field("RackId", STRING, nullable="0+"),
    field("ClientId", STRING),
    field("ClientHost", STRING),
    field("SubscribedTopicNames", array(STRING)))

SHARE_GROUP_METADATA_VALUE = message("ShareGroupMetadataValue", "0", "0+", field("Epoch", INT32))

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ShareGroupTargetAssignmentMetadataValue", "0", "0+", field("AssignmentEpoch", INT32))

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ShareGroupTargetAssignmentMemberValue", "0", "0+",
    field("TopicPartitions", array(_TOPIC_PARTITIONS)))

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ShareGroupCurrentMemberAssignmentValue", "0", "0+",
    field("MemberEpoch", INT32),
    field("PreviousMemberEpoch", INT32),
    field("State", INT8),
    field("AssignedPartitions", array(_TOPIC_PARTITIONS)))

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = message(
    "ShareGroupStatePartitionMetadataValue", "0", "0+",
    field("InitializedTopics", array(struct_of(
        "TopicPartitionsInfo", field("TopicId", UUID), field("TopicName", STRING),
        field("Partitions", array(INT32))))),
    field("DeletingTopics", array(struct_of(
        "TopicInfo", field("TopicId", UUID), field("TopicName", STRING)))))

#: record type -> (record name, key schema, value schema); ``GroupCoordinatorRecordSerde``.
RECORD_TYPES: dict[int, tuple[str, Message, Message]] = {
    0: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: ("GroupMetadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: ("ConsumerGroupMetadata", _group_key("ConsumerGroupMetadataKey", 3),
        CONSUMER_GROUP_METADATA_VALUE),
    4: ("ConsumerGroupPartitionMetadata", _group_key("ConsumerGroupPartitionMetadataKey", 4),
        CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: ("ConsumerGroupMemberMetadata",
        _group_key("ConsumerGroupMemberMetadataKey", 5, member=True),
        CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: ("ConsumerGroupTargetAssignmentMetadata",
        _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: ("ConsumerGroupTargetAssignmentMember",
        _group_key("ConsumerGroupTargetAssignmentMemberKey", 7, member=True),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: ("ConsumerGroupCurrentMemberAssignment",
        _group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, member=True),
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    9: ("ShareGroupPartitionMetadata", _group_key("ShareGroupPartitionMetadataKey", 9),
        SHARE_GROUP_PARTITION_METADATA_VALUE),
    10: ("ShareGroupMemberMetadata",
         _group_key("ShareGroupMemberMetadataKey", 10, member=True),
         SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: ("ShareGroupMetadata", _group_key("ShareGroupMetadataKey", 11),
         SHARE_GROUP_METADATA_VALUE),
    12: ("ShareGroupTargetAssignmentMetadata",
         _group_key("ShareGroupTargetAssignmentMetadataKey", 12),
         SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: ("ShareGroupTargetAssignmentMember",
         _group_key("ShareGroupTargetAssignmentMemberKey", 13, member=True),
         SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: ("ShareGroupCurrentMemberAssignment",
         _group_key("ShareGroupCurrentMemberAssignmentKey", 14, member=True),
         SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: ("ShareGroupStatePartitionMetadata",
         _group_key("ShareGroupStatePartitionMetadataKey", 15),
         SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
}

OFFSET_COMMIT_TYPES = (0, 1)
GROUP_METADATA_TYPE = 2
CONSUMER_GROUP_TYPES = range(3, 9)
SHARE_GROUP_TYPES = range(9, 16)

#: ``MemberState`` ids of ``ConsumerGroupCurrentMemberAssignmentValue.State``.
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS",
                 127: "UNKNOWN"}


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One decoded ``__consumer_offsets`` record; ``value`` None is a tombstone."""

    record_type: int
    name: str
    key: dict
    value_version: int | None
    value: dict | None

    @property
    def group_id(self) -> str:
        return self.key.get("group", self.key.get("groupId", ""))


def decode_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """Decode one record as ``CoordinatorRecordSerde.deserialize`` does, except that bytes
    left over after a struct are an error here: a silent partial parse is a wrong answer."""
    if key is None:
        raise SchemaError("__consumer_offsets record has a null key")
    record_type = version_prefix(key, "key")
    if record_type not in RECORD_TYPES:
        raise UnknownRecordTypeError(record_type)
    name, key_schema, value_schema = RECORD_TYPES[record_type]
    key_fields = key_schema.read_exact(memoryview(key)[2:], record_type)
    if value is None:
        return CoordinatorRecord(record_type, name, key_fields, None, None)
    version = version_prefix(value, "value")
    return CoordinatorRecord(record_type, name, key_fields, version,
                             value_schema.read_exact(memoryview(value)[2:], version))


# ---------------------------------------------------------------------------- consumer protocol

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", "0-3", "none",
    field("Topics", array(STRING)),
    field("UserData", BYTES, nullable="0+", default=None),
    field("OwnedPartitions", array(struct_of(
        "TopicPartition", field("Topic", STRING, "1+"), field("Partitions", array(INT32), "1+"))),
        "1+"),
    field("GenerationId", INT32, "2+", default=-1),
    field("RackId", STRING, "3+", nullable="3+", default=None))

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment", "0-3", "none",
    field("AssignedPartitions", array(struct_of(
        "TopicPartition", field("Topic", STRING), field("Partitions", array(INT32))))),
    field("UserData", BYTES, nullable="0+", default=None))

CONSUMER_PROTOCOL_TYPE = "consumer"


def _consumer_protocol(schema: Message, data: bytes) -> tuple[int, dict]:
    """``ConsumerProtocol.deserialize*``: a negative version is an error, a newer one is read
    with the newest layout this reader knows (new versions only append fields)."""
    version = version_prefix(data, schema.name)
    if version < 0:
        raise UnsupportedVersionError(f"{schema.name} version {version} is negative")
    value, _ = schema.read(memoryview(data)[2:], min(version, schema.valid.high))
    return version, value


def decode_subscription(data: bytes) -> tuple[int, dict]:
    return _consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, data)


def decode_subscription_lenient(data: bytes) -> tuple[int, dict, int]:
    """Some clients write a subscription whose version promises fields it does not carry
    (kafka-go's version 1 has no owned partitions). The coordinator stores the bytes without
    parsing them, and each version only appends fields, so the bytes are read with the
    newest layout they fit exactly. Returns ``(declared version, value, layout version)``."""
    schema = CONSUMER_PROTOCOL_SUBSCRIPTION
    version = version_prefix(data, schema.name)
    if version < 0:
        raise UnsupportedVersionError(f"{schema.name} version {version} is negative")
    body = memoryview(data)[2:]
    for layout in range(min(version, schema.valid.high), -1, -1):
        try:
            value, end = schema.read(body, layout)
        except SegtoolsError:
            continue
        if end == len(body):
            return version, value, layout
    raise SchemaError(f"{schema.name} version {version}: the bytes fit no known layout")


def decode_assignment(data: bytes) -> tuple[int, dict]:
    return _consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, data)
