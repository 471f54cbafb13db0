"""The ``DataSourceReader``s: plan on the driver, read on the executors.

Two classes on purpose. Spark 4.3 refuses *every* query on a reader class that overrides
``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled`` is true
(docs/spark-datasource-api.md §4), so the plain reader has no ``pushFilters`` at all and the
pushdown reader is returned only when the
user asks for it with ``.option("pushdown", "true")`` (and has enabled the configuration,
e.g. with :func:`pyspark_kafkalog.enable_pushdown`).

The reader is pickled before ``partitions()`` runs and again for the executors, so it holds
only plain values: the parsed options, the schema and the pushed constraints.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import lazy_loader
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pyspark_kafkalog.options import ReadOptions
from pyspark_kafkalog.planning import plan
from pyspark_kafkalog.pushdown import Constraints, constraints_from
from pyspark_kafkalog.schema import DecodePlan, requested_columns, text_payloads
from segtools.fetch.stream import payloads_as_text
from segtools.storage import gentle
from segtools.storage.logdirs import walk
from segtools.storage.scope import LocationScope
from segtools.storage.throttle import ReadRate

if TYPE_CHECKING:
    from segtools.payloads.decoder import PayloadDecoder

log = logging.getLogger("pyspark_kafkalog")

#: The payload decoder, its columns and the schemas' sources load only for a read with
#: ``decode``: every Python process that unpickles a reader (the driver's planner, each
#: executor's Python worker as it starts) would otherwise import them for nothing: 15 ms of
#: CPU there for the decoder and the sources, a seventh of the source's own imports, and
#: about as much for the columns (docs/spark.md, "The first query").
_decoder = lazy_loader.load("segtools.payloads.decoder", suppress_warning=True)
_sources = lazy_loader.load("segtools.payloads.sources", suppress_warning=True)
_columns = lazy_loader.load("segtools.payloads.columns", suppress_warning=True)
#: The read path (the record columns' builder, the batch walk's threads, the summaries)
#: loads where a task is read: the driver's planner unpickles the reader only to plan, and
#: a fresh session's first action starts that planner (24 ms of its CPU here).
_scan = lazy_loader.load("pyspark_kafkalog.scan", suppress_warning=True)


class KafkaLogReader(DataSourceReader):
    """Reads the rows of a ``level`` (records, batches or segments) for the given schema."""

    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        # with decode, the files are read for the record columns of the schema (and what the
        # decoding needs); the decode columns asked for are added to each batch
        self.plan = DecodePlan.of(schema, opts.level) if opts.decode is not None else None
        self.schema = self.plan.read if self.plan is not None else schema
        self.columns = requested_columns(self.schema, opts.level)  # fails early on a bad name
        self.constraints: Constraints | None = None
        # the schemas are read once, here on the driver, and travel to the executors with
        # the reader (plain values: no compiled schema exists yet)
        self.payloads = payload_decoder(opts) if self.plan is not None and self.plan.decoded \
            else None

    def partitions(self) -> list[InputPartition]:
        """The plan (the driver reads listings and indexes: as gently as the executors)."""
        with gentle.applied(self._gentle()), LocationScope(self.opts.all_storage_options):
            return list(plan(self.opts, self.constraints))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The task's rows, read as gently as the CLI would on this host (a broker's lock
        held: the page cache restored; ``maxReadRate``: capped for this task's executor, the
        bucket shared by its concurrent tasks), on the cores Spark gave the task."""
        arrow, text = text_payloads(to_arrow_schema(self.schema, timezone="UTC"))
        scan = _scan.make_scan(self.opts, self.columns, arrow)
        settings = on_task_cores(self._gentle(), task_cpus())
        if settings.rate is not None:
            settings = replace(settings, rate=ReadRate.for_executor(settings.rate.rate))
        with gentle.applied(settings):
            batches = _scan.read_task(partition, scan, self.opts.fail_on_corruption,
                                self.opts.storage_secrets)
            if self.plan is not None and self.payloads is not None:
                # decoded from the bytes, before they become text
                batches = (self.plan.assemble(b, _columns.decoded_columns(self.payloads, b,
                                                                          self.plan.decoded))
                           for b in batches)
            yield from (map(payloads_as_text, batches) if text else batches)

    def _gentle(self) -> gentle.Gentle:
        return gentle.decide(self.opts.paths, page_cache=self.opts.page_cache,
                             max_read_rate=self.opts.max_read_rate)


def task_cpus() -> int | None:
    """The cores Spark gave the running task (``spark.task.cpus``, 1 unless set); None
    outside a task (a read in the driver's own process, or in a test)."""
    context = TaskContext.get()
    return None if context is None else context.cpus()


def on_task_cores(settings: gentle.Gentle, cpus: int | None) -> gentle.Gentle:
    """A task's read on the cores Spark gave it, not on every core of the host.

    Spark runs a task per core (``spark.task.cpus`` each), and beside each task's Python
    worker a JVM thread turns its Arrow batches into rows, which costs more than the read
    itself: the cores are full. A read that walks a chunk ahead on a thread of its own
    (``rows.owned``, when ``fanout.workers()`` says there is a spare core) then only adds
    hand-offs between its threads, and its threads wait for the cores and the GIL behind the
    other tasks (docs/performance.md, "Spark": the workers' CPU per row of a warm count, with
    the walk inline and on its thread). A gentle run's own cap (``jobs``) still applies."""
    if cpus is None or cpus < 1:
        return settings
    return replace(settings, jobs=cpus if settings.jobs is None else min(cpus, settings.jobs))


class PushdownKafkaLogReader(KafkaLogReader):
    """The same reader, also taking hints from pushed filters (opt-in, see module doc)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Use the simple filters to prune, and give every filter back: Spark re-checks them
        all, so correctness never depends on the pruning."""
        self.constraints = constraints_from(filters)
        return filters


def payload_decoder(opts: ReadOptions) -> PayloadDecoder:
    """The decoder of the ``decode`` option: the ``_schemas`` topic of the paths read (or of
    ``schemas``), then ``schemaRegistry``; what reading them met is logged on the driver."""
    findings: list = []
    with LocationScope(opts.all_storage_options):
        log_dirs, _ = walk(opts.paths, opts.all_storage_options)
        chain = _sources.gather(log_dirs, findings, schemas=opts.schemas,
                                registry=opts.schema_registry,
                                say=lambda line: log.info("kafkalog: %s", line))
    for f in findings:
        log.warning("kafkalog: %s: %s: %s", f.path, f.code, f.message)
    return _decoder.PayloadDecoder(chain, _decoder.Modes.parse(opts.decode or "schema"))
