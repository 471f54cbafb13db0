"""Transactions: the hanging transaction and the LSO it pins, aborted transactions against
the .txnindex, producer state against .snapshot, the read_committed filter, and the
__transaction_state timeline."""

from __future__ import annotations

import shutil
import struct

import numpy as np

import segtools
from segtools.analysis.partition_log import (
    as_partition,
    batch_records,
    iter_tables,
    partitions_of,
)
from segtools.analysis.transaction_state import open_transactional_ids, replay_transaction_state
from segtools.analysis.transactions import (
    AbortedRange,
    ReadCommitted,
    aborted_ranges,
    analyse_partition,
    check_snapshots,
    check_txnindex,
    hanging_transactions,
    is_aborted,
    read_committed,
    scan_transactions,
)
from segtools.formats.snapshot import build_producer_snapshot, parse_producer_snapshot
from segtools.storage.segment import Segment
from tests.fixtures_manifest import SAMPLE
from tests.forensics import FORENSICS

HANGING = FORENSICS / "payments.hanging-0"
T_F = 1_700_470_800_000


def test_hanging_transaction_pins_the_lso():
    scan, hanging, findings = analyse_partition(as_partition(HANGING))
    (h,) = hanging
    t = h.transaction
    assert (t.producer_id, t.producer_epoch, t.first_offset, t.last_data_offset, t.batches,
            t.records) == (5001, 0, 8, 19, 2, 5)
    assert (h.pinned_lso, h.log_end_offset, scan.last_stable_offset) == (8, 30, 8)
    assert t.first_timestamp == T_F + 10 * 60_000 + 100 + 2  # the first batch's max timestamp
    assert h.age_ms == scan.last_timestamp - t.first_timestamp > 900_000
    assert [(f.code, f.offset) for f in findings] == [("hanging_transaction", 8)]


def test_an_open_transaction_within_the_timeout_is_not_hanging():
    scan = scan_transactions(as_partition(HANGING))
    assert hanging_transactions(scan, max_timeout_ms=10 * 3_600_000) == []
    assert [t.first_offset for t in scan.open_transactions] == [8]
    now = T_F + 10 * 60_000 + 60_000
    assert hanging_transactions(scan, now=now) == []


def test_aborted_transactions_match_the_txnindex():
    for path in (HANGING, SAMPLE / "payments.txn-0", FORENSICS / "__consumer_offsets-6"):
        scan = scan_transactions(as_partition(path))
        assert check_txnindex(scan) == [], path
        assert check_snapshots(scan) == [], path
        assert aborted_ranges(path) == aborted_ranges(path, from_txnindex=True)
    assert aborted_ranges(HANGING) == [AbortedRange(5003, 11, 16)]
    # the second abort of payments.txn-0 began in the segment before its marker's
    assert aborted_ranges(SAMPLE / "payments.txn-0") == [AbortedRange(1002, 3, 17),
                                                         AbortedRange(1002, 18, 24)]
    abort = next(t for t in scan_transactions(as_partition(HANGING)).transactions
                 if t.marker == "ABORT")
    assert abort.lso_after == 8  # pinned by the hanging transaction, as .txnindex says


def copy_partition(tmp_path, src):
    dest = tmp_path / src.parent.name / src.name
    shutil.copytree(src, dest)
    return dest


def test_txnindex_mismatches_are_findings(tmp_path):
    pdir = copy_partition(tmp_path, SAMPLE / "payments.txn-0")
    (pdir / "00000000000000000020.txnindex").unlink()
    codes = [(f.code, f.offset) for f in check_txnindex(scan_transactions(as_partition(pdir)))]
    assert codes == [("txnindex_missing_entry", 24)]
    index = pdir / "00000000000000000000.txnindex"
    raw = bytearray(index.read_bytes())
    raw[10:18] = struct.pack(">q", 4)  # first offset 3 -> 4
    raw[26:34] = struct.pack(">q", 99)  # last stable offset
    raw += struct.pack(">hqqqq", 0, 77, 1, 2, 3)  # an entry no ABORT supports
    index.write_bytes(bytes(raw))
    codes = {f.code for f in check_txnindex(scan_transactions(as_partition(pdir)))}
    assert {"txnindex_first_offset_mismatch", "txnindex_lso_mismatch",
            "txnindex_unexpected_entry", "txnindex_missing_entry"} <= codes


def test_snapshot_mismatch_is_a_finding(tmp_path):
    pdir = copy_partition(tmp_path, HANGING)
    snap_path = pdir / "00000000000000000018.snapshot"
    snap, _ = parse_producer_snapshot(snap_path.read_bytes(), str(snap_path))
    entries = [{f: getattr(e, f) for f in ("producer_id", "epoch", "last_sequence",
                                           "last_offset", "offset_delta", "timestamp",
                                           "coordinator_epoch", "current_txn_first_offset")}
               for e in snap.entries]
    assert {e["producer_id"]: e["current_txn_first_offset"] for e in entries}[5001] == 8
    for e in entries:
        if e["producer_id"] == 5001:
            e["current_txn_first_offset"] = -1  # as if the transaction had ended
    snap_path.write_bytes(build_producer_snapshot(entries))
    findings = check_snapshots(scan_transactions(as_partition(pdir)))
    assert [(f.code, f.offset) for f in findings] == [("snapshot_state_mismatch", 18)]
    assert "current_txn_first_offset -1 (log: 8)" in findings[0].message


def test_read_committed_filter():
    view = read_committed(SAMPLE / "payments.txn-0")
    assert view.last_stable_offset == 28
    findings = []
    kept = [(b.base_offset, b.producer_id)
            for _, _, t in iter_tables(as_partition(SAMPLE / "payments.txn-0"), findings)
            for b in t.batches() if view.keep(b)]
    assert all(pid != 1002 for _, pid in kept)  # both of producer 1002's were aborted
    assert (0, 1001) in kept and (5, 2001) in kept
    assert not any(b in (11, 17, 23, 24, 27) for b, _ in kept)  # markers are control batches
    assert is_aborted(view, 1002, 12) and not is_aborted(view, 1001, 12)
    assert is_aborted(aborted_ranges(SAMPLE / "payments.txn-0"), 1002, 19)
    hanging = read_committed(HANGING)
    assert hanging.last_stable_offset == 8
    assert not hanging.is_aborted(5001, 9)  # open, not aborted: hidden by the LSO instead


def test_read_committed_lookup_is_per_producer():
    view = ReadCommitted((AbortedRange(1, 10, 20), AbortedRange(1, 30, 31),
                          AbortedRange(2, 0, 100)), 1000)
    assert [view.is_aborted(1, o) for o in (9, 10, 20, 21, 30, 32)] == [
        False, True, True, False, True, False]
    assert view.is_aborted(2, 50) and not view.is_aborted(3, 50)


def test_transaction_state_timeline():
    replay = replay_transaction_state(partitions_of([FORENSICS], "__transaction_state"))
    assert replay.findings == ()
    changes = replay.changes
    proc = [c.status for c in changes if c.transactional_id == "payments-processor-tx"]
    assert proc == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing",
                    "PrepareAbort", "CompleteAbort"]
    expired = [c.status for c in changes if c.transactional_id == "expired-tx"]
    assert expired == ["CompleteCommit", None]
    open_ids, findings = open_transactional_ids(replay)
    assert [c.transactional_id for c in open_ids] == ["payments-hanging-tx"]
    assert [(f.code, str(f.severity)) for f in findings] == [("transactional_id_past_timeout",
                                                                  "warning")]
    assert replay.owners[5001] == "payments-hanging-tx"
    state = next(c for c in changes if c.transactional_id == "payments-hanging-tx"
                 and c.status == "Ongoing").to_json()
    # the latest changes of each id are kept, and how many there were
    short = replay_transaction_state(partitions_of([FORENSICS], "__transaction_state"), keep=2)
    proc = short.ids["payments-processor-tx"]
    assert [c.status for c in proc.changes] == ["PrepareAbort", "CompleteAbort"]
    assert proc.total == 7 and proc.latest.status == "CompleteAbort"
    assert short.owners == replay.owners
    assert state["type"] == "transaction_state"
    assert state["partitions"] == {"payments.hanging": [0]}


def test_a_chunks_markers_come_from_one_decode(monkeypatch):
    """The transactions scan reads the markers of a chunk's control batches in one decode
    (one call per control batch cost more than its record), and closes transactions with
    the markers reading each control batch alone gives."""
    calls: list[int] = []
    real = Segment.batch_records

    def counted(segment, table):
        calls.append(len(table))
        return real(segment, table)

    checked = 0
    for tree in (FORENSICS, SAMPLE):
        for pdir in (p.directory for p in segtools.open(tree).partitions()):
            alone: set[int] = set()
            for segment, _, t in iter_tables(pdir, []):
                for i in np.flatnonzero(t.is_control & (t.producer_id >= 0)).tolist():
                    alone |= {r.offset for r in batch_records(segment, t.batch(i), [])
                              if r.control is not None}
            if len(alone) < 2:
                continue
            monkeypatch.setattr(Segment, "batch_records", counted)
            scan = scan_transactions(pdir)
            monkeypatch.setattr(Segment, "batch_records", real)
            closed = {x.marker_offset for x in scan.transactions if x.marker is not None}
            assert closed and closed <= alone, pdir
            assert sum(calls) == len(alone) and len(calls) < len(alone), pdir
            calls.clear()
            checked += 1
    assert checked
