"""A pretend broker and a reader, each in its own process, for the live-broker tests.

``python -m tests.robustness.live write PARTITION_DIR SECONDS MODE`` appends Kafka-written
batches (cut from the fixture segments; only the base offset, which no CRC covers, is
rewritten) to the active segment in torn pieces, maintains ``.index``/``.timeindex`` the way
``LogSegment.append`` does, rolls segments (trimming the old indexes, ``trimToValidSize``), and
applies retention the way ``UnifiedLog.deleteSegmentFiles`` does: rename to ``.deleted``,
delete later, sometimes at once. MODE ``truncate`` also truncates the active segment under the
readers (``LogSegment.truncateTo`` on a follower).

``python -m tests.robustness.live read TREE_ROOT SECONDS`` runs every command's argument sets
(``commands.ARGUMENT_SETS``, files globbed afresh each round) in-process until time is up and
prints one JSON line per run. The test asserts the reader process survived and that every run
ended with exit 0/1, or 2 with a single ``segtools: error:`` line.
"""

from __future__ import annotations

import json
import os
import random
import struct
import sys
import time
from pathlib import Path

from tests.decoding import batches_of
from tests.fixtures_manifest import SAMPLE

INDEX_INTERVAL = 4096  # index.interval.bytes
ROLL_BATCHES = 40
KEEP_SEGMENTS = 3


def kafka_batches() -> list[bytes]:
    """Every v2 batch of the sample fixtures, as Kafka wrote it."""
    out = []
    for log in sorted(SAMPLE.glob("*/*.log")):
        data = log.read_bytes()
        out += [data[b.position:b.end] for b in batches_of(data)
                if b.magic == 2 and b.crc_valid and b.size < 64 << 10]
    return out


def _name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


class Broker:
    def __init__(self, pdir: Path, seed: int, truncate: bool):
        self.pdir = pdir
        self.rnd = random.Random(seed)
        self.truncate = truncate
        self.batches = kafka_batches()
        self.next_offset = 0
        self.segments: list[int] = []
        self.pending_delete: list[tuple[float, Path]] = []
        self.roll()

    def roll(self) -> None:
        if self.segments:
            base = self.segments[-1]
            for suffix in (".index", ".timeindex"):  # AbstractIndex.trimToValidSize
                path = self.pdir / _name(base, suffix)
                os.truncate(path, self.valid[suffix])
        base = self.next_offset
        self.segments.append(base)
        self.log = open(self.pdir / _name(base, ".log"), "ab")  # noqa: SIM115
        for suffix in (".index", ".timeindex"):
            with open(self.pdir / _name(base, suffix), "wb") as f:
                f.truncate(1 << 20)  # preallocated, sparse, zero-filled
        self.valid = {".index": 0, ".timeindex": 0}
        self.position = 0
        self.since_index = 0
        self.count = 0

    def append(self) -> None:
        raw = bytearray(self.rnd.choice(self.batches))
        struct.pack_into(">q", raw, 0, self.next_offset)  # baseOffset: not under the CRC
        last_delta, _, max_ts = struct.unpack_from(">iqq", raw, 23)
        cuts = sorted(self.rnd.sample(range(1, len(raw)), k=min(2, len(raw) - 1)))
        for piece in (raw[:cuts[0]], raw[cuts[0]:cuts[-1]], raw[cuts[-1]:]):
            self.log.write(piece)
            self.log.flush()
            time.sleep(self.rnd.random() * 0.002)
        base = self.segments[-1]
        if self.since_index >= INDEX_INTERVAL:  # LogSegment.append: one entry per interval
            self._index(".index", struct.pack(">ii", self.next_offset + last_delta - base,
                                              self.position))
            self._index(".timeindex", struct.pack(">qi", max_ts, self.next_offset + last_delta
                                                  - base))
            self.since_index = 0
        self.position += len(raw)
        self.since_index += len(raw)
        self.next_offset += last_delta + 1
        self.count += 1

    def _index(self, suffix: str, entry: bytes) -> None:
        with open(self.pdir / _name(self.segments[-1], suffix), "r+b") as f:
            f.seek(self.valid[suffix])
            f.write(entry)
        self.valid[suffix] += len(entry)

    def retention(self) -> None:
        now = time.monotonic()
        while len(self.segments) > KEEP_SEGMENTS:
            base = self.segments.pop(0)
            for suffix in (".log", ".index", ".timeindex"):
                path = self.pdir / _name(base, suffix)
                if self.rnd.random() < 0.3:
                    path.unlink()  # deleted at once
                else:  # LocalLog: rename to .deleted, delete after file.delete.delay.ms
                    target = path.with_name(path.name + ".deleted")
                    path.rename(target)
                    self.pending_delete.append((now + 0.2, target))
        for when, path in [p for p in self.pending_delete if p[0] <= now]:
            path.unlink()
            self.pending_delete.remove((when, path))

    def follower_truncation(self) -> None:
        """``LogSegment.truncateTo``: the active segment shrinks to a batch boundary."""
        self.log.flush()
        os.truncate(self.log.name, self.rnd.randrange(0, max(1, self.position)))
        self.position = os.path.getsize(self.log.name)

    def run(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.append()
            if self.count >= ROLL_BATCHES:
                self.log.close()
                self.roll()
                self.retention()
            if self.truncate and self.rnd.random() < 0.02:
                self.follower_truncation()
        return self.next_offset


def read(root: Path, seconds: float) -> None:
    from tests.robustness.commands import Tree, argument_sets, run_cli

    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline or rounds == 0:
        for argv in argument_sets(Tree(root)):
            r = run_cli(argv)
            print(json.dumps({"argv": argv[:3], "files": len(argv), "code": r.code,
                              "stderr": r.stderr[-2000:]}), flush=True)
            if time.monotonic() > deadline and rounds:
                break
        rounds += 1


def main() -> int:
    action, path, seconds = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    if action == "write":
        broker = Broker(path, seed=int(sys.argv[5]) if len(sys.argv) > 5 else 1,
                        truncate=sys.argv[4] == "truncate")
        print(json.dumps({"next_offset": broker.run(seconds)}))
    else:
        read(path, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
