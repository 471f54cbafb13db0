"""``segtools query`` against peers in the same run, whole commands (fresh processes, output
to /dev/null); each figure is the first run and the best of the next ones:

* a point query (``topic``, ``partition``, ``"offset"`` =) over a tree of ``--partitions``
  partitions (default 10,000: ``benchmarks.bench_tree``'s broker-shaped log dir, built once
  under ``$SEGTOOLS_TREE_DIR``) against ``segtools find PARTITION_DIR --offset`` on the one
  partition (the issue's target: <= 2x);
* the full aggregation ``select topic, count(*), sum(octet_length(value)) from records group
  by topic`` over a ``--mib`` segment of each batch shape users have (``benchmarks.shapes``:
  written by Kafka's ``MemoryRecordsBuilder``, random text values, in a rolled log dir)
  against DuckDB over a Parquet copy of the same records, written as a user writes one
  (``pyarrow.parquet.write_table(..., compression="zstd")``, default row groups; target:
  <= 2x). Beside each, the start-up alone (pyarrow with numpy, DuckDB, a connection) against
  the same peer: the part of the ratio no reader in Python avoids. One more row keeps the
  earlier figure, a segment of copies of ONE batch (``benchmarks.common.make_segment``),
  whose Parquet copy compresses about 1,000-fold and so flatters the peer;
* the same aggregation through Spark ``local[2]`` on the ``kafkalog`` source's views (target:
  ``segtools query`` ahead).

Prints JSON lines with the load average beside the figures, and the aggregation's ratios as a
table on stderr.
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
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq

import segtools
from benchmarks.bench_tree import build_tree
from benchmarks.common import OUT, make_segment
from benchmarks.shapes import SHAPES, rolled

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


def turns(commands: dict[str, Callable[[], None]], repeat: int
          ) -> dict[str, dict[str, list[float]]]:
    """Each command run ``repeat + 1`` times, all of them in turns (the machine's load falls
    on each alike): the seconds of every run by the wall clock and by the CPU time the command
    used (user + system: what other tenants of a shared machine disturb less)."""
    times: dict[str, dict[str, list[float]]] = {"wall": {n: [] for n in commands},
                                                "cpu": {n: [] for n in commands}}
    for _ in range(repeat + 1):
        for name, fn in commands.items():
            start, used = time.perf_counter(), _children_cpu()
            fn()
            times["wall"][name].append(time.perf_counter() - start)
            times["cpu"][name].append(_children_cpu() - used)
    return times


def against(times: dict[str, list[float]], ours: str, peer: str) -> dict:
    """One clock's first run and best later run of ``ours`` and ``peer``, and their ratios."""
    first = {name: times[name][0] for name in (ours, peer)}
    best = {name: min(times[name][1:]) for name in (ours, peer)}
    return {"first_s": {k: round(v, 3) for k, v in first.items()},
            "best_s": {k: round(v, 3) for k, v in best.items()},
            "first_ratio": round(first[ours] / first[peer], 2),
            "best_ratio": round(best[ours] / best[peer], 2)}


def paired(ours: Callable[[], None], peer: Callable[[], None], repeat: int) -> dict:
    """``ours`` against ``peer``, timed in turns, by both clocks."""
    times = turns({"ours": ours, "peer": peer}, repeat)
    return {clock: against(times[clock], "ours", "peer") for clock in ("wall", "cpu")}


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


@dataclass(frozen=True, slots=True)
class Aggregated:
    """One row of the aggregation figure: a partition and the Parquet copy of its records."""

    label: str
    partition: Path
    parquet: Path


def parquet_copy(partition: Path, parquet: Path) -> Path:
    """The partition's records (the ``records`` view's columns, keys and values as plain
    binary) in a Parquet file as a user writes one: pyarrow's writer, zstd, its default row
    groups. Written once (through a temporary name, so a run stopped half-way leaves none)."""
    if not parquet.exists():
        table = segtools.open(partition).to_arrow(binary="binary").read_all()
        partial_file = parquet.with_suffix(f".{os.getpid()}.tmp")
        pq.write_table(table, partial_file, compression="zstd")
        partial_file.rename(parquet)
    return parquet


def aggregated(mib: int, names: tuple[str, ...]) -> list[Aggregated]:
    """The rows: each shape named (its segment rolled in a log dir of its own), then the
    segment of one batch copied (``repeated``), labelled for what it is."""
    rows = []
    for shape in SHAPES:
        if shape.name in names:
            partition = rolled(shape, mib << 20)
            rows.append(Aggregated(shape.label, partition, parquet_copy(
                partition, OUT / "shapes" / f"query-{shape.name}-{mib}m.parquet")))
    if REPEATED in names:
        partition = make_segment(f"query-agg-{mib}-0", mib << 20).parent
        rows.append(Aggregated("500 x 100 B, ONE batch copied (flatters the peer)", partition,
                               parquet_copy(partition, OUT / f"query-agg-{mib}-records.parquet")))
    return rows


#: the row of ``make_segment``'s copies of one batch
REPEATED = "repeated"


def aggregation(row: Aggregated, repeat: int) -> dict:
    """The aggregation through ``segtools query`` and through DuckDB over the Parquet copy,
    and the start-up alone, all three in turns."""
    peer_sql = AGGREGATION.format(source=f"read_parquet('{row.parquet}')")
    times = turns({"ours": partial(run, "query", str(row.partition), "-c",
                                   AGGREGATION.format(source="records")),
                   "peer": partial(python, f"import duckdb; duckdb.sql({peer_sql!r}).fetchall()"),
                   "start_up": partial(python, START_UP)}, repeat)
    return {"benchmark": "query_aggregation", "shape": row.label, "segment_mib": round(
                sum(f.stat().st_size for f in row.partition.glob("*.log")) / 2**20),
            "parquet_mib": round(row.parquet.stat().st_size / 2**20, 2),
            "peer": "duckdb over a Parquet (zstd) copy",
            **{clock: against(times[clock], "ours", "peer") for clock in ("wall", "cpu")},
            "target": 2.0,
            "start_up": {"what": START_UP,
                         **{clock: against(times[clock], "start_up", "peer")
                            for clock in ("wall", "cpu")}}}


def table(rows: list[dict]) -> str:
    """The aggregation's ratios, one line a row: ours / peer, first and best, by both clocks,
    and the start-up's best CPU ratio beside them."""
    lines = [f"{'shape':<50} {'wall first':>10} {'wall best':>9} {'cpu first':>9} "
             f"{'cpu best':>8} {'start-up cpu':>12}"]
    for r in rows:
        lines.append(f"{r['shape']:<50} {r['wall']['first_ratio']:>9}x "
                     f"{r['wall']['best_ratio']:>8}x {r['cpu']['first_ratio']:>8}x "
                     f"{r['cpu']['best_ratio']:>7}x {r['start_up']['cpu']['best_ratio']:>11}x")
    return "\n".join(lines)


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
    shapes = (*(s.name for s in SHAPES), REPEATED)
    p.add_argument("--shape", action="append", choices=shapes,
                   help="the aggregation's rows (repeatable; default: every shape, then the "
                        "repeated batch)")
    args = p.parse_args()
    if args.only in (None, "point"):
        print(json.dumps({**point(args.partitions, args.repeat),
                          "load_average": os.getloadavg()[0]}), flush=True)
    if args.only in (None, "aggregation"):
        rows = []
        for row in aggregated(args.mib, tuple(args.shape or shapes)):
            rows.append({**aggregation(row, args.repeat), "load_average": os.getloadavg()[0]})
            print(json.dumps(rows[-1]), flush=True)
        print(table(rows), file=sys.stderr)
    if args.only in (None, "spark"):
        print(json.dumps({**spark_aggregation(args.mib, args.repeat),
                          "load_average": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    main()
