"""A record's key and value decoded together: what the record-at-a-time faces (``dump``,
``find``, the report's samples) show."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from segtools.payloads.decoded import Decoded
from segtools.payloads.decoder import PayloadDecoder
from segtools.payloads.errors import PayloadError
from segtools.storage.partition import parse_partition_dir_name


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """Each side's decoded payload (None: nothing to decode), and the errors of the sides
    that did not decode, as (side, error)."""

    sides: dict[str, Decoded | None]
    errors: tuple[tuple[str, PayloadError], ...]


def decode_record(decoder: PayloadDecoder, key: bytes | None, value: bytes | None,
                  topic: str | None) -> DecodedRecord:
    sides: dict[str, Decoded | None] = {}
    errors = []
    for side, data in (("key", key), ("value", value)):
        try:
            sides[side] = decoder.decode(data, topic=topic, is_key=side == "key")
        except PayloadError as e:
            sides[side] = None
            errors.append((side, e))
    return DecodedRecord(sides, tuple(errors))


def topic_of(segment: PurePath) -> str | None:
    """The topic of a segment file's partition directory (the subject naming follows it)."""
    name = parse_partition_dir_name(segment.parent.name)
    return name.topic if name is not None else None
