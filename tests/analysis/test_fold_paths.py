"""The producer analyses' folds give one answer however they run, on every Kafka-written
partition of the fixture trees: gathered per partition or chunk by chunk, row by row or
vectorised, a snapshot offset cutting a chunk or folded row by row, walked alone or beside
another analysis."""

from __future__ import annotations

import numpy as np
import pytest

from segtools.analysis import partition_log, producer_state, producers, transactions
from segtools.analysis.producer_state import ProducerStateFold
from segtools.storage.logdirs import walk
from tests.fixtures_manifest import FIXTURES


def _partitions():
    trees = sorted(p for p in (FIXTURES / "logdirs").iterdir()
                   if p.is_dir() and p.name != "replicas")
    log_dirs, _ = walk([*trees, FIXTURES / "logdirs" / "replicas" / "broker1"])
    return [p for d in log_dirs for p in d.partitions if producers.analysed(p)]


PARTITIONS = _partitions()


def _producers(p) -> tuple:
    r = producers.analyse_partition(p, measure_codec=False)
    return ([g.to_json() for g in r.producers.values()], [e.to_json() for e in r.events],
            [f.to_json() for f in r.findings])


def _scan(s: transactions.TransactionScan) -> tuple:
    return (s.transactions, s.producers, s.snapshots_state, s.log_start_offset,
            s.log_end_offset, s.last_timestamp, [f.to_json() for f in s.findings])


def test_the_tree_has_what_the_paths_differ_on():
    """Several producers in one partition, transactions, and snapshots inside the log."""
    assert any(len(producers.analyse_partition(p).producers) > 2 for p in PARTITIONS)
    assert any(t.marker for p in PARTITIONS
               for t in transactions.scan_transactions(p).transactions)
    assert any(s.offset > p.segments[0].base_offset for p in PARTITIONS if p.segments
               for s in p.snapshots)


def test_producers_row_by_row_and_vectorised_agree(monkeypatch):
    """Small tables are folded row by row, large ones per producer with numpy: the same
    figures, events and findings, in the same order, on every partition; and the same when
    every chunk is folded as it comes rather than gathered."""
    expected = {str(p.path): _producers(p) for p in PARTITIONS}
    monkeypatch.setattr(producers, "SMALL_TABLE", 0)
    assert {str(p.path): _producers(p) for p in PARTITIONS} == expected
    for rows in (1, 3):  # every chunk as it comes; small ones gathered, bigger ones not
        monkeypatch.setattr(producers, "FOLD_ROWS", rows)
        assert {str(p.path): _producers(p) for p in PARTITIONS} == expected, rows


def test_transactions_gathered_or_chunk_by_chunk_agree(monkeypatch):
    """The transactions scan gathers a partition's small chunks before folding them (markers
    read while each segment is open, each batch's segment kept): the same scan as folding
    each chunk as it comes, or gathering only some."""
    expected = {str(p.path): _scan(transactions.scan_transactions(p)) for p in PARTITIONS}
    for rows in (1, 3):
        monkeypatch.setattr(transactions, "FOLD_ROWS", rows)
        assert {str(p.path): _scan(transactions.scan_transactions(p))
                for p in PARTITIONS} == expected, rows


def test_one_walk_feeds_both_as_two_walks_would():
    """Producers and transactions beside each other on one walk: each gets what it gets
    walking alone, findings included."""
    for p in PARTITIONS:
        fold = transactions.TransactionFold(p)
        beside = producers.analyse_partition(p, measure_codec=False, beside=[fold])
        alone = producers.analyse_partition(p, measure_codec=False)
        assert [g.to_json() for g in beside.producers.values()] == \
            [g.to_json() for g in alone.producers.values()]
        assert beside.findings == alone.findings
        assert _scan(fold.scan()) == _scan(transactions.scan_transactions(p))


@pytest.mark.parametrize("p", [p for p in PARTITIONS if p.snapshots],
                         ids=lambda p: f"{p.path.parent.name}/{p.path.name}")
def test_a_snapshot_cuts_the_chunk_where_the_rows_fold_takes_it(p):
    """With snapshot offsets, the vectorised fold cuts the chunk at each; the state taken
    there is the one the row-by-row rule takes, for offsets anywhere in the log."""
    findings: list = []
    tables = [t for _, _, t in partition_log.iter_tables(p, findings)]
    if not tables:
        return
    from segtools.decode.table import BatchTable
    whole = BatchTable.concat(tables)
    ends = sorted({int(o) for o in whole.base_offset.tolist()}
                  | {int(whole.last_offset[-1]) + 1, 0})
    for offsets in ([o] for o in ends[::max(1, len(ends) // 12)]):
        cut, rows = ProducerStateFold(offsets), ProducerStateFold(offsets)
        segments = np.arange(len(whole), dtype=np.int64)  # a marker's segment: per row
        cut.add(whole, None, segments)
        rows._rows(whole, None, segments)
        cut.finish()
        rows.finish()
        assert (cut.states, cut.producers, cut.closed, cut.ongoing) == \
            (rows.states, rows.producers, rows.closed, rows.ongoing), offsets
    assert producer_state.FOLD_ROWS > 1
