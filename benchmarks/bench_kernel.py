"""The record kernel alone: CPU per 256 MiB for the CRC check and the v2 decode into Arrow.

``to_arrow()`` of an active segment spends about half its CPU in the record kernel
(:func:`segtools.decode._records.arrow_v2`: CRC-32C of each batch and its records decoded into
Arrow buffers, in one pass), which the mapped and the ``pread`` paths share. This times that
call alone, with :func:`time.thread_time_ns` (this thread's CPU: on a machine other work
shares, wall time moves with the load), over a mapped segment of each shape
(:mod:`benchmarks.shapes`), page cache warm: the segment is walked once with the CRC left to
the reader, as the reader does, then each chunk's records are decoded ``--repeat`` times (the
CRCs set back to pending before each pass) into pooled buffers. Best pass, and ns a record.

``--slices`` times what a broker-held read adds in front of the kernel: each chunk's bytes
copied out of the page cache with ``pread`` into one reused window buffer, then decoded, the
window read whole (as ``storage.source.WindowSource`` reads it) or in slices of each size
given, the batches that end inside each slice decoded as soon as it has arrived (the bytes
read again while the CPU's L2 still holds them). Issue 37 asked whether the slices pay.

    python -m benchmarks.bench_kernel [--size-mib 256] [--repeat 5] [--shapes k16,large]
                                      [--slices 1024,512,256]
"""

from __future__ import annotations

import argparse
import mmap
import os
import time

import numpy as np

from benchmarks.shapes import SHAPES, segment
from segtools.decode import chunks, walk
from segtools.decode.buffers import BufferPool
from segtools.decode.source import BufferSource
from segtools.formats import batch as v2


def tables(data: np.ndarray) -> list[walk.BatchTable]:
    """The segment's batch tables as the reader gets them: CRCs of big batches left pending."""
    return [c.table for c in walk.walk(BufferSource(data), leave_crc=True)]


def one_pass(data: np.ndarray, parts: list, pool: BufferPool) -> tuple[int, int]:
    """CPU ns of one decode of every chunk (CRCs checked on the way), and the records."""
    spent = rows = 0
    for table, pending in parts:
        table.crc_valid[pending] = walk.CRC_PENDING
        starts = table.position + v2.RECORD_BATCH_OVERHEAD
        ends = table.end
        t = time.thread_time_ns()
        cols, err_code, _ = chunks.decode_arrow(data, table, starts, ends, False, pool, True)
        spent += time.thread_time_ns() - t
        rows += len(cols)
        assert not err_code.any() and (table.crc_valid == 1).all()
        del cols
    return spent, rows


def sliced_pass(fd: int, parts: list, window: np.ndarray, pool: BufferPool,
                slice_bytes: int | None) -> int:
    """CPU ns of one read of every chunk's window with ``pread`` and the decode of its
    records: the window whole (``slice_bytes`` None), or slice by slice, each slice's
    finished batches decoded before the next slice is read."""
    spent = 0
    view = memoryview(window)
    for table, pending in parts:
        table.crc_valid[pending] = walk.CRC_PENDING
        lo, hi = int(table.position[0]), int(table.end[-1])
        ends = table.end - lo
        t = time.thread_time_ns()
        decode = chunks.ArrowDecode(window, table, table.position + v2.RECORD_BATCH_OVERHEAD - lo,
                                    ends, False, pool, True)
        step = slice_bytes or hi - lo
        for at in range(0, hi - lo, step):
            n = min(step, hi - lo - at)
            assert os.preadv(fd, [view[at:at + n]], lo + at) == n
            if slice_bytes:
                decode.run(int(np.searchsorted(ends, at + n, side="right")))
        cols, err_code, _ = decode.result()
        spent += time.thread_time_ns() - t
        assert not err_code.any() and (table.crc_valid == 1).all()
        del cols, decode
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shapes", default="k16,large")
    ap.add_argument("--slices", default="", help="KiB per pread slice, comma-separated")
    opts = ap.parse_args()
    slices = [int(k) << 10 for k in opts.slices.split(",") if k]
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    for shape in (s for s in SHAPES if s.name in opts.shapes.split(",")):
        path = segment(shape, opts.size_mib << 20)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            data = np.frombuffer(mm, np.uint8)
            parts = [(t, np.flatnonzero(t.crc_valid == walk.CRC_PENDING)) for t in tables(data)]
            pool = BufferPool(chunks.CHUNK_BYTES)
            per_mib = (1 << 20) / data.shape[0]
            best, rows = min(one_pass(data, parts, pool) for _ in range(opts.repeat))
            print(f"record kernel, {shape.label:>11}: {best / 1e6 * 256 * per_mib:6.1f} ms "
                  f"CPU per 256 MiB, {best / rows:5.1f} ns a record ({rows} records)",
                  flush=True)
            if slices:
                window = np.zeros(max(int(t.end[-1] - t.position[0]) for t, _ in parts),
                                  np.uint8)
                for size in (None, *slices):
                    spent = min(sliced_pass(f.fileno(), parts, window, pool, size)
                                for _ in range(opts.repeat))
                    way = "window whole" if size is None else f"{size >> 10} KiB slices"
                    print(f"  pread + kernel, {way:>15}: {spent / 1e6 * 256 * per_mib:6.1f} ms "
                          "CPU per 256 MiB", flush=True)
            del data, parts, pool


if __name__ == "__main__":
    main()
