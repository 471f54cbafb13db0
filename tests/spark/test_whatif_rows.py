"""The simulation's input built from the source's rows (``segtools.analysis.simulation_input``,
what ``analyses.what_if`` runs on the executors), for each partition of the ``whatif`` tree,
held to what Kafka's own reader returned for the same files (``fixtures/expected``, dumped by
the Java generator with ``FileRecords``): a delete-only partition from its batch rows (given
shuffled: the builder restores log order), a compacted one from its record rows. The
expectation shares no code with the builders, so a bug in either (or in the path from the
files, checked against the same expectation) shows. Read in-process as an executor reads (no
JVM)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark_kafkalog import analyses

import segtools
from segtools.analysis import simulation_input as si
from segtools.fetch.columns import Level
from tests.fixtures_manifest import FIXTURES
from tests.spark.inprocess import read, schema_of

TREE = FIXTURES / "logdirs" / "whatif"
EXPECTED = FIXTURES / "expected" / "whatif"
CONFIG = FIXTURES / "configs" / "whatif-topic-configs.txt"
RECORD_COLUMNS = [f.strip().split(" ")[0] for f in analyses.COMPACTION_RECORDS.split(",")]


def kafka_reader(partition: str) -> tuple[list[int], list[dict], list[list[dict]]]:
    """The segment base offsets (file names), batches and each batch's records, in log order,
    as Kafka's reader dumped them."""
    bases, batches, records = [], [], []
    for path in sorted(Path(EXPECTED / partition).glob("*.jsonl")):
        bases.append(int(path.stem))
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["type"] == "batch":
                batches.append(row)
                records.append([])
            elif row["type"] == "record":
                records[-1].append(row)
    return bases, batches, records


def expect_batches(h: si.History, partition: str) -> None:
    """A delete-only partition: one unit per batch; its bytes and largest timestamp from the
    batch header, its oldest record the smallest of its records' timestamps."""
    bases, batches, records = kafka_reader(partition)
    assert h.segment_bases.tolist() == bases
    assert h.batch_offset.tolist() == [b["base_offset"] for b in batches]
    assert h.batch_last.tolist() == [b["last_offset"] for b in batches]
    assert h.batch_ts.tolist() == [b["max_timestamp"] for b in batches]
    assert h.batch_size.tolist() == [b["size"] for b in batches]
    assert h.unit_batch.tolist() == list(range(len(batches)))
    assert h.oldest_ts.tolist() == [min(r["timestamp"] for r in rs) for rs in records]
    assert h.unit_ts.tolist() == h.batch_ts.tolist()


def expect_records(h: si.History, partition: str) -> None:
    """A compacted partition: one unit per record, its batch's bytes shared by its records, a
    key id that is equal exactly where the keys are, a tombstone where the value is null."""
    bases, batches, records = kafka_reader(partition)
    assert h.segment_bases.tolist() == bases
    assert h.batch_offset.tolist() == [b["base_offset"] for b in batches]
    assert h.batch_size.tolist() == [b["size"] for b in batches]
    flat = [(i, r) for i, rs in enumerate(records) for r in rs]
    assert h.unit_batch.tolist() == [i for i, _ in flat]
    assert h.unit_offset.tolist() == [r["offset"] for _, r in flat]
    assert h.unit_ts.tolist() == [r["timestamp"] for _, r in flat]
    assert np.allclose(h.unit_size, [batches[i]["size"] / len(records[i]) for i, _ in flat])
    assert h.unit_tombstone.tolist() == [r["value"] is None for _, r in flat]
    keys = [r["key"] for _, r in flat]
    ids = h.unit_key.tolist()
    assert all((keys[a] == keys[b]) == (ids[a] == ids[b])
               for a in range(len(keys)) for b in range(a, min(a + 40, len(keys))))
    assert len(set(ids)) == len(set(keys))


def test_histories_from_rows_hold_to_kafkas_reader():
    inputs = segtools.open(TREE).inputs(config=CONFIG).partitions
    assert {pi.config.compact for pi in inputs} == {True, False}
    for pi in inputs:
        label = f"{pi.topic}-{pi.partition}"
        batches = read({"path": str(TREE), "level": "batches", "topics": pi.topic})
        segments = read({"path": str(TREE), "level": "segments", "topics": pi.topic})
        seg_bases = segments.column("base_offset").to_pylist()
        seg_bytes = sum(segments.column("size").to_pylist())
        if pi.config.compact:
            records = read({"path": str(TREE), "includeControl": "true", "topics": pi.topic},
                           schema_of(Level.RECORDS, *RECORD_COLUMNS))
            empty = [dict(b, max_timestamp=m, delete_horizon=d) for b, m, d in zip(
                batches.to_pylist(), analyses._ms(batches.column("max_timestamp")),
                analyses._ms(batches.column("delete_horizon")), strict=True) if b["count"] == 0]
            got = si.from_record_rows(analyses._record_rows(records), empty)
            check = expect_records
        else:
            rows = batches.to_pylist()
            random.Random(7).shuffle(rows)
            cols = {c: [r[c] for r in rows] for c in si.BATCH_COLUMNS}
            for name in ("base_timestamp", "max_timestamp"):
                cols[name] = analyses._ms(pa.chunked_array(
                    [pa.array([r[name] for r in rows], batches.schema.field(name).type)]))
            got = si.from_batch_rows(cols)
            check = expect_batches
        got = si.on_disk(got, seg_bases, seg_bytes)
        check(got, label)
        check(si.history(pi), label)  # the files' path, held to the same expectation
        assert got.disk_bytes == si.history(pi).disk_bytes == sum(
            (TREE / label / f"{b:020d}.log").stat().st_size for b in seg_bases)
