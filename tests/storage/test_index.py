"""OffsetIndex / TimeIndex / TransactionIndex against bytes built with the construct spec."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segtools.formats.indexes import (
    AbortedTxnEntry,
    OffsetIndexEntry,
    TimeIndexEntry,
    build_offset_index,
    build_time_index,
)
from segtools.storage.index import OffsetIndex, TimeIndex, TimestampOffset, TransactionIndex

BASE = 1000
MAX_INDEX = 10 * 1024 * 1024
MAX_TIMEINDEX = 10_485_756


def write(path: Path, data: bytes, size: int | None = None) -> Path:
    with open(path, "wb") as f:
        f.write(data)
        if size is not None:
            f.truncate(size)  # sparse, reads as zeros: Kafka's preallocation
    return path


def index_path(tmp_path: Path, suffix: str = "index", base: int = BASE) -> Path:
    return tmp_path / f"{base:020d}.{suffix}"


def codes(ix) -> set[str]:
    return {f.code for f in ix.sanity_check()}


ENTRIES = [(5, 4200), (9, 8400), (20, 13000), (31, 17500)]


def test_construct_spec_round_trips():
    raw = OffsetIndexEntry.build({"relative_offset": 7, "position": 4097})
    assert raw == b"\x00\x00\x00\x07\x00\x00\x10\x01"
    assert TimeIndexEntry.parse(TimeIndexEntry.build({"timestamp": 2**40, "relative_offset": 3})
                                ).timestamp == 2**40
    assert AbortedTxnEntry.sizeof() == 34


def test_exact_index_and_base_from_name(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES))
    with OffsetIndex(p, log_size=20000) as ix:
        assert ix.base_offset == BASE
        assert ix.kafka_entries == ix.valid_entries == 4
        assert not ix.is_preallocated and ix.padding_bytes == 0
        assert ix.sanity_check() == () and ix.trusted
        assert list(ix.entries()) == [(BASE + r, p) for r, p in ENTRIES]
        assert ix.last_entry == (BASE + 31, 17500)


@pytest.mark.parametrize("padded", [False, True])
def test_lookup_semantics(tmp_path, padded):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES), MAX_INDEX if padded else None)
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 4
        assert ix.lookup(BASE - 5) == (BASE, 0)
        assert ix.lookup(BASE + 4) == (BASE, 0)
        assert ix.lookup(BASE + 5) == (BASE + 5, 4200)
        assert ix.lookup(BASE + 19) == (BASE + 9, 8400)
        assert ix.lookup(10**12) == (BASE + 31, 17500)
        assert ix.fetch_upper_bound_offset(0) == (BASE + 5, 4200)
        assert ix.fetch_upper_bound_offset(8400) == (BASE + 9, 8400)
        assert ix.fetch_upper_bound_offset(8401) == (BASE + 20, 13000)
        assert ix.fetch_upper_bound_offset(17501) is None


def test_preallocated_10mib_tail_is_padding_not_corruption(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES), MAX_INDEX)
    with OffsetIndex(p, log_size=20000) as ix:
        assert ix.kafka_entries == 1_310_720
        assert ix.valid_entries == 4
        assert ix.is_preallocated and ix.padding_bytes == MAX_INDEX - 32
        assert ix.sanity_check() == () and ix.trusted  # Kafka's 2.0+ check passes too


def test_empty_and_never_written_files(tmp_path):
    empty = write(index_path(tmp_path), b"")
    with OffsetIndex(empty) as ix:
        assert ix.kafka_entries == ix.valid_entries == 0
        assert ix.lookup(BASE + 3) == (BASE, 0) and ix.last_entry == (BASE, 0)
        assert ix.trusted
    zeros = write(index_path(tmp_path, "timeindex"), b"", MAX_TIMEINDEX)
    with TimeIndex(zeros) as tx:
        assert tx.valid_entries == 0 and tx.is_preallocated
        assert tx.last_entry == TimestampOffset(-1, BASE)  # not (0, base): KAFKA-10207
        assert tx.lookup(5) == (-1, BASE)
        assert tx.sanity_check() == ()


def test_garbage_after_entries(tmp_path):
    data = build_offset_index(ENTRIES) + bytes(64) + b"\x01"
    p = write(index_path(tmp_path), data, 4096)
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 4
        assert not ix.is_preallocated
        assert ix.first_garbage_position == 32 + 64
        assert codes(ix) == {"index_garbage_after_entries"}
        assert not ix.trusted


def test_length_not_multiple(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES) + b"\x00\x00\x00")
    with OffsetIndex(p) as ix:
        assert codes(ix) == {"index_length_not_multiple"}
        f = ix.sanity_check()[0]
        assert f.position == 32


def test_last_offset_below_base_kafka_rule(tmp_path):
    p = write(index_path(tmp_path), build_offset_index([*ENTRIES, (-3, 20000)]))
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 4
        assert {"index_last_offset_below_base", "index_offset_not_increasing"} <= codes(ix)


def test_offset_below_base_first_entry(tmp_path):
    p = write(index_path(tmp_path), build_offset_index([(-2, 100), (5, 4200)]))
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 2
        assert codes(ix) == {"index_offset_below_base"}


def test_offset_not_increasing(tmp_path):
    p = write(index_path(tmp_path), build_offset_index([(5, 4200), (9, 8400), (9, 9000)]))
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 2
        (f,) = ix.sanity_check()
        assert f.code == "index_offset_not_increasing" and f.position == 16
        assert f.offset == BASE + 9


def test_position_not_increasing(tmp_path):
    p = write(index_path(tmp_path), build_offset_index([(5, 4200), (9, 4100), (12, 9000)]))
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 3
        (f,) = ix.sanity_check()
        assert f.code == "index_position_not_increasing" and f.position == 8


def test_position_past_log_end(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES), MAX_INDEX)
    with OffsetIndex(p, log_size=15000) as ix:
        assert ix.valid_entries == 3
        assert codes(ix) == {"index_position_past_log_end"}
        assert ix.lookup(BASE + 40) == (BASE + 20, 13000)


def test_negative_position(tmp_path):
    p = write(index_path(tmp_path), build_offset_index([(5, 4200), (9, -1)]))
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 1
        assert codes(ix) == {"index_position_negative"}


TIMES = [(1_700_000_000_000, 5), (1_700_000_000_500, 9), (1_700_000_001_000, 9)]


def test_timeindex_exact_and_lookup(tmp_path):
    p = write(index_path(tmp_path, "timeindex"), build_time_index(TIMES))
    with TimeIndex(p) as tx:
        assert tx.valid_entries == 3 and tx.sanity_check() == ()
        assert tx.lookup(0) == (-1, BASE)
        assert tx.lookup(1_700_000_000_499) == (1_700_000_000_000, BASE + 5)
        assert tx.lookup(1_700_000_000_500) == (1_700_000_000_500, BASE + 9)
        assert tx.last_entry == (1_700_000_001_000, BASE + 9)


def test_timeindex_padded_active_is_kafka_failure_but_info(tmp_path):
    p = write(index_path(tmp_path, "timeindex"), build_time_index(TIMES), MAX_TIMEINDEX)
    with TimeIndex(p) as tx:
        assert tx.kafka_entries == 873_813 and tx.valid_entries == 3
        (f,) = tx.sanity_check()
        assert f.code == "timeindex_padded_active" and f.severity == "info"
        assert "padding" in f.message or "preallocated" in f.message
        assert tx.trusted


def test_timeindex_kafka_checks(tmp_path):
    p = write(index_path(tmp_path, "timeindex"), build_time_index([*TIMES, (5, -7)]))
    with TimeIndex(p) as tx:
        assert {"timeindex_last_timestamp_below_first", "timeindex_last_offset_below_base",
                "timeindex_timestamp_not_increasing"} <= codes(tx)
        assert not tx.trusted
    p2 = write(tmp_path / f"{BASE:020d}.x.timeindex", build_time_index(TIMES) + b"\x01")
    with TimeIndex(p2, base_offset=BASE) as tx:
        assert codes(tx) == {"timeindex_length_not_multiple", "timeindex_garbage_after_entries"}


def test_timeindex_strict_checks(tmp_path):
    p = write(index_path(tmp_path, "timeindex"), build_time_index([(10, 5), (20, 3), (30, 8)]))
    with TimeIndex(p) as tx:
        assert codes(tx) == {"timeindex_offset_decreasing"}
    p = write(index_path(tmp_path, "timeindex"), build_time_index([(10, -1), (20, 3)]))
    with TimeIndex(p) as tx:
        assert codes(tx) == {"timeindex_offset_below_base"}


def test_pickles_as_path(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES), MAX_INDEX)
    with OffsetIndex(p, log_size=20000) as ix:
        clone = pickle.loads(pickle.dumps(ix))
    with clone:
        assert clone.valid_entries == 4 and clone.log_size == 20000
        assert clone.lookup(BASE + 25) == (BASE + 20, 13000)


def test_closed_index_refuses_reads(tmp_path):
    p = write(index_path(tmp_path), build_offset_index(ENTRIES))
    ix = OffsetIndex(p)
    ix.close()
    ix.close()
    with pytest.raises((ValueError, OSError)):
        ix.lookup(BASE + 7)


# -- the warm-section binary search against a linear scan ---------------------------------


def linear_lower(entries: list[tuple[int, int]], target: int, field: int) -> int:
    best = -1
    for i, e in enumerate(entries):
        if e[field] <= target:
            best = i
    return best


@st.composite
def increasing_index(draw):
    n = draw(st.integers(0, 3000))
    gaps = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    pgaps = draw(st.lists(st.integers(1, 9000), min_size=n, max_size=n))
    rels, poss, r, p = [], [], 0, 0
    for g, pg in zip(gaps, pgaps, strict=True):
        r += g
        p += pg
        rels.append(r)
        poss.append(p)
    return list(zip(rels, poss, strict=True))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=increasing_index(), pad=st.sampled_from([0, 8, 8 * 5000]),
       targets=st.lists(st.integers(-20, 160_000), min_size=1, max_size=40))
def test_binary_search_matches_linear_scan(tmp_path, entries, pad, targets):
    p = index_path(tmp_path)
    data = build_offset_index(entries)
    write(p, data, len(data) + pad if pad else None)
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == len(entries)
        assert ix.trusted
        for t in targets:
            slot = linear_lower(entries, t, 0)
            expected = (BASE, 0) if slot < 0 else (BASE + entries[slot][0], entries[slot][1])
            assert ix.lookup(BASE + t) == expected
            up = next((i for i, e in enumerate(entries) if e[1] >= t), None)
            got = ix.fetch_upper_bound_offset(t)
            assert got == (None if up is None else (BASE + entries[up][0], entries[up][1]))
        if entries:
            for i in (0, len(entries) // 2, len(entries) - 1):
                assert ix.lookup(BASE + entries[i][0]) == (BASE + entries[i][0], entries[i][1])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=increasing_index(), padded=st.booleans(),
       targets=st.lists(st.integers(-5, 30_000_000), min_size=1, max_size=30))
def test_timeindex_search_matches_linear_scan(tmp_path, entries, padded, targets):
    times = [(p + 100, r) for r, p in entries]  # strictly increasing timestamps
    p = index_path(tmp_path, "timeindex")
    data = build_time_index(times)
    write(p, data, len(data) + 12 * 1000 if padded else None)
    with TimeIndex(p) as tx:
        assert tx.valid_entries == len(times)
        for t in targets:
            slot = linear_lower(times, t, 0)
            expected = (-1, BASE) if slot < 0 else (times[slot][0], BASE + times[slot][1])
            assert tx.lookup(t) == expected


# -- transaction index ---------------------------------------------------------------------


def txn(version=0, pid=7, first=1000, last=1010, lso=1000) -> bytes:
    return AbortedTxnEntry.build({"version": version, "producer_id": pid, "first_offset": first,
                                  "last_offset": last, "last_stable_offset": lso})


def test_txnindex_entries_and_collect(tmp_path):
    data = txn(first=990, last=1005, lso=990) + txn(pid=8, first=1006, last=1020, lso=1006) \
        + txn(pid=9, first=1021, last=1030, lso=1025)
    p = write(index_path(tmp_path, "txnindex"), data)
    with TransactionIndex(p) as ti:
        assert ti.entry_count == 3 and ti.sanity_check() == () and ti.trusted
        assert [t.producer_id for t in ti.entries()] == [7, 8, 9]
        r = ti.collect_aborted_txns(1000, 1010)
        assert [t.producer_id for t in r.aborted_transactions] == [7, 8] and r.is_complete
        r = ti.collect_aborted_txns(1021, 2000)
        assert [t.producer_id for t in r.aborted_transactions] == [9] and not r.is_complete


def test_txnindex_partial_entry_and_bad_entries(tmp_path):
    data = txn() + txn(version=1, last=1020) + txn(first=5, last=900) + txn(first=2000,
                                                                          last=1500) + b"\x00" * 20
    p = write(index_path(tmp_path, "txnindex"), data)
    with TransactionIndex(p) as ti:
        assert ti.entry_count == 4
        found = {f.code: f for f in ti.sanity_check()}
        assert set(found) == {"txnindex_partial_entry", "txnindex_unsupported_version",
                              "txnindex_last_offset_below_base",
                              "txnindex_last_offset_not_increasing",
                              "txnindex_first_offset_after_last"}
        assert found["txnindex_partial_entry"].position == 4 * 34
        assert found["txnindex_unsupported_version"].position == 34
        assert not ti.trusted


def test_broker_trims_index_while_we_read(tmp_path):
    """A roll trims the active index (trimToValidSize) under an open reader: no SIGBUS."""
    p = write(index_path(tmp_path), build_offset_index(ENTRIES), MAX_INDEX)
    with OffsetIndex(p, log_size=20000) as ix:
        with open(p, "r+b") as broker:  # the test plays the broker here
            broker.truncate(len(ENTRIES) * 8)
        assert ix.valid_entries == 4
        assert ix.lookup(BASE + 25) == (BASE + 20, 13000)
        assert ix.trusted


def test_large_index_counts_in_chunks(tmp_path):
    n = 200_000
    entries = [(i * 3 + 1, i * 4100 + 4100) for i in range(n)]
    import numpy as np

    from segtools.formats.indexes import OFFSET_INDEX_DTYPE
    arr = np.array(entries, dtype=[("relative_offset", "<i8"), ("position", "<i8")])
    raw = arr.astype(OFFSET_INDEX_DTYPE).tobytes()
    p = write(index_path(tmp_path), raw[:8 * 150_000] + build_offset_index([(5, 7)])
              + raw[8 * 150_001:])
    with OffsetIndex(p) as ix:
        assert ix.valid_entries == 150_000
        assert ix.lookup(BASE + 10**9) == (BASE + entries[149_999][0], entries[149_999][1])
        assert "index_offset_not_increasing" in codes(ix)
