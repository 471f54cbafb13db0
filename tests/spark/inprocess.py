"""Run the source without a JVM: plan as the driver does, pickle, read as an executor does."""

from __future__ import annotations

import pickle

import pyarrow as pa
from pyspark.sql.types import StructField, StructType
from pyspark_kafkalog import DefaultSource
from pyspark_kafkalog.schema import FIELDS


def schema_of(level, *names: str) -> StructType:
    types = dict(FIELDS[level])
    return StructType([StructField(n, types[n]) for n in names])


def plan(options: dict, schema: StructType | None = None, filters=None):
    source = DefaultSource({k: str(v) for k, v in options.items()})
    reader = source.reader(schema if schema is not None else source.schema())
    if filters is not None:
        list(reader.pushFilters(filters))
    reader = pickle.loads(pickle.dumps(reader))  # Spark pickles it before partitions()
    return reader, reader.partitions()


def read(options: dict, schema: StructType | None = None, filters=None) -> pa.Table:
    reader, tasks = plan(options, schema, filters)
    batches = [b for task in tasks for b in reader.read(pickle.loads(pickle.dumps(task)))]
    if not batches:
        from pyspark.sql.pandas.types import to_arrow_schema
        return to_arrow_schema(reader.schema, timezone="UTC").empty_table()
    return pa.Table.from_batches(batches)


def rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()
