"""fetch/, tested directly (not only through the faces): a selection becomes byte-range
plans, the plans become Arrow rows, and the column declarations answer for every level. On
the Kafka-written sample tree, against what the deep decode of the same segments gives."""

from __future__ import annotations

import pyarrow as pa
import pytest

from segtools.analysis.partition_log import as_partition, iter_records
from segtools.fetch import columns, plan, rows
from segtools.fetch.columns import ColumnError, Level
from tests.fixtures_manifest import SAMPLE

TXN = SAMPLE / "payments.txn-0"


def read(sel: plan.Selection, names: tuple[str, ...]) -> pa.Table:
    schema = columns.schema(sel.level, names)
    scan = rows.Scan(sel.level, names, schema, include_control=sel.include_control,
                     read_committed=sel.read_committed)
    found = []
    batches = list(rows.read(plan.ranges(sel), scan, found.append))
    assert found == []
    return pa.Table.from_batches(batches, schema=schema)


def decoded(path) -> list[tuple[int, bytes | None]]:
    """Every data record of a partition as the deep decode reads it: (offset, key)."""
    return [(lr.record.offset, lr.record.key)
            for lr in iter_records(as_partition(path), [], want=lambda t: ~t.is_control)]


def test_a_selection_plans_one_range_per_segment_of_the_chosen_partitions():
    pieces = plan.ranges(plan.Selection((str(SAMPLE),), topics=("payments.txn",)))
    assert [(p.partition.topic, p.partition.partition, p.files.base_offset) for p in pieces] \
        == [("payments.txn", 0, 0), ("payments.txn", 0, 20)]
    assert all(p.start == 0 and p.end == p.files.log.stat().st_size for p in pieces)


def test_offset_bounds_narrow_the_plan_and_the_rows():
    sel = plan.Selection((str(TXN),), starting_offset=21, ending_offset=26)
    pieces = plan.ranges(sel)
    assert [p.files.base_offset for p in pieces] == [20]
    got = read(sel, ("offset", "key"))
    assert got.column("offset").to_pylist() == [o for o, _ in decoded(TXN) if 21 <= o < 26]


def test_record_rows_are_the_deep_decode():
    got = read(plan.Selection((str(TXN),)), ("offset", "key"))
    assert list(zip(got.column("offset").to_pylist(), got.column("key").to_pylist(),
                    strict=True)) == decoded(TXN)


def test_read_committed_rows_leave_out_the_aborted_transactions():
    """The plan carries each segment's aborted ranges (from the producer-state fold); the rows
    drop producer 1002's aborted data, as a read_committed consumer would."""
    sel = plan.Selection((str(TXN),), read_committed=True)
    assert {r for p in plan.ranges(sel) for r in p.aborted} == {(1002, 3, 17), (1002, 18, 24)}
    kept = read(sel, ("offset", "producer_id")).to_pylist()
    every = read(plan.Selection((str(TXN),)), ("offset", "producer_id")).to_pylist()
    aborted = [r for r in every if r["producer_id"] == 1002]
    assert aborted and not any(r in kept for r in aborted)
    assert len(kept) == len(every) - len(aborted)


def test_batch_rows_one_per_batch():
    got = read(plan.Selection((str(TXN),), level=Level.BATCHES, include_control=True),
               ("base_offset", "last_offset", "is_control"))
    assert got.column("base_offset").to_pylist()[:3] == [0, 3, 5]
    assert sum(got.column("is_control").to_pylist()) == 5  # 3 commits, 2 aborts


def test_column_names_are_matched_as_spark_does_and_refused_with_the_list():
    assert columns.canonical(("OFFSET", "Key"), Level.RECORDS) == ("offset", "key")
    with pytest.raises(ColumnError, match="has no column 'nope'; its columns are"):
        columns.canonical(("nope",), Level.BATCHES)
    for level in Level:
        names = columns.default_columns(level, False)
        assert columns.schema(level, names).names == list(names)


def test_each_segment_is_opened_with_the_one_read_after_it(monkeypatch):
    """A cold segment's reads ahead run on into the segment the reader walks next
    (``Segment.open``'s ``following``): the reader names it, across partitions too."""
    opened = []
    real = rows.Segment.open

    def spy(files, **kwargs):
        following = kwargs.get("following")
        opened.append((files.log, None if following is None else following.log))
        return real(files, **kwargs)

    monkeypatch.setattr(rows.Segment, "open", staticmethod(spy))
    read(plan.Selection((str(SAMPLE),), topics=("payments-compact",)), ("offset",))
    assert len(opened) > 2
    assert [after for _, after in opened] == [log for log, _ in opened[1:]] + [None]
