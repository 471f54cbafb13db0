"""CLI speed (issue 4): ``dump --deep --format jsonl`` against Kafka's own reader printing the
same kind of lines from a JVM (start-up included, as an operator would run it), and ``scan`` of
a 10 GiB tree of large-batch segments.

Both tools are timed as whole commands writing to /dev/null; the figure is the ratio of wall
times measured in the same run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import kafka_java
from benchmarks.common import OUT, make_segment

MB = 1 << 20
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))


def wall(cmd: list[str], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t)
    return best


def big_tree(total_gib: int = 10) -> Path:
    """``total_gib`` GiB in 40 partitions of 256 MiB segments of ~1 MiB batches (real bytes)."""
    seg = make_segment("large-batch-256m", 256 * MB, records=1000, value_size=1000)
    root = OUT / f"tree-{total_gib}g"
    partitions = total_gib * 4
    for p in range(partitions):
        target = root / f"big.topic-{p}" / "00000000000000000000.log"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(seg, target)
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bench\n")
    return root


def main() -> None:
    seg = make_segment("plain-256m", 256 * MB)
    ours = wall([SEGTOOLS, "dump", "--deep", "--format", "jsonl", str(seg)])
    java = None
    if kafka_java.classpath():
        t = time.perf_counter()
        for _ in range(3):
            kafka_java.run("print", seg)
        java = (time.perf_counter() - t) / 3
    print(f"dump --deep --format jsonl, 256 MiB segment: segtools {ours:.2f}s", end="")
    if java:
        print(f", Kafka's reader printing in a JVM {java:.2f}s: {java / ours:.2f}x faster")
    else:
        print(" (no JDK: Java peer skipped)")

    tree = big_tree()
    size = sum(p.stat().st_size for p in tree.rglob("*.log"))
    scan = wall([SEGTOOLS, "scan", "--format", "jsonl", str(tree)], repeat=2)
    print(f"scan of a {size / 2**30:.1f} GiB tree (40 partitions, ~1 MiB batches): "
          f"{scan:.2f}s warm ({size / scan / 1e9:.1f} GB/s of log)")


if __name__ == "__main__":
    main()
