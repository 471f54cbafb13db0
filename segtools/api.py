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

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import lazy_loader
import pyarrow as pa

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import CorruptDataError, SegtoolsError
from segtools.fetch import arguments, plan, rows
from segtools.fetch import columns as fetch_columns
from segtools.fetch.columns import Level
from segtools.fetch.stream import ArrowRead, payloads_as_text, payloads_as_text_schema
from segtools.findings import Finding, Severity
from segtools.payloads import columns as payload_columns
from segtools.storage import gentle, scope
from segtools.storage.gentle import PageCacheMode
from segtools.storage.logdirs import LogDir, PartitionRef, walk, walk_roots
from segtools.storage.partition import PartitionDir, SegmentFiles
from segtools.storage.scope import LocationScope
from segtools.storage.throttle import parse_rate
from segtools.text import terminal_safe, unmatched
from segtools.units import format_bytes

if TYPE_CHECKING:  # the names of the lazily loaded rooms' types, for the annotations
    from segtools.analysis.diverge import ReplicaSet
    from segtools.analysis.explain import CompactionReport, RetentionReport
    from segtools.analysis.offsets import OffsetsReplay
    from segtools.analysis.partition_input import Loaded, Summaries
    from segtools.analysis.producers import PartitionProducers
    from segtools.analysis.tiered import TieredReport
    from segtools.analysis.transactions import PartitionAnalysis, TransactionsReport
    from segtools.analysis.whatif import WhatIfReport
    from segtools.payloads.decoder import Modes, PayloadDecoder
    from segtools.payloads.schemas import SchemaLookup, Schemas
    from segtools.payloads.usage import SchemaUsage
    from segtools.sql.views import Options as ViewOptions
    from segtools.storage.summary import KeptRead

# The analyses, the SQL face and the remote store load on first use, not at import: every
# command imports this module, and one that reads records (``query``, ``dump``) should not pay
# the analyses' start-up (half a second on 2 cores). ``lazy_loader.load`` is Python's own
# ``importlib.util.LazyLoader`` (a module object that executes on its first attribute access),
# declared here at module level so the arrows stay visible (tests/test_house.py reads the
# TYPE_CHECKING imports above, which name the same modules).
_LAZY = functools.partial(lazy_loader.load, suppress_warning=True)
_config = _LAZY("segtools.analysis.config")
_diverge = _LAZY("segtools.analysis.diverge")
_explain = _LAZY("segtools.analysis.explain")
_offsets = _LAZY("segtools.analysis.offsets")
_partition_input = _LAZY("segtools.analysis.partition_input")
_producers = _LAZY("segtools.analysis.producers")
_tiered = _LAZY("segtools.analysis.tiered")
_transaction_state = _LAZY("segtools.analysis.transaction_state")
_transactions = _LAZY("segtools.analysis.transactions")
_verify = _LAZY("segtools.analysis.verify")
_whatif = _LAZY("segtools.analysis.whatif")
_results = _LAZY("segtools.results")
_usage = _LAZY("segtools.payloads.usage")
_remote_store = _LAZY("segtools.storage.remote_store")
_sql_engine = _LAZY("segtools.sql.engine")
_sql_trees = _LAZY("segtools.sql.trees")
_sources = _LAZY("segtools.payloads.sources")  # a registry client (urllib): when decoding
_decoder = _LAZY("segtools.payloads.decoder")  # the payload formats: when decoding
_schemas = _LAZY("segtools.payloads.schemas")
_sql_views = _LAZY("segtools.sql.views")

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
        # a directory name is the tree's text: escaped as the CLI escapes it, so printing a
        # hostile partition in a terminal cannot drive it (docs/security.md)
        return f"<Partition {terminal_safe(self.name)} ({self.state}): {', '.join(marks)}>"

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
                 max_read_rate: int | str | None = None, jobs: int | None = None,
                 relist: bool = True, listed: bool = True):
        self.paths = arguments.places(paths)
        #: each read lists the paths again, seeing the segments rolled since the dataset was
        #: opened (a notebook's); False: reads plan over the listing made here, one walk for
        #: a dataset opened to be read at once (a query's: on a log dir of 10,000
        #: partitions, the walk costs as much as the rest of a point query)
        self.relist = relist
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
            self.paths, page_cache=_page_cache(page_cache),
            max_read_rate=_read_rate(max_read_rate),
            jobs=None if jobs is None else arguments.count(1)(jobs, "jobs"))
        #: the partition directories found but not listed yet, by log dir
        #: (:meth:`take_listing`): with ``listed=False``, a run's workers list them
        self.unlisted: tuple[tuple[LogDir, tuple[PartitionRef, ...]], ...] = ()
        with gentle.applied(self.gentle), self.locations.applied():
            roots = None if listed or storage_options else walk_roots(self.paths)
            if roots is None:  # a listed location (a store, an archive) is walked whole
                log_dirs, loose = walk(self.paths, storage_options)
            else:
                found, loose = roots
                log_dirs = [d for d, _ in found]
                self.unlisted = tuple((d, tuple(refs)) for d, refs in found)
        self._found = self.unlisted  # what :meth:`take_listing` fills in
        for f in loose:
            if f.code == "path_not_found":
                # the path in the message, which is all the API and Spark show; so not as .path too
                raise SegtoolsError(f"{f.path}: no such file or directory")
        self.log_dirs: list[LogDir] = log_dirs
        self._loose = tuple(loose)
        self._tree_findings = tuple(loose) + tuple(f for d in log_dirs for f in d.findings)
        self._listing_findings = tuple(f for d in log_dirs for p in d.partitions
                                       for f in p.findings)
        self._read_findings: list[Finding] = []
        #: what its reads of records write into, kept from one read to the next: a read
        #: then writes into pages the one before mapped, not fresh ones
        self._buffers = rows.ReadBuffers.new()

    def take_listing(self, listing: Mapping[str, PartitionDir]) -> None:
        """The partition directories of :attr:`unlisted` listed elsewhere (a run's workers:
        :func:`segtools.storage.logdirs.list_partition`), by path: each log dir holds those
        of its partitions ``listing`` has, in the order :func:`open` lists them, so once it
        has every one the tree is the one :func:`open` lists. Before that, the tree holds
        only the partitions listed so far (a few a run needs before its workers are done).
        A tree listed when it was opened is kept as it is."""
        if not self._found:
            return
        self.log_dirs = [dataclasses.replace(d, partitions=tuple(
            listing[key] for key in map(str, (r.path for r in refs)) if key in listing))
            for d, refs in self._found]
        if all(str(r.path) in listing for _, refs in self._found for r in refs):
            self.unlisted = ()
        self._listing_findings = tuple(f for d in self.log_dirs for p in d.partitions
                                       for f in p.findings)

    def __repr__(self) -> str:
        return (f"<segtools.LogDirs {len(self.log_dirs)} log dir(s), "
                f"{sum(len(d.partitions) for d in self.log_dirs)} partition(s)>")

    def close(self) -> None:
        """Close the locations this dataset opened (not those of a run it was opened in),
        and let go of the buffers its reads kept."""
        self._buffers.clear()
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
        """Partition directories whose topic matches a glob in ``topics``; a glob or a
        partition number that selects nothing is an error naming it (a typo is not "no
        partitions"), as the reads' selectors are."""
        sel = plan.Selection(self.paths, topics=_parse("topics", topics),
                             partitions=_parse("partitions", partitions),
                             partition_states=_parse("states", states))
        found = self._selected(sel)
        if not found and (sel.topics != ("*",) or sel.partitions):
            named = {p.topic for p in self._selected(plan.Selection(
                self.paths, partition_states=arguments.PARTITION_STATES)) if p.topic}
            said = unmatched(sel.topics, named)
            if said is not None:
                raise arguments.ArgumentError(f"topics: {said}")
            raise arguments.ArgumentError(
                f"partitions: no partition {', '.join(map(str, sel.partitions or ()))} of "
                "the selected topics here")
        return found

    def _selected(self, sel: plan.Selection) -> list[Partition]:
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
        return sorted({p.topic for p in self._selected(plan.Selection(
            self.paths, partition_states=arguments.PARTITION_STATES)) if p.topic is not None})

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
                  verify_crc: bool = True, reveal_sensitive: bool = False,
                  remote_store: str | os.PathLike | None = None) -> plan.Selection:
        """The library's :class:`~segtools.fetch.plan.Selection` for these selectors, each
        checked by :mod:`segtools.fetch.arguments` (the Spark options' parsers).

        ``start_offset`` is inclusive and ``end_offset`` exclusive, either one offset for every
        selected partition or ``{topic: {partition: offset}}``; times are epoch ms, ISO-8601 or
        an aware ``datetime`` (the first record at or after the time, as a broker's
        ``ListOffsets``), one for every partition or ``{topic: {partition: time}}``.
        ``remote_store``: Kafka's ``LocalTieredStorage`` directory; a tiered partition is then
        read as one log, the copied remote segments below its local ones first (``tier``).
        ``reveal_sensitive``: the values of ``__cluster_metadata`` records as stored; by
        default a sensitive config's value and a SCRAM credential in them read ``[hidden]``,
        as every face shows them (docs/security.md)."""
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
            reveal_sensitive=_parse("reveal_sensitive", reveal_sensitive),
            max_decompressed_bytes=self.max_decompressed_bytes,
            remote_store=_parse("remote_store", remote_store))

    def to_arrow(self, level: Level | str = Level.RECORDS, *,
                 columns: Iterable[str] | None = None, include_headers: bool = False,
                 strict: bool = False, on_finding: Callable[[Finding], None] | None = None,
                 binary: str = "view", strings: bool = False, decode: bool | str = False,
                 schemas: Iterable[str | os.PathLike[str]] = (),
                 schema_registry: str | None = None, dictionary: bool = False,
                 **selectors) -> ArrowRead:
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
        ``dictionary=True`` gives the names every row of a partition shares (``topic``,
        ``log_dir``, a segment's ``partition_dir``) as ``dictionary<int32, string>``: one
        entry per Arrow batch and an index per row, where a plain ``string`` column repeats
        the name in every row. An engine
        that groups or filters by topic then compares integers (DuckDB's ``group by topic``
        over 2.2 M records: half the time); the values read are the same.

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
                            schema_registry=schema_registry,
                            dictionary=arguments.boolean(dictionary, "dictionary"))

    @_located
    def _reader(self, where: str, level: Level | str, columns: Iterable[str] | None,
                include_headers: bool, strict: bool,
                on_finding: Callable[[Finding], None] | None, binary: str,
                selectors: dict[str, Any], strings: bool = False, *,
                decode: bool | str = False, schemas: Iterable[str | os.PathLike[str]] = (),
                schema_registry: str | None = None, dictionary: bool = False) -> ArrowRead:
        """One read: its arguments checked at the door (naming ``where`` and the caller's
        argument), its plan made now (so a bad selection fails here, not while iterating)."""
        arguments.unknown_names(selectors, _SELECTOR_NAMES, where, hints=_READ_KEYWORDS)
        decode = arguments.decode_mode(decode)
        if binary not in ("view", "binary"):
            raise arguments.ArgumentError(f"binary: must be 'view' or 'binary', not {binary!r}")
        include_headers = _parse("include_headers", include_headers)
        strict = arguments.boolean(strict, "strict")
        strings = arguments.boolean(strings, "strings")
        sel = self.selection(level, **selectors)
        asked = None if columns is None else _parse_columns(columns)
        # decode columns named among ``columns`` (a narrow read, as a Spark schema naming
        # only ``value_decoded``): decoded alone, from the record columns they need
        wanted = _decode_columns_asked(asked, bool(decode and sel.level is Level.RECORDS))
        try:
            names = (fetch_columns.canonical(_record_columns_for(asked, wanted), sel.level)
                     if asked is not None
                     else fetch_columns.default_columns(sel.level, include_headers)
                     + (("tier",) if sel.remote_store is not None else ()))
        except fetch_columns.ColumnError as e:
            raise arguments.ArgumentError(f"columns: {e}") from None
        schema = fetch_columns.schema(sel.level, names, dictionary=dictionary)
        if binary == "view" and sel.level is Level.RECORDS:
            for name in ("key", "value"):
                if name in schema.names:
                    i = schema.get_field_index(name)
                    schema = schema.set(i, schema.field(i).with_type(pa.binary_view()))
        scan = rows.Scan(sel.level, names, schema, include_control=sel.include_control,
                         read_committed=sel.read_committed, verify_crc=sel.verify_crc,
                         check_crc=strict, max_decompressed_bytes=sel.max_decompressed_bytes,
                         reveal_sensitive=sel.reveal_sensitive)
        try:
            with gentle.applied(self.gentle):
                pieces = plan.ranges(sel, listed=None if self.relist else self.log_dirs)
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
        if decoder is not None and wanted is not None:
            shown = _narrow_schema(asked, schema, wanted)

        def start() -> Iterator[pa.RecordBatch]:
            self._read_findings = []
            report = self._reporter(strict, on_finding, self._read_findings)
            batches = gentle.iterate(self.gentle,
                                     self.locations.iterate(rows.read(pieces, scan, report,
                                                                       buffers=self._buffers)))
            if decoder is not None and wanted is not None:
                batches = (_narrow_batch(b, decoder, wanted, shown) for b in batches)
            elif decoder is not None:  # decoded from the bytes, before they may become text
                batches = (payload_columns.with_decoded(decoder, b) for b in batches)
            return map(payloads_as_text, batches) if text else batches

        return ArrowRead(payloads_as_text_schema(shown) if text else shown, start)
    @_located
    def schema_history(self) -> Schemas | None:
        """What Schema Registry's ``_schemas`` topic in these log dirs holds (registrations,
        deletes, configs, with their times), or None when the tree has no such topic."""
        histories = _sources.gather(self.log_dirs, self.findings).histories()
        if not histories:
            return None
        out = _schemas.Schemas(source=histories[0].source)
        for h in histories:
            out.extend(h)
        return out

    @_located
    def schema_usage(self, topics: str | Iterable[str] = "*",
                     lookup: SchemaLookup | None = None) -> list[SchemaUsage]:
        """Per topic, side and schema id: the records using it, from which offset and time to
        which, and the producers that wrote them (``segtools schemas --usage``). ``lookup``:
        the schemas that say which ids exist (a decoder's sources, e.g.
        ``payload_decoder(schemas=...).lookup``: a key naming an id they do not know counts as
        unframed, as that decoder leaves it); default: this tree's ``_schemas`` topic."""
        known = lookup if lookup is not None else self.schema_history()
        return _usage.usage([p.directory for p in self.partitions(topics)], self.findings,
                            limit=self.max_decompressed_bytes, known=None if known is None
                            else lambda i: known.by_id(i) is not None or known.hard_deleted(i))

    @_located
    def payload_decoder(self, decode: bool | str = True,
                        schemas: Iterable[str | os.PathLike[str]] = (),
                        registry: str | None = None) -> PayloadDecoder:
        """The decoder ``decode=`` uses: the schemas of these log dirs' ``_schemas`` topic (or
        of ``schemas``), then a registry; what reading them met joins :attr:`findings`."""
        chain = _sources.gather(self.log_dirs, self.findings,
                                schemas=[os.fspath(s) for s in schemas], registry=registry)
        return _decoder.PayloadDecoder(chain, _modes(decode))

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
               memory: str | None = None, temp_limit: str | None = None,
               at: Time | None = None, states: str | Iterable[str] = "live",
               include_control: bool = False):
        """A DuckDB connection with the views of ``segtools query`` (docs/query.md), for a
        notebook's many queries. No query is known in advance, so nothing is pushed down: each
        view is read once, whole, into a temporary table (spilled past ``memory`` to a
        temporary directory removed with the connection). For one query over a large tree,
        :func:`query` reads only what its conditions select. ``at``: the moment the
        retention and transactions views answer for (default: now); ``states``,
        ``include_control``: as :func:`query`'s."""
        con = _sql_engine.connect(_sql_engine.limits(memory, temp_limit))
        _sql_engine.register(con, self, None, _view_options(
            decode, schemas, schema_registry, at, states=states,
            include_control=include_control))
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
        out = self.verify_tree_files()
        for found in self.verify_partitions(self.verified(topics, partitions), deep=deep):
            out += found
        return _results.FindingsResult(out)

    @_gently
    def verify_tree_files(self) -> list[Finding]:
        """What :meth:`verify` reports before any partition: the tree's listing and the
        files that belong to a log dir rather than a partition."""
        out = list(self._tree_findings)
        for d in self.log_dirs:
            out += _verify.verify_log_dir_files(d, limit=self.max_decompressed_bytes)
        return out

    def verified(self, topics: str | Iterable[str] = "*",
                 partitions: int | Iterable[int] | None = None
                 ) -> list[tuple[LogDir, PartitionDir]]:
        """The partition directories :meth:`verify` reads (every state), in its order, each
        with its log dir."""
        wanted = {id(p.directory) for p in self.partitions(topics, partitions,
                                                           arguments.PARTITION_STATES)}
        return [(d, pdir) for d in self.log_dirs for pdir in d.partitions if id(pdir) in wanted]

    @_gently
    def verify_partitions(self, pdirs: Sequence[tuple[LogDir, PartitionDir]], *,
                          deep: bool = False,
                          keep: Callable[[SegmentFiles, KeptRead], None] | None = None
                          ) -> list[list[Finding]]:
        """Each partition directory's findings, as :meth:`verify` reports them, for some of
        :meth:`verified` (a part of the tree, in a worker); ``keep`` is handed what the
        compiled reading of a small segment read
        (:func:`segtools.analysis.verify.verify_partition`), for an analysis that follows."""
        return [_verify.verify_partition(d, pdir, deep=deep, limit=self.max_decompressed_bytes,
                                         keep=keep) for d, pdir in pdirs]

    @_gently
    def transactions(self, *, now: Time | None = None,
                     max_timeout_ms: int | None = None,
                     topics: str | Iterable[str] = "*",
                     changes: int | None = None,
                     analysed: Mapping[str, PartitionAnalysis] | None = None
                     ) -> TransactionsReport:
        """Transactions per partition, hanging ones, open transactional ids (as
        ``segtools transactions``); the latest ``changes`` state changes of each
        transactional id (0: all; default ``CHANGES_PER_ID``). Ages are measured at ``now``
        (default: the wall clock), one moment for every log; ``max_timeout_ms`` defaults to
        the broker's ``transaction.max.timeout.ms``. ``analysed``: partitions already
        analysed (by their directory's path, at the same ``now``), walked beside another
        analysis."""
        max_timeout_ms = (_transactions.DEFAULT_MAX_TIMEOUT_MS if max_timeout_ms is None
                          else arguments.count(1)(max_timeout_ms, "max_timeout_ms"))
        changes = (_transaction_state.CHANGES_PER_ID if changes is None
                   else arguments.count(0)(changes, "changes"))
        pdirs = [p.directory for p in self.partitions(topics, states=arguments.PARTITION_STATES)]
        return _results.as_result(_transactions.transactions_report(
            pdirs, max_timeout_ms=max_timeout_ms, now=_now(now, "now"), keep=changes,
            limit=self.max_decompressed_bytes, analysed=analysed))

    @_gently
    def offsets_at(self, at: Time | None = None, *,
                   groups: str | Iterable[str] | None = None, history: bool = False,
                   topic: str | None = None, partition: int | None = None) -> OffsetsReplay:
        """Consumer groups' committed offsets at ``at`` (default: the end of the log), with
        regressions and deletions, replayed from ``__consumer_offsets``; ``history`` also
        keeps every commit (of ``topic``/``partition`` when given)."""
        pdirs = [p.directory for p in self.partitions(_offsets.CONSUMER_OFFSETS_TOPIC)] \
            if _offsets.CONSUMER_OFFSETS_TOPIC in self.topics else []
        if not pdirs:
            raise SegtoolsError(f"no {_offsets.CONSUMER_OFFSETS_TOPIC} partitions under "
                                f"{', '.join(self.paths)}")
        patterns = None if groups is None else list(_tuple(groups))
        replay = _offsets.replay_offsets(
            pdirs, at=None if at is None else arguments.moment(at, "at"), groups=patterns,
            history=history, topic=topic, partition=partition,
            limit=self.max_decompressed_bytes)
        if patterns and not replay.groups and not replay.group_deletions:
            raise arguments.ArgumentError(
                f"groups: no group matches {', '.join(map(repr, patterns))} in "
                f"{_offsets.CONSUMER_OFFSETS_TOPIC}{'' if at is None else ' up to at'}")
        return _results.as_result(replay)

    @_gently
    def producers(self, *, topics: str | Iterable[str] = "*",
                  partitions: int | Iterable[int] | None = None,
                  duplicates_window: int | None = None) -> list[PartitionProducers]:
        """How each producer batched into each partition, what its sequences say (as
        ``segtools producers``: every partition directory, a deleted topic's too);
        ``duplicates_window`` (ms, or text as ``--window`` takes it:
        ``"5m"``) also looks for retried sends of non-idempotent producers, stored on each
        result as ``duplicates``."""
        if duplicates_window is not None:
            duplicates_window = arguments.duration_ms(duplicates_window, "duplicates_window")
        # every state, as the command and transactions(): a deleted topic's producers are
        # evidence too (the producers view and this API answered without them)
        pdirs = [p.directory for p in self.partitions(
            topics, partitions, states=arguments.PARTITION_STATES)]
        results = _producers.analyse(pdirs, limit=self.max_decompressed_bytes)
        if duplicates_window is not None:
            for pdir, r in zip([p for p in pdirs if p.name and not p.name.is_metadata_log],
                               results, strict=True):
                r.duplicates = _producers.likely_duplicates(pdir, window_ms=duplicates_window,
                                                 limit=self.max_decompressed_bytes)
        return _results.ProducersResult(results)

    @_gently
    def inputs(self, *, at: Time | None = None, config: str | os.PathLike[str] | None = None,
               configs: Mapping[str, object] | None = None,
               made: Mapping[str, Summaries] | None = None) -> Loaded:
        """Every live partition summarised with its resolved topic config (``configs`` >
        ``config`` file > ``__cluster_metadata`` in the tree > Kafka's defaults, as the CLI's
        flags and ``--config``): the input of the retention and compaction analyses.
        ``made``: partitions an analysis already summarised, by directory path
        (:func:`segtools.analysis.partition_input.partition_summaries`)."""
        flags = {}
        for name, value in (configs or {}).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            try:
                _config.parse_value(name, text)
            except ValueError as e:
                raise SegtoolsError(str(e)) from None
            flags[name] = text
        config_file = None
        if config is not None:
            try:
                config_file = _partition_input.read_config_file(os.fspath(config))
            except SegtoolsError as e:  # the file named, as the argument that named it
                raise arguments.ArgumentError(f"config: {os.fspath(config)}: {e}") from None
        loaded = _partition_input.load_inputs(
            self.log_dirs, flags=flags, config_file=config_file,
            at=None if at is None else arguments.moment(at, "at"),
            limit=self.max_decompressed_bytes, made=made)
        return _partition_input.Loaded(loaded.partitions, loaded.skipped,
                                       self._loose + loaded.findings, loaded.config_sources)

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
        if forecast_days is not None:
            forecast_days = arguments.number(0, above=True)(forecast_days, "forecast_days")
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return _results.as_result(_explain.retention_report(
            loaded, now_ms=now, forecast_days=forecast_days, deep=deep,
            limit=self.max_decompressed_bytes))

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
        store = _remote_store.open_store(remote_store, self.storage_options) \
            if remote_store is not None else None
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return _results.as_result(_tiered.tiered_report(loaded, now_ms=now, store=store))

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
        if isinstance(horizon_days, str):  # "7" as 7: the bound's own words for the rest
            with contextlib.suppress(ValueError):
                horizon_days = float(horizon_days)
        try:
            parsed = _whatif.parse_changes(changes) if changes else None
            ingest = _whatif.parse_ingest(ingest_bytes_per_s)
            _whatif.check_horizon(horizon_days)
            overrides = _whatif.ConfigOverrides.parse(configs)
        except ValueError as e:
            raise SegtoolsError(str(e)) from None
        loaded = inputs if inputs is not None else overrides.apply(self.inputs(
            at=at, config=config, configs=overrides.common))
        return _results.as_result(_whatif.what_if_report(
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
        top = arguments.count(0)(top, "top")
        tombstone_limit = arguments.count(0)(tombstone_limit, "tombstone_limit")
        wanted = key.encode("utf-8") if isinstance(key, str) else key
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        report = _explain.compaction_report(
            loaded, self.paths, now_ms=now, key=wanted, top=top,
            tombstone_limit=tombstone_limit, limit=self.max_decompressed_bytes)
        absent = _explain.absent_key(report, lambda k: k.decode("utf-8", "backslashreplace"))
        if absent is not None:
            raise arguments.ArgumentError(f"key: {absent}")
        return _results.as_result(report)

    @_gently
    def diverge(self, partition: str | None = None) -> list[ReplicaSet]:
        """Copies of the same partition in different log dirs, compared batch by batch."""
        return _results.DivergeResult(
            _diverge.compare_copies(key, copies, limit=self.max_decompressed_bytes)
            for key, copies in _diverge.copies_by_partition(self.log_dirs, partition).items())


def _now(at: Time | None, name: str = "at") -> int:
    """``at`` in epoch ms (an error names the caller's argument, ``name``); the wall clock when
    not given (as the CLI's ``--at``)."""
    return arguments.moment_or_now(at, name)


def _page_cache(value: PageCacheMode | str | None) -> PageCacheMode | None:
    try:
        return None if value is None else PageCacheMode(value)
    except ValueError:
        raise arguments.ArgumentError(
            f"page_cache: must be one of {', '.join(m.value for m in PageCacheMode)}, "
            f"not {value!r}") from None


def _read_rate(value: int | str | None) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    try:
        return parse_rate(value)
    except (ValueError, TypeError) as e:
        raise arguments.ArgumentError(f"max_read_rate: {e}") from None


def _decode_columns_asked(asked: tuple[str, ...] | None, decoding: bool
                          ) -> tuple[str, ...] | None:
    """The decode columns named in ``columns`` (canonical, in the order given), or None when
    none is named (then every decode column is added, after the record columns)."""
    if asked is None:
        return None
    known = {f.name.lower(): f.name for f in payload_columns.FIELDS}
    named = tuple(known[c.lower()] for c in asked if c.lower() in known)
    if named and not decoding:
        raise arguments.ArgumentError(
            f"columns: {named[0]} is a decode column; pass decode=True (at level=records)")
    return named or None


def _record_columns_for(asked: tuple[str, ...], wanted: tuple[str, ...] | None
                        ) -> tuple[str, ...]:
    """The record columns to read: those asked, and what decoding ``wanted`` needs (the
    side's bytes, and the topic its subject is named after)."""
    decode_names = {c.lower() for c in wanted or ()}
    read = [c for c in asked if c.lower() not in decode_names]
    needs = [side for side in ("key", "value") if any(w.startswith(f"{side}_")
                                                      for w in wanted or ())]
    lowered = {c.lower() for c in read}
    return tuple(read + [c for c in (*needs, "topic") if wanted and c not in lowered])


def _narrow_schema(asked: tuple[str, ...], schema: pa.Schema,
                   wanted: tuple[str, ...]) -> pa.Schema:
    """The columns asked, in their order: record columns as read, decode columns as added."""
    decode = {f.name: f for f in payload_columns.FIELDS}
    by_lower = {n.lower(): n for n in schema.names}
    return pa.schema([decode[w] if (w := next((d for d in wanted if d.lower() == c.lower()),
                                               None)) else schema.field(by_lower[c.lower()])
                      for c in asked])


def _narrow_batch(batch: pa.RecordBatch, decoder: PayloadDecoder, wanted: tuple[str, ...],
                  shown: pa.Schema) -> pa.RecordBatch:
    """``batch`` decoded for ``wanted`` only, its columns those of ``shown``."""
    decoded = dict(zip(wanted, payload_columns.decoded_columns(decoder, batch, wanted),
                       strict=True))
    return pa.RecordBatch.from_arrays(
        [decoded[f.name] if f.name in decoded else batch.column(f.name) for f in shown],
        schema=shown)


def _modes(decode: bool | str | None) -> Modes:
    """The decode modes of a call that always decodes (``decode=False`` is refused there)."""
    mode = arguments.decode_mode(decode)
    if mode is None:
        raise arguments.ArgumentError(f"decode: must be true or a decode mode here, not {decode!r}")
    return _decoder.Modes.parse(mode)


def decode_table(table: pa.Table, schemas, *, decode: bool | str = True,
                 schema_registry: str | None = None) -> pa.Table:
    """``table`` (binary ``key``/``value`` columns, and ``topic`` when it has one: Arrow you
    already have) with the decode columns of ``to_arrow(decode=True)`` appended. ``schemas``:
    a :class:`LogDirs`, a decoder's schema source, or paths holding a ``_schemas`` topic or
    schema files."""
    if isinstance(schemas, LogDirs):
        decoder = schemas.payload_decoder(decode, registry=schema_registry)
    elif hasattr(schemas, "by_id"):
        decoder = _decoder.PayloadDecoder(schemas, _modes(decode))
    else:
        paths = [schemas] if isinstance(schemas, str | os.PathLike) else list(schemas)
        chain = _sources.gather([], [], schemas=[os.fspath(p) for p in paths],
                                registry=schema_registry)
        decoder = _decoder.PayloadDecoder(chain, _modes(decode))
    return payload_columns.decode_table(table, decoder)


def open(*paths: str | os.PathLike[str],
         max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
         storage_options: Mapping[str, Any] | None = None,
         page_cache: PageCacheMode | str | None = None,
         max_read_rate: int | str | None = None, jobs: int | None = None,
         listed: bool = True) -> LogDirs:
    """Walk log dirs, partition dirs or segment files (read-only) into a :class:`LogDirs`.

    A path may be a URI of an object store (``s3://bucket/logs``) or an archive
    (``bundle.tar.gz``); ``storage_options`` configure the store (docs/locations.md).
    ``page_cache`` (``"restore"``/``"keep"``), ``max_read_rate`` (bytes per second, or
    ``"50MiB"``) and ``jobs``: as the command line's ``--page-cache``, ``--max-read-rate``
    and ``--jobs``; by default gentle when a running broker holds a log dir
    (docs/robustness.md). ``listed=False``: a tree on the local disk is walked only to its
    partition directories, for a run that lists them in its workers
    (:attr:`LogDirs.unlisted`, :meth:`LogDirs.take_listing`)."""
    return LogDirs(paths, max_decompressed_bytes=max_decompressed_bytes,
                   storage_options=storage_options, page_cache=page_cache,
                   max_read_rate=max_read_rate, jobs=jobs, listed=listed)


def _view_options(decode: bool | str, schemas: Iterable[str | os.PathLike[str]],
                  schema_registry: str | None, at: Time | None,
                  time_index: bool = False, states: str | Iterable[str] = "live",
                  include_control: bool = False) -> ViewOptions:
    """The views' options from the API's arguments: the moment fixed here, once."""
    return _sql_views.Options(decode, tuple(os.fspath(s) for s in schemas), schema_registry,
                              time_index=time_index, at_ms=_now(at),
                              states=_parse("states", states),
                              include_control=_parse("include_control", include_control))


def query(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], sql: str, *,
          decode: bool | str = False, schemas: Iterable[str | os.PathLike[str]] = (),
          schema_registry: str | None = None, memory: str | None = None,
          temp_limit: str | None = None,
          max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
          storage_options: Mapping[str, Any] | None = None,
          time_index: bool = False, at: Time | None = None,
          states: str | Iterable[str] = "live", include_control: bool = False) -> pa.Table:
    """``segtools query PATH... -c SQL`` as a function: the rows as an Arrow table, with the
    views narrowed by the query's conditions before anything is decoded (docs/query.md);
    ``time_index``: as ``--time-index``, an upper time bound read as Kafka's ``ListOffsets``
    (a later record with an earlier time is then not read); ``at``: as ``--at``, the moment
    the retention and transactions views answer for (default: now); ``states`` and
    ``include_control``: as ``--states`` and ``--include-control``, the partition
    directories the record views read (a deleted topic's are ``"delete"``) and whether
    ``records`` keeps the transaction markers."""
    places = [os.fspath(p) for p in ([paths] if isinstance(paths, str | os.PathLike)
                                     else paths)]
    if not places:
        raise SegtoolsError("segtools.query() needs at least one path")
    trees = _sql_trees.Trees(places, lambda walked: LogDirs(
        walked, max_decompressed_bytes=max_decompressed_bytes,
        storage_options=storage_options, relist=False))
    with _sql_engine.session(_sql_engine.limits(memory, temp_limit)) as con:
        _sql_engine.register(con, trees, sql, _view_options(
            decode, schemas, schema_registry, at, time_index, states, include_control))
        return _sql_engine.run(con, sql).read_all()


def verify(*paths: str | os.PathLike[str], deep: bool = False) -> list[Finding]:
    """``segtools verify PATH...`` as a function: every finding."""
    return open(*paths).verify(deep=deep)


def transactions(*paths: str | os.PathLike[str], now: Time | None = None,
                 max_timeout_ms: int | None = None) -> TransactionsReport:
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
