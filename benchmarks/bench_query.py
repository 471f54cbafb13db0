"""``segtools query`` against peers in the same run, whole commands (fresh processes, output
to /dev/null), best of three:

* a point query against ``segtools find --offset`` on the one partition (the issue's target:
  <= 2x, on a 10,000-partition tree; here the sample tree, ``--tree`` for another);
* the full aggregation ``select topic, count(*), sum(octet_length(value)) from records group
  by topic`` over a generated segment (``--mib``, 500 records of 100 B per batch, as
  ``benchmarks.common`` builds them) against DuckDB over a Parquet (zstd) copy of the same
  records (target: <= 2x). Spark ``local[2]`` and the time-range count are not measured yet.

Prints JSON with the load average beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq

import segtools
from benchmarks.common import best_of, make_segment

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "logdirs" / "sample"


def run(*args: str) -> None:
    subprocess.run([SEGTOOLS, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


AGGREGATION = ("select topic, count(*), sum(octet_length(value)) from {source} "
               "group by topic")


def python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, check=True)


def aggregation(mib: int) -> dict:
    """The aggregation through ``segtools query`` and through DuckDB over Parquet (zstd)."""
    partition = make_segment(f"query-agg-{mib}-0", mib << 20).parent
    parquet = partition.parent / f"query-agg-{mib}.parquet"
    if not parquet.exists():
        table = segtools.open(partition).to_arrow(columns=["topic", "value"],
                                                  binary="binary").read_all()
        pq.write_table(table, parquet, compression="zstd")
    ours = best_of(partial(run, "query", str(partition), "-c",
                           AGGREGATION.format(source="records")))
    peer = best_of(partial(python, "import duckdb; duckdb.sql(" + repr(AGGREGATION.format(
        source=f"read_parquet('{parquet}')")) + ").fetchall()"))
    return {"segment_mib": mib, "query_s": round(ours, 3), "duckdb_parquet_s": round(peer, 3),
            "query_over_duckdb_parquet": round(ours / peer, 2), "target": 2.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tree", type=Path, default=SAMPLE)
    p.add_argument("--topic", default="orders.v2-eu")
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--offset", type=int, default=230)
    p.add_argument("--mib", type=int, default=64, help="the aggregation's segment size")
    args = p.parse_args()
    sql = (f"select * from records where topic = '{args.topic}' and partition = "
           f"{args.partition} and \"offset\" = {args.offset}")
    find = best_of(partial(run, "find", str(args.tree / f"{args.topic}-{args.partition}"),
                           "--offset", str(args.offset)))
    query = best_of(partial(run, "query", str(args.tree), "-c", sql))
    print(json.dumps({"benchmark": "query_point", "tree": str(args.tree),
                      "find_s": round(find, 3), "query_s": round(query, 3),
                      "query_over_find": round(query / find, 2), "target": 2.0,
                      "load_average": os.getloadavg()[0]}))
    print(json.dumps({"benchmark": "query_aggregation", **aggregation(args.mib),
                      "load_average": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
