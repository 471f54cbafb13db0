"""Worker processes over an object store: the three ways a run could spread its work, timed.

A tree of 2,100 segments (700 copies of the sample tree's ``orders.v2-eu-0`` partition, Kafka
written) on moto's S3 server (``tests/s3server.py``) is summarised with CRCs, as ``scan --crc``
does (``segtools.cli.scan.summarize_partition``), three ways in one run, each after its own
fresh listing:

* ``serial``: one process, the store's range threads keeping the store busy: what
  :func:`segtools.fanout.ordered` does for a run whose scope holds a store;
* ``fork``: two forked workers, each opening a fresh client in the child (the copy of the
  location notices it is in another process): the way that hung (a lock of pyarrow's client
  held by a download thread at the fork stays held in the child);
* ``forkserver``: two workers started from a clean server process, the job and the partitions
  pickled to them once (each reopens the location and lists again what it reads): safe, but
  every worker pays its start and its listing.

Every way's answer (each segment's base offset and valid bytes) must be the serial one. Prints
the best of ``ROUNDS`` per way and the ratios to ``serial``, with the load average.

Run from the repository root: ``.venv/bin/python -m benchmarks.bench_store_workers [PARTITIONS]
[ROUNDS]`` (700 and 3 by default).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from benchmarks.common import OUT
from segtools import fanout
from segtools.cli.scan import summarize_partition
from segtools.storage.logdirs import walk
from segtools.storage.scope import LocationScope
from tests.s3server import S3Server

REPO = Path(__file__).resolve().parents[1]
PARTITION = REPO / "fixtures" / "logdirs" / "sample" / "orders.v2-eu-0"
BUCKET = "workers"
WORKERS = 2

#: The job a forkserver worker received (set once per worker by the pool's initializer).
_JOB: tuple[Callable, Sequence] | None = None


def _receive(job: tuple[Callable, Sequence]) -> None:
    global _JOB
    _JOB = job


def _one(i: int):
    assert _JOB is not None
    fn, items = _JOB
    return fn(items[i])


def by_forkserver(fn: Callable, items: Sequence) -> list:
    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(WORKERS, initializer=_receive, initargs=((fn, items),)) as pool:
        return list(pool.imap(_one, range(len(items)),
                              chunksize=max(1, len(items) // (16 * WORKERS))))


def by_fork(fn: Callable, items: Sequence, segments: int) -> list:
    """``fanout.ordered`` with its refusal to fork a store's run lifted, for the measure."""
    held = fanout._holds_store
    fanout._holds_store = lambda: False
    try:
        return list(fanout.ordered(fn, items, segments=segments, processes=WORKERS))
    finally:
        fanout._holds_store = held


def tree(partitions: int) -> Path:
    root = OUT / f"store-workers-{partitions}" / "logs"
    if not root.exists():
        for i in range(partitions):
            shutil.copytree(PARTITION, root / f"orders-{i}")
    return root


def upload(server: S3Server, root: Path) -> str:
    server.create_bucket(BUCKET)
    client = server.client()
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: client.upload_file(
            str(p), BUCKET, "logs/" + p.relative_to(root).as_posix()), files))
    return f"s3://{BUCKET}/logs"


def main(partitions: int = 700, rounds: int = 3) -> None:
    root = tree(partitions)
    fn = partial(summarize_partition, verify_crc=True, limit=1 << 30)
    times: dict[str, list[float]] = {"serial": [], "fork": [], "forkserver": []}
    answers = {}
    with S3Server() as server:
        uri = upload(server, root)
        for _ in range(rounds):
            for way in times:
                with LocationScope(server.options):
                    log_dirs, _ = walk([uri], server.options)
                    items = [p for d in log_dirs for p in d.partitions]
                    segments = sum(len(p.segments) for p in items)
                    start = time.perf_counter()
                    if way == "serial":
                        got = list(fanout.ordered(fn, items, segments=segments, processes=1))
                    elif way == "fork":
                        got = by_fork(fn, items, segments)
                    else:
                        got = by_forkserver(fn, items)
                    times[way].append(time.perf_counter() - start)
                answers[way] = [[(s.base_offset, s.valid_bytes) for s in summaries]
                                for summaries, _ in got]
                print(f"{way:>10}: {segments} segments in {times[way][-1]:.2f} s", flush=True)
    assert answers["fork"] == answers["serial"] == answers["forkserver"]
    best = {way: min(t) for way, t in times.items()}
    print("best of", rounds, {way: round(t, 2) for way, t in best.items()})
    print("ratio to serial (lower is faster):",
          {way: round(t / best["serial"], 2) for way, t in best.items()})
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
