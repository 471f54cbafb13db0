"""``__cluster_metadata`` (KRaft) records: the frame and every metadata record schema.

A record's key is null and its value is a frame (``AbstractApiMessageSerde``): unsigned varint
frame version (must be 1; 0 was the 2.8 preview and is refused), unsigned varint apiKey,
unsigned varint record version, then the record in the flexible encoding. Bytes left after
the record are an error, as Kafka's reader says ("garbage after"). Schemas follow
``metadata/src/main/resources/common/metadata/*.json``; apiKeys 6, 13 and 16 are unused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from segtools.formats.internal.generated import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Message,
    Reader,
    SchemaError,
    UnsupportedVersionError,
    array,
    field,
    message,
    struct_of,
    tagged,
    write_uvarint,
)

FRAME_VERSION = 1

#: ``ConfigResource.Type`` ids used by ConfigRecord.ResourceType.
CONFIG_RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}
TOPIC_RESOURCE = 2

#: ``LeaderConstants.NO_LEADER_CHANGE``: PartitionChangeRecord.Leader -2 = unchanged
#: (-1 is "no leader").
NO_LEADER_CHANGE = -2
#: ``LeaderRecoveryState`` ids (-1 in a PartitionChangeRecord = unchanged).
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}


def _endpoint(name: str, *, protocol: bool = True):
    fields = [field("Name", STRING), field("Host", STRING), field("Port", UINT16)]
    if protocol:
        fields.append(field("SecurityProtocol", INT16))
    return struct_of(name, *fields)


def _features(name: str):
    return struct_of(name, field("Name", STRING), field("MinSupportedVersion", INT16),
                     field("MaxSupportedVersion", INT16))


def _replicas(name: str, tag: int, versions: str):
    return tagged(name, array(INT32), tag, versions, nullable=versions, default=None)


RECORDS: tuple[Message, ...] = (
    message("RegisterBrokerRecord", "0-3", "0+",
            field("BrokerId", INT32),
            field("IsMigratingZkBroker", BOOL, "2+", default=False),
            field("IncarnationId", UUID),
            field("BrokerEpoch", INT64),
            field("EndPoints", array(_endpoint("BrokerEndpoint"))),
            field("Features", array(_features("BrokerFeature"))),
            field("Rack", STRING, nullable="0+"),
            field("Fenced", BOOL, default=True),
            field("InControlledShutdown", BOOL, "1+", default=False),
            tagged("LogDirs", array(UUID), 0, "3+"),
            api_key=0),
    message("UnregisterBrokerRecord", "0", "0+",
            field("BrokerId", INT32), field("BrokerEpoch", INT64), api_key=1),
    message("TopicRecord", "0", "0+", field("Name", STRING), field("TopicId", UUID), api_key=2),
    message("PartitionRecord", "0-2", "0+",
            field("PartitionId", INT32, default=-1),
            field("TopicId", UUID),
            field("Replicas", array(INT32)),
            field("Isr", array(INT32)),
            field("RemovingReplicas", array(INT32)),
            field("AddingReplicas", array(INT32)),
            field("Leader", INT32, default=-1),
            tagged("LeaderRecoveryState", INT8, 0, "0+", default=0),
            field("LeaderEpoch", INT32, default=-1),
            field("PartitionEpoch", INT32, default=-1),
            field("Directories", array(UUID), "1+"),
            _replicas("EligibleLeaderReplicas", 1, "2+"),
            _replicas("LastKnownElr", 2, "2+"),
            api_key=3),
    message("ConfigRecord", "0", "0+",
            field("ResourceType", INT8),
            field("ResourceName", STRING),
            field("Name", STRING),
            field("Value", STRING, nullable="0+"),
            api_key=4),
    message("PartitionChangeRecord", "0-2", "0+",
            field("PartitionId", INT32, default=-1),
            field("TopicId", UUID),
            _replicas("Isr", 0, "0+"),
            tagged("Leader", INT32, 1, "0+", default=NO_LEADER_CHANGE),
            _replicas("Replicas", 2, "0+"),
            _replicas("RemovingReplicas", 3, "0+"),
            _replicas("AddingReplicas", 4, "0+"),
            tagged("LeaderRecoveryState", INT8, 5, "0+", default=-1),
            tagged("Directories", array(UUID), 8, "1+", nullable="1+", default=None),
            _replicas("EligibleLeaderReplicas", 6, "2+"),
            _replicas("LastKnownElr", 7, "2+"),
            api_key=5),
    message("FenceBrokerRecord", "0", "0+", field("Id", INT32), field("Epoch", INT64),
            api_key=7),
    message("UnfenceBrokerRecord", "0", "0+", field("Id", INT32), field("Epoch", INT64),
            api_key=8),
    message("RemoveTopicRecord", "0", "0+", field("TopicId", UUID), api_key=9),
    message("DelegationTokenRecord", "0", "0+",
            field("Owner", STRING),
            field("Requester", STRING),
            field("Renewers", array(STRING)),
            field("IssueTimestamp", INT64),
            field("MaxTimestamp", INT64),
            field("ExpirationTimestamp", INT64),
            field("TokenId", STRING),
            api_key=10),
    message("UserScramCredentialRecord", "0", "0+",
            field("Name", STRING),
            field("Mechanism", INT8),
            field("Salt", BYTES),
            field("StoredKey", BYTES),
            field("ServerKey", BYTES),
            field("Iterations", INT32),
            api_key=11),
    message("FeatureLevelRecord", "0", "0+", field("Name", STRING), field("FeatureLevel", INT16),
            api_key=12),
    message("ClientQuotaRecord", "0", "0+",
            field("Entity", array(struct_of("EntityData", field("EntityType", STRING),
                                            field("EntityName", STRING, nullable="0+")))),
            field("Key", STRING),
            field("Value", FLOAT64),
            field("Remove", BOOL),
            api_key=14),
    message("ProducerIdsRecord", "0", "0+",
            field("BrokerId", INT32),
            field("BrokerEpoch", INT64, default=-1),
            field("NextProducerId", INT64),
            api_key=15),
    message("BrokerRegistrationChangeRecord", "0-2", "0+",
            field("BrokerId", INT32),
            field("BrokerEpoch", INT64),
            tagged("Fenced", INT8, 0, "0+"),
            tagged("InControlledShutdown", INT8, 1, "1+"),
            tagged("LogDirs", array(UUID), 2, "2+"),
            api_key=17),
    message("AccessControlEntryRecord", "0", "0+",
            field("Id", UUID),
            field("ResourceType", INT8),
            field("ResourceName", STRING),
            field("PatternType", INT8),
            field("Principal", STRING),
            field("Host", STRING),
            field("Operation", INT8),
            field("PermissionType", INT8),
            api_key=18),
    message("RemoveAccessControlEntryRecord", "0", "0+", field("Id", UUID), api_key=19),
    message("NoOpRecord", "0", "0+", api_key=20),
    message("ZkMigrationStateRecord", "0", "0+", field("ZkMigrationState", INT8), api_key=21),
    message("RemoveUserScramCredentialRecord", "0", "0+",
            field("Name", STRING), field("Mechanism", INT8), api_key=22),
    message("BeginTransactionRecord", "0", "0+",
            tagged("Name", STRING, 0, "0+", versions="0+", nullable="0+", default=None),
            api_key=23),
    message("EndTransactionRecord", "0", "0+", api_key=24),
    message("AbortTransactionRecord", "0", "0+",
            tagged("Reason", STRING, 0, "0+", versions="0+", nullable="0+", default=None),
            api_key=25),
    message("RemoveDelegationTokenRecord", "0", "0+", field("TokenId", STRING), api_key=26),
    message("RegisterControllerRecord", "0", "0+",
            field("ControllerId", INT32),
            field("IncarnationId", UUID),
            field("ZkMigrationReady", BOOL),
            field("EndPoints", array(_endpoint("ControllerEndpoint"))),
            field("Features", array(_features("ControllerFeature"))),
            api_key=27),
)

BY_API_KEY: dict[int, Message] = {m.api_key: m for m in RECORDS if m.api_key is not None}


class UnknownMetadataRecordError(UnsupportedVersionError):
    """An apiKey this reader has no schema for (a newer controller's record type)."""

    def __init__(self, api_key: int, version: int):
        super().__init__(f"unknown metadata record type (apiKey {api_key}, version {version})")
        self.api_key = api_key
        self.version = version


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    api_key: int
    name: str
    version: int
    data: dict


def _frame_number(r: Reader, what: str) -> int:
    """``AbstractApiMessageSerde.unsignedIntToShort``: a uvarint that must fit an int16."""
    at = r.pos
    value = r.uvarint()
    if value < 0 or value > 0x7FFF:
        raise SchemaError(f"metadata record {what} {value} is too large", position=at)
    return value


def decode_frame(value: bytes | None,
                 schemas: Mapping[int, Message] = BY_API_KEY) -> MetadataRecord:
    """Decode one metadata record value as ``AbstractApiMessageSerde.read`` does; ``schemas``
    is the serde's ``apiMessageFor`` (``__remote_log_metadata`` frames its records the same
    way with its own four)."""
    if value is None:
        raise SchemaError("metadata record has a null value")
    r = Reader(memoryview(value), 0, len(value))
    frame_version = _frame_number(r, "frame version")
    if frame_version == 0:
        raise UnsupportedVersionError(
            "metadata record frame version 0 (the KRaft preview in Kafka 2.8) is not readable")
    if frame_version != FRAME_VERSION:
        raise UnsupportedVersionError(f"unknown metadata record frame version {frame_version}")
    api_key = _frame_number(r, "type")
    version = _frame_number(r, "version")
    schema = schemas.get(api_key)
    if schema is None:
        raise UnknownMetadataRecordError(api_key, version)
    data, end = schema.read(value, version, start=r.pos)
    if end != len(value):
        raise SchemaError(f"found {len(value) - end} byte(s) of garbage after {schema.name}",
                          position=end)
    return MetadataRecord(api_key, schema.name, version, data)


def encode_frame(schema: Message, data: dict, version: int) -> bytes:
    """The frame ``AbstractApiMessageSerde.write`` produces (tests build records with it)."""
    head = bytearray()
    for n in (FRAME_VERSION, schema.api_key, version):
        write_uvarint(head, n)
    return bytes(head) + schema.write(data, version)
