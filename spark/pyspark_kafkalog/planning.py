"""Driver-side planning: which byte ranges each Spark task reads.

The ranges come from the library (:mod:`segtools.fetch.plan`: names, sizes and indexes, never
the records); this module only packs them into tasks. Work is cut so that big and small trees
both keep every core busy. A Spark task costs ~40 ms of fixed overhead here, so small segments
are packed together, and a large segment is split at batch starts (from its offset index, or
from a shallow walk when it has no usable one), so no batch is guessed at or cut.

Everything a task carries is plain data (paths, numbers, tuples): it is pickled to executors.
"""

from __future__ import annotations

import math
import os

from pyspark.sql.datasource import InputPartition

from pyspark_kafkalog.options import OptionError, ReadOptions
from pyspark_kafkalog.pushdown import Constraints
from segtools.errors import SegtoolsError
from segtools.fetch.columns import Level
from segtools.fetch.plan import ByteRange, SelectionError, ranges, split

#: Below this many bytes of work per task, the ~40 ms task overhead dominates (docs/spark.md).
MIN_TASK_BYTES = 8 * 1024 * 1024
#: A shallow walk (batch headers and CRCs) costs about this fraction of a deep decode per byte,
#: so segment and batch levels pack this many times more bytes into one task.
SHALLOW_COST_DIVISOR = 8
#: Opening a segment and its indexes, in byte equivalents: many tiny segments still spread.
RANGE_COST = 64 * 1024


class ReadTask(InputPartition):
    """One Spark task: byte ranges to read, in order. Plain data, pickled to an executor."""

    def __init__(self, index: int, ranges: tuple[ByteRange, ...]):
        super().__init__(index)
        self.index = index
        self.ranges = ranges

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.ranges)

    def __repr__(self) -> str:
        return f"ReadTask({self.index}, {len(self.ranges)} ranges, {self.bytes} bytes)"


def task_count(total_cost: int, opts: ReadOptions, cores: int) -> int:
    """How many tasks: ``minPartitions`` when given, one per ``maxPartitionBytes``, and, for a
    tree big enough to pay each task's overhead, two per core (so a slow task is not alone)."""
    wanted = max(opts.min_partitions or 1, math.ceil(total_cost / opts.max_partition_bytes))
    return max(wanted, min(2 * cores, math.ceil(total_cost / MIN_TASK_BYTES)))


def _cost(piece: ByteRange, level: Level) -> int:
    """A range's work in deep-decoded-byte equivalents: its bytes (cheaper per byte for the
    shallow levels) plus the fixed cost of opening a segment and its indexes."""
    per_byte = 1 if level is Level.RECORDS else SHALLOW_COST_DIVISOR
    return piece.size // per_byte + RANGE_COST


def pack(pieces: list[ByteRange], opts: ReadOptions, cores: int | None = None) -> list[ReadTask]:
    """Cut the ranges, in tree order (so a task reads neighbouring files), into tasks of
    about equal cost: the total is divided into equal shares, a range that crosses a share
    boundary is split at the index entry there, and each piece goes to the share its middle
    falls in. Segment summaries are whole-segment work and are never split."""
    if not pieces:
        return []
    level = opts.level
    total = sum(_cost(p, level) for p in pieces)
    tasks = task_count(total, opts, cores or os.cpu_count() or 1)
    share = total / tasks
    groups: list[list[ByteRange]] = [[] for _ in range(tasks)]
    done = 0.0
    for piece in pieces:
        parts = [piece]
        if level is not Level.SEGMENTS and piece.size:
            per_cost = piece.size / _cost(piece, level)  # bytes per unit of cost
            first = math.floor(done / share) + 1
            wanted = [piece.start + math.ceil((k * share - done) * per_cost)
                      for k in range(first, tasks) if k * share < done + _cost(piece, level)]
            parts = split(piece, wanted)
        for part in parts:
            cost = _cost(part, level)
            groups[min(tasks - 1, int((done + cost / 2) // share))].append(part)
            done += cost
    return [ReadTask(i, tuple(g)) for i, g in enumerate(g for g in groups if g)]


def plan(opts: ReadOptions, constraints: Constraints | None = None,
         cores: int | None = None) -> list[ReadTask]:
    """The tasks of one read: the library's ranges for the selection, split and packed."""
    try:
        pieces = ranges(opts.selection(), constraints)
    except SelectionError as e:
        raise OptionError(f"kafkalog: option {e.message}") from None
    except SegtoolsError as e:
        raise SegtoolsError(f"kafkalog: {e.message}", path=e.path) from None
    return pack(pieces, opts, cores)
