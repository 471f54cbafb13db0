"""Hostile inputs, one builder per class, and a child-process meter for their cost.

Each builder writes a partition directory (``<tmp>/<case>/topic-0/``) holding one crafted
segment (and indexes where the class needs them). :func:`measure` runs a segtools command over
it in a fresh interpreter and reports wall time and *peak RSS growth*: the peak during the
operation (``VmHWM``, reset before it; ``ru_maxrss`` where that cannot be reset) minus the RSS
before it, after the imports and a warm-up run on a tiny valid segment (the kernels'
loaded), so the number is what the hostile input itself cost.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import cramjam
import lz4.block
import zstandard

from segtools.codecs import crc32c
from segtools.formats import batch as v2
from tests.builders import encode_records, make_batch

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
SEGMENT = "00000000000000000000.log"


def _pdir(tmp: Path, case: str) -> Path:
    pdir = tmp / case / "topic-0"
    pdir.mkdir(parents=True)
    return pdir


def _batch(payload: bytes, *, count: int = 1, codec: int = 0) -> bytes:
    return v2.build_batch(base_offset=0, records_payload=payload, records_count=count,
                          last_offset_delta=max(count - 1, 0), attributes=codec,
                          base_timestamp=1_700_000_000_000, max_timestamp=1_700_000_000_000)


# ---------------------------------------------------------------------------- bombs


def gzip_bomb(inflated: int) -> bytes:
    """Concatenated gzip members of zeros (``GZIPInputStream`` reads them all)."""
    member = zlib.compress(bytes(16 * MIB), level=9, wbits=31)
    return member * max(1, inflated // (16 * MIB))


def zstd_bomb(inflated: int) -> bytes:
    frame = zstandard.ZstdCompressor(level=19, write_content_size=False).compress(
        bytes(64 * MIB))
    return frame * max(1, inflated // (64 * MIB))


def lz4_bomb(inflated: int) -> bytes:
    """Kafka's LZ4 frame with 4 MiB blocks of zeros, the same compressed block repeated."""
    block = lz4.block.compress(bytes(4 * MIB), store_size=False)
    descriptor = bytes([0x60, 0x70])  # version 1, independent blocks; 4 MiB max block
    from segtools.codecs import xxh32
    header = struct.pack("<I", 0x184D2204) + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF])
    body = (struct.pack("<I", len(block)) + block) * max(1, inflated // (4 * MIB))
    return header + body + struct.pack("<I", 0)


def snappy_bomb(inflated: int) -> bytes:
    """snappy-java's xerial framing, 1 MiB chunks of zeros (snappy tops out near 21:1)."""
    chunk = bytes(cramjam.snappy.compress_raw(bytes(MIB)))
    return (b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
            + (struct.pack(">i", len(chunk)) + chunk) * max(1, inflated // MIB))


def snappy_liar() -> bytes:
    """A raw snappy block whose preamble claims 4 GiB: must be refused before allocating."""
    return bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + bytes(64)


BOMBS = {"gzip": (1, gzip_bomb), "snappy": (2, snappy_bomb), "lz4": (3, lz4_bomb),
         "zstd": (4, zstd_bomb)}


def write_bomb(tmp: Path, codec: str, inflated: int) -> Path:
    codec_id, make = BOMBS[codec]
    pdir = _pdir(tmp, f"bomb-{codec}")
    (pdir / SEGMENT).write_bytes(_batch(make(inflated), count=1, codec=codec_id))
    return pdir


# ---------------------------------------------------------------------------- framing lies


def write_length_2g(tmp: Path) -> Path:
    """A batch header claiming 2^31-1 bytes in a small file."""
    pdir = _pdir(tmp, "length-2g")
    (pdir / SEGMENT).write_bytes(struct.pack(">qiib", 0, 2**31 - 1, 0, 2) + bytes(100))
    return pdir


def write_sparse_2g_batch(tmp: Path) -> Path:
    """A 2 GiB sparse segment whose one batch header claims all of it (length 2^31-1) and
    2^31-1 records: the CRC must read 2 GiB without holding it, the kernel must not allocate
    for the count."""
    pdir = _pdir(tmp, "sparse-2g")
    header = struct.pack(">qiibIhiqqqhii", 0, 2**31 - 1, 0, 2, 0, 0, 2**31 - 2, 0, 0, -1, -1,
                         -1, 2**31 - 1)
    with open(pdir / SEGMENT, "wb") as f:
        f.write(header)
        f.truncate(v2.LOG_OVERHEAD + 2**31 - 1)
    return pdir


def write_lying_count(tmp: Path) -> Path:
    """Batches whose record count says 2^31-1 over a handful of real records."""
    pdir = _pdir(tmp, "lying-count")
    recs = [dict(timestamp_delta=i, offset_delta=i, key=b"k", value=b"v" * 10, headers=[])
            for i in range(5)]
    data = bytearray(make_batch(recs))
    data[57:61] = (2**31 - 1).to_bytes(4, "big")
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    (pdir / SEGMENT).write_bytes(bytes(data) * 1000)
    return pdir


def write_endless_varints(tmp: Path) -> Path:
    """1 MiB of 0xFF (continuation bits that never stop) as the records of 64 batches."""
    pdir = _pdir(tmp, "endless-varint")
    one = _batch(b"\xff" * (MIB // 64), count=1000)
    (pdir / SEGMENT).write_bytes(one * 64)
    return pdir


def write_tiny_records(tmp: Path, batches: int = 64) -> Path:
    """Uncompressed 1 MiB batches of 7-byte records: the most records per byte Kafka allows."""
    pdir = _pdir(tmp, "tiny-records")
    n = MIB // 7
    payload = encode_records([dict(timestamp_delta=0, offset_delta=i % 64, key=None,
                                   value=None, headers=[]) for i in range(n)])
    (pdir / SEGMENT).write_bytes(_batch(payload, count=n) * batches)
    return pdir


# ---------------------------------------------------------------------------- legacy


def legacy_message(magic: int, attributes: int, value: bytes | None, offset: int,
                   key: bytes | None = None) -> bytes:
    body = bytes([magic, attributes]) + (struct.pack(">q", 0) if magic == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def write_nested_wrappers(tmp: Path, depth: int = 64) -> Path:
    """gzip wrappers nested ``depth`` deep (Kafka allows one level)."""
    pdir = _pdir(tmp, "nested-wrappers")
    inner = legacy_message(1, 0, b"leaf", 0)
    for level in range(depth):
        inner = legacy_message(1, 1, zlib.compress(inner, wbits=31), level)
    (pdir / SEGMENT).write_bytes(inner)
    return pdir


def write_legacy_inner_flood(tmp: Path, inner: int = 1_000_000) -> Path:
    """One gzip wrapper holding ``inner`` empty v1 messages (26 MB inflated from ~50 KB)."""
    pdir = _pdir(tmp, "legacy-flood")
    one = legacy_message(1, 0, None, 0)
    messages = b"".join(legacy_message(1, 0, None, i) for i in range(1024))
    body = zlib.compress(messages * (inner // 1024) + one * (inner % 1024), 9, wbits=31)
    (pdir / SEGMENT).write_bytes(legacy_message(1, 1, body, inner - 1))
    return pdir


# ---------------------------------------------------------------------------- indexes


def write_huge_sparse_index(tmp: Path, entries: int = 10**9) -> Path:
    """A real little segment beside a sparse ``.index`` and ``.timeindex`` claiming 10^9
    entries (8 GB / 12 GB of holes): only the first few entries hold data."""
    pdir = _pdir(tmp, "index-1e9")
    recs = [dict(timestamp_delta=i, offset_delta=i, key=None, value=b"x", headers=[])
            for i in range(3)]
    (pdir / SEGMENT).write_bytes(make_batch(recs, base_timestamp=1_700_000_000_000))
    for suffix, entry, size in ((".index", struct.pack(">ii", 2, 0), 8),
                                (".timeindex", struct.pack(">qi", 1_700_000_000_002, 2), 12)):
        with open(pdir / SEGMENT.replace(".log", suffix), "wb") as f:
            f.write(entry)
            f.truncate(entries * size)
    return pdir


# ---------------------------------------------------------------------------- meter

_CHILD = r"""
import contextlib, io, json, os, resource, sys, time
from segtools.cli.main import main
from segtools.storage.segment import Segment

import tempfile

FINDING = ("ERROR ", "WARNING ", "INFO ", '{"type":"finding"')

def run(argv):
    # stdout goes to a real file (memory would count as RSS); finding lines are read back
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        err = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        out.flush()
        out.seek(0)
        found = [line.strip() for line in out if line.startswith(FINDING)][:50]
    return code, "\n".join([err.getvalue(), *found])

def library(path, limit):
    findings = []
    with Segment(path, decompress_limit=limit) as seg:
        for chunk in seg.walk():
            findings.extend(chunk.findings)
            for records in seg.records(chunk.table):
                findings.extend(records.findings)
    return 1 if findings else 0, "\n".join(f"{f.code}: {f.message}" for f in findings)

def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])

def reset_peak():
    # Linux: writing 5 to clear_refs resets VmHWM, so each operation's own peak is measured
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

specs = json.loads(sys.argv[1])
run(["dump", "--deep", specs[0]["warmup"]])
library(specs[0]["warmup"], 1 << 20)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for spec in specs:
    per_op = reset_peak()
    rss_before = status_kib("VmRSS") if per_op else base
    start = time.monotonic()
    if spec["mode"] == "cli":
        code, err = run(spec["argv"])
    else:
        code, err = library(spec["path"], spec["limit"])
    seconds = time.monotonic() - start
    peak = status_kib("VmHWM") if per_op else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"name": spec["name"], "code": code, "stderr": err, "seconds": seconds,
                      "baseline_mib": rss_before / 1024, "growth_mib": (peak - rss_before) / 1024,
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
          flush=True)
"""


def measure(specs: list[dict], warmup: Path, timeout: float = 300) -> dict[str, dict]:
    """Run operations one after the other in one fresh interpreter, keyed by ``name``: code,
    stderr (or the findings, for library runs), seconds, and ``growth_mib``: the operation's
    peak RSS above the RSS before it. On Linux the peak is reset before each operation
    (``/proc/self/clear_refs``, then ``VmHWM``); elsewhere it is ``ru_maxrss`` above the
    warmed-up baseline so far, which only rises, so still bounds each operation from above
    (order operations by the bound they are held to). ``peak_mib`` is ``ru_maxrss``."""
    specs = [{**spec, "warmup": str(warmup)} for spec in specs]
    result = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(specs)], cwd=ROOT,
                            capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {row["name"]: row for row in rows}
