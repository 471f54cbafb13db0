"""Records into Arrow: ``segtools.open(dir).to_arrow()`` against Kafka's deep iteration.

For the uncompressed shapes of :mod:`benchmarks.shapes` (a 256 MiB segment written by Kafka's
``MemoryRecordsBuilder``, rolled in a log dir with its checkpoints so it is sealed and read
through the mapping), in the same run, page cache warm, what a user times: the whole call,
``segtools.open(dir)`` through the last Arrow record batch of the default record columns (key,
value, topic, partition, offset, timestamp, timestampType and the batch fields, ``crc_valid``
among them, so every CRC is checked as Kafka's ``ensureValid`` checks it), each batch let go
before the next, as a consumer that streams does. Keys and values as binary views over the
mapping (the default) and copied into plain ``binary`` (what Spark reads).

Two figures each, against the same two of Kafka's ``ensureValid()`` + ``streamingIterator``
touching every key, value and header (in-JVM time, no JVM start):

* **first**: the first call in a fresh Python process that has imported ``segtools`` only
  (what the call imports on its way, pyarrow among them, is counted), against Kafka's first
  pass in a fresh JVM (classes loading, JIT cold);
* **best**: the best of five calls in a warm process, against Kafka's best of five passes
  (JIT warm): as many tries each, so a neighbour's burst on a shared machine favours
  neither side.

Targets (issue 25, on the best): views >= 2x Kafka on 16 x 1 KiB and 500 x 100 B, >= 5x on
one-record batches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import segtools
from benchmarks import kafka_java
from benchmarks.bench_walk import best
from benchmarks.common import OUT, best_of
from benchmarks.shapes import SHAPES, rolled, segment

SIZE = 256 << 20
TARGETS = {"one": 5.0, "k16": 2.0, "large": 2.0}
BINARY = ("view", "binary")
#: Tries each side gets (its best counts).
REPEAT = 5

_FIRST = """
import sys, time
import segtools
t = time.perf_counter()
ds = segtools.open(sys.argv[1])
opened = time.perf_counter()
rows = 0
for batch in ds.to_arrow(binary=sys.argv[2]):
    rows += batch.num_rows
print(time.perf_counter() - t, opened - t, rows)
"""


def to_arrow(pdir, binary: str) -> int:
    rows = 0
    for batch in segtools.open(pdir).to_arrow(binary=binary):
        rows += batch.num_rows
    return rows


def first_call(pdir, binary: str) -> tuple[float, float]:
    """Seconds of the first ``segtools.open(dir).to_arrow()`` of a fresh process (segtools
    imported), and of its ``open`` alone (which imports the API's modules, pyarrow among
    them, on first use)."""
    out = subprocess.run([sys.executable, "-c", _FIRST, str(pdir), binary], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    results = {"load_average": os.getloadavg()}
    for shape in (s for s in SHAPES if s.name in TARGETS):
        pdir = rolled(shape, SIZE)
        path = segment(shape, SIZE)
        rows = to_arrow(pdir, "view")  # warm the page cache
        r: dict = {"bytes": path.stat().st_size, "records": rows}
        for binary in BINARY:
            r[f"{binary}_first_s"], r[f"{binary}_first_open_s"] = first_call(pdir, binary)
            r[f"{binary}_s"] = best(lambda p=pdir, b=binary: to_arrow(p, b), REPEAT)
            r[f"{binary}_cpu_s"] = best_of(lambda p=pdir, b=binary: to_arrow(p, b), REPEAT,
                                                 clock=time.process_time)
        java = kafka_java.run("deep", path, repeat=REPEAT)
        line = f"to_arrow() of 256 MiB of {shape.label:>11}:"
        for binary in BINARY:
            line += (f" {binary} {rows / r[f'{binary}_s'] / 1e6:5.2f} M records/s best "
                     f"(CPU {r[f'{binary}_cpu_s']:.3f} s), {r[f'{binary}_first_s']:.2f} s first "
                     f"({r[f'{binary}_first_open_s']:.2f} s of it open);")
        if java:
            r["kafka_deep_s"], r["kafka_deep_first_s"] = min(java[1]), java[1][0]
            for binary in BINARY:
                r[f"x_kafka_{binary}"] = r["kafka_deep_s"] / r[f"{binary}_s"]
                r[f"x_kafka_{binary}_first"] = r["kafka_deep_first_s"] / r[f"{binary}_first_s"]
            line += (f" x Kafka's streamingIterator: views {r['x_kafka_view']:.1f}x best "
                     f"({r['x_kafka_view_first']:.1f}x first), binary "
                     f"{r['x_kafka_binary']:.1f}x ({r['x_kafka_binary_first']:.1f}x); "
                     f"target {TARGETS[shape.name]}x")
        results[shape.name] = r
        print(line, flush=True)
    print(f"load average {results['load_average'][0]:.1f} at the start")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "arrow.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
