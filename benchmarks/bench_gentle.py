"""What ``verify`` does to a live broker, with and without gentle mode (issue 36).

A simulated broker (a process of its own) appends a batch to its active segment about every
millisecond and, in between, fetches the tail back (a ``pread`` of the last 64 KiB, what a
consumer at the head costs the broker), timing each fetch. Beside it lies a log dir of cold,
sealed segments (dropped from the page cache with ``posix_fadvise(DONTNEED)`` before each
run). Three phases, each ``--seconds`` long:

* ``idle``: the broker alone;
* ``plain``: ``segtools verify`` over the cold data with the broker *not* holding the log
  dir's ``.lock`` (so segtools is not gentle: every core, normal priority, the cache kept);
* ``gentle``: the same with the broker holding ``.lock`` as Kafka does (page cache restored,
  half the cores, workers at nice 10 and best-effort I/O level 7).

The broker's p50/p99 fetch latency per phase is reported as a ratio to its idle p99 (the
goal: gentle p99 within 1.5x of idle). ``verify`` runs in a loop for the phase's length.

Second, the cost of leaving the cache as found: ``verify --page-cache restore`` against
``--page-cache keep`` on cold data, the best of ``--repeat`` runs each (goal: at most 1.15x).

    python -m benchmarks.bench_gentle [--partitions 4] [--segment-mib 32] [--segments 3]
                                      [--seconds 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import one_batch

ROOT = Path(__file__).resolve().parent.parent
SEGTOOLS = [sys.executable, "-m", "segtools.cli.main"]
#: The tail a consumer at the head fetches.
FETCH_BYTES = 64 * 1024


def build_log_dir(root: Path, partitions: int, segments: int, segment_bytes: int) -> Path:
    """A log dir of ``partitions`` partitions, each ``segments`` sealed segments and a small
    active one, made of one batch repeated with rising base offsets (benchmarks/common.py)."""
    log_dir = root / "kafka-logs"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    template = bytearray(one_batch(500, 100))
    copies = max(1, segment_bytes // len(template))
    for p in range(partitions):
        pdir = log_dir / f"cold-{p}"
        pdir.mkdir(parents=True)
        base = 0
        for _ in range(segments + 1):  # the last one is the active segment
            n = copies if base < segments * copies * 500 else 1
            with open(pdir / f"{base:020d}.log", "wb") as f:
                for i in range(n):
                    struct.pack_into(">q", template, 0, base + i * 500)
                    f.write(template)
            base += n * 500
    (log_dir / "hot-0").mkdir()
    (log_dir / "hot-0" / f"{0:020d}.log").write_bytes(bytes(template))
    return log_dir


def make_cold(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.name != ".lock":
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def broker(log_dir: str, hold_lock: bool) -> None:
    """The simulated broker: holds ``.lock`` when asked, then appends and fetches until
    stdin says a phase ends (a line), printing that phase's fetch latencies as JSON."""
    if hold_lock:
        fd = os.open(os.path.join(log_dir, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    active = os.path.join(log_dir, "hot-0", f"{0:020d}.log")
    batch = bytes(one_batch(20, 100))
    out = os.open(active, os.O_WRONLY | os.O_APPEND)
    tail = os.open(active, os.O_RDONLY)
    os.set_blocking(sys.stdin.fileno(), False)
    print("ready", flush=True)
    latencies: list[float] = []
    while True:
        os.write(out, batch)
        size = os.fstat(tail).st_size
        start = time.perf_counter()
        os.pread(tail, FETCH_BYTES, max(0, size - FETCH_BYTES))
        latencies.append(time.perf_counter() - start)
        try:
            line = sys.stdin.readline()
        except (BlockingIOError, TypeError):
            line = ""
        if line.strip() == "stop":
            print(json.dumps(latencies), flush=True)
            return
        if line.strip() == "phase":
            print(json.dumps(latencies), flush=True)
            latencies = []
        time.sleep(0.001)


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 \
        else values[0]


def phase(proc: subprocess.Popen, log_dir: Path, seconds: float, verify: list[str] | None
          ) -> dict:
    """One phase: ``verify`` in a loop (or nothing) for ``seconds``; the broker's latencies."""
    make_cold(log_dir)
    runs = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if verify is None:
            time.sleep(0.1)
            continue
        subprocess.run(verify, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        runs += 1
        make_cold(log_dir)
    proc.stdin.write("phase\n")
    proc.stdin.flush()
    lat = json.loads(proc.stdout.readline())
    return {"fetches": len(lat), "fetches_per_s": len(lat) / seconds,
            "p50_us": percentile(lat, 50) * 1e6, "p99_us": percentile(lat, 99) * 1e6,
            "verify_runs": runs}


def with_broker(log_dir: Path, hold_lock: bool, seconds: float, verify: list[str] | None
                ) -> dict:
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_gentle", "--broker",
                             str(log_dir), *(["--lock"] if hold_lock else [])], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        return phase(proc, log_dir, seconds, verify)
    finally:
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        proc.communicate(timeout=60)


def restore_cost(log_dir: Path, repeat: int) -> dict:
    """``verify`` on cold data, the cache restored against kept (no broker): runs of the two
    interleaved, so both meet the same load; the best wall time of each and the best CPU time
    (user + system of the child, which other tenants of the machine disturb less)."""
    best: dict[str, list[float]] = {"keep": [], "restore": []}
    cpu: dict[str, list[float]] = {"keep": [], "restore": []}
    for _ in range(repeat):
        for mode in best:
            make_cold(log_dir)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([*SEGTOOLS, "verify", "-q", "--page-cache", mode, str(log_dir)],
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
            best[mode].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[mode].append(after.ru_utime + after.ru_stime - before.ru_utime
                             - before.ru_stime)
    keep, restore = min(best["keep"]), min(best["restore"])
    keep_cpu, restore_cpu = min(cpu["keep"]), min(cpu["restore"])
    return {"keep_s": keep, "restore_s": restore, "restore_over_keep": restore / keep,
            "keep_cpu_s": keep_cpu, "restore_cpu_s": restore_cpu,
            "restore_over_keep_cpu": restore_cpu / keep_cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--segments", type=int, default=3)
    ap.add_argument("--segment-mib", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--broker", metavar="LOG_DIR", help=argparse.SUPPRESS)
    ap.add_argument("--lock", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.broker:
        broker(args.broker, args.lock)
        return
    with tempfile.TemporaryDirectory(prefix="segtools-gentle-",
                                     dir=os.environ.get("SEGTOOLS_BENCH_DIR")) as tmp:
        log_dir = build_log_dir(Path(tmp), args.partitions, args.segments,
                                args.segment_mib * 2**20)
        verify = [*SEGTOOLS, "verify", "-q", str(log_dir)]
        result = {
            "load_before": os.getloadavg(),
            "data_mib": sum(p.stat().st_size for p in log_dir.rglob("*.log")) / 2**20,
            "idle": with_broker(log_dir, False, args.seconds, None),
            "plain": with_broker(log_dir, False, args.seconds, verify),
            "gentle": with_broker(log_dir, True, args.seconds, verify),
            "restore_cost": restore_cost(log_dir, args.repeat),
            "load_after": os.getloadavg(),
        }
    idle = result["idle"]["p99_us"]
    for name in ("plain", "gentle"):
        result[name]["p99_over_idle_p99"] = result[name]["p99_us"] / idle
        result[name]["fetch_rate_over_idle"] = \
            result[name]["fetches_per_s"] / result["idle"]["fetches_per_s"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
