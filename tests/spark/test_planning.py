"""The driver's plan: cuts at batch boundaries found in the offset index, small segments
packed together, ``minPartitions`` honoured, and offset/timestamp bounds that make the tasks
read only the byte ranges that can hold the asked records (counted here in bytes)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan
from pyspark_kafkalog.options import Level, parse_options
from pyspark_kafkalog.planning import MIN_TASK_BYTES, plan
from pyspark_kafkalog.pushdown import constraints_from

from segtools.storage.segment import Segment
from tests.builders import make_batch
from tests.spark.inprocess import read, schema_of
from tests.spark.logbuilder import write_partition

RECORDS_PER_BATCH = 100
START_TS = 1_700_000_000_000
TS_STEP = 1000  # each batch's records are 1 s after the previous batch's


def template() -> bytes:
    return make_batch([dict(timestamp_delta=i, offset_delta=i, key=b"key-%05d" % (i % 37),
                            value=b"v" * 90, headers=[]) for i in range(RECORDS_PER_BATCH)],
                      base_timestamp=START_TS)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Two partitions of ~24 MiB in 8 MiB segments, and a handful of tiny ones."""
    root = tmp_path_factory.mktemp("big") / "logs"
    t = template()
    batches = (24 << 20) // len(t)
    for p in range(2):
        write_partition(root / f"events-{p}", t, batches=batches, segment_bytes=8 << 20,
                        start_ts=START_TS, ts_step=TS_STEP)
    for p in range(5):
        write_partition(root / f"tiny-{p}", t, batches=3, segment_bytes=8 << 20)
    return root, batches


def batch_positions(path) -> set[int]:
    with Segment(path) as s:
        return set(s.table(verify_crc=False)[0].position.tolist())


def ranges(tasks):
    return [r for t in tasks for r in t.ranges]


def test_cuts_are_batch_boundaries_and_cover_every_batch_once(big):
    root, _batches = big
    tasks = plan(parse_options({"path": str(root)}), cores=4)
    assert len(tasks) >= 4  # one per core for a tree this size
    pieces = ranges(tasks)
    by_segment: dict[str, list] = {}
    for r in pieces:
        by_segment.setdefault(str(r.files.log), []).append(r)
    for log, parts in by_segment.items():
        starts = batch_positions(log)
        parts.sort(key=lambda r: r.start)
        assert parts[0].start == 0 and parts[-1].end == parts[-1].files.log_size
        for a, b in itertools.pairwise(parts):
            assert a.end == b.start and b.start in starts
    sizes = [t.bytes for t in tasks]
    assert max(sizes) <= 2 * min(s for s in sizes if s > 1 << 20)


def test_small_segments_are_packed_together(big):
    root, _ = big
    tasks = plan(parse_options({"path": str(root), "topics": "tiny"}), cores=2)
    assert len(tasks) == 1 and len(tasks[0].ranges) == 5
    assert tasks[0].bytes < MIN_TASK_BYTES


def test_a_big_tree_gets_one_task_per_core_in_whole_rounds(big):
    """Two tasks per core cost each reused Python worker Spark's clean-up and a task's set-up
    twice as often (a fifth of a worker's CPU for a count of one-record batches, and none
    of it buys rows): a tree that fills the cores gets one task per core, as Spark's own
    file sources. A count past one round is rounded up to whole rounds: five tasks on two
    cores leave one core idle while the fifth runs."""
    root, _ = big
    assert len(plan(parse_options({"path": str(root)}), cores=2)) == 2
    assert len(plan(parse_options({"path": str(root)}), cores=3)) == 3
    rounds = plan(parse_options({"path": str(root), "maxPartitionBytes": str(10 << 20)}),
                  cores=2)
    assert len(rounds) == 6  # five by the bytes alone


def test_max_partition_bytes_caps_the_bytes_read(big):
    """Two partitions of P bytes with ``maxPartitionBytes`` P are two tasks of P bytes: the
    cost of opening each segment (which shares the work out evenly) is not bytes read, and
    counted as such it made a third task, and so a second round of the cores."""
    root, batches = big
    partition = batches * len(template())
    tasks = plan(parse_options({"path": str(root), "topics": "events",
                                "maxPartitionBytes": str(partition)}), cores=2)
    assert [t.bytes for t in tasks] == [partition, partition]


def test_min_partitions_is_honoured(big):
    root, _ = big
    assert len(plan(parse_options({"path": str(root), "minPartitions": "24"}), cores=1)) >= 24
    assert len(plan(parse_options({"path": str(root), "minPartitions": "3"}), cores=1)) >= 3


def test_reading_a_split_plan_returns_every_record_once(big):
    root, batches = big
    table = read({"path": str(root / "events-1"), "minPartitions": 7},
                 schema_of(Level.RECORDS, "offset", "partition"))
    offsets = table.column("offset").to_pylist()
    assert len(offsets) == len(set(offsets)) == batches * RECORDS_PER_BATCH


def test_offset_range_reads_only_the_bytes_that_hold_it(big):
    root, batches = big
    start, end = 70_000, 90_000
    opts = {"path": str(root), "topics": "events",
            "startingOffsets": json.dumps({"events": {"0": start, "1": -2}}),
            "endingOffsets": json.dumps({"events": {"0": end}})}
    tasks = plan(parse_options(opts), cores=2)
    p0 = [r for r in ranges(tasks) if r.partition.partition == 0]
    needed = (end - start) // RECORDS_PER_BATCH * len(template())
    planned = sum(r.size for r in p0)
    assert needed <= planned <= needed + 3 * 4096 + 2 * len(template())
    table = read(opts, schema_of(Level.RECORDS, "partition", "offset"))
    got = [o for p, o in zip(table.column("partition").to_pylist(),
                             table.column("offset").to_pylist(), strict=True) if p == 0]
    assert sorted(got) == list(range(start, end))
    assert table.num_rows - len(got) == batches * RECORDS_PER_BATCH  # partition 1: all


def test_timestamp_range_is_resolved_through_the_time_index(big):
    root, _ = big
    first_batch, last_batch = 1234, 1500
    opts = {"path": str(root / "events-0"),
            "startingTimestamp": START_TS + first_batch * TS_STEP + 50,
            "endingTimestamp": START_TS + last_batch * TS_STEP}
    tasks = plan(parse_options(opts), cores=2)
    planned = sum(t.bytes for t in tasks)
    assert planned <= (last_batch - first_batch + 3) * len(template()) + 3 * 4096
    offsets = read(opts, schema_of(Level.RECORDS, "offset")).column("offset").to_pylist()
    # the first record at/after the start time is record 50 of batch 1234 (1 ms apart)
    assert min(offsets) == first_batch * RECORDS_PER_BATCH + 50
    assert max(offsets) == last_batch * RECORDS_PER_BATCH - 1


def test_timestamp_after_the_last_record_reads_nothing(big):
    root, _ = big
    opts = {"path": str(root / "events-0"), "startingTimestamp": START_TS + 10**9}
    assert plan(parse_options(opts), cores=2) == []
    assert read(opts, schema_of(Level.RECORDS, "offset")).num_rows == 0


def test_pushed_filters_prune_partitions_segments_and_bytes(big):
    root, batches = big
    total = batches * len(template())
    filters = [EqualTo(("partition",), 1), GreaterThanOrEqual(("offset",), 200_000),
               In(("topic",), ["events", "other"])]
    constraints = constraints_from(filters)
    tasks = plan(parse_options({"path": str(root)}), constraints, cores=2)
    assert {r.partition.topic for r in ranges(tasks)} == {"events"}
    assert {r.partition.partition for r in ranges(tasks)} == {1}
    planned = sum(t.bytes for t in tasks)
    assert planned < total - 200_000 // RECORDS_PER_BATCH * len(template()) + 3 * 4096
    table = read({"path": str(root), "pushdown": True},
                 schema_of(Level.RECORDS, "topic", "partition", "offset"), filters)
    assert min(table.column("offset").to_pylist()) >= 199_000  # pruned, Spark re-filters
    assert set(table.column("partition").to_pylist()) == {1}


def test_pushed_timestamp_lower_bound_skips_old_segments_and_batches(big):
    import datetime as dt

    root, batches = big
    cut = START_TS + (batches - 100) * TS_STEP
    when = dt.datetime.fromtimestamp(cut / 1000, dt.UTC)
    filters = [GreaterThanOrEqual(("timestamp",), when), LessThan(("partition",), 1)]
    table = read({"path": str(root / "events-0"), "pushdown": True},
                 schema_of(Level.RECORDS, "offset", "timestamp"), filters)
    assert table.num_rows <= 101 * RECORDS_PER_BATCH
    ts = table.column("timestamp").cast("int64").to_pylist()
    assert sum(t // 1000 >= cut for t in ts) == 100 * RECORDS_PER_BATCH


def test_starting_timestamp_on_kafka_fixtures_matches_a_brute_force(trees):
    from tests.spark.conftest import expected_rows

    rows = [r for r in expected_rows() if r["topic"] == "orders.v2-eu" and r["partition"] == 1]
    for target in sorted({r["timestamp"] for r in rows if r["timestamp"]})[::7]:
        want = next(r["offset"] for r in sorted(rows, key=lambda r: r["offset"])
                    if r["timestamp"] is not None and r["timestamp"] >= target)
        got = read({"path": str(trees / "sample" / "orders.v2-eu-1"),
                    "startingTimestamp": target}, schema_of(Level.RECORDS, "offset"))
        assert min(got.column("offset").to_pylist()) == want


def test_named_partition_must_exist(trees):
    from pyspark_kafkalog.options import OptionError

    with pytest.raises(OptionError, match="names nope-3"):
        plan(parse_options({"path": str(trees), "startingOffsets": '{"nope": {"3": 5}}'}))


def test_an_executor_does_not_import_the_tiered_replay():
    """Every executor imports the planner to unpickle its task; the replay of
    ``__remote_log_metadata`` (about a fifth of that import) is loaded only by a read with a
    remote store."""
    code = ("import sys, pyspark_kafkalog.scan; print([m for m in ('segtools.analysis.tiered', "
            "'segtools.analysis.remote_input') if m in sys.modules])")
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "spark"), str(root)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
