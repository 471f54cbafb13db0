"""Payloads checked over a tree (``segtools verify --decode``): per topic, how many keys and
values decode and why the others do not, with a few examples each.

A topic of millions of records written with a schema nobody kept would otherwise be millions of
identical findings: each topic lists at most ``max_examples`` findings per code, then one finding
that counts the rest, and a summary row per topic holds every count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.findings import Finding, finding
from segtools.payloads.decoder import PayloadDecoder
from segtools.payloads.errors import PayloadError
from segtools.payloads.schemas_topic import SCHEMAS_TOPIC, data_records
from segtools.storage.partition import PartitionDir, PartitionState

#: Findings listed per topic and code before the rest are only counted.
MAX_EXAMPLES = 5


@dataclass(slots=True)
class TopicPayloads:
    """One topic's payload counts: records read, sides decoded, sides that did not (by code)."""

    topic: str
    records: int = 0
    decoded: int = 0
    undecoded: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {"type": "payload_summary", "topic": self.topic, "records": self.records,
                "decoded": self.decoded, "undecoded": dict(sorted(self.undecoded.items()))}


def check_payloads(partitions: Iterable[PartitionDir], decoder: PayloadDecoder,
                   findings: list[Finding], *, max_examples: int = MAX_EXAMPLES,
                   limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[TopicPayloads]:
    """Decode every key and value of the live partitions (the store topic and Kafka's internal
    topics aside); the first ``max_examples`` failures per topic and code become findings,
    the rest one counting finding per topic and code."""
    topics: dict[str, TopicPayloads] = {}
    for p in partitions:
        if p.name is None or p.name.state is not PartitionState.LIVE or \
                p.name.topic == SCHEMAS_TOPIC or p.name.topic.startswith("__"):
            continue
        row = topics.setdefault(p.name.topic, TopicPayloads(p.name.topic))
        for batch, record in data_records(p, findings, limit=limit):
            row.records += 1
            for side, data in (("key", record.key), ("value", record.value)):
                try:
                    found = decoder.decode(data, topic=p.name.topic, is_key=side == "key")
                except PayloadError as e:
                    row.undecoded[e.code] += 1
                    if row.undecoded[e.code] <= max_examples:
                        findings.append(finding(e.code, str(p.path), f"{side}: {e}",
                                                position=batch.position, offset=record.offset))
                    continue
                if found is not None:
                    row.decoded += 1
    for row in topics.values():
        for code, n in sorted(row.undecoded.items()):
            if n > max_examples:
                findings.append(finding(code, row.topic, f"{n - max_examples} more record(s) of "
                                        f"topic {row.topic} like the {max_examples} above"))
    return sorted(topics.values(), key=lambda r: r.topic)
