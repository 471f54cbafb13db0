"""Offset-index lookup speed: 1k vs 1M entries, segtools' warm-section search vs linear numpy.

Kafka's binary search is O(log n) and touches the 8 KiB warm tail first; the goal is a flat
cost per lookup (1M/1k within 2x, well under 50 µs). The peer is the obvious alternative, a
linear numpy scan over the mmapped entries (``searchsorted`` would need a native-endian copy
of the whole index first, which is what segtools refuses to do).

Run from the repository root: ``.venv/bin/python -m benchmarks.bench_index_lookup``
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from segtools.formats.indexes import OFFSET_INDEX_DTYPE
from segtools.storage.index import OffsetIndex

BASE = 5_000_000


def build(path: Path, n: int, pad_to: int | None) -> None:
    arr = np.empty(n, dtype=OFFSET_INDEX_DTYPE)
    arr["relative_offset"] = np.arange(1, n + 1, dtype=np.int64) * 7
    arr["position"] = np.arange(1, n + 1, dtype=np.int64) * 4100
    with open(path, "wb") as f:
        f.write(arr.tobytes())
        if pad_to:
            f.truncate(pad_to)


def time_segtools(path: Path, targets: list[int]) -> float:
    with OffsetIndex(path) as ix:
        ix.lookup(targets[0])  # count valid entries outside the timing
        t0 = time.perf_counter()
        for t in targets:
            ix.lookup(t)
        return (time.perf_counter() - t0) / len(targets) * 1e6


def time_linear(path: Path, n: int, targets: list[int]) -> float:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        arr = np.frombuffer(mm, dtype=OFFSET_INDEX_DTYPE, count=n)
        rel = arr["relative_offset"]
        t0 = time.perf_counter()
        for t in targets:
            hits = np.flatnonzero(rel <= t - BASE)
            _ = (BASE, 0) if hits.size == 0 else (BASE + int(rel[hits[-1]]), 0)
        elapsed = (time.perf_counter() - t0) / len(targets) * 1e6
        del arr, rel
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookups", type=int, default=100_000)
    parser.add_argument("--linear-lookups", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(42)
    results: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1_000, 1_000_000):
            path = Path(tmp) / f"{BASE:020d}.index"
            build(path, n, 10 * 1024 * 1024 if n * 8 < 10 * 1024 * 1024 else None)
            hi = BASE + 7 * n + 10
            targets = [rng.randint(BASE - 10, hi) for _ in range(args.lookups)]
            seg = time_segtools(path, targets)
            lin = time_linear(path, n, targets[: args.linear_lookups])
            results[n] = (seg, lin)
            print(f"{n:>9,} entries: segtools {seg:7.2f} µs/lookup   "
                  f"linear numpy {lin:9.2f} µs/lookup")
            os.unlink(path)
    seg_ratio = results[1_000_000][0] / results[1_000][0]
    lin_ratio = results[1_000_000][1] / results[1_000][1]
    print(f"ratio 1M/1k: segtools {seg_ratio:.2f}x (goal <= 2x)   linear numpy {lin_ratio:.1f}x")
    print(f"segtools vs linear at 1M: {results[1_000_000][1] / results[1_000_000][0]:.0f}x faster")


if __name__ == "__main__":
    main()
