"""The producer-state fold (``ProducerStateManager``) that transactions, producers, compaction
and the read_committed filter all read, on Kafka-written trees: one answer whichever way the
log is cut into chunks, one snapshot check, and every reader agreeing with the others."""

from __future__ import annotations

import itertools

import numpy as np

import segtools
from segtools.analysis import compaction as comp
from segtools.analysis import producers as prod
from segtools.analysis.cleaner_input import read_records
from segtools.analysis.partition_log import as_partition
from segtools.analysis.producer_state import ProducerStateFold, aborted_ranges_of
from segtools.analysis.transactions import analyse_partition, read_committed
from segtools.fetch.columns import batch_table
from tests.fixtures_manifest import FIXTURES, SAMPLE

PRODUCERS = FIXTURES / "logdirs" / "producers"
SNAPSHOT_CODES = {"snapshot_producer_missing", "producer_only_in_snapshot",
                  "snapshot_producer_unknown", "snapshot_state_mismatch"}


def _table(path):
    table = segtools.open(path).to_arrow(level="batches").read_all()
    return batch_table(table.combine_chunks().to_batches()[0])


def test_the_latest_snapshot_against_the_log():
    """7002's segment was deleted by retention but the broker still tracks it; 7003 expired
    from the producer state while its batches remain. Each fact is said once, by the
    transactions analysis, and the producers analysis does not repeat it."""
    pdir = as_partition(PRODUCERS / "transfers-0")
    _, _, findings = analyse_partition(pdir)
    found = [f for f in findings if f.code in SNAPSHOT_CODES]
    assert [(f.code, f.offset) for f in found] == [("producer_only_in_snapshot", 53),
                                                  ("snapshot_producer_missing", 53)]
    assert "producer 7002 " in found[0].message and "[7003]" in found[1].message
    assert {f.severity for f in found} == {segtools.Severity.INFO}
    assert not {f.code for f in prod.analyse_partition(pdir).findings} & SNAPSHOT_CODES


def test_folding_in_any_chunks_gives_the_same_state():
    """Cut the batch table anywhere: each producer's state and the transactions it closed are
    the same (markers unread, as the producers analysis folds them)."""
    whole = _table(PRODUCERS / "transfers-0")

    def fold(cuts):
        f = ProducerStateFold()
        for lo, hi in itertools.pairwise([0, *cuts, len(whole)]):
            f.add(whole.take(np.arange(lo, hi)))
        f.finish()
        return f.producers, f.closed, f.open_transactions()

    expected = fold([])
    assert expected[1], "the tree has transactions"
    for cut in range(1, len(whole)):
        assert fold([cut]) == expected, cut


def test_compaction_and_read_committed_abort_the_same_records():
    """The cleaner's aborted records (``removed_aborted_transaction`` candidates) are the
    records inside the read_committed filter's aborted ranges, both from the one fold."""
    path = SAMPLE / "payments.txn-0"
    view = read_committed(path)
    assert view.aborted, "the fixture has an aborted transaction"
    [pi] = [p for p in segtools.open(SAMPLE).inputs().partitions if p.dir.path == path]
    cols, _ = read_records(pi)
    aborted = comp._replay_transactions(cols).aborted
    expected = np.array([view.is_aborted(int(p), int(o)) and not int(f) & comp.FLAG_CONTROL
                         for p, o, f in zip(cols.producer_id, cols.offset, cols.flags,
                                            strict=True)])
    assert aborted.any() and (aborted == expected).all()
    assert aborted_ranges_of(()) == []


def test_the_run_path_and_the_row_path_agree():
    """A chunk with transactions is folded by runs (Python only at markers and at the batches
    that open a transaction); row by row, as a chunk holding a snapshot offset is, gives the
    same state, cut anywhere."""
    for path in (PRODUCERS / "transfers-0", SAMPLE / "payments.txn-0",
                 FIXTURES / "logdirs" / "forensics" / "payments.hanging-0"):
        whole = _table(path)
        for cut in range(0, len(whole), 3):
            by_runs, by_rows = ProducerStateFold(), ProducerStateFold()
            for lo, hi in ((0, cut), (cut, len(whole))):
                part = whole.take(np.arange(lo, hi))
                if len(part):
                    by_runs.add(part)
                    by_rows._rows(part, None, None)
            assert (by_runs.producers, by_runs.closed, by_runs.ongoing) == \
                (by_rows.producers, by_rows.closed, by_rows.ongoing), (path, cut)
