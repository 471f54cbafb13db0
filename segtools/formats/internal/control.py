"""KRaft control records: LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters.

They live in control batches of ``__cluster_metadata`` and of KRaft snapshots
(docs/kafka-storage.md §1.5).
The key is ``ControlRecordType`` (int16 version, int16 type); the value is the generated
message, whose own first field is its version (``ControlRecordUtils``). Kafka reads each at
its ``*_CURRENT_VERSION``; here the message's own version field picks the layout, so a value
written by a newer leader is read with the right fields or reported, never read askew.
COMMIT/ABORT transaction markers are ``segtools.formats.batch.EndTransactionMarker``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from segtools.formats.internal.generated import (
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Message,
    SchemaError,
    array,
    field,
    message,
    struct_of,
)

_INT16 = struct.Struct(">h")

LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage", "0-1", "0+",
    field("Version", INT16),
    field("LeaderId", INT32),
    field("Voters", array(struct_of("Voter", field("VoterId", INT32),
                                    field("VoterDirectoryId", UUID, "1+")))),
    field("GrantingVoters", array(struct_of("Voter", field("VoterId", INT32),
                                            field("VoterDirectoryId", UUID, "1+")))))

SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord", "0", "0+",
    field("Version", INT16),
    field("LastContainedLogTimestamp", INT64))

SNAPSHOT_FOOTER_RECORD = message("SnapshotFooterRecord", "0", "0+", field("Version", INT16))

KRAFT_VERSION_RECORD = message(
    "KRaftVersionRecord", "0", "0+",
    field("Version", INT16),
    field("KRaftVersion", INT16))

VOTERS_RECORD = message(
    "VotersRecord", "0", "0+",
    field("Version", INT16),
    field("Voters", array(struct_of(
        "Voter",
        field("VoterId", INT32),
        field("VoterDirectoryId", UUID),
        field("Endpoints", array(struct_of(
            "Endpoint", field("Name", STRING), field("Host", STRING), field("Port", UINT16)))),
        field("KRaftVersionFeature", struct_of(
            "KRaftVersionFeature", field("MinSupportedVersion", INT16),
            field("MaxSupportedVersion", INT16)))))))

#: ``ControlRecordType`` name -> the value's schema (ABORT/COMMIT are transaction markers).
CONTROL_SCHEMAS: dict[str, Message] = {
    "LEADER_CHANGE": LEADER_CHANGE_MESSAGE,
    "SNAPSHOT_HEADER": SNAPSHOT_HEADER_RECORD,
    "SNAPSHOT_FOOTER": SNAPSHOT_FOOTER_RECORD,
    "KRAFT_VERSION": KRAFT_VERSION_RECORD,
    "KRAFT_VOTERS": VOTERS_RECORD,
}


@dataclass(frozen=True, slots=True)
class KRaftControlRecord:
    control_type: str  # ControlRecordType name
    name: str  # the message name
    version: int
    data: dict


def decode_kraft_control(control_type: str, value: bytes | None) -> KRaftControlRecord:
    """Decode the value of a KRaft control record whose key said ``control_type``."""
    schema = CONTROL_SCHEMAS.get(control_type)
    if schema is None:
        raise SchemaError(f"{control_type} is not a KRaft control record type")
    if value is None or len(value) < 2:
        raise SchemaError(f"{schema.name} value is missing or shorter than its version field")
    version = _INT16.unpack_from(value, 0)[0]
    return KRaftControlRecord(control_type, schema.name, version,
                              schema.read_exact(value, version))
