"""With no new data, when each segment goes and how partition and topic sizes fall.

A projection of :func:`segtools.analysis.retention.explain_retention`'s ``eligible_at``: with
nothing appended, the log start offset and the high watermark stay put and the size only
shrinks, so the size rule never fires again after the first check and every later deletion is
the time rule reaching the next segment of the prefix. Kafka acts at the first retention check
after ``eligible_at`` (``log.retention.check.interval.ms``, 5 minutes by default, or after a
cleaner pass for compacted topics) and unlinks the files ``file.delete.delay.ms`` later; the
forecast uses ``eligible_at`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from segtools.analysis.retention import PartitionRetention


@dataclass(frozen=True, slots=True)
class Step:
    """At ``at_ms`` these segments (base offsets) go, leaving ``size_after`` bytes."""

    at_ms: int
    removed: tuple[int, ...]
    removed_bytes: int
    size_after: int
    label: str = ""  # which partition, in a topic-level series

    def to_json(self) -> dict:
        out = {"at_ms": self.at_ms, "removed": list(self.removed),
               "removed_bytes": self.removed_bytes, "size_after": self.size_after}
        if self.label:
            out["partition"] = self.label
        return out


@dataclass(frozen=True, slots=True)
class Forecast:
    """A size-over-time step function from ``start_ms`` to ``end_ms``."""

    start_ms: int
    end_ms: int
    start_size: int
    steps: tuple[Step, ...]

    def size_at(self, t: int) -> int:
        size = self.start_size
        for step in self.steps:
            if step.at_ms > t:
                break
            size = step.size_after
        return size

    @property
    def end_size(self) -> int:
        return self.steps[-1].size_after if self.steps else self.start_size

    @property
    def settled_ms(self) -> int:
        """When the size reaches :attr:`end_size`: the last step (nothing changes after it
        within the window), or the start when nothing is deleted."""
        return self.steps[-1].at_ms if self.steps else self.start_ms

    def to_json(self) -> dict:
        return {"start_ms": self.start_ms, "end_ms": self.end_ms,
                "start_size": self.start_size, "end_size": self.end_size,
                "end_size_at_ms": self.settled_ms,
                "steps": [s.to_json() for s in self.steps]}


def forecast_partition(pr: PartitionRetention, *, until_ms: int) -> Forecast:
    """Deletions of one partition between ``pr.now_ms`` and ``until_ms``: what is deletable
    now goes at ``now_ms``, the rest at its ``eligible_at``."""
    events: dict[int, list] = {}
    for v in pr.segments:
        if v.eligible_at is None:
            continue
        when = max(v.eligible_at, pr.now_ms)
        if when <= until_ms:
            events.setdefault(when, []).append(v)
    size = pr.size
    steps = []
    for t in sorted(events):
        gone = events[t]
        freed = sum(v.size for v in gone)
        size -= freed
        steps.append(Step(t, tuple(v.base_offset for v in gone), freed, size))
    return Forecast(pr.now_ms, until_ms, pr.size, tuple(steps))


def combine(forecasts: Iterable[tuple[str, Forecast]]) -> Forecast:
    """One series for several partitions (a topic, or a whole tree): the sum of their sizes,
    each step labelled with the partition it came from."""
    items = list(forecasts)
    if not items:
        raise ValueError("nothing to combine")
    start = min(f.start_ms for _, f in items)
    end = max(f.end_ms for _, f in items)
    size = sum(f.start_size for _, f in items)
    merged = sorted(((s.at_ms, label, s) for label, f in items for s in f.steps),
                    key=lambda x: (x[0], x[1]))
    steps = []
    for at, label, s in merged:
        size -= s.removed_bytes
        steps.append(Step(at, s.removed, s.removed_bytes, size, label))
    return Forecast(start, end, sum(f.start_size for _, f in items), tuple(steps))
