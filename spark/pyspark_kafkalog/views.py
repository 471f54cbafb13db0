"""``segtools query``'s views on Spark: the same names and columns, so a query written in
portable SQL for the CLI runs unchanged on a cluster.

``records``, ``batches`` and ``segments`` are the ``kafkalog`` source at that level, loaded
with every column the CLI's view has (the source builds only those, on the executors). The
views that are analyses of the whole tree (``findings``, ``retention``, ``producers``,
``transactions``, ``offsets``, ``schemas``) are small: the driver computes them with the same
functions the CLI's views call (:mod:`segtools.sql.views`) and hands Spark the Arrow table.
With ``decode``, every topic with a value subject (Avro, Protobuf, JSON Schema) gets its typed
view, as the CLI's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructField, StructType

from pyspark_kafkalog import FORMAT, payloads
from pyspark_kafkalog.schema import FIELDS, decoded_fields
from segtools.api import LogDirs
from segtools.fetch import arguments
from segtools.fetch.columns import Level
from segtools.payloads import shapes
from segtools.sql import engine
from segtools.sql.pushdown import Pushdown
from segtools.sql.views import VIEWS, Options, record_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["register_views"]

#: the views the source reads on the executors; the rest are computed on the driver
SOURCE_LEVELS = {"records": Level.RECORDS, "batches": Level.BATCHES,
                 "segments": Level.SEGMENTS}


def _schema(level: Level, names: Iterable[str], decode: bool) -> StructType:
    types = dict(FIELDS[level])
    fields = [StructField(n, types[n]) for n in names if n in types]
    return StructType(fields + (decoded_fields() if decode else []))


def register_views(spark: SparkSession, *paths: str | os.PathLike[str],
                   decode: bool | str = False, schemas: Iterable[str] = (),
                   schema_registry: str | None = None, at: object = None,
                   states: str | Iterable[str] = "live",
                   include_control: bool = False) -> list[str]:
    """Create (or replace) the temporary views of ``segtools query`` over ``paths``; returns
    their names. ``at``: the moment the retention and transactions views answer for, as
    ``segtools query --at`` (epoch ms, ISO-8601 or an aware datetime; default: now);
    ``states``, ``include_control``: as ``--states`` and ``--include-control`` (the source's
    ``partitionStates`` and ``includeControl``)."""
    places = [os.fspath(p) for p in paths]
    options = Options(decode, tuple(schemas), schema_registry,
                      at_ms=arguments.moment_or_now(at),
                      states=arguments.states(states, "states"),
                      include_control=arguments.boolean(include_control, "include_control"))
    tree = LogDirs(places)
    names = []
    for name, level in SOURCE_LEVELS.items():
        columns = (record_columns(Options()) if level is Level.RECORDS
                   else tuple(n for n, _ in FIELDS[level] if n != "tier"))
        reader = (spark.read.format(FORMAT)
                  .schema(_schema(level, columns, bool(decode) and level is Level.RECORDS))
                  .option("level", level.value).option("paths", json.dumps(places))
                  .option("partitionStates", ",".join(options.states))
                  .option("includeControl", str(options.include_control).lower()))
        if decode and level is Level.RECORDS:
            reader = reader.option("decode", "true" if decode is True else str(decode))
            if options.schemas:
                reader = reader.option("schemas", ",".join(options.schemas))
            if schema_registry is not None:
                reader = reader.option("schemaRegistry", schema_registry)
        reader.load().createOrReplaceTempView(name)
        names.append(name)
    for name, view in VIEWS.items():
        if name in SOURCE_LEVELS:
            continue
        table = view(tree, Pushdown(), options).read_all()
        spark.createDataFrame(table.to_pylist(), schema=from_arrow_schema(table.schema)
                              ).createOrReplaceTempView(name)
        names.append(name)
    if decode:
        names += _typed_views(spark, tree, options)
    return names


def _typed_views(spark: SparkSession, tree: LogDirs, options: Options) -> list[str]:
    """A view per topic with a value subject: the CLI's columns, the fields typed by the
    same mapping (:mod:`segtools.payloads.shapes`)."""
    history = engine.schema_history(tree, options)
    if history is None:
        return []
    records: DataFrame = spark.table("records")
    out = []
    for topic in tree.topics:
        if topic.lower() in VIEWS:
            continue
        shape = shapes.topic_shape(history, topic)
        if shape is None:
            continue
        frame = (records.where(F.col("topic") == topic)
                 .withColumn(payloads.PARSED, payloads.parsed(shape))
                 .select(*engine.kept_columns(shape.columns),
                         payloads.typed_struct(shape).alias(payloads.PARSED))
                 .select(*engine.kept_columns(shape.columns), f"{payloads.PARSED}.*"))
        frame.createOrReplaceTempView(f"`{topic.replace('`', '``')}`")
        out.append(topic)
    return out
