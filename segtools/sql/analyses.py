"""The analyses' answers as views: one row per retention verdict, producer, transaction,
offset commit and schema version, with the fields the commands' JSON Lines give them.

Each view has a declared schema (the same columns on every tree, empty when the tree holds
nothing of the kind), filled from the analysis' own ``to_json()``, so a row here says what
``segtools retention|producers|transactions|offsets|schemas --format jsonl`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import lazy_loader
import pyarrow as pa

from segtools.fetch.columns import TIMESTAMP

if TYPE_CHECKING:  # the API hands its tree in; the room never reaches back up to it
    from segtools.analysis import offsets as _offsets_room  # noqa: F401 (the arrow below)
    from segtools.api import LogDirs

#: the group coordinator's room, loaded when the ``offsets`` view is read (as the API loads
#: its analyses: a query of records does not pay for it)
_offsets = lazy_loader.load("segtools.analysis.offsets", suppress_warning=True)

RETENTION = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("base_offset", pa.int64()),
    ("last_offset", pa.int64()), ("size", pa.int64()), ("record_count", pa.int64()),
    ("first_timestamp", TIMESTAMP), ("max_timestamp", TIMESTAMP),
    ("max_timestamp_source", pa.string()), ("is_active", pa.bool_()),
    ("deletable", pa.bool_()), ("reason", pa.string()), ("reason_text", pa.string()),
    ("eligible_at", TIMESTAMP), ("blocked_by", pa.int64())])  # the blocking segment's base offset

PRODUCERS = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()), ("batches", pa.int64()), ("records", pa.int64()),
    ("bytes", pa.int64()), ("first_timestamp", TIMESTAMP), ("last_timestamp", TIMESTAMP),
    ("peak_batches_per_minute", pa.int64()), ("verdict", pa.string()),
    ("linger_ms", pa.int64())])

TRANSACTIONS = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()), ("first_offset", pa.int64()),
    ("last_data_offset", pa.int64()), ("batches", pa.int64()), ("records", pa.int64()),
    ("first_timestamp", TIMESTAMP), ("last_timestamp", TIMESTAMP), ("marker", pa.string()),
    ("marker_offset", pa.int64()), ("marker_timestamp", TIMESTAMP),
    ("coordinator_epoch", pa.int32())])

OFFSETS = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
    ("commit_timestamp", TIMESTAMP), ("expire_timestamp", TIMESTAMP),
    ("status", pa.string()), ("transactional", pa.bool_()), ("producer_id", pa.int64()),
    ("log_partition", pa.int32()), ("log_offset", pa.int64()), ("log_timestamp", TIMESTAMP)])

SCHEMAS = pa.schema([
    ("id", pa.int32()), ("subject", pa.string()), ("version", pa.int32()),
    ("schema_type", pa.string()), ("deleted", pa.bool_()), ("registered", TIMESTAMP),
    ("offset", pa.int64())])


def _table(schema: pa.Schema, rows: Iterable[dict]) -> pa.RecordBatchReader:
    """Rows (``to_json()`` dicts) as the declared columns; epoch-ms fields as timestamps
    (Kafka's -1, "none", as null)."""
    times = {f.name for f in schema if f.type == TIMESTAMP}
    shaped = [{name: _time(row.get(name)) if name in times else row.get(name)
               for name in schema.names} for row in rows]
    return pa.Table.from_pylist(shaped, schema=schema).to_reader()


def _time(ms: int | None) -> datetime | None:
    if ms is None or ms < 0:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC)


def retention(tree: LogDirs, at_ms: int | None = None) -> pa.RecordBatchReader:
    """``segtools retention``'s verdict on every segment (UnifiedLog's deletion rules)."""
    report = tree.explain_retention(at=at_ms).to_json()
    return _table(RETENTION, ({"topic": p["topic"], "partition": p["partition"], **s}
                              for p in report["partitions"] for s in p["segments"]))


def producers(tree: LogDirs, at_ms: int | None = None) -> pa.RecordBatchReader:
    """``segtools producers``: how each producer of each partition batches."""
    return _table(PRODUCERS, (g.to_json() for r in tree.producers()
                              for g in r.producers.values()))


def transactions(tree: LogDirs, at_ms: int | None = None) -> pa.RecordBatchReader:
    """``segtools transactions``: every transaction of every partition, with its marker."""

    def rows() -> Iterator[dict]:
        for p in tree.transactions(now=at_ms).partitions:
            name = p.scan.partition.name
            for t in p.scan.transactions:
                yield {**t.to_json(), "topic": name.topic if name else None,
                       "partition": name.partition if name else None}

    return _table(TRANSACTIONS, rows())


def offsets(tree: LogDirs, at_ms: int | None = None) -> pa.RecordBatchReader:
    """``segtools offsets --history``: every group commit in ``__consumer_offsets``, in log
    order (empty when the tree has no such topic)."""
    if _offsets.CONSUMER_OFFSETS_TOPIC not in tree.topics:
        return _table(OFFSETS, ())
    return _table(OFFSETS, (c.to_json() for c in tree.offsets_at(history=True).commits))


def schemas(tree: LogDirs, at_ms: int | None = None) -> pa.RecordBatchReader:
    """``segtools schemas``: every registered version in ``_schemas`` (empty without one)."""
    history = tree.schema_history()
    return _table(SCHEMAS, () if history is None else (v.to_json() for v in history.versions))


#: the analysis views by name; none takes a pushdown (each analysis reads what it needs),
#: each takes the query's moment (``--at``; only retention and transactions depend on it)
ANALYSES: dict[str, Callable[[LogDirs, int | None], pa.RecordBatchReader]] = {
    "retention": retention, "producers": producers, "transactions": transactions,
    "offsets": offsets, "schemas": schemas,
}
