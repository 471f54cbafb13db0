"""Whole commands, as an operator runs them, against Kafka's own reader in the same run.

* ``dump --deep --format jsonl --bytes base64`` of a 256 MiB segment of each batch shape,
  against Kafka's reader printing the same JSON lines from a JVM (start-up included); the two
  outputs are compared byte for byte first, on a 16 MiB segment of the shape.
* ``scan --crc`` and ``verify`` of a 1 GiB segment of one-record batches (rolled, in a log dir
  with its checkpoints, as a broker leaves it), warm; and the peak RSS of each command.
* Start-up: ``segtools --help``, and every command on a small segment of the fixtures.

Targets (issue 12): dump <= 0.5x Kafka's time on every shape; scan --crc and verify of the 1 GiB
segment under 2 s; ``--help`` < 0.25 s; any command on a 30 KB segment < 0.5 s; peak RSS under
300 MB for the 1 GiB segment. Timed children run without ``PYTHONDONTWRITEBYTECODE`` (as an
installed package does, with its bytecode cached) after one warm-up run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import kafka_java
from benchmarks.common import OUT
from benchmarks.shapes import SHAPES, rolled, segment

ROOT = Path(__file__).resolve().parent.parent
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SAMPLE = ROOT / "fixtures" / "logdirs" / "sample"
FORENSICS = ROOT / "fixtures" / "logdirs" / "forensics"


def timed(cmd: list[str], repeat: int = 3) -> tuple[float, int]:
    """Best wall seconds over ``repeat`` runs (after a warm-up), and the peak RSS in MB."""
    best, rss = float("inf"), 0
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    for _ in range(repeat):
        t = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=ENV)
        best = min(best, time.perf_counter() - t)
        rss = max(rss, int(done.stderr.strip().splitlines()[-1]) // 1024)
    return best, rss


def java_print(path: Path) -> list[str]:
    cp = kafka_java.classpath()
    return [*kafka_java.JAVA, "-cp", cp, "KafkaReaderBench", "print", str(path)]


def same_output(shape) -> bool:
    """segtools' dump and Kafka's reader print the same bytes (a 16 MiB segment)."""
    path = segment(shape, 16 << 20)
    ours = subprocess.run([SEGTOOLS, "dump", "--deep", "--format", "jsonl", "--bytes",
                           "base64", str(path)], capture_output=True, env=ENV).stdout
    theirs = subprocess.run(java_print(path), capture_output=True).stdout
    return ours == theirs


def main() -> None:
    results: dict = {"dump": {}, "startup": {}}
    have_java = kafka_java.classpath() is not None
    for shape in SHAPES:
        path = segment(shape)
        ours, rss = timed([SEGTOOLS, "dump", "--deep", "--format", "jsonl", "--bytes", "base64",
                           str(path)], repeat=2)
        r = {"segtools_s": ours, "segtools_rss_mb": rss}
        if have_java:
            r["identical_output"] = same_output(shape)
            r["kafka_s"], _ = timed(java_print(path), repeat=2)
        results["dump"][shape.name] = r
        line = f"dump --deep --format jsonl, 256 MiB of {shape.label:>20}: segtools {ours:5.2f} s"
        if have_java:
            line += (f", Kafka's reader {r['kafka_s']:5.2f} s: {ours / r['kafka_s']:.2f}x its "
                     f"time (output identical: {r['identical_output']})")
        print(line)

    one = next(s for s in SHAPES if s.name == "one")
    pdir = rolled(one, 1024 << 20)
    log = pdir / "00000000000000000000.log"
    size = log.stat().st_size
    for name, cmd in (("scan --crc", [SEGTOOLS, "scan", "--crc", "-q", str(pdir)]),
                      ("verify", [SEGTOOLS, "verify", "-q", str(pdir)])):
        seconds, rss = timed(cmd)
        results[name] = {"seconds": seconds, "rss_mb": rss, "bytes": size}
        print(f"{name} of a {size / 2**30:.2f} GiB segment of one-record batches: "
              f"{seconds:.2f} s warm, peak RSS {rss} MB")

    small = SAMPLE / "orders.v2-eu-0" / "00000000000000000205.log"
    cases = {
        "--help": [SEGTOOLS, "--help"],
        "dump --deep": [SEGTOOLS, "dump", "--deep", str(small)],
        "dump --deep --format jsonl": [SEGTOOLS, "dump", "--deep", "--format", "jsonl",
                                       str(small)],
        "scan": [SEGTOOLS, "scan", str(small.parent)],
        "verify": [SEGTOOLS, "verify", str(small.parent)],
        "find": [SEGTOOLS, "find", str(small.parent), "--offset", "230"],
        "retention": [SEGTOOLS, "retention", str(small.parent)],
        "compaction": [SEGTOOLS, "compaction", str(SAMPLE / "payments-compact-0")],
        "transactions": [SEGTOOLS, "transactions", str(SAMPLE / "payments.txn-0")],
        "offsets": [SEGTOOLS, "offsets", str(FORENSICS / "__consumer_offsets-9")],
        "metadata": [SEGTOOLS, "metadata", str(FORENSICS / "__cluster_metadata-0")],
    }
    for name, cmd in cases.items():
        seconds, _ = timed(cmd, repeat=5)
        results["startup"][name] = seconds
    print("start-up, whole process, warm: " + ", ".join(
        f"{name} {s:.2f} s" for name, s in results["startup"].items()))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cli.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
