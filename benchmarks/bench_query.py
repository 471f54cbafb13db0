"""``segtools query`` against peers in the same run, whole commands (fresh processes, output
to /dev/null); each figure is the first run and the best of the next ones:

* a point query (``topic``, ``partition``, ``"offset"`` =) over a tree of ``--partitions``
  partitions (default 10,000: ``benchmarks.bench_tree``'s broker-shaped log dir, built once
  under ``$SEGTOOLS_TREE_DIR``) against ``segtools find PARTITION_DIR --offset`` on the one
  partition (the issue's target: <= 2x);
* the full aggregation ``select topic, count(*), sum(octet_length(value)) from records group
  by topic`` over a generated segment (``--mib``, 500 records of 100 B per batch, as
  ``benchmarks.common`` builds them) against DuckDB over a Parquet (zstd) copy of the same
  records (target: <= 2x), beside the CPU time of the start-up alone (pyarrow with numpy,
  DuckDB, a connection) against the same peer: the part of the ratio no reader in Python
  avoids; and through Spark ``local[2]`` on the ``kafkalog`` source's views (target:
  ``segtools query`` ahead).

Prints JSON with the load average beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq

import segtools
from benchmarks.bench_tree import build_tree
from benchmarks.common import make_segment

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
#: The commands run as an installed segtools runs: with its modules' bytecode cached (pip
#: compiles it at install; a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile every
#: module on every run, 0.1-0.2 s of CPU no user pays, while the peer's DuckDB has its own)
AS_INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(*args: str) -> None:
    subprocess.run([SEGTOOLS, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False, env=AS_INSTALLED)


def python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, check=True,
                   env=AS_INSTALLED)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def paired(ours: Callable[[], None], peer: Callable[[], None], repeat: int) -> dict:
    """Both commands timed in turns (the machine's load falls on both alike): the first run
    of each, and the best of the runs after it, by the wall clock and by the CPU time the
    command used (user + system: what other tenants of a shared machine disturb less)."""
    wall: dict[str, list[float]] = {"ours": [], "peer": []}
    cpu: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(repeat + 1):
        for name, fn in (("ours", ours), ("peer", peer)):
            start, used = time.perf_counter(), _children_cpu()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - used)
    out: dict = {}
    for clock, times in (("wall", wall), ("cpu", cpu)):
        first = {name: t[0] for name, t in times.items()}
        best = {name: min(t[1:]) for name, t in times.items()}
        out[clock] = {"first_s": {k: round(v, 3) for k, v in first.items()},
                      "best_s": {k: round(v, 3) for k, v in best.items()},
                      "first_ratio": round(first["ours"] / first["peer"], 2),
                      "best_ratio": round(best["ours"] / best["peer"], 2)}
    return out


def point(partitions: int, repeat: int) -> dict:
    """A point query on one partition of a broker-shaped tree against ``find --offset``."""
    tree = build_tree(partitions)
    names = sorted(p.name for p in tree.iterdir()
                   if p.is_dir() and not p.name.startswith("_"))
    chosen = tree / names[len(names) // 2]
    topic, _, number = chosen.name.rpartition("-")
    segments = segtools.open(chosen).to_arrow("segments", columns=["next_offset"]).read_all()
    offset = max(segments.column("next_offset").to_pylist()) // 2
    sql = (f"select * from records where topic = '{topic}' and partition = {number} "
           f"and \"offset\" = {offset}")
    figures = paired(partial(run, "query", str(tree), "-c", sql),
                     partial(run, "find", str(chosen), "--offset", str(offset)), repeat)
    return {"benchmark": "query_point", "partitions": partitions, "partition": chosen.name,
            "offset": offset, "peer": "segtools find PARTITION_DIR --offset", **figures,
            "target": 2.0}


AGGREGATION = ("select topic, count(*), sum(octet_length(value)) from {source} "
               "group by topic")

#: What any Python process that hands Arrow batches to DuckDB pays before it reads a byte:
#: pyarrow (which imports numpy whenever it is installed) and DuckDB, and a connection.
START_UP = "import pyarrow, duckdb; duckdb.connect(':memory:').sql('select 1').fetchall()"


def aggregation(mib: int, repeat: int) -> dict:
    """The aggregation through ``segtools query`` and through DuckDB over Parquet (zstd)."""
    partition = make_segment(f"query-agg-{mib}-0", mib << 20).parent
    parquet = partition.parent / f"query-agg-{mib}.parquet"
    if not parquet.exists():
        table = segtools.open(partition).to_arrow(columns=["topic", "value"],
                                                  binary="binary").read_all()
        pq.write_table(table, parquet, compression="zstd")
    figures = paired(
        partial(run, "query", str(partition), "-c", AGGREGATION.format(source="records")),
        partial(python, "import duckdb; duckdb.sql(" + repr(AGGREGATION.format(
            source=f"read_parquet('{parquet}')")) + ").fetchall()"), repeat)
    # the floor under the target: that start-up alone, against the same peer
    start_up = paired(partial(python, START_UP), partial(python, "import duckdb; duckdb.sql("
                      + repr(AGGREGATION.format(source=f"read_parquet('{parquet}')"))
                      + ").fetchall()"), repeat)["cpu"]
    return {"benchmark": "query_aggregation", "segment_mib": mib,
            "peer": "duckdb over a Parquet (zstd) copy", **figures, "target": 2.0,
            "start_up_cpu": {"what": START_UP, "best_s": start_up["best_s"],
                             "best_ratio": start_up["best_ratio"]}}


SPARK = """
import json, sys, time
start = time.perf_counter()
from benchmarks.bench_spark import session
from pyspark_kafkalog.views import register_views
spark = session("local[2]")
register_views(spark, sys.argv[1])
ready = time.perf_counter()
times = []
for _ in range(int(sys.argv[3]) + 1):
    began = time.perf_counter()
    rows = spark.sql(sys.argv[2]).collect()
    times.append(time.perf_counter() - began)
print(json.dumps({"session_s": ready - start, "first_s": times[0], "best_s": min(times[1:]),
                  "rows": [list(r) for r in rows]}))
"""


def spark_aggregation(mib: int, repeat: int) -> dict:
    """The same aggregation through Spark ``local[2]`` on the ``kafkalog`` source (the views
    ``register_views`` makes), in one fresh process: the session's start (JVM, Python
    workers) and the query's first and best runs, against ``segtools query``'s whole
    command, first and best."""
    partition = make_segment(f"query-agg-{mib}-0", mib << 20).parent
    sql = AGGREGATION.format(source="records")
    done = subprocess.run([sys.executable, "-c", SPARK, str(partition), sql, str(repeat)],
                          capture_output=True, text=True, check=True)
    spark = json.loads(done.stdout.strip().splitlines()[-1])
    ours = []
    for _ in range(repeat + 1):
        began = time.perf_counter()
        run("query", str(partition), "-c", sql)
        ours.append(time.perf_counter() - began)
    whole = spark["session_s"] + spark["first_s"]
    return {"benchmark": "query_aggregation_spark", "segment_mib": mib,
            "peer": "spark local[2], kafkalog views (register_views)",
            "spark_session_s": round(spark["session_s"], 3),
            "spark_query_first_s": round(spark["first_s"], 3),
            "spark_query_best_s": round(spark["best_s"], 3),
            "query_first_s": round(ours[0], 3), "query_best_s": round(min(ours[1:]), 3),
            "query_over_spark_whole_command": round(ours[0] / whole, 3),
            "query_over_spark_query_in_a_warm_session": round(
                min(ours[1:]) / spark["best_s"], 2), "rows": spark["rows"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--partitions", type=int, default=10_000, help="the point query's tree")
    p.add_argument("--mib", type=int, default=256, help="the aggregation's segment size")
    p.add_argument("--repeat", type=int, default=3, help="runs after the first")
    p.add_argument("--only", choices=("point", "aggregation", "spark"))
    args = p.parse_args()
    if args.only in (None, "point"):
        print(json.dumps({**point(args.partitions, args.repeat),
                          "load_average": os.getloadavg()[0]}), flush=True)
    if args.only in (None, "aggregation"):
        print(json.dumps({**aggregation(args.mib, args.repeat),
                          "load_average": os.getloadavg()[0]}), flush=True)
    if args.only in (None, "spark"):
        print(json.dumps({**spark_aggregation(args.mib, args.repeat),
                          "load_average": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    main()
