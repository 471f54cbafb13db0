"""Analyses of whole trees as DataFrame functions.

The simple aggregations (key reuse, tombstones, per-segment figures) are Spark SQL over the
source's rows, so they scale with the cluster. The rules that Kafka's broker applies
(retention's ``deleteOldSegments``, the cleaner's choices) are *not* re-implemented here: the
per-partition functions run :func:`segtools.analysis.retention.explain_retention` and
:func:`segtools.analysis.compaction.explain_compaction`, the very functions behind
``segtools retention`` and ``segtools compaction``, inside ``applyInArrow`` on the executors,
over segment summaries rebuilt from the ``level=segments`` rows (``summary_json``).

Typical use::

    from pyspark_kafkalog import analyses
    records = analyses.load(spark, "/var/kafka-logs")
    analyses.key_reuse(records).show()
    analyses.retention_report(analyses.load(spark, "/var/kafka-logs", level="segments"),
                              TopicConfig(retention_ms=86_400_000)).show()
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from segtools.analysis import cleaner_input, producers
from segtools.analysis.compaction import explain_compaction
from segtools.analysis.config import TopicConfig
from segtools.analysis.retention import explain_retention
from segtools.fetch.columns import batch_table
from segtools.storage.summary import SegmentSummary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PARTITION = ("topic", "partition")
#: ``delete.retention.ms``'s default (``LogConfig``): how long a tombstone stays readable.
DEFAULT_DELETE_RETENTION_MS = 86_400_000


def _reader(spark: SparkSession, options: Mapping[str, object]):
    reader = spark.read.format("kafkalog")
    for name, value in options.items():
        reader = reader.option(name, str(value).lower() if isinstance(value, bool) else value)
    return reader


def _paths(paths: str | Sequence[str]) -> str | list[str]:
    return paths if isinstance(paths, str) else list(paths)


def load(spark: SparkSession, paths: str | Sequence[str], **options: object) -> DataFrame:
    """``spark.read.format("kafkalog")`` with options given as keyword arguments."""
    return _reader(spark, options).load(_paths(paths))


def _now_ms(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


# ------------------------------------------------------------------------------ key reuse


def key_reuse(records: DataFrame, by: Sequence[str] = PARTITION) -> DataFrame:
    """Per topic-partition: how often keys come back, the figure behind compaction's gain.

    ``records`` (records level; control records are left out) needs ``key`` and the ``by``
    columns. ``superseded_records`` are the keyed records a later record of the same key makes
    obsolete (what a full clean would remove, tombstones aside); ``max_versions`` is the most
    records any one key has.
    """
    data = records.filter(~F.col("is_control")) if "is_control" in records.columns \
        else records
    per_key = (data.filter(F.col("key").isNotNull())
               .groupBy(*by, "key").agg(F.count(F.lit(1)).alias("versions")))
    keyed = per_key.groupBy(*by).agg(
        F.sum("versions").alias("keyed_records"),
        F.count(F.lit(1)).alias("distinct_keys"),
        F.sum(F.when(F.col("versions") > 1, 1).otherwise(0)).alias("reused_keys"),
        F.max("versions").alias("max_versions"))
    totals = data.groupBy(*by).agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.when(F.col("key").isNull(), 1).otherwise(0)).alias("null_key_records"))
    return (totals.join(keyed, list(by), "left")
            .fillna(0, ["keyed_records", "distinct_keys", "reused_keys", "max_versions"])
            .withColumn("superseded_records", F.col("keyed_records") - F.col("distinct_keys"))
            .withColumn("superseded_ratio",
                        F.when(F.col("keyed_records") > 0,
                               F.col("superseded_records") / F.col("keyed_records")))
            .orderBy(*by))


def top_keys(records: DataFrame, n: int = 10, by: Sequence[str] = PARTITION) -> DataFrame:
    """The ``n`` keys with the most records in each topic-partition."""
    from pyspark.sql.window import Window

    per_key = (records.filter(F.col("key").isNotNull())
               .groupBy(*by, "key").agg(F.count(F.lit(1)).alias("versions"),
                                        F.min("offset").alias("first_offset"),
                                        F.max("offset").alias("last_offset")))
    rank = F.row_number().over(Window.partitionBy(*by).orderBy(F.desc("versions"), "key"))
    return per_key.withColumn("rank", rank).filter(F.col("rank") <= n).orderBy(*by, "rank")


# ----------------------------------------------------------------------------- tombstones


def tombstones(records: DataFrame, *, delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS,
               now_ms: int | None = None, by: Sequence[str] = PARTITION) -> DataFrame:
    """Per topic-partition: tombstones (a key with a null value), their age at ``now_ms``,
    and how many are older than ``delete.retention.ms``, i.e. past the time a consumer is
    guaranteed to see them (the cleaner removes one only after its batch's delete horizon,
    ``now + delete.retention.ms`` stamped by the clean that first kept it; ``segtools
    compaction`` explains each)."""
    now = _now_ms(now_ms)
    ts = F.unix_millis(F.col("timestamp"))
    stones = records.filter(F.col("key").isNotNull() & F.col("value").isNull()
                            & ~F.col("is_control"))
    return (stones.groupBy(*by).agg(
        F.count(F.lit(1)).alias("tombstones"),
        F.min("timestamp").alias("oldest"),
        F.max("timestamp").alias("newest"),
        (F.lit(now) - F.min(ts)).alias("max_age_ms"),
        F.sum(F.when(F.lit(now) - ts > delete_retention_ms, 1).otherwise(0))
        .alias("past_delete_retention"))
        .withColumn("delete_retention_ms", F.lit(delete_retention_ms))
        .orderBy(*by))


# ------------------------------------------------------------------------------ segments


def segment_stats(segments: DataFrame, now_ms: int | None = None) -> DataFrame:
    """One row per segment (``level=segments``): sizes, counts, time span and age, with the
    source of the max timestamp that retention uses (time index, log scan, or mtime)."""
    now = _now_ms(now_ms)
    return segments.select(
        "topic", "partition", "log_dir", "base_offset", "next_offset", "is_active", "size",
        "valid_bytes", "batch_count", "record_count", "first_timestamp", "max_timestamp",
        "max_timestamp_source",
        (F.lit(now) - F.unix_millis("largest_timestamp")).alias("age_ms"),
        F.array_join("codecs", ",").alias("codecs"), "crc_errors",
        F.size("findings").alias("findings")).orderBy("topic", "partition", "base_offset")


def partition_stats(segments: DataFrame) -> DataFrame:
    """Per topic-partition totals over its segments."""
    return (segments.groupBy("log_dir", "topic", "partition").agg(
        F.count(F.lit(1)).alias("segments"), F.sum("size").alias("bytes"),
        F.sum("record_count").alias("records"), F.sum("batch_count").alias("batches"),
        F.min("base_offset").alias("first_offset"), F.max("next_offset").alias("next_offset"),
        F.min("first_timestamp").alias("oldest_timestamp"),
        F.max("max_timestamp").alias("newest_timestamp"),
        F.sum("crc_errors").alias("crc_errors"))
        .orderBy("topic", "partition", "log_dir"))


# ------------------------------------------------------------------------------ retention

#: A point in time in the verdict tables: a Spark ``timestamp`` (UTC), as the source's own
#: time columns, so one type holds a moment in every DataFrame of this face.
MOMENT = pa.timestamp("us", tz="UTC")


def _micros(ms: int | None) -> int | None:
    """A library moment (epoch ms, -1 for none) as the microseconds of :data:`MOMENT`."""
    return None if ms is None or ms < 0 else ms * 1000


_RETENTION_FIELDS = (
    ("log_dir", pa.string(), "string"), ("topic", pa.string(), "string"),
    ("partition", pa.int32(), "int"), ("base_offset", pa.int64(), "long"),
    ("last_offset", pa.int64(), "long"), ("size", pa.int64(), "long"),
    ("record_count", pa.int64(), "long"), ("max_timestamp", MOMENT, "timestamp"),
    ("max_timestamp_source", pa.string(), "string"), ("age_ms", pa.int64(), "long"),
    ("is_active", pa.bool_(), "boolean"), ("deletable", pa.bool_(), "boolean"),
    ("reason", pa.string(), "string"), ("reason_text", pa.string(), "string"),
    ("eligible_at", MOMENT, "timestamp"), ("blocked_by", pa.int64(), "long"),
    ("high_watermark", pa.int64(), "long"), ("high_watermark_assumed", pa.bool_(), "boolean"),
    ("log_start_offset", pa.int64(), "long"), ("log_end_offset", pa.int64(), "long"),
    ("retention_ms", pa.int64(), "long"), ("retention_bytes", pa.int64(), "long"),
    ("cleanup_policy", pa.string(), "string"), ("rolled", pa.bool_(), "boolean"),
    ("callouts", pa.list_(pa.string()), "array<string>"),
)
#: The retention report's columns (Spark DDL) and the Arrow schema the function returns.
RETENTION_SCHEMA = ", ".join(f"{name} {ddl}" for name, _, ddl in _RETENTION_FIELDS)
_RETENTION_ARROW = pa.schema([(name, t) for name, t, _ in _RETENTION_FIELDS])

ConfigChoice = TopicConfig | Mapping[str, TopicConfig] | Callable[[str], TopicConfig]


def _config_for(config: ConfigChoice | None) -> Callable[[str], TopicConfig]:
    """A topic -> config function: one config for all, a per-topic map (defaults for the
    others), or the caller's own function. Every value is a plain, picklable TopicConfig."""
    if config is None:
        return lambda _topic: TopicConfig()
    if isinstance(config, TopicConfig):
        return lambda _topic: config
    if isinstance(config, Mapping):
        table = dict(config)
        return lambda topic: table.get(topic, TopicConfig())
    return config


def _retention_rows(key: tuple, table: pa.Table, config_for: Callable[[str], TopicConfig],
                    now: int) -> pa.Table:
    """One partition's verdicts, from its rows' ``summary_json`` by ``explain_retention``."""
    log_dir, topic, partition = (k.as_py() for k in key)
    first = table.slice(0, 1).to_pylist()[0]
    summaries = [SegmentSummary.from_json(json.loads(s))
                 for s in table.column("summary_json").to_pylist()]
    config = config_for(topic)
    result = explain_retention(summaries, config, now_ms=now,
                               high_watermark=first["high_watermark"],
                               log_start_offset=first["log_start_offset"])
    callouts = [c.message for c in result.callouts]
    rows = [{
        "log_dir": log_dir, "topic": topic, "partition": partition,
        "base_offset": v.base_offset, "last_offset": v.last_offset, "size": v.size,
        "record_count": v.record_count, "max_timestamp": _micros(v.max_timestamp),
        "max_timestamp_source": v.max_timestamp_source, "age_ms": v.age_ms,
        "is_active": v.is_active, "deletable": v.deletable, "reason": v.reason,
        "reason_text": v.reason_text, "eligible_at": _micros(v.eligible_at),
        "blocked_by": v.blocked_by, "high_watermark": result.high_watermark,
        "high_watermark_assumed": result.high_watermark_assumed,
        "log_start_offset": result.log_start_offset, "log_end_offset": result.log_end_offset,
        "retention_ms": config.local_retention_ms_effective,
        "retention_bytes": config.local_retention_bytes_effective,
        "cleanup_policy": ",".join(config.cleanup_policy), "rolled": result.rolled,
        "callouts": callouts,
    } for v in result.segments]
    return pa.Table.from_pylist(rows, schema=_RETENTION_ARROW)


def retention_report(segments: DataFrame, config: ConfigChoice | None = None, *,
                     now_ms: int | None = None) -> DataFrame:
    """Per segment: would Kafka's delete policy remove it at ``now_ms``, and why.

    ``segments`` is a ``level=segments`` DataFrame (it carries each partition's high
    watermark and log start offset from the log dir's checkpoints). ``config`` is one
    :class:`~segtools.analysis.config.TopicConfig`, a ``{topic: TopicConfig}`` map, or a
    function of the topic; Kafka's defaults otherwise. The verdicts, reason codes and
    ``eligible_at`` are exactly ``segtools retention``'s: the same function computes them.
    """
    now = _now_ms(now_ms)
    config_for = _config_for(config)
    needed = segments.select("log_dir", "topic", "partition", "high_watermark",
                             "log_start_offset", "summary_json")
    return (needed.groupBy("log_dir", "topic", "partition")
            .applyInArrow(lambda key, table: _retention_rows(key, table, config_for, now),
                          RETENTION_SCHEMA)
            .orderBy("topic", "partition", "log_dir", "base_offset"))


# ----------------------------------------------------------------------------- compaction

#: The record columns the cleaner's replay needs (optional columns of the records level).
COMPACTION_RECORDS = (
    "log_dir string, topic string, partition int, segment_base_offset long, position long, "
    "offset long, timestamp timestamp, key binary, value_size int, is_control boolean, "
    "is_transactional boolean, magic int, producer_id long, delete_horizon timestamp, "
    "batch_size int, batch_count int, batch_base_offset long, batch_max_timestamp timestamp")

_COMPACTION_FIELDS = (
    ("log_dir", pa.string(), "string"), ("topic", pa.string(), "string"),
    ("partition", pa.int32(), "int"), ("records", pa.int64(), "long"),
    ("keyed_records", pa.int64(), "long"), ("null_key_records", pa.int64(), "long"),
    ("distinct_keys", pa.int64(), "long"), ("superseded_records", pa.int64(), "long"),
    ("superseded_bytes", pa.float64(), "double"), ("tombstones", pa.int64(), "long"),
    ("oldest_tombstone_timestamp", MOMENT, "timestamp"),
    ("first_dirty_offset", pa.int64(), "long"),
    ("first_uncleanable_offset", pa.int64(), "long"),
    ("first_uncleanable_reason", pa.string(), "string"), ("dirty_ratio", pa.float64(), "double"),
    ("min_cleanable_dirty_ratio", pa.float64(), "double"), ("would_clean", pa.bool_(), "boolean"),
    ("would_clean_text", pa.string(), "string"), ("removed_records", pa.int64(), "long"),
    ("removed_bytes", pa.float64(), "double"), ("open_transactions", pa.int64(), "long"),
    ("report_json", pa.string(), "string"),
)
#: One row per compacted partition; ``report_json`` is ``segtools compaction --format json``'s
#: partition object (keys in base64).
COMPACTION_SCHEMA = ", ".join(f"{name} {ddl}" for name, _, ddl in _COMPACTION_FIELDS)
_COMPACTION_ARROW = pa.schema([(name, t) for name, t, _ in _COMPACTION_FIELDS])


def _ms(column: pa.ChunkedArray) -> list[int]:
    """A timestamp column back to Kafka's epoch ms (the source shows ``-1`` as null)."""
    micros = pc.cast(column, pa.int64())
    return pc.fill_null(pc.divide(micros, 1000), -1).to_pylist()


def _compaction_input(records: pa.Table, side: list[dict]):
    """The cleaner's view of one partition: the rows in segment and offset order, timestamps
    back to ms, given to the library's :func:`~segtools.analysis.cleaner_input.from_rows`."""
    rows = records.sort_by([("segment_base_offset", "ascending"), ("offset", "ascending")])
    cols = {name: rows.column(name).to_pylist() for name in rows.column_names}
    for name in ("timestamp", "delete_horizon", "batch_max_timestamp"):
        cols[name] = _ms(rows.column(name))
    return cleaner_input.from_rows(cols, [b for b in side if b["kind"] == "empty_batch"])


def _compaction_rows(key: tuple, records: pa.Table, side: pa.Table,
                     config_for: Callable[[str], TopicConfig], now: int, top: int,
                     limit: int) -> pa.Table:
    log_dir, topic, partition = (k.as_py() for k in key)
    config = config_for(topic)
    meta = side.to_pylist()
    segments = [m for m in meta if m["kind"] == "segment"]
    if not config.compact or not segments:
        return _COMPACTION_ARROW.empty_table()
    summaries = [SegmentSummary.from_json(json.loads(m["summary_json"])) for m in segments]
    cols, first_batch = _compaction_input(records, meta)
    pc = explain_compaction(
        cols, summaries, config, now_ms=now, high_watermark=segments[0]["high_watermark"],
        log_start_offset=segments[0]["log_start_offset"],
        cleaner_offset=segments[0]["cleaner_offset"], top=top, tombstone_limit=limit,
        first_batch_timestamps=first_batch)
    row = {
        "log_dir": log_dir, "topic": topic, "partition": partition, "records": pc.records,
        "keyed_records": pc.keyed_records, "null_key_records": pc.null_key_records,
        "distinct_keys": pc.distinct_keys, "superseded_records": pc.superseded_records,
        "superseded_bytes": pc.superseded_bytes, "tombstones": pc.tombstone_count,
        "oldest_tombstone_timestamp": _micros(pc.oldest_tombstone_timestamp),
        "first_dirty_offset": pc.first_dirty_offset,
        "first_uncleanable_offset": pc.first_uncleanable_offset,
        "first_uncleanable_reason": pc.first_uncleanable_reason, "dirty_ratio": pc.dirty_ratio,
        "min_cleanable_dirty_ratio": config.min_cleanable_dirty_ratio,
        "would_clean": pc.would_clean, "would_clean_text": pc.would_clean_text,
        "removed_records": pc.removed_records, "removed_bytes": pc.removed_bytes,
        "open_transactions": pc.open_transactions,
        "report_json": json.dumps(pc.to_json(lambda b: base64.b64encode(b).decode("ascii"))),
    }
    return pa.Table.from_pylist([row], schema=_COMPACTION_ARROW)


def compaction_report(spark: SparkSession, paths: str | Sequence[str],
                      config: ConfigChoice | None = None, *, now_ms: int | None = None,
                      top: int = 10, tombstone_limit: int = 100, **options: object) -> DataFrame:
    """Per compacted partition: key reuse, tombstones, the dirty ratio and what the next clean
    would remove, by :func:`segtools.analysis.compaction.explain_compaction` (``segtools
    compaction``'s function) run on the executors, one partition per call.

    Only partitions whose topic config (``config``, as in :func:`retention_report`) has
    ``cleanup.policy`` with ``compact`` are analysed. Each partition's records are gathered
    in one Python worker, as the CLI holds them in one process. ``options`` go to the source
    (``topics``, ``partitionStates`` ...).
    """
    now = _now_ms(now_ms)
    config_for = _config_for(config)
    records = (_reader(spark, options).schema(COMPACTION_RECORDS)
               .option("includeControl", "true").load(_paths(paths)))
    segments = load(spark, paths, level="segments", **options).selectExpr(
        "'segment' AS kind", "log_dir", "topic", "partition",
        "base_offset AS segment_base_offset", "summary_json", "high_watermark",
        "log_start_offset", "cleaner_offset", "CAST(NULL AS long) AS position",
        "CAST(NULL AS long) AS base_offset", "CAST(NULL AS long) AS last_offset",
        "CAST(NULL AS int) AS size", "CAST(NULL AS long) AS max_timestamp",
        "CAST(NULL AS long) AS producer_id", "CAST(NULL AS boolean) AS is_control",
        "CAST(NULL AS boolean) AS is_transactional", "CAST(NULL AS int) AS magic",
        "CAST(NULL AS long) AS delete_horizon")
    empty = load(spark, paths, level="batches", **options).filter("count = 0").selectExpr(
        "'empty_batch' AS kind", "log_dir", "topic", "partition", "segment_base_offset",
        "CAST(NULL AS string) AS summary_json", "CAST(NULL AS long) AS high_watermark",
        "CAST(NULL AS long) AS log_start_offset", "CAST(NULL AS long) AS cleaner_offset",
        "position", "base_offset", "last_offset", "size",
        "coalesce(unix_millis(max_timestamp), -1) AS max_timestamp", "producer_id",
        "is_control", "is_transactional", "magic",
        "coalesce(unix_millis(delete_horizon), -1) AS delete_horizon")
    side = segments.unionByName(empty)
    keys = ["log_dir", "topic", "partition"]
    return (records.groupBy(*keys).cogroup(side.groupBy(*keys))
            .applyInArrow(lambda key, left, right: _compaction_rows(
                key, left, right, config_for, now, top, tombstone_limit), COMPACTION_SCHEMA)
            .orderBy("topic", "partition", "log_dir"))


# ------------------------------------------------------------------------------ producers

_PRODUCER_FIELDS = (
    ("log_dir", pa.string(), "string"), ("topic", pa.string(), "string"),
    ("partition", pa.int32(), "int"), ("producer_id", pa.int64(), "long"),
    ("producer_epoch", pa.int32(), "int"), ("batches", pa.int64(), "long"),
    ("records", pa.int64(), "long"), ("bytes", pa.int64(), "long"),
    ("records_per_batch_p50", pa.int64(), "long"), ("records_per_batch_p90", pa.int64(), "long"),
    ("records_per_batch_max", pa.int64(), "long"), ("bytes_per_batch_p50", pa.int64(), "long"),
    ("window_ms_p50", pa.int64(), "long"), ("codecs", pa.string(), "string"),
    ("verdict", pa.string(), "string"), ("ceiling_bytes", pa.int64(), "long"),
    ("linger_ms", pa.int64(), "long"), ("sequence_gaps", pa.int64(), "long"),
    ("sequence_duplicates", pa.int64(), "long"), ("epoch_bumps", pa.int64(), "long"),
)
#: The producer report's columns (Spark DDL).
PRODUCER_SCHEMA = ", ".join(f"{name} {ddl}" for name, _, ddl in _PRODUCER_FIELDS)
_PRODUCER_ARROW = pa.schema([(name, t) for name, t, _ in _PRODUCER_FIELDS])
_PRODUCER_INPUT = ("log_dir", "topic", "partition", "segment_base_offset", "position", "size",
                   "magic", "compression", "base_offset", "last_offset", "count",
                   "timestampType", "base_timestamp", "max_timestamp", "producer_id",
                   "producer_epoch", "base_sequence", "leader_epoch", "is_transactional",
                   "is_control", "delete_horizon")


def _producer_rows(key: tuple, table: pa.Table) -> pa.Table:
    """One partition's producers, folded by the library (``segtools producers``) from its
    batches in log order."""
    log_dir, topic, partition = (k.as_py() for k in key)
    ordered = table.sort_by([("segment_base_offset", "ascending"), ("position", "ascending")])
    result = producers.PartitionProducers(topic, partition, log_dir)
    for batch in ordered.to_batches(max_chunksize=65536):
        result.add(batch_table(batch))
    result.finish()
    rows = []
    for g in result.producers.values():
        j = g.to_json()
        mine = [e for e in result.events
                if (e.producer_id, e.producer_epoch) == (g.producer_id, g.producer_epoch)]
        rows.append({
            "log_dir": log_dir, "topic": topic, "partition": partition,
            "producer_id": g.producer_id, "producer_epoch": g.producer_epoch,
            "batches": g.batches, "records": g.records, "bytes": g.bytes,
            "records_per_batch_p50": j["records_per_batch"]["p50"],
            "records_per_batch_p90": j["records_per_batch"]["p90"],
            "records_per_batch_max": j["records_per_batch"]["max"],
            "bytes_per_batch_p50": j["bytes_per_batch"]["p50"],
            "window_ms_p50": j["window_ms"]["p50"] if j["window_ms"] else None,
            "codecs": ",".join(sorted(g.codecs)), "verdict": g.verdict,
            "ceiling_bytes": g.ceiling, "linger_ms": g.linger_ms,
            "sequence_gaps": sum(e.kind == "gap" for e in mine),
            "sequence_duplicates": sum(e.kind == "duplicate" for e in mine),
            "epoch_bumps": sum(e.kind == "epoch_bump" for e in mine)})
    return pa.Table.from_pylist(rows, schema=_PRODUCER_ARROW)


def producer_batching(batches: DataFrame) -> DataFrame:
    """Per topic, partition and producer: how it batched and what its sequences say, from a
    ``level=batches`` DataFrame. The figures and verdicts are ``segtools producers``': the same
    library code folds the same batch columns on the executors."""
    return (batches.select(*_PRODUCER_INPUT)
            .groupBy("log_dir", "topic", "partition")
            .applyInArrow(_producer_rows, PRODUCER_SCHEMA)
            .orderBy("topic", "partition", "producer_id", "producer_epoch"))


# ------------------------------------------------------------------------------ tiered storage

#: The tiered view's columns (Spark DDL): one row per remote segment, as the Python API's
#: ``segtools.tiered(...).rows()`` gives them (moments as UTC timestamps).
TIERED_SCHEMA = ("topic string, partition int, highest_offset_in_remote_storage long, "
                 "segment_id string, start_offset long, end_offset long, size long, "
                 "max_timestamp timestamp, broker_id int, state string, "
                 "copy_started_ms timestamp, state_changed_ms timestamp, deletable boolean, "
                 "reason string")


def tiered_segments(spark: SparkSession, paths: str | Sequence[str], *,
                    now_ms: int | None = None, remote_store: str | None = None) -> DataFrame:
    """Every remote segment of the tree's tiered partitions, with its state and what the
    expiration task does with it at ``now_ms``: the rows of ``segtools tiered`` (the same
    :func:`segtools.analysis.tiered.tiered_report`; ``remote_store`` as its
    ``--remote-store``). ``__remote_log_metadata`` holds one small record per copy or delete,
    so the replay runs once, on the driver, and the rows are handed to Spark."""
    import segtools  # the driver-side library, imported when used

    report = segtools.open(*([paths] if isinstance(paths, str) else paths)).tiered(
        at=_now_ms(now_ms), remote_store=remote_store)
    return spark.createDataFrame(report.rows(), TIERED_SCHEMA)


# ------------------------------------------------------------------------------ what-if

_SERIES_TYPE = pa.list_(pa.struct([("at_ms", pa.int64()), ("bytes", pa.int64()),
                                   ("oldest_record_ms", pa.int64())]))
_OUTCOME_FIELDS = (
    ("peak_bytes", pa.int64(), "long"), ("trough_bytes", pa.int64(), "long"),
    ("oldest_age_ms_max", pa.int64(), "long"), ("oldest_age_ms_end", pa.int64(), "long"),
    ("swing", pa.float64(), "double"), ("segments_max", pa.int64(), "long"),
    ("rolls", pa.int64(), "long"), ("deletions", pa.int64(), "long"),
    ("cleaned_bytes", pa.int64(), "long"),
    ("start_bytes", pa.int64(), "long"), ("oldest_age_ms_start", pa.int64(), "long"),
    ("oldest_age_ms_late", pa.int64(), "long"), ("late_peak_bytes", pa.int64(), "long"),
    ("late_trough_bytes", pa.int64(), "long"), ("swing_late", pa.float64(), "double"),
    ("replay_scale", pa.int64(), "long"), ("appended_bytes", pa.int64(), "long"),
    ("series", _SERIES_TYPE, "array<struct<at_ms:long,bytes:long,oldest_record_ms:long>>"),
)
_OUTCOME_ARROW = pa.struct([(name, t) for name, t, _ in _OUTCOME_FIELDS])
_OUTCOME_DDL = "struct<" + ",".join(f"{name}:{ddl}" for name, _, ddl in _OUTCOME_FIELDS) + ">"
#: One row per partition copy and one per topic (``partition`` null), the fields of
#: ``segtools retention --what-if --format json``'s ``what_if`` objects (``changes`` as that
#: JSON object's text; a series row ``[at_ms, bytes, oldest_record_ms]`` as a struct);
#: ``too_short``: the partitions whose history is too short to extrapolate;
#: ``recommendation``: the topic row's ``--recommend`` object as JSON text, when one was found;
#: ``unrecommended``: on a topic row ``--recommend`` found nothing for, why.
WHAT_IF_SCHEMA = (f"topic string, partition int, changes string, current {_OUTCOME_DDL}, "
                  f"proposed {_OUTCOME_DDL}, too_short array<string>, "
                  "recommendation string, unrecommended string")
_WHAT_IF_ARROW = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                            ("changes", pa.string()), ("current", _OUTCOME_ARROW),
                            ("proposed", _OUTCOME_ARROW), ("too_short", pa.list_(pa.string())),
                            ("recommendation", pa.string()),
                            ("unrecommended", pa.string())])
#: The batch and segment rows one topic's simulation reads (``kind``: ``batch`` or
#: ``segment``; a segment row brings its partition's cleaner checkpoint and its file's mtime,
#: what a segment without record timestamps is aged by).
_WHAT_IF_SIDE = ("kind", "log_dir", "topic", "partition", "segment_base_offset", "position",
                 "base_offset", "last_offset", "size", "count", "base_timestamp",
                 "max_timestamp", "producer_id",
                 "is_control", "is_transactional", "magic", "delete_horizon", "cleaner_offset",
                 "mtime")


def _record_rows(records: pa.Table) -> dict[str, list]:
    """A partition's record rows in segment and offset order, timestamps back to ms."""
    rows = records.sort_by([("segment_base_offset", "ascending"), ("offset", "ascending")])
    cols = {name: rows.column(name).to_pylist() for name in rows.column_names}
    for name in ("timestamp", "delete_horizon", "batch_max_timestamp"):
        cols[name] = _ms(rows.column(name))
    return cols


def _what_if_inputs(topic: str, side: pa.Table, records: pa.Table, config: TopicConfig):
    """Each partition copy of one topic (from its batch and segment rows) with its history,
    built by :mod:`segtools.analysis.simulation_input` as the CLI builds it from the files."""
    from segtools.analysis import simulation_input as si

    rows = side.to_pylist()
    cleaner = {(r["log_dir"], r["partition"]): r["cleaner_offset"] for r in rows
               if r["kind"] == "segment"}
    # the segments on disk (empty ones too), their bytes and their files' mtimes: where the
    # simulation starts, and how old a segment without record timestamps is
    segments: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for r in rows:
        if r["kind"] == "segment":
            segments.setdefault((r["log_dir"], r["partition"]), []).append(
                (r["segment_base_offset"], r["size"] or 0, r["mtime"]))
    batches: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        batches.setdefault((r["log_dir"], r["partition"]), [])
        if r["kind"] == "batch":
            batches[(r["log_dir"], r["partition"])].append(r)
    mine: dict[tuple[str, int], pa.Table] = {}
    if config.compact and records.num_rows:
        for log_dir, partition in batches:
            mask = pc.and_(pc.equal(records.column("log_dir"), log_dir),
                           pc.equal(records.column("partition"), partition))
            mine[(log_dir, partition)] = records.filter(mask)
    out = []
    for (log_dir, partition), bs in sorted(batches.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rp = si.RowsPartition(topic, partition, config,
                              cleaner.get((log_dir, partition)) if config.compact else None,
                              log_dir)
        if config.compact:
            recs = mine.get((log_dir, partition))
            cols = _record_rows(recs) if recs is not None else \
                {name: [] for name in records.column_names}
            history = si.from_record_rows(cols, [b for b in bs if b["count"] == 0])
        else:
            history = si.from_batch_rows({c: [b[c] for b in bs] for c in si.BATCH_COLUMNS})
        on_disk = segments.get((log_dir, partition), [])
        out.append((rp, si.on_disk(history, [b for b, _, _ in on_disk],
                                   sum(size for _, size, _ in on_disk),
                                   [mtime for _, _, mtime in on_disk])))
    return out


def _outcome_row(o) -> dict:
    j = o.to_json()
    j["series"] = [{"at_ms": at, "bytes": size, "oldest_record_ms": oldest}
                   for at, size, oldest in j["series"]]
    return j


def _what_if_rows(key: tuple, side: pa.Table, records: pa.Table,
                  config_for: Callable[[str], TopicConfig], changes: dict | None, now: int,
                  horizon_days: float, ingest, recommend: bool) -> pa.Table:
    """One topic's what-if (every partition copy and the topic) by the library's simulation,
    the rows of the CLI's ``what_if`` objects."""
    from segtools.analysis import whatif

    topic = key[0].as_py()
    inputs = _what_if_inputs(topic, side, records, config_for(topic))
    parts = [whatif.PartitionHistory(rp, h) for rp, h in inputs]
    items, rec = whatif.what_if_topic(topic, parts, changes, now_ms=now,
                                      end_ms=whatif.horizon_end(now, horizon_days),
                                      ingest=ingest, recommend=recommend,
                                      fan_out=False) \
        if parts else ([], None)
    rows = []
    for w in items:
        j = w.to_json()
        rows.append({"topic": w.topic, "partition": w.partition,
                     "changes": json.dumps(j["changes"], sort_keys=True),
                     "current": _outcome_row(w.current), "proposed": _outcome_row(w.proposed),
                     "too_short": list(w.too_short),
                     "recommendation": json.dumps(rec.to_json())
                     if rec is not None and w.partition is None else None,
                     "unrecommended": j["unrecommended"]})
    return pa.Table.from_pylist(rows, schema=_WHAT_IF_ARROW)


def _compacted_topics(spark: SparkSession, paths, config: ConfigChoice | None,
                      options: Mapping[str, object]) -> list[str]:
    """The topics whose simulation needs keys (``cleanup.policy`` with ``compact``): read
    from the config when it names them, else from the tree's topic list."""
    if config is None:
        return []
    if isinstance(config, Mapping):
        return sorted(t for t, c in config.items() if c.compact)
    config_for = _config_for(config)
    topics = load(spark, paths, level="segments", **options).select("topic").distinct()
    return sorted(t for (t,) in topics.collect() if config_for(t).compact)


def what_if(spark: SparkSession, paths: str | Sequence[str],
            changes: Mapping[str, object] | str | None = None,
            config: ConfigChoice | None = None, *, now_ms: int | None = None,
            horizon_days: float = 30.0, ingest_bytes_per_s: float | None = None,
            recommend: bool = False, **options: object) -> DataFrame:
    """Every topic's log lifecycle simulated under its config and under ``changes``
    (``"segment.bytes=134217728"`` or a map), ``horizon_days`` past ``now_ms``: the rows of
    ``segtools retention --what-if ... --format json``'s ``what_if`` objects, per partition
    copy and per topic; ``recommend`` adds the smallest segment change that keeps what time
    retention promises (``recommendation``, on the topic row) and, without ``changes``,
    compares against it. ``ingest_bytes_per_s`` as ``--ingest`` (None: each partition's
    history replayed); ``config`` as for :func:`retention_report`.

    One topic per call of the library's simulation
    (:func:`segtools.analysis.whatif.what_if_topic`), on the executors, so topics are
    simulated in parallel; a topic's partitions are summed in its call, as the CLI sums them.
    The input is the source's rows: batch headers (``level=batches``), each partition's
    cleaner checkpoint (``level=segments``) and, for compacted topics only, their records
    (keys and tombstones decide what the cleaner keeps). ``options`` go to the source
    (``topics``, ``partitionStates`` ...).
    """
    from segtools.analysis.whatif import (
        ConfigOverrides,
        check_horizon,
        parse_changes,
        parse_ingest,
    )

    now = _now_ms(now_ms)
    parsed = parse_changes(changes) if changes else None
    check_horizon(horizon_days)
    ingest = parse_ingest(ingest_bytes_per_s)
    if isinstance(config, Mapping) and not all(isinstance(v, TopicConfig)
                                               for v in config.values()):
        config = ConfigOverrides.parse(config).config  # the Python API's shape
    config_for = _config_for(config)
    batches = load(spark, paths, level="batches", **options).selectExpr(
        "'batch' AS kind", "log_dir", "topic", "partition", "segment_base_offset", "position",
        "base_offset", "last_offset", "size", "count",
        "coalesce(unix_millis(base_timestamp), -1) AS base_timestamp",
        "coalesce(unix_millis(max_timestamp), -1) AS max_timestamp", "producer_id",
        "is_control", "is_transactional", "magic",
        "coalesce(unix_millis(delete_horizon), -1) AS delete_horizon",
        "CAST(NULL AS long) AS cleaner_offset", "CAST(NULL AS long) AS mtime")
    segments = load(spark, paths, level="segments", **options).selectExpr(
        "'segment' AS kind", "log_dir", "topic", "partition",
        "base_offset AS segment_base_offset", "CAST(NULL AS long) AS position",
        "CAST(NULL AS long) AS base_offset", "CAST(NULL AS long) AS last_offset",
        "CAST(size AS int) AS size", "CAST(NULL AS int) AS count",
        "CAST(NULL AS long) AS base_timestamp", "CAST(NULL AS long) AS max_timestamp",
        "CAST(NULL AS long) AS producer_id",
        "CAST(NULL AS boolean) AS is_control", "CAST(NULL AS boolean) AS is_transactional",
        "CAST(NULL AS int) AS magic", "CAST(NULL AS long) AS delete_horizon", "cleaner_offset",
        "coalesce(unix_millis(mtime), -1) AS mtime")
    side = batches.unionByName(segments).select(*_WHAT_IF_SIDE)
    compacted = _compacted_topics(spark, paths, config, options)
    if compacted:
        wanted = {**options, "includeControl": True, "topics": ",".join(compacted)}
        records = _reader(spark, wanted).schema(COMPACTION_RECORDS).load(_paths(paths))
    else:
        records = spark.createDataFrame([], COMPACTION_RECORDS)
    # sorted in one partition after the simulations: a global orderBy would sample its
    # input first, running every simulation twice
    return (side.groupBy("topic").cogroup(records.groupBy("topic"))
            .applyInArrow(lambda key, left, right: _what_if_rows(
                key, left, right, config_for, parsed, now, horizon_days, ingest,
                recommend), WHAT_IF_SCHEMA)
            .repartition(1).sortWithinPartitions("topic", F.col("partition").asc_nulls_last()))
