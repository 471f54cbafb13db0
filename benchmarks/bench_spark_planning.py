"""Spark planning of a large tree against the CLI's ``scan`` of the same tree (issue 25).

The tree: 10,000 partition directories copied from the Kafka-written fixture partitions
(``fixtures/logdirs/sample`` and ``producers``, live partitions of one to several segments,
with their indexes, snapshots and leader-epoch checkpoints), cycled and renamed
``<topic>-<n>``; files are hard links where the file system allows (copies otherwise), so
the tree costs no disk. Built once under ``$SEGTOOLS_BENCH_DIR``.

Both sides are whole processes, timed the way a user meets them (the first run, then the
best of three), page cache warm after the first:

* **planning**: what the driver does for ``spark.read.format("kafkalog").load(tree)``
  before any task runs: parse the options, list the tree once, cut it into tasks, and
  pickle every task as Spark sends them to executors (no JVM: Spark's own share is the
  same for every source).
* **scan**: ``segtools scan TREE`` with its output to a pipe.

Goal: planning takes no more than ``scan`` (ratio <= 1.0). ``--partitions N`` changes the
size; ``--quick`` times one run after the first instead of three.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import OUT
from segtools.storage.partition import parse_partition_dir_name

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("sample", "producers")

PLAN_SCRIPT = """
import pickle, sys
from pyspark_kafkalog.options import parse_options
from pyspark_kafkalog.planning import plan
tasks = plan(parse_options({"path": sys.argv[1]}))
blobs = [pickle.dumps(t) for t in tasks]
print(len(tasks), sum(len(t.ranges) for t in tasks), sum(map(len, blobs)))
"""


def source_partitions() -> list[Path]:
    """The live, named partition directories of the source trees that hold segments."""
    out = []
    for tree in SOURCES:
        for pdir in sorted((REPO / "fixtures" / "logdirs" / tree).iterdir()):
            name = parse_partition_dir_name(pdir.name) if pdir.is_dir() else None
            if name is not None and name.state.value == "live" and any(pdir.glob("*.log")):
                out.append(pdir)
    return out


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def build_tree(partitions: int) -> Path:
    root = OUT / f"spark-planning-{partitions}" / "logs"
    done = root / ".complete"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    shutil.copy2(REPO / "fixtures" / "logdirs" / "sample" / "meta.properties", root)
    sources = source_partitions()
    for i in range(partitions):
        src = sources[i % len(sources)]
        topic = parse_partition_dir_name(src.name).topic
        dest = root / f"{topic}-{i}"
        dest.mkdir()
        for f in src.iterdir():
            if f.is_file():
                _link_or_copy(f, dest / f.name)
    done.write_text("")
    return root


def whole(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, the process and its children) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # scan exits 1 when it reports findings
        raise RuntimeError(f"{cmd}: exit {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, done.stdout


def first_and_best(cmd: list[str], repeat: int = 3) -> tuple[float, float, float, str]:
    """The first run's wall time, then the best wall and CPU times of ``repeat`` more."""
    first, _, out = whole(cmd)
    runs = [whole(cmd) for _ in range(repeat)]
    return first, min(r[0] for r in runs), min(r[1] for r in runs), out


def main() -> None:
    partitions = 10_000
    if "--partitions" in sys.argv:
        partitions = int(sys.argv[sys.argv.index("--partitions") + 1])
    tree = build_tree(partitions)
    files = sum(1 for _ in tree.rglob("*"))
    segments = sum(1 for _ in tree.glob("*/*.log"))
    python = sys.executable
    segtools = str(Path(python).with_name("segtools"))
    repeat = 3 if "--quick" not in sys.argv else 1
    p_first, p_best, p_cpu, out = first_and_best([python, "-c", PLAN_SCRIPT, str(tree)], repeat)
    tasks, ranges, pickled = map(int, out.split())
    s_first, s_best, s_cpu, _ = first_and_best([segtools, "scan", str(tree)], repeat)
    print(f"== Spark planning: {partitions:,} partitions, {segments:,} segments, {files:,} "
          f"files; {tasks} tasks of {ranges:,} ranges ({pickled / 2**20:.1f} MiB pickled)")
    print(f"planning (whole process): first {p_first:.2f} s, best {p_best:.2f} s "
          f"({p_cpu:.2f} s CPU)")
    print(f"segtools scan (whole command): first {s_first:.2f} s, best {s_best:.2f} s "
          f"({s_cpu:.2f} s CPU)")
    ratio = p_best / s_best
    print(f"planning / scan: {ratio:.2f} (best), {p_first / s_first:.2f} (first), "
          f"{p_cpu / s_cpu:.2f} (CPU); goal <= 1.0: {'met' if ratio <= 1.0 else 'NOT met'}")
    (OUT / f"spark-planning-{partitions}.json").write_text(json.dumps({
        "partitions": partitions, "segments": segments, "files": files, "tasks": tasks,
        "plan_first_s": p_first, "plan_best_s": p_best, "plan_cpu_s": p_cpu,
        "scan_first_s": s_first, "scan_best_s": s_best, "scan_cpu_s": s_cpu}, indent=1))


if __name__ == "__main__":
    main()
