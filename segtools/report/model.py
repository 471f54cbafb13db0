"""The report's document: every analysis over one tree, as plain JSON-able values.

Each section comes from the function the matching command calls (``verify``, ``retention``,
``compaction``, ``transactions``, ``offsets``, ``diverge``, ``producers``, ``scan``'s version
evidence), through :mod:`segtools.api` where it has the function. Nothing is re-derived: a
verdict, a reason, a forecast step, a regression is copied from the analysis' own result.

What this module adds is *choosing*: a report must stay readable and open quickly on a tree
of tens of thousands of partitions, so it keeps every partition's summary row and every
finding count, and each partition's detail as a JSON text of its own (the page parses one only
when it is opened), within a byte budget spent on the most telling partitions first (findings,
hanging transactions, deletions, compaction); the first and last records are read for the
most telling few, which the page also lists (and prints) with their detail. Segments, findings,
chart points and rows of the other sections are bounded too, and ``left_out`` says what was
dropped and how to get it (the command that shows it all).

Every string that came from the tree (topic names, keys, values, header keys, group and
transactional ids, paths, messages quoting them) stays data: the page treats it as text. With
a :class:`~segtools.redact.Redactor`, keys, values and headers are replaced by tokens where
they are read, and topic names everywhere at the end (:func:`_scrub`).
"""

from __future__ import annotations

import itertools
import json
import math
import posixpath
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from segtools import __version__, fanout
from segtools.analysis.cluster_metadata import metadata_record, topic_configs
from segtools.analysis.explain import UNLISTED_PARTITION_WEIGHT, CompactionReport, RetentionReport
from segtools.analysis.forecast import Forecast
from segtools.analysis.kafka_versions import allows, log_dir_versions
from segtools.analysis.offsets import CONSUMER_OFFSETS_TOPIC, OffsetsReplay
from segtools.analysis.partition_input import Loaded, Summaries, metadata_logs, partition_summaries
from segtools.analysis.partition_log import fold_tables
from segtools.analysis.producers import PartitionProducers
from segtools.analysis.producers import analyse_partition as analyse_producers
from segtools.analysis.producers import analysed as producers_analysed
from segtools.analysis.tiered import TieredReport
from segtools.analysis.transactions import PartitionAnalysis, TransactionFold, TransactionsReport
from segtools.analysis.transactions import analyse_partition as analyse_transactions
from segtools.analysis.transactions import scanned as transactions_scanned
from segtools.api import LogDirs
from segtools.api import open as open_tree
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import batch_records
from segtools.decode.table import BatchTable
from segtools.errors import NothingToReadError, SegtoolsError
from segtools.fetch.plan import partition_state
from segtools.findings import Finding
from segtools.model import Record
from segtools.payloads.decoder import PayloadDecoder, payloads_installed
from segtools.payloads.records import decode_record
from segtools.payloads.schemas import RegisteredSchema, SchemaLookup, Schemas, subject_topic
from segtools.payloads.sources import RegistryClient, SchemaChain
from segtools.payloads.usage import SchemaUsage
from segtools.redact import Redactor
from segtools.report import whatif
from segtools.sensitive import without_credentials
from segtools.storage.location import as_path
from segtools.storage.logdirs import LogDir, PartitionRef, list_partition, packed, unpacked
from segtools.storage.partition import (
    CLUSTER_METADATA_TOPIC,
    PartitionDir,
    PartitionState,
    SegmentFiles,
    parse_partition_dir_name,
)
from segtools.storage.segment import Segment
from segtools.storage.summary import KeptRead
from segtools.text import INVISIBLE, distinct_names, mark_invisible, shown_path
from segtools.units import format_time

SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1}
DETAILS_LEFT_OUT = ("partitions with a summary row only (the detail budget went to the most "
                    "telling)")
SAMPLES_LEFT_OUT = ("partitions whose first and last records were not read (the most telling, "
                    "listed under Partition details, have them; segtools dump reads any)")
#: Counted per group and summed: groups commit offsets for topic-partitions of the whole
#: cluster, so this is no count of the partitions in the tree.
GROUP_LINES_LEFT_OUT = ("committed topic-partitions not drawn on group charts (summed over "
                        "groups; each chart draws {series}, those with regressions first; "
                        "groups commit for the whole cluster, not only these log dirs)")


@dataclass(frozen=True, slots=True)
class Budget:
    """How much the report shows before it summarises (each cut is noted in ``left_out``)."""

    listed_partitions: int = 150  # listed with their detail and records (and on paper)
    detail_bytes: int = 48 << 20  # JSON of per-partition detail; past it a summary row only
    segments: int = 40  # segment rows per partition (first and last halves)
    findings: int = 3000  # finding rows (counts per code are always complete)
    transactions: int = 40  # per partition, open ones first
    producers: int = 20  # per partition
    groups: int = 40  # consumer groups with a timeline
    series: int = 8  # lines per chart
    points: int = 300  # points per line (regressions always kept)
    samples: int = 3  # first and last records shown per partition
    preview: int = 120  # characters of a key, value or header shown
    rows: int = 200  # rows of the other sections (tiered, replicas, hanging, skipped, ...)
    forecast_days: float = 14.0


@dataclass
class ReportModel:
    """The document (``data``), each partition's detail as a JSON text (by the row's ``id``;
    None for a summary row only), the findings as found (for the exit code), and the log dirs
    read (the output must not land inside one).

    A row's ``detail`` says whether it has one; the texts stay apart from ``data`` so the page
    carries them as one inert string and parses a partition's only when it is opened."""

    data: dict
    findings: list[Finding]
    log_dirs: list[LogDir] = field(default_factory=list)
    details: list[str | None] = field(default_factory=list)

    def detail(self, row_id: int) -> dict | None:
        """One partition's detail as a value (what the page shows when it is opened)."""
        text = self.details[row_id] if row_id < len(self.details) else None
        return None if text is None else json.loads(text)


# --------------------------------------------------------------------------- small helpers


def preview(data: bytes | None, limit: int) -> str | None:
    """Bytes as text for a person: UTF-8 where it is, ``\\xNN`` where it is not, cut at
    ``limit`` characters (the page shows it as text, whatever it holds)."""
    if data is None:
        return None
    text = data[: limit * 4].decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else text[:limit] + "…"


def _where(path: str) -> tuple[str | None, int | None]:
    """The topic and partition a path belongs to (its deepest partition-directory part)."""
    for part in reversed(as_path(path).parts):
        name = parse_partition_dir_name(part)
        if name is not None:
            return name.topic, name.partition
    return None, None


def _partition_dir(path: str) -> str | None:
    """The partition directory a finding's path is in (copies of one partition in several
    log dirs are told apart)."""
    where = as_path(path)
    for up in (where, *where.parents):
        if parse_partition_dir_name(up.name) is not None:
            return str(up)
    return None


def _partition_dirs():
    """:func:`_partition_dir`, each directory looked up once (a tree's findings are many
    files of few directories)."""
    memo: dict[str, str | None] = {}

    def of(path: str) -> str | None:
        if path not in memo:
            parent, name = posixpath.split(path)
            parent = parent or "."
            if parse_partition_dir_name(name) is not None:
                memo[path] = str(as_path(path))
            else:
                if parent not in memo:
                    memo[parent] = _partition_dir(parent)
                memo[path] = memo[parent]
        return memo[path]

    return of


def _places() -> Callable[[str], tuple[str | None, int | None]]:
    """:func:`_where`, each directory looked up once (the finding rows are thousands of
    files of a few hundred directories, and parsing each whole path was most of their
    cost)."""
    memo: dict[str, tuple[str | None, int | None]] = {}

    def of(path: str) -> tuple[str | None, int | None]:
        if path not in memo:
            parent, name = posixpath.split(path)
            parsed = parse_partition_dir_name(name)
            if parsed is not None:
                memo[path] = parsed.topic, parsed.partition
            else:
                parent = parent or "."
                if parent not in memo:
                    memo[parent] = _where(parent)
                memo[path] = memo[parent]
        return memo[path]

    return of


def _finding(f: Finding, source: str,
             where: Callable[[str], tuple[str | None, int | None]] = _where) -> dict:
    topic, partition = where(f.path)
    return {"severity": str(f.severity), "code": f.code, "topic": topic,
            "partition": partition, "offset": f.offset, "position": f.position,
            "message": f.message, "path": shown_path(f.path), "source": source}


def _key(f: Finding) -> tuple:
    return (f.code, f.path, f.position, f.offset, f.message)


def _identity(f: Finding) -> tuple:
    return (f.code, f.path, f.position, f.offset)


def _dedupe(sources: Iterable[tuple[str, Iterable[Finding]]]
            ) -> tuple[list[tuple[str, Finding]], Counter]:
    """Every finding once, with the command that reports it, and how many were shown once
    although two analyses raised them.

    The same finding can come from two analyses: the same text twice (verify and transactions
    both read a partition's snapshots), or the same code on the same spot worded by each
    (``snapshot_producer_missing``: ``segtools transactions`` and ``segtools producers`` each
    compare the latest ``.snapshot`` with the producers the log shows). A person reads both
    as one fact, so across analyses a finding is kept once by its identity (code, file,
    position, offset), first source first; within one analysis nothing is merged."""
    kept: dict[tuple, tuple[str, Finding]] = {}
    by_identity: dict[tuple, str] = {}
    merged: Counter = Counter()
    for source, findings in sources:
        for f in findings:
            if _key(f) in kept:
                continue
            first = by_identity.setdefault(_identity(f), source)
            if first != source:
                merged[f"{f.code} (from {first} and {source})"] += 1
                continue
            kept[_key(f)] = (source, f)
    return list(kept.values()), merged


def _thin(points: list, limit: int, keep: set[int] | None = None) -> list:
    """At most ``limit`` points, evenly spaced, always keeping the first, the last and the
    indexes in ``keep`` (a chart of a million commits is a line, not a million dots)."""
    if len(points) <= limit:
        return points
    step = len(points) / limit
    chosen = {int(i * step) for i in range(limit)} | {len(points) - 1} | (keep or set())
    return [points[i] for i in sorted(chosen)]


def _seconds(ms: int) -> float:
    return ms / 1000.0


def finite(value):
    """NaN and infinities have no JSON spelling: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_text(value) -> str:
    """``value`` as compact ASCII JSON (the page escapes it further for a script element).
    A non-finite float would be written as a bare ``NaN`` or ``Infinity``: only a text that
    holds either word anywhere is made again with them as null. Likewise a text holding an
    invisible character (a bidi override, a zero-width space: :data:`segtools.text.INVISIBLE`)
    is made again with each shown as ``\\uXXXX`` text: the page sets it as ``textContent``,
    where it would still reorder or hide what a reader sees."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    if _INVISIBLE_ESCAPED.search(text) is not None:
        value = _marked(value)
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    if "NaN" in text or "Infinity" in text:
        text = json.dumps(finite(value), ensure_ascii=True, separators=(",", ":"),
                          allow_nan=False)
    return text


#: How :func:`json.dumps` writes the invisible characters (ASCII JSON escapes), as one
#: pattern: one pass over a detail's text, where a ``in`` test per character made 17 (a
#: tenth of a millisecond per detail; a thousand details per report).
_INVISIBLE_ESCAPED = re.compile("|".join(re.escape(f"\\u{c:04x}") for c in INVISIBLE))


def _marked(value):
    """Every string of a document (keys too) with its invisible characters marked."""
    if isinstance(value, str):
        return mark_invisible(value)
    if isinstance(value, dict):
        return {mark_invisible(k) if isinstance(k, str) else k: _marked(v)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_marked(v) for v in value]
    return value


# --------------------------------------------------------------------------- charts


def forecast_chart(series: Sequence[tuple[str, Forecast]]) -> dict:
    """Aligned step series (uPlot's data shape: one x array, one y array per series) of bytes
    on disk over the forecast window; each x carries what was deleted there. The first point
    is the size just before the evaluation time, so what goes at once shows as a drop."""
    start = min(fc.start_ms for _, fc in series)
    xs = sorted({start - 1} | {fc.end_ms for _, fc in series}
                | {s.at_ms for _, fc in series for s in fc.steps})
    events: dict[int, list[str]] = defaultdict(list)
    for label, fc in series:
        for s in fc.steps:
            names = ", ".join(f"@{b}" for b in s.removed[:6])
            more = f" +{len(s.removed) - 6}" if len(s.removed) > 6 else ""
            events[s.at_ms].append(f"{s.label or label}: {names}{more} "
                                   f"(-{s.removed_bytes} B)")
    return {"x": [_seconds(x) for x in xs],
            "series": [{"label": label, "y": [fc.size_at(x) if x >= fc.start_ms
                                              else fc.start_size for x in xs]}
                       for label, fc in series],
            "events": [events.get(x, []) for x in xs]}


# --------------------------------------------------------------------------- records


def _records(files: SegmentFiles, *, first: bool, last: bool, n: int, limit: int
             ) -> tuple[list[Record], list[Record]]:
    """The first and the last ``n`` data records of one segment (each when asked for), from
    one opening and one shallow walk of it: only the batches that hold them are decoded (a
    partition of one segment, the common case on a broker's tree, asks for both)."""
    head: list[Record] = []
    tail: list[Record] = []
    with Segment.open(files, decompress_limit=limit) as seg:
        final = None
        for walked in seg.walk(verify_crc=False):
            data = walked.table.take(~walked.table.is_control)
            if not len(data):
                continue
            if first and final is None:
                head = _end_records(seg, data.take(slice(0, n)), n, from_end=False)
                if not last:
                    break
            final = data
        if last and final is not None:
            tail = _end_records(seg, final.take(slice(max(0, len(final) - n), None)), n,
                                from_end=True)
    return head[:n], tail[-n:] if n else []


def _end_records(seg: Segment, picked: BatchTable, n: int, *, from_end: bool) -> list[Record]:
    """The records of ``picked`` (a segment's first or last ``n`` data batches), enough of
    them for ``n`` records at its start (or end): the batches are decoded from that end as
    far as their record counts reach ``n`` (one batch of a producer's 16 KiB holds dozens;
    decoding the others cost as much again, each a decompression), all of them when those
    held fewer records than they declared (a damaged batch decodes to none)."""
    counts = picked.record_count.tolist()
    reach = itertools.accumulate(reversed(counts) if from_end else counts)
    k = next((i + 1 for i, held in enumerate(reach) if held >= n), len(picked))
    out = _batch_records(seg, picked.take(slice(len(picked) - k, None) if from_end
                                          else slice(0, k)))
    return out if len(out) >= n or k == len(picked) else _batch_records(seg, picked)


def _batch_records(seg: Segment, table: BatchTable) -> list[Record]:
    return [r for br in batch_records(seg.records(table)) for r in br.records]


def _record(r: Record, redactor: Redactor | None, budget: Budget,
            decoder: PayloadDecoder | None = None, topic: str | None = None, *,
            metadata: bool = False) -> dict:
    """One sample record as shown; a ``__cluster_metadata`` record with its sensitive config
    or SCRAM credential hidden (:func:`segtools.sensitive.metadata_value`), whatever the
    redaction asked; with ``decoder``, its key and value decoded beside the bytes."""
    if metadata:
        r = metadata_record(r)
    shown = redactor.record(r, topic) if redactor is not None else r
    out = {"offset": r.offset, "timestamp": r.timestamp,
           "key": preview(shown.key, budget.preview), "value": preview(shown.value, budget.preview),
           "headers": [[k, preview(v, budget.preview)] for k, v in shown.headers[:8]]}
    if decoder is not None:
        decoded = decode_record(decoder, r.key, r.value, topic)
        for side in ("key", "value"):
            found = decoded.sides[side]
            # a redacted side shows its token, never what it decodes to
            if found is not None and getattr(shown, side) == getattr(r, side):
                out[f"{side}_decoded"] = preview(found.json_text().encode(), budget.preview)
                out[f"{side}_schema"] = found.schema.to_json()
        for side, error in decoded.errors:
            out[f"{side}_payload_error"] = error.code
    return out


def samples(pdir: PartitionDir, redactor: Redactor | None, budget: Budget,
            limit: int, decoder: PayloadDecoder | None = None) -> dict:
    """The first and the last few records of a partition: what it holds, at a glance (decoded
    when the tree holds the schemas its payloads name)."""
    segs = [s for s in pdir.segments if s.log_size]
    if not segs:
        return {"first": [], "last": []}
    try:
        if len(segs) == 1:
            first, last = _records(segs[0], first=True, last=True, n=budget.samples,
                                   limit=limit)
        else:
            first, _ = _records(segs[0], first=True, last=False, n=budget.samples, limit=limit)
            _, last = _records(segs[-1], first=False, last=True, n=budget.samples, limit=limit)
    except SegtoolsError:  # the reads met damage: verify's findings already say where
        return {"first": [], "last": []}
    if len(segs) == 1:
        seen = {r.offset for r in first}
        last = [r for r in last if r.offset not in seen]
    metadata = pdir.name is not None and pdir.name.topic == CLUSTER_METADATA_TOPIC
    topic = pdir.name.topic if pdir.name is not None else None
    return {"first": [_record(r, redactor, budget, decoder, topic, metadata=metadata)
                      for r in first],
            "last": [_record(r, redactor, budget, decoder, topic, metadata=metadata)
                     for r in last]}


# --------------------------------------------------------------------------- sections


def _summary(logs: LogDirs, inputs, rows: list[dict]) -> dict:
    summaries = [s for pi in inputs.partitions for s in pi.summaries]
    magics = sorted({m for s in summaries for m in s.magics})
    codecs = sorted({c for s in summaries for c in s.codecs})
    stamps = [s.first_timestamp for s in summaries if s.first_timestamp is not None
              and s.first_timestamp >= 0]
    newest = [s.max_timestamp for s in summaries if s.max_timestamp >= 0]
    by_dir: dict[str, list] = defaultdict(list)
    for pi in inputs.partitions:
        by_dir[str(pi.log_dir.path)] += pi.summaries
    log_dirs = []
    for d in logs.log_dirs:
        vr = log_dir_versions(d, by_dir.get(str(d.path), ()))
        kraft = (d.meta is not None and d.meta.version == 1) or any(
            p.name is not None and p.name.is_metadata_log for p in d.partitions)
        mode = "KRaft" if kraft else ("ZooKeeper" if d.meta is not None else "unknown")
        log_dirs.append({
            "path": shown_path(d.path), "node_id": d.meta.node_id if d.meta else None,
            "cluster_id": d.meta.cluster_id if d.meta else None, "mode": mode,
            "clean_shutdown": d.clean_shutdown is not None,
            "partitions": len(d.partitions), "kafka_versions": vr.label,
            "versions_consistent": vr.consistent,
            "evidence": [{"rule": e.rule.name, "allows": allows(e.rule),
                          "source": e.rule.source, "where": shown_path(e.where)}
                         for e in vr.evidence]})
    features = []
    if magics:
        features.append("record formats: " + ", ".join(f"v{m}" for m in magics))
    if codecs:
        features.append("codecs: " + ", ".join(codecs))
    if any(s.transactional_batches for s in summaries):
        features.append("transactions")
    if any(s.producer_id_count for s in summaries):
        features.append("idempotent producers")
    modes = sorted({d["mode"] for d in log_dirs} - {"unknown"})
    features += modes
    states = Counter(r["state"] for r in rows)
    return {"log_dirs": log_dirs, "topics": len({r["topic"] for r in rows}),
            "partitions": len(rows), "partition_states": dict(sorted(states.items())),
            "segments": sum(r["segments"] for r in rows),
            "bytes": sum(r["size"] for r in rows),
            "records": sum(r["records"] or 0 for r in rows),
            "first_timestamp": min(stamps) if stamps else None,
            "last_timestamp": max(newest) if newest else None,
            "features": features, "magics": magics, "codecs": codecs}


def _segments(pi, retention, budget: Budget, left_out: Counter) -> list[dict]:
    verdicts = {v.base_offset: v for v in retention.segments} if retention else {}
    rows = []
    for s in pi.summaries:
        row = {"base_offset": s.base_offset, "last_offset": s.last_offset, "size": s.size,
               "batches": s.batch_count, "records": s.record_count,
               "first_timestamp": s.first_timestamp, "max_timestamp": s.max_timestamp,
               "max_timestamp_source": s.max_timestamp_source, "codecs": list(s.codecs),
               "magics": list(s.magics), "active": s.is_active, "crc_errors": s.crc_errors}
        v = verdicts.get(s.base_offset)
        if v is not None:
            row.update(deletable=v.deletable, reason=v.reason, reason_text=v.reason_text,
                       eligible_at=v.eligible_at, age_ms=v.age_ms,
                       stale=v.stale.to_json() if v.stale else None)
        rows.append(row)
    if len(rows) > budget.segments:
        half = budget.segments // 2
        left_out["segment rows left out of long segment tables (first and last kept)"] += \
            len(rows) - 2 * half
        rows = [*rows[:half], {"gap": len(rows) - 2 * half}, *rows[-half:]]
    return rows


def _retention(e) -> dict:
    pr = e.retention
    c = pr.config
    out = {"config": {name: {"value": c.value(name), "source": c.source(name).source}
                      for name in ("cleanup.policy", "retention.ms", "retention.bytes",
                                   "segment.bytes")},
           "high_watermark": pr.high_watermark, "high_watermark_assumed":
               pr.high_watermark_assumed, "log_start_offset": pr.log_start_offset,
           "log_end_offset": pr.log_end_offset, "size": pr.size,
           "deletable_bytes": pr.deletable_bytes,
           "deletable_segments": len(pr.deletable_segments),
           "callouts": [c.to_json() for c in pr.callouts], "chart": None}
    if e.forecast is not None:
        out["chart"] = forecast_chart([(e.input.label, e.forecast)])
        out["forecast_end"] = e.forecast.end_ms
        out["forecast_end_size"] = e.forecast.end_size
    return out


def _tiered(tp) -> dict:
    """One tiered partition's two tiers in a line (``segtools tiered`` has the segments)."""
    doc = tp.to_json()
    local, remote = doc["local"], doc["remote_segments"]
    states = Counter(s["state"] for s in remote)
    return {"topic": tp.topic, "partition": tp.partition,
            "local_start_offset": local["local_log_start_offset"] if local else None,
            "log_end_offset": local["log_end_offset"] if local else None,
            "local_size": local["size"] if local else None,
            "highest_offset_in_remote_storage": doc["highest_offset_in_remote_storage"],
            "remote_size": doc["remote_size"],
            "remote_states": [{"state": k, "count": v} for k, v in sorted(states.items())],
            "remote_deletable": sum(1 for s in remote if s.get("deletable")),
            "partition_delete": (doc["partition_delete"] or {}).get("state"),
            "findings": [f.code for f in tp.findings]}


def _compaction(explained, redactor: Redactor | None, budget: Budget) -> dict:
    """A partition's cleaner replay; its policy is the partition's own (what retention
    shows), with the sentence saying the cleaner never runs when it was replayed only
    because the partition was named."""
    def key(b: bytes | None) -> str | None:
        return preview(redactor.key(b) if redactor is not None else b, budget.preview)

    pc = explained.compaction
    return {
        "policy": list(explained.input.config.cleanup_policy),
        "not_compacted": explained.not_compacted, "dirty_ratio": round(pc.dirty_ratio, 4),
        "min_cleanable_dirty_ratio": pc.config.min_cleanable_dirty_ratio,
        "would_clean": pc.would_clean, "would_clean_text": pc.would_clean_text,
        "clean_bytes": pc.clean_bytes, "cleanable_bytes": pc.cleanable_bytes,
        "first_dirty_offset": pc.first_dirty_offset,
        "first_dirty_source": pc.first_dirty_source,
        "first_uncleanable_offset": pc.first_uncleanable_offset,
        "first_uncleanable_reason": pc.first_uncleanable_reason,
        "records": pc.records, "keyed_records": pc.keyed_records,
        "null_key_records": pc.null_key_records, "distinct_keys": pc.distinct_keys,
        "superseded_records": pc.superseded_records,
        "superseded_bytes": round(pc.superseded_bytes),
        "top_keys": [{"key": key(k.key), "versions": k.versions, "first_offset":
                      k.first_offset, "last_offset": k.last_offset, "segments": k.segments,
                      "latest_is_tombstone": k.latest_is_tombstone} for k in pc.top_keys],
        "tombstones": pc.tombstone_count,
        "oldest_tombstone": pc.oldest_tombstone_timestamp,
        "tombstones_listed": [{"offset": t.offset, "key": key(t.key),
                               "timestamp": t.timestamp, "fate": t.fate,
                               "fate_text": t.fate_text} for t in pc.tombstones],
        "open_transactions": pc.open_transactions,
        "removed_records": pc.removed_records, "removed_bytes": round(pc.removed_bytes),
        "horizons_stamped": pc.horizons_stamped, "notes": list(pc.notes)}


def _transactions(pt, budget: Budget, left_out: Counter) -> dict:
    scan = pt.scan
    txns = sorted(scan.transactions, key=lambda t: (t.marker is not None,
                                                    t.first_offset or 0))
    if len(txns) > budget.transactions:
        left_out["transactions not listed (open ones first)"] += len(txns) - budget.transactions
    return {"log_start_offset": scan.log_start_offset, "log_end_offset": scan.log_end_offset,
            "last_stable_offset": scan.last_stable_offset, "total": len(scan.transactions),
            "committed": sum(t.marker == "COMMIT" for t in scan.transactions),
            "aborted": sum(t.marker == "ABORT" for t in scan.transactions),
            "open": sum(t.marker is None for t in scan.transactions),
            "hanging": [{**h.to_json(), "partition": shown_path(h.partition)}
                        for h in pt.hanging],
            "transactions": [t.to_json() for t in txns[:budget.transactions]]}


def _producers(pp, budget: Budget, left_out: Counter) -> dict:
    groups = sorted(pp.producers.values(), key=lambda g: -g.batches)
    if len(groups) > budget.producers:
        left_out["producers not listed (busiest first)"] += len(groups) - budget.producers
    # the per-second rate histogram is for `segtools producers --format json`: the page
    # does not draw it, and it is most of a busy producer's bytes
    return {"producers": [g.to_json(rate=False) for g in groups[:budget.producers]],
            "events": [e.to_json() for e in pp.events if e.kind != "wrap"][:budget.producers]}


def _groups(replay: OffsetsReplay, budget: Budget, left_out: Counter) -> list[dict]:
    """Per group: its state, and a timeline of committed offsets per topic-partition with
    the regressions the replay found marked on it."""
    regressions: dict[tuple, list] = defaultdict(list)
    for r in replay.regressions:
        c = r.current
        regressions[(c.group, c.topic, c.partition)].append(r)
    commits: dict[str, dict[tuple[str, int], list]] = defaultdict(lambda: defaultdict(list))
    for c in replay.commits:
        if c.offset is not None and c.status == "applied":
            commits[c.group][(c.topic, c.partition)].append(c)
    ranked = sorted(replay.groups.values(),
                    key=lambda g: (-sum(len(v) for k, v in regressions.items()
                                        if k[0] == g.group), g.group))
    if len(ranked) > budget.groups:
        left_out["consumer groups without a timeline"] += len(ranked) - budget.groups
    out = []
    for g in ranked[:budget.groups]:
        tps = sorted(commits[g.group], key=lambda tp: (
            -len(regressions.get((g.group, *tp), ())), tp))
        if len(tps) > budget.series:
            left_out[GROUP_LINES_LEFT_OUT.format(series=budget.series)] += \
                len(tps) - budget.series
        lines = []
        for tp in tps[:budget.series]:
            seq = commits[g.group][tp]
            # a regression names the commit record that went backwards (where it is in the log)
            at = {r.current.where for r in regressions.get((g.group, *tp), ())}
            marked = {i for i, c in enumerate(seq) if c.where in at}
            kept = _thin(list(enumerate(seq)), budget.points, marked)
            if len(kept) < len(seq):
                left_out["offset commits thinned from timelines (regressions kept)"] += \
                    len(seq) - len(kept)
            lines.append({"topic": tp[0], "partition": tp[1], "points": [
                [_seconds(c.effective_timestamp), c.offset, c.where.partition, c.where.offset,
                 i in marked] for i, c in kept]})
        out.append({"group": g.group, "kind": g.kind, "state": g.state,
                    "generation": g.generation, "log_partition": g.log_partition,
                    "members": len(g.members) + len(g.members848), "offsets": len(g.offsets),
                    "lines": lines,
                    "regressions": [r.to_json() for r in replay.regressions
                                    if r.current.group == g.group][:budget.points],
                    "deletions": sum(d.group == g.group for d in replay.deletions)})
    return out


# --------------------------------------------------------------------------- assembly


def _interest(row: dict) -> tuple:
    return (-row["worst"], -(row["hanging"] or 0), -(1 if row["deletable_bytes"] else 0),
            -(1 if row["compacted"] else 0), -(1 if row["transactions"] else 0), -row["size"])


@dataclass(frozen=True, slots=True)
class _Analyses:
    """Every analysis of the tree, run once through the API, and their findings together."""

    inputs: Loaded
    retention: RetentionReport
    compaction: CompactionReport
    txns: TransactionsReport
    replay: OffsetsReplay | None
    replicas: list
    producers: list[ProducersSeen]
    tiers: TieredReport
    sourced: list[tuple[str, Finding]]  # every finding once, with the command that reports it
    merged: Counter  # findings two analyses raised, shown once

    @classmethod
    def run(cls, logs: LogDirs, *, at: int | None, now: int, config: str | None,
            budget: Budget, schema_findings: Sequence[Finding] = ()) -> _Analyses:
        # the analyses that read every partition's own files run in forked workers, one
        # read of each small segment for verify, the inputs' summaries, the producers and
        # the transactions (:func:`_read_partitions`); what needs no summary runs here
        # meanwhile. A tree found but not listed (``logs.unlisted``) is listed by the
        # workers, each its share, but for the few partitions the steps run here meanwhile
        # read (:func:`_needed_here`), listed first
        unlisted = logs.unlisted
        if unlisted:
            here = {str(r.path): list_partition(d, r) for d, r in _needed_here(unlisted)}
            logs.take_listing(here)
            pdirs = [(d, here.get(str(r.path), r)) for d, refs in unlisted for r in refs]
            segments = sum(len(p.segments) if isinstance(p, PartitionDir)
                           else UNLISTED_PARTITION_WEIGHT for _, p in pdirs)
        else:
            here = {}
            pdirs = logs.verified()
            segments = sum(len(p.segments) for d in logs.log_dirs for p in d.partitions)
        jobs = _beside_jobs(pdirs)
        # a listing crosses back from a worker packed (:func:`segtools.storage.logdirs.packed`)
        pack = fanout.planned(len(jobs), segments=segments) > 1
        beside = fanout.ordered(partial(_beside, logs, budget, now, pack), jobs,
                                segments=segments)
        # the group timelines need every commit: the replay keeps its history only when asked
        replay = (logs.offsets_at(history=True) if CONSUMER_OFFSETS_TOPIC in logs.topics
                  else None)
        replicas = logs.diverge()
        tree_files = next(beside)
        parts = []  # in the jobs' order
        listing = dict(here)
        for part in beside:  # each listing unpacked as it comes, while the workers read on
            parts.append(part)
            listing.update((str(p.path), p) for p in part.listing())
        if unlisted:  # every later step reads the whole listing
            logs.take_listing(listing)
        verified = [*tree_files, *(f for part in parts for found in part.verified
                                   for f in found)]
        inputs = logs.inputs(at=at, config=config, made={
            path: made for part in parts for path, made in part.summaries.items()})
        retention = logs.explain_retention(at=now, inputs=inputs,
                                           forecast_days=budget.forecast_days)
        compaction = logs.explain_compaction(at=now, inputs=inputs)
        tiers = logs.tiered(at=now, inputs=inputs)
        producers = [pp for part in parts for pp in part.producers]
        txns = logs.transactions(now=now, analysed={path: result for part in parts
                                           for path, result in part.analysed.items()})
        sourced, merged = _dedupe([
            ("segtools verify", verified),
            ("the topic config (segtools retention, compaction)", inputs.findings),
            ("segtools transactions", txns.findings),
            ("segtools offsets", replay.findings if replay else ()),
            ("segtools diverge", (f for rs in replicas
                                  for f in (*rs.read_findings, *rs.divergence.findings))),
            ("segtools producers", (f for pp in producers for f in pp.findings)),
            ("segtools tiered", tiers.all_findings),
            ("the schemas named (segtools dump --decode --schemas)", schema_findings)])
        return cls(inputs, retention, compaction, txns, replay, replicas, producers, tiers,
                   sourced, merged)

    @property
    def findings(self) -> list[Finding]:
        return [f for _, f in self.sourced]


#: The partitions' walk is cut in this many jobs (it is the longest), so that the workers
#: share the work evenly: at 10,000 partitions a job of 16 took 0.4-1.6 s of CPU (the
#: topics' shapes differ), and the worker that drew the last long one ran on alone.
PARTITION_JOBS = 64


def _needed_here(unlisted: Sequence[tuple[LogDir, Sequence[PartitionRef]]]
                 ) -> list[tuple[LogDir, PartitionRef]]:
    """The partitions of a tree not listed yet that the steps run beside the workers read:
    ``__consumer_offsets`` (every state: the replay runs when the topic is there at all)
    and the live partitions two log dirs or more hold a copy of (``diverge`` compares
    them). A broker's tree holds few of either."""
    def copy(r: PartitionRef) -> str | None:
        live = r.name is not None and r.name.state is PartitionState.LIVE
        return f"{r.name.topic}-{r.name.partition}" if live else None

    held = Counter(copy(r) for _, refs in unlisted for r in refs)
    return [(d, r) for d, refs in unlisted for r in refs if r.name is not None and (
        r.name.topic == CONSUMER_OFFSETS_TOPIC or (copy(r) is not None and held[copy(r)] > 1))]


def _beside_jobs(pdirs: Sequence[tuple[LogDir, PartitionDir | PartitionRef]]) -> list[tuple]:
    """verify's tree-level files, then each part of the partitions ``verify`` reads (every
    state, in its order; those not listed yet as found), as jobs for :func:`_beside` (a
    worker that is done takes the next)."""
    step = max(1, -(-len(pdirs) // PARTITION_JOBS))
    return [("tree",), *(("partitions", pdirs[i:i + step])
                         for i in range(0, len(pdirs), step))]


def _beside(logs: LogDirs, budget: Budget, now: int, pack: bool, job: tuple):
    """One job of :func:`_beside_jobs` (:func:`segtools.fanout.ordered` may run it in a
    forked worker: ``logs`` reaches it through the fork, the result comes back pickled;
    ``pack``: the partitions it lists come back packed)."""
    if job[0] == "tree":
        return logs.verify_tree_files()
    return _read_partitions(logs, job[1], budget, now, pack=pack)


@dataclass(frozen=True, slots=True)
class ProducersSeen:
    """What the page shows of one partition's producers analysis, made where it ran: its
    findings, and its part of the partition's detail with what that part leaves out (the
    analysis's histograms stay behind)."""

    path: str
    findings: tuple[Finding, ...]
    detail: dict | None  # None: no producer batches
    cut: Counter


def _seen(pp: PartitionProducers, budget: Budget) -> ProducersSeen:
    cut: Counter = Counter()
    return ProducersSeen(pp.path, tuple(pp.findings),
                         _producers(pp, budget, cut) if pp.producers else None, cut)


@dataclass(frozen=True, slots=True)
class _PartsRead:
    """What a job of :func:`_read_partitions` hands back: per partition directory (in
    ``verify``'s order) its verify findings; the inputs' summaries of those ``load_inputs``
    summarises (by path); the producers seen and the transactions analysed."""

    verified: list[list[Finding]]
    summaries: dict[str, Summaries]
    producers: list[ProducersSeen]
    analysed: dict[str, PartitionAnalysis]
    #: the partition directories the job listed, in its order (packed when it ran in a
    #: worker: :func:`segtools.storage.logdirs.packed`)
    listed: Sequence[PartitionDir] | bytes = ()

    def listing(self) -> list[PartitionDir]:
        """The partition directories the job listed."""
        return unpacked(self.listed) if isinstance(self.listed, bytes) else list(self.listed)


def _read_partitions(logs: LogDirs, pdirs: Sequence[tuple[LogDir, PartitionDir | PartitionRef]],
                     budget: Budget, now: int, *, pack: bool) -> _PartsRead:
    """``verify`` of each partition, its summaries for the inputs, and its producers (as
    ``segtools producers``) and transactions (as ``segtools transactions``, with its
    defaults) from one reading of each small segment: what ``verify``'s compiled reading
    read (:class:`~segtools.storage.summary.KeptRead`) is summarised and walked as it is; a
    segment it did not take is read by each as before. A transactions scan comes back
    without its partition's listing, which the caller has (pickling it again would cost
    more than the scan). A partition not listed yet is listed first
    (:func:`~segtools.storage.logdirs.list_partition`), and comes back listed."""
    limit = logs.max_decompressed_bytes
    summaries: dict[str, Summaries] = {}
    found, analysed = [], {}
    verified = []
    listed: list[PartitionDir] = []
    kept: dict[str, KeptRead] = {}  # one partition's, at a time

    def keep(files: SegmentFiles, read: KeptRead) -> None:
        kept[str(files.log)] = read

    for log_dir, pdir in pdirs:
        if isinstance(pdir, PartitionRef):
            pdir = list_partition(log_dir, pdir)
            listed.append(pdir)
        kept.clear()
        verified += logs.verify_partitions([(log_dir, pdir)], keep=keep)
        made = partition_summaries(pdir, limit=limit, kept=kept)
        if made is not None:
            summaries[str(pdir.path)] = made
        if partition_state(pdir) != PartitionState.LIVE:  # as ``logs.partitions()`` selects
            continue
        held = {path: read.data for path, read in kept.items()}
        # one producer-state fold for both analyses: the producers read the transactions
        # scan's (``analyse_producers``' ``state``); no rate over time (the page draws none)
        fold = TransactionFold(pdir) if transactions_scanned(pdir) else None
        if producers_analysed(pdir):
            found.append(_seen(analyse_producers(pdir, limit=limit, state=fold, held=held,
                                                 rates=False), budget))
        elif fold is not None:
            fold_tables(pdir, [fold], limit=limit, held=held)
        if fold is not None:
            scan, hanging, txn_findings = analyse_transactions(pdir, limit=limit, now=now,
                                                               scan=fold.scan())
            analysed[str(pdir.path)] = (replace(scan, partition=None), hanging, txn_findings)
    return _PartsRead(verified, summaries, found, analysed,
                      packed(listed) if pack else listed)


def build(paths: Sequence[str], *, at: int | None = None, config: str | None = None,
          redactor: Redactor | None = None, budget: Budget = Budget(),
          limit: int = DEFAULT_DECOMPRESS_LIMIT, what_if: whatif.Ask | None = None,
          logs: LogDirs | None = None,
          custody: Callable[[], list[dict]] | None = None,
          decoder: PayloadDecoder | None = None,
          schema_findings: Sequence[Finding] = ()) -> ReportModel:
    """Run every analysis over ``paths`` and assemble the report's document (with the
    what-if section when ``what_if`` asks for it); ``logs``: the tree already opened over
    ``paths`` (the command opens it once, to check its output); ``custody``: the chain of
    custody of every file read (``--hashes``), asked for once the analyses have read them.
    ``decoder``: the samples' decoder and the schema section's sources, as ``dump --decode``
    builds it from ``--decode``, ``--schemas`` and ``--schema-registry`` (in Python:
    ``logs.payload_decoder(decode, schemas, registry)``), with ``schema_findings`` what
    reading those schemas met; without one, the samples decode with the tree's own
    ``_schemas`` topic when it holds one (a report never needs the payloads extra).
    Redaction is one pass over the finished document, custody included."""
    now = at if at is not None else int(time.time() * 1000)
    if logs is None:
        logs = open_tree(*paths, max_decompressed_bytes=limit, listed=False)
    if not any(d.partitions for d in logs.log_dirs) and \
            not any(refs for _, refs in logs.unlisted):
        raise NothingToReadError.of(logs.findings, paths)
    left_out: Counter = Counter()
    a = _Analyses.run(logs, at=at, now=now, config=config, budget=budget,
                      schema_findings=schema_findings)
    if redactor is not None:
        redactor.learn(_topics_named(logs, a))
    rows, pdirs = _partition_rows(logs, a)
    sources = _schema_sources(logs, decoder)
    if decoder is None and sources.histories() and payloads_installed():
        decoder = PayloadDecoder(sources)
    # the details past the listed ones are made by workers while the rest is assembled
    details = _Details.start(rows, pdirs, a, redactor, budget, limit, decoder)
    try:
        data = _document(logs, paths, a, rows, sources, redactor, budget, now, what_if,
                         left_out)
        texts = details.taken(left_out)
    finally:
        details.close()
    data["left_out"] = [{"what": what, "count": n} for what, n in sorted(left_out.items())]
    if custody is not None:
        data["custody"] = custody()
    if redactor is not None:
        data = _scrub(data, redactor)
    return ReportModel(data, a.findings, list(logs.log_dirs), texts)


def _document(logs: LogDirs, paths: Sequence[str], a: _Analyses, rows: list[dict],
              sources: SchemaChain, redactor: Redactor | None, budget: Budget, now: int,
              what_if: whatif.Ask | None, left_out: Counter) -> dict:
    """The document but for what its details leave out (the partitions' rows are marked
    with their details once those are taken) and the chain of custody."""
    largest = sorted(a.retention.topics.items(), key=lambda kv: -kv[1].start_size)
    if len(largest) > budget.series:
        left_out["topics left off the forecast chart (the largest are drawn)"] += \
            len(largest) - budget.series
    overview = forecast_chart(largest[:budget.series]) if largest else None
    ordered = sorted(a.sourced, key=lambda sf: (-SEVERITY_RANK[str(sf[1].severity)],
                                                sf[1].code, sf[1].path, sf[1].offset or 0))
    if len(ordered) > budget.findings:
        left_out["finding rows not listed (the counts per code are complete)"] += \
            len(ordered) - budget.findings
    replay = a.replay
    replicas = a.replicas
    if len(replicas) > budget.rows:  # the ones that diverged first
        replicas = sorted(replicas, key=lambda rs: rs.divergence.status != "diverged")
    hanging = [(pt, h) for pt in a.txns.partitions for h in pt.hanging]
    where = _places()
    data = {
        "meta": {"generated_at": int(time.time() * 1000), "at": now, "at_iso": format_time(now),
                 "paths": [without_credentials(p) for p in paths], "version": __version__,
                 "config_sources": list(a.inputs.config_sources),
                 "redaction": redactor.describe() if redactor is not None else None,
                 "forecast_days": budget.forecast_days},
        "summary": _summary(logs, a.inputs, rows),
        "finding_codes": _finding_codes(a.findings),
        "findings": [_finding(f, source, where) for source, f in ordered[:budget.findings]],
        # where the count comes from: each command reports its part (verify only its own)
        "finding_sources": [{"source": s, "count": n} for s, n in
                            Counter(source for source, _ in a.sourced).most_common()],
        "findings_merged": [{"what": what, "count": n} for what, n in sorted(a.merged.items())],
        "topics": _topic_rows(rows),
        "overview": overview,
        "partitions": rows,
        "skipped": [s.to_json() for s in _bounded(
            a.inputs.skipped, budget.rows, "directories not analysed left out of their list",
            left_out)],
        "groups": _groups(replay, budget, left_out) if replay is not None else [],
        "offset_regressions": len(replay.regressions) if replay is not None else 0,
        # topic names as values, not keys: redaction and the page handle them as data
        "open_transactional_ids": [
            {**c.to_json(), "partitions": [{"topic": t, "partitions": ids} for t, ids in
                                           (c.to_json()["partitions"] or {}).items()]}
            for c in _bounded(a.txns.open_ids, budget.rows,
                              "open transactional ids not listed", left_out)],
        "hanging": [{**h.to_json(), "partition": shown_path(h.partition)}
                    for _, h in _bounded(hanging, budget.rows,
                                         "hanging transactions not listed (each partition's "
                                         "detail has its own)", left_out)],
        "divergence": [_divergence(rs) for rs in _bounded(
            replicas, budget.rows, "replica sets not shown (diverged ones first; segtools "
            "diverge compares all)", left_out)],
        "schemas": (_schemas_section(sources, logs.schema_usage(lookup=sources), redactor,
                                     budget, left_out)
                    if sources.sources else None),
        "tiered": [_tiered(tp) for tp in _bounded(
            a.tiers.partitions, budget.rows, "tiered partitions not listed (segtools tiered "
            "lists all)", left_out)],
    }
    if what_if is not None:
        data["what_if"] = whatif.section(logs, a.inputs, now, what_if)
    return data


def _topics_named(logs: LogDirs, a: _Analyses) -> Iterator[str]:
    """Every topic name the tree mentions, wherever it is stored: its partition directories,
    the topics ``__consumer_offsets`` commits name, the open transactions' partitions, and the
    topics ``__cluster_metadata`` knows (topics with no partition in the tree still appear in
    offsets keys and compaction's top keys, and must be redacted there too)."""
    yield from (p.name.topic for d in logs.log_dirs for p in d.partitions if p.name)
    if a.replay is not None:
        yield from (c.topic for c in a.replay.commits)
        yield from (r.current.topic for r in a.replay.regressions)
        yield from (d.topic for d in a.replay.deletions)
    for c in a.txns.open_ids:
        yield from (c.to_json()["partitions"] or {})
    for metadata_log in metadata_logs(logs.log_dirs):
        try:
            yield from topic_configs(metadata_log)
        except SegtoolsError:  # unreadable: verify's findings say so
            continue


def _bounded(items: Sequence, limit: int, what: str, left_out: Counter) -> list:
    """The first ``limit`` items, and how many were left out (under ``what``)."""
    if len(items) > limit:
        left_out[what] += len(items) - limit
    return list(items[:limit])


def broker_names(log_dirs: Sequence) -> list[str]:
    """What tells a tree's log dirs apart on the page: the log dir's short name
    (:func:`segtools.text.distinct_names`), with its broker's node id when meta.properties
    names one, so a bundle's copies of one partition are never two identical rows."""
    names = distinct_names(d.path for d in log_dirs)
    return [f"{name} (node {d.meta.node_id})" if d.meta is not None and
            d.meta.node_id is not None else name
            for name, d in zip(names, log_dirs, strict=True)]


def _partition_rows(logs: LogDirs, a: _Analyses) -> tuple[list[dict], list[tuple]]:
    """One summary row per partition directory (its detail filled later, for some), and the
    partition and its retention answer behind each row."""
    by_path = {str(e.input.dir.path): e for e in a.retention.partitions}
    comp_by_path = {str(e.input.dir.path): e.compaction for e in a.compaction.partitions
                    if e.not_compacted is None}  # replayed only because named: not compacted
    txn_by_path = {str(pt.scan.partition.path): pt for pt in a.txns.partitions}
    finding_count: dict[str | None, Counter] = defaultdict(Counter)
    in_partition = _partition_dirs()
    for f in a.findings:
        finding_count[in_partition(f.path)][str(f.severity)] += 1
    rows, pdirs = [], []
    brokers = broker_names(logs.log_dirs)
    for d, broker in zip(logs.log_dirs, brokers, strict=True):
        log_dir = shown_path(d.path)
        for p in d.partitions:
            path = str(p.path)
            e = by_path.get(path)
            name = p.name
            topic = name.topic if name else p.path.name
            counts = finding_count.get(path, Counter())
            pt = txn_by_path.get(path)
            summaries = e.input.summaries if e else ()
            rows.append({
                "id": len(rows), "topic": topic, "partition": name.partition if name else None,
                "state": str(name.state) if name else "unknown",
                "broker": broker, "log_dir": log_dir, "path": shown_path(path),
                "size": p.size_bytes, "segments": len(p.segments),
                "records": sum(s.record_count for s in summaries) if e else None,
                "first_timestamp": min((s.first_timestamp for s in summaries
                                        if s.first_timestamp is not None and
                                        s.first_timestamp >= 0), default=None),
                "last_timestamp": max((s.max_timestamp for s in summaries), default=None),
                "deletable_bytes": e.retention.deletable_bytes if e else 0,
                "compacted": path in comp_by_path,
                "dirty_ratio": round(comp_by_path[path].dirty_ratio, 4)
                if path in comp_by_path else None,
                "transactions": len(pt.scan.transactions) if pt else 0,
                "hanging": len(pt.hanging) if pt else 0,
                "errors": counts["error"], "warnings": counts["warning"],
                "infos": counts["info"],
                "worst": max((SEVERITY_RANK[s] for s in counts if counts[s]), default=0),
                "detail": False, "listed": False})
            pdirs.append((p, e))
    return rows, pdirs


#: The details the parent does not make itself (past the listed ones) are cut in this many
#: jobs for the workers: each job's texts come back in rank order, and a job past the
#: detail budget is never waited for.
DETAIL_JOBS = 16


@dataclass(frozen=True, slots=True)
class _DetailMaker:
    """What a partition's detail is made from: its partition and retention answer by row
    id, the other analyses by path, and the report's settings. A forked worker holds its
    copy (:func:`segtools.fanout.ordered`), so only the texts cross back."""

    pdirs: list[tuple]
    compaction: dict
    transactions: dict
    producers: dict
    redactor: Redactor | None
    budget: Budget
    limit: int
    decoder: PayloadDecoder | None

    @classmethod
    def of(cls, pdirs: list[tuple], a: _Analyses, redactor: Redactor | None, budget: Budget,
           limit: int, decoder: PayloadDecoder | None) -> _DetailMaker:
        return cls(pdirs, {str(e.input.dir.path): e for e in a.compaction.partitions},
                   {str(pt.scan.partition.path): pt for pt in a.txns.partitions},
                   {pp.path: pp for pp in a.producers}, redactor, budget, limit, decoder)

    def text(self, row_id: int, *, listed: bool) -> tuple[str, Counter]:
        """One partition's detail as JSON text (redacted), and what it leaves out (counted
        if the detail is kept); ``listed``: with its first and last records."""
        budget = self.budget
        p, e = self.pdirs[row_id]
        path = str(p.path)
        cut: Counter = Counter()
        detail: dict = {"segments": [], "retention": None, "compaction": None,
                        "transactions": None, "producers": None, "samples": None}
        if e is not None:
            detail["segments"] = _segments(e.input, e.retention, budget, cut)
            detail["retention"] = _retention(e)
        if path in self.compaction:
            detail["compaction"] = _compaction(self.compaction[path], self.redactor, budget)
        if path in self.transactions:
            detail["transactions"] = _transactions(self.transactions[path], budget, cut)
        seen = self.producers.get(path)
        if seen is not None and seen.detail is not None:
            detail["producers"] = seen.detail
            cut.update(seen.cut)
        if p.name is not None and p.name.state == "live":
            if listed:
                detail["samples"] = samples(p, self.redactor, budget, self.limit, self.decoder)
            else:
                detail["samples_read"] = False
                cut[SAMPLES_LEFT_OUT] += 1
        redactor = self.redactor
        return json_text(_scrub(detail, redactor) if redactor is not None else detail), cut

    def unlisted(self, row_ids: Sequence[int]) -> list[tuple[str, Counter]]:
        """The details of a job of rows past the listed ones (no records read)."""
        return [self.text(i, listed=False) for i in row_ids]


class _Details:
    """Each partition's detail as JSON text (by row id), the most telling first
    (``_interest``) until ``budget.detail_bytes`` is spent; the first ``listed_partitions``
    of them are listed on the page with their first and last records. A detail is built,
    redacted and serialised one at a time: only the texts are kept.

    On a large tree the others are made by forked workers (:meth:`start`) while this
    process makes the listed ones (reading their records) and then the rest of the
    document; :meth:`taken` takes their texts in rank order, and the budget stops the
    taking where it stopped the making (the workers still making details are then ended).
    The texts are the ones a single process makes."""

    def __init__(self, rows: list[dict], ranked: list[dict],
                 listed: list[tuple[str, Counter]], made: Iterable[list[tuple[str, Counter]]],
                 budget: Budget) -> None:
        self.rows, self.ranked, self.listed, self.made = rows, ranked, listed, made
        self.budget = budget

    @classmethod
    def start(cls, rows: list[dict], pdirs: list[tuple], a: _Analyses,
              redactor: Redactor | None, budget: Budget, limit: int,
              decoder: PayloadDecoder | None = None) -> _Details:
        """The workers started on the details past the listed ones, and the listed ones
        made here meanwhile."""
        maker = _DetailMaker.of(pdirs, a, redactor, budget, limit, decoder)
        ranked = sorted(rows, key=_interest)
        first = min(budget.listed_partitions, len(ranked))
        rest = [row["id"] for row in ranked[first:]]
        step = max(1, -(-len(rest) // DETAIL_JOBS))
        made = fanout.ordered(maker.unlisted,
                              [rest[i:i + step] for i in range(0, len(rest), step)],
                              segments=sum(row["segments"] for row in rows))
        try:
            listed = [maker.text(row["id"], listed=True) for row in ranked[:first]]
        except BaseException:
            _closed(made)
            raise
        return cls(rows, ranked, listed, made, budget)

    def taken(self, left_out: Counter) -> list[str | None]:
        """The texts by row id (None: a summary row only), each kept detail's row marked
        and what it leaves out counted in ``left_out``."""
        texts: list[str | None] = [None] * len(self.rows)
        spent = 0
        first = len(self.listed)
        unlisted = (one for job in self.made for one in job)
        try:
            for rank, (row, (text, cut)) in enumerate(zip(
                    self.ranked, itertools.chain(self.listed, unlisted), strict=True)):
                listed = rank < first
                if not listed and spent + len(text) > self.budget.detail_bytes:
                    left_out[DETAILS_LEFT_OUT] += len(self.ranked) - rank
                    break
                spent += len(text)
                left_out.update(cut)
                texts[row["id"]] = text
                row["detail"] = True
                row["listed"] = listed
        finally:
            self.close()
        return texts

    def close(self) -> None:
        """End the workers still making details (past the budget, or on an error)."""
        _closed(self.made)


def _closed(made: Iterable) -> None:
    close = getattr(made, "close", None)
    if close is not None:  # the workers' results (one process's ``map`` has no close)
        close()


def _topic_rows(rows: list[dict]) -> list[dict]:
    topic_rows: dict[str, dict] = {}
    for r in rows:
        t = topic_rows.setdefault(r["topic"], {"topic": r["topic"], "partitions": 0,
                                               "size": 0, "segments": 0, "findings": 0})
        t["partitions"] += 1
        t["size"] += r["size"]
        t["segments"] += r["segments"]
        t["findings"] += r["errors"] + r["warnings"] + r["infos"]
    return sorted(topic_rows.values(), key=lambda t: t["topic"])


def _finding_codes(findings: list[Finding]) -> list[dict]:
    """How many findings of each code, worst first."""
    codes: dict[str, dict] = {}
    for f in findings:
        c = codes.setdefault(f.code, {"code": f.code, "severity": str(f.severity),
                                      "count": 0})
        c["count"] += 1
    return sorted(codes.values(), key=lambda c: (-SEVERITY_RANK[c["severity"]], c["code"]))


def _divergence(rs) -> dict:
    return {"partition": rs.key, **rs.divergence.to_json(),
            "copies": [{"replica": r.label, "path": str(r.partition.path),
                        "start_offset": r.start_offset, "end_offset": r.end_offset,
                        "batches": len(r.batches), "latest_leader_epoch": r.latest_epoch}
                       for r in rs.replicas],
            "only_on": [u.to_json("only_on") for u in rs.divergence.unique],
            "truncations": [{**t.to_json(), "text": t.sentence}
                            for t in rs.divergence.truncations]}


def _schema_sources(logs: LogDirs, decoder: PayloadDecoder | None) -> SchemaChain:
    """Where the report's schemas come from: the decoder's sources (what ``--schemas`` and
    ``--schema-registry`` named, else the tree's ``_schemas`` topic, then the registry), or
    without a decoder the tree's own ``_schemas`` topic (what ``segtools schemas`` reads)."""
    if decoder is None:
        return logs.payload_decoder().lookup
    lookup = decoder.lookup
    return lookup if isinstance(lookup, SchemaChain) else SchemaChain([lookup])


def _source_name(source: SchemaLookup) -> str:
    """A schema source as the page names it: a registry by its URL (never its credentials),
    a history by the ``_schemas`` partitions or the schema-file directory it was read from."""
    if isinstance(source, RegistryClient):
        return source.shown
    return shown_path(source.source) if isinstance(source, Schemas) else type(source).__name__


def _registrations(sources: SchemaChain, schema_id: int
                   ) -> tuple[list[RegisteredSchema], str | None]:
    """The id's registrations from the first source that holds them (the decoder's order:
    :meth:`SchemaChain.registrations`), and that source's name."""
    for source in sources.sources:
        found = source.registrations(schema_id)
        if found:
            return found, _source_name(source)
    return [], None


def _subject(subject: str, redactor: Redactor | None) -> str:
    """A subject as shown: under ``--redact topics`` its topic part is the topic's token
    (``TopicNameStrategy`` subjects are ``<topic>-key`` / ``<topic>-value``)."""
    if redactor is None:
        return subject
    parts = subject_topic(subject)
    return redactor.text(subject) if parts is None else redactor.topic(parts[0]) + parts[1]


def _schemas_section(sources: SchemaChain, usage: list[SchemaUsage],
                     redactor: Redactor | None, budget: Budget, left_out: Counter) -> dict:
    """Names as they are: :func:`_scrub` redacts the whole document once (a token redacted
    again is another token, and the section's topics no longer matched the partitions').

    Per topic, the schema timeline of its subjects (``<topic>-key``/``-value``: versions,
    ids, types, when registered, deleted flags, and which source each came from) and the
    usage table (which ids its keys and values carry, from when to when, written by which
    producers, and the source that named each id's subject: the one the decoder asks
    first)."""
    histories = sources.histories()
    versions = [(_source_name(h), v) for h in histories for v in h.versions]
    topics = sorted({u.topic for u in usage} | {
        v.subject.rsplit("-", 1)[0] for _, v in versions
        if v.subject.endswith(("-key", "-value"))})
    out = []
    for topic in topics:
        subjects = (f"{topic}-key", f"{topic}-value")
        timeline = sorted(((where, v) for where, v in versions if v.subject in subjects),
                          key=lambda wv: (wv[1].registered_ms or 0, wv[1].subject,
                                          wv[1].version))
        rows = []
        for u in (u for u in usage if u.topic == topic):
            named, where = _registrations(sources, u.schema_id) if u.schema_id is not None \
                else ([], None)
            rows.append({**u.to_json(), "partitions": len(u.partitions),
                         "subject": named[0].subject if named else None,
                         "version": named[0].version if named else None, "where": where,
                         "hard_deleted": u.schema_id is not None
                         and sources.hard_deleted(u.schema_id)})
        out.append({"topic": topic,
                    "timeline": [{"subject": v.subject,
                                  "version": v.version, "id": v.id, "type": v.schema_type,
                                  "registered": v.registered_ms, "deleted": v.deleted,
                                  "references": len(v.references), "where": where}
                                 for where, v in timeline],
                    "usage": rows})
    shown = _bounded(out, budget.rows, "topics left out of the schema section", left_out)
    return {"sources": [{"where": _source_name(s),
                         "versions": len(s) if isinstance(s, Schemas) else None}
                        for s in sources.sources],
            "subjects": len({v.subject for _, v in versions}),
            "versions": len(versions), "removed": sum(len(h.removed) for h in histories),
            "compatibility": next((c for h in histories
                                   if (c := h.compatibility(None)) is not None), None),
            "topics": list(shown)}


_PATH_FIELDS = frozenset({"path", "log_dir", "where", "paths"})
_TOPIC_FIELDS = frozenset({"topic"})
_SUBJECT_FIELDS = frozenset({"subject"})


def _scrub(value, redactor: Redactor, field_name: str | None = None):
    """Topic names redacted everywhere in the document: path fields by their partition
    directories, topic fields by name, free text by whole-word mention."""
    if isinstance(value, dict):
        return {k: _scrub(v, redactor, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, redactor, field_name) for v in value]
    if isinstance(value, str):
        if field_name in _PATH_FIELDS:
            return redactor.text(redactor.path(value))
        if field_name in _TOPIC_FIELDS:
            return redactor.topic(value)
        if field_name in _SUBJECT_FIELDS:
            return _subject(value, redactor)
        return redactor.text(value)
    return value

