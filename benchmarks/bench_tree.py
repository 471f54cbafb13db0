"""Whole commands over a large broker's tree, against listing the same tree with ``find``.

The benchmark builds its own trees: one log dir of 1,000 and one of 10,000 partitions, each
partition a copy of a Kafka-written fixture partition under a new topic name (topics of 20
partitions, each topic one shape), with the log dir's checkpoints and ``meta.properties`` as a
broker writes them. The shapes are every one the fixtures hold (:data:`SHAPES`): v2 segments
of every codec, LogAppendTime, magic 0 and 1 messages and their compressed wrappers of every
codec, upgraded logs, compacted partitions with offset gaps and the cleaner's index entries,
transactional data with markers, idempotent producers, group offsets, preallocated (sparse)
indexes, a hanging transaction, a segment past the compiled summary's size, and one long
shape made of ``orders.zk-0`` twice over (its batches' base offsets shifted by its log end
offset: the batch CRC does not cover the base offset, and index entries are relative, so the
second copy stays a valid log). Copies keep the sources' holes (a 10 MiB preallocated index
costs no disk).

Each command runs as an operator runs it, output to a pipe: ``scan``, ``verify``,
``retention``, ``report``. The first run and the best of the next ones are timed, with the
child's least CPU time (user and system, its workers included), the least CPU time of the
command's own process (its workers left out: whether the parent is what the run waits for)
and peak RSS (``ru_maxrss``, its ``VmHWM``), against the best of ``find TREE -type f
-printf '%s %p\\n'`` in the same run (the floor: listing and stat of every file). Then each
shape alone (``--shape-partitions`` copies of it) is timed the same way against ``find`` of
its own tree, so a shape that leaves the fast path shows as its own ratio.

Targets (issue 37): at 10,000 partitions ``scan``, ``verify`` and ``retention`` within 10x of
``find``, ``report`` within 20x; peak RSS under 1 GiB; each command's time from 1,000 to
10,000 partitions within 11x. Trees go to ``$SEGTOOLS_TREE_DIR`` (default: the system's temp
dir), built once and reused.

    python -m benchmarks.bench_tree [--sizes 1000,10000] [--repeat 2] [--commands scan,verify]
                                    [--shape-partitions 1000] [--shape-commands scan,verify]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logdirs"
#: A segtools command as the ``segtools`` script runs it, which also writes its own process's
#: CPU time (its workers' left out) to the file ``SEGTOOLS_BENCH_PARENT_CPU`` names: on a
#: shared machine the parent's CPU says whether the process that lists and writes is the
#: one the others wait for, which a wall time disturbed by other tenants cannot.
PARENT_CPU = """
import os, resource, sys
from segtools.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    me = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["SEGTOOLS_BENCH_PARENT_CPU"], "w") as f:
        f.write(repr(me.ru_utime + me.ru_stime))
sys.exit(code)
"""
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
SEGTOOLS_TIMED = [sys.executable, "-c", PARENT_CPU]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TREES = Path(os.environ.get("SEGTOOLS_TREE_DIR", tempfile.gettempdir())) / "segtools-trees"
PARTITIONS_PER_TOPIC = 20
TARGETS = {"scan": 10, "verify": 10, "retention": 10, "report": 20}
RSS_TARGET_MB = 1024
GROWTH_TARGET = 11
RUN_LIMIT = 1800  # seconds one command may take before it counts as hung
CHECKPOINTS = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
               "log-start-offset-checkpoint", "cleaner-offset-checkpoint")


@dataclass(frozen=True)
class Shape:
    """A fixture partition copied ``weight`` topics in every ``sum(weights)``; ``twice``:
    the partition followed by itself, offsets shifted. ``name`` says what it stands for."""

    name: str
    log_dir: str
    partition: str
    weight: int
    twice: bool = False

    @property
    def source(self) -> Path:
        return FIXTURES / self.log_dir / self.partition

    @property
    def topic_partition(self) -> tuple[str, int]:
        topic, _, number = self.partition.rpartition("-")
        return topic, int(number)


#: Every batch shape the fixtures hold, each a partition Kafka's own code wrote: no shape can
#: hide behind another in the totals (each is also timed alone, ``--shape-partitions``).
SHAPES = (
    Shape("v2 long (two logs)", "zookeeper", "orders.zk-0", 6, twice=True),
    Shape("v2 zookeeper era", "zookeeper", "orders.zk-0", 6),
    Shape("compacted, offset gaps", "sample", "payments-compact-0", 3),
    Shape("compacted lz4", "sample", "payments-compact-1", 1),
    Shape("v2 + preallocated index", "sample", "orders.v2-eu-0", 1),
    Shape("gzip, LogAppendTime", "sample", "orders.v2-eu-1", 1),
    Shape("snappy", "sample", "orders.v2-eu-2", 1),
    Shape("lz4", "sample", "orders.v2-eu-3", 1),
    Shape("zstd", "sample", "orders.v2-eu-4", 1),
    Shape("edge cases", "sample", "edge-cases-0", 1),
    Shape("transactional + markers", "sample", "payments.txn-0", 1),
    Shape("transactional producers", "producers", "transfers-0", 1),
    Shape("idempotent lz4", "producers", "clicks-0", 1),
    Shape("idempotent gzip", "producers", "metrics-0", 1),
    Shape("magic 0 + wrappers", "legacy", "legacy.v0-0", 1),
    Shape("magic 1 + wrappers", "legacy", "legacy.v1-0", 1),
    Shape("magic 1 LogAppendTime", "legacy", "legacy.v1-1", 1),
    Shape("magic 0 -> 1 -> 2", "legacy", "mixed.upgrade-0", 1),
    Shape("group offsets, cleaned", "zookeeper", "__consumer_offsets-49", 1),
    Shape("cleaner merged", "whatif", "ledger-compact-0", 1),
    Shape("hanging transaction", "forensics", "payments.hanging-0", 1),
    Shape("zstd over 256 KiB", "sample", "big-value-0", 1),
)


# --------------------------------------------------------------------------- building


def _checkpoint(log_dir: str, name: str) -> dict[tuple[str, int], int]:
    path = FIXTURES / log_dir / name
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()[2:]
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines if line)}


def _log_end(path: Path) -> int:
    """The offset after the last batch of a v2 ``.log`` (``lastOffsetDelta`` at byte 23)."""
    data = path.read_bytes()
    pos, end = 0, None
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length <= 0 or pos + 12 + length > len(data):
            break
        end = base + struct.unpack_from(">i", data, pos + 23)[0] + 1
        pos += 12 + length
    return end if end is not None else 0


def _shifted(data: bytes, shift: int) -> bytes:
    """A v2 ``.log`` with every batch's base offset moved by ``shift`` (CRC unaffected)."""
    out = bytearray(data)
    pos = 0
    while pos + 12 <= len(out):
        base, length = struct.unpack_from(">qi", out, pos)
        if length <= 0 or pos + 12 + length > len(out):
            break
        struct.pack_into(">q", out, pos, base + shift)
        pos += 12 + length
    return bytes(out)


def _write_sparse(path: Path, data: bytes) -> None:
    """``data`` with its zero tail left as a hole (preallocated indexes cost no disk)."""
    body = data.rstrip(b"\0")
    with open(path, "wb") as f:
        f.write(body)
        f.truncate(len(data))


@dataclass
class Template:
    """One shape's files read once: ``(name, bytes)`` pairs, and its checkpoint offsets."""

    files: list[tuple[str, bytes]]
    offsets: dict[str, int]  # checkpoint file name -> offset


def _template(shape: Shape) -> Template:
    files = sorted((f.name, f.read_bytes()) for f in shape.source.iterdir()
                   if f.is_file() and f.name != "partition.metadata"
                   and not f.name.endswith(".deleted"))
    tp = shape.topic_partition
    offsets = {n: o for n in CHECKPOINTS
               if (o := _checkpoint(shape.log_dir, n).get(tp)) is not None}
    if not shape.twice:
        return Template(files, offsets)
    logs = sorted(n for n, _ in files if n.endswith(".log"))
    shift = _log_end(shape.source / logs[-1])
    more = []
    for name, data in files:
        stem, _, suffix = name.partition(".")
        if suffix not in ("log", "index", "timeindex"):
            continue
        moved = f"{int(stem) + shift:020d}.{suffix}"
        more.append((moved, _shifted(data, shift) if suffix == "log" else data))
    files = sorted(files + more)
    for n in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        if n in offsets:
            offsets[n] += shift
    return Template(files, offsets)


def _topic_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def build_tree(partitions: int, shapes: tuple[Shape, ...] = SHAPES, label: str = "") -> Path:
    """A log dir of ``partitions`` copies of ``shapes`` by weight (built once: a marker says
    it is complete)."""
    name = f"tree-{label}{partitions}"
    root = TREES / name
    marker = TREES / f"{name}.done"
    if marker.exists():
        return root
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir(parents=True)
    (root / "meta.properties").write_bytes((FIXTURES / "sample" / "meta.properties")
                                           .read_bytes())
    templates = [_template(s) for s in shapes]
    wheel = [i for i, s in enumerate(shapes) for _ in range(s.weight)]
    checkpoints: dict[str, list[str]] = {n: [] for n in CHECKPOINTS}
    topics = (partitions + PARTITIONS_PER_TOPIC - 1) // PARTITIONS_PER_TOPIC
    made = 0
    for t in range(topics):
        shape = shapes[wheel[t % len(wheel)]]
        template = templates[wheel[t % len(wheel)]]
        topic = f"{shape.topic_partition[0].lstrip('_')}.t{t:04d}"
        metadata = f"version: 0\ntopic_id: {_topic_id()}\n".encode()
        for p in range(min(PARTITIONS_PER_TOPIC, partitions - made)):
            pdir = root / f"{topic}-{p}"
            pdir.mkdir()
            (pdir / "partition.metadata").write_bytes(metadata)
            for name, data in template.files:
                _write_sparse(pdir / name, data)
            for n, offset in template.offsets.items():
                checkpoints[n].append(f"{topic} {p} {offset}")
            made += 1
    for n, lines in checkpoints.items():
        (root / n).write_text(f"0\n{len(lines)}\n" + "".join(f"{x}\n" for x in lines))
    marker.write_text(str(partitions))
    return root


def shape_label(shape: Shape) -> str:
    """The file-name-safe tag of a shape's own tree."""
    return "".join(c if c.isalnum() else "-" for c in shape.name) + "-"


def tree_counts(root: Path) -> tuple[int, int, int]:
    """Partitions, segments and files, as ``find`` sees them."""
    out = subprocess.run(["find", str(root), "-type", "f", "-printf", "%f\n"],
                         capture_output=True, text=True, check=True).stdout.split()
    return (sum(1 for e in os.scandir(root) if e.is_dir()),
            sum(1 for n in out if n.endswith(".log")), len(out))


# --------------------------------------------------------------------------- timing


def run_once(cmd: list[str]) -> tuple[float, float, int, int, float | None]:
    """Wall seconds, CPU seconds (user and system, its worker processes included: the
    figure other tenants of a shared machine disturb least), peak RSS (MB), exit code and
    the parent's own CPU seconds (a segtools command's, :data:`PARENT_CPU`; None for
    another program) of one run, output to a pipe. A run still going after ``RUN_LIMIT``
    seconds is killed (exit code -9): a hung run is a figure too, and must not hang the
    benchmark."""
    with tempfile.NamedTemporaryFile("r", suffix=".cpu") as parent:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env={**ENV, "SEGTOOLS_BENCH_PARENT_CPU": parent.name},
                                start_new_session=True)
        watchdog = threading.Timer(RUN_LIMIT, os.killpg, (proc.pid, signal.SIGKILL))
        watchdog.start()
        try:
            assert proc.stdout is not None
            while proc.stdout.read(1 << 20):
                pass
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            watchdog.cancel()
        seconds = time.perf_counter() - t
        own = parent.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024,
            proc.returncode, float(own) if own else None)


def timed(cmd: list[str], repeat: int) -> dict:
    """The first run, then the best of ``repeat`` more, the least CPU time (all processes,
    and the parent's own) and the largest peak RSS."""
    first, cpu, rss, code, own = run_once(cmd)
    best = first
    for _ in range(repeat):
        s, c, r, _, o = run_once(cmd)
        best, cpu, rss = min(best, s), min(cpu, c), max(rss, r)
        own = min(own, o) if own is not None and o is not None else own
    return {"first_s": first, "best_s": best, "cpu_s": cpu, "parent_cpu_s": own,
            "rss_mb": rss, "exit": code}


def commands(tree: Path, out: Path) -> dict[str, list[str]]:
    return {
        "scan": [*SEGTOOLS_TIMED, "scan", "-q", str(tree)],
        "verify": [*SEGTOOLS_TIMED, "verify", "-q", str(tree)],
        "retention": [*SEGTOOLS_TIMED, "retention", "-q", str(tree)],
        "report": [*SEGTOOLS_TIMED, "report", str(tree), "-o", str(out)],
    }


def measure(tree: Path, wanted: list[str], repeat: int, report: Path) -> dict:
    """``find``'s floor and each wanted command's times over ``tree``."""
    floor = timed(["find", str(tree), "-type", "f", "-printf", "%s %p\\n"], 3)["best_s"]
    row: dict = {"find_s": floor}
    for name, cmd in commands(tree, report).items():
        if name in wanted:
            r = timed(cmd, repeat)
            r["x_find"] = r["best_s"] / floor
            row[name] = r
    return row


def mixed(sizes: list[int], wanted: list[str], repeat: int) -> dict:
    """The trees mixing every shape, and the growth from the smallest to the largest."""
    results: dict = {}
    for n in sizes:
        t = time.perf_counter()
        tree = build_tree(n)
        parts, segs, files = tree_counts(tree)
        print(f"tree of {parts} partitions, {segs} segments, {files} files "
              f"({time.perf_counter() - t:.1f} s to build or find): {tree}")
        row = measure(tree, wanted, repeat, TREES / f"report-{n}.html")
        row.update(partitions=parts, segments=segs, files=files)
        print(f"  find -printf: {row['find_s']:.3f} s")
        for name in wanted:
            r = row[name]
            print(f"  {name:9}: first {r['first_s']:6.2f} s, best {r['best_s']:6.2f} s = "
                  f"{r['x_find']:5.1f}x find (target {TARGETS[name]}x), best CPU "
                  f"{r['cpu_s']:.2f} s (parent {r['parent_cpu_s'] or 0:.2f} s), peak RSS "
                  f"{r['rss_mb']} MB, exit {r['exit']}")
        results[n] = row
    if len(sizes) > 1:
        lo, hi = results[min(sizes)], results[max(sizes)]
        for name in wanted:
            growth = hi[name]["best_s"] / lo[name]["best_s"]
            hi[name]["growth"] = growth
            print(f"  {name:9}: {min(sizes)} -> {max(sizes)} partitions costs "
                  f"{growth:.1f}x (target <= {GROWTH_TARGET}x)")
    return results


def start_costs(wanted: list[str], repeat: int) -> dict[str, float]:
    """Each command's best over a log dir with no partition: what it costs to start."""
    empty = TREES / "tree-empty"
    empty.mkdir(parents=True, exist_ok=True)
    (empty / "meta.properties").write_bytes((FIXTURES / "sample" / "meta.properties")
                                            .read_bytes())
    return {name: timed(cmd, repeat)["best_s"]
            for name, cmd in commands(empty, TREES / "report-empty.html").items()
            if name in wanted}


def per_shape(partitions: int, wanted: list[str], repeat: int) -> dict:
    """Each shape alone: ``partitions`` copies, each command's best against ``find``, whole
    and above the command's start (its time over an empty log dir), which a small tree
    cannot hide."""
    start = start_costs(wanted, repeat)
    print(f"each shape alone, {partitions} partitions (best of {repeat + 1}; x find of the "
          "same tree, whole / above the start: " +
          ", ".join(f"{name} {s:.2f} s" for name, s in start.items()) + "):")
    print(f"  {'shape':28}" + "".join(f"{name:>16}" for name in wanted))
    results: dict = {"start_s": start}
    for shape in SHAPES:
        tree = build_tree(partitions, (shape,), shape_label(shape))
        row = measure(tree, wanted, repeat, TREES / "report-shape.html")
        for name in wanted:
            row[name]["x_find_above_start"] = max(
                0.0, row[name]["best_s"] - start[name]) / row["find_s"]
        results[shape.name] = row
        print(f"  {shape.name:28}" + "".join(
            f"{row[name]['x_find']:7.1f}x /{row[name]['x_find_above_start']:5.1f}x"
            + ("!" if row[name]["exit"] > 1 else " ") for name in wanted))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="partitions of the mixed trees")
    ap.add_argument("--repeat", type=int, default=2, help="runs after the first (best of)")
    ap.add_argument("--commands", default=",".join(TARGETS))
    ap.add_argument("--shape-partitions", type=int, default=1000,
                    help="partitions of each shape's own tree (0: no per-shape figures)")
    ap.add_argument("--shape-commands", default="scan,verify,retention")
    ap.add_argument("--json", type=Path, default=TREES / "tree.json",
                    help="where the figures go (default: beside the trees)")
    opts = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    results: dict = {}
    if opts.sizes:
        results["mixed"] = mixed([int(s) for s in opts.sizes.split(",")],
                                 opts.commands.split(","), opts.repeat)
    if opts.shape_partitions:
        results["shapes"] = per_shape(opts.shape_partitions, opts.shape_commands.split(","),
                                      opts.repeat)
    opts.json.parent.mkdir(parents=True, exist_ok=True)
    opts.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
