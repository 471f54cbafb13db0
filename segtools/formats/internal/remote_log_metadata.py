"""``__remote_log_metadata`` records: what tiered storage copied to, and deleted from, the
remote store.

With ``remote.log.metadata.manager.class.name`` left at its default
(``TopicBasedRemoteLogMetadataManager``), every copy and delete event of a tiered partition is a
record in this internal topic. ``ProducerManager`` writes each with a null key; the value is
``RemoteLogMetadataSerde`` over ``BytesApiMessageSerde``, i.e. the same frame as
``__cluster_metadata`` (``AbstractApiMessageSerde``: unsigned varint frame version 1, apiKey,
record version, then the flexible body; bytes left over are an error).

The four record types follow ``storage/src/main/resources/message/*.json`` in apache/kafka
(all at version 0, flexible): ``RemoteLogSegmentMetadataRecord`` (apiKey 0, a copy started),
``RemoteLogSegmentMetadataUpdateRecord`` (1, a segment changed state),
``RemotePartitionDeleteMetadataRecord`` (2, a partition's remote data is being deleted) and
``RemoteLogSegmentMetadataSnapshotRecord`` (3, the form a metadata snapshot keeps a segment in;
it carries no topic partition). State bytes are ``RemoteLogSegmentState.id()`` and
``RemotePartitionDeleteState.id()``.
"""

from __future__ import annotations

from segtools.formats.internal import cluster_metadata
from segtools.formats.internal.generated import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    Message,
    array,
    field,
    message,
    struct_of,
)

TOPIC = "__remote_log_metadata"

#: ``RemoteLogSegmentState`` ids.
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED",
                  2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}
#: ``RemotePartitionDeleteState`` ids.
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}

SEGMENT_METADATA = 0
SEGMENT_METADATA_UPDATE = 1
PARTITION_DELETE = 2
SEGMENT_METADATA_SNAPSHOT = 3


def _topic_id_partition():
    return struct_of("TopicIdPartitionEntry", field("Name", STRING), field("Id", UUID),
                     field("Partition", INT32))


def _segment_id():
    return struct_of("RemoteLogSegmentIdEntry", field("TopicIdPartition", _topic_id_partition()),
                     field("Id", UUID))


def _leader_epochs():
    return array(struct_of("SegmentLeaderEpochEntry", field("LeaderEpoch", INT32),
                           field("Offset", INT64)))


def _segment_fields():
    """The fields after the segment's id, the same in ``RemoteLogSegmentMetadataRecord`` and
    ``RemoteLogSegmentMetadataSnapshotRecord`` (the snapshot stores the id as a bare UUID)."""
    return (field("StartOffset", INT64),
            field("EndOffset", INT64),
            field("BrokerId", INT32),
            field("MaxTimestampMs", INT64),
            field("EventTimestampMs", INT64),
            field("SegmentLeaderEpochs", _leader_epochs()),
            field("SegmentSizeInBytes", INT32),
            field("CustomMetadata", BYTES, nullable="0+", default=None),
            field("RemoteLogSegmentState", INT8))


RECORDS: tuple[Message, ...] = (
    message("RemoteLogSegmentMetadataRecord", "0", "0+",
            field("RemoteLogSegmentId", _segment_id()),
            *_segment_fields(),
            api_key=SEGMENT_METADATA),
    message("RemoteLogSegmentMetadataUpdateRecord", "0", "0+",
            field("RemoteLogSegmentId", _segment_id()),
            field("BrokerId", INT32),
            field("EventTimestampMs", INT64),
            field("CustomMetadata", BYTES, nullable="0+", default=None),
            field("RemoteLogSegmentState", INT8),
            api_key=SEGMENT_METADATA_UPDATE),
    message("RemotePartitionDeleteMetadataRecord", "0", "0+",
            field("TopicIdPartition", _topic_id_partition()),
            field("BrokerId", INT32),
            field("EventTimestampMs", INT64),
            field("RemotePartitionDeleteState", INT8),
            api_key=PARTITION_DELETE),
    message("RemoteLogSegmentMetadataSnapshotRecord", "0", "0+",
            field("SegmentId", UUID),
            *_segment_fields(),
            api_key=SEGMENT_METADATA_SNAPSHOT),
)

BY_API_KEY: dict[int, Message] = {m.api_key: m for m in RECORDS if m.api_key is not None}


def decode_frame(value: bytes | None) -> cluster_metadata.MetadataRecord:
    """One record value as ``RemoteLogMetadataSerde.deserialize`` reads it."""
    return cluster_metadata.decode_frame(value, BY_API_KEY)


def state_name(api_key: int, code: int) -> str:
    """The state byte's name; an id Kafka does not define reads ``UNKNOWN(<id>)``."""
    names = PARTITION_DELETE_STATES if api_key == PARTITION_DELETE else SEGMENT_STATES
    return names.get(code, f"UNKNOWN({code})")
