"""A pretend broker and a reader, each in its own process, for the live-broker tests.

``python -m tests.robustness.live write PARTITION_DIR SECONDS MODE`` appends Kafka-written
batches (cut from the fixture segments; only the base offset, which no CRC covers, is
rewritten) to the active segment in torn pieces, maintains ``.index``/``.timeindex`` the way
``LogSegment.append`` does, rolls segments (trimming the old indexes, ``trimToValidSize``),
keeps the log dir's high-watermark and recovery-point checkpoints, swaps cleaned segments in
as the cleaner does, and applies retention the way ``UnifiedLog.deleteSegmentFiles`` does:
rename to ``.deleted``, delete later, sometimes at once. MODE ``truncate`` also truncates the
log under the readers by a follower's rules (``LocalLog.truncateTo``: to an offset at or above
the high watermark, which may lie in a rolled segment).

``python -m tests.robustness.live read TREE_ROOT SECONDS`` runs every command's argument sets
(``commands.ARGUMENT_SETS``, files globbed afresh each round) in-process until time is up and
prints one JSON line per run. The test asserts the reader process survived and that every run
ended with exit 0/1, or 2 with a single ``segtools: error:`` line.
"""

from __future__ import annotations

import fcntl
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
#: How many appends the high watermark lags the log end (a follower's fetch behind the leader).
HW_LAG = 60


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
    """One partition of a live broker, written by Kafka's rules (the classes named below).

    It keeps its log dir's ``replication-offset-checkpoint`` (the high watermark, lagging the
    log end by :data:`HW_LAG` appends) and ``recovery-point-offset-checkpoint`` (the active
    segment's base: Kafka flushes at a roll), written as ``CheckpointFile`` does (a temp file
    renamed into place), so a reader decides what is sealed from the same evidence it has on
    a real broker."""

    def __init__(self, pdir: Path, seed: int, truncate: bool):
        self.pdir = pdir
        self.rnd = random.Random(seed)
        self.truncate = truncate
        self.batches = kafka_batches()
        self.next_offset = 0
        self.segments: list[int] = []
        self.appends: list[tuple[int, int, int]] = []  # (segment base, position, base offset)
        self.high_watermark = 0
        self.pending_delete: list[tuple[float, Path]] = []
        self.topic, _, part = pdir.name.rpartition("-")
        self.partition = int(part)
        self.roll()

    # -- files ---------------------------------------------------------------------------

    def roll(self) -> None:
        if self.segments:
            base = self.segments[-1]
            for suffix in (".index", ".timeindex"):  # AbstractIndex.trimToValidSize
                os.truncate(self.pdir / _name(base, suffix), self.valid[suffix])
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
        self.checkpoints()

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
        self.appends.append((base, self.position, self.next_offset))
        self.position += len(raw)
        self.since_index += len(raw)
        self.next_offset += last_delta + 1
        self.count += 1
        if len(self.appends) > HW_LAG:
            self.high_watermark = max(self.high_watermark, self.appends[-HW_LAG][2])
        if self.count % 10 == 0:
            self.checkpoints()

    def _index(self, suffix: str, entry: bytes) -> None:
        with open(self.pdir / _name(self.segments[-1], suffix), "r+b") as f:
            f.seek(self.valid[suffix])
            f.write(entry)
        self.valid[suffix] += len(entry)

    def checkpoints(self) -> None:
        """``CheckpointFile.write``: version 0, the entry count, one ``topic partition offset``
        line each; written to ``<name>.tmp`` and renamed over the old file."""
        for name, offset in (("replication-offset-checkpoint", self.high_watermark),
                             ("recovery-point-offset-checkpoint", self.segments[-1])):
            path = self.pdir.parent / name
            lines = []
            if path.exists():
                lines = [ln for ln in path.read_text().splitlines()[2:]
                         if ln.split(" ")[:2] != [self.topic, str(self.partition)]]
            lines.append(f"{self.topic} {self.partition} {offset}")
            tmp = path.with_name(name + ".tmp")
            tmp.write_text("0\n" + f"{len(lines)}\n" + "".join(ln + "\n" for ln in lines))
            tmp.replace(path)

    # -- what a broker does to old segments -------------------------------------------------

    def _remove(self, base: int, now: float) -> None:
        """``LocalLog.deleteSegmentFiles``: rename to ``.deleted``, delete later (or at once)."""
        for suffix in (".log", ".index", ".timeindex"):
            path = self.pdir / _name(base, suffix)
            if self.rnd.random() < 0.3:
                path.unlink()
            else:
                target = path.with_name(path.name + ".deleted")
                path.rename(target)
                self.pending_delete.append((now + 0.2, target))

    def retention(self) -> None:
        now = time.monotonic()
        while len(self.segments) > KEEP_SEGMENTS:
            self._remove(self.segments.pop(0), now)
            self.appends = [a for a in self.appends if a[0] in self.segments]
        for when, path in [p for p in self.pending_delete if p[0] <= now]:
            path.unlink(missing_ok=True)  # a later rename may have replaced it already
            self.pending_delete.remove((when, path))

    def clean(self) -> None:
        """The log cleaner's swap (``LogCleaner`` + ``LocalLog.replaceSegments``): the oldest
        segment is rewritten as ``.cleaned``, renamed ``.swap``, the old files are renamed
        ``.deleted`` and the swap renamed into place. A reader holding the old file keeps the
        old inode, untouched."""
        base = self.segments[0]
        if len(self.segments) < 2:
            return
        old = self.pdir / _name(base, ".log")
        cleaned = self.pdir / _name(base, ".log.cleaned")
        cleaned.write_bytes(old.read_bytes())
        swap = cleaned.with_name(_name(base, ".log.swap"))
        cleaned.rename(swap)
        deleted = old.with_name(old.name + ".deleted")
        old.rename(deleted)
        self.pending_delete.append((time.monotonic() + 0.2, deleted))
        swap.rename(old)

    def follower_truncation(self) -> None:
        """``LocalLog.truncateTo`` on a follower whose leader diverged: the target is at or
        above the high watermark (``ReplicaFetcherThread``: never below it, short of an unclean
        leader election). Segments after the target are deleted, the one holding it is
        truncated to the first batch at or past it (``LogSegment.truncateTo``), with its
        indexes, and it becomes the active segment."""
        candidates = [a for a in self.appends if a[2] >= self.high_watermark]
        if not candidates:
            return
        base, position, target = self.rnd.choice(candidates)
        self.log.close()
        now = time.monotonic()
        while self.segments[-1] > base:
            self._remove(self.segments.pop(), now)
        os.truncate(self.pdir / _name(base, ".log"), position)
        for suffix in (".index", ".timeindex"):
            os.truncate(self.pdir / _name(base, suffix), 0)  # rebuilt lazily on next append
        self.valid = {".index": 0, ".timeindex": 0}
        self.appends = [a for a in self.appends if a[2] < target]
        self.next_offset = target
        self.log = open(self.pdir / _name(base, ".log"), "ab")  # noqa: SIM115
        self.position = position
        self.since_index = 0
        self.count = sum(1 for a in self.appends if a[0] == base)
        self.checkpoints()

    def run(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.append()
            if self.count >= ROLL_BATCHES:
                self.log.close()
                self.roll()
                self.retention()
                if self.rnd.random() < 0.3:
                    self.clean()
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
        # as LogManager does at startup: the log dir's .lock, held exclusively while it runs
        # (readers see a live broker by it, and read its active segments with pread)
        lock = os.open(path.parent / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        broker = Broker(path, seed=int(sys.argv[5]) if len(sys.argv) > 5 else 1,
                        truncate=sys.argv[4] == "truncate")
        print(json.dumps({"next_offset": broker.run(seconds)}))
    else:
        read(path, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
