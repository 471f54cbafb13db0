"""The internal topics at production size: ``offsets``, ``transactions`` and ``metadata``
against the generated-schema engine (the reference decoder), same run.

Data: the Kafka-written partitions of ``fixtures/logdirs/forensics`` repeated with rising
offsets and timestamps (:mod:`benchmarks.internal_logs`, CRC-32C recomputed), in two shapes:
``fixture`` (the batches as Kafka wrote them, 1 to 7 records) and ``one`` (one record per
batch). Page cache warm, best of ``PASSES``.

* **decode**: the walk, the record kernel and every key and value decoded, by the compiled
  field programs (into columns) and by the reference (``decode_record`` / ``decode_frame``
  per record, on the first ``SAMPLE`` records: its rate is flat in the size). Target: >= 1 M
  records/s and >= 30x the reference on every topic and shape.
* **replay**: the whole replay (``replay_offsets``, ``replay_transaction_state``,
  ``timeline``; anomalies and events to a sink that drops them), against the reference's
  decode alone (a ceiling for a replay built on it: conservative).
* **1 GiB**: ``segtools offsets`` over 1 GiB of ``__consumer_offsets`` (the five fixture
  partitions), whole command in a child process, stdout to /dev/null, peak RSS the largest
  of the child's ``/proc/self/status`` (VmHWM) and its worker processes' (the partitions
  replay side by side); ``--peer-code DIR`` times another checkout's ``offsets`` in the same
  turns (the code before a change). Two logs: copies whose groups keep consuming (each
  copy's committed offsets moved on, the fixture's own stories repeating: a reset to earliest,
  expired offsets) and the worst case, copies that rewind every offset (1.4 M regressions and
  deletions to print), and a steady log: after the first copy, only the fixture's plain
  offset commits repeat, moving on (a consumer fleet's commits between rebalances, the bulk
  of a compaction-lagged partition). Target: < 30 s, < 500 MB; issue 37: <= 2 s per GiB
  (``--offsets-mib`` sizes the logs, ``--no-decode`` runs this part alone). The peer is
  ``scan --crc`` of the same bytes, timed in turns with it: first run and best, wall and CPU.

Results also go to ``$SEGTOOLS_BENCH_DIR/segtools-bench/internal.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import internal_logs
from benchmarks.common import OUT
from segtools.analysis.cluster_metadata import timeline
from segtools.analysis.offsets import replay_offsets
from segtools.analysis.partition_log import partitions_of
from segtools.analysis.transaction_state import replay_transaction_state
from segtools.decode import programs
from segtools.formats.internal import cluster_metadata, consumer_offsets, transaction_state
from segtools.storage.partition import PartitionDir
from segtools.storage.segment import Segment

MB = 1 << 20
SIZE = 64 * MB
BIG = 1024 * MB
PASSES = 3
OFFSETS_S_PER_GIB = 2  # issue 37
SAMPLE = 30_000

TOPICS: dict[str, tuple[str, list[str], Callable, Callable]] = {
    # command: (topic, fixture partitions, compiled family, reference decoder)
    "offsets": ("__consumer_offsets", list(internal_logs.TOPICS_OFFSETS),
                programs.consumer_offsets_family, consumer_offsets.decode_record),
    "transactions": ("__transaction_state", [f"__transaction_state-{p}" for p in (5, 7, 42)],
                     programs.transaction_log_family, transaction_state.decode_record),
    "metadata": ("__cluster_metadata", ["__cluster_metadata-0"],
                 programs.cluster_metadata_family,
                 lambda key, value: cluster_metadata.decode_frame(value)),
}


#: The ``__consumer_offsets`` logs of the whole command: (label, copies move on, steady).
LOGS = (("keeps consuming", True, False), ("rewinds every copy", False, False),
        ("steady commits", True, True))


def best(fn: Callable[[], int]) -> tuple[float, int]:
    out, n = float("inf"), 0
    for _ in range(PASSES):
        t = time.perf_counter()
        n = fn()
        out = min(out, time.perf_counter() - t)
    return out, n


def chunks(parts: list[PartitionDir]):
    for pdir in parts:
        for files in pdir.segments:
            with Segment.open(files) as seg:
                for walked in seg.walk():
                    yield from seg.records(walked.table)


def compiled(parts: list[PartitionDir], family) -> int:
    decoder = programs.Decoder(family())
    n = 0
    for chunk in chunks(parts):
        for _, block in decoder.blocks(chunk):
            n += int((block.status != programs.K.ST_SKIP).sum())
    return n


def reference(parts: list[PartitionDir], decode) -> int:
    n = 0
    for chunk in chunks(parts):
        cols, control = chunk.columns, chunk.table.is_control[chunk.columns.batch]
        for i in range(len(cols)):
            if not control[i]:
                decode(cols.key(i), cols.value(i))
                n += 1
                if n == SAMPLE:
                    return n
    return n


def replay(command: str, parts: list[PartitionDir], root: Path) -> int:
    if command == "offsets":
        return replay_offsets(parts, sink=lambda a: None).records
    if command == "transactions":
        return replay_transaction_state(parts).records
    return timeline(root / "__cluster_metadata-0", on_event=lambda e: None).end_offset


def command(*argv: str, code_dir: Path | None = None) -> tuple[float, float, float]:
    """A whole command in a child process, stdout to /dev/null: wall seconds, CPU seconds
    (the child's user and system time, its worker processes' included: what other tenants of
    the machine disturb least) and peak RSS in MB (the largest of the child's VmHWM and its
    workers'). ``code_dir``: run that checkout's segtools instead (an older one, as a peer)."""
    code = ("import resource, sys; from segtools.cli.main import main; "
            "code = main(sys.argv[1:]); "
            "own = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "print(max(int(own.split()[1]), "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), file=sys.stderr); "
            "sys.exit(code)")
    env = None
    if code_dir is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(code_dir), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])}
    before = os.times()
    t = time.perf_counter()
    # ``python -c`` puts its working directory first on the path: the peer's runs start in its
    # checkout, else the checkout the benchmark was started from would be timed twice
    proc = subprocess.run([sys.executable, "-c", code, *argv], env=env, cwd=code_dir,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t
    after = os.times()
    assert proc.returncode in (0, 1), proc.stderr
    cpu = (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)
    return seconds, cpu, int(proc.stderr.split()[-1]) / 1024


def whole_offsets(root: Path, peer_code: Path | None = None, passes: int = PASSES) -> dict:
    """``offsets`` and, as the peer, ``scan --crc`` of the same bytes (the checked walk of
    every batch: what reading the log costs before any record is decoded), in turns, first
    run and best of ``passes``; with ``peer_code``, that checkout's ``offsets`` too, in the
    same turns (the code before a change, on the same log and the same machine load)."""
    root = root.absolute()  # the peer runs in its own checkout
    runs: dict[str, list[tuple[float, float, float]]] = {"offsets": [], "scan": []}
    if peer_code is not None:
        runs["peer offsets"] = []
    for _ in range(passes):
        runs["offsets"].append(command("offsets", "-q", str(root)))
        if peer_code is not None:
            runs["peer offsets"].append(command("offsets", "-q", str(root),
                                                code_dir=peer_code))
        runs["scan"].append(command("scan", "--crc", "-q", str(root)))
    out: dict = {"gib": sum(p.size_bytes for p in partitions_of([root], "__consumer_offsets"))
                 / BIG}
    for name, times in runs.items():
        out[name] = {"first_s": times[0][0], "best_s": min(t[0] for t in times),
                     "first_cpu_s": times[0][1], "best_cpu_s": min(t[1] for t in times),
                     "peak_rss_mb": max(t[2] for t in times)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--offsets-mib", type=int, default=BIG // MB,
                    help="size of the __consumer_offsets logs of the whole command")
    ap.add_argument("--no-decode", action="store_true", help="the whole command only")
    ap.add_argument("--peer-code", type=Path, metavar="DIR",
                    help="another checkout (e.g. a git worktree of the code before a change, "
                         "its compiled modules built): its offsets timed in turns with this "
                         "one's")
    ap.add_argument("--passes", type=int, default=PASSES,
                    help="turns of the whole command (a loaded machine: fewer, each long)")
    ap.add_argument("--log", action="append", choices=[label for label, _, _ in LOGS],
                    help="only this log of the whole command (repeatable; default: all)")
    opts = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    results: dict = {"decode": {}, "offsets_1gib": {}}
    for command, (topic, names, family, decode) in () if opts.no_decode else TOPICS.items():
        for shape in internal_logs.SHAPES:
            root = internal_logs.log_dir(command, names, SIZE, shape)
            parts = partitions_of([root], topic)
            compiled(parts, family)  # warm the page cache
            c_s, n = best(lambda parts=parts, family=family: compiled(parts, family))
            r_s, m = best(lambda parts=parts, decode=decode: reference(parts, decode))
            p_s, _ = best(lambda parts=parts, root=root, command=command:
                          replay(command, parts, root))
            row = {"records": n, "compiled_per_s": n / c_s, "reference_per_s": m / r_s,
                   "replay_per_s": n / p_s}
            row["ratio"] = row["compiled_per_s"] / row["reference_per_s"]
            row["replay_ratio"] = row["replay_per_s"] / row["reference_per_s"]
            results["decode"][f"{command}/{shape}"] = row
            print(f"{command:<12} {shape:<7} {n / 1e6:5.2f} M records: decode "
                  f"{row['compiled_per_s'] / 1e6:5.2f} M/s = {row['ratio']:5.0f}x the reference "
                  f"({row['reference_per_s'] / 1e3:4.0f} k/s); whole replay "
                  f"{row['replay_per_s'] / 1e3:5.0f} k/s = {row['replay_ratio']:4.1f}x",
                  flush=True)
    for label, move_on, steady in LOGS:
        if opts.log and label not in opts.log:
            continue
        root = internal_logs.log_dir("offsets", TOPICS["offsets"][1], opts.offsets_mib * MB,
                                     "fixture", move_on, steady)
        r = results["offsets_1gib"][label] = whole_offsets(root, opts.peer_code, opts.passes)
        o, scan = r["offsets"], r["scan"]
        print(f"segtools offsets, {r['gib']:.2f} GiB of __consumer_offsets ({label}): "
              f"first {o['first_s']:.1f} s, best {o['best_s']:.1f} s = "
              f"{o['best_s'] / r['gib']:.1f} s/GiB (target <= {OFFSETS_S_PER_GIB} s/GiB), "
              f"CPU {o['best_cpu_s'] / r['gib']:.1f} s/GiB; {o['best_s'] / scan['best_s']:.1f}x "
              f"the time (CPU {o['best_cpu_s'] / scan['best_cpu_s']:.1f}x) of scan --crc of the "
              f"same bytes ({scan['best_s']:.2f} s); peak RSS {o['peak_rss_mb']:.0f} MB; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        if opts.peer_code is not None:
            peer = r["peer offsets"]
            print(f"  peer ({opts.peer_code}): first {peer['first_s']:.1f} s, best "
                  f"{peer['best_s']:.1f} s, CPU {peer['best_cpu_s']:.1f} s: this code takes "
                  f"{o['best_s'] / peer['best_s']:.2f}x its best time, "
                  f"{o['first_s'] / peer['first_s']:.2f}x its first, "
                  f"{o['best_cpu_s'] / peer['best_cpu_s']:.2f}x its CPU; peak RSS "
                  f"{peer['peak_rss_mb']:.0f} MB", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "internal.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
