"""Records into Arrow: ``segtools.open(dir).to_arrow()`` against Kafka's deep iteration.

For the uncompressed shapes of :mod:`benchmarks.shapes` (a 256 MiB segment written by Kafka's
``MemoryRecordsBuilder``, rolled in a log dir with its checkpoints so it is sealed and read
through the mapping), in the same run, page cache warm, best of several passes: every Arrow
record batch of the default record columns (key, value, topic, partition, offset, timestamp,
timestampType), values as binary views over the mapping (the default) and copied into plain
``binary`` (what Spark reads), against Kafka's ``ensureValid()`` + ``streamingIterator``
touching every key, value and header (warm JIT, in-JVM time).

Targets (issue 25): views >= 2x Kafka on 16 x 1 KiB and 500 x 100 B, >= 5x on one-record
batches.
"""

from __future__ import annotations

import json

import segtools
from benchmarks import kafka_java
from benchmarks.bench_walk import best
from benchmarks.common import OUT
from benchmarks.shapes import SHAPES, rolled, segment

SIZE = 256 << 20
TARGETS = {"k16": 2.0, "large": 2.0, "one": 5.0}


def to_arrow(pdir, binary: str) -> int:
    rows = 0
    for batch in segtools.open(pdir).to_arrow(binary=binary):
        rows += batch.num_rows
    return rows


def main() -> None:
    results = {}
    for shape in (s for s in SHAPES if s.name in TARGETS):
        pdir = rolled(shape, SIZE)
        path = segment(shape, SIZE)
        rows = to_arrow(pdir, "view")  # warm the page cache
        r: dict = {"bytes": path.stat().st_size, "records": rows}
        r["views_s"] = best(lambda p=pdir: to_arrow(p, "view"), 3)
        r["binary_s"] = best(lambda p=pdir: to_arrow(p, "binary"), 3)
        java = kafka_java.run("deep", path, repeat=5)
        line = (f"to_arrow() of 256 MiB of {shape.label:>11}: views "
                f"{rows / r['views_s'] / 1e6:5.2f} M records/s, binary copies "
                f"{rows / r['binary_s'] / 1e6:5.2f} M records/s")
        if java:
            r["kafka_deep_s"] = min(java[1])
            r["x_kafka_views"] = r["kafka_deep_s"] / r["views_s"]
            r["x_kafka_binary"] = r["kafka_deep_s"] / r["binary_s"]
            line += (f"; {r['x_kafka_views']:.1f}x (views) and {r['x_kafka_binary']:.1f}x "
                     f"(binary) Kafka's streamingIterator (target {TARGETS[shape.name]}x)")
        results[shape.name] = r
        print(line)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "arrow.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
