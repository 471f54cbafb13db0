"""Records into Arrow from a partition's *active* segment, beside the same bytes sealed.

Every partition has an active segment, and a partition directory copied off a broker holds
nothing else that segtools may map unasked. The same Kafka-written segment of each shape
(:mod:`benchmarks.shapes`) is read by ``segtools.open(dir).to_arrow()`` these ways, in one run,
page cache warm, best of ``--repeat`` calls of one dataset's ``to_arrow()`` (the first call
writes into fresh buffers, the next into those the dataset kept; "first" is shown too):

* **sealed**: rolled, below the checkpoints (:func:`benchmarks.shapes.rolled`): the mapping,
  its walk on a thread of its own ahead of the reader when two cores may be used;
* **sealed, one core**: the same with ``jobs=1``: the mapping's peer of a broker-held read,
  which gentle mode keeps to one core here;
* **sealed, one core, values copied**: the same with ``binary="binary"``: keys and values
  copied out of the mapping into Arrow's own buffers. What a mapping guarded against SIGBUS
  would cost at the least (no buffer handed out may point into a mapping a truncation can
  take away), the peer that shows whether one would beat the broker-held windows
  (``docs/performance.md``, "A mapping guarded against SIGBUS");
* **copy**: the partition's only (active) segment in a log dir no broker holds (no
  ``.lock``): nothing can truncate it, so it is mapped too;
* **broker**: the same, while another process holds the log dir's ``.lock`` as a running
  broker does (``FileLock.tryLock`` in ``LogManager``): gentle mode, the file read through
  ``pread`` windows (a follower may truncate it under the reader), the page cache left as
  found, on half the cores (one here: gentle mode's default ``jobs``);
* **broker, 2 jobs**: the same with ``jobs=2``: the walk reads and checks the next window on a
  thread of its own while the reader decodes the one before, as it does over a mapping.

Each against Kafka's deep iteration of the same file (``ensureValid()`` and the streaming
iterator touching every key, value and header; best in-JVM pass). Target (issue 37): the
active segment (copy and broker) at >= 2x Kafka on 16 x 1 KiB and 500 x 100 B.

Each way also reports its best CPU seconds per call (this process's user and system time):
on a machine other work shares, wall times move with the load, while a one-core read's CPU
time shows what the code costs (the ``pread`` copy is system time).

    python -m benchmarks.bench_active [--size-mib 256] [--repeat 3] [--shapes k16,large]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import segtools
from benchmarks import kafka_java
from benchmarks.common import OUT
from benchmarks.shapes import SHAPES, active, rolled, segment

TARGET = 2.0
WAYS = ("sealed", "sealed_1_job", "sealed_1_job_copied", "copy", "broker", "broker_2_jobs")
_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""


class BrokerLock:
    """Another process holding ``<log dir>/.lock`` exclusively, as a running broker does."""

    def __init__(self, log_dir: Path):
        self.path = log_dir / ".lock"

    def __enter__(self) -> BrokerLock:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(self.path)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"
        return self

    def __exit__(self, *exc) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def to_arrow(dataset: segtools.LogDirs, binary: str = "view") -> tuple[float, int]:
    t = time.perf_counter()
    rows = 0
    for batch in dataset.to_arrow(binary=binary):
        rows += batch.num_rows
    return time.perf_counter() - t, rows


def best(pdir: Path, repeat: int, jobs: int | None = None, binary: str = "view"
         ) -> tuple[float, float, int, float]:
    """First and best seconds of ``repeat`` calls of one dataset's ``to_arrow()`` (as a
    notebook reads again: the first call's buffers are fresh, the next ones' those the
    dataset kept), the rows, and the best CPU seconds."""
    times, cpu, rows = [], [], 0
    with segtools.open(pdir, jobs=jobs) as dataset:
        for _ in range(repeat):
            c = time.process_time()
            s, rows = to_arrow(dataset, binary)
            cpu.append(time.process_time() - c)
            times.append(s)
    return times[0], min(times), rows, min(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shapes", default="k16,large")
    opts = ap.parse_args()
    size = opts.size_mib << 20
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    results: dict = {"load_average": os.getloadavg()}
    for shape in (s for s in SHAPES if s.name in opts.shapes.split(",")):
        sealed, current = rolled(shape, size), active(shape, size)
        to_arrow(segtools.open(sealed))  # the page cache warm
        r: dict = {}
        r["sealed"] = best(sealed, opts.repeat)
        r["sealed_1_job"] = best(sealed, opts.repeat, jobs=1)
        r["sealed_1_job_copied"] = best(sealed, opts.repeat, jobs=1, binary="binary")
        r["copy"] = best(current, opts.repeat)
        with BrokerLock(current.parent):
            r["broker"] = best(current, opts.repeat)
            r["broker_2_jobs"] = best(current, opts.repeat, jobs=2)
        java = kafka_java.run("deep", segment(shape, size), repeat=opts.repeat)
        line = f"to_arrow() of {opts.size_mib} MiB of {shape.label:>11}:"
        for way in WAYS:
            first, fastest, rows, cpu = r[way]
            line += (f"\n  {way:19} {rows / fastest / 1e6:5.2f} M/s best, "
                     f"{rows / first / 1e6:5.2f} first, {cpu * 1e3:4.0f} ms CPU")
            if java:
                r[f"x_kafka_{way}"] = min(java[1]) / fastest
                line += f" ({r[f'x_kafka_{way}']:.1f}x Kafka)"
            line += ";"
        results[shape.name] = r
        print(line + f"\n  target active >= {TARGET}x", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "active.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
