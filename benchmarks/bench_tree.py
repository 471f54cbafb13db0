"""Whole commands over a large broker's tree, against listing the same tree with ``find``.

The benchmark builds its own trees: one log dir of 1,000 and one of 10,000 partitions, each
partition a copy of a Kafka-written fixture partition under a new topic name (topics of 20
partitions, each topic one shape), with the log dir's checkpoints and ``meta.properties`` as a
broker writes them. Shapes vary: ZooKeeper-era v2 segments, compacted and transactional
partitions, v0/v1 and upgraded logs, group offsets, preallocated (sparse) indexes, a hanging
transaction, and one long shape made of ``orders.zk-0`` twice over (its batches' base offsets
shifted by its log end offset: the batch CRC does not cover the base offset, and index
entries are relative, so the second copy stays a valid log). At 10,000 partitions that is
about 57,000 segments and 200,000 files. Copies keep the sources' holes (a 10 MiB
preallocated index costs no disk).

Each command runs as an operator runs it, output to a pipe: ``scan``, ``verify``,
``retention``, ``report``. The first run and the best of the next ones are timed, with the
child's peak RSS (``ru_maxrss``, its ``VmHWM``), against the best of ``find TREE -type f
-printf '%s %p\\n'`` in the same run (the floor: listing and stat of every file).

Targets (issue 25): at 10,000 partitions ``scan``, ``verify`` and ``retention`` within 15x of
``find``, ``report`` within 30x; peak RSS under 1 GiB; each command's time from 1,000 to
10,000 partitions within 11x. Trees go to ``$SEGTOOLS_TREE_DIR`` (default: the system's temp
dir), built once and reused.

    python -m benchmarks.bench_tree [--sizes 1000,10000] [--repeat 2] [--commands scan,verify]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logdirs"
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TREES = Path(os.environ.get("SEGTOOLS_TREE_DIR", tempfile.gettempdir())) / "segtools-trees"
PARTITIONS_PER_TOPIC = 20
TARGETS = {"scan": 15, "verify": 15, "retention": 15, "report": 30}
RSS_TARGET_MB = 1024
GROWTH_TARGET = 11
CHECKPOINTS = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
               "log-start-offset-checkpoint", "cleaner-offset-checkpoint")


@dataclass(frozen=True)
class Shape:
    """A fixture partition copied ``weight`` topics in every ``sum(weights)``; ``twice``:
    the partition followed by itself, offsets shifted."""

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


SHAPES = (
    Shape("zookeeper", "orders.zk-0", 6, twice=True),
    Shape("zookeeper", "orders.zk-0", 6),
    Shape("sample", "payments-compact-0", 4),
    Shape("sample", "payments-compact-1", 1),
    Shape("sample", "orders.v2-eu-0", 1),
    Shape("sample", "orders.v2-eu-1", 1),
    Shape("sample", "payments.txn-0", 1),
    Shape("producers", "transfers-0", 1),
    Shape("producers", "clicks-0", 1),
    Shape("legacy", "legacy.v1-0", 1),
    Shape("legacy", "mixed.upgrade-0", 1),
    Shape("zookeeper", "__consumer_offsets-49", 1),
    Shape("forensics", "payments.hanging-0", 1),
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


def build_tree(partitions: int) -> Path:
    """A log dir of ``partitions`` copies (built once: a marker says it is complete)."""
    root = TREES / f"tree-{partitions}"
    marker = root / ".." / f"tree-{partitions}.done"
    if marker.exists():
        return root
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir(parents=True)
    (root / "meta.properties").write_bytes((FIXTURES / "sample" / "meta.properties")
                                           .read_bytes())
    templates = [_template(s) for s in SHAPES]
    wheel = [i for i, s in enumerate(SHAPES) for _ in range(s.weight)]
    checkpoints: dict[str, list[str]] = {n: [] for n in CHECKPOINTS}
    topics = (partitions + PARTITIONS_PER_TOPIC - 1) // PARTITIONS_PER_TOPIC
    made = 0
    for t in range(topics):
        shape = SHAPES[wheel[t % len(wheel)]]
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


def tree_counts(root: Path) -> tuple[int, int, int]:
    """Partitions, segments and files, as ``find`` sees them."""
    out = subprocess.run(["find", str(root), "-type", "f", "-printf", "%f\n"],
                         capture_output=True, text=True, check=True).stdout.split()
    return (sum(1 for e in os.scandir(root) if e.is_dir()),
            sum(1 for n in out if n.endswith(".log")), len(out))


# --------------------------------------------------------------------------- timing


def run_once(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS (MB) and exit code of one run, output to a pipe."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    assert proc.stdout is not None
    while proc.stdout.read(1 << 20):
        pass
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss // 1024, proc.returncode


def timed(cmd: list[str], repeat: int) -> dict:
    """The first run, then the best of ``repeat`` more, and the largest peak RSS."""
    first, rss, code = run_once(cmd)
    best = first
    for _ in range(repeat):
        s, r, _ = run_once(cmd)
        best, rss = min(best, s), max(rss, r)
    return {"first_s": first, "best_s": best, "rss_mb": rss, "exit": code}


def commands(tree: Path, out: Path) -> dict[str, list[str]]:
    return {
        "scan": [SEGTOOLS, "scan", "-q", str(tree)],
        "verify": [SEGTOOLS, "verify", "-q", str(tree)],
        "retention": [SEGTOOLS, "retention", "-q", str(tree)],
        "report": [SEGTOOLS, "report", str(tree), "-o", str(out)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=2, help="runs after the first (best of)")
    ap.add_argument("--commands", default=",".join(TARGETS))
    opts = ap.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")]
    wanted = opts.commands.split(",")
    results: dict = {}
    for n in sizes:
        t = time.perf_counter()
        tree = build_tree(n)
        parts, segs, files = tree_counts(tree)
        print(f"tree of {parts} partitions, {segs} segments, {files} files "
              f"({time.perf_counter() - t:.1f} s to build or find): {tree}")
        floor = timed(["find", str(tree), "-type", "f", "-printf", "%s %p\\n"], 3)["best_s"]
        row: dict = {"partitions": parts, "segments": segs, "files": files, "find_s": floor}
        print(f"  find -printf: {floor:.3f} s")
        for name, cmd in commands(tree, TREES / f"report-{n}.html").items():
            if name not in wanted:
                continue
            r = timed(cmd, opts.repeat)
            r["x_find"] = r["best_s"] / floor
            row[name] = r
            print(f"  {name:9}: first {r['first_s']:6.2f} s, best {r['best_s']:6.2f} s = "
                  f"{r['x_find']:5.1f}x find (target {TARGETS[name]}x), peak RSS "
                  f"{r['rss_mb']} MB, exit {r['exit']}")
        results[n] = row
    if len(sizes) > 1:
        lo, hi = results[min(sizes)], results[max(sizes)]
        for name in wanted:
            if name in lo and name in hi:
                growth = hi[name]["best_s"] / lo[name]["best_s"]
                hi[name]["growth"] = growth
                print(f"  {name:9}: {min(sizes)} -> {max(sizes)} partitions costs "
                      f"{growth:.1f}x (target <= {GROWTH_TARGET}x)")
    TREES.mkdir(parents=True, exist_ok=True)
    (TREES / "tree.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
