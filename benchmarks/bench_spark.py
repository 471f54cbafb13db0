"""Spark read throughput: ``format("kafkalog")`` vs the plumbing's ceiling and a naive peer.

All three read the same generated tree (4 partitions x 64 MiB of uncompressed v2 batches,
copies of a batch written by Kafka's ``MemoryRecordsBuilder``, with offset and time indexes
written by the broker's rules) in the same run, on ``local[1]`` and ``local[2]``, and the
figures are printed as ratios (the machine is shared). Two batch shapes: ``one`` (one record
of 200 B per batch: ``linger.ms=0`` producers, internal topics) and ``large`` (500 x 100 B);
``--shape NAME`` runs one of them.

* **kafkalog**: ``spark.read.format("kafkalog").load(tree).count()`` (every column is built:
  Spark gives Python sources no column pruning), and a key-reuse aggregation
  (:func:`pyspark_kafkalog.analyses.key_reuse`).
* **ceiling**: a trivial Python data source with the same schema, the same number of tasks
  and rows, yielding one ready-made Arrow batch over and over: what Spark's Python data
  source plumbing can take in at best.
* **naive peer**: kafka-python's ``MemoryRecords`` inside ``mapPartitions`` over the same
  files, rows turned into a DataFrame of the same schema.

Each count is timed as a user meets it (issue 23): the first ``count()`` in a fresh session
(Python workers start, Spark's own code is cold), then the best of three. Also printed: what
one query costs whatever its data (the count of a one-partition fixture), and the CPU a count
takes in the JVM (Spark: planning, scheduling, Arrow batches to rows) and in the Python
processes (the source's decoding and the Arrow batches' serialisation), per million rows.

Goals: kafkalog >= 70 % of the ceiling and >= 20x the naive peer (issue 6); one-record
batches at >= 1.0 M rows/s on ``local[2]``, best of three (issue 23). ``--no-naive`` skips
the slow naive peer; ``--master local[2]`` runs one master. Results also go to
``$SEGTOOLS_BENCH_DIR/segtools-bench/spark-<shape>.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from benchmarks import shapes
from benchmarks.common import OUT

PARTITIONS = 4
PARTITION_BYTES = 64 * 1024 * 1024
TOPIC = "bench"


def kafka_batch(shape: shapes.Shape) -> bytes:
    """The first batch of a small segment of ``shape`` written by Kafka's own builder."""
    data = shapes.segment(shape, shapes.MB).read_bytes()
    return data[:12 + int.from_bytes(data[8:12], "big")]


def build_tree(shape: shapes.Shape) -> Path:
    """The tree, written once and reused (``SEGTOOLS_BENCH_DIR`` chooses where)."""
    from tests.spark.logbuilder import write_partition

    root = OUT / f"spark-tree-{shape.name}" / "logs"
    template = kafka_batch(shape)
    batches = PARTITION_BYTES // len(template)
    for p in range(PARTITIONS):
        pdir = root / f"{TOPIC}-{p}"
        if not (pdir / "00000000000000000000.log").exists():
            write_partition(pdir, template, batches=batches, segment_bytes=2 * PARTITION_BYTES)
    return root


def session(master: str):
    import pyspark_kafkalog
    from pyspark.sql import SparkSession

    from tests.spark.conftest import quiet_log4j, spark_environment

    spark_environment()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()),
                                                              os.environ.get("PYTHONPATH")]))
    OUT.mkdir(parents=True, exist_ok=True)
    opts = quiet_log4j(OUT)
    spark = (SparkSession.builder.master(master).appName(f"bench-spark-{master}")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "2g")
             .config("spark.driver.extraJavaOptions", opts).getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    pyspark_kafkalog.register(spark)
    spark.dataSource.register(CeilingSource)
    return spark


# ------------------------------------------------------------------------------ ceiling

_READY: dict = {}


def _ready_batch(schema, rows: int, log_dir: str, value_bytes: int):
    """One Arrow batch shaped like kafkalog's rows (10-byte keys, values of the shape's size,
    the same topic and log dir strings), built once per Python worker and then yielded as is."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    if (rows, log_dir, value_bytes) in _READY:
        return _READY[rows, log_dir, value_bytes]
    target = to_arrow_schema(schema, timezone="UTC")
    i = np.arange(rows)
    values = {
        "key": pa.array([b"key-%06d" % (k % 5000) for k in range(rows)], pa.binary()),
        "value": pa.array([b"v" * value_bytes] * rows, pa.binary()),
        "topic": pa.array([TOPIC] * rows), "partition": pa.array(np.zeros(rows, np.int32)),
        "offset": pa.array(i), "timestamp": pa.array(i * 1000, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array(np.zeros(rows, np.int32)),
        "log_dir": pa.array([log_dir] * rows),
        "segment_base_offset": pa.array(np.zeros(rows, np.int64)),
        "position": pa.array(i), "producer_id": pa.array(np.full(rows, -1, np.int64)),
        "producer_epoch": pa.array(np.full(rows, -1, np.int32)),
        "leader_epoch": pa.array(np.zeros(rows, np.int32)),
        "is_transactional": pa.array(np.zeros(rows, bool)),
        "is_control": pa.array(np.zeros(rows, bool)),
        "compression": pa.array(["none"] * rows), "crc_valid": pa.array(np.ones(rows, bool)),
        "magic": pa.array(np.full(rows, 2, np.int32)),
    }
    batch = pa.RecordBatch.from_arrays([values[f.name] for f in target], schema=target)
    _READY[rows, log_dir, value_bytes] = batch
    return batch


class _CeilingReader(DataSourceReader):
    def __init__(self, schema, tasks: int, rows: int, batch_rows: int, log_dir: str,
                 value_bytes: int):
        self.schema, self.tasks, self.rows, self.batch_rows = schema, tasks, rows, batch_rows
        self.log_dir, self.value_bytes = log_dir, value_bytes

    def partitions(self):
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition):
        share = self.rows // self.tasks + (partition.value < self.rows % self.tasks)
        batch = _ready_batch(self.schema, self.batch_rows, self.log_dir, self.value_bytes)
        while share > 0:
            yield batch if share >= batch.num_rows else batch.slice(0, share)
            share -= batch.num_rows


class CeilingSource(DataSource):
    @classmethod
    def name(cls):
        return "kafkalog_ceiling"

    def schema(self):
        from pyspark_kafkalog.options import Level
        from pyspark_kafkalog.schema import default_schema
        return default_schema(Level.RECORDS, False)

    def reader(self, schema):
        o = self.options
        return _CeilingReader(schema, int(o["tasks"]), int(o["rows"]), int(o["batchrows"]),
                              o["logdir"], int(o["valuebytes"]))


# ---------------------------------------------------------------------------- naive peer


def _naive_partition(paths):
    """kafka-python's reader, one row tuple per record (what a hand-rolled job does)."""
    from kafka.record.memory_records import MemoryRecords

    utc = dt.UTC
    for path in paths:
        log_dir, pdir = str(Path(path).parent.parent), Path(path).parent.name
        topic, partition = pdir.rsplit("-", 1)
        base = int(Path(path).name[:20])
        with open(path, "rb") as f:
            records = MemoryRecords(f.read())
        position = 0
        while (batch := records.next_batch()) is not None:
            valid = batch.validate_crc()
            codec = ("none", "gzip", "snappy", "lz4", "zstd")[batch.compression_type]
            for r in batch:
                yield (r.key, r.value, topic, int(partition), r.offset,
                       dt.datetime.fromtimestamp(r.timestamp / 1000, utc), r.timestamp_type,
                       log_dir, base, position, batch.producer_id, batch.producer_epoch,
                       batch.leader_epoch, batch.is_transactional, batch.is_control_batch,
                       codec, valid, batch.magic)
            position += batch.size_in_bytes


def naive_count(spark, logs: list[str]) -> int:
    from pyspark_kafkalog.options import Level
    from pyspark_kafkalog.schema import default_schema

    rdd = spark.sparkContext.parallelize(logs, len(logs)).mapPartitions(_naive_partition)
    return spark.createDataFrame(rdd, default_schema(Level.RECORDS, False)).count()


# ------------------------------------------------------------------------------- timing


def timed(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


_HZ = os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(p.name))
    return out


def cpu_split(spark) -> dict[str, float]:
    """CPU seconds so far of the session's JVM (Spark: planning, scheduling, Arrow to rows)
    and of every Python process under it (the source's planner and Python workers: decoding,
    Arrow batches, their serialisation). Exited workers are counted through ``cutime``."""
    root = spark.sparkContext._gateway.proc.pid
    tree, todo, children = [], [root], _children()
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    out = {"jvm": 0.0, "python": 0.0}
    for pid in tree:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        own = (int(fields[11]) + int(fields[12])) / _HZ
        waited = (int(fields[13]) + int(fields[14])) / _HZ
        kind = "python" if comm.startswith("python") else "jvm"
        out[kind] += own
        out["python"] += waited  # children reaped by this one: Python workers
    return out


def cpu_of(spark, fn) -> tuple[float, dict[str, float]]:
    before = cpu_split(spark)
    t = time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    after = cpu_split(spark)
    return wall, {k: after[k] - before[k] for k in before}


#: A one-partition fixture tree: what one query costs Spark whatever the data.
SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "logdirs" / "sample" / "orders.v2-eu-1"


def measure(master: str, tree: Path, naive: bool, value_bytes: int) -> dict:
    """As a user meets it: a fresh session, the first count (Python workers start, Spark's
    code is cold), then the best of three; the ceiling the same way in the same session."""
    from pyspark_kafkalog import analyses
    from pyspark_kafkalog.options import parse_options
    from pyspark_kafkalog.planning import plan

    spark = session(master)
    tasks = len(plan(parse_options({"path": str(tree)})))  # what the source plans here
    out: dict = {"tasks": tasks}

    def count():
        return spark.read.format("kafkalog").load(str(tree)).count()

    try:
        t = time.perf_counter()
        rows = count()
        out["first_s"] = time.perf_counter() - t
        out["rows"] = rows
        ceiling = (spark.read.format("kafkalog_ceiling").option("tasks", tasks)
                   .option("rows", rows).option("batchRows", 65536)
                   .option("logDir", str(tree)).option("valueBytes", value_bytes).load())
        assert ceiling.count() == rows  # its first count: both are warm from here on
        runs: dict[str, list[float]] = {"kafkalog_s": [], "ceiling_s": []}
        for _ in range(3):  # interleaved, so neither gets a warmer JVM than the other
            for name, fn in (("kafkalog_s", count), ("ceiling_s", ceiling.count)):
                t = time.perf_counter()
                assert fn() == rows
                runs[name].append(time.perf_counter() - t)
        out |= {name: min(times) for name, times in runs.items()}
        out["kafkalog_cpu"] = cpu_of(spark, count)[1]
        out["ceiling_cpu"] = cpu_of(spark, ceiling.count)[1]
        out["fixed_s"], _ = timed(lambda: spark.read.format("kafkalog").load(str(SMALL))
                                  .count(), 3)
        out["key_reuse_s"], reuse = timed(
            lambda: analyses.key_reuse(spark.read.format("kafkalog").load(str(tree)))
            .collect(), 2)
        assert sum(r["records"] for r in reuse) == rows
        if naive:
            logs = sorted(str(p) for p in tree.glob("*/*.log"))
            out["naive_s"], n = timed(lambda: naive_count(spark, logs), 1)
            assert n == rows
    finally:
        spark.stop()
    return out


def run_shape(shape: shapes.Shape, naive: bool, masters: tuple[str, ...]) -> bool:
    tree = build_tree(shape)
    size = sum(p.stat().st_size for p in tree.glob("*/*.log"))
    results: dict = {"tree_bytes": size}
    for master in masters:
        results[master] = measure(master, tree, naive=naive and master == "local[2]",
                                  value_bytes=shape.value_bytes)
    rows = results[masters[-1]]["rows"]
    print(f"== {shape.label} per batch: {PARTITIONS} partitions, {size / 2**20:.0f} MiB, "
          f"{rows / 1e6:.2f} M records of ~{size / rows:.0f} B (uncompressed v2)")
    for master in masters:
        r = results[master]
        k, c = r["kafkalog_cpu"], r["ceiling_cpu"]
        share = r["ceiling_s"] / r["kafkalog_s"]
        print(f"{master} ({r['tasks']} tasks): kafkalog count: first "
              f"{rows / r['first_s'] / 1e6:.2f} M rows/s, best of three "
              f"{rows / r['kafkalog_s'] / 1e6:.2f} M rows/s; ceiling "
              f"{rows / r['ceiling_s'] / 1e6:.2f} M rows/s -> {share:.0%} of the ceiling; "
              f"key reuse {rows / r['key_reuse_s'] / 1e6:.2f} M rows/s")
        print(f"  one query's fixed cost (a {SMALL.name} count): {r['fixed_s']:.2f} s = "
              f"{r['fixed_s'] / r['kafkalog_s']:.0%} of the count; CPU per M rows: JVM "
              f"{k['jvm'] / rows * 1e6:.2f} s, Python {k['python'] / rows * 1e6:.2f} s "
              f"(ceiling: JVM {c['jvm'] / rows * 1e6:.2f} s, Python "
              f"{c['python'] / rows * 1e6:.2f} s)")
    ok = min(results[m]["ceiling_s"] / results[m]["kafkalog_s"] for m in masters) >= 0.7
    if "local[1]" in masters and "local[2]" in masters:
        r1, r2 = results["local[1]"], results["local[2]"]
        print(f"scaling local[1] -> local[2]: kafkalog "
              f"{r1['kafkalog_s'] / r2['kafkalog_s']:.2f}x, ceiling "
              f"{r1['ceiling_s'] / r2['ceiling_s']:.2f}x, key reuse "
              f"{r1['key_reuse_s'] / r2['key_reuse_s']:.2f}x")
    if "local[2]" in masters:
        r2 = results["local[2]"]
        if shape.name == "one":
            steady = rows / r2["kafkalog_s"] / 1e6
            print(f"one-record batches on local[2], best of three: {steady:.2f} M rows/s "
                  f"(target >= 1.0: {'met' if steady >= 1.0 else 'NOT met'})")
        if naive:
            print(f"naive peer (kafka-python in mapPartitions, local[2]): "
                  f"{rows / r2['naive_s'] / 1e3:.0f} k rows/s -> kafkalog is "
                  f"{r2['naive_s'] / r2['kafkalog_s']:.0f}x faster")
            ok = ok and r2["naive_s"] / r2["kafkalog_s"] >= 20
    (OUT / f"spark-{shape.name}.json").write_text(json.dumps(results, indent=1))
    print(f"goal (>= 70% of the ceiling, >= 20x the naive peer): {'met' if ok else 'NOT met'}")
    return ok


def main() -> None:
    naive = "--no-naive" not in sys.argv
    names = ("one", "large")
    if "--shape" in sys.argv:
        names = (sys.argv[sys.argv.index("--shape") + 1],)
    masters = ("local[1]", "local[2]")
    if "--master" in sys.argv:
        masters = (sys.argv[sys.argv.index("--master") + 1],)
    by_name = {s.name: s for s in shapes.SHAPES}
    for name in names:
        run_shape(by_name[name], naive, masters)


if __name__ == "__main__":
    main()
