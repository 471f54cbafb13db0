"""Large partitions for planning tests and the Spark benchmark: segments, offset and time
indexes written by the broker's rules, from one batch template.

``LogSegment.append``: an offset-index entry ``(last offset of the append, its position)`` and a
time-index entry ``(max timestamp so far, its offset)`` are written when more than
``index.interval.bytes`` were appended since the last entry (tested before the append is
counted); a segment rolls when the next append would pass ``segment.bytes``, and a closed
segment's time index gets the final ``(max timestamp, offset)`` entry
(``onBecomeInactiveSegment``). The template's base offset (outside the CRC) and timestamps
(inside it, so the CRC-32C is recomputed) are rewritten for every copy.
"""

from __future__ import annotations

import struct
from pathlib import Path

from segtools.codecs import crc32c

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def _restamp(template: bytearray, base_offset: int, base_ts: int) -> bytes:
    count = struct.unpack_from(">i", template, 57)[0]
    last_delta = struct.unpack_from(">i", template, 23)[0]
    struct.pack_into(">q", template, 0, base_offset)
    struct.pack_into(">qq", template, 27, base_ts, base_ts + max(count - 1, last_delta, 0))
    struct.pack_into(">I", template, 17, crc32c(bytes(template[21:])))
    return bytes(template)


class _SegmentWriter:
    def __init__(self, pdir: Path, base_offset: int, interval: int):
        self.base = base_offset
        self.interval = interval
        self.log = open(pdir / f"{base_offset:020d}.log", "wb")  # noqa: SIM115
        self.index = open(pdir / f"{base_offset:020d}.index", "wb")  # noqa: SIM115
        self.timeindex = open(pdir / f"{base_offset:020d}.timeindex", "wb")  # noqa: SIM115
        self.size = 0
        self.since_entry = 0
        self.max_ts = -1
        self.max_ts_offset = base_offset
        self.last_time_entry = -1

    def append(self, batch: bytes, last_offset: int, max_ts: int) -> None:
        if max_ts > self.max_ts:
            self.max_ts, self.max_ts_offset = max_ts, last_offset
        if self.since_entry > self.interval:
            self.index.write(_OFFSET_ENTRY.pack(last_offset - self.base, self.size))
            self._time_entry()
            self.since_entry = 0
        self.log.write(batch)
        self.size += len(batch)
        self.since_entry += len(batch)

    def _time_entry(self) -> None:
        if self.max_ts > self.last_time_entry:
            self.timeindex.write(_TIME_ENTRY.pack(self.max_ts, self.max_ts_offset - self.base))
            self.last_time_entry = self.max_ts

    def close(self, *, active: bool) -> None:
        if not active:
            self._time_entry()
        for f in (self.log, self.index, self.timeindex):
            f.close()


def write_partition(pdir: Path, template: bytes, *, batches: int, segment_bytes: int,
                    start_ts: int = 1_700_000_000_000, ts_step: int = 1000,
                    index_interval: int = 4096) -> list[int]:
    """Write ``batches`` copies of ``template`` (a v2 batch) with consecutive offsets and
    rising timestamps into ``pdir``; returns the segments' base offsets."""
    pdir.mkdir(parents=True, exist_ok=True)
    buf = bytearray(template)
    per_batch = struct.unpack_from(">i", buf, 23)[0] + 1
    writer = _SegmentWriter(pdir, 0, index_interval)
    bases = [0]
    for i in range(batches):
        base_offset, ts = i * per_batch, start_ts + i * ts_step
        if writer.size and writer.size + len(buf) > segment_bytes:
            writer.close(active=False)
            writer = _SegmentWriter(pdir, base_offset, index_interval)
            bases.append(base_offset)
        batch = _restamp(buf, base_offset, ts)
        writer.append(batch, base_offset + per_batch - 1, ts + per_batch - 1)
    writer.close(active=True)
    return bases
