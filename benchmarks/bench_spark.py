"""Spark read throughput: ``format("kafkalog")`` vs the plumbing's ceiling and a naive peer.

All three read the same generated tree (4 partitions x 64 MiB of uncompressed v2 batches,
copies of a batch written by Kafka's ``MemoryRecordsBuilder``, with offset and time indexes
written by the broker's rules) in the same run, on ``local[1]`` and ``local[2]``, and the
figures are printed as ratios (the machine is shared). Two batch shapes: ``one`` (one record
of 200 B per batch: ``linger.ms=0`` producers, internal topics) and ``large`` (500 x 100 B);
``--shape NAME`` runs one of them.

* **kafkalog**: ``spark.read.format("kafkalog").load(tree).count()`` (every column is built:
  Spark gives Python sources no column pruning), the same count loaded with a user schema
  of four columns (:data:`NARROW`: the only way the source learns which columns a query
  needs), and a key-reuse aggregation (:func:`pyspark_kafkalog.analyses.key_reuse`).
* **ceiling**: a trivial Python data source with the same schema, the same number of tasks
  and rows, yielding one ready-made Arrow batch over and over: what Spark's Python data
  source plumbing can take in at best (:mod:`benchmarks.bench_spark_ceiling`, a module that
  imports nothing of segtools). Loaded anew for every count, as kafkalog is.
* **naive peer**: kafka-python's ``MemoryRecords`` inside ``mapPartitions`` over the same
  files, rows turned into a DataFrame of the same schema.

Each count is timed as a user meets it (issue 23): the first ``count()`` in a fresh session
(Python workers and planners start, Spark's own code is cold), then the best of three. The
ceiling's first count is timed the same way, in a fresh session of its own (a child process:
a new JVM, no Python worker started): what it costs is Spark's, and what kafkalog's first
count costs beyond it is the source's (issue 37). Each first count is also split into the
CPU of the JVM, of the Python planners on the driver (``schema()``, ``partitions()``) and of
the executors' Python workers. Also printed: what one query costs whatever its data (the
count of a one-partition fixture), and the CPU per million rows of a warm count (the median
of the three timed counts of each source: the figure that shows a change when other work
shares the machine, as the wall clock does not).

Goals: kafkalog >= 70 % of the ceiling and >= 20x the naive peer (issue 6); one-record
batches on ``local[2]`` at >= 0.5 M rows/s for the first count of a fresh session and
>= 1.2 M rows/s best of three (issue 37). ``--no-naive`` skips
the slow naive peer; ``--master local[2]`` runs one master. Results also go to
``$SEGTOOLS_BENCH_DIR/segtools-bench/spark-<shape>.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import shapes
from benchmarks.bench_spark_ceiling import CeilingSource
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
#: The kinds of process a count's CPU is split into: the session's JVM (Spark: planning,
#: scheduling, Arrow batches to rows), the Python planners Spark starts on the driver for a
#: data source (``schema()`` at load, ``partitions()`` at the first action: modules
#: ``pyspark.sql.worker.*``) and the executors' Python workers (``read()``: the source's
#: decoding, the Arrow batches, their serialisation).
KINDS = ("jvm", "planners", "workers")


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


def _kind(pid: int, parent: str) -> str:
    """A process's kind: a Python daemon or worker started by the JVM is a planner or an
    executor worker by the module it runs (the last argument of ``pyspark.daemon``); what a
    daemon forks is of its daemon's kind."""
    if parent != "jvm":
        return parent
    argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    return "planners" if any(a.startswith(b"pyspark.sql.worker.") for a in argv) else "workers"


def cpu_split(spark) -> dict[str, float]:
    """CPU seconds so far of the session's JVM and of the Python processes under it, by kind
    (:data:`KINDS`). Exited workers are counted through their parent's ``cutime``."""
    out = dict.fromkeys(KINDS, 0.0)
    children = _children()
    todo = [(spark.sparkContext._gateway.proc.pid, "jvm")]
    while todo:
        pid, kind = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[kind] += (int(fields[11]) + int(fields[12])) / _HZ
        # children reaped by this one (forked Python workers) count as its own kind's;
        # the JVM reaps only Python processes
        reaped = (int(fields[13]) + int(fields[14])) / _HZ
        out["workers" if kind == "jvm" else kind] += reaped
        for child in children.get(pid, ()):
            try:
                todo.append((child, _kind(child, kind)))
            except OSError:
                continue
    return out


def cpu_of(spark, fn) -> tuple[float, dict[str, float], object]:
    """``fn()``'s wall time, the CPU it took by kind of process, and its result."""
    before = cpu_split(spark)
    t = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t
    after = cpu_split(spark)
    return wall, {k: after[k] - before[k] for k in before}, result


#: A user-given schema of the columns a query without payloads needs (``narrow``).
NARROW = "topic string, partition int, offset long, timestamp timestamp"
#: A one-partition fixture tree: what one query costs Spark whatever the data.
SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "logdirs" / "sample" / "orders.v2-eu-1"


def ceiling_frame(spark, tree: Path, tasks: int, rows: int, value_bytes: int):
    """The ceiling's DataFrame: kafkalog's schema, tasks and row count (see
    :mod:`benchmarks.bench_spark_ceiling`)."""
    from pyspark_kafkalog.options import Level
    from pyspark_kafkalog.schema import default_schema

    return (spark.read.format(CeilingSource.name()).schema(default_schema(Level.RECORDS, False))
            .option("tasks", tasks).option("rows", rows).option("topic", TOPIC)
            .option("logDir", str(tree)).option("valueBytes", value_bytes).load())


def first_count(spark, frame) -> dict:
    """A fresh session's first query as a notebook user meets it: ``load()`` (Spark's
    planner runs the source's ``schema()``), then ``count()`` (the planner runs
    ``partitions()``, the executors' Python workers start and read, the JVM's code is
    cold), each with its wall time and the CPU of every kind of process."""
    load_s, load_cpu, df = cpu_of(spark, frame)
    count_s, count_cpu, rows = cpu_of(spark, df.count)
    return {"load_s": load_s, "load_cpu": load_cpu, "first_s": count_s,
            "first_cpu": count_cpu, "rows": rows}


def ceiling_first(master: str, tree: Path, tasks: int, rows: int, value_bytes: int) -> dict:
    """The ceiling's first count in a fresh session of its own: a new process (a new JVM,
    no Python worker started, nothing of kafkalog's run before it)."""
    args = [sys.executable, "-m", "benchmarks.bench_spark", "--ceiling-first", master,
            str(tree), str(tasks), str(rows), str(value_bytes)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ceiling_first_main(master: str, tree: str, tasks: str, rows: str, value_bytes: str) -> None:
    spark = session(master)
    try:
        out = first_count(spark, lambda: ceiling_frame(spark, Path(tree), int(tasks), int(rows),
                                                       int(value_bytes)))
    finally:
        spark.stop()
    print(json.dumps(out))


def measure(master: str, tree: Path, naive: bool, value_bytes: int) -> dict:
    """As a user meets it: a fresh session, the first count (Python workers start, Spark's
    code is cold), then the best of three; the ceiling's first count in a fresh session of
    its own, and its best of three interleaved with kafkalog's in the first session."""
    from pyspark_kafkalog import analyses
    from pyspark_kafkalog.options import parse_options
    from pyspark_kafkalog.planning import plan

    tasks = len(plan(parse_options({"path": str(tree)})))  # what the source plans here
    spark = session(master)
    out: dict = {"tasks": tasks}

    def count():
        return spark.read.format("kafkalog").load(str(tree)).count()

    def narrow():
        """The user's way to name the columns a query needs: Spark 4 prunes no column of a
        Python source, so the schema given at load is all the reader learns."""
        return spark.read.format("kafkalog").schema(NARROW).load(str(tree)).count()

    try:
        out |= first_count(spark, lambda: spark.read.format("kafkalog").load(str(tree)))
        rows = out["rows"]
        def ceiling():
            """Loaded anew for each count, as kafkalog's is: a DataFrame keeps its planned
            partitions, so a reused one would skip the planner round trip kafkalog pays."""
            return ceiling_frame(spark, tree, tasks, rows, value_bytes).count()

        assert ceiling() == rows  # warms what the ceiling alone uses
        runs: dict[str, list[tuple[float, dict[str, float]]]] = {
            "kafkalog": [], "ceiling": [], "narrow": []}
        for _ in range(3):  # interleaved, so none gets a warmer JVM than the others
            for name, fn in (("kafkalog", count), ("ceiling", ceiling), ("narrow", narrow)):
                wall, cpu, n = cpu_of(spark, fn)
                assert n == rows
                runs[name].append((wall, cpu))
        for name, counts in runs.items():
            out[f"{name}_s"] = min(wall for wall, _ in counts)
            # the median count's CPU by kind: one count's figure moves with the machine's load
            out[f"{name}_cpu"] = {kind: statistics.median(cpu[kind] for _, cpu in counts)
                                  for kind in KINDS}
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
    out["ceiling_first"] = ceiling_first(master, tree, tasks, out["rows"], value_bytes)
    return out


def _sum(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {kind: a[kind] + b[kind] for kind in KINDS}


def _cpu_line(cpu: dict[str, float]) -> str:
    return ", ".join(f"{kind} {cpu[kind]:.2f}" for kind in KINDS)


def run_shape(shape: shapes.Shape, naive: bool, masters: tuple[str, ...]) -> bool:
    tree = build_tree(shape)
    size = sum(p.stat().st_size for p in tree.glob("*/*.log"))
    results: dict = {"tree_bytes": size, "load": os.getloadavg()}
    for master in masters:
        results[master] = measure(master, tree, naive=naive and master == "local[2]",
                                  value_bytes=shape.value_bytes)
    rows = results[masters[-1]]["rows"]
    print(f"== {shape.label} per batch: {PARTITIONS} partitions, {size / 2**20:.0f} MiB, "
          f"{rows / 1e6:.2f} M records of ~{size / rows:.0f} B (uncompressed v2); load "
          f"{results['load'][0]:.1f}")
    for master in masters:
        r = results[master]
        c1 = r["ceiling_first"]
        k, c = r["kafkalog_cpu"], r["ceiling_cpu"]
        share = r["ceiling_s"] / r["kafkalog_s"]
        print(f"{master} ({r['tasks']} tasks): kafkalog count: first "
              f"{rows / r['first_s'] / 1e6:.2f} M rows/s, best of three "
              f"{rows / r['kafkalog_s'] / 1e6:.2f} M rows/s; ceiling: first "
              f"{rows / c1['first_s'] / 1e6:.2f} M rows/s, best of three "
              f"{rows / r['ceiling_s'] / 1e6:.2f} M rows/s -> {share:.0%} of the ceiling; "
              f"key reuse {rows / r['key_reuse_s'] / 1e6:.2f} M rows/s")
        kafkalog_first, ceiling_first = r["load_s"] + r["first_s"], c1["load_s"] + c1["first_s"]
        print(f"  first query of a fresh session: kafkalog load {r['load_s']:.2f} s + count "
              f"{r['first_s']:.2f} s, the ceiling load {c1['load_s']:.2f} s + count "
              f"{c1['first_s']:.2f} s (its schema given: Spark starts the planner that "
              f"creates it at the count, not at load): kafkalog's first query is "
              f"{kafkalog_first / ceiling_first:.2f}x the ceiling's")
        print(f"  CPU s of the first query, load + count: kafkalog "
              f"{_cpu_line(_sum(r['load_cpu'], r['first_cpu']))}; ceiling "
              f"{_cpu_line(_sum(c1['load_cpu'], c1['first_cpu']))}")
        print(f"  one query's fixed cost (a {SMALL.name} count): {r['fixed_s']:.2f} s = "
              f"{r['fixed_s'] / r['kafkalog_s']:.0%} of the count; CPU per M rows of a warm "
              f"count (the median of three): kafkalog "
              f"{_cpu_line({n: v / rows * 1e6 for n, v in k.items()})}; "
              f"ceiling {_cpu_line({n: v / rows * 1e6 for n, v in c.items()})}")
        print(f"  a user schema of four columns ({NARROW}): best of three "
              f"{rows / r['narrow_s'] / 1e6:.2f} M rows/s = "
              f"{r['kafkalog_s'] / r['narrow_s']:.2f}x the full schema's; CPU per M rows "
              f"{_cpu_line({n: v / rows * 1e6 for n, v in r['narrow_cpu'].items()})}")
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
            steady, first = rows / r2["kafkalog_s"] / 1e6, rows / r2["first_s"] / 1e6
            print(f"one-record batches on local[2]: first count {first:.2f} M rows/s "
                  f"(target >= 0.5: {'met' if first >= 0.5 else 'NOT met'}), best of three "
                  f"{steady:.2f} M rows/s (target >= 1.2: {'met' if steady >= 1.2 else 'NOT met'})")
        if naive:
            print(f"naive peer (kafka-python in mapPartitions, local[2]): "
                  f"{rows / r2['naive_s'] / 1e3:.0f} k rows/s -> kafkalog is "
                  f"{r2['naive_s'] / r2['kafkalog_s']:.0f}x faster")
            ok = ok and r2["naive_s"] / r2["kafkalog_s"] >= 20
    (OUT / f"spark-{shape.name}.json").write_text(json.dumps(results, indent=1))
    print(f"goal (>= 70% of the ceiling, >= 20x the naive peer): {'met' if ok else 'NOT met'}")
    return ok


def main() -> None:
    if "--ceiling-first" in sys.argv:
        at = sys.argv.index("--ceiling-first")
        _ceiling_first_main(*sys.argv[at + 1:at + 6])
        return
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
