"""The ceiling of ``bench_spark``: a Python data source that does nothing but hand Spark rows.

It yields one ready-made Arrow batch over and over, with kafkalog's schema, tasks and row
count: what Spark's Python data source plumbing can take in at best. A module of its own, so
that what a Python worker imports to run it is Spark's and pyarrow's, and nothing of segtools
or of the benchmarks: its first count in a fresh session is then Spark's own first-query cost
(the Python workers' start, the planners' start, the JVM's cold code), against which
kafkalog's first count is compared. The schema is the reader's (``.schema(...)`` at load), so
neither the driver's planners nor the executors import the source's modules for it.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

NAME = "kafkalog_ceiling"
#: Rows per Arrow batch, as kafkalog's one-record batches give (a walk chunk's 65,536 batches).
BATCH_ROWS = 65536


@functools.cache
def _ready_batch(schema_json: str, rows: int, topic: str, log_dir: str,
                 value_bytes: int) -> pa.RecordBatch:
    """One Arrow batch shaped like kafkalog's rows (10-byte keys, values of the shape's size,
    the same topic and log dir strings), built once per Python worker and then yielded as is."""
    target = to_arrow_schema(StructType.fromJson(json.loads(schema_json)), timezone="UTC")
    i = np.arange(rows)
    values = {
        "key": pa.array([b"key-%06d" % (k % 5000) for k in range(rows)], pa.binary()),
        "value": pa.array([b"v" * value_bytes] * rows, pa.binary()),
        "topic": pa.array([topic] * rows), "partition": pa.array(np.zeros(rows, np.int32)),
        "offset": pa.array(i), "timestamp": pa.array(i * 1000, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array(np.zeros(rows, np.int32)),
        "log_dir": pa.array([log_dir] * rows),
        "segment_base_offset": pa.array(np.zeros(rows, np.int64)),
        "position": pa.array(i), "producer_id": pa.array(np.full(rows, -1, np.int64)),
        "producer_epoch": pa.array(np.full(rows, -1, np.int32)),
        "leader_epoch": pa.array(np.zeros(rows, np.int32)),
        "is_transactional": pa.array(np.zeros(rows, bool)),
        "is_control": pa.array(np.zeros(rows, bool)),
        "compression": pa.array(["none"] * rows), "crc_valid": pa.array(np.ones(rows, bool)),
        "magic": pa.array(np.full(rows, 2, np.int32)),
    }
    return pa.RecordBatch.from_arrays([values[f.name] for f in target], schema=target)


class _CeilingReader(DataSourceReader):
    def __init__(self, schema: StructType, tasks: int, rows: int, topic: str, log_dir: str,
                 value_bytes: int):
        self.schema_json = schema.json()
        self.tasks, self.rows, self.topic = tasks, rows, topic
        self.log_dir, self.value_bytes = log_dir, value_bytes

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition: InputPartition):
        share = self.rows // self.tasks + (partition.value < self.rows % self.tasks)
        batch = _ready_batch(self.schema_json, min(BATCH_ROWS, share), self.topic,
                             self.log_dir, self.value_bytes)
        while share > 0:
            yield batch if share >= batch.num_rows else batch.slice(0, share)
            share -= batch.num_rows


class CeilingSource(DataSource):
    """Options: ``tasks``, ``rows``, ``topic``, ``logDir``, ``valueBytes``; the schema is
    given at load (kafkalog's default record schema)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def reader(self, schema: StructType) -> DataSourceReader:
        o = self.options
        return _CeilingReader(schema, int(o["tasks"]), int(o["rows"]), o["topic"], o["logdir"],
                              int(o["valuebytes"]))
