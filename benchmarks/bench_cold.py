"""Cold segments: the commands against the device's own sequential read of the same files.

On a broker host the sealed segments a forensic run reads are mostly not in the page cache:
what the user waits for is the disk, and whether segtools keeps it busy. For each shape of
:mod:`benchmarks.shapes` (a segment written by Kafka's ``MemoryRecordsBuilder``, rolled in a
log dir with its checkpoints), in one run:

* **device**: ``dd bs=1M`` of the cold files to ``/dev/null``: the device's sequential read,
  the peer every command is held to;
* **commands**, each over the same cold files: ``scan --crc``, ``verify``, ``dump --deep
  --format jsonl`` (to ``/dev/null``) and ``segtools.open(dir).to_arrow()`` in a fresh process;
* **warm**: the same command again, the files now cached: the speed where the CPU, not the
  device, is the limit.

Before each cold run every file is evicted with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (clean
pages only: nothing here writes them), and its residency checked after with ``mincore``
(:func:`segtools.storage.pagecache.resident`). Best of ``--repeat`` each, as bytes of segment
per second. Target (issue 37): each command cold at >= 0.9 of the device's read of the same
files, or of its warm speed where that is lower.

    python -m benchmarks.bench_cold [--size-mib 1024] [--repeat 2] [--shapes k16,large,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import OUT
from benchmarks.shapes import SHAPES, rolled
from segtools.storage.pagecache import resident

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TARGET = 0.9
_TO_ARROW = """
import sys
import segtools
rows = 0
for batch in segtools.open(sys.argv[1]).to_arrow():
    rows += batch.num_rows
print(rows)
"""


def files_of(pdir: Path) -> list[Path]:
    return sorted(p for p in pdir.iterdir() if p.is_file())


def evict(files: list[Path]) -> float:
    """Drop the files' pages from the page cache; the fraction still resident after."""
    kept = total = 0
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            pages = resident(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        kept += pages.count(1)
        total += len(pages)
    return kept / total if total else 0.0


def commands(pdir: Path) -> dict[str, list[str]]:
    return {
        "device (dd)": ["dd", "bs=1M", "of=/dev/null", "status=none"],  # if= per file
        "scan --crc": [SEGTOOLS, "scan", "--crc", "-q", str(pdir)],
        "verify": [SEGTOOLS, "verify", "-q", str(pdir)],
        "dump --deep jsonl": [SEGTOOLS, "dump", "--deep", "--format", "jsonl",
                              *(str(p) for p in sorted(pdir.glob("*.log")))],
        "to_arrow()": [sys.executable, "-c", _TO_ARROW, str(pdir)],
    }


def run(name: str, cmd: list[str], files: list[Path]) -> float:
    """Seconds of one run (``dd``: one per file, in turn), output to ``/dev/null``."""
    t = time.perf_counter()
    if name.startswith("device"):
        for path in files:
            subprocess.run([*cmd, f"if={path}"], check=True)
    else:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.returncode in (0, 1), (cmd, proc.returncode)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--shapes", default=",".join(s.name for s in SHAPES))
    opts = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    results: dict = {"load_average": os.getloadavg()}
    for shape in (s for s in SHAPES if s.name in opts.shapes.split(",")):
        pdir = rolled(shape, opts.size_mib << 20)
        files = files_of(pdir)
        size = sum(p.stat().st_size for p in files)
        row: dict = {"bytes": size}
        for name, cmd in commands(pdir).items():
            cold, left = [], []
            for _ in range(opts.repeat):
                left.append(evict(files))
                cold.append(run(name, cmd, files))
            warm = min(run(name, cmd, files) for _ in range(opts.repeat))
            row[name] = {"cold_mb_s": size / min(cold) / 1e6, "cold_first_mb_s":
                         size / cold[0] / 1e6, "warm_mb_s": size / warm / 1e6,
                         "resident_after_evict": max(left)}
        device = row["device (dd)"]["cold_mb_s"]
        print(f"{shape.label} ({size / 2**20:.0f} MiB): device {device:.0f} MB/s cold")
        for name in list(commands(pdir))[1:]:
            r = row[name]
            floor = min(device, r["warm_mb_s"])
            r["x_floor"] = r["cold_mb_s"] / floor
            print(f"  {name:18} cold {r['cold_mb_s']:7.0f} MB/s best "
                  f"({r['cold_first_mb_s']:.0f} first), warm {r['warm_mb_s']:7.0f} MB/s: "
                  f"{r['x_floor']:.2f} of min(device, warm) (target >= {TARGET})", flush=True)
        results[shape.name] = row
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cold.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
