"""``segtools producers`` on a 1 GiB partition of one-record batches, against the shallow walk
alone (the floor: the analysis must add little to reading the batch headers), same run.

The partition is Kafka-written (:mod:`benchmarks.shapes`, one record of 200 B per batch,
rolled so the big segment is sealed). Reported: the analysis' time as a ratio of the walk's
(target: close to 1x; it decodes no record), and the whole command's peak RSS (target: flat,
well under the segment's size). Results also go to ``$SEGTOOLS_BENCH_DIR/producers.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from benchmarks import shapes
from benchmarks.common import OUT, best_of
from segtools.analysis import producers
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment

SIZE = 1024 * shapes.MB


def walk_only(pdir) -> int:
    rows = 0
    for files in pdir.segments:
        with Segment.open(files) as seg:
            for chunk in seg.walk(verify_crc=False):
                rows += len(chunk.table)
    return rows


def main() -> None:
    shape = next(s for s in shapes.SHAPES if s.name == "one")
    path = shapes.rolled(shape, SIZE)
    pdir = load_partition_dir(path)
    walk_only(pdir)  # warm the page cache
    walk_s = best_of(lambda: walk_only(pdir))
    analyse_s = best_of(lambda: producers.analyse_partition(pdir, measure_codec=False))
    batches = walk_only(pdir)
    cmd = [sys.executable, "-c",
           "import sys, resource; from segtools.cli.main import main; "
           "code = main(['producers', '-q', '--format', 'jsonl', sys.argv[1]]); "
           "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
           "sys.exit(0)", str(path)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    command_s = time.perf_counter() - t
    rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    result = {"batches": batches, "walk_s": walk_s, "analyse_s": analyse_s,
              "command_s": command_s, "peak_rss_mb": rss_mb}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "producers.json").write_text(json.dumps(result, indent=1))
    print(f"1 GiB of one-record batches ({batches / 1e6:.2f} M batches): shallow walk "
          f"{walk_s:.2f} s, producers analysis {analyse_s:.2f} s = {analyse_s / walk_s:.2f}x the "
          f"walk; whole command {command_s:.2f} s, peak RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
