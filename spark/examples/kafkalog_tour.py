# %% [markdown]
# # A Kafka log.dirs tree as Spark DataFrames
#
# A tour for a data engineer, meant to be run top to bottom (as a script, or cell by cell in
# VS Code / Jupyter, which read the `# %%` markers):
#
#     python spark/examples/kafkalog_tour.py [PATH ...]
#
# PATH is one or more log dirs, partition dirs or `.log` files, several brokers' copies
# included; by default, the trees bundled with segtools (`fixtures/logdirs`: Kafka-written
# segments of every codec and magic, transactions, compacted and corrupt partitions).
# Nothing under PATH is ever written: the source opens every file read-only.
#
# Every table is printed under a caption, whole (up to 60 rows; past that the caption says how
# many rows there are). What the reads meet (a bad CRC, a torn tail) is a finding: shown once,
# as a table of its own. Each read also logs it on the executor that met it, as Spark's log
# does, on stderr with the rest of Spark's log (`make demo` keeps that in a file).

# %%
import os
import sys
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors must use this Python
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyspark_kafkalog
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark_kafkalog import analyses

from segtools.analysis.config import TopicConfig

HERE = Path(__file__).resolve().parent
PATHS = [a for a in sys.argv[1:] if not a.startswith("-")] or \
    [str(HERE.parent.parent / "fixtures" / "logdirs")]

spark = (SparkSession.builder.master("local[2]").appName("kafkalog tour")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
# Spark finds "kafkalog" by itself after `pip install segtools[spark]`; registering explicitly
# also covers editable installs and environments where that lookup is switched off.
pyspark_kafkalog.register(spark)

ROWS = 60


def show(frame, caption: str, limit: int = ROWS) -> None:
    """``frame`` under its caption, every row up to ``limit``; past that the caption says how
    many there are (the frame is cut before ``show``, so Spark never adds "only showing top
    N rows" of its own)."""
    total = frame.count()
    more = f" (the first {limit} of {total} rows)" if total > limit else ""
    print(f"\n== {caption}{more}", flush=True)
    frame.limit(limit).show(limit, truncate=False)

# %% [markdown]
# ## Records per topic
# One row per record, with the columns of Spark's own Kafka source (`key`, `value`, `topic`,
# `partition`, `offset`, `timestamp`, `timestampType`, `headers`) plus where it lives on disk.
# Control records (transaction markers) are left out unless `includeControl` is set.

# %%
records = analyses.load(spark, PATHS, includeHeaders=True).cache()
print("== The records' columns", flush=True)
records.printSchema()
show(records.groupBy("topic").agg(F.count(F.lit(1)).alias("records"),
                                  F.countDistinct("partition").alias("partitions"),
                                  F.min("timestamp").alias("oldest"),
                                  F.max("timestamp").alias("newest")).orderBy("topic"),
     "Records per topic")

# %% [markdown]
# ## Findings
# What the reads met, one row per finding: each segment row carries the findings of its file
# (the `segments` level: a shallow walk of the batch headers, every CRC checked).

# %%
segments = analyses.load(spark, PATHS, level="segments").cache()
show(segments.select("topic", "partition", "base_offset", F.explode("findings").alias("f"))
     .select("topic", "partition", "base_offset", "f.severity", "f.code", "f.offset",
             "f.message").orderBy("topic", "partition", "base_offset", "offset"),
     "Findings met while reading")

# %% [markdown]
# What a `read_committed` consumer would see: aborted transactions are dropped (found through
# the `.txnindex` files, as the broker finds them when it serves a fetch).

# %%
committed = analyses.load(spark, PATHS, readCommitted=True)
show(records.groupBy("topic").count().withColumnRenamed("count", "all")
     .join(committed.groupBy("topic").count().withColumnRenamed("count", "read_committed"),
           "topic")
     .filter("all != read_committed").orderBy("topic"),
     "Topics where a read_committed consumer sees fewer records")

# %% [markdown]
# ## Key reuse
# How often keys come back per topic-partition: `superseded_records` is what a full clean of
# a compacted topic would remove (tombstones aside).

# %%
show(analyses.key_reuse(records), "Key reuse per topic-partition")
show(analyses.top_keys(records, n=3).filter("versions > 1"),
     "The three keys with most versions per topic-partition (keys written more than once)")

# %% [markdown]
# ## Tombstones
# A "now" just after the bundled trees were written keeps the ages readable; drop `now_ms`
# on a live tree.

# %%
newest = segments.agg(F.max(F.unix_millis("largest_timestamp"))).first()[0]
NOW = newest + 12 * 3_600_000 if newest else None
show(analyses.tombstones(records, now_ms=NOW, delete_retention_ms=6 * 3_600_000),
     "Tombstones, and whether the next clean removes each (delete.retention.ms = 6 h)")

# %% [markdown]
# ## Per-segment statistics
# One row per segment from a shallow walk of the batch headers (no record is decoded), with
# the max timestamp retention uses and where it came from (time index, log scan, or mtime).

# %%
show(analyses.segment_stats(segments, now_ms=NOW), "Per-segment statistics")
show(analyses.partition_stats(segments), "Per-partition statistics")

# %% [markdown]
# ## Retention report
# Would Kafka's delete policy remove each segment at NOW, and why: the verdicts come from
# `segtools.analysis.retention.explain_retention`, the function behind `segtools retention`,
# run per partition on the executors. Here with `retention.ms` = 18 hours for every topic.

# %%
retention = analyses.retention_report(segments, TopicConfig(retention_ms=18 * 3_600_000),
                                      now_ms=NOW)
show(retention.select("topic", "partition", "base_offset", "size", "max_timestamp_source",
                      "deletable", "reason", "eligible_at"),
     "Retention verdict per segment (retention.ms = 18 h)")
show(retention.groupBy("reason").agg(F.count(F.lit(1)).alias("segments"),
                                     F.sum("size").alias("bytes")).orderBy("reason"),
     "Segments and bytes per retention reason")

# %% [markdown]
# ## Compaction estimate
# For the compacted topics: key reuse, tombstones, the dirty ratio and what the next clean
# would remove, by `segtools compaction`'s own function.

# %%
compact = TopicConfig(cleanup_policy=("compact",))
show(analyses.compaction_report(spark, PATHS, {"payments-compact": compact}, now_ms=NOW)
     .select("topic", "partition", "records", "distinct_keys", "superseded_records",
             "tombstones", "dirty_ratio", "would_clean", "removed_records"),
     "Compaction estimate for payments-compact")

# %%
spark.stop()
