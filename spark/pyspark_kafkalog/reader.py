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

from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pyspark_kafkalog.options import ReadOptions
from pyspark_kafkalog.planning import plan
from pyspark_kafkalog.pushdown import Constraints, constraints_from
from pyspark_kafkalog.scan import make_scan, read_task
from pyspark_kafkalog.schema import requested_columns, text_payloads
from segtools.fetch.stream import payloads_as_text


class KafkaLogReader(DataSourceReader):
    """Reads the rows of a ``level`` (records, batches or segments) for the given schema."""

    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        self.schema = schema
        self.columns = requested_columns(schema, opts.level)  # fails early on a bad name
        self.constraints: Constraints | None = None

    def partitions(self) -> list[InputPartition]:
        return list(plan(self.opts, self.constraints))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        arrow, text = text_payloads(to_arrow_schema(self.schema, timezone="UTC"))
        batches = read_task(partition, make_scan(self.opts, self.columns, arrow),
                            self.opts.fail_on_corruption, self.opts.storage_secrets)
        return map(payloads_as_text, batches) if text else batches


class PushdownKafkaLogReader(KafkaLogReader):
    """The same reader, also taking hints from pushed filters (opt-in, see module doc)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Use the simple filters to prune, and give every filter back: Spark re-checks them
        all, so correctness never depends on the pruning."""
        self.constraints = constraints_from(filters)
        return filters
