"""Would Kafka's delete policy remove each segment at time T, and why: ``deleteOldSegments``
replayed over segment summaries.

The rules (``docs/kafka-storage.md`` §6, ``core/.../log/UnifiedLog.scala``):

* ``UnifiedLog.deleteOldSegments`` runs up to three passes, each over what the previous one
  left: the log-start-offset breach (``deleteLogStartOffsetBreachedSegments``, every policy),
  then, only when ``cleanup.policy`` contains ``delete``, the size breach
  (``deleteRetentionSizeBreachedSegments``) and the time breach
  (``deleteRetentionMsBreachedSegments``).
* Each pass is ``UnifiedLog.deletableSegments``: walk oldest to newest and stop at the first
  segment that is not deletable. So deletion is a prefix: one young segment protects every
  newer one. A segment is deletable only when ``highWatermark >= upperBoundOffset`` (the next
  segment's base offset, or the log end offset for the last one), so nothing at or past the
  high watermark goes, and never when it is the last segment and empty.
* Time: ``now - segment.largestTimestamp > retention.ms`` (strictly), where
  ``LogSegment.largestTimestamp`` is the max record timestamp or, when there is none, the
  ``.log`` mtime. ``retention.ms < 0`` disables it.
* Size: skipped when ``retention.bytes < 0`` or ``size < retention.bytes``; otherwise
  ``diff = size - retention.bytes`` and each segment in order goes while
  ``diff - segment.size >= 0`` (then ``diff -= segment.size``).
* Log start offset: a segment goes when the *next* segment's base offset is
  ``<= logStartOffset``.
* When every segment is deletable, ``UnifiedLog.deleteSegments`` first rolls a new empty
  active segment at the log end offset, then deletes them all: an expired active segment is
  rolled and deleted.
* Tiered storage (``remote.storage.enable``, ``remote.log.copy.disable`` off): the time and
  size passes use ``local.retention.ms``/``local.retention.bytes`` (-2: inherit), and a
  segment is deletable only once copied, i.e. when it ends at or below
  ``highestOffsetInRemoteStorage`` (``isSegmentEligibleForDeletion``), or lies wholly below
  the log start offset. The first segment not yet copied stops the walk like any kept
  segment. The remote tier's own retention is :mod:`segtools.analysis.tiered`'s.

Everything here is pure (summaries in, verdicts out): the CLI and the Spark side call the same
function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from segtools.analysis.config import TopicConfig
from segtools.storage.summary import SegmentSummary
from segtools.units import format_bytes, format_duration, format_retention, format_time

# Reason codes (stable: ``--format json`` contract).
LOG_START_OFFSET_BREACHED = "log_start_offset_breached"
RETENTION_BYTES_BREACHED = "retention_bytes_breached"
RETENTION_MS_BREACHED = "retention_ms_breached"
WITHIN_RETENTION_MS = "within_retention_ms"
WITHIN_RETENTION_BYTES = "within_retention_bytes"
RETENTION_UNLIMITED = "retention_unlimited"  # retention.ms and retention.bytes both -1
BLOCKED_BY_EARLIER_SEGMENT = "blocked_by_earlier_segment"
ABOVE_HIGH_WATERMARK = "above_high_watermark"
EMPTY_ACTIVE_SEGMENT = "empty_active_segment"
DELETE_POLICY_DISABLED = "delete_policy_disabled"
# Tiered storage: the local tier's rules (local.retention.*) and its wait for the copy.
LOCAL_RETENTION_MS_BREACHED = "local_retention_ms_breached"
LOCAL_RETENTION_BYTES_BREACHED = "local_retention_bytes_breached"
AWAITING_REMOTE_COPY = "awaiting_remote_copy"

DELETABLE_REASONS = (LOG_START_OFFSET_BREACHED, RETENTION_BYTES_BREACHED, RETENTION_MS_BREACHED,
                     LOCAL_RETENTION_MS_BREACHED, LOCAL_RETENTION_BYTES_BREACHED)
KEPT_REASONS = (WITHIN_RETENTION_MS, WITHIN_RETENTION_BYTES, RETENTION_UNLIMITED,
                BLOCKED_BY_EARLIER_SEGMENT,
                ABOVE_HIGH_WATERMARK, EMPTY_ACTIVE_SEGMENT, DELETE_POLICY_DISABLED,
                AWAITING_REMOTE_COPY)

#: 9999-12-31T23:59:59.999Z. An eligibility later than this is reported as never (null): it
#: comes from a timestamp in micro- or nanoseconds, or a retention near Long.MAX_VALUE.
MAX_EPOCH_MS = 253_402_300_799_999


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class StaleRecords:
    """Records older than retention.ms that stay because their segment is kept."""

    count: int
    bytes: int
    oldest_timestamp: int

    def to_json(self) -> dict:
        return {"count": self.count, "bytes": self.bytes,
                "oldest_timestamp": self.oldest_timestamp}


@dataclass(frozen=True, slots=True)
class SegmentVerdict:
    """What ``deleteOldSegments`` would do with one segment at ``now_ms``, and why."""

    base_offset: int
    last_offset: int | None
    size: int
    record_count: int
    first_timestamp: int | None
    max_timestamp: int  # LogSegment.largestTimestamp: max record timestamp, else the mtime
    max_timestamp_source: str  # timeindex | log | mtime
    age_ms: int
    is_active: bool
    deletable: bool
    reason: str
    eligible_at: int | None
    blocked_by: int | None = None  # base offset of the segment that stops the prefix
    stale: StaleRecords | None = None
    #: what the sentence is made from (the partition's replay and this segment's place in
    #: it): the sentence is formatted only when it is shown (:attr:`reason_text`), as a
    #: what-if replays retention thousands of times and shows none of them
    why: _Why | None = field(default=None, compare=False, repr=False)

    @property
    def reason_text(self) -> str:
        """The reason as a sentence, with the figures that decided it."""
        return "" if self.why is None else _reason_text(*self.why)

    def to_json(self) -> dict:
        return {
            "base_offset": self.base_offset, "last_offset": self.last_offset,
            "size": self.size, "record_count": self.record_count,
            "first_timestamp": self.first_timestamp, "max_timestamp": self.max_timestamp,
            "max_timestamp_source": self.max_timestamp_source, "age_ms": self.age_ms,
            "is_active": self.is_active, "deletable": self.deletable, "reason": self.reason,
            "reason_text": self.reason_text, "eligible_at": self.eligible_at,
            "blocked_by": self.blocked_by,
            "stale_records": self.stale.to_json() if self.stale else None,
        }


@dataclass(frozen=True, slots=True)
class Callout:
    """Something the reader should not miss (a blocker, an assumption, a surprise)."""

    code: str
    message: str
    segments: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "segments": list(self.segments)}


@dataclass(frozen=True, slots=True)
class PartitionRetention:
    config: TopicConfig
    now_ms: int
    high_watermark: int | None
    high_watermark_assumed: bool
    log_start_offset: int | None
    log_start_offset_assumed: bool
    log_end_offset: int | None
    size: int
    segments: tuple[SegmentVerdict, ...]
    callouts: tuple[Callout, ...] = field(default=())
    rolled: bool = False  # every segment goes: a new empty active segment is rolled first

    @property
    def deletable_segments(self) -> tuple[SegmentVerdict, ...]:
        return tuple(v for v in self.segments if v.deletable)

    @property
    def deletable_bytes(self) -> int:
        return sum(v.size for v in self.segments if v.deletable)

    def with_stale(self, stale: Mapping[int, StaleRecords]) -> PartitionRetention:
        """Attach the deep pass's old-records-in-kept-segments counts (keyed by base offset)
        and call them out: the answer to "why is data older than retention still here"."""
        if not stale and not any(c.code == "stale_records" for c in self.callouts):
            return self
        segs = tuple(dataclasses.replace(v, stale=stale[v.base_offset])
                     if v.base_offset in stale else v for v in self.segments)
        hits = [v for v in segs if not v.deletable and v.stale and v.stale.count]
        callouts = tuple(c for c in self.callouts if c.code != "stale_records")
        if hits:
            count = sum(v.stale.count for v in hits)
            size = sum(v.stale.bytes for v in hits)
            oldest = min(v.stale.oldest_timestamp for v in hits)
            names = ", ".join(f"@{v.base_offset}" for v in hits[:6])
            more = f" and {len(hits) - 6} more" if len(hits) > 6 else ""
            callouts += (Callout(
                "stale_records",
                f"{count} records ({format_bytes(size)}) older than retention.ms are still on "
                f"disk in kept segment(s) {names}{more}; the oldest is from "
                f"{format_time(oldest)} ({format_duration(self.now_ms - oldest)} old). They "
                "share a segment with newer records, and Kafka deletes whole segments by the "
                "segment's largest timestamp (UnifiedLog.deleteRetentionMsBreachedSegments), "
                "so they stay until the newest record in their segment expires.",
                tuple(v.base_offset for v in hits)),)
        return dataclasses.replace(self, segments=segs, callouts=callouts)

    def to_json(self) -> dict:
        return {
            "config": self.config.to_json(),
            "now_ms": self.now_ms,
            "high_watermark": self.high_watermark,
            "high_watermark_assumed": self.high_watermark_assumed,
            "log_start_offset": self.log_start_offset,
            "log_start_offset_assumed": self.log_start_offset_assumed,
            "log_end_offset": self.log_end_offset,
            "size": self.size,
            "deletable_bytes": self.deletable_bytes,
            "deletable_segment_count": len(self.deletable_segments),
            "rolled": self.rolled,
            "segments": [v.to_json() for v in self.segments],
            "callouts": [c.to_json() for c in self.callouts],
        }


def stale_records(segment_base_offset: np.ndarray, timestamp: np.ndarray, size: np.ndarray,
                  *, cutoff_ms: int) -> dict[int, StaleRecords]:
    """Per segment: records whose own timestamp is before ``cutoff_ms`` (``now -
    retention.ms``). Records without a timestamp (-1, magic 0) are not counted."""
    old = (timestamp >= 0) & (timestamp < cutoff_ms)
    out: dict[int, StaleRecords] = {}
    if not old.any():
        return out
    bases = segment_base_offset[old]
    ts = timestamp[old]
    sz = size[old]
    for base in np.unique(bases):
        m = bases == base
        out[int(base)] = StaleRecords(int(m.sum()), round(float(sz[m].sum())),
                                      int(ts[m].min()))
    return out


# --------------------------------------------------------------------------- the rules


@dataclass(slots=True)
class _Walk:
    """``deleteOldSegments`` over a shrinking segment list: ``start`` is the first segment
    the passes so far have left."""

    segs: Sequence[SegmentSummary]
    upper: list[int]
    hw: int
    eligible: Callable[[int], bool] = lambda i: True
    start: int = 0
    deleted_by: dict[int, str] = field(default_factory=dict)
    awaiting: set[int] = field(default_factory=set)

    def run(self, predicate, reason: str) -> None:
        """``UnifiedLog.deletableSegments``: a prefix of the remaining segments, each below
        the high watermark, passing ``predicate``, not the last segment while empty, and
        (tiered) ``isSegmentEligibleForDeletion``."""
        i, n = self.start, len(self.segs)
        while i < n:
            last_and_empty = i == n - 1 and self.segs[i].size == 0
            if self.hw >= self.upper[i] and predicate(i) and not last_and_empty:
                if not self.eligible(i):
                    self.awaiting.add(i)
                    break
                self.deleted_by[i] = reason
                i += 1
            else:
                break
        self.start = i


def explain_retention(segments: Sequence[SegmentSummary], config: TopicConfig, *,
                      now_ms: int, high_watermark: int | None,
                      log_start_offset: int | None,
                      highest_remote_offset: int | None = None) -> PartitionRetention:
    """Replay ``UnifiedLog.deleteOldSegments`` at ``now_ms`` over one partition's segments.

    ``high_watermark`` None: assume the log end offset (everything is replicated).
    ``log_start_offset`` None: assume the first segment's base offset, which is what Kafka
    itself assumes when ``log-start-offset-checkpoint`` has no entry (it writes one only when
    the log start offset is above the first segment's base).
    ``highest_remote_offset``: a tiered partition's ``highestOffsetInRemoteStorage`` (-1:
    nothing copied), from ``__remote_log_metadata``; None when unknown (then local segments
    are assumed copied, and a call-out says so).
    """
    segs = sorted(segments, key=lambda s: s.base_offset)
    size = sum(s.size for s in segs)
    if not segs:
        return PartitionRetention(config, now_ms, high_watermark, high_watermark is None,
                                  log_start_offset, log_start_offset is None, None, 0, ())
    n = len(segs)
    leo = segs[-1].next_offset
    hw = leo if high_watermark is None else high_watermark
    lso = segs[0].base_offset if log_start_offset is None else log_start_offset
    upper = [s.base_offset for s in segs[1:]] + [leo]
    retention_ms = config.local_retention_ms_effective
    retention_bytes = config.local_retention_bytes_effective
    largest = [s.largest_timestamp for s in segs]
    expired = [retention_ms >= 0 and now_ms - t > retention_ms for t in largest]

    tiered = config.remote_copy_enabled
    hro = highest_remote_offset if tiered else None

    def copied(i: int) -> bool:
        """``isSegmentEligibleForDeletion`` with remote copy enabled."""
        return hro is None or (upper[i] > 0 and upper[i] - 1 <= hro) or \
            (i + 1 < n and lso >= segs[i + 1].base_offset)

    walk = _Walk(segs, upper, hw, copied)
    walk.run(lambda i: i + 1 < n and segs[i + 1].base_offset <= lso, LOG_START_OFFSET_BREACHED)
    remaining = sum(s.size for s in segs[walk.start:])
    if config.delete and retention_bytes >= 0 and remaining >= retention_bytes:
        diff = [remaining - retention_bytes]

        def size_breached(i: int) -> bool:
            if diff[0] - segs[i].size >= 0:
                diff[0] -= segs[i].size
                return True
            return False

        walk.run(size_breached,
                 LOCAL_RETENTION_BYTES_BREACHED if tiered else RETENTION_BYTES_BREACHED)
    if config.delete and retention_ms >= 0:
        walk.run(lambda i: expired[i],
                 LOCAL_RETENTION_MS_BREACHED if tiered else RETENTION_MS_BREACHED)
    rolled = walk.start == n

    ctx = _Context(segs, config, now_ms, hw, lso, leo, upper, retention_ms, retention_bytes,
                   size, remaining, rolled, hro, frozenset(walk.awaiting))
    verdicts = []
    prefix: int | None = None  # the latest eligibility of any earlier segment
    first_kept = walk.start
    for i in range(n):
        own = _time_eligible(largest[i], retention_ms) if config.delete else None
        if i in walk.deleted_by:
            reason = walk.deleted_by[i]
            mine = now_ms if own is None else min(own, now_ms)
            prefix = mine if prefix is None else max(prefix, mine)
            verdicts.append(_verdict(ctx, i, True, reason, prefix))
            continue
        reason = _kept_reason(ctx, i, first_kept, expired[i])
        if reason in (ABOVE_HIGH_WATERMARK, EMPTY_ACTIVE_SEGMENT, DELETE_POLICY_DISABLED,
                      AWAITING_REMOTE_COPY) or \
                own is None or (i > 0 and prefix is None):
            prefix = None
        else:
            prefix = own if prefix is None else max(prefix, own)
            if prefix > MAX_EPOCH_MS:
                prefix = None
        blocked_by = segs[first_kept].base_offset if reason == BLOCKED_BY_EARLIER_SEGMENT \
            else None
        verdicts.append(_verdict(ctx, i, False, reason, prefix, blocked_by))
    verdicts = tuple(verdicts)
    return PartitionRetention(config, now_ms, hw, high_watermark is None, lso,
                              log_start_offset is None, leo, size, verdicts,
                              tuple(_callouts(ctx, verdicts, high_watermark is None)),
                              rolled=rolled)


def _time_eligible(largest: int, retention_ms: int) -> int | None:
    """The first millisecond at which ``now - largestTimestamp > retention.ms`` holds."""
    if retention_ms < 0:
        return None
    t = largest + retention_ms + 1
    return t if t <= MAX_EPOCH_MS else None


def own_expiry(v: SegmentVerdict, retention_ms: int) -> int:
    """When the time rule alone would delete this segment (``now - largestTimestamp >
    retention.ms``), ignoring the segments before it."""
    return v.max_timestamp + retention_ms + 1


def waits_for(segments: Sequence[SegmentVerdict], i: int, retention_ms: int) -> int | None:
    """The base offset of the earlier segment whose expiry segment ``i`` waits for (retention
    deletes a prefix only), if any."""
    v = segments[i]
    if v.deletable or v.eligible_at is None or retention_ms < 0 or \
            v.eligible_at <= own_expiry(v, retention_ms):
        return v.blocked_by
    for w in segments[:i]:
        if not w.deletable and own_expiry(w, retention_ms) == v.eligible_at:
            return w.base_offset
    return v.blocked_by


@dataclass(frozen=True, slots=True)
class _Context:
    segs: Sequence[SegmentSummary]
    config: TopicConfig
    now: int
    hw: int
    lso: int
    leo: int
    upper: list[int]
    retention_ms: int
    retention_bytes: int
    size: int
    size_after_lso: int
    rolled: bool
    highest_remote_offset: int | None = None
    awaiting: frozenset[int] = frozenset()


class _Why(NamedTuple):
    """:func:`_reason_text`'s arguments, kept by a verdict until its sentence is shown."""

    ctx: _Context
    i: int
    reason: str
    blocked_by: int | None


def _kept_reason(ctx: _Context, i: int, first_kept: int, expired: bool) -> str:
    """Why a segment the passes left is kept. The first kept segment stopped the last pass;
    a later one that is past retention itself is kept only by the prefix rule."""
    n = len(ctx.segs)
    if i in ctx.awaiting:
        return AWAITING_REMOTE_COPY
    if ctx.hw < ctx.upper[i]:
        return ABOVE_HIGH_WATERMARK
    if i == n - 1 and ctx.segs[i].size == 0:
        return EMPTY_ACTIVE_SEGMENT
    if not ctx.config.delete:
        return DELETE_POLICY_DISABLED
    if i > first_kept and expired:
        return BLOCKED_BY_EARLIER_SEGMENT
    if ctx.retention_ms >= 0:
        return WITHIN_RETENTION_MS
    return WITHIN_RETENTION_BYTES if ctx.retention_bytes >= 0 else RETENTION_UNLIMITED


def _newest(s: SegmentSummary) -> str:
    if s.max_timestamp >= 0:
        return f"newest record {format_time(s.max_timestamp)}"
    return f"no record timestamps, file mtime {format_time(s.mtime_ms)}"


def _reason_text(ctx: _Context, i: int, reason: str, blocked_by: int | None) -> str:
    s = ctx.segs[i]
    age = ctx.now - s.largest_timestamp
    if reason == LOG_START_OFFSET_BREACHED:
        text = (f"next segment starts at {ctx.segs[i + 1].base_offset} <= log start offset "
                f"{ctx.lso}: all of it is below the log start offset")
    elif reason in (RETENTION_BYTES_BREACHED, LOCAL_RETENTION_BYTES_BREACHED):
        name = "local.retention.bytes" if reason == LOCAL_RETENTION_BYTES_BREACHED \
            else "retention.bytes"
        text = (f"partition holds {format_bytes(ctx.size_after_lso)} > {name} "
                f"{format_bytes(ctx.retention_bytes)}; the oldest segments go while what "
                f"remains stays at or above {name}")
    elif reason in (RETENTION_MS_BREACHED, LOCAL_RETENTION_MS_BREACHED):
        name = "local.retention.ms" if reason == LOCAL_RETENTION_MS_BREACHED else "retention.ms"
        text = (f"{_newest(s)} is {format_duration(age)} old ({age} ms) > {name} "
                f"{format_retention(ctx.retention_ms)}")
    elif reason == AWAITING_REMOTE_COPY:
        text = (f"past local retention, but not copied to remote storage yet: it ends at "
                f"offset {ctx.upper[i] - 1} > the highest offset in remote storage "
                f"{ctx.highest_remote_offset}, and Kafka deletes a local segment of a tiered "
                "topic only once it is copied (UnifiedLog.isSegmentEligibleForDeletion)")
    elif reason == WITHIN_RETENTION_MS:
        name = "local.retention.ms" if ctx.config.remote_copy_enabled else "retention.ms"
        if age < 0:
            ret = format_duration(ctx.retention_ms) if ctx.retention_ms >= 0 else "-1"
            text = (f"{_newest(s)} is {format_duration(-age)} in the FUTURE; {name} "
                    f"{ret} counts from it")
        else:
            text = (f"{_newest(s)} is {format_duration(age)} old ({age} ms) <= {name} "
                    f"{format_retention(ctx.retention_ms)}")
        if ctx.retention_bytes >= 0 and ctx.size_after_lso < ctx.retention_bytes:
            text += (f"; the partition ({format_bytes(ctx.size_after_lso)}) is below "
                     f"retention.bytes {format_bytes(ctx.retention_bytes)}")
        elif ctx.retention_bytes >= 0:
            text += (f"; deleting it as well would leave less than retention.bytes "
                     f"{format_bytes(ctx.retention_bytes)}")
    elif reason == WITHIN_RETENTION_BYTES:
        text = (f"retention.ms is -1 (infinite); deleting it would take the partition "
                f"below retention.bytes {format_bytes(ctx.retention_bytes)}")
    elif reason == RETENTION_UNLIMITED:
        text = "retention.ms and retention.bytes are both -1: time and size never delete"
    elif reason == BLOCKED_BY_EARLIER_SEGMENT:
        text = (f"past retention itself ({_newest(s)}, {format_duration(age)} old) but "
                f"segment @{blocked_by} before it is kept, and Kafka deletes only from the "
                "start of the log")
    elif reason == ABOVE_HIGH_WATERMARK:
        text = (f"ends at offset {ctx.upper[i]} > high watermark {ctx.hw}: Kafka never "
                "deletes at or past the high watermark")
    elif reason == EMPTY_ACTIVE_SEGMENT:
        text = "empty last segment: Kafka never deletes it"
    else:
        text = (f"cleanup.policy={','.join(ctx.config.cleanup_policy)}: time and size "
                "retention do not apply, only the log-start-offset rule")
    if reason in DELETABLE_REASONS and i == len(ctx.segs) - 1:
        text += (f"; active segment: Kafka first rolls a new empty segment at {ctx.leo}, "
                 "then deletes it")
    return text


def _verdict(ctx: _Context, i: int, deletable: bool, reason: str, eligible_at: int | None,
             blocked_by: int | None = None) -> SegmentVerdict:
    s = ctx.segs[i]
    return SegmentVerdict(
        base_offset=s.base_offset, last_offset=s.last_offset, size=s.size,
        record_count=s.record_count, first_timestamp=s.first_timestamp,
        max_timestamp=s.largest_timestamp, max_timestamp_source=s.max_timestamp_source,
        age_ms=ctx.now - s.largest_timestamp, is_active=i == len(ctx.segs) - 1,
        deletable=deletable, reason=reason, eligible_at=eligible_at, blocked_by=blocked_by,
        why=_Why(ctx, i, reason, blocked_by))


# --------------------------------------------------------------------------- call-outs


def _callouts(ctx: _Context, verdicts: Sequence[SegmentVerdict],
              high_watermark_assumed: bool) -> list[Callout]:
    out: list[Callout] = []
    if high_watermark_assumed:
        out.append(Callout(
            "high_watermark_assumed",
            f"no high watermark for this partition (replication-offset-checkpoint): assumed "
            f"the log end offset {ctx.leo}, i.e. every segment counts as replicated"))
    out += _future_callouts(ctx, verdicts)
    above = [v for v in verdicts if v.reason == ABOVE_HIGH_WATERMARK]
    if above:
        out.append(Callout(
            "above_high_watermark",
            f"{len(above)} segment(s) reach past the high watermark {ctx.hw} and cannot be "
            "deleted until followers catch up (UnifiedLog.deletableSegments upper bound)",
            tuple(v.base_offset for v in above)))
    if not ctx.config.delete:
        out.append(Callout(
            "delete_policy_disabled",
            f"cleanup.policy={','.join(ctx.config.cleanup_policy)}: retention.ms and "
            "retention.bytes do not delete here; only segments wholly below the log start "
            "offset go (UnifiedLog.deleteOldSegments)"))
    if ctx.rolled:
        out.append(Callout(
            "active_segment_rolled",
            f"every segment is deletable: Kafka rolls a new empty active segment at offset "
            f"{ctx.leo}, deletes all {len(verdicts)}, and the log start offset becomes "
            f"{ctx.leo} (UnifiedLog.deleteSegments)"))
    out += _quiet_active_callout(ctx, verdicts)
    mtime = [v for v in verdicts if v.max_timestamp_source == "mtime" and v.size > 0]
    if mtime:
        out.append(Callout(
            "mtime_fallback",
            f"{len(mtime)} segment(s) carry no record timestamps (magic 0 data, or an empty "
            "time index), so Kafka ages them by the .log file's mtime "
            "(LogSegment.largestTimestamp). A copy that did not preserve mtimes (cp without "
            "-p, rsync without -t) changes these verdicts.",
            tuple(v.base_offset for v in mtime)))
    if ctx.config.remote_copy_enabled and ctx.highest_remote_offset is None:
        out.append(Callout(
            "tiered_storage",
            "remote.storage.enable=true: local segments also wait until they are uploaded "
            "(highestOffsetInRemoteStorage), which needs __remote_log_metadata and none was "
            "found beside this partition; verdicts assume they are, and use local.retention.* "
            "where set"))
    elif ctx.config.remote_copy_enabled:
        waiting = [v for v in verdicts if v.reason == AWAITING_REMOTE_COPY]
        text = (f"remote.storage.enable=true: local.retention.* applies here, and only to "
                f"segments copied to remote storage: the highest offset copied is "
                f"{ctx.highest_remote_offset} (from __remote_log_metadata)")
        if waiting:
            text += (f"; segment @{waiting[0].base_offset} is past local retention but not "
                     "copied, so it and every later segment stay until the copy finishes")
        out.append(Callout("tiered_storage", text,
                           tuple(v.base_offset for v in waiting)))
    return out


def _future_callouts(ctx: _Context, verdicts: Sequence[SegmentVerdict]) -> list[Callout]:
    """One call-out for the segments whose largest timestamp is after ``now``: the first
    such segment that is kept stops time retention for itself and everything after it."""
    if not ctx.config.delete or ctx.retention_ms < 0:
        return []
    future = [v for v in verdicts if v.max_timestamp > ctx.now and not v.deletable and v.size]
    if not future:
        return []
    v = future[0]
    behind = [w for w in verdicts if w.blocked_by == v.base_offset]
    ahead = v.max_timestamp - ctx.now
    when = (f"{format_time(v.max_timestamp)}, {format_duration(ahead)} after --at"
            if v.max_timestamp <= MAX_EPOCH_MS else
            f"{v.max_timestamp}, beyond year 9999: micro- or nanoseconds written as "
            "milliseconds?")
    text = (f"segment @{v.base_offset} has a max timestamp in the FUTURE ({when}); time "
            f"retention cannot delete it before {format_time(v.eligible_at)}")
    if behind:
        text += (f", and because deletion is prefix-only it holds back {len(behind)} "
                 f"later segment(s) ({format_bytes(sum(w.size for w in behind))}) that are "
                 "already past retention")
    if len(future) > 1:
        text += f"; {len(future) - 1} later segment(s) also carry timestamps after --at"
    return [Callout("future_timestamp", text,
                    (v.base_offset, *(w.base_offset for w in behind)))]


def _quiet_active_callout(ctx: _Context, verdicts: Sequence[SegmentVerdict]) -> list[Callout]:
    """The active segment only rolls on append (``LogSegment.shouldRoll`` is called from
    ``UnifiedLog.maybeRoll``), so in a partition that receives nothing it goes as a whole."""
    v = verdicts[-1]
    s = ctx.segs[-1]
    if v.deletable or v.reason != WITHIN_RETENTION_MS or s.size == 0 or v.max_timestamp > ctx.now:
        return []
    oldest = s.first_timestamp if s.first_timestamp is not None else v.max_timestamp
    cutoff = ctx.now - ctx.retention_ms
    quiet_for = ctx.now - v.max_timestamp
    if oldest >= cutoff and quiet_for <= ctx.config.segment_ms:
        return []
    if v.eligible_at is not None:
        when = f"at {format_time(v.eligible_at)}"
    elif ctx.awaiting:  # an earlier segment waits for the remote copy, and so does this one
        when = "once the segments before it are copied to remote storage"
    else:
        when = "and no time rule takes it"
    return [Callout(
        "quiet_active_segment",
        f"the active segment @{v.base_offset} (first batch {format_time(oldest)}, newest "
        f"record {format_time(v.max_timestamp)}, {format_duration(quiet_for)} before --at) "
        f"can only go as a whole, {when}: segment.ms "
        f"({format_duration(ctx.config.segment_ms)}) is checked only when a new batch arrives, "
        "so a partition that receives nothing never rolls, and retention waits for its "
        "newest record", (v.base_offset,))]
