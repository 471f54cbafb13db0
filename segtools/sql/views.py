"""The views a query sees, each one a library read the other faces print.

``records``, ``batches`` and ``segments`` are :meth:`LogDirs.to_arrow` at that level (the
Spark source's columns, the code Spark's executors run); ``findings`` is
:meth:`LogDirs.verify`, what ``segtools verify`` reports. A view is read only when the query
names it, narrowed by its :class:`~segtools.sql.pushdown.Pushdown`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from segtools.fetch import plan
from segtools.fetch.arguments import PARTITION_STATES, ArgumentError
from segtools.fetch.columns import FIELDS, TIMESTAMP, Level
from segtools.findings import Finding
from segtools.payloads import columns as payload_columns
from segtools.sql.analyses import ANALYSES
from segtools.sql.pushdown import Pushdown
from segtools.storage import gentle

if TYPE_CHECKING:  # the API hands its tree in; the room never reaches back up to it
    from segtools.api import LogDirs


@dataclass(frozen=True, slots=True)
class Options:
    """How the views read: the decode mode (False: none) and where schemas come from."""

    decode: bool | str = False
    schemas: tuple[str, ...] = ()
    schema_registry: str | None = None
    #: told the number of rows of each batch read (a face's progress display), or None
    on_rows: Callable[[int], None] | None = None
    #: an upper time bound read as Kafka reads a time range (``ListOffsets``): up to the first
    #: record at or after it, so a later record with an earlier time is not read
    time_index: bool = False
    #: told each finding met while reading rows (a face's exit status), or None: the tree's
    #: :attr:`LogDirs.findings` keeps those of its latest read
    on_finding: Callable[[Finding], None] | None = None
    #: the moment (epoch ms) the retention and transactions views measure ages against, as
    #: those commands' ``--at``; None: the wall clock when the view is read
    at_ms: int | None = None
    #: which partition directories the record views read (the Spark source's
    #: ``partitionStates``): ``live`` by default; ``delete`` reads what a topic's deletion left
    #: (Kafka renames a deleted partition's directory ``<topic>-<n>.<uuid>-delete`` and removes
    #: it only after ``file.delete.delay.ms``), ``future`` and ``stray`` the other renamed ones
    states: tuple[str, ...] = ("live",)
    #: keep control records (transaction markers) in ``records``, as ``dump`` prints them
    #: (the Spark source's ``includeControl``); by default the view holds what a consumer
    #: is handed, as Kafka's fetch path filters them out
    include_control: bool = False


def record_columns(options: Options) -> tuple[str, ...]:
    """The ``records`` view's columns: every record column of the Spark source (``tier``
    only exists with a remote store), then the decoded ones when decoding."""
    base = tuple(name for name, _ in FIELDS[Level.RECORDS] if name != "tier")
    return base + (tuple(f.name for f in payload_columns.FIELDS) if options.decode else ())


def _chosen(view_columns: Iterable[str], wanted: frozenset[str] | None,
            fallback: str) -> tuple[str, ...]:
    """The view's columns the query uses (all when it may use any), never none: ``count(*)``
    still needs one column to count rows of."""
    view_columns = tuple(view_columns)
    if wanted is None:
        return view_columns
    chosen = tuple(c for c in view_columns if c.lower() in wanted)
    return chosen or (fallback,)


def records(tree: LogDirs, push: Pushdown, options: Options) -> pa.RecordBatchReader:
    """Record rows, reading only the partitions, segments and byte ranges the pushed
    conditions leave (the selection's index searches), and only the columns named. The
    names of a row's place come dictionary-encoded (``to_arrow(dictionary=True)``): the
    engine sees ``VARCHAR`` columns all the same, and groups and filters on them by their
    dictionary index instead of hashing the name in every row."""
    payload = {f.name for f in payload_columns.FIELDS}
    wanted = push.columns
    decode = options.decode and (wanted is None or bool(wanted & {p.lower() for p in payload}))
    if decode and wanted is not None:
        wanted = wanted | {"key", "value"}
    names = _chosen((c for c in record_columns(options) if c not in payload), wanted, "offset")
    reader = _matching(tree, push, lambda **chosen: tree.to_arrow(
        Level.RECORDS, columns=names, binary="view", dictionary=True, decode=decode,
        schemas=options.schemas,
        schema_registry=options.schema_registry, on_finding=options.on_finding,
        **{**selectors(push, options), **chosen}))
    if options.decode and not decode:
        reader = _with_nulls(reader, payload_columns.FIELDS)
    return _counted(reader, options.on_rows)


def batches(tree: LogDirs, push: Pushdown, options: Options) -> pa.RecordBatchReader:
    """Batch headers (shallow: no record is decoded), narrowed to the pushed partitions."""
    names = _chosen((n for n, _ in FIELDS[Level.BATCHES] if n != "tier"), push.columns,
                    "base_offset")
    return _counted(_matching(tree, push, lambda **chosen: tree.to_arrow(
        Level.BATCHES, columns=names, dictionary=True, on_finding=options.on_finding,
        **{**_places(push, options), **chosen})), options.on_rows)


def segments(tree: LogDirs, push: Pushdown, options: Options) -> pa.RecordBatchReader:
    """One row per segment, what ``segtools scan`` lists."""
    names = _chosen((n for n, _ in FIELDS[Level.SEGMENTS] if n != "tier"), push.columns,
                    "base_offset")
    return _matching(tree, push, lambda **chosen: tree.to_arrow(
        Level.SEGMENTS, columns=names, dictionary=True, on_finding=options.on_finding,
        **{**_places(push, options), **chosen}))


def _places(push: Pushdown, options: Options) -> dict:
    """The selectors of the partition directories a view reads: the pushed topics and
    partitions, in the states asked for."""
    return {"topics": push.topic_globs, "partitions": push.partitions,
            "states": options.states}


def _matching(tree: LogDirs, push: Pushdown, read: Callable[..., Any]) -> pa.RecordBatchReader:
    """``read()``'s rows; none when the query's conditions name a topic or partition the tree
    does not have. In SQL ``where topic = 'nope'`` is a question with no rows, not an error
    (the API's selectors refuse it, as a typo there is the caller's mistake)."""
    try:
        return read()
    except ArgumentError as e:
        if not str(e).startswith(("topics: no topic matches", "partitions: no partition")):
            raise
    # the view's columns, from a read of nothing: its schema without its rows
    schema = read(topics=tree.topics[:1], partitions=None, states=PARTITION_STATES).schema
    return pa.RecordBatchReader.from_batches(schema, iter(()))


FINDINGS_SCHEMA = pa.schema([("code", pa.string()), ("severity", pa.string()),
                             ("path", pa.string()), ("position", pa.int64()),
                             ("offset", pa.int64()), ("message", pa.string())])


def findings_table(found: Iterable[Finding]) -> pa.Table:
    """Findings as rows, the ``verify --format jsonl`` fields as columns."""
    found = list(found)
    return pa.table([
        pa.array([f.code for f in found], pa.string()),
        pa.array([str(f.severity) for f in found], pa.string()),
        pa.array([f.path for f in found], pa.string()),
        pa.array([f.position for f in found], pa.int64()),
        pa.array([f.offset for f in found], pa.int64()),
        pa.array([f.message for f in found], pa.string()),
    ], schema=FINDINGS_SCHEMA)


def findings(tree: LogDirs, push: Pushdown, options: Options) -> pa.RecordBatchReader:
    """What ``segtools verify`` reports for the selected partitions (a hostile tree's
    damage as rows, never an error of the query)."""
    return findings_table(tree.verify(topics=push.topic_globs,
                                      partitions=push.partitions)).to_reader()


def selectors(push: Pushdown, options: Options) -> dict:
    """The pushdown as :meth:`LogDirs.selection`'s selectors. A lower time bound is the
    broker's ``ListOffsets`` answer (the time index holds the largest time so far, so every
    earlier offset holds an earlier time: no row at or after the bound is skipped). An upper
    one is pushed only with ``options.time_index``, the same way: up to the first record at
    or after it. Kafka keeps no smallest time per segment, and with ``CreateTime`` a later
    record may carry an earlier time, which that reading leaves out (as a consumer reading
    by ``offsetsForTimes`` does); without it the read goes on to the end of the log."""
    return {"topics": push.topic_globs, "partitions": push.partitions,
            "states": options.states, "include_control": options.include_control,
            "start_offset": push.offset_min, "end_offset": push.offset_max,
            "start_time": push.timestamp_min_ms,
            "end_time": push.timestamp_max_ms if options.time_index else None}


READING_SCHEMA = pa.schema([
    ("view", pa.string()), ("partitions_walked", pa.int64()), ("partitions", pa.int64()),
    ("segments", pa.int64()), ("segments_total", pa.int64()), ("bytes", pa.int64()),
    ("bytes_total", pa.int64()), ("offset_min", pa.int64()), ("offset_max", pa.int64()),
    ("timestamp_min", TIMESTAMP), ("timestamp_max", TIMESTAMP)])


def reading(view: str, tree: LogDirs, push: Pushdown, options: Options) -> dict:
    """What a record view reads for a query, as a ``READING_SCHEMA`` row: the partition
    directories walked, then the partitions, segments and bytes its byte ranges (the index
    searches of :func:`segtools.fetch.plan.ranges`) cover, against every segment and byte of
    the partitions its topics and partitions select; the pushed bounds (offsets: inclusive,
    exclusive; times: the lower one, and the upper one only when it is read by the index)."""
    chosen = selectors(push, options)
    level = Level.BATCHES if view == "batches" else Level.RECORDS
    whole = _places(push, options)
    with gentle.applied(tree.gentle):  # the index searches read files, as the rows would
        # the batch view reads its partitions whole; the segment view summarises them
        listed = None if tree.relist else tree.log_dirs
        pieces = plan.ranges(tree.selection(level, **(chosen if view == "records" else whole)),
                             listed=listed)
        every = plan.ranges(tree.selection(Level.RECORDS, **whole), listed=listed)
    return {"view": view,
            "partitions_walked": sum(len(d.partitions) for d in tree.log_dirs),
            "partitions": len({r.partition.path for r in pieces}),
            "segments": len({(r.partition.path, r.files.base_offset) for r in pieces}),
            "segments_total": len({(r.partition.path, r.files.base_offset) for r in every}),
            "bytes": sum(r.size for r in pieces),
            "bytes_total": sum(r.files.log_size for r in every),
            "offset_min": push.offset_min, "offset_max": push.offset_max,
            "timestamp_min": _instant(push.timestamp_min_ms),
            "timestamp_max": _instant(push.timestamp_max_ms if options.time_index else None)}


def _instant(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _counted(reader: pa.RecordBatchReader, on_rows: Callable[[int], None] | None
             ) -> pa.RecordBatchReader:
    """The stream, telling ``on_rows`` how many rows each batch holds as it passes."""
    if on_rows is None:
        return reader

    def counted() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            on_rows(batch.num_rows)
            yield batch

    return pa.RecordBatchReader.from_batches(reader.schema, counted())


def _with_nulls(reader: pa.RecordBatchReader, fields: Iterable[pa.Field]
                ) -> pa.RecordBatchReader:
    """The stream with ``fields`` appended as nulls: the view keeps its columns when the
    query names none of the decoded ones, without decoding anything."""
    fields = tuple(fields)
    schema = reader.schema
    for f in fields:
        schema = schema.append(f)

    def extended() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            nulls = [pa.nulls(batch.num_rows, f.type) for f in fields]
            yield pa.RecordBatch.from_arrays([*batch.columns, *nulls], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, extended())


def _analysis(read: Callable[[LogDirs, int | None], pa.RecordBatchReader]
              ) -> Callable[[LogDirs, Pushdown, Options], pa.RecordBatchReader]:
    """An analysis view: it reads what its analysis needs, whatever the query's conditions,
    at the query's moment."""

    def view(tree: LogDirs, push: Pushdown, options: Options) -> pa.RecordBatchReader:
        return read(tree, options.at_ms)

    view.__doc__ = read.__doc__
    return view


#: the views read through :meth:`LogDirs.to_arrow`, whose pushed topics and partitions may
#: narrow the walk itself (:mod:`segtools.sql.trees`)
RECORD_VIEWS = frozenset(("records", "batches", "segments"))

#: the views by name, in the order ``docs/query.md`` lists them
VIEWS: dict[str, Callable[[LogDirs, Pushdown, Options], pa.RecordBatchReader]] = {
    "records": records, "batches": batches, "segments": segments, "findings": findings,
    **{name: _analysis(read) for name, read in ANALYSES.items()},
}
