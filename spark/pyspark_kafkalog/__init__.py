"""``kafkalog``: Kafka log directories as Spark DataFrames, read with the segtools core.

    spark.read.format("kafkalog").load("/var/kafka-logs")

Spark 4 finds this source by itself: at the first unknown ``format(...)`` it imports every
top-level module named ``pyspark_*`` and registers each ``DefaultSource`` under its ``name()``.
That lookup runs once per JVM, in the Python of ``PYSPARK_PYTHON``, and is skipped entirely if
any ``pyspark_*`` module fails to import, so :func:`register` does the same explicitly. This
module therefore imports only Spark's ``DataSource``: the lookup imports it in a Python of its
own just to find :class:`DefaultSource`, and the options, the schema (pyarrow, numpy, the
batch format) and the planner are imported by the method that needs them, in the planner
process that calls it (``schema()`` at ``load()``, ``reader()`` at the first action). The
analyses live in :mod:`pyspark_kafkalog.analyses`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["FORMAT", "DefaultSource", "enable_pushdown", "register"]

FORMAT = "kafkalog"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class DefaultSource(DataSource):
    """The ``kafkalog`` data source (batch reads). Options: see docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        from pyspark_kafkalog.options import parse_options
        from pyspark_kafkalog.schema import default_schema

        opts = parse_options(self.options)
        return default_schema(opts.level, opts.include_headers, opts.remote_store is not None,
                              strings=opts.strings, decode=opts.decode is not None)

    def reader(self, schema: StructType) -> DataSourceReader:
        from pyspark_kafkalog.options import parse_options
        from pyspark_kafkalog.reader import KafkaLogReader, PushdownKafkaLogReader

        opts = parse_options(self.options)
        if opts.pushdown:
            return PushdownKafkaLogReader(opts, schema)
        return KafkaLogReader(opts, schema)


def register(spark: SparkSession) -> None:
    """Register ``kafkalog`` on this session: needed when Spark's automatic lookup did not see
    the package (another ``pyspark_*`` module broke it, or ``PYSPARK_PYTHON`` is another
    Python, or the package was installed after the JVM started)."""
    spark.dataSource.register(DefaultSource)


def enable_pushdown(spark: SparkSession) -> None:
    """Turn on Spark's Python filter pushdown, which ``.option("pushdown", "true")`` needs."""
    spark.conf.set(PUSHDOWN_CONF, "true")
