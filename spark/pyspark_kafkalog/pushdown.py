"""Pushed filters as pruning hints: which partitions, offsets and times a query can skip.

Spark's Python filter pushdown is opt-in (``spark.sql.python.filterPushdown.enabled``) and a
filter the reader *accepts* is never re-checked by Spark. The source therefore accepts none:
``pushFilters`` hands every filter back, and only uses the simple ones on ``topic``,
``partition``, ``offset`` and ``timestamp`` to skip segments, to start reading at an index
position, and to skip batches. Spark re-applies the filters to what is read, so the answer is
Spark's whatever the hints do; the hints only have to be *safe* (never skip a row that could
pass), which is what each rule below is written for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)


@dataclass(frozen=True, slots=True)
class Constraints:
    """The conjunction of the pushed filters the planner can use; ``None`` = unconstrained."""

    topics: frozenset[str] | None = None
    topic_prefix: str | None = None
    partitions: frozenset[int] | None = None
    partition_min: int | None = None  # inclusive
    partition_max: int | None = None  # inclusive
    offset_min: int | None = None  # inclusive
    offset_max: int | None = None  # exclusive
    timestamp_min_ms: int | None = None  # inclusive: rows with an earlier timestamp cannot pass

    def accepts(self, topic: str | None, partition: int | None) -> bool:
        """Whether any row of this topic-partition could pass the pushed filters. A directory
        without a partition name has null ``topic`` and ``partition``, which no filter on them
        lets through."""
        if topic is None or partition is None:
            return (self.topics is None and self.topic_prefix is None
                    and self.partitions is None and self.partition_min is None
                    and self.partition_max is None)
        if self.topics is not None and topic not in self.topics:
            return False
        if self.topic_prefix is not None and not topic.startswith(self.topic_prefix):
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        return self.partition_max is None or partition <= self.partition_max


def _ms(value: object) -> int | None:
    """A pushed timestamp literal in epoch milliseconds, rounded down (a safe lower bound)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:  # Spark 4.3 passes aware UTC values; if not, widen by a day
            return (value.replace(tzinfo=dt.UTC) - _EPOCH) // _MS - _DAY_MS
        return (value - _EPOCH) // _MS
    return None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)
_DAY_MS = 86_400_000


def _ints(values: Iterable[object]) -> list[int] | None:
    out = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    return out if len(out) == len(list(values)) else None


def _narrow_int(c: Constraints, name: str, f: Filter) -> Constraints:
    """Intersect an integer column's range or set with one comparison filter."""
    lo_field, hi_field, set_field = (
        ("offset_min", "offset_max", None) if name == "offset"
        else ("partition_min", "partition_max", "partitions"))
    exclusive_hi = name == "offset"
    value = getattr(f, "value", None)
    lo = hi = None
    if isinstance(f, In):
        values = _ints(list(f.value))
        if values is None or not values:
            return c
        if set_field is not None:
            current = getattr(c, set_field)
            chosen = frozenset(values) if current is None else current & frozenset(values)
            c = replace(c, **{set_field: chosen})
        lo, hi = min(values), max(values)
    elif isinstance(value, bool) or not isinstance(value, int):
        return c
    elif isinstance(f, EqualTo):
        lo = hi = value
    elif isinstance(f, GreaterThan):
        lo = value + 1
    elif isinstance(f, GreaterThanOrEqual):
        lo = value
    elif isinstance(f, LessThan):
        hi = value - 1
    elif isinstance(f, LessThanOrEqual):
        hi = value
    if lo is not None:
        old = getattr(c, lo_field)
        c = replace(c, **{lo_field: lo if old is None else max(old, lo)})
    if hi is not None:
        bound = hi + 1 if exclusive_hi else hi
        old = getattr(c, hi_field)
        c = replace(c, **{hi_field: bound if old is None else min(old, bound)})
    return c


def _narrow_topic(c: Constraints, f: Filter) -> Constraints:
    if isinstance(f, EqualTo) and isinstance(f.value, str):
        chosen = frozenset({f.value})
    elif isinstance(f, In) and all(isinstance(v, str) for v in f.value):
        chosen = frozenset(f.value)
    elif isinstance(f, StringStartsWith) and isinstance(f.value, str):
        longest = max(filter(None, (c.topic_prefix, f.value)), key=len)
        if c.topic_prefix and not longest.startswith(c.topic_prefix):
            return replace(c, topics=frozenset())  # two prefixes that cannot both hold
        return replace(c, topic_prefix=longest)
    else:
        return c
    return replace(c, topics=chosen if c.topics is None else c.topics & chosen)


def _narrow_timestamp(c: Constraints, f: Filter) -> Constraints:
    if not isinstance(f, EqualTo | GreaterThan | GreaterThanOrEqual):
        return c
    ms = _ms(f.value)
    if ms is None:
        return c
    old = c.timestamp_min_ms
    return replace(c, timestamp_min_ms=ms if old is None else max(old, ms))


def constraints_from(filters: Iterable[Filter]) -> Constraints:
    """Fold the usable filters into one :class:`Constraints`; the others change nothing."""
    c = Constraints()
    for f in filters:
        column = f.attribute[0] if len(f.attribute) == 1 else None
        if column in ("offset", "partition"):
            c = _narrow_int(c, column, f)
        elif column == "topic":
            c = _narrow_topic(c, f)
        elif column == "timestamp":
            c = _narrow_timestamp(c, f)
    return c
