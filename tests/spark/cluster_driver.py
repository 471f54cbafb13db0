"""A Spark driver run in its own process by the cluster and auto-registration tests.

``python -m tests.spark.cluster_driver MASTER TREE [--no-register] [--counts-only]`` reads
``TREE`` with ``format("kafkalog")`` and prints one JSON document: records per
topic-partition, and (unless ``--counts-only``) the read-committed total, the number of
segments, and the Python executables and process ids the rows were decoded in.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> None:
    master, tree = argv[0], argv[1]
    register = "--no-register" not in argv
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
               .config("spark.cores.max", "1")
               .config("spark.executor.memory", "1g"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    try:
        if register:
            import pyspark_kafkalog
            pyspark_kafkalog.register(spark)
        df = spark.read.format("kafkalog").option("includeHeaders", "true").load(tree)
        counts = {f"{r['topic']}-{r['partition']}": r["count"]
                  for r in df.groupBy("topic", "partition").count().collect()}
        if "--counts-only" in argv:
            print(json.dumps({"master": spark.sparkContext.master, "counts": counts}))
            return
        committed = (spark.read.format("kafkalog").option("readCommitted", "true").load(tree)
                     .count())
        segments = spark.read.format("kafkalog").option("level", "segments").load(tree).count()
        where = (spark.read.format("kafkalog").load(tree).rdd
                 .mapPartitions(lambda rows: [(sys.executable, os.getpid(), sum(1 for _ in rows))])
                 .collect())
        headers = df.filter(F.size("headers") > 0).count()
        print(json.dumps({"master": spark.sparkContext.master, "counts": counts,
                          "committed": committed, "segments": segments, "headers": headers,
                          "executors": sorted({w[0] for w in where}),
                          "pids": sorted({w[1] for w in where}), "driver_pid": os.getpid()}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
