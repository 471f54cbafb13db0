"""Cold segments: the commands against the device's own sequential read of the same files.

On a broker host the sealed segments a forensic run reads are mostly not in the page cache:
what the user waits for is the disk, and whether segtools keeps it busy. For each shape of
:mod:`benchmarks.shapes` (a segment written by Kafka's ``MemoryRecordsBuilder``, rolled in a
log dir with its checkpoints), in one run:

* **device**: ``dd bs=1M`` of the cold files to ``/dev/null``: the device's sequential read,
  the peer every command is held to;
* **commands**, each over the same cold files: ``scan --crc``, ``verify``, ``dump --deep
  --format jsonl`` (to ``/dev/null``) and ``segtools.open(dir).to_arrow()`` in a fresh process;
* **warm**: the same command again right after its cold run, the files now cached: the
  speed where the CPU, not the device, is the limit, under the same minute's load.

Before each cold run every file is evicted with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (clean
pages only: nothing here writes them), and its residency checked after with ``mincore``
(:func:`segtools.storage.pagecache.resident`).

**Paired, not minutes apart.** This machine's virtual disk reads the same files at 250 to
1,700 MB/s from one minute to the next, so a command's cold time held to a device read made
minutes earlier measures the minute as much as the code. Each command's repetition is
therefore a *pair*: the device's read of the evicted files and the command over the same
files evicted again, back to back, the order of the two swapped every other pair (device
then command, command then device, ...) so that a disk speeding up or slowing down favours
neither. Each pair gives one ratio, the command's cold speed over min(the device's speed in
that pair, the command's warm speed in that pair: its run right after the cold one); the
figure is the median of the pairs' ratios, with
their spread, the first pair's and the best. Target (issue 37): each command cold at >= 0.9
of the device's read of the same files, or of its warm speed where that is lower.

**Old and new in turns.** ``--against PATH`` (another checkout's import path, its compiled
modules built) runs every command with that code too, its pairs taking turns with this
checkout's within the same minutes (this, other; then other, this; ...), so that a change
is held to the code before it on the same disk.

    python -m benchmarks.bench_cold [--size-mib 1024] [--repeat 3] [--shapes k16,large,...]
                                    [--against /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
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


#: The device's own sequential read of the files, one ``dd`` per file in turn (``if=`` added).
DEVICE = ["dd", "bs=1M", "of=/dev/null", "status=none"]


def commands(pdir: Path) -> dict[str, list[str]]:
    return {
        "scan --crc": [SEGTOOLS, "scan", "--crc", "-q", str(pdir)],
        "verify": [SEGTOOLS, "verify", "-q", str(pdir)],
        "dump --deep jsonl": [SEGTOOLS, "dump", "--deep", "--format", "jsonl",
                              *(str(p) for p in sorted(pdir.glob("*.log")))],
        "to_arrow()": [sys.executable, "-c", _TO_ARROW, str(pdir)],
    }


def device_read(files: list[Path]) -> float:
    """Seconds of the device's sequential read of ``files``, one after the other."""
    t = time.perf_counter()
    for path in files:
        subprocess.run([*DEVICE, f"if={path}"], check=True)
    return time.perf_counter() - t


def command_run(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds of one run of a command, its output to ``/dev/null`` (``env``: the code it
    imports, see :func:`code_env`)."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    assert proc.returncode in (0, 1), (cmd, proc.returncode)
    return time.perf_counter() - t


@dataclass(frozen=True, slots=True)
class Pair:
    """One repetition: the device's read and the command, each over the same files just
    evicted, back to back (seconds), the command again right after its cold run, the files
    now cached (``warm``), and what eviction left resident before each."""

    device: float
    command: float
    warm: float
    resident: float


def paired(timed_device: Callable[[], float], timed_command: Callable[[], float],
           cold: Callable[[], float], repeat: int) -> list[Pair]:
    """``repeat`` pairs, the files made ``cold`` before every run of either; the device goes
    first in even pairs and second in odd ones, so a drifting disk favours neither."""
    return [pair(timed_device, timed_command, cold, i) for i in range(repeat)]


def pair(timed_device: Callable[[], float], timed_command: Callable[[], float],
         cold: Callable[[], float], turn: int) -> Pair:
    """The ``turn``-th pair of :func:`paired`: the device first in even turns. The command's
    warm run follows its cold one at once: a command bound by the CPU is held to its speed
    in the same seconds, under the same load, not to the best of runs minutes away (the
    best of three warm runs held against the median of three cold ones counted the spread
    between runs, which the other sessions' load widens, against the cold read)."""
    left = cold()
    if turn % 2 == 0:
        device = timed_device()
        left = max(left, cold())
        command, warm = timed_command(), timed_command()
    else:
        command, warm = timed_command(), timed_command()
        left = max(left, cold())
        device = timed_device()
    return Pair(device, command, warm, left)


def code_env(path: str | None) -> dict[str, str] | None:
    """The environment of a command that imports segtools from ``path`` (None: this one's)."""
    return None if path is None else {**os.environ, "PYTHONPATH": path}


def files_pair(files: list[Path], cmd: list[str], code: str | None, turn: int) -> Pair:
    """One pair over ``files``: the device's read and ``cmd`` run with ``code``."""
    return pair(partial(device_read, files), partial(command_run, cmd, code_env(code)),
                partial(evict, files), turn)


def in_turns(codes: list[str | None], repeat: int,
             one: Callable[[str | None, int], Pair]) -> dict[str | None, list[Pair]]:
    """``repeat`` pairs for each code, the codes taking turns pair by pair and the order
    of the turn reversed every other time (A B, B A, A B, ...), so that a disk speeding up
    or slowing down favours none of them; ``one(code, k)`` makes the ``k``-th pair of the
    whole run, the device first when ``k`` is even. Counted over the run, not per code: a
    pair that ends with the device's read and one that starts with it then fall to each
    code in turn. (Per turn, they fell to the first code each time: the second of two
    ``dd`` of the same files in a row read 700-1,700 MB/s here where the others read
    100-500, the host's cache under the virtual disk at work, which that code's ratio paid
    for.)"""
    pairs: dict[str | None, list[Pair]] = {code: [] for code in codes}
    k = 0
    for turn in range(repeat):
        for code in (codes if turn % 2 == 0 else codes[::-1]):
            pairs[code].append(one(code, k))
            k += 1
    return pairs


@dataclass(frozen=True, slots=True)
class Summary:
    """Ratios of a command's cold speed to min(device, warm), both of the same pair, over
    pairs."""

    median: float
    lowest: float
    best: float
    first: float

    @classmethod
    def of(cls, pairs: list[Pair]) -> Summary:
        """A speed is bytes over seconds, so the ratio of a pair is max(device, warm)
        seconds over the command's cold seconds."""
        ratios = [max(p.device, p.warm) / p.command for p in pairs]
        return cls(statistics.median(ratios), min(ratios), max(ratios), ratios[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3, help="pairs (device, command) per command")
    ap.add_argument("--shapes", default=",".join(s.name for s in SHAPES))
    ap.add_argument("--against", metavar="PATH",
                    help="another checkout's import path: its commands in turns with these")
    opts = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    results: dict = {"load_average": os.getloadavg()}
    codes: list[str | None] = [None] if opts.against is None else [None, opts.against]
    for shape in (s for s in SHAPES if s.name in opts.shapes.split(",")):
        pdir = rolled(shape, opts.size_mib << 20)
        files = files_of(pdir)
        size = sum(p.stat().st_size for p in files)
        row: dict = {"bytes": size}
        print(f"{shape.label} ({size / 2**20:.0f} MiB), load {os.getloadavg()[0]:.1f}:")
        for name, cmd in commands(pdir).items():
            by_code = in_turns(codes, opts.repeat, partial(files_pair, files, cmd))
            row[name] = {}
            for code, pairs in by_code.items():
                label = "this" if code is None else code
                row[name][label] = report(name, label, pairs, size)
        results[shape.name] = row
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cold.json").write_text(json.dumps(results, indent=1))


def report(name: str, label: str, pairs: list[Pair], size: int) -> dict:
    """One command's line (printed) and record (returned) for one code."""
    summary = Summary.of(pairs)
    device_mb_s = [size / p.device / 1e6 for p in pairs]
    cold_mb_s = [size / p.command / 1e6 for p in pairs]
    warm_mb_s = [size / p.warm / 1e6 for p in pairs]
    print(f"  {name:18} [{label}] {summary.median:.2f} of min(device, warm), median of "
          f"{len(pairs)} pairs (spread {summary.lowest:.2f}-{summary.best:.2f}, "
          f"first {summary.first:.2f}); cold {statistics.median(cold_mb_s):5.0f} MB/s beside "
          f"the device's {statistics.median(device_mb_s):5.0f} "
          f"({min(device_mb_s):.0f}-{max(device_mb_s):.0f}), warm "
          f"{statistics.median(warm_mb_s):5.0f} MB/s (target >= {TARGET}), load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    return {"pairs": [dataclasses.asdict(p) for p in pairs],
            "device_mb_s": device_mb_s, "cold_mb_s": cold_mb_s,
            "warm_mb_s": warm_mb_s,
            "resident_after_evict": max(p.resident for p in pairs),
            "x_floor": dataclasses.asdict(summary)}


if __name__ == "__main__":
    main()
