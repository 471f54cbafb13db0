"""The batch shapes real log dirs hold, as segments written by Kafka's own record builder.

Every benchmark measures these (issue 12): one-record batches of ~200 B values (``linger.ms=0``
producers, internal topics), Kafka's default ``batch.size`` of 16 KiB (16 x 1 KiB), large
batches (500 x 100 B), zstd batches (200 x 1 KiB), and a magic-1 message set (data written
before KIP-98). The bytes come from ``MemoryRecordsBuilder`` in kafka-clients 3.9.1
(``benchmarks/java/KafkaReaderBench.java generate``), cached under
``$SEGTOOLS_BENCH_DIR/segtools-bench/shapes/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks import kafka_java
from benchmarks.common import OUT, last_offset

MB = 1 << 20


@dataclass(frozen=True)
class Shape:
    name: str
    records: int  # per batch
    value_bytes: int
    codec: str = "none"
    magic: int = 2

    @property
    def label(self) -> str:
        kind = f"{self.codec} " if self.codec != "none" else ""
        magic = f" (magic {self.magic})" if self.magic != 2 else ""
        return f"{kind}{self.records} x {self.value_bytes} B{magic}"


SHAPES = (
    Shape("one", 1, 200),
    Shape("k16", 16, 1024),
    Shape("large", 500, 100),
    Shape("zstd", 200, 1024, "zstd"),
    Shape("v1", 10, 200, magic=1),
)
UNCOMPRESSED = tuple(s for s in SHAPES if s.codec == "none")


def segment(shape: Shape, size: int = 256 * MB) -> Path:
    """A segment of about ``size`` bytes of ``shape`` batches (written once, then reused)."""
    path = OUT / "shapes" / f"{shape.name}-{size // MB}m" / "00000000000000000000.log"
    if path.exists() and path.stat().st_size >= size:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    kafka_java.generate(path, shape.records, shape.value_bytes, shape.codec, shape.magic, size)
    return path


def _partition(shape: Shape, size: int, kind: str) -> tuple[Path, Path]:
    """``bench-0`` of a log dir of its own (``meta.properties`` written) whose first segment
    is ``segment(shape, size)``, hard-linked (no second copy); and that segment."""
    src = segment(shape, size)
    root = OUT / "shapes" / f"{kind}-{shape.name}-{size // MB}m"
    pdir = root / "bench-0"
    first = pdir / "00000000000000000000.log"
    if not first.exists():
        pdir.mkdir(parents=True, exist_ok=True)
        first.hardlink_to(src)
        (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bench\n")
    return pdir, src


def rolled(shape: Shape, size: int) -> Path:
    """A partition directory whose first segment is ``segment(shape, size)``, rolled (a small
    active segment follows it), with the log dir's checkpoints: what a broker leaves, so the
    big segment is sealed and read through the mapping."""
    pdir, src = _partition(shape, size, "logdir")
    nxt = last_offset(src) + 1
    active = pdir / f"{nxt:020d}.log"
    if not active.exists():
        active.write_bytes(b"")
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
            (pdir.parent / name).write_text(f"0\n1\nbench 0 {nxt}\n")
    return pdir


def active(shape: Shape, size: int) -> Path:
    """A partition directory whose only segment, the active one, is ``segment(shape, size)``:
    a partition as a copy of it holds it, or a broker while it appends."""
    return _partition(shape, size, "active")[0]
