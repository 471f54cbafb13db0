"""The front door: ``segtools.open(path)`` and the analyses as plain functions.

A notebook user thinks in Kafka's terms (log dirs, topics, partitions, offsets, timestamps),
not in segtools' modules, so this module maps those terms onto the library:

- :func:`open` walks the paths once into a :class:`LogDirs` (log dirs -> partitions ->
  segments, with what the walk found wrong);
- ``records()``/``batches()``/``segments()`` iterate rows as dicts and ``to_arrow()`` returns an
  :class:`~segtools.fetch.stream.ArrowRead` (an Arrow stream that reads afresh at each use)
  with exactly the Spark source's schema: both are
  :func:`segtools.fetch.rows.read` over :func:`segtools.fetch.plan.ranges`, the code Spark's
  executors run, so the faces cannot disagree;
- the analyses (:func:`verify`, :func:`transactions`, :func:`offsets_at`, :func:`diverge`,
  :func:`producers`, :func:`explain_retention`, :func:`explain_compaction`, :func:`tiered`)
  return the same typed results the CLI prints (``to_json()`` on each is what the command
  prints with ``--format json``/``jsonl``).

Selectors are the CLI's and the Spark options' (topics as globs, partitions, offset and time
bounds, ``read_committed``, ``include_control``), each checked at the door by the parser the
Spark option shares (:mod:`segtools.fetch.arguments`), so a bad value is one
:class:`~segtools.fetch.arguments.ArgumentError` naming the argument. Findings met while
reading are on :attr:`LogDirs.findings` for the latest read (or passed to ``on_finding``);
``strict=True`` turns an error finding into :class:`~segtools.errors.CorruptDataError`
instead. Each analysis returns its library type with a notebook face
(:mod:`segtools.results`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import pyarrow as pa

from segtools.analysis import config as cfg
from segtools.analysis.diverge import ReplicaSet, compare_copies, copies_by_partition
from segtools.analysis.explain import (
    CompactionReport,
    RetentionReport,
    compaction_report,
    retention_report,
)
from segtools.analysis.offsets import CONSUMER_OFFSETS_TOPIC, OffsetsReplay, replay_offsets
from segtools.analysis.partition_input import Loaded, load_inputs, read_config_file
from segtools.analysis.producers import PartitionProducers, likely_duplicates
from segtools.analysis.producers import analyse as analyse_producers
from segtools.analysis.tiered import TieredReport, tiered_report
from segtools.analysis.transaction_state import CHANGES_PER_ID
from segtools.analysis.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    PartitionAnalysis,
    TransactionsReport,
    transactions_report,
)
from segtools.analysis.verify import verify_log_dir_files, verify_partition
from segtools.analysis.whatif import WhatIfReport
from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import CorruptDataError, SegtoolsError
from segtools.fetch import arguments, plan, rows
from segtools.fetch import columns as fetch_columns
from segtools.fetch.columns import Level
from segtools.fetch.stream import ArrowRead, payloads_as_text, payloads_as_text_schema
from segtools.findings import Finding, Severity
from segtools.payloads import columns as payload_columns
from segtools.payloads.decoder import Modes, PayloadDecoder
from segtools.payloads.schemas import Schemas
from segtools.payloads.sources import gather
from segtools.payloads.usage import SchemaUsage
from segtools.payloads.usage import usage as schema_usage
from segtools.results import (
    DivergeResult,
    FindingsResult,
    ProducersResult,
    as_result,
)
from segtools.sql import engine as sql_engine
from segtools.sql.views import Options as ViewOptions
from segtools.storage import gentle, scope
from segtools.storage.gentle import PageCacheMode
from segtools.storage.logdirs import LogDir, walk
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.remote_store import open_store
from segtools.storage.scope import LocationScope
from segtools.storage.throttle import parse_rate
from segtools.units import format_bytes

Time = int | float | str | datetime
Offsets = int | str | Mapping[str, Mapping[int | str, int]]

__all__ = ["LogDirs", "Partition", "decode_table", "diverge", "explain_compaction",
           "explain_retention", "offsets_at", "open", "producers", "query", "tiered",
           "transactions", "verify", "what_if"]


@dataclass(frozen=True, slots=True, repr=False)
class Partition:
    """One partition directory, with what its log dir's checkpoints say about it."""

    topic: str | None  # None: the directory is not <topic>-<partition> (a lone segment's)
    partition: int | None
    state: str  # live, delete, future, stray
    path: str
    log_dir: str
    segments: tuple[SegmentFiles, ...]
    high_watermark: int | None
    log_start_offset: int | None
    recovery_point: int | None
    size_bytes: int
    directory: PartitionDir  # the storage layer's view (indexes, snapshots, findings)

    def __repr__(self) -> str:
        """One line: a partition holds its segments' file lists and the storage layer's view,
        which a notebook need not print (``segments``, ``directory`` still hold them)."""
        marks = [f"{len(self.segments)} segment(s)", format_bytes(self.size_bytes)]
        if self.segments:
            marks.append(f"base offsets {self.segments[0].base_offset}.."
                         f"{self.segments[-1].base_offset}")
        for label, value in (("high watermark", self.high_watermark),
                             ("log start offset", self.log_start_offset)):
            if value is not None:
                marks.append(f"{label} {value}")
        return f"<Partition {self.name} ({self.state}): {', '.join(marks)}>"

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, or the directory's own name when it is not one."""
        if self.topic is None:
            return os.path.basename(self.path)
        return f"{self.topic}-{self.partition}"


def _tuple(value: str | int | Iterable | None) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, str | int):
        return (value,)
    return tuple(value)


_SELECTORS = arguments.by_python_name()
#: The selectors a read takes as keywords (``level`` is positional on ``to_arrow``).
_SELECTOR_NAMES = tuple(name for name in _SELECTORS if name not in ("level", "include_headers",
                                                                    "max_decompressed_bytes"))


#: A read's own keywords besides the selectors (suggested when a name is mistyped).
_READ_KEYWORDS = ("columns", "include_headers", "strict", "on_finding", "binary", "strings",
                  "decode", "schemas", "schema_registry")


def _parse(name: str, value: Any) -> Any:
    """A Python argument through the selector both faces share (the error names ``name``)."""
    return _SELECTORS[name].parse(value, name)


def _parse_columns(columns: Iterable[str]) -> tuple[str, ...]:
    if isinstance(columns, str):
        return tuple(c.strip() for c in columns.split(",") if c.strip())
    return tuple(columns)


R = TypeVar("R")


def _gently(method: Callable[..., R]) -> Callable[..., R]:
    """An analysis of the dataset, run under its gentle settings (:attr:`LogDirs.gentle`) in
    its location scope (:attr:`LogDirs.locations`)."""
    @functools.wraps(method)
    def run(self: LogDirs, *args, **kwargs) -> R:
        with gentle.applied(self.gentle), self.locations.applied():
            return method(self, *args, **kwargs)
    return run


def _located(method: Callable[..., R]) -> Callable[..., R]:
    """A call that may resolve the dataset's paths again, made in its location scope (the
    names its answers print find the locations they were read from, with their options)."""
    @functools.wraps(method)
    def run(self: LogDirs, *args, **kwargs) -> R:
        with self.locations.applied():
            return method(self, *args, **kwargs)
    return run


class LogDirs:
    """The log dirs found under some paths (a ``log.dirs`` entry, a directory of copies, a
    partition directory or segment files), read-only. Build it with :func:`open`.

    The locations it opens (object-store clients, archives' temporary space) are its own
    (:attr:`locations`): :meth:`close`, or a ``with`` block, closes them; a dataset dropped
    unclosed lets them go with it (a store's range threads end when its pool is collected,
    an archive's descriptors and temporary space have finalizers). Opened within a command's
    run, it reads in the run's scope, which the run closes."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]], *,
                 max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
                 storage_options: Mapping[str, Any] | None = None,
                 page_cache: PageCacheMode | str | None = None,
                 max_read_rate: int | str | None = None, jobs: int | None = None):
        self.paths = tuple(os.fspath(p) for p in paths)
        if not self.paths:
            raise SegtoolsError("segtools.open() needs at least one path")
        self.max_decompressed_bytes = max_decompressed_bytes
        #: the options of this tree's stores: a remote store named later is opened with them
        self.storage_options = dict(storage_options or {})
        run = scope.current()
        #: where this dataset's locations are opened and who closes them: its own scope, or
        #: the scope of the run it was opened in (which closes them when the run ends)
        self.locations = run if run is not None and storage_options is None \
            else LocationScope(self.storage_options)
        self._owns_locations = self.locations is not run
        #: what this dataset's reads do on a broker's host (docs/robustness.md)
        self.gentle = gentle.decide(
            self.paths, page_cache=None if page_cache is None else PageCacheMode(page_cache),
            max_read_rate=parse_rate(max_read_rate) if isinstance(max_read_rate, str)
            else max_read_rate, jobs=jobs)
        with gentle.applied(self.gentle), self.locations.applied():
            log_dirs, loose = walk(self.paths, storage_options)
        for f in loose:
            if f.code == "path_not_found":
                raise SegtoolsError(f"{f.path}: no such file or directory", path=f.path)
        self.log_dirs: list[LogDir] = log_dirs
        self._loose = tuple(loose)
        self._tree_findings = tuple(loose) + tuple(f for d in log_dirs for f in d.findings)
        self._listing_findings = tuple(f for d in log_dirs for p in d.partitions
                                       for f in p.findings)
        self._read_findings: list[Finding] = []

    def __repr__(self) -> str:
        return (f"<segtools.LogDirs {len(self.log_dirs)} log dir(s), "
                f"{sum(len(d.partitions) for d in self.log_dirs)} partition(s)>")

    def close(self) -> None:
        """Close the locations this dataset opened (not those of a run it was opened in)."""
        if self._owns_locations:
            self.locations.close()

    def __enter__(self) -> LogDirs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the tree

    @_located
    def partitions(self, topics: str | Iterable[str] = "*",
                   partitions: int | Iterable[int] | None = None,
                   states: str | Iterable[str] = "live") -> list[Partition]:
        """Partition directories whose topic matches a glob in ``topics``."""
        sel = plan.Selection(self.paths, topics=_parse("topics", topics),
                             partitions=_parse("partitions", partitions),
                             partition_states=_parse("states", states))
        out = []
        for d in self.log_dirs:
            for pdir in d.partitions:
                info = plan.partition_info(d, pdir)
                if plan.selected(sel, pdir, info):
                    out.append(Partition(info.topic, info.partition,
                                         plan.partition_state(pdir), info.path,
                                         info.log_dir, pdir.segments, info.high_watermark,
                                         info.log_start_offset, info.recovery_point,
                                         pdir.size_bytes, pdir))
        return out

    @property
    def topics(self) -> list[str]:
        """The topics named by the partition directories (a lone segment file's directory
        names none)."""
        return sorted({p.topic for p in self.partitions(states=arguments.PARTITION_STATES)
                       if p.topic is not None})

    @property
    def findings(self) -> list[Finding]:
        """What the walk found wrong, then what the latest read met, in order. Each read
        (``to_arrow``, ``records``, ...) starts its own list, so reading twice does not report
        a damaged batch twice."""
        return [*self._tree_findings, *self._listing_findings, *self._read_findings]

    # ------------------------------------------------------------------ reading

    @_located
    def selection(self, level: Level | str = Level.RECORDS, *,
                  topics: str | Iterable[str] = "*",
                  partitions: int | Iterable[int] | None = None,
                  states: str | Iterable[str] = "live",
                  start_offset: Offsets | None = None, end_offset: Offsets | None = None,
                  start_time: Time | None = None, end_time: Time | None = None,
                  read_committed: bool = False, include_control: bool = False,
                  verify_crc: bool = True,
                  remote_store: str | os.PathLike | None = None) -> plan.Selection:
        """The library's :class:`~segtools.fetch.plan.Selection` for these selectors, each
        checked by :mod:`segtools.fetch.arguments` (the Spark options' parsers).

        ``start_offset`` is inclusive and ``end_offset`` exclusive, either one offset for every
        selected partition or ``{topic: {partition: offset}}``; times are epoch ms, ISO-8601 or
        an aware ``datetime`` (the first record at or after the time, as a broker's
        ``ListOffsets``), one for every partition or ``{topic: {partition: time}}``.
        ``remote_store``: Kafka's ``LocalTieredStorage`` directory; a tiered partition is then
        read as one log, the copied remote segments below its local ones first (``tier``)."""
        starting = _parse("start_offset", start_offset)
        ending = _parse("end_offset", end_offset)
        starting_time = _parse("start_time", start_time)
        ending_time = _parse("end_time", end_time)
        return plan.Selection(
            self.paths, level=_parse("level", level), topics=_parse("topics", topics),
            partitions=_parse("partitions", partitions),
            partition_states=_parse("states", states),
            starting_offsets=starting.per_partition, ending_offsets=ending.per_partition,
            starting_offset=starting.every, ending_offset=ending.every,
            starting_timestamps=starting_time.per_partition,
            ending_timestamps=ending_time.per_partition,
            starting_timestamp=starting_time.every, ending_timestamp=ending_time.every,
            include_control=_parse("include_control", include_control),
            read_committed=_parse("read_committed", read_committed),
            verify_crc=_parse("verify_crc", verify_crc),
            max_decompressed_bytes=self.max_decompressed_bytes,
            remote_store=_parse("remote_store", remote_store))

    def to_arrow(self, level: Level | str = Level.RECORDS, *,
                 columns: Iterable[str] | None = None, include_headers: bool = False,
                 strict: bool = False, on_finding: Callable[[Finding], None] | None = None,
                 binary: str = "view", strings: bool = False, decode: bool | str = False,
                 schemas: Iterable[str | os.PathLike[str]] = (),
                 schema_registry: str | None = None, **selectors) -> ArrowRead:
        """The selected rows as Arrow record batches, streamed (memory stays flat).

        ``level``: ``records`` (one row per record), ``batches`` or ``segments``; ``columns``:
        a subset of that level's columns (default: the Spark source's default columns).
        ``binary``: ``"view"`` (default) gives ``key`` and ``value`` as ``binary_view``
        arrays over the segment's own bytes (the mapping of a sealed segment, or the inflated
        buffer of a compressed batch): no payload is copied, and the arrays keep those bytes
        alive after the dataset is gone; ``"binary"`` copies them into plain ``binary``
        arrays, for consumers that do not read views (Spark's Arrow exchange).
        ``strings=True`` gives ``key`` and ``value`` as UTF-8 text (``string``) instead, for
        SQL on JSON or text payloads; bytes that are not UTF-8 become U+FFFD.

        ``decode``: ``True`` (Confluent frames) or a mode of ``segtools dump --decode``
        (``"auto"``, ``"string:schema"``, ...) adds ``key_decoded``/``value_decoded`` (JSON
        text) and the schema id, subject, version, type and payload error of each side
        (docs/payloads.md), with the schemas of the ``_schemas`` topic in these log dirs, or of
        ``schemas`` (locations or schema-file directories), then ``schema_registry``.

        The answer is an :class:`ArrowRead`: each use (``read_all()``, iteration, a DuckDB or
        polars scan through the Arrow stream interface) reads the planned ranges again, so a
        notebook cell that reads it can be run twice and gets the same rows."""
        return self._reader("to_arrow()", level, columns, include_headers, strict, on_finding,
                            binary, selectors, strings, decode=decode, schemas=schemas,
                            schema_registry=schema_registry)

    @_located
    def _reader(self, where: str, level: Level | str, columns: Iterable[str] | None,
                include_headers: bool, strict: bool,
                on_finding: Callable[[Finding], None] | None, binary: str,
                selectors: dict[str, Any], strings: bool = False, *,
                decode: bool | str = False, schemas: Iterable[str | os.PathLike[str]] = (),
                schema_registry: str | None = None) -> ArrowRead:
        """One read: its arguments checked at the door (naming ``where`` and the caller's
        argument), its plan made now (so a bad selection fails here, not while iterating)."""
        arguments.unknown_names(selectors, _SELECTOR_NAMES, where, hints=_READ_KEYWORDS)
        if binary not in ("view", "binary"):
            raise arguments.ArgumentError(f"binary: must be 'view' or 'binary', not {binary!r}")
        include_headers = _parse("include_headers", include_headers)
        strict = arguments.boolean(strict, "strict")
        strings = arguments.boolean(strings, "strings")
        sel = self.selection(level, **selectors)
        try:
            names = (fetch_columns.canonical(_parse_columns(columns), sel.level)
                     if columns is not None
                     else fetch_columns.default_columns(sel.level, include_headers)
                     + (("tier",) if sel.remote_store is not None else ()))
        except fetch_columns.ColumnError as e:
            raise arguments.ArgumentError(f"columns: {e}") from None
        schema = fetch_columns.schema(sel.level, names)
        if binary == "view" and sel.level is Level.RECORDS:
            for name in ("key", "value"):
                if name in schema.names:
                    i = schema.get_field_index(name)
                    schema = schema.set(i, schema.field(i).with_type(pa.binary_view()))
        scan = rows.Scan(sel.level, names, schema, include_control=sel.include_control,
                         read_committed=sel.read_committed, verify_crc=sel.verify_crc,
                         check_crc=strict, max_decompressed_bytes=sel.max_decompressed_bytes)
        try:
            with gentle.applied(self.gentle):
                pieces = plan.ranges(sel)
        except plan.SelectionError as e:
            selector = arguments.by_field(e.field)
            name = selector.python if selector is not None else e.field
            raise arguments.ArgumentError(f"{name}: {e.what}") from None
        text = strings and sel.level is Level.RECORDS
        decoder = None
        if decode and sel.level is Level.RECORDS:
            if not {"key", "value"} & set(names):
                raise arguments.ArgumentError(
                    "decode: needs the key or value column among columns")
            decoder = self.payload_decoder(decode, schemas, schema_registry)
        shown = payload_columns.extend_schema(schema) if decoder is not None else schema

        def start() -> Iterator[pa.RecordBatch]:
            self._read_findings = []
            report = self._reporter(strict, on_finding, self._read_findings)
            batches = gentle.iterate(self.gentle,
                                     self.locations.iterate(rows.read(pieces, scan, report)))
            if decoder is not None:  # decoded from the bytes, before they may become text
                batches = (payload_columns.with_decoded(decoder, b) for b in batches)
            return map(payloads_as_text, batches) if text else batches

        return ArrowRead(payloads_as_text_schema(shown) if text else shown, start)
    @_located
    def schema_history(self) -> Schemas | None:
        """What Schema Registry's ``_schemas`` topic in these log dirs holds (registrations,
        deletes, configs, with their times), or None when the tree has no such topic."""
        histories = gather(self.log_dirs, self.findings).histories()
        if not histories:
            return None
        out = Schemas(source=histories[0].source)
        for h in histories:
            out.extend(h)
        return out

    @_located
    def schema_usage(self, topics: str | Iterable[str] = "*") -> list[SchemaUsage]:
        """Per topic, side and schema id: the records using it, from which offset and time to
        which, and the producers that wrote them (``segtools schemas --usage``)."""
        return schema_usage([p.directory for p in self.partitions(topics)], self.findings,
                            limit=self.max_decompressed_bytes)

    @_located
    def payload_decoder(self, decode: bool | str = True,
                        schemas: Iterable[str | os.PathLike[str]] = (),
                        registry: str | None = None) -> PayloadDecoder:
        """The decoder ``decode=`` uses: the schemas of these log dirs' ``_schemas`` topic (or
        of ``schemas``), then a registry; what reading them met joins :attr:`findings`."""
        chain = gather(self.log_dirs, self.findings, schemas=[os.fspath(s) for s in schemas],
                       registry=registry)
        return PayloadDecoder(chain, Modes.parse("schema" if decode is True else str(decode)))

    def records(self, *, columns: Iterable[str] | None = None, include_headers: bool = False,
                strict: bool = False, on_finding: Callable[[Finding], None] | None = None,
                strings: bool = False, decode: bool | str = False,
                schemas: Iterable[str | os.PathLike[str]] = (),
                schema_registry: str | None = None, **selectors) -> Iterator[dict]:
        """One dict per record (``offset``, ``timestamp``, ``key``, ``value``, ...), in log
        order per partition; ``strings`` and ``decode`` as in :meth:`to_arrow`. For bulk work
        prefer :meth:`to_arrow`."""
        return self._dicts(self._reader("records()", Level.RECORDS, columns, include_headers,
                                        strict, on_finding, "view", selectors, strings,
                                        decode=decode, schemas=schemas,
                                        schema_registry=schema_registry))

    def batches(self, *, columns: Iterable[str] | None = None, strict: bool = False,
                on_finding: Callable[[Finding], None] | None = None,
                **selectors) -> Iterator[dict]:
        """One dict per record batch (offsets, sizes, codec, producer, CRC check, ...)."""
        return self._dicts(self._reader("batches()", Level.BATCHES, columns, False, strict,
                                        on_finding, "view", selectors))

    def segments(self, *, columns: Iterable[str] | None = None, strict: bool = False,
                 on_finding: Callable[[Finding], None] | None = None,
                 **selectors) -> Iterator[dict]:
        """One dict per segment file (offsets, sizes, max timestamp, ...)."""
        return self._dicts(self._reader("segments()", Level.SEGMENTS, columns, False, strict,
                                        on_finding, "view", selectors))

    def duckdb(self, *, decode: bool | str = False,
               schemas: Iterable[str | os.PathLike[str]] = (),
               schema_registry: str | None = None,
               memory: str = sql_engine.DEFAULT_MEMORY,
               temp_limit: str = sql_engine.DEFAULT_TEMP_LIMIT):
        """A DuckDB connection with the views of ``segtools query`` (docs/query.md), for a
        notebook's many queries. No query is known in advance, so nothing is pushed down: each
        view is read once, whole, into a temporary table (spilled past ``memory`` to a
        temporary directory removed with the connection). For one query over a large tree,
        :func:`query` reads only what its conditions select."""
        con = sql_engine.connect(sql_engine.Limits(memory, temp_limit))
        sql_engine.register(con, self, None, _view_options(decode, schemas, schema_registry))
        return con

    @staticmethod
    def _dicts(reader: ArrowRead) -> Iterator[dict]:
        for batch in reader:
            yield from batch.to_pylist()

    def _reporter(self, strict: bool, on_finding: Callable[[Finding], None] | None,
                  collected: list[Finding]) -> Callable[[Finding], None]:
        sink = on_finding if on_finding is not None else collected.append

        def report(f: Finding) -> None:
            if strict and f.severity is Severity.ERROR:
                raise CorruptDataError(f"{f.code}: {f.message}", path=f.path,
                                       position=f.position)
            sink(f)

        return report

    # ------------------------------------------------------------------ analyses

    @_gently
    def verify(self, *, deep: bool = False, topics: str | Iterable[str] = "*",
               partitions: int | Iterable[int] | None = None) -> list[Finding]:
        """Every finding ``segtools verify`` reports for the selected partitions."""
        out = list(self._tree_findings)
        for d in self.log_dirs:
            out += verify_log_dir_files(d, limit=self.max_decompressed_bytes)
        wanted = {id(p.directory) for p in self.partitions(topics, partitions,
                                                           arguments.PARTITION_STATES)}
        for d in self.log_dirs:
            for pdir in d.partitions:
                if id(pdir) in wanted:
                    out += verify_partition(d, pdir, deep=deep,
                                            limit=self.max_decompressed_bytes)
        return FindingsResult(out)

    @_gently
    def transactions(self, *, now: Time | None = None,
                     max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                     topics: str | Iterable[str] = "*",
                     changes: int = CHANGES_PER_ID,
                     analysed: Mapping[str, PartitionAnalysis] | None = None
                     ) -> TransactionsReport:
        """Transactions per partition, hanging ones, open transactional ids (as
        ``segtools transactions``); the latest ``changes`` state changes of each
        transactional id (0: all). Ages are measured at ``now`` (default: the wall clock),
        one moment for every log. ``analysed``: partitions already analysed (by their
        directory's path, at the same ``now``), walked beside another analysis."""
        pdirs = [p.directory for p in self.partitions(topics, states=arguments.PARTITION_STATES)]
        return as_result(transactions_report(pdirs, max_timeout_ms=max_timeout_ms,
                                             now=_now(now, "now"), keep=changes,
                                             limit=self.max_decompressed_bytes,
                                             analysed=analysed))

    @_gently
    def offsets_at(self, at: Time | None = None, *,
                   groups: str | Iterable[str] | None = None, history: bool = False,
                   topic: str | None = None, partition: int | None = None) -> OffsetsReplay:
        """Consumer groups' committed offsets at ``at`` (default: the end of the log), with
        regressions and deletions, replayed from ``__consumer_offsets``; ``history`` also
        keeps every commit (of ``topic``/``partition`` when given)."""
        pdirs = [p.directory for p in self.partitions(CONSUMER_OFFSETS_TOPIC)]
        if not pdirs:
            raise SegtoolsError(f"no {CONSUMER_OFFSETS_TOPIC} partitions under "
                                f"{', '.join(self.paths)}")
        return as_result(replay_offsets(
            pdirs, at=None if at is None else arguments.moment(at, "at"),
            groups=None if groups is None else list(_tuple(groups)), history=history,
            topic=topic, partition=partition, limit=self.max_decompressed_bytes))

    @_gently
    def producers(self, *, topics: str | Iterable[str] = "*",
                  partitions: int | Iterable[int] | None = None,
                  duplicates_window: int | None = None) -> list[PartitionProducers]:
        """How each producer batched into each partition, what its sequences say (as
        ``segtools producers``); ``duplicates_window`` (ms) also looks for retried sends of
        non-idempotent producers, stored on each result as ``duplicates``."""
        pdirs = [p.directory for p in self.partitions(topics, partitions)]
        results = analyse_producers(pdirs, limit=self.max_decompressed_bytes)
        if duplicates_window is not None:
            for pdir, r in zip([p for p in pdirs if p.name and not p.name.is_metadata_log],
                               results, strict=True):
                r.duplicates = likely_duplicates(pdir, window_ms=duplicates_window,
                                                 limit=self.max_decompressed_bytes)
        return ProducersResult(results)

    @_gently
    def inputs(self, *, at: Time | None = None, config: str | os.PathLike[str] | None = None,
               configs: Mapping[str, object] | None = None) -> Loaded:
        """Every live partition summarised with its resolved topic config (``configs`` >
        ``config`` file > ``__cluster_metadata`` in the tree > Kafka's defaults, as the CLI's
        flags and ``--config``): the input of the retention and compaction analyses."""
        flags = {}
        for name, value in (configs or {}).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            try:
                cfg.parse_value(name, text)
            except ValueError as e:
                raise SegtoolsError(str(e)) from None
            flags[name] = text
        config_file = read_config_file(os.fspath(config)) if config is not None else None
        loaded = load_inputs(self.log_dirs, flags=flags, config_file=config_file,
                             at=None if at is None else arguments.moment(at, "at"),
                             limit=self.max_decompressed_bytes)
        return Loaded(loaded.partitions, loaded.skipped, self._loose + loaded.findings,
                      loaded.config_sources)

    @_gently
    def explain_retention(self, *, at: Time | None = None,
                          config: str | os.PathLike[str] | None = None,
                          configs: Mapping[str, object] | None = None,
                          forecast_days: float | None = None,
                          deep: bool = True, inputs: Loaded | None = None) -> RetentionReport:
        """Which segments Kafka's retention deletes at ``at`` (default: now), and why, per
        live partition (as ``segtools retention``); ``forecast_days`` adds the size forecast
        per partition and topic; ``deep`` counts records older than retention.ms that kept
        segments still hold. ``configs`` maps config names to values (``{"retention.ms":
        86400000}``), ``config`` is a properties or ``kafka-configs --describe`` file;
        ``inputs`` reuses what :meth:`inputs` built (then ``config``/``configs`` are its)."""
        now = _now(at)
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return as_result(retention_report(loaded, now_ms=now, forecast_days=forecast_days,
                                          deep=deep, limit=self.max_decompressed_bytes))

    @_gently
    def tiered(self, *, at: Time | None = None, config: str | os.PathLike[str] | None = None,
               configs: Mapping[str, object] | None = None, inputs: Loaded | None = None,
               remote_store: str | os.PathLike[str] | None = None) -> TieredReport:
        """Each tiered partition's local and remote tiers at ``at`` (default: now), from the
        tree's ``__remote_log_metadata`` (as ``segtools tiered``): remote segments and their
        states, what the expiration task deletes, stuck copies and deletes; ``remote_store``
        (a ``LocalTieredStorage`` directory, or the Aiven plugin's objects in a directory)
        also finds and reads each remote segment there;
        ``inputs`` as for :meth:`explain_retention`."""
        now = _now(at)
        store = open_store(remote_store, self.storage_options) \
            if remote_store is not None else None
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return as_result(tiered_report(loaded, now_ms=now, store=store))

    @_gently
    def what_if(self, changes: Mapping[str, object] | str | None = None, *,
                at: Time | None = None, horizon_days: float = 30.0,
                ingest_bytes_per_s: float | None = None, recommend: bool = False,
                config: str | os.PathLike[str] | None = None,
                configs: Mapping[str, object] | None = None,
                inputs: Loaded | None = None) -> WhatIfReport:
        """Each topic's log lifecycle simulated from its segments on disk at ``at`` to
        ``horizon_days`` after it, under today's config and under ``changes``
        (``{"segment.bytes": 134217728}`` or ``"segment.bytes=134217728"``), as ``segtools
        retention --what-if``; ``recommend`` adds the smallest segment change that keeps what
        retention promises (and, without ``changes``, compares against it). ``configs``: Kafka
        config names to values for every topic, or topic names to such mappings
        (``{"orders": {"cleanup.policy": "compact"}}``), the shape Spark's
        ``analyses.what_if`` takes too. ``to_json()``: the CLI's JSON."""
        from segtools.analysis import whatif  # the simulator loads only when asked for

        try:
            parsed = whatif.parse_changes(changes) if changes else None
            ingest = whatif.parse_ingest(ingest_bytes_per_s)
            whatif.check_horizon(horizon_days)
            overrides = whatif.ConfigOverrides.parse(configs)
        except ValueError as e:
            raise SegtoolsError(str(e)) from None
        loaded = inputs if inputs is not None else overrides.apply(self.inputs(
            at=at, config=config, configs=overrides.common))
        return as_result(whatif.what_if_report(
            loaded, parsed, now_ms=_now(at), horizon_days=horizon_days, ingest=ingest,
            recommend=recommend, limit=self.max_decompressed_bytes))

    @_gently
    def explain_compaction(self, *, at: Time | None = None,
                           config: str | os.PathLike[str] | None = None,
                           configs: Mapping[str, object] | None = None,
                           key: bytes | str | None = None, top: int = 10,
                           tombstone_limit: int = 20,
                           inputs: Loaded | None = None) -> CompactionReport:
        """What the log cleaner did and would do next at ``at`` (default: now) in every
        compacted partition (as ``segtools compaction``); ``key`` adds that key's history;
        ``inputs`` as for :meth:`explain_retention`."""
        now = _now(at)
        wanted = key.encode("utf-8") if isinstance(key, str) else key
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return as_result(compaction_report(loaded, self.paths, now_ms=now, key=wanted, top=top,
                                           tombstone_limit=tombstone_limit,
                                           limit=self.max_decompressed_bytes))

    @_gently
    def diverge(self, partition: str | None = None) -> list[ReplicaSet]:
        """Copies of the same partition in different log dirs, compared batch by batch."""
        return DivergeResult(
            compare_copies(key, copies, limit=self.max_decompressed_bytes)
            for key, copies in copies_by_partition(self.log_dirs, partition).items())


def _now(at: Time | None, name: str = "at") -> int:
    """``at`` in epoch ms (an error names the caller's argument, ``name``); the wall clock when
    not given (as the CLI's ``--at``)."""
    return arguments.moment(at, name) if at is not None else int(time.time() * 1000)


def decode_table(table: pa.Table, schemas, *, decode: bool | str = True,
                 schema_registry: str | None = None) -> pa.Table:
    """``table`` (binary ``key``/``value`` columns, and ``topic`` when it has one: Arrow you
    already have) with the decode columns of ``to_arrow(decode=True)`` appended. ``schemas``:
    a :class:`LogDirs`, a decoder's schema source, or paths holding a ``_schemas`` topic or
    schema files."""
    if isinstance(schemas, LogDirs):
        decoder = schemas.payload_decoder(decode, registry=schema_registry)
    elif hasattr(schemas, "by_id"):
        decoder = PayloadDecoder(schemas, Modes.parse("schema" if decode is True else str(decode)))
    else:
        paths = [schemas] if isinstance(schemas, str | os.PathLike) else list(schemas)
        decoder = PayloadDecoder(gather([], [], schemas=[os.fspath(p) for p in paths],
                                        registry=schema_registry),
                                 Modes.parse("schema" if decode is True else str(decode)))
    return payload_columns.decode_table(table, decoder)


def open(*paths: str | os.PathLike[str],
         max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
         storage_options: Mapping[str, Any] | None = None,
         page_cache: PageCacheMode | str | None = None,
         max_read_rate: int | str | None = None, jobs: int | None = None) -> LogDirs:
    """Walk log dirs, partition dirs or segment files (read-only) into a :class:`LogDirs`.

    A path may be a URI of an object store (``s3://bucket/logs``) or an archive
    (``bundle.tar.gz``); ``storage_options`` configure the store (docs/locations.md).
    ``page_cache`` (``"restore"``/``"keep"``), ``max_read_rate`` (bytes per second, or
    ``"50MiB"``) and ``jobs``: as the command line's ``--page-cache``, ``--max-read-rate``
    and ``--jobs``; by default gentle when a running broker holds a log dir
    (docs/robustness.md)."""
    return LogDirs(paths, max_decompressed_bytes=max_decompressed_bytes,
                   storage_options=storage_options, page_cache=page_cache,
                   max_read_rate=max_read_rate, jobs=jobs)


def _view_options(decode: bool | str, schemas: Iterable[str | os.PathLike[str]],
                  schema_registry: str | None) -> ViewOptions:
    return ViewOptions(decode, tuple(os.fspath(s) for s in schemas), schema_registry)


def query(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], sql: str, *,
          decode: bool | str = False, schemas: Iterable[str | os.PathLike[str]] = (),
          schema_registry: str | None = None, memory: str = sql_engine.DEFAULT_MEMORY,
          temp_limit: str = sql_engine.DEFAULT_TEMP_LIMIT,
          max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
          storage_options: Mapping[str, Any] | None = None) -> pa.Table:
    """``segtools query PATH... -c SQL`` as a function: the rows as an Arrow table, with the
    views narrowed by the query's conditions before anything is decoded (docs/query.md)."""
    places = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    tree = open(*places, max_decompressed_bytes=max_decompressed_bytes,
                storage_options=storage_options)
    with sql_engine.session(sql_engine.Limits(memory, temp_limit)) as con:
        sql_engine.register(con, tree, sql, _view_options(decode, schemas, schema_registry))
        return sql_engine.run(con, sql).read_all()


def verify(*paths: str | os.PathLike[str], deep: bool = False) -> list[Finding]:
    """``segtools verify PATH...`` as a function: every finding."""
    return open(*paths).verify(deep=deep)


def transactions(*paths: str | os.PathLike[str], now: Time | None = None,
                 max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS) -> TransactionsReport:
    return open(*paths).transactions(now=now, max_timeout_ms=max_timeout_ms)


def offsets_at(*paths: str | os.PathLike[str], at: Time | None = None,
               groups: str | Iterable[str] | None = None) -> OffsetsReplay:
    return open(*paths).offsets_at(at, groups=groups)


def producers(*paths: str | os.PathLike[str], duplicates_window: int | None = None
              ) -> list[PartitionProducers]:
    return open(*paths).producers(duplicates_window=duplicates_window)


def diverge(*paths: str | os.PathLike[str], partition: str | None = None) -> list[ReplicaSet]:
    return open(*paths).diverge(partition)


def explain_retention(*paths: str | os.PathLike[str], at: Time | None = None,
                      config: str | os.PathLike[str] | None = None,
                      configs: Mapping[str, object] | None = None,
                      forecast_days: float | None = None, deep: bool = True) -> RetentionReport:
    """``segtools retention PATH...`` as a function (``to_json()``: its ``--format json``)."""
    return open(*paths).explain_retention(at=at, config=config, configs=configs,
                                          forecast_days=forecast_days, deep=deep)


def explain_compaction(*paths: str | os.PathLike[str], at: Time | None = None,
                       config: str | os.PathLike[str] | None = None,
                       configs: Mapping[str, object] | None = None,
                       key: bytes | str | None = None, top: int = 10,
                       tombstone_limit: int = 20) -> CompactionReport:
    """``segtools compaction PATH...`` as a function (``to_json()``: its ``--format json``)."""
    return open(*paths).explain_compaction(at=at, config=config, configs=configs, key=key,
                                           top=top, tombstone_limit=tombstone_limit)


def tiered(*paths: str | os.PathLike[str], at: Time | None = None,
           config: str | os.PathLike[str] | None = None,
           configs: Mapping[str, object] | None = None,
           remote_store: str | os.PathLike[str] | None = None) -> TieredReport:
    """``segtools tiered PATH...`` as a function (``to_json()``: its ``--format json``)."""
    return open(*paths).tiered(at=at, config=config, configs=configs,
                               remote_store=remote_store)

def what_if(*paths: str | os.PathLike[str], changes: Mapping[str, object] | str | None = None,
            at: Time | None = None, horizon_days: float = 30.0,
            ingest_bytes_per_s: float | None = None, recommend: bool = False,
            config: str | os.PathLike[str] | None = None,
            configs: Mapping[str, object] | None = None) -> WhatIfReport:
    """``segtools retention PATH... --what-if/--recommend`` as a function."""
    return open(*paths).what_if(changes, at=at, horizon_days=horizon_days,
                                ingest_bytes_per_s=ingest_bytes_per_s, recommend=recommend,
                                config=config, configs=configs)
