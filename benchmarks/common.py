"""Shared helpers for the benchmark scripts: synthetic segments and a best-of timer.

Large segments are made by repeating one batch and rewriting only its base offset, which the
batch CRC does not cover (``DefaultRecordBatch``: the CRC starts at the attributes), so every
batch stays valid. Records come from kafka-python's builder, not from segtools.
"""

from __future__ import annotations

import os
import struct
import tempfile
import time
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
OUT = Path(os.environ.get("SEGTOOLS_BENCH_DIR", tempfile.gettempdir())) / "segtools-bench"


def one_batch(records: int, value_size: int, codec: str = "none", seed: int = 7) -> bytes:
    import random
    rnd = random.Random(seed)
    b = DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[codec],
                                  is_transactional=False, producer_id=-1, producer_epoch=-1,
                                  base_sequence=-1, batch_size=1 << 26)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"segment"]
    for i in range(records):
        value = b" ".join(rnd.choice(words) for _ in range(value_size // 6 + 1))[:value_size]
        b.append(i, timestamp=1_700_000_000_000 + i, key=b"key-%06d" % (i % 5000),
                 value=value, headers=[])
    return bytes(b.build())


def make_segment(name: str, target_bytes: int, records: int = 500, value_size: int = 100,
                 codec: str = "none") -> Path:
    """A .log of about ``target_bytes`` made of copies of one batch with rising offsets."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name / "00000000000000000000.log"
    if path.exists() and path.stat().st_size >= target_bytes:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    template = bytearray(one_batch(records, value_size, codec))
    copies = max(1, target_bytes // len(template))
    with open(path, "wb") as f:
        for i in range(copies):
            struct.pack_into(">q", template, 0, i * records)
            f.write(template)
    return path


def best_of(fn, repeat: int = 3, clock=time.perf_counter) -> float:
    """The least of ``repeat`` calls' times by ``clock`` (wall by default;
    ``time.process_time`` for CPU, which other tenants of a shared machine disturb less)."""
    best = float("inf")
    for _ in range(repeat):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best



def last_offset(path: Path) -> int:
    """The last offset of a segment (its final batch's), from the batch table."""
    from segtools.storage.segment import Segment

    last = -1
    with Segment(path) as seg:
        for chunk in seg.walk(verify_crc=False):
            if len(chunk.table):
                last = int(chunk.table.last_offset[-1])
    return last
