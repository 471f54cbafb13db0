"""Confluent's wire format: the frame its serializers put around a key or value.

Every Confluent serializer (Avro, Protobuf, JSON Schema) writes the same five-byte header, the
magic byte ``0`` then the schema id as a big-endian int32 (``AbstractKafkaSchemaSerDe.MAGIC_BYTE``
and ``idSize`` in schema-registry's ``schema-serializer``; ``_MAGIC_BYTE`` and the ``>bI`` struct
in confluent-kafka-python's ``schema_registry/serde.py``). The Protobuf serializer adds the
*message indexes* after it: which message of the ``.proto`` file the body is, as a path through
nested declarations, written as a zigzag varint count followed by zigzag varint indexes, with
the common ``[0]`` (the first message) shortened to the single byte ``0``
(``MessageIndexes`` in schema-registry's ``protobuf-provider``, ``_encode_varints`` in
confluent-kafka-python's Protobuf serializer). Newer serializers may write magic byte ``1``
and a 16-byte schema GUID, or carry the id in a header: those are not read here (a magic byte
1 is reported as such). docs/payloads.md cites the files.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The first byte of every Confluent-framed payload.
MAGIC_BYTE = 0
#: The magic byte of the newer frame that names a schema by a 16-byte GUID (not read here).
GUID_MAGIC_BYTE = 1
#: Magic byte plus the big-endian int32 schema id.
HEADER_SIZE = 5
#: More message indexes than any real ``.proto`` nests; a longer array is hostile input.
MAX_MESSAGE_INDEXES = 64


class FrameError(ValueError):
    """Bytes that claim the frame (or look like it) but cannot be one."""


@dataclass(frozen=True, slots=True)
class Frame:
    """A framed payload's header: the schema id and where the body starts."""

    schema_id: int
    body_start: int


def is_framed(data: bytes) -> bool:
    """Whether ``data`` starts with the magic byte (what a Confluent deserializer checks first,
    failing with "Unknown magic byte!" otherwise)."""
    return len(data) > 0 and data[0] == MAGIC_BYTE


def read_frame(data: bytes) -> Frame:
    """The header of a framed payload; :class:`FrameError` when it is not one."""
    if not is_framed(data):
        raise FrameError("unknown magic byte" if data else "empty payload")
    if len(data) < HEADER_SIZE:
        raise FrameError(f"{len(data)} bytes: shorter than the 5-byte header")
    return Frame(int.from_bytes(data[1:HEADER_SIZE], "big", signed=True), HEADER_SIZE)


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """One zigzag varint (as ``ByteUtils.readVarint``): value and the position after it."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(data):
            raise FrameError("message indexes cut short")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise FrameError("message index varint longer than 5 bytes")
    return (raw >> 1) ^ -(raw & 1), pos


def read_message_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """The Protobuf serializer's message indexes at ``pos``: the indexes and the body start.
    A count of 0 means ``[0]``, the first message of the file."""
    count, pos = _zigzag_varint(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0 or count > MAX_MESSAGE_INDEXES:
        raise FrameError(f"{count} message indexes")
    indexes = []
    for _ in range(count):
        index, pos = _zigzag_varint(data, pos)
        if index < 0:
            raise FrameError(f"negative message index {index}")
        indexes.append(index)
    return tuple(indexes), pos


def write_message_indexes(indexes: tuple[int, ...]) -> bytes:
    """The bytes :func:`read_message_indexes` reads (used by tests and the fixture writer)."""
    if tuple(indexes) == (0,):
        return b"\x00"
    out = bytearray()
    for value in (len(indexes), *indexes):
        raw = (value << 1) ^ (value >> 31)
        while raw > 0x7F:
            out.append((raw & 0x7F) | 0x80)
            raw >>= 7
        out.append(raw)
    return bytes(out)


def frame(schema_id: int, body: bytes, indexes: tuple[int, ...] | None = None) -> bytes:
    """A framed payload, as Confluent's serializers write it (for tests and fixtures)."""
    head = bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big", signed=True)
    return head + (write_message_indexes(indexes) if indexes is not None else b"") + body
