"""Run Apache Kafka's own reader (benchmarks/java/KafkaReaderBench.java) as a peer.

The jars come from the same PyPI wheel the fixtures use (``fixtures/fetch-jars.sh``); the Java
class is compiled into the gitignored ``.cache``. Returns None when no JDK is available, so a
benchmark can still print its other peers.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / ".cache" / "jars"
BUILD = ROOT / ".cache" / "bench-java"
SOURCE = ROOT / "benchmarks" / "java" / "KafkaReaderBench.java"
JAVA = ["java", f"-Djava.io.tmpdir={ROOT / '.cache'}", "-Dslf4j.internal.verbosity=ERROR"]


def classpath() -> str | None:
    if not shutil.which("javac"):
        return None
    if not (JARS / "kafka-clients.jar").exists():
        subprocess.run(["bash", str(ROOT / "fixtures" / "fetch-jars.sh")], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cp = ":".join(str(p) for p in sorted(JARS.glob("*.jar")))
    klass = BUILD / "KafkaReaderBench.class"
    if not klass.exists() or klass.stat().st_mtime < SOURCE.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", cp, "-d", str(BUILD),
                        str(SOURCE)], check=True)
    return f"{BUILD}:{cp}"


def run(mode: str, path: Path, repeat: int = 1, stdout=subprocess.DEVNULL):
    """Returns (wall seconds incl. JVM start, [in-JVM seconds per repeat], records)."""
    cp = classpath()
    if cp is None:
        return None
    t = time.perf_counter()
    proc = subprocess.run(
        [*JAVA, "-cp", cp, "KafkaReaderBench", mode, str(path), str(repeat)], stdout=stdout,
        stderr=subprocess.PIPE, text=True, check=True)
    wall = time.perf_counter() - t
    lines = [ln.split() for ln in proc.stderr.splitlines() if ln.startswith(mode)]
    return wall, [int(ln[3]) / 1e9 for ln in lines], int(lines[-1][1])


def generate(path: Path, records: int, value_bytes: int, codec: str, magic: int,
             size: int) -> None:
    """Write a segment of batches built by Kafka's ``MemoryRecordsBuilder``."""
    cp = classpath()
    if cp is None:
        raise RuntimeError("the benchmark segments are written by Kafka's classes: needs a JDK")
    subprocess.run([*JAVA, "-cp", cp, "KafkaReaderBench", "generate", str(path), str(records),
                    str(value_bytes), codec, str(magic), str(size)], check=True)
