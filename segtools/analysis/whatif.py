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

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from segtools import fanout
from segtools.analysis import config as cfg
from segtools.analysis.explain import tiered_metadata
from segtools.analysis.partition_input import Loaded, PartitionInput
from segtools.analysis.simulation import (
    AUTO,
    MIN_HISTORY_MS,
    CleanedSegments,
    History,
    Ingest,
    Outcome,
    Run,
    Tally,
    apply_changes,
    extend,
    outcome,
    roll_bytes,
    simulate,
    too_short,
    topic_grid,
)
from segtools.analysis.simulation_input import history
from segtools.analysis.tiered import highest_remote_offset, is_tiered, remote_by_partition
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import SegtoolsError
from segtools.units import format_bytes, format_duration, format_time

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


#: Kafka's lower bounds for the changes (``LogConfig``'s ``atLeast`` validators): a
#: ``segment.bytes`` below a legacy record's overhead cannot hold a batch, a ``segment.ms`` of 0
#: would roll on every append, and so on; ``retention.ms`` -1 is "no limit".
MINIMUMS: Mapping[str, int] = {
    "segment.bytes": 14, "segment.ms": 1, "segment.jitter.ms": 0, "segment.index.bytes": 4,
    "retention.ms": -1, "retention.bytes": -1, "delete.retention.ms": 0,
    "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 1, "local.retention.ms": -2,
    "local.retention.bytes": -2}
#: Kafka's upper bounds: the largest value of the config's Java type (``segment.bytes`` and
#: ``segment.index.bytes`` are ``INT``, the others ``LONG``). ``LogConfig`` refuses a value
#: beyond them when it parses it, so a what-if must too rather than simulate a config no
#: broker would take.
MAXIMUMS: Mapping[str, int] = {
    name: (2**31 - 1 if name in ("segment.bytes", "segment.index.bytes") else 2**63 - 1)
    for name in MINIMUMS}
#: The highest ``--ingest`` rate taken, in bytes per second (a petabyte a second: beyond any
#: cluster, and still far from a float's limits in the simulation's sums).
MAX_INGEST_BYTES_PER_S = 1e15
#: The longest simulation asked for, in days (ten years).
MAX_HORIZON_DAYS = 3650.0


def parse_changes(changes: str | Mapping[str, object]) -> dict[str, object]:
    """The one reader of what-if changes, for every face: ``NAME=VALUE[,NAME=VALUE...]`` (a
    list value, ``cleanup.policy=compact,delete``, keeps its commas because a new pair starts
    only where ``,name=`` follows), or a mapping of Kafka config names to values (strings,
    numbers, or a list for ``cleanup.policy``). Each value is parsed as Kafka's config would
    be and checked against :data:`MINIMUMS` and :data:`MAXIMUMS`; a name given twice is
    refused rather than the last one silently winning. A ValueError says what is wrong."""
    if isinstance(changes, str):
        pairs = []
        for part in re.split(r",(?=[a-z][a-z.]*=)", changes.strip()):
            name, sep, value = part.partition("=")
            if not sep or not value.strip():
                raise ValueError(f"{part!r} is not NAME=VALUE")
            pairs.append((name.strip(), value))
    elif isinstance(changes, Mapping):
        pairs = [(str(k), ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v))
                 for k, v in changes.items()]
    else:
        raise ValueError("changes must be NAME=VALUE[,...] text or a mapping of config names")
    out: dict[str, object] = {}
    for name, value in pairs:
        if name not in WHAT_IF_NAMES:
            raise ValueError(f"{name!r} cannot be changed here (one of: "
                             f"{', '.join(WHAT_IF_NAMES)})")
        if name in out:
            raise ValueError(f"{name} is given twice")
        parsed = cfg.parse_value(name, value)
        low, high = MINIMUMS.get(name), MAXIMUMS.get(name)
        if low is not None and int(parsed) < low:
            raise ValueError(f"{name}={value} is below Kafka's minimum of {low}")
        if high is not None and int(parsed) > high:
            raise ValueError(f"{name}={value} is above Kafka's maximum of {high:,}")
        out[name] = parsed
    if not out:
        raise ValueError("nothing to change")
    return out


def check_horizon(days: float) -> float:
    """The one bound on a horizon, for every face: more than 0 days, at most
    :data:`MAX_HORIZON_DAYS`."""
    if not isinstance(days, (int, float)) or isinstance(days, bool) or not \
            0 < days <= MAX_HORIZON_DAYS:
        given = f"{days:g}" if isinstance(days, float) else repr(days)  # "0", as typed
        raise ValueError(f"the horizon must be more than 0 and at most {MAX_HORIZON_DAYS:g} "
                         f"days, not {given}")
    return float(days)


def parse_ingest(value: object) -> Ingest:
    """The one reader of an ingest model, for every face: ``"auto"`` or None (each
    partition's recent history, repeated), or a topic's rate in bytes per second (more than
    0, below :data:`MAX_INGEST_BYTES_PER_S`)."""
    if value is None or value == "auto":
        return AUTO
    if isinstance(value, Ingest):
        return value
    try:
        rate = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        raise ValueError(f"ingest must be auto or a rate in bytes per second, not {value!r}") \
            from None
    if not 0 < rate < MAX_INGEST_BYTES_PER_S:
        raise ValueError(f"an ingest rate must be more than 0 and below "
                         f"{MAX_INGEST_BYTES_PER_S:,.0f} bytes per second, not {value!r}")
    return Ingest(rate)


@dataclass(frozen=True, slots=True)
class ConfigOverrides:
    """The one shape of topic configs a Python or Spark caller gives: a mapping of Kafka
    config names to values for every topic (``{"retention.ms": 86400000}``), of topic names
    to such mappings (``{"orders": {"cleanup.policy": "compact"}}``), or both in one mapping.
    Values are checked by Kafka's parsing (:func:`segtools.analysis.config.parse_value`) and
    kept as the text a flag would carry, so they resolve as the CLI's flags do (above a
    ``--config`` file, the tree's metadata and Kafka's defaults)."""

    common: Mapping[str, str]
    topics: Mapping[str, Mapping[str, str]]

    @classmethod
    def parse(cls, configs: Mapping[str, object] | None) -> ConfigOverrides:
        """A ValueError names the entry that is wrong."""
        common: dict[str, str] = {}
        topics: dict[str, dict[str, str]] = {}
        for key, value in (configs or {}).items():
            if isinstance(value, Mapping):
                topics[str(key)] = {str(k): _config_text(str(k), v) for k, v in value.items()}
            else:
                common[str(key)] = _config_text(str(key), value)
        return cls(common, topics)

    def flags(self, topic: str) -> dict[str, str]:
        """What applies to ``topic``: its own values over the common ones."""
        return {**self.common, **self.topics.get(topic, {})}

    def config(self, topic: str) -> cfg.TopicConfig:
        """``topic``'s config from these values over Kafka's defaults (a face without files:
        Spark's executors)."""
        return cfg.resolve(topic, flags=self.flags(topic))

    def apply(self, loaded: Loaded) -> Loaded:
        """``loaded`` with each topic's own values laid over its resolved config (the common
        ones were already given to the loading as flags)."""
        if not self.topics:
            return loaded
        parts = tuple(replace(pi, config=_override(pi.config, self.topics[pi.topic]))
                      if pi.topic in self.topics else pi for pi in loaded.partitions)
        return replace(loaded, partitions=parts)


def _config_text(name: str, value: object) -> str:
    text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else \
        str(value).lower() if isinstance(value, bool) else str(value)
    cfg.parse_value(name, text)
    return text


def _override(config: cfg.TopicConfig, flags: Mapping[str, str]) -> cfg.TopicConfig:
    values = {cfg.DEFINITIONS[name].attr: cfg.parse_value(name, text)
              for name, text in flags.items()}
    prov = tuple(p for p in config.provenance if p[0] not in flags) + tuple(
        (name, cfg.ConfigValue(cfg.SOURCE_FLAG, "configs")) for name in flags)
    return replace(config, **values, provenance=prov)


def changes_json(changes: Mapping[str, object]) -> dict:
    return {k: ",".join(v) if isinstance(v, tuple) else v for k, v in changes.items()}


# --------------------------------------------------------------------------- input


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class FullScale:
    """When the replay cap binds (one simulated batch stands for many, each larger than a
    segment), the counts at the scale asked: segments at once about the peak size over the
    roll size (plus each partition's active segment), rolls about the bytes appended over it;
    never fewer than the simulation counted (time rolls)."""

    segments_max: int
    rolls: int

    @classmethod
    def of(cls, o: Outcome, config: cfg.TopicConfig, partitions: int) -> FullScale | None:
        if o.replay_scale <= 1:
            return None
        cap = roll_bytes(config)
        return cls(max(o.segments_max, partitions + -(-o.peak_bytes // cap)),
                   max(o.rolls, -(-o.appended_bytes // cap)))

    def to_json(self) -> dict:
        return {"segments_max": self.segments_max, "rolls": self.rolls}


@dataclass(frozen=True, slots=True)
class WhatIf:
    """``{"type": "what_if", ...}``: one partition (``partition`` set) or one topic."""

    topic: str
    partition: int | None
    changes: Mapping[str, object]
    current: Outcome
    proposed: Outcome
    label: str = ""
    #: the partitions whose history is too short to extrapolate (no future appends modelled)
    too_short: tuple[str, ...] = ()
    #: the counts at the scale asked, current and proposed, when the replay cap bound
    full_scale: tuple[FullScale | None, FullScale | None] = (None, None)
    #: on a topic ``--recommend`` found no change for, why (:func:`unrecommended`)
    unrecommended: str = ""

    def to_json(self) -> dict:
        out = {"type": "what_if", "topic": self.topic, "partition": self.partition,
               "changes": changes_json(self.changes), "current": self.current.to_json(),
               "proposed": self.proposed.to_json(), "too_short": list(self.too_short),
               "unrecommended": self.unrecommended or None}
        if self.full_scale != (None, None):
            out["full_scale"] = {side: None if f is None else f.to_json()
                                 for side, f in zip(("current", "proposed"), self.full_scale,
                                                    strict=True)}
        return out


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
            "swing": round(o.swing, 4), "swing_late": round(o.swing_late, 4),
            "oldest_age_ms_max": o.oldest_age_ms_max,
            "oldest_age_ms_late": o.oldest_age_ms_late}


@dataclass(frozen=True, slots=True)
class WhatIfReport:
    """``segtools retention --what-if/--recommend`` over a tree, as values."""

    at_ms: int
    end_ms: int
    ingest: Ingest
    items: tuple[WhatIf, ...]
    recommendations: tuple[Recommendation, ...]
    retention_ms: Mapping[str, int]  # per topic: what its time retention promises
    #: per topic, the setting that promise is (:func:`retention_name`: local.retention.ms on
    #: a tiered topic that sets it), for the charts' line
    retention_names: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"type": "what_if_report", "version": 1, "at": self.at_ms,
                "at_iso": format_time(self.at_ms), "until": self.end_ms,
                "ingest": self.ingest.to_json(), "ingest_model": self.ingest.describe(),
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
    #: a tiered partition's ``highestOffsetInRemoteStorage`` at ``now`` (None: not tiered, or
    #: no ``__remote_log_metadata`` in the tree: every segment is taken as copied)
    highest_remote_offset: int | None = None

    @property
    def too_short(self) -> bool:
        return too_short(self.history)


@dataclass(frozen=True, slots=True)
class Horizon:
    """What every run of one topic shares: from ``now_ms`` (the disk as it is) to ``end_ms``,
    the ingest model, and how many partitions split a topic-wide ingest rate."""

    now_ms: int
    end_ms: int
    ingest: Ingest
    partitions: int
    #: spread a topic's partitions over worker processes (off where the caller already runs
    #: one task per core: a Spark executor)
    fan_out: bool = True

    def extend(self, h: History, configs: Sequence[cfg.TopicConfig] = ()) -> History:
        """``h`` with the ingest model's appends, for runs under ``configs`` (their compacted
        ones' segments bound the replay:
        :data:`~segtools.analysis.simulation.MAX_CLEANED_SEGMENTS`)."""
        return extend(h, now_ms=self.now_ms, end_ms=self.end_ms, ingest=self.ingest,
                      partitions=self.partitions, cleaned=CleanedSegments.of(configs))

    def tally(self) -> Tally:
        return Tally(topic_grid(self.now_ms, self.end_ms), self.now_ms, self.end_ms)


def _inputs(loaded: Loaded, limit: int, now_ms: int | None = None
            ) -> dict[str, list[PartitionHistory]]:
    """Each partition's history, by topic, with what the remote tier has copied (as
    ``segtools retention`` reads it from ``__remote_log_metadata``)."""
    remote = tiered_metadata(loaded, now_ms)
    by_key = remote_by_partition(remote) if remote is not None else {}
    by_topic: dict[str, list[PartitionHistory]] = {}
    for pi in loaded.partitions:
        copied = highest_remote_offset(pi, by_key.get((pi.topic, pi.partition))) \
            if remote is not None and is_tiered(pi) else None
        by_topic.setdefault(pi.topic, []).append(
            PartitionHistory(pi, history(pi, limit=limit), copied))
    return by_topic


def run_partition(p: PartitionHistory, config: cfg.TopicConfig, *, now_ms: int, end_ms: int,
                  ingest: Ingest, partitions: int, extended: History | None = None,
                  from_disk: bool = True) -> Run:
    """One partition under ``config``: from its segments on disk at ``now_ms`` (with
    ``from_disk=False``: its whole history replayed from the first batch), then the ingest
    model, to ``end_ms`` (``extended``: that history and replay already built, as
    :func:`extend` gives it; the replay does not depend on the config, so several configs
    share one)."""
    h = extended if extended is not None else extend(
        p.history, now_ms=now_ms, end_ms=end_ms, ingest=ingest, partitions=partitions)
    cleaner = p.pi.cleaner_offset if config.compact else None
    return simulate(h, config, now_ms=now_ms, end_ms=end_ms, seed=p.pi.label,
                    cleaner_offset=cleaner, from_disk=from_disk,
                    highest_remote_offset=p.highest_remote_offset)


#: A partition's simulation weighed in the segments ``fanout`` counts (summarising one
#: segment's headers): a simulated month of a partition costs about as much as twenty, so a
#: topic of a hundred partitions goes to worker processes and the fixtures stay in one.
RUN_WEIGHT = 20


def _chunks(parts: Sequence[PartitionHistory]) -> list[Sequence[PartitionHistory]]:
    """Consecutive slices of the partitions, a few per worker, so a worker returns the summed
    tally of many partitions rather than each partition's arrays."""
    k = max(1, min(len(parts), 4 * fanout.workers()))
    step = -(-len(parts) // k)
    return [parts[i:i + step] for i in range(0, len(parts), step)]


def _simulated(parts: Sequence[PartitionHistory], changes: Sequence[Mapping[str, object]],
               horizon: Horizon, each: bool, advance: Callable[[int], None]
               ) -> tuple[list[list[Outcome]], list[Tally]]:
    """Every partition under today's config with each of ``changes`` applied (``{}``: today's
    config), summed per change on the topic grid; with ``each``, every partition's own
    outcomes too, in the partitions' order. Partitions are independent, so large topics are
    spread over :mod:`segtools.fanout`'s workers, a slice of partitions per job."""
    now_ms, end_ms = horizon.now_ms, horizon.end_ms

    def job(chunk: Sequence[PartitionHistory]) -> tuple[list[list[Outcome]], list[Tally], int]:
        tallies = [horizon.tally() for _ in changes]
        own: list[list[Outcome]] = []
        for p in chunk:
            mine = []
            configs = [apply_changes(p.pi.config, change) for change in changes]
            h = horizon.extend(p.history, configs)
            for config, tally in zip(configs, tallies, strict=True):
                run = run_partition(p, config, now_ms=now_ms, end_ms=end_ms,
                                    ingest=horizon.ingest, partitions=horizon.partitions,
                                    extended=h)
                tally.add(run)
                if each:
                    mine.append(outcome([run], now_ms, end_ms))
            own.append(mine)
        return own, tallies, len(chunk)

    totals = [horizon.tally() for _ in changes]
    every: list[list[Outcome]] = []
    chunks = _chunks(parts)
    work = len(parts) * len(changes) * RUN_WEIGHT if horizon.fan_out else 0
    for own, tallies, n in fanout.ordered(job, chunks, segments=work):
        every += own
        for total, t in zip(totals, tallies, strict=True):
            total.merge(t)
        advance(n)
    return every, totals


def _topic(topic: str, parts: Sequence[PartitionHistory], changes: Mapping[str, object],
           horizon: Horizon, advance: Callable[[int], None]) -> list[WhatIf]:
    """Each partition under today's config and ``changes``, then the topic, summed as the
    partitions finish (nothing of a partition's run is kept but its numbers)."""
    every, (cur_t, prop_t) = _simulated(parts, [{}, changes], horizon, True, advance)
    short = tuple(p.pi.label for p in parts if p.too_short)
    config = parts[0].pi.config
    proposed = apply_changes(config, changes)

    def scaled(cur: Outcome, prop: Outcome, n: int) -> tuple:
        return FullScale.of(cur, config, n), FullScale.of(prop, proposed, n)

    out = [WhatIf(topic, p.pi.partition, changes, cur, prop, p.pi.label,
                  (p.pi.label,) if p.too_short else (), scaled(cur, prop, 1))
           for p, (cur, prop) in zip(parts, every, strict=True)]
    cur, prop = cur_t.outcome(), prop_t.outcome()
    out.append(WhatIf(topic, None, changes, cur, prop, topic, short,
                      scaled(cur, prop, len(parts))))
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
    check_horizon(horizon_days)
    end_ms = horizon_end(now_ms, horizon_days)
    items: list[WhatIf] = []
    recs: list[Recommendation] = []
    retention: dict[str, int] = {}
    names: dict[str, str] = {}
    for topic, parts in _inputs(loaded, limit, now_ms).items():
        got, rec = what_if_topic(topic, parts, changes, now_ms=now_ms, end_ms=end_ms,
                                 ingest=ingest, recommend=recommend, advance=advance)
        if rec is not None:
            recs.append(rec)
        retention[topic] = parts[0].pi.config.local_retention_ms_effective
        names[topic] = retention_name(parts[0].pi.config)
        items += got
    return WhatIfReport(now_ms, end_ms, ingest, tuple(items), tuple(recs), retention, names)


def refused(config: cfg.TopicConfig, changes: Mapping[str, object]) -> str:
    """Why Kafka's ``LogConfig`` would refuse ``changes`` on a topic of ``config``, from the
    checks that weigh one setting against another (``validateValues`` and, on a tiered
    topic, ``validateRemoteStorageRetentionTime``/``Size``), or "" when it takes them. A
    change no broker takes has no lifecycle to simulate; a config already refused before the
    change is not the change's doing and is left to the rest of segtools to report."""
    def why(c: cfg.TopicConfig) -> str:
        if c.min_compaction_lag_ms > c.max_compaction_lag_ms:
            return (f"min.compaction.lag.ms ({c.min_compaction_lag_ms}) is more than "
                    f"max.compaction.lag.ms ({c.max_compaction_lag_ms})")
        if not c.remote_storage_enable:
            return ""
        for unit, local, total in (("ms", c.local_retention_ms, c.retention_ms),
                                   ("bytes", c.local_retention_bytes, c.retention_bytes)):
            if local != -2 and total != -1 and not 0 <= local <= total:
                return (f"on a tiered topic local.retention.{unit} ({local}) must be -2 or "
                        f"between 0 and retention.{unit} ({total})")
        return ""

    return why(apply_changes(config, changes)) if changes and not why(config) else ""


def what_if_topic(topic: str, parts: Sequence[PartitionHistory],
                  changes: Mapping[str, object] | None, *, now_ms: int, end_ms: int,
                  ingest: Ingest = AUTO, recommend: bool = False,
                  advance: Callable[[int], None] = lambda n: None, fan_out: bool = True
                  ) -> tuple[list[WhatIf], Recommendation | None]:
    """One topic: each partition and the topic under today's config and ``changes`` (with
    ``recommend`` and no ``changes``: the recommended change), and the recommendation when one
    was asked and found. Every face that simulates a topic comes through here, so a change
    Kafka would refuse for the topic (:func:`refused`) is refused here, before simulating."""
    why = refused(parts[0].pi.config, changes or {}) if parts else ""
    if why:
        shown = ", ".join(f"{k}={v}" for k, v in changes_json(changes or {}).items())
        raise SegtoolsError(f"topic {topic}: Kafka refuses {shown}: {why}")
    horizon = Horizon(now_ms, end_ms, ingest, len(parts), fan_out)
    chosen = dict(changes or {})
    rec = None
    if recommend:
        rec = recommend_topic(topic, parts, horizon)
        if rec is not None and changes is None:
            chosen = dict(rec.changes)
    items = _topic(topic, parts, chosen, horizon, advance)
    if recommend and rec is None:
        items[-1] = replace(items[-1], unrecommended=unrecommended(
            parts[0].pi.config, items[-1].current,
            horizon.ingest.bytes_per_s is None and bool(items[-1].too_short)))
    return items, rec


def unrecommended(config: cfg.TopicConfig, current: Outcome, too_short: bool) -> str:
    """Why :func:`recommend_topic` found nothing for a topic, in words (its reasons, in its
    order): there is no time retention to keep, a history too short to extrapolate, the
    promise already kept (within :data:`TOLERANCE`), or no change tried keeps it."""
    name, r = retention_name(config), config.local_retention_ms_effective
    if not config.delete:
        return "cleanup.policy=compact removes records by key only, with no time to keep"
    if r < 0:
        return f"{name} is {r}, so time retention is off"
    if too_short:
        return "a partition's history is too short to extrapolate"
    promise = f"{name} {format_duration(r)}, with {TOLERANCE:.0%} slack"
    if meets(current, config):
        return f"the current config keeps its promise ({promise})"
    families = "segment or cleaner" if compaction_candidates(config) else "segment"
    return f"no {families} change tried keeps the promise ({promise})"


# --------------------------------------------------------------------------- recommending


def meets(o: Outcome, config: cfg.TopicConfig) -> bool:
    """Does the topic keep what its (local) time retention promises once a config has had
    time to act: over the horizon's second half (``oldest_age_ms_late``), no record older than
    the retention plus :data:`TOLERANCE` of it (an empty log keeps it)? Records on disk at
    ``now`` that no config can take at once do not count against it."""
    r = config.local_retention_ms_effective
    if o.oldest_age_ms_late is None:  # empty all along the second half: nothing is kept
        return True
    return o.oldest_age_ms_late <= r * (1 + TOLERANCE)


def improves(new: Outcome, cur: Outcome) -> bool:
    """A recommendation is worded as an improvement, so it must be one: over the horizon's
    second half (once both configs have acted), the oldest record no older than under today's
    config and the peak size no higher (a point of slack for the grid). The swing is said as
    it is (:func:`_why`): a change that takes old records sooner can deepen the trough, and a
    sentence that calls that narrower would be false."""
    return (new.oldest_age_ms_late or 0) <= (cur.oldest_age_ms_late or 0) and \
        new.late_peak_bytes <= cur.late_peak_bytes * 1.01


def retention_name(config: cfg.TopicConfig) -> str:
    """The setting whose promise the local log keeps: ``local.retention.ms`` on a tiered
    topic that sets it (``UnifiedLog.localRetentionMs``), else ``retention.ms``."""
    if config.remote_copy_enabled and config.local_retention_ms != -2:
        return "local.retention.ms"
    return "retention.ms"


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


def recommend_topic(topic: str, parts: Sequence[PartitionHistory], horizon: Horizon
                    ) -> Recommendation | None:
    """The smallest ``segment.bytes``/``segment.ms`` change (and for a ``compact,delete``
    topic the smallest compaction-lag or dirty-ratio change, see
    :func:`compaction_candidates`) that brings the oldest record (and with it the size swing)
    within :data:`TOLERANCE` of the local retention and worsens neither (:func:`improves`);
    None when time retention is off, the topic already keeps its promise, or a partition's
    history is too short to extrapolate (advice from seconds of data would be arithmetic, not
    evidence). Each family is searched nearest first and stops at its first change that
    keeps the promise; of those, a segment family's wins (see :data:`SEGMENT_FAMILIES`), then
    the one with fewer segments and rolls; the compaction settings that also work are the
    recommendation's alternatives."""
    config = parts[0].pi.config
    if not config.delete or config.local_retention_ms_effective < 0:
        return None
    if horizon.ingest.bytes_per_s is None and any(p.too_short for p in parts):
        return None
    cur = _tally(parts, {}, horizon)
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
        o = _tally(parts, change, horizon)
        ok = meets(o, config) and improves(o, cur)
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
    days = (horizon.end_ms - horizon.now_ms) / DAY_MS

    def priced(change: Mapping[str, object], o: Outcome) -> dict:
        return cost(cur, o, len(parts), days, config, apply_changes(config, change))

    (change, o), rest = ranked[0], ranked[1:]
    alternatives = tuple(Alternative(c, x, priced(c, x)) for c, x in rest
                         if next(iter(c)) in COMPACTION_FAMILIES)
    return Recommendation(topic, change, _why(topic, config, change, cur, o),
                          priced(change, o), cur, o, tuple(tried), alternatives)


def _tally(parts: Sequence[PartitionHistory], change: Mapping[str, object],
           horizon: Horizon) -> Outcome:
    """A topic under ``change``, its partitions summed on the topic grid."""
    _, (tally,) = _simulated(parts, [change], horizon, False, lambda n: None)
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
    """The recommendation in one sentence; a figure that does not change is said to stay,
    not compared with itself."""
    (name, value), = change.items()
    shown, old_shown = (shown_value(name, v) for v in (value, getattr(
        config, cfg.DEFINITIONS[name].attr)))
    held = retention_name(config)
    swing_new, swing_cur = percent(new.swing_late), percent(cur.swing_late)
    sizes = (f"{format_bytes(new.late_trough_bytes)}..{format_bytes(new.late_peak_bytes)} "
             f"instead of {format_bytes(cur.late_trough_bytes)}.."
             f"{format_bytes(cur.late_peak_bytes)}")
    if swing_new == swing_cur:
        swing = f"the size swing stays {swing_new} ({sizes})"
    elif new.swing_late < cur.swing_late:
        swing = f"the size swings {swing_new} instead of {swing_cur} ({sizes})"
    else:
        swing = (f"the size swings wider, {swing_new} instead of {swing_cur}, under a peak "
                 f"no higher ({sizes})")
    return (f"topic {topic}: with {name}={shown_value(name, value, raw=True)} ({shown}, today "
            f"{old_shown}) the oldest record is at most "
            f"{format_duration(new.oldest_age_ms_late or 0)} old over the horizon's second "
            f"half instead of {format_duration(cur.oldest_age_ms_late or 0)} ({held} "
            f"{format_duration(config.local_retention_ms_effective)}), and there {swing}")


# --------------------------------------------------------------------------- in words


def _old(ms: int) -> str:
    """An age in words; a negative one is a record timestamped after the moment (as
    ``segtools retention`` says of a future timestamp)."""
    return f"{format_duration(ms)} old" if ms >= 0 else f"{format_duration(-ms)} in the future"


def topic_sentence(w: WhatIf) -> str:
    """One line a person can repeat: what the change does to the size and the oldest record,
    beside the current config's simulation over the same horizon and what is on disk now. A
    figure the change leaves as it is is said once, "as under the current config", never
    compared with itself; with no change (``--recommend`` found none to make) only the current
    config's figures are said."""
    c, p = w.current, w.proposed
    if c.start_bytes == 0:  # an empty log: no segment for retention to take
        head = f"topic {w.topic}: 0 B on disk now (no record); "
    elif c.oldest_age_ms_start is None:
        head = f"topic {w.topic}: {format_bytes(c.start_bytes)} on disk now, {_unaged(c)}; "
    else:
        head = (f"topic {w.topic}: {format_bytes(c.start_bytes)} on disk now, the oldest "
                f"record retention keeps is {_old(c.oldest_age_ms_start)}; ")
    if not w.changes:
        why = f" because {w.unrecommended}" if w.unrecommended else ""
        return (head + f"no change proposed{why}: under the current config the size "
                f"{_size_range(c)} and {_late(c.oldest_age_ms_late)}")
    change = ", ".join(f"{k}={v}" for k, v in changes_json(w.changes).items())
    if (p.trough_bytes, p.peak_bytes) == (c.trough_bytes, c.peak_bytes):
        size = f"{_size_range(p)}, as under the current config,"
    else:
        size = (f"{_size_range(p)} (current config {format_bytes(c.trough_bytes)}.."
                f"{format_bytes(c.peak_bytes)})")
    return head + f"with {change} the size {size} and " + \
        _late_oldest(p.oldest_age_ms_late, c.oldest_age_ms_late)


def _unaged(o: Outcome) -> str:
    """What the first retention check does to a log that holds bytes but no oldest record
    age after it: it took every segment, or what it keeps carries no record timestamp
    (magic 0 messages, whose segments retention ages by their files' mtimes and keeps while
    those are young, as ``segtools retention`` says of them). The series' first row is the
    size just after that check."""
    kept = o.series[0][1] if o.series else 0
    if kept == 0:
        return "the first retention check takes every segment"
    return (f"the first retention check keeps {format_bytes(kept)} whose records carry no "
            "timestamp (magic 0 messages: their segments are aged by the files' mtimes)")


def _size_range(o) -> str:
    """The size over the horizon in words: a range, or one figure when it does not move."""
    if o.peak_bytes == 0:
        return "stays at 0 B (empty)"
    if o.trough_bytes == o.peak_bytes:
        return f"stays at {format_bytes(o.peak_bytes)}"
    return f"moves between {format_bytes(o.trough_bytes)} and {format_bytes(o.peak_bytes)}"


def _late(age: int | None) -> str:
    """One config's oldest record over the horizon's second half; None means the partition
    held no record then (retention emptied it and nothing is appended: a history too short
    to replay), said as such rather than as an age of "-"."""
    if age is None:
        return "the topic is empty over the horizon's second half"
    if age < 0:
        return (f"over the horizon's second half every record left is timestamped at least "
                f"{format_duration(-age)} in the future")
    return f"over the horizon's second half the oldest record is at most {_old(age)}"


def _late_oldest(proposed: int | None, current: int | None) -> str:
    """The horizon's second half under the proposed config beside the current one's."""
    if proposed == current:
        return _late(proposed) + (" under either config" if proposed is None
                                  else ", as under the current config")
    if proposed is None:
        return _late(proposed) + f" (current config: the oldest record at most {_old(current)})"
    then = "empty" if current is None else _old(current).removesuffix(" old")
    return _late(proposed) + f" (current config {then})"


def _at_scale(w: WhatIf) -> str:
    """The counts at the scale asked: each config's, or once when they are the same (no
    change, or one that changes neither count)."""
    cur, prop = w.full_scale

    def counts(f) -> str:
        return f"about {f.segments_max:,} segments at once and {f.rolls:,} rolls"

    if cur is not None and prop == cur:
        return f"{'the current config' if not w.changes else 'either config'} {counts(cur)}"
    return "; ".join(f"{side} config {counts(f)}"
                     for side, f in (("current", cur), ("proposed", prop)) if f)


def topic_notes(report: WhatIfReport, w: WhatIf) -> list[str]:
    """What qualifies a topic's figures, under its sentence in every face (the CLI's text, the
    plot's page, the report): partitions whose history is too
    short to extrapolate, and the replay cap when it binds (with the counts at the scale
    asked)."""
    notes = []
    if w.too_short:
        then = ("no future appends are modelled and nothing is recommended"
                if report.ingest.bytes_per_s is None else
                "its batches are only respaced to the --ingest rate")
        notes.append(f"{_labels(w.too_short)}: the history spans less than "
                     f"{format_duration(MIN_HISTORY_MS)}, too short to extrapolate; {then}")
    scale = max(w.current.replay_scale, w.proposed.replay_scale)
    if scale > 1:
        notes.append(f"the replay cap binds: each simulated batch stands for {scale:,} "
                     "batches (the rate is kept; the table counts rolls and segments of "
                     f"those larger batches); at the scale asked: {_at_scale(w)}")
    return notes


def _labels(labels: tuple[str, ...]) -> str:
    """Partition names once each: the copies of a partition in several brokers' log dirs
    are one name with their count ("orders-9 (2 copies)"), not the name twice."""
    counts = Counter(labels)
    return ", ".join(label if n == 1 else f"{label} ({n} copies)"
                     for label, n in counts.items())


def shown_value(name: str, value: object, raw: bool = False) -> str:
    """A config value as a person reads it (``raw``: as ``kafka-configs`` takes it, which for a
    duration or a size is the plain number): sizes in binary units, durations in days and
    hours, ``max.compaction.lag.ms``'s Long.MAX_VALUE as "never"."""
    if isinstance(value, tuple):
        return ",".join(value)
    if raw:
        return str(value)
    if name.endswith(".bytes"):
        return format_bytes(int(value)) if int(value) >= 0 else str(value)
    if name.endswith(".ms"):
        v = int(value)
        return "never" if v >= 2**62 else format_duration(v) if v >= 0 else str(v)
    return str(value)


def _age(ms: int | None) -> str:
    return "-" if ms is None else format_duration(ms)


def percent(fraction: float) -> str:
    """A share in whole percents, except where rounding would claim none or all of a share
    that is neither: a 764 B trough under a 274 KiB peak swings 99.7 %, and "100%" would say
    the log empties."""
    whole = round(100 * fraction)
    if whole == 100 and fraction < 1:
        return f"{math.floor(1000 * fraction) / 10:.1f}%"
    if whole == 0 and fraction > 0:
        return f"{math.ceil(1000 * fraction) / 10:.1f}%"
    return f"{whole}%"


def table_rows(c: Outcome, p: Outcome) -> list[tuple[str, str, str]]:
    """The current-against-proposed table as a person reads it (label, current, proposed):
    the CLI's text and the what-if plot's page show these rows, the report the same labels."""
    return [("on disk now", format_bytes(c.start_bytes), format_bytes(p.start_bytes)),
            ("peak size", format_bytes(c.peak_bytes), format_bytes(p.peak_bytes)),
            ("trough size", format_bytes(c.trough_bytes), format_bytes(p.trough_bytes)),
            ("swing", percent(c.swing), percent(p.swing)),
            ("oldest record kept now", _age(c.oldest_age_ms_start),
             _age(p.oldest_age_ms_start)),
            ("oldest record, max", _age(c.oldest_age_ms_max), _age(p.oldest_age_ms_max)),
            ("oldest record, 2nd half", _age(c.oldest_age_ms_late), _age(p.oldest_age_ms_late)),
            ("oldest record, end", _age(c.oldest_age_ms_end), _age(p.oldest_age_ms_end)),
            ("segments, most at once", f"{c.segments_max:,}", f"{p.segments_max:,}"),
            ("rolls / deletions", f"{c.rolls:,} / {c.deletions:,}",
             f"{p.rolls:,} / {p.deletions:,}")]


def _exact(value: object, unit: str) -> str:
    return "-" if value is None else f"{value} {unit}".rstrip()


def exact_rows(c: Outcome, p: Outcome) -> list[tuple[str, str]]:
    """The numbers behind each cell of :func:`table_rows` (current, proposed), row for row:
    a page's tooltip, so the rounded figure a person reads can be checked to the byte."""
    return [(_exact(c.start_bytes, "bytes"), _exact(p.start_bytes, "bytes")),
            (_exact(c.peak_bytes, "bytes"), _exact(p.peak_bytes, "bytes")),
            (_exact(c.trough_bytes, "bytes"), _exact(p.trough_bytes, "bytes")),
            (_exact(round(c.swing, 4), ""), _exact(round(p.swing, 4), "")),
            (_exact(c.oldest_age_ms_start, "ms"), _exact(p.oldest_age_ms_start, "ms")),
            (_exact(c.oldest_age_ms_max, "ms"), _exact(p.oldest_age_ms_max, "ms")),
            (_exact(c.oldest_age_ms_late, "ms"), _exact(p.oldest_age_ms_late, "ms")),
            (_exact(c.oldest_age_ms_end, "ms"), _exact(p.oldest_age_ms_end, "ms")),
            (_exact(c.segments_max, ""), _exact(p.segments_max, "")),
            (f"{c.rolls} / {c.deletions}", f"{p.rolls} / {p.deletions}")]


def alternative_parts(a) -> tuple[str, str]:
    """Another change that also keeps the promise (a recommendation's ``alternatives``) as
    the CLI and the report say it: the change with each value in units where that reads
    differently (``min.compaction.lag.ms=302400000 (3d 12h)``), and what it does over the
    horizon's second half (oldest record, swing, segments, the cleaner's work)."""
    change = ", ".join(
        f"{k}={v}" + ("" if shown_value(k, a.changes[k]) == str(v)
                      else f" ({shown_value(k, a.changes[k])})")
        for k, v in changes_json(a.changes).items())
    after = a.cost["after"]
    cleaner = (f", {after['cleaner_passes']} cleaner passes reading "
               f"{format_bytes(after['cleaner_bytes_read'])}"
               if "cleaner_passes" in after else "")
    return change, (f"oldest record at most {_age(a.proposed.oldest_age_ms_late)}, swing "
                    f"{percent(a.proposed.swing_late)}, segments at most "
                    f"{a.proposed.segments_max}{cleaner}")


#: How a cost figure reads for a person: sizes in binary units, durations in days and hours.
_COST_UNITS = {"index_bytes": "segment.index.bytes", "cleaner_bytes_removed": "x.bytes",
               "cleaner_bytes_read": "x.bytes", "min_compaction_lag_ms": "min.compaction.lag.ms"}


def cost_label(key: str) -> str:
    """A cost figure's name as the CLI's table and the report's say it beside its value in
    units (``min_compaction_lag_ms`` is "min compaction lag": its value reads "3d 12h", and a
    name that says ms beside it would not)."""
    return key.removesuffix("_ms").replace("_", " ")


def shown_cost(key: str, value: object) -> str:
    """One figure of :func:`cost` as the CLI and the report show it."""
    if key in _COST_UNITS:
        return shown_value(_COST_UNITS[key], value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


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
