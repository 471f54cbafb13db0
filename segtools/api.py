"""The front door: ``segtools.open(path)`` and the analyses as plain functions.

A notebook user thinks in Kafka's terms (log dirs, topics, partitions, offsets, timestamps),
not in segtools' modules, so this module maps those terms onto the library:

- :func:`open` walks the paths once into a :class:`LogDirs` (log dirs -> partitions ->
  segments, with what the walk found wrong);
- ``records()``/``batches()``/``segments()`` iterate rows as dicts and ``to_arrow()`` returns a
  :class:`pyarrow.RecordBatchReader` with exactly the Spark source's schema: both are
  :func:`segtools.fetch.rows.read` over :func:`segtools.fetch.plan.ranges`, the code Spark's
  executors run, so the faces cannot disagree;
- the analyses (:func:`verify`, :func:`transactions`, :func:`offsets_at`, :func:`diverge`,
  :func:`producers`, :func:`explain_retention`, :func:`explain_compaction`, :func:`tiered`)
  return the same typed results the CLI prints (``to_json()`` on the retention, compaction
  and tiered reports is the CLI's ``--format json`` document).

Selectors are the CLI's and the Spark options' (topics as globs, partitions, offset and time
bounds, ``read_committed``, ``include_control``). Findings met while reading are collected on
:attr:`LogDirs.findings` (or passed to ``on_finding``); ``strict=True`` turns an error finding
into :class:`~segtools.errors.CorruptDataError` instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
from segtools.fetch import columns as fetch_columns
from segtools.fetch import plan, rows
from segtools.fetch.columns import Level
from segtools.findings import Finding, Severity
from segtools.payloads import columns as payload_columns
from segtools.payloads.decoder import Modes, PayloadDecoder
from segtools.payloads.schemas import Schemas
from segtools.payloads.sources import gather
from segtools.payloads.usage import SchemaUsage
from segtools.payloads.usage import usage as schema_usage
from segtools.sql import engine as sql_engine
from segtools.sql.views import Options as ViewOptions
from segtools.storage.logdirs import LogDir, walk
from segtools.storage.partition import PartitionDir, PartitionState, SegmentFiles
from segtools.storage.remote_store import open_store
from segtools.timestamps import to_millis

Time = int | float | str | datetime
Offsets = int | Mapping[str, Mapping[int, int]]

__all__ = ["LogDirs", "Partition", "decode_table", "diverge", "explain_compaction",
           "explain_retention", "offsets_at", "open", "producers", "query", "transactions",
           "verify"]


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition directory, with what its log dir's checkpoints say about it."""

    topic: str
    partition: int
    state: str  # live, delete, future, stray
    path: str
    log_dir: str
    segments: tuple[SegmentFiles, ...]
    high_watermark: int | None
    log_start_offset: int | None
    recovery_point: int | None
    size_bytes: int
    directory: PartitionDir  # the storage layer's view (indexes, snapshots, findings)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def _tuple(value: str | int | Iterable | None) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, str | int):
        return (value,)
    return tuple(value)


class LogDirs:
    """The log dirs found under some paths (a ``log.dirs`` entry, a directory of copies, a
    partition directory or segment files), read-only. Build it with :func:`open`."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]], *,
                 max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT,
                 storage_options: Mapping[str, Any] | None = None):
        self.paths = tuple(os.fspath(p) for p in paths)
        if not self.paths:
            raise SegtoolsError("segtools.open() needs at least one path")
        self.max_decompressed_bytes = max_decompressed_bytes
        log_dirs, loose = walk(self.paths, storage_options)
        for f in loose:
            if f.code == "path_not_found":
                raise SegtoolsError(f"{f.path}: no such file or directory", path=f.path)
        self.log_dirs: list[LogDir] = log_dirs
        self._loose = tuple(loose)
        self._tree_findings = tuple(loose) + tuple(f for d in log_dirs for f in d.findings)
        #: what the walk found wrong, then whatever later reads meet (in order)
        self.findings: list[Finding] = list(self._tree_findings) + [
            f for d in log_dirs for p in d.partitions for f in p.findings]

    def __repr__(self) -> str:
        return (f"<segtools.LogDirs {len(self.log_dirs)} log dir(s), "
                f"{sum(len(d.partitions) for d in self.log_dirs)} partition(s)>")

    # ------------------------------------------------------------------ the tree

    def partitions(self, topics: str | Iterable[str] = "*",
                   partitions: int | Iterable[int] | None = None,
                   states: str | Iterable[str] = "live") -> list[Partition]:
        """Partition directories whose topic matches a glob in ``topics``."""
        sel = plan.Selection(self.paths, topics=_tuple(topics), partitions=_tuple(partitions),
                             partition_states=_tuple(states))
        out = []
        for d in self.log_dirs:
            for pdir in d.partitions:
                info = plan.partition_info(d, pdir)
                if plan.selected(sel, pdir, info):
                    state = pdir.name.state.value if pdir.name else PartitionState.LIVE.value
                    out.append(Partition(info.topic, info.partition, state, info.path,
                                         info.log_dir, pdir.segments, info.high_watermark,
                                         info.log_start_offset, info.recovery_point,
                                         pdir.size_bytes, pdir))
        return out

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.partitions(states=plan.PARTITION_STATES)})

    # ------------------------------------------------------------------ reading

    def selection(self, level: Level | str = Level.RECORDS, *,
                  topics: str | Iterable[str] = "*",
                  partitions: int | Iterable[int] | None = None,
                  states: str | Iterable[str] = "live",
                  start_offset: Offsets | None = None, end_offset: Offsets | None = None,
                  start_time: Time | None = None, end_time: Time | None = None,
                  read_committed: bool = False, include_control: bool = False,
                  verify_crc: bool = True,
                  remote_store: str | os.PathLike | None = None) -> plan.Selection:
        """The library's :class:`~segtools.fetch.plan.Selection` for these selectors.

        ``start_offset`` is inclusive and ``end_offset`` exclusive, either one offset for every
        selected partition or ``{topic: {partition: offset}}``; times are epoch ms, ISO-8601 or
        ``datetime`` (the first record at or after the time, as a broker's ``ListOffsets``).
        ``remote_store``: Kafka's ``LocalTieredStorage`` directory; a tiered partition is then
        read as one log, the copied remote segments below its local ones first (``tier``)."""
        starting, starting_all = _offsets(start_offset)
        ending, ending_all = _offsets(end_offset)
        return plan.Selection(
            self.paths, level=Level(level), topics=_tuple(topics),
            partitions=_tuple(partitions), partition_states=_tuple(states),
            starting_offsets=starting, ending_offsets=ending,
            starting_offset=starting_all, ending_offset=ending_all,
            starting_timestamp=None if start_time is None else to_millis(start_time),
            ending_timestamp=None if end_time is None else to_millis(end_time),
            include_control=include_control, read_committed=read_committed,
            verify_crc=verify_crc, max_decompressed_bytes=self.max_decompressed_bytes,
            remote_store=None if remote_store is None else os.fspath(remote_store))

    def to_arrow(self, level: Level | str = Level.RECORDS, *,
                 columns: Iterable[str] | None = None, include_headers: bool = False,
                 strict: bool = False, on_finding: Callable[[Finding], None] | None = None,
                 binary: str = "view", decode: bool | str = False,
                 schemas: Iterable[str | os.PathLike[str]] = (),
                 schema_registry: str | None = None, **selectors) -> pa.RecordBatchReader:
        """The selected rows as Arrow record batches, streamed (memory stays flat).

        ``level``: ``records`` (one row per record), ``batches`` or ``segments``; ``columns``:
        a subset of that level's columns (default: the Spark source's default columns).
        ``binary``: ``"view"`` (default) gives ``key`` and ``value`` as ``binary_view``
        arrays over the segment's own bytes (the mapping of a sealed segment, or the inflated
        buffer of a compressed batch): no payload is copied, and the arrays keep those bytes
        alive after the dataset is gone; ``"binary"`` copies them into plain ``binary``
        arrays, for consumers that do not read views (Spark's Arrow exchange).

        ``decode``: ``True`` (Confluent frames) or a mode of ``segtools dump --decode``
        (``"auto"``, ``"string:schema"``, ...) adds ``key_decoded``/``value_decoded`` (JSON
        text) and the schema id, subject, version, type and payload error of each side
        (docs/payloads.md), with the schemas of the ``_schemas`` topic in these log dirs, or of
        ``schemas`` (locations or schema-file directories), then ``schema_registry``."""
        if binary not in ("view", "binary"):
            raise ValueError(f"binary must be 'view' or 'binary', not {binary!r}")
        sel = self.selection(level, **selectors)
        names = (fetch_columns.canonical(tuple(columns), sel.level) if columns is not None
                 else fetch_columns.default_columns(sel.level, include_headers)
                 + (("tier",) if sel.remote_store is not None else ()))
        schema = fetch_columns.schema(sel.level, names)
        if binary == "view" and sel.level is Level.RECORDS:
            for name in ("key", "value"):
                if name in schema.names:
                    i = schema.get_field_index(name)
                    schema = schema.set(i, schema.field(i).with_type(pa.binary_view()))
        scan = rows.Scan(sel.level, names, schema, include_control=sel.include_control,
                         read_committed=sel.read_committed, verify_crc=sel.verify_crc,
                         check_crc=strict, max_decompressed_bytes=sel.max_decompressed_bytes)
        pieces = plan.ranges(sel)
        report = self._reporter(strict, on_finding)
        batches = rows.read(pieces, scan, report)
        if decode and sel.level is Level.RECORDS:
            if not {"key", "value"} & set(names):
                raise ValueError("decode=True needs the key or value column among columns")
            decoder = self.payload_decoder(decode, schemas, schema_registry)
            return pa.RecordBatchReader.from_batches(
                payload_columns.extend_schema(schema),
                (payload_columns.with_decoded(decoder, b) for b in batches))
        return pa.RecordBatchReader.from_batches(schema, batches)

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

    def schema_usage(self, topics: str | Iterable[str] = "*") -> list[SchemaUsage]:
        """Per topic, side and schema id: the records using it, from which offset and time to
        which, and the producers that wrote them (``segtools schemas --usage``)."""
        return schema_usage([p.directory for p in self.partitions(topics)], self.findings,
                            limit=self.max_decompressed_bytes)

    def payload_decoder(self, decode: bool | str = True,
                        schemas: Iterable[str | os.PathLike[str]] = (),
                        registry: str | None = None) -> PayloadDecoder:
        """The decoder ``decode=`` uses: the schemas of these log dirs' ``_schemas`` topic (or
        of ``schemas``), then a registry; what reading them met joins :attr:`findings`."""
        chain = gather(self.log_dirs, self.findings, schemas=[os.fspath(s) for s in schemas],
                       registry=registry)
        return PayloadDecoder(chain, Modes.parse("schema" if decode is True else str(decode)))

    def records(self, **kwargs) -> Iterator[dict]:
        """One dict per record (``offset``, ``timestamp``, ``key``, ``value``, ...), in log
        order per partition. For bulk work prefer :meth:`to_arrow`."""
        return self._dicts(Level.RECORDS, kwargs)

    def batches(self, **kwargs) -> Iterator[dict]:
        """One dict per record batch (offsets, sizes, codec, producer, CRC check, ...)."""
        return self._dicts(Level.BATCHES, kwargs)

    def segments(self, **kwargs) -> Iterator[dict]:
        """One dict per segment file (offsets, sizes, max timestamp, ...)."""
        return self._dicts(Level.SEGMENTS, kwargs)

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

    def _dicts(self, level: Level, kwargs: dict) -> Iterator[dict]:
        for batch in self.to_arrow(level, **kwargs):
            yield from batch.to_pylist()

    def _reporter(self, strict: bool, on_finding: Callable[[Finding], None] | None
                  ) -> Callable[[Finding], None]:
        sink = on_finding if on_finding is not None else self.findings.append

        def report(f: Finding) -> None:
            if strict and f.severity is Severity.ERROR:
                raise CorruptDataError(f"{f.code}: {f.message}", path=f.path,
                                       position=f.position)
            sink(f)

        return report

    # ------------------------------------------------------------------ analyses

    def verify(self, *, deep: bool = False, topics: str | Iterable[str] = "*",
               partitions: int | Iterable[int] | None = None) -> list[Finding]:
        """Every finding ``segtools verify`` reports for the selected partitions."""
        out = list(self._tree_findings)
        for d in self.log_dirs:
            out += verify_log_dir_files(d, limit=self.max_decompressed_bytes)
        wanted = {id(p.directory) for p in self.partitions(topics, partitions,
                                                           plan.PARTITION_STATES)}
        for d in self.log_dirs:
            for pdir in d.partitions:
                if id(pdir) in wanted:
                    out += verify_partition(d, pdir, deep=deep,
                                            limit=self.max_decompressed_bytes)
        return out

    def transactions(self, *, now: Time | None = None,
                     max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                     topics: str | Iterable[str] = "*",
                     changes: int = CHANGES_PER_ID,
                     analysed: Mapping[str, PartitionAnalysis] | None = None
                     ) -> TransactionsReport:
        """Transactions per partition, hanging ones, open transactional ids (as
        ``segtools transactions``); the latest ``changes`` state changes of each
        transactional id (0: all). ``analysed``: partitions already analysed (by their
        directory's path), walked beside another analysis."""
        pdirs = [p.directory for p in self.partitions(topics, states=plan.PARTITION_STATES)]
        return transactions_report(pdirs, max_timeout_ms=max_timeout_ms,
                                   now=None if now is None else to_millis(now), keep=changes,
                                   limit=self.max_decompressed_bytes, analysed=analysed)

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
        return replay_offsets(pdirs, at=None if at is None else to_millis(at),
                              groups=None if groups is None else list(_tuple(groups)),
                              history=history, topic=topic, partition=partition,
                              limit=self.max_decompressed_bytes)

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
        return results

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
                             at=None if at is None else to_millis(at),
                             limit=self.max_decompressed_bytes)
        return Loaded(loaded.partitions, loaded.skipped, self._loose + loaded.findings,
                      loaded.config_sources)

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
        return retention_report(loaded,
                                now_ms=now, forecast_days=forecast_days, deep=deep,
                                limit=self.max_decompressed_bytes)

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
        store = open_store(remote_store) if remote_store is not None else None
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return tiered_report(loaded, now_ms=now, store=store)

    def what_if(self, changes: Mapping[str, object] | str | None = None, *,
                at: Time | None = None, horizon_days: float = 30.0,
                ingest_bytes_per_s: float | None = None, recommend: bool = False,
                config: str | os.PathLike[str] | None = None,
                configs: Mapping[str, object] | None = None,
                inputs: Loaded | None = None) -> WhatIfReport:
        """Each topic's log lifecycle simulated from its own history to ``horizon_days``
        after ``at`` under today's config and under ``changes`` (``{"segment.bytes":
        134217728}`` or ``"segment.bytes=134217728"``), as ``segtools retention --what-if``;
        ``recommend`` adds the smallest segment change that keeps what retention promises
        (and, without ``changes``, compares against it). ``to_json()``: the CLI's JSON."""
        from segtools.analysis import whatif  # the simulator loads only when asked for
        from segtools.analysis.simulation import Ingest

        try:
            if isinstance(changes, str):
                parsed = whatif.parse_changes(changes)
            elif changes:
                parsed = whatif.parse_changes(",".join(
                    f"{k}={','.join(v) if isinstance(v, tuple | list) else v}"
                    for k, v in changes.items()))
            else:
                parsed = None
        except ValueError as e:
            raise SegtoolsError(str(e)) from None
        loaded = inputs if inputs is not None else self.inputs(at=at, config=config,
                                                               configs=configs)
        return whatif.what_if_report(loaded, parsed, now_ms=_now(at), horizon_days=horizon_days,
                                     ingest=Ingest(ingest_bytes_per_s), recommend=recommend,
                                     limit=self.max_decompressed_bytes)

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
        return compaction_report(loaded,
                                 self.paths, now_ms=now, key=wanted, top=top,
                                 tombstone_limit=tombstone_limit,
                                 limit=self.max_decompressed_bytes)

    def diverge(self, partition: str | None = None) -> list[ReplicaSet]:
        """Copies of the same partition in different log dirs, compared batch by batch."""
        return [compare_copies(key, copies, limit=self.max_decompressed_bytes)
                for key, copies in copies_by_partition(self.log_dirs, partition).items()]


def _now(at: Time | None) -> int:
    """``at`` in epoch ms; the wall clock when not given (as the CLI's ``--at``)."""
    return to_millis(at) if at is not None else int(time.time() * 1000)


def _offsets(value: Offsets | None) -> tuple[dict, int | None]:
    if value is None:
        return {}, None
    if isinstance(value, int):
        return {}, value
    return {t: dict(parts) for t, parts in value.items()}, None


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
         storage_options: Mapping[str, Any] | None = None) -> LogDirs:
    """Walk log dirs, partition dirs or segment files (read-only) into a :class:`LogDirs`.

    A path may be a URI of an object store (``s3://bucket/logs``) or an archive
    (``bundle.tar.gz``); ``storage_options`` configure the store (docs/locations.md)."""
    return LogDirs(paths, max_decompressed_bytes=max_decompressed_bytes,
                   storage_options=storage_options)


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
