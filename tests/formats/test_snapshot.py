"""Producer-state snapshots built with the construct spec."""

from __future__ import annotations

from segtools.codecs import crc32c_reference
from segtools.formats.snapshot import (
    ProducerSnapshotFile,
    build_producer_snapshot,
    parse_producer_snapshot,
)
from segtools.storage.small_files import read_producer_snapshot

ENTRY = {"producer_id": 4000, "epoch": 3, "last_sequence": 41, "last_offset": 1234,
         "offset_delta": 9, "timestamp": 1_700_000_000_000, "coordinator_epoch": 2,
         "current_txn_first_offset": -1}
OPEN_TXN = {**ENTRY, "producer_id": 4001, "current_txn_first_offset": 1200}


def codes(findings) -> set[str]:
    return {f.code for f in findings}


def test_round_trip_through_mmap(tmp_path):
    data = build_producer_snapshot([ENTRY, OPEN_TXN])
    assert len(data) == 10 + 2 * 46
    parsed = ProducerSnapshotFile.parse(data)
    assert parsed.header.crc == crc32c_reference(data[6:])
    p = tmp_path / "00000000000000001240.snapshot"
    p.write_bytes(data)
    snap, findings = read_producer_snapshot(p)
    assert findings == [] and snap is not None and snap.crc_valid
    a, b = snap.entries
    assert a.producer_id == 4000 and a.first_sequence == 32 and not a.has_open_transaction
    assert b.has_open_transaction and b.current_txn_first_offset == 1200


def test_empty_snapshot_is_valid(tmp_path):
    snap, findings = parse_producer_snapshot(build_producer_snapshot([]), "s")
    assert findings == [] and snap is not None and snap.entries == ()


def test_crc_mismatch():
    snap, findings = parse_producer_snapshot(build_producer_snapshot([ENTRY], crc=1), "s")
    (f,) = findings
    assert f.code == "snapshot_crc_mismatch" and f.position == 2
    assert snap is not None and not snap.crc_valid and len(snap.entries) == 1


def test_bad_version():
    _, findings = parse_producer_snapshot(build_producer_snapshot([ENTRY], version=2), "s")
    assert codes(findings) == {"snapshot_unsupported_version"}


def test_size_mismatch_truncated_entry():
    data = build_producer_snapshot([ENTRY, OPEN_TXN])[:-5]
    snap, findings = parse_producer_snapshot(data, "s")
    assert codes(findings) == {"snapshot_size_mismatch", "snapshot_crc_mismatch"}
    size = next(f for f in findings if f.code == "snapshot_size_mismatch")
    assert size.position == 10 + 46
    assert snap is not None and len(snap.entries) == 1


def test_too_short_for_header(tmp_path):
    p = tmp_path / "00000000000000000000.snapshot"
    p.write_bytes(b"\x00\x01\x00")
    snap, findings = read_producer_snapshot(p)
    assert snap is None and codes(findings) == {"snapshot_truncated"}
    p.write_bytes(b"")
    snap, findings = read_producer_snapshot(p)
    assert snap is None and codes(findings) == {"snapshot_truncated"}
