"""The simulation's input built from the source's rows (``segtools.analysis.simulation_input``,
what ``analyses.what_if`` runs on the executors) is the input the CLI builds from the files
(``whatif.history``), array for array, for each partition of the ``whatif`` tree: a
delete-only one from its batch rows (given shuffled: the builder restores log order), the
compacted one from its record rows. Read in-process as an executor reads (no JVM)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pyarrow as pa
from pyspark_kafkalog import analyses

import segtools
from segtools.analysis import simulation_input as si
from segtools.analysis import whatif
from segtools.fetch.columns import Level
from tests.fixtures_manifest import FIXTURES
from tests.spark.inprocess import read, schema_of

TREE = FIXTURES / "logdirs" / "whatif"
CONFIG = FIXTURES / "configs" / "whatif-topic-configs.txt"
RECORD_COLUMNS = [f.strip().split(" ")[0] for f in analyses.COMPACTION_RECORDS.split(",")]


def same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.dtype == y.dtype and np.array_equal(x, y), f.name


def test_histories_from_rows_are_the_histories_from_files():
    inputs = segtools.open(TREE).inputs(config=CONFIG).partitions
    assert {pi.config.compact for pi in inputs} == {True, False}
    for pi in inputs:
        want = whatif.history(pi)
        assert want.batches > 0
        batches = read({"path": str(TREE), "level": "batches", "topics": pi.topic})
        if pi.config.compact:
            records = read({"path": str(TREE), "includeControl": "true", "topics": pi.topic},
                           schema_of(Level.RECORDS, *RECORD_COLUMNS))
            empty = [dict(b, max_timestamp=m, delete_horizon=d) for b, m, d in zip(
                batches.to_pylist(), analyses._ms(batches.column("max_timestamp")),
                analyses._ms(batches.column("delete_horizon")), strict=True) if b["count"] == 0]
            got = si.from_record_rows(analyses._record_rows(records), empty)
        else:
            rows = batches.to_pylist()
            random.Random(7).shuffle(rows)
            cols = {c: [r[c] for r in rows] for c in si.BATCH_COLUMNS}
            cols["max_timestamp"] = analyses._ms(pa.chunked_array(
                [pa.array([r["max_timestamp"] for r in rows],
                          batches.schema.field("max_timestamp").type)]))
            got = si.from_batch_rows(cols)
        same(got, want)
