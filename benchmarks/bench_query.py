"""``segtools query``: a point query against ``segtools find --offset`` on the one partition,
whole commands (fresh processes, output to /dev/null), best of three, in the same run.

The issue's target is <= 2x on a 10,000-partition tree; this script runs on the sample tree
(``--tree`` for another) and prints the ratio with the load average beside it. The other
figures the issue asks for (the full aggregation against DuckDB over Parquet and Spark
``local[2]``, the time-range segment count) are not measured yet (docs/query.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

from benchmarks.common import best_of

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "logdirs" / "sample"


def run(*args: str) -> None:
    subprocess.run([SEGTOOLS, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tree", type=Path, default=SAMPLE)
    p.add_argument("--topic", default="orders.v2-eu")
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--offset", type=int, default=230)
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


if __name__ == "__main__":
    main()
