"""Which schema ids a topic's keys and values use, and since when, and who wrote them: the
registry's history joined with the data (``segtools schemas --usage``).

Only the frame's header is read (the schema id), never the body: a topic of millions of records
is counted without decoding one. Per topic, side and id: the first and last offset and time, the
record count and the producer ids, so the moment a topic switched schema (and the producer that
switched it) is one row's ``first_offset``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.findings import Finding
from segtools.payloads import framing
from segtools.payloads.schemas_topic import SCHEMAS_TOPIC, data_records
from segtools.storage.partition import PartitionDir, PartitionState

#: The id a row of payloads without a frame is counted under.
UNFRAMED = None


@dataclass(slots=True)
class SchemaUsage:
    """One topic side's use of one schema id (``schema_id`` None: payloads without a frame)."""

    topic: str
    side: str
    schema_id: int | None
    records: int = 0
    first_offset: int = -1
    last_offset: int = -1
    first_timestamp: int = -1
    last_timestamp: int = -1
    partitions: set[int] = field(default_factory=set)
    producer_ids: set[int] = field(default_factory=set)

    def to_json(self) -> dict:
        return {"type": "schema_usage", "topic": self.topic, "side": self.side,
                "schema_id": self.schema_id, "records": self.records,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
                "partitions": sorted(self.partitions), "producer_ids": sorted(self.producer_ids)}


def schema_id_of(data: bytes | None) -> int | None:
    """The frame's schema id, or None (null, no magic byte, shorter than a header)."""
    if data is None or len(data) < framing.HEADER_SIZE or not framing.is_framed(data):
        return UNFRAMED
    return framing.read_frame(data).schema_id


def usage(partitions: Iterable[PartitionDir], findings: list[Finding], *,
          limit: int = DEFAULT_DECOMPRESS_LIMIT,
          known: Callable[[int], bool] | None = None) -> list[SchemaUsage]:
    """Schema use per topic, side and id, over every live partition but the store topic, in
    topic then first-use order. With ``known`` (whether a source holds an id, or held it
    before a hard delete), a key whose frame names an id it does not know is counted as
    unframed, as the decoder leaves such a key: a ``LongSerializer`` key below 2^56 starts
    with a zero byte and reads as a frame naming id 0."""
    rows: dict[tuple[str, str, int | None], SchemaUsage] = {}
    for p in partitions:
        if p.name is None or p.name.state is not PartitionState.LIVE or \
                p.name.topic == SCHEMAS_TOPIC or p.name.topic.startswith("__"):
            continue
        for batch, record in data_records(p, findings, limit=limit):
            for side, data in (("key", record.key), ("value", record.value)):
                if data is None:
                    continue
                schema_id = schema_id_of(data)
                if side == "key" and schema_id is not None and known is not None and \
                        not known(schema_id):
                    schema_id = UNFRAMED
                key = (p.name.topic, side, schema_id)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = SchemaUsage(*key, first_offset=record.offset,
                                                  first_timestamp=record.timestamp)
                row.records += 1
                row.last_offset = max(row.last_offset, record.offset)
                row.first_offset = min(row.first_offset, record.offset)
                row.last_timestamp = max(row.last_timestamp, record.timestamp)
                row.partitions.add(p.name.partition)
                if batch.producer_id >= 0:
                    row.producer_ids.add(batch.producer_id)
    return sorted(rows.values(), key=lambda r: (r.topic, r.side, r.first_timestamp,
                                                r.first_offset))
