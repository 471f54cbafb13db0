"""``retention --what-if`` and ``--recommend`` over a tree: every partition simulated under its
current config and under a proposed one, side by side, per partition and per topic.

The one assembly every face calls (CLI, ``segtools.what_if()``, the report, Spark's
``analyses.what_if``). A partition's input is read once (batch headers for delete-only topics,
records for compacted ones, where keys matter); the simulation is
:mod:`segtools.analysis.simulation`. A topic's numbers are the sum of its partitions' sizes and
the oldest of their records; when several brokers' log dirs hold the same partition, each copy
is simulated and summed, which counts the replication factor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from segtools import fanout
from segtools.analysis import config as cfg
from segtools.analysis.partition_input import Loaded, PartitionInput
from segtools.analysis.simulation import (
    AUTO,
    History,
    Ingest,
    Outcome,
    Run,
    Tally,
    apply_changes,
    extend,
    outcome,
    simulate,
    topic_grid,
)
from segtools.analysis.simulation_input import history
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.units import format_time

DAY_MS = 86_400_000
DEFAULT_HORIZON_DAYS = 30.0
#: What the settings promise, with this much slack: the oldest record no older than
#: retention.ms + 25 %.
TOLERANCE = 0.25
#: Changes ``--what-if`` accepts: what changes a partition's lifecycle.
WHAT_IF_NAMES = ("segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes",
                 "retention.ms", "retention.bytes", "cleanup.policy", "delete.retention.ms",
                 "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "max.compaction.lag.ms",
                 "local.retention.ms", "local.retention.bytes")


def parse_changes(text: str) -> dict[str, object]:
    """``NAME=VALUE[,NAME=VALUE...]``; a list value (``cleanup.policy=compact,delete``) keeps
    its commas because a new pair starts only where ``,name=`` follows."""
    out: dict[str, object] = {}
    for part in re.split(r",(?=[a-z][a-z.]*=)", text.strip()):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not value.strip():
            raise ValueError(f"{part!r} is not NAME=VALUE")
        if name not in WHAT_IF_NAMES:
            raise ValueError(f"{name!r} cannot be changed here (one of: "
                             f"{', '.join(WHAT_IF_NAMES)})")
        out[name] = cfg.parse_value(name, value)
    if not out:
        raise ValueError("nothing to change")
    return out


def changes_json(changes: Mapping[str, object]) -> dict:
    return {k: ",".join(v) if isinstance(v, tuple) else v for k, v in changes.items()}


# --------------------------------------------------------------------------- input


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class WhatIf:
    """``{"type": "what_if", ...}``: one partition (``partition`` set) or one topic."""

    topic: str
    partition: int | None
    changes: Mapping[str, object]
    current: Outcome
    proposed: Outcome
    label: str = ""

    def to_json(self) -> dict:
        return {"type": "what_if", "topic": self.topic, "partition": self.partition,
                "changes": changes_json(self.changes), "current": self.current.to_json(),
                "proposed": self.proposed.to_json()}


@dataclass(frozen=True, slots=True)
class Recommendation:
    """``{"type": "recommendation", ...}``: the least change that keeps what retention
    promises, the numbers before and after, and what it costs."""

    topic: str
    changes: Mapping[str, object]
    why: str
    cost: Mapping[str, object]
    current: Outcome
    proposed: Outcome
    tried: tuple[tuple[Mapping[str, object], bool], ...]
    #: the compaction settings that also keep the promise when a segment change is
    #: recommended (or the other ones when a compaction setting is), best first, each with
    #: its outcome and cost: an operator may prefer compacting later to smaller segments
    alternatives: tuple[Alternative, ...] = ()

    def to_json(self) -> dict:
        out = {"type": "recommendation", "topic": self.topic,
               "changes": changes_json(self.changes), "why": self.why, "cost": dict(self.cost),
               "before": _brief(self.current), "after": _brief(self.proposed),
               "tried": [{"changes": changes_json(c), "meets": ok} for c, ok in self.tried]}
        if self.alternatives:
            out["alternatives"] = [a.to_json() for a in self.alternatives]
        return out


@dataclass(frozen=True, slots=True)
class Alternative:
    """Another change that keeps the promise, not the one recommended."""

    changes: Mapping[str, object]
    proposed: Outcome
    cost: Mapping[str, object]

    def to_json(self) -> dict:
        return {"changes": changes_json(self.changes), "after": _brief(self.proposed),
                "cost": dict(self.cost)}


def _brief(o: Outcome) -> dict:
    return {"peak_bytes": o.peak_bytes, "trough_bytes": o.trough_bytes,
            "swing": round(o.swing, 4), "oldest_age_ms_max": o.oldest_age_ms_max}


@dataclass(frozen=True, slots=True)
class WhatIfReport:
    """``segtools retention --what-if/--recommend`` over a tree, as values."""

    at_ms: int
    end_ms: int
    ingest: Ingest
    items: tuple[WhatIf, ...]
    recommendations: tuple[Recommendation, ...]
    retention_ms: Mapping[str, int]  # per topic: what its time retention promises

    def to_json(self) -> dict:
        return {"type": "what_if_report", "version": 1, "at": self.at_ms,
                "at_iso": format_time(self.at_ms), "until": self.end_ms,
                "ingest": self.ingest.to_json(),
                "what_if": [w.to_json() for w in self.items],
                "recommendations": [r.to_json() for r in self.recommendations]}


# --------------------------------------------------------------------------- the assembly


@dataclass(frozen=True, slots=True)
class PartitionHistory:
    """A partition and its history, as the simulation takes it (the files' face builds it with
    :func:`~segtools.analysis.simulation_input.history`, the Spark face from rows, both in
    :mod:`segtools.analysis.simulation_input`)."""

    pi: PartitionInput
    history: History


def _inputs(loaded: Loaded, limit: int) -> dict[str, list[PartitionHistory]]:
    by_topic: dict[str, list[PartitionHistory]] = {}
    for pi in loaded.partitions:
        by_topic.setdefault(pi.topic, []).append(PartitionHistory(pi, history(pi, limit=limit)))
    return by_topic


def run_partition(p: PartitionHistory, config: cfg.TopicConfig, *, now_ms: int, end_ms: int,
                  ingest: Ingest, partitions: int, extended: History | None = None) -> Run:
    """One partition under ``config``: its history, then the ingest model, to ``end_ms``
    (``extended``: that history and replay already built, as :func:`extend` gives it; the
    replay does not depend on the config, so several configs share one)."""
    h = extended if extended is not None else extend(
        p.history, now_ms=now_ms, end_ms=end_ms, ingest=ingest, partitions=partitions)
    cleaner = p.pi.cleaner_offset if config.compact else None
    return simulate(h, config, now_ms=now_ms, end_ms=end_ms, seed=p.pi.label,
                    cleaner_offset=cleaner)


#: A partition's simulation weighed in the segments ``fanout`` counts (summarising one
#: segment's headers): a simulated month of a partition costs about as much as twenty, so a
#: topic of a hundred partitions goes to worker processes and the fixtures stay in one.
RUN_WEIGHT = 20


def _chunks(parts: Sequence[PartitionHistory],
            processes: int | None) -> list[Sequence[PartitionHistory]]:
    """Consecutive slices of the partitions, a few per worker, so a worker returns the summed
    tally of many partitions rather than each partition's arrays."""
    k = max(1, min(len(parts), 4 * (fanout.workers() if processes is None else processes)))
    step = -(-len(parts) // k)
    return [parts[i:i + step] for i in range(0, len(parts), step)]


def _simulated(parts: Sequence[PartitionHistory], changes: Sequence[Mapping[str, object]], kw: dict,
               each: bool, advance: Callable[[int], None],
               processes: int | None = None) -> tuple[list[list[Outcome]], list[Tally]]:
    """Every partition under today's config with each of ``changes`` applied (``{}``: today's
    config), summed per change on the topic grid; with ``each``, every partition's own
    outcomes too, in the partitions' order. Partitions are independent, so large topics are
    spread over :mod:`segtools.fanout`'s workers, a slice of partitions per job."""
    now_ms, end_ms = kw["now_ms"], kw["end_ms"]
    grid = topic_grid(now_ms, end_ms)

    def job(chunk: Sequence[PartitionHistory]) -> tuple[list[list[Outcome]], list[Tally], int]:
        tallies = [Tally(grid, now_ms, end_ms) for _ in changes]
        own: list[list[Outcome]] = []
        for p in chunk:
            mine = []
            h = extend(p.history, now_ms=now_ms, end_ms=end_ms, ingest=kw["ingest"],
                       partitions=kw["partitions"])
            for change, tally in zip(changes, tallies, strict=True):
                run = run_partition(p, apply_changes(p.pi.config, change), **kw, extended=h)
                tally.add(run)
                if each:
                    mine.append(outcome([run], now_ms, end_ms))
            own.append(mine)
        return own, tallies, len(chunk)

    totals = [Tally(grid, now_ms, end_ms) for _ in changes]
    every: list[list[Outcome]] = []
    chunks = _chunks(parts, processes)
    work = len(parts) * len(changes) * RUN_WEIGHT
    for own, tallies, n in fanout.ordered(job, chunks, segments=work, processes=processes):
        every += own
        for total, t in zip(totals, tallies, strict=True):
            total.merge(t)
        advance(n)
    return every, totals


def _topic(topic: str, parts: Sequence[PartitionHistory], changes: Mapping[str, object], *,
           now_ms: int, end_ms: int, ingest: Ingest,
           advance: Callable[[int], None], processes: int | None) -> list[WhatIf]:
    """Each partition under today's config and ``changes``, then the topic, summed as the
    partitions finish (nothing of a partition's run is kept but its numbers)."""
    kw = dict(now_ms=now_ms, end_ms=end_ms, ingest=ingest, partitions=len(parts))
    every, (cur_t, prop_t) = _simulated(parts, [{}, changes], kw, True, advance, processes)
    out = [WhatIf(topic, p.pi.partition, changes, cur, prop, p.pi.label)
           for p, (cur, prop) in zip(parts, every, strict=True)]
    out.append(WhatIf(topic, None, changes, cur_t.outcome(), prop_t.outcome(), topic))
    return out


def horizon_end(now_ms: int, horizon_days: float) -> int:
    """Where a simulation of ``horizon_days`` from ``now_ms`` stops (epoch ms)."""
    return now_ms + int(horizon_days * DAY_MS)


def what_if_report(loaded: Loaded, changes: Mapping[str, object] | None, *, now_ms: int,
                   horizon_days: float = DEFAULT_HORIZON_DAYS, ingest: Ingest = AUTO,
                   recommend: bool = False, limit: int = DEFAULT_DECOMPRESS_LIMIT,
                   advance: Callable[[int], None] = lambda n: None) -> WhatIfReport:
    """Every partition and topic of ``loaded`` under the current config and ``changes``
    (``None`` with ``recommend``: the recommended change is what is compared)."""
    end_ms = horizon_end(now_ms, horizon_days)
    items: list[WhatIf] = []
    recs: list[Recommendation] = []
    retention: dict[str, int] = {}
    for topic, parts in _inputs(loaded, limit).items():
        got, rec = what_if_topic(topic, parts, changes, now_ms=now_ms, end_ms=end_ms,
                                 ingest=ingest, recommend=recommend, advance=advance)
        if rec is not None:
            recs.append(rec)
        retention[topic] = parts[0].pi.config.local_retention_ms_effective
        items += got
    return WhatIfReport(now_ms, end_ms, ingest, tuple(items), tuple(recs), retention)


def what_if_topic(topic: str, parts: Sequence[PartitionHistory],
                  changes: Mapping[str, object] | None, *, now_ms: int, end_ms: int,
                  ingest: Ingest = AUTO, recommend: bool = False,
                  advance: Callable[[int], None] = lambda n: None,
                  processes: int | None = None
                  ) -> tuple[list[WhatIf], Recommendation | None]:
    """One topic: each partition and the topic under today's config and ``changes`` (with
    ``recommend`` and no ``changes``: the recommended change), and the recommendation when one
    was asked and found. Every face that simulates a topic comes through here. ``processes``:
    worker processes for a large topic (None: :func:`segtools.fanout.workers`; a Spark task,
    which has its core already, asks for 1)."""
    chosen = dict(changes or {})
    rec = None
    if recommend:
        rec = recommend_topic(topic, parts, now_ms=now_ms, end_ms=end_ms, ingest=ingest,
                              processes=processes)
        if rec is not None and changes is None:
            chosen = dict(rec.changes)
    return _topic(topic, parts, chosen, now_ms=now_ms, end_ms=end_ms, ingest=ingest,
                  advance=advance, processes=processes), rec


# --------------------------------------------------------------------------- recommending


def meets(o: Outcome, config: cfg.TopicConfig) -> bool:
    """Does the topic keep what its time retention promises: no record older than
    ``retention.ms`` plus :data:`TOLERANCE` of it?"""
    r = config.local_retention_ms_effective
    return o.oldest_age_ms_max is not None and o.oldest_age_ms_max <= r * (1 + TOLERANCE)


#: A candidate may cut a partition's retained data into at most this many segments.
MAX_SEGMENTS_PER_RETENTION = 64


def candidates(config: cfg.TopicConfig, floor_bytes: int = 14) -> list[dict[str, object]]:
    """Changes to try, nearest first within each family: ``segment.ms`` at a half, a quarter,
    ... of retention.ms (while below today's), and ``segment.bytes`` halved step by step, not
    below ``floor_bytes`` (what cuts the busiest partition's retained data into
    :data:`MAX_SEGMENTS_PER_RETENTION` segments: smaller is no fix anyone would deploy, and
    each try would cost a simulation of thousands of segments)."""
    r = config.local_retention_ms_effective
    out: list[dict[str, object]] = []
    ms = [r // d for d in (2, 4, 8, 16, 32) if r // d < config.segment_ms and r // d > 0]
    by = []
    b = config.segment_bytes // 2
    while b >= max(floor_bytes, 14) and len(by) < 16:
        by.append(b)
        b //= 2
    for i in range(max(len(ms), len(by))):
        if i < len(by):
            out.append({"segment.bytes": by[i]})
        if i < len(ms):
            out.append({"segment.ms": ms[i]})
    return out


#: The families of change ``--recommend`` tries. The segment families come first: when one of
#: them keeps the promise it is recommended whatever a compaction family costs, because a
#: longer ``min.compaction.lag.ms`` or a higher dirty ratio buys it by compacting later (a
#: cost the byte counts do not show: superseded values and tombstones stay readable longer).
SEGMENT_FAMILIES = ("segment.bytes", "segment.ms")
COMPACTION_FAMILIES = ("min.compaction.lag.ms", "min.cleanable.dirty.ratio",
                       "max.compaction.lag.ms")


def compaction_candidates(config: cfg.TopicConfig) -> list[dict[str, object]]:
    """For a ``compact,delete`` topic, the cleaner's settings to try, nearest first within
    each family (empty for other topics). Why each can matter, from
    ``LogCleanerManager.cleanableOffsets`` and ``grabFilthiestCompactedLog``:

    * ``min.compaction.lag.ms``, raised to a quarter, a half, three quarters, seven eighths
      and all of retention.ms: the cleanable range ends at the first dirty segment whose
      largest timestamp is within the lag, so a merge takes only segments at least that old,
      and the merged segment (whose largest timestamp is its youngest member's) expires at
      most ``retention.ms - lag`` after the clean; old records ride forward only while a new
      clean comes before that.
    * ``min.cleanable.dirty.ratio``, raised to 0.75 and 0.9: the cleaner waits until the
      dirty part outweighs the clean part that much, so cleans come rarer and the merged
      head more often expires before the next one.
    * ``max.compaction.lag.ms``, lowered to half of retention.ms: it forces a clean once the
      first dirty segment's first batch is that old, whatever the ratio; cleans come sooner,
      which rarely helps, but it is the other lag an operator reaches for.
    """
    if not (config.compact and config.delete):
        return []
    r = config.local_retention_ms_effective
    if r <= 0:
        return []
    lag = [r * n // d for n, d in ((1, 4), (1, 2), (3, 4), (7, 8), (1, 1))
           if r * n // d > config.min_compaction_lag_ms]
    ratio = [x for x in (0.75, 0.9) if x > config.min_cleanable_dirty_ratio]
    max_lag = [r // 2] if r // 2 < config.max_compaction_lag_ms else []
    return ([{"min.compaction.lag.ms": v} for v in lag] +
            [{"min.cleanable.dirty.ratio": v} for v in ratio] +
            [{"max.compaction.lag.ms": v} for v in max_lag])


def recommend_topic(topic: str, parts: Sequence[PartitionHistory], *, now_ms: int, end_ms: int,
                    ingest: Ingest, processes: int | None = None) -> Recommendation | None:
    """The smallest ``segment.bytes``/``segment.ms`` change (and for a ``compact,delete``
    topic the smallest compaction-lag or dirty-ratio change, see
    :func:`compaction_candidates`) that brings the oldest record (and with it the size swing)
    within :data:`TOLERANCE` of ``retention.ms``; None when time retention is off or the
    topic already keeps its promise. Each family is searched nearest first and stops at its
    first change that keeps the promise; of those, a segment family's wins (see
    :data:`SEGMENT_FAMILIES`), then the one with fewer segments and rolls; the compaction
    settings that also work are the recommendation's alternatives."""
    config = parts[0].pi.config
    if not config.delete or config.local_retention_ms_effective < 0:
        return None
    kw = dict(now_ms=now_ms, end_ms=end_ms, ingest=ingest, partitions=len(parts))
    cur = _tally(parts, {}, kw, processes)
    if meets(cur, config):
        return None
    tried: list[tuple[Mapping[str, object], bool]] = []
    found: dict[str, tuple[dict, Outcome]] = {}
    tries = candidates(config, _floor(parts, config.local_retention_ms_effective)) + \
        compaction_candidates(config)
    families = {next(iter(c)) for c in tries}
    for change in tries:
        family = next(iter(change))
        if family in found:
            continue
        o = _tally(parts, change, kw, processes)
        ok = meets(o, config)
        tried.append((change, ok))
        if ok:
            found[family] = (change, o)
        if len(found) == len(families):
            break
    if not found:
        return None
    order = list(found)
    ranked = sorted(found.values(), key=lambda x: (
        next(iter(x[0])) in COMPACTION_FAMILIES, x[1].segments_max, x[1].rolls,
        order.index(next(iter(x[0])))))
    days = (end_ms - now_ms) / DAY_MS

    def priced(change: Mapping[str, object], o: Outcome) -> dict:
        return cost(cur, o, len(parts), days, config, apply_changes(config, change))

    (change, o), rest = ranked[0], ranked[1:]
    alternatives = tuple(Alternative(c, x, priced(c, x)) for c, x in rest
                         if next(iter(c)) in COMPACTION_FAMILIES)
    return Recommendation(topic, change, _why(topic, config, change, cur, o),
                          priced(change, o), cur, o, tuple(tried), alternatives)


def _tally(parts: Sequence[PartitionHistory], change: Mapping[str, object], kw: dict,
           processes: int | None) -> Outcome:
    """A topic under ``change``, its partitions summed on the topic grid."""
    _, (tally,) = _simulated(parts, [change], kw, False, lambda n: None, processes)
    return tally.outcome()


def _floor(parts: Sequence[PartitionHistory], retention_ms: int) -> int:
    """The smallest ``segment.bytes`` worth trying (see :func:`candidates`)."""
    most = 0.0
    for p in parts:
        h = p.history
        if h.batches >= 2:
            span = int(h.batch_ts.max() - h.batch_ts.min())
            if span > 0:
                most = max(most, float(h.batch_size.sum()) / span * retention_ms)
    return int(most / MAX_SEGMENTS_PER_RETENTION)


def _why(topic: str, config: cfg.TopicConfig, change: Mapping[str, object], cur: Outcome,
         new: Outcome) -> str:
    from segtools.units import format_bytes, format_duration

    (name, value), = change.items()
    shown, old_shown = (_shown(name, v) for v in (value, getattr(
        config, cfg.DEFINITIONS[name].attr)))
    return (f"topic {topic}: with {name}={value} ({shown}, today {old_shown}) the oldest "
            f"record is at most {format_duration(new.oldest_age_ms_max or 0)} old instead of "
            f"{format_duration(cur.oldest_age_ms_max or 0)} (retention.ms "
            f"{format_duration(config.local_retention_ms_effective)}), and the size swings "
            f"{100 * new.swing:.0f}% instead of {100 * cur.swing:.0f}% "
            f"({format_bytes(new.trough_bytes)}..{format_bytes(new.peak_bytes)} instead of "
            f"{format_bytes(cur.trough_bytes)}..{format_bytes(cur.peak_bytes)})")


def _shown(name: str, value: object) -> str:
    from segtools.units import format_bytes, format_duration

    if name == "segment.bytes":
        return format_bytes(int(value))
    if name.endswith(".ms"):
        return "never" if int(value) >= 2**62 else format_duration(int(value))
    return str(value)


def cost(cur: Outcome, new: Outcome, partitions: int, days: float,
         config: cfg.TopicConfig, proposed: cfg.TopicConfig | None = None) -> dict:
    """What the change costs, before -> after: segments on disk at most, their files
    (``.log``, ``.index``, ``.timeindex``) and open handles (a broker keeps each segment's
    three open), index memory (each active segment's two indexes are preallocated to
    ``segment.index.bytes``; sealed ones are trimmed, an entry per ``index.interval.bytes``)
    and the cleaner's work (bytes it removed; for a compacted topic also its passes, the
    bytes they read and rewrote, and ``min.compaction.lag.ms``: how long a superseded value
    stays readable at least). ``proposed``: the config after the change (default: ``config``)."""
    days = max(days, 1e-9)

    def side(o: Outcome, c: cfg.TopicConfig) -> dict:
        active = partitions
        sealed = max(o.segments_max - active, 0)
        index = active * 2 * c.segment_index_bytes + int(o.peak_bytes / 4096 * 20)
        out = {"segments_max": o.segments_max, "files": 3 * o.segments_max,
               "open_handles": 3 * o.segments_max, "rolls_per_day": round(o.rolls / days, 2),
               "index_bytes": index, "sealed_segments": sealed,
               "cleaner_bytes_removed": o.cleaned_bytes}
        if c.compact:
            out.update(cleaner_passes=o.cleanings, cleaner_bytes_read=o.cleaner_read_bytes,
                       min_compaction_lag_ms=c.min_compaction_lag_ms)
        return out

    return {"before": side(cur, config), "after": side(new, proposed or config)}
