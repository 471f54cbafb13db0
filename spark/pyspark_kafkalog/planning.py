"""Driver-side planning: which byte ranges each Spark task reads.

The ranges come from the library (:mod:`segtools.fetch.plan`: names, sizes and indexes, never
the records); this module only packs them into tasks. Work is cut so that big and small trees
both keep every core busy. A Spark task costs ~40 ms of fixed overhead here, so small segments
are packed together, and a large segment is split at batch starts (from its offset index, or
from a shallow walk when it has no usable one), so no batch is guessed at or cut.

Everything a task carries is plain data (paths, numbers, tuples): it is pickled to executors.
A path in an object store or an archive travels as its location (the URI and the *public*
storage options) and its key; the executor reopens the location itself, with the secret
options the reader carries (or, when none were given, the store's own credential chain on
that host), and reads its byte ranges from there: no shared disk is needed.
"""

from __future__ import annotations

import io
import math
import os
import pickle
from collections.abc import Mapping
from typing import Any

from pyspark.sql.datasource import InputPartition

from pyspark_kafkalog.options import OptionError, ReadOptions, is_secret_option
from pyspark_kafkalog.pushdown import Constraints
from segtools.errors import SegtoolsError
from segtools.fetch.arguments import by_field
from segtools.fetch.columns import Level
from segtools.fetch.plan import ByteRange, Selection, SelectionError, ranges, split
from segtools.storage.location import RemotePath, open_location

#: Below this many bytes of work per task, the ~40 ms task overhead dominates (docs/spark.md).
MIN_TASK_BYTES = 8 * 1024 * 1024
#: A shallow walk (batch headers and CRCs) costs about this fraction of a deep decode per byte,
#: so segment and batch levels pack this many times more bytes into one task.
SHALLOW_COST_DIVISOR = 8
#: Opening a segment and its indexes, in byte equivalents: many tiny segments still spread.
RANGE_COST = 64 * 1024


class _TaskPickler(pickle.Pickler):
    """Pickles a task's ranges with each remote path as ``(uri, public options, key)``."""

    def persistent_id(self, obj: object) -> tuple | None:
        if not isinstance(obj, RemotePath):
            return None
        where = obj.location
        public = tuple((k, v) for k, v in sorted(where.options.items())
                       if not is_secret_option(k, v))
        return (where.uri, public, obj.key)


class _TaskUnpickler(pickle.Unpickler):
    """Reopens each location with its public options and the reader's secret ones, in the
    scope applied where the task is opened (the task's own: :func:`scan.read_task`)."""

    def __init__(self, data: bytes, secrets: Mapping[str, Any]):
        super().__init__(io.BytesIO(data))
        self.secrets = dict(secrets)

    def persistent_load(self, pid: tuple) -> RemotePath:
        uri, public, key = pid
        return open_location(uri, {**dict(public), **self.secrets}).path(key)


class ReadTask(InputPartition):
    """One Spark task: byte ranges to read, in order. Pickled to an executor as plain data
    (its ranges with every remote path reduced to location and key: no secret)."""

    def __init__(self, index: int, ranges: tuple[ByteRange, ...], size: int | None = None):
        super().__init__(index)
        self.index = index
        self._ranges: tuple[ByteRange, ...] | None = ranges
        self._packed: bytes | None = None
        self.bytes = sum(r.size for r in ranges) if size is None else size

    @property
    def ranges(self) -> tuple[ByteRange, ...]:
        """The ranges (in the process that planned them, or after :meth:`open`)."""
        if self._ranges is None:
            self._ranges = self.open({})
        return self._ranges

    def open(self, secrets: Mapping[str, Any]) -> tuple[ByteRange, ...]:
        """The ranges, their locations reopened in this process with ``secrets`` added."""
        if self._ranges is None:
            assert self._packed is not None
            self._ranges = _TaskUnpickler(self._packed, secrets).load()
        return self._ranges

    def __reduce__(self) -> tuple:
        if self._packed is None:
            self._packed = _pack(self._ranges)
        return (_unpickled_task, (self.index, self._packed, self.bytes))

    def __repr__(self) -> str:
        count = "?" if self._ranges is None else len(self._ranges)
        return f"ReadTask({self.index}, {count} ranges, {self.bytes} bytes)"


def _pack(ranges: tuple[ByteRange, ...]) -> bytes:
    """The ranges as bytes; only ranges with remote paths need the location-aware pickler."""
    if not any(isinstance(r.files.log, RemotePath) for r in ranges):
        return pickle.dumps(ranges, protocol=pickle.HIGHEST_PROTOCOL)
    buf = io.BytesIO()
    _TaskPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(ranges)
    return buf.getvalue()


def _unpickled_task(index: int, packed: bytes, size: int) -> ReadTask:
    task = ReadTask(index, (), size)
    task._ranges, task._packed = None, packed
    return task


def task_count(total_cost: int, read_cost: int, opts: ReadOptions, cores: int) -> int:
    """How many tasks: ``minPartitions`` when given, one per ``maxPartitionBytes`` of the
    bytes read (``read_cost``: the ranges' bytes without their opening costs, so that four
    64 MiB segments fill two tasks of 128 MiB, not three), at least one per core for a tree
    big enough to pay each task's overhead, and, past one round of the cores, a whole
    number of rounds.

    One task per core, as Spark's own file sources cut a scan (``FilePartition``'s bytes per
    core), not two: every task costs a reused Python worker a fixed share whatever its rows
    (Spark's ``gc.collect()`` after it, the task's set-up, its segments mapped and unmapped),
    about a fifth of its CPU for 64 MiB tasks of one-record batches (docs/performance.md,
    "Spark"), and equal shares leave no core idle at the end. A count that is not a
    multiple of the cores leaves cores idle in its last round (three tasks on two cores
    take as long as four), so it is rounded up."""
    wanted = max(opts.min_partitions or 1, math.ceil(read_cost / opts.max_partition_bytes))
    tasks = max(wanted, min(cores, math.ceil(total_cost / MIN_TASK_BYTES)))
    return tasks if tasks <= cores else math.ceil(tasks / cores) * cores


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
    tasks = task_count(total, total - RANGE_COST * len(pieces), opts,
                       cores or os.cpu_count() or 1)
    share = total / tasks
    groups: list[list[ByteRange]] = [[] for _ in range(tasks)]
    done = 0.0
    for piece in pieces:
        parts = [piece]
        cost = _cost(piece, level)
        # the share boundaries this piece crosses: k * share in (done, done + cost)
        first = math.floor(done / share) + 1
        last = min(tasks - 1, math.ceil((done + cost) / share) - 1)
        if level is not Level.SEGMENTS and piece.size and first <= last:
            per_cost = piece.size / cost  # bytes per unit of cost
            parts = split(piece, [piece.start + math.ceil((k * share - done) * per_cost)
                                  for k in range(first, last + 1)])
        for part in parts:
            cost = _cost(part, level)
            groups[min(tasks - 1, int((done + cost / 2) // share))].append(part)
            done += cost
    return [ReadTask(i, tuple(g)) for i, g in enumerate(g for g in groups if g)]


def selection(opts: ReadOptions) -> Selection:
    """What to read, in the library's terms (what the Python API builds from its arguments).
    Built here, on the driver, so parsing the options never loads the planner."""
    return Selection(
        paths=opts.paths, level=opts.level, topics=opts.topics, partitions=opts.partitions,
        partition_states=opts.partition_states, starting_offsets=opts.starting_offsets,
        ending_offsets=opts.ending_offsets, starting_offset=opts.starting_offset,
        ending_offset=opts.ending_offset, starting_timestamps=opts.starting_timestamps,
        ending_timestamps=opts.ending_timestamps,
        starting_timestamp=opts.starting_timestamp, ending_timestamp=opts.ending_timestamp,
        include_control=opts.include_control, read_committed=opts.read_committed,
        verify_crc=opts.verify_crc, max_decompressed_bytes=opts.max_decompressed_bytes,
        storage_options=opts.all_storage_options, remote_store=opts.remote_store)


def plan(opts: ReadOptions, constraints: Constraints | None = None,
         cores: int | None = None) -> list[ReadTask]:
    """The tasks of one read: the library's ranges for the selection, split and packed."""
    try:
        pieces = ranges(selection(opts), constraints)
    except SelectionError as e:
        selector = by_field(e.field)
        name = selector.spark if selector is not None else e.field
        raise OptionError(f"kafkalog: option {name}: {e.what}") from None
    except SegtoolsError as e:
        raise SegtoolsError(f"kafkalog: {e.message}", path=e.path) from None
    return pack(pieces, opts, cores)
