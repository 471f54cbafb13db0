"""``retention --what-if`` over 1,000 partitions and 30 days, against the shallow read of the
same tree in the same run.

The tree: one log dir, topic ``bench-whatif`` with 1,000 partitions, each one segment holding
a day of history (a 10-record batch every five minutes, written by kafka-python's builder with
real CRCs), ``retention.ms`` three days. Timed, as an operator runs them, first run and best
of three, with the peak RSS of each:

* the peer: ``segtools scan TREE`` (every batch header of every partition, the same read the
  simulator starts from);
* ``segtools retention TREE --what-if segment.bytes=1048576 --horizon 30 --format json``:
  every partition read, then simulated twice (today's config and the change) for 30 days of
  replayed ingest, the topic summed.

Each line gives wall seconds (first run, best run), the CPU seconds of the best run (user +
system, the workers' included) and the peak RSS of any one process; the load average is
printed before and after, since the machine is shared and wall time follows it.

Target (issue 27): the what-if takes seconds: within 8x the shallow read of the same tree
(wall, best of each), and its peak RSS stays under 500 MB (per-partition work is released
before the next partition; workers return a summed topic grid per slice of partitions).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

from benchmarks.common import OUT

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PARTITIONS = 1000
BATCHES = 288  # a day, one batch every five minutes
T0 = 1_700_000_000_000
TARGET_RATIO = 8.0
TARGET_RSS_MB = 500


def segment_bytes() -> bytes:
    out = bytearray()
    for b in range(BATCHES):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 20)
        for r in range(10):
            builder.append(r, timestamp=T0 + b * 300_000, key=b"k-%d" % r,
                           value=b"v" * 60, headers=[])
        data = bytearray(builder.build())
        data[0:8] = (b * 10).to_bytes(8, "big")  # base offset: outside the CRC
        out += data
    return bytes(out)


def tree() -> Path:
    root = OUT / "whatif-tree"
    marker = root / ".complete"
    if marker.exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    data = segment_bytes()
    for p in range(PARTITIONS):
        d = root / f"bench-whatif-{p}"
        d.mkdir(exist_ok=True)
        (d / "00000000000000000000.log").write_bytes(data)
    marker.write_text("")
    return root


def timed(cmd: list[str], repeat: int = 3) -> tuple[float, float, float, int]:
    """First-run seconds, best of ``repeat`` more, the CPU seconds of the best run, and the
    peak RSS in MB."""
    first = best = float("inf")
    cpu = 0.0
    rss = 0
    for i in range(repeat + 1):
        t = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *cmd],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=ENV)
        took = time.perf_counter() - t
        if done.returncode not in (0, 1):
            raise SystemExit(f"{cmd}: exit {done.returncode}: {done.stderr[-500:]}")
        peak, user, system = done.stderr.strip().splitlines()[-1].split()
        first = took if i == 0 else first
        if took < best:
            best, cpu = took, float(user) + float(system)
        rss = max(rss, int(peak) // 1024)
    return first, best, cpu, rss


def main() -> None:
    root = tree()
    print("load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    scan = timed([SEGTOOLS, "scan", str(root), "--format", "jsonl"])
    what_if = timed([SEGTOOLS, "retention", str(root), "--at", str(T0 + 86_400_000),
                     "--retention-ms", str(3 * 86_400_000), "--what-if",
                     "segment.bytes=1048576", "--horizon", "30", "--format", "json"])
    ratio = what_if[1] / scan[1]
    print(f"{PARTITIONS} partitions x {BATCHES} batches, 30 days simulated twice")
    for name, (first, best, cpu, rss) in (("scan (peer)", scan), ("what-if", what_if)):
        print(f"  {name:12}  first {first:.2f} s  best {best:.2f} s  cpu {cpu:.2f} s  "
              f"peak {rss} MB")
    print(f"  what-if / scan: {ratio:.1f}x wall, {what_if[2] / max(scan[2], 1e-9):.1f}x cpu")
    print("load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    ok = ratio < TARGET_RATIO and what_if[3] < TARGET_RSS_MB
    print("  target met" if ok else "  TARGET MISSED")


if __name__ == "__main__":
    main()
