"""A Spark driver run in its own process by the cluster and auto-registration tests.

``python -m tests.spark.cluster_driver MASTER TREE [--no-register] [--counts-only] [--remote URI
...] [--what-if DIR CONFIG AT_MS CHANGES]`` reads ``TREE`` with ``format("kafkalog")`` and
prints one JSON document: records per topic-partition, and (unless ``--counts-only``) the read-
committed total and the number of segments, and, for the ``--remote`` trees (object-store URIs,
read together with the storage options from ``$KAFKALOG_STORAGE_OPTIONS`` as JSON), their rows
at the three levels in a comparable form, the log dirs they name, the printed plan of one read
and the Python executables, process ids and working directories their rows were decoded in
(without ``--remote``, those of a read of ``TREE``); with ``--what-if``, the rows of
``analyses.what_if`` over ``DIR`` (topic configs from the ``CONFIG`` file, as the CLI's
``--config``; ``--recommend``) as the CLI's ``what_if`` objects, and its recommendations.
"""

from __future__ import annotations

import base64
import json
import os
import sys

#: Columns that say where bytes live: they differ between a local and a remote copy.
WHERE = ("log_dir", "partition_dir", "path", "summary_json", "mtime")


def plain(value: object) -> object:
    """A row value as JSON: bytes in base64, timestamps as text, lists and structs inside."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "asDict"):  # a Row (a tuple) of a struct column
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def rows_of(df) -> tuple[list[dict], set[str]]:
    """The rows without the columns that say where they live (and the log dirs they name);
    timestamps as epoch microseconds (a datetime would depend on the driver's time zone)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    cols = [F.unix_micros(f.name).alias(f.name) if isinstance(f.dataType, TimestampType)
            else F.col(f.name) for f in df.schema.fields
            if f.name not in WHERE or f.name == "log_dir"]
    rows = [r.asDict() for r in df.select(*cols).collect()]
    log_dirs = {r.pop("log_dir") for r in rows}
    return comparable(rows), log_dirs


def comparable(rows) -> list[dict]:
    """Rows as sorted JSON-able dicts (also used by the test on its local reads)."""
    out = [{k: plain(v) for k, v in r.items()} for r in rows]
    for r in out:  # a file's modification time: an object's is its upload time
        if r.get("max_timestamp_source") == "mtime":
            r["largest_timestamp"] = None
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def remote_reads(spark, uris: list[str], storage: dict[str, str]) -> dict:
    def load(**options):
        reader = spark.read.format("kafkalog").option("partitionStates", "all")
        for k, v in {**storage, **options}.items():
            reader = reader.option(k, v)
        return reader.load(uris)

    records = load(includeHeaders="true", includeControl="true", minPartitions="4")
    rows, log_dirs = rows_of(records)
    return {"records": rows, "batches": rows_of(load(level="batches"))[0],
            "segments": rows_of(load(level="segments"))[0], "log_dirs": sorted(log_dirs),
            "plan": records._jdf.queryExecution().toString(), **where(records)}


def where(df) -> dict:
    """Which Python processes (interpreter, process id, working directory: an executor's
    work directory) decoded the rows of a read."""
    seen = (df.rdd.mapPartitions(lambda rows: [(sys.executable, os.getpid(), os.getcwd(),
                                                 sum(1 for _ in rows))]).collect())
    return {"executors": sorted({w[0] for w in seen}), "pids": sorted({w[1] for w in seen}),
            "workdirs": sorted({w[2] for w in seen if w[3]})}


def what_if(spark, argv: list[str]) -> dict | None:
    """``--what-if DIR CONFIG AT_MS CHANGES``: the simulation on the cluster's executors."""
    if "--what-if" not in argv:
        return None
    at = argv.index("--what-if")
    path, config, now, changes = argv[at + 1:at + 5]
    from pyspark_kafkalog import analyses

    import segtools

    configs = {pi.topic: pi.config
               for pi in segtools.open(path).inputs(config=config).partitions}
    rows = analyses.what_if(spark, path, changes, configs, now_ms=int(now),
                            recommend=True).collect()
    return {"objects": [plain(r.asDict(recursive=True)) for r in rows]}


def main(argv: list[str]) -> None:
    master, tree = argv[0], argv[1]
    register = "--no-register" not in argv
    remotes = [a for i, a in enumerate(argv) if i and argv[i - 1] == "--remote"]
    from tests.spark.conftest import spark_environment

    spark_environment()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = (SparkSession.builder.master(master).appName("kafkalog-driver")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.cores.max", os.environ.get("KAFKALOG_CORES", "1"))
               .config("spark.executor.memory", "512m"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    try:
        if register:
            import pyspark_kafkalog
            pyspark_kafkalog.register(spark)
        df = spark.read.format("kafkalog").option("includeHeaders", "true").load(tree)
        per_partition = (df.groupBy("topic", "partition")
                         .agg(F.count("*").alias("count"),
                              F.sum((F.size("headers") > 0).cast("int")).alias("headers"))
                         .collect())
        counts = {f"{r['topic']}-{r['partition']}": r["count"] for r in per_partition}
        if "--counts-only" in argv:
            print(json.dumps({"master": spark.sparkContext.master, "counts": counts}))
            return
        committed = (spark.read.format("kafkalog").option("readCommitted", "true").load(tree)
                     .count())
        segments = spark.read.format("kafkalog").option("level", "segments").load(tree).count()
        headers = sum(r["headers"] for r in per_partition)
        storage = json.loads(os.environ.get("KAFKALOG_STORAGE_OPTIONS", "{}"))
        remote = remote_reads(spark, remotes, storage) if remotes else None
        print(json.dumps({"master": spark.sparkContext.master, "counts": counts,
                          "committed": committed, "segments": segments, "headers": headers,
                          "driver_pid": os.getpid(), "remote": remote,
                          "what_if": what_if(spark, argv),
                          **(where(df) if remote is None else {})}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
