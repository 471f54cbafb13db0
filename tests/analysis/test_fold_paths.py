"""The producer analyses' folds give one answer however they run, on every Kafka-written
partition of the fixture trees: gathered per partition or chunk by chunk, row by row or
vectorised, a snapshot offset cutting a chunk or folded row by row, walked alone or beside
another analysis."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.analysis import partition_log, producer_state, producers, transactions
from segtools.analysis.producer_state import ProducerStateFold
from segtools.decode.table import COLUMNS, BatchTable
from segtools.storage.logdirs import walk
from segtools.storage.partition import load_partition_dir
from tests.fixtures_manifest import FIXTURES


def _partitions():
    trees = sorted(p for p in (FIXTURES / "logdirs").iterdir()
                   if p.is_dir() and p.name != "replicas")
    log_dirs, _ = walk([*trees, FIXTURES / "logdirs" / "replicas" / "broker1"])
    return [p for d in log_dirs for p in d.partitions if producers.analysed(p)]


PARTITIONS = _partitions()
#: Where the ABORT marker at offset 41 of ``producers/transfers-0`` starts in its first
#: segment (Kafka's writer put it there; the damaged-marker test flips its type).
ABORT_AT_41 = 2627


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
    """Small tables are folded (and their sequences checked) row by row, large ones per
    producer with numpy: the same figures, events and findings, in the same order, on
    every partition; and the same when every chunk is folded as it comes rather than
    gathered."""
    expected = {str(p.path): _producers(p) for p in PARTITIONS}
    monkeypatch.setattr(producers, "SMALL_TABLE", 0)
    monkeypatch.setattr(producers, "SMALL_SEQUENCES", 0)
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


def _answer(r: producers.PartitionProducers) -> tuple:
    return ([g.to_json() for g in r.producers.values()], [e.to_json() for e in r.events],
            [f.to_json() for f in r.findings])


def test_producers_reading_the_transactions_fold_answer_as_alone(monkeypatch):
    """The report's producers read the producer state of the transactions scan walked
    beside them (one fold, not two): the same figures, events (epoch bumps' transactions
    included) and findings as ``segtools producers``, and the same scan, on every
    partition; however the scan cuts its chunks."""
    scanned = [p for p in PARTITIONS if transactions.scanned(p)]
    expected = {str(p.path): (_answer(producers.analyse_partition(p)),
                              _scan(transactions.scan_transactions(p))) for p in scanned}
    for rows in (producer_state.FOLD_ROWS, 1, 3):
        monkeypatch.setattr(transactions, "FOLD_ROWS", rows)
        shared = {}
        for p in scanned:
            fold = transactions.TransactionFold(p)
            answer = _answer(producers.analyse_partition(p, state=fold))
            assert fold.markers_regular, p.path
            shared[str(p.path)] = (answer, _scan(fold.scan()))
        assert shared == expected, rows


@pytest.mark.parametrize("small_table", [producers.SMALL_TABLE, 0])
def test_producers_without_their_rate_figure_the_rest_alike(monkeypatch, small_table):
    """The report asks for no rate over time (its page draws none): every other figure,
    event and finding is the one ``segtools producers`` gives, row by row or vectorised,
    and no rate bucket is counted."""
    monkeypatch.setattr(producers, "SMALL_TABLE", small_table)
    for p in PARTITIONS:
        full = producers.analyse_partition(p, measure_codec=False)
        bare = producers.analyse_partition(p, measure_codec=False, rates=False)
        assert [g.to_json(rate=False) for g in bare.producers.values()] == \
            [g.to_json(rate=False) for g in full.producers.values()]
        assert _answer(bare)[1:] == _answer(full)[1:]
        assert not any(g.rate.batches for g in bare.producers.values())
    assert any(g.rate.batches for p in PARTITIONS
               for g in producers.analyse_partition(p, measure_codec=False).producers.values())


def test_a_damaged_marker_folds_the_producers_on_their_own(tmp_path):
    """A control batch whose record no longer reads as COMMIT or ABORT (its type bytes
    flipped; the fold does not check CRCs) leaves the transactions scan's transaction
    open, where ``segtools producers`` (no markers read: one control batch, one close)
    closes it: the producers sharing that fold then fold the partition again on their own,
    so the epoch bump still says the coordinator's marker at 41 ended its transaction."""
    shutil.copytree(FIXTURES / "logdirs" / "producers" / "transfers-0",
                    tmp_path / "transfers-0")
    log = tmp_path / "transfers-0" / "00000000000000000012.log"
    data = bytearray(log.read_bytes())
    data[ABORT_AT_41 + 61 + 8] = 7  # the control record key's type: ABORT (0) -> 7
    log.write_bytes(bytes(data))
    p = load_partition_dir(tmp_path / "transfers-0")
    fold = transactions.TransactionFold(p)
    shared = producers.analyse_partition(p, state=fold)
    assert not fold.markers_regular
    assert 41 not in {t.marker_offset for t in fold.scan().transactions}
    alone = producers.analyse_partition(p)
    [bump] = [e for e in alone.events if e.kind == "epoch_bump"]
    assert bump.closed_by == 41
    assert _answer(shared) == _answer(alone)


@pytest.mark.parametrize("p", [p for p in PARTITIONS if p.snapshots],
                         ids=lambda p: f"{p.path.parent.name}/{p.path.name}")
def test_a_snapshot_cuts_the_chunk_where_the_rows_fold_takes_it(p):
    """With snapshot offsets, the vectorised fold cuts the chunk at each; the state taken
    there is the one the row-by-row rule takes, for offsets anywhere in the log."""
    findings: list = []
    tables = [t for _, _, t in partition_log.iter_tables(p, findings)]
    if not tables:
        return
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


def _int(bits: int):
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


#: A batch table's columns as a damaged or odd log can hold them: every magic, any
#: attributes (codec ids 5-7, LogAppendTime, control, delete horizon), legacy entries'
#: count -1, timestamps anywhere (-1 included), a few producers and epochs among the
#: non-idempotent -1 (and other negative ids, one group with it), offsets and sizes within
#: what a segment of 2^40 bytes could name.
_ROW = st.fixed_dictionaries({
    "magic": st.sampled_from([0, 1, 2]), "attributes": _int(16),
    "count": st.one_of(st.sampled_from([-1, 0, 1, 2, 5]), st.integers(-1, 2**31 - 1)),
    "base_offset": st.integers(-2, 2**40), "span": st.integers(0, 2**20),
    "size": st.integers(0, 2**30),
    "base_timestamp": st.one_of(st.sampled_from([-1, 0, 60_000]), st.integers(-(2**62), 2**62)),
    "max_timestamp": st.one_of(st.sampled_from([-1, 59_999, 1_700_000_000_000]),
                               st.integers(-(2**62), 2**62)),
    "producer_id": st.sampled_from([-1, -7, 0, 1, 2**40]), "producer_epoch": _int(16),
})


def _table(rows: list[dict]) -> BatchTable:
    cols = {name: np.zeros(len(rows), dtype) for name, dtype in COLUMNS.items()}
    for i, r in enumerate(rows):
        for name, value in r.items():
            if name != "span":
                cols[name][i] = value
        # a damaged header's last offset wraps past 2^63 - 1, as Kafka's long would
        cols["last_offset"][i] = (r["base_offset"] + r["span"] + 2**63) % 2**64 - 2**63
    return BatchTable.from_columns(cols)


def _figures(p: producers.PartitionProducers) -> list:
    return [(g.to_json(), g.first_timestamp, g.last_timestamp, g.per_minute, g.windows)
            for g in p.producers.values()]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_ROW, min_size=1, max_size=30), min_size=1, max_size=3),
       st.booleans())
def test_the_compiled_rows_fold_is_the_vectorised_one(chunks, rates):
    """The compiled fold of a small table reads the table's own columns and derives per row
    what the vectorised fold derives with numpy (ids of non-idempotent producers, record
    count, codec, first timestamp, whether the window counts): the same figures on any
    table, chunk after chunk into the same producers, with or without rates."""
    rows = producers.PartitionProducers("t", 0, "p", rates=rates)
    columns = producers.PartitionProducers("t", 0, "p", rates=rates)
    for chunk in chunks:
        t = _table(chunk)
        rows._batching_rows(t)
        columns._batching_columns(t, *producers._ids(t))
    assert _figures(rows) == _figures(columns)


#: Data batches of a few idempotent producers whose sequences follow, repeat, skip, wrap past
#: 2^31 - 1 and restart with a new epoch, among non-idempotent ones; offsets anywhere.
_SEQUENCED = st.fixed_dictionaries({
    "magic": st.just(2), "attributes": st.sampled_from([0, 0x10]),
    "count": st.integers(1, 3), "base_offset": st.one_of(st.integers(0, 50),
                                                          st.just(2**63 - 2)),
    "span": st.integers(0, 2), "size": st.just(80), "base_timestamp": st.just(0),
    "max_timestamp": st.integers(-1, 5),
    "producer_id": st.sampled_from([-1, 0, 1, 2]), "producer_epoch": st.integers(-2, 2),
    "base_sequence": st.one_of(st.integers(-1, 6), st.integers(2**31 - 3, 2**31 - 1)),
})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_SEQUENCED, min_size=1, max_size=12), min_size=1, max_size=4))
def test_the_rows_sequence_check_is_the_vectorised_one(chunks):
    """Small tables' sequences are checked row by row in Python, large ones per producer
    with numpy: the same events (gaps, duplicates, epoch bumps, out of order, wraps) in the
    same order, chunk after chunk against the producer state the chunks before left."""
    rows = producers.PartitionProducers("t", 0, "p")
    columns = producers.PartitionProducers("t", 0, "p")
    for chunk in chunks:
        t = _table(chunk)
        rows._sequences_rows(t, *producers._ids(t))
        columns._sequences(t, *producers._ids(t))
        rows._state.add(t)
        columns._state.add(t)
    assert [e.to_json() for e in rows.events] == [e.to_json() for e in columns.events]
