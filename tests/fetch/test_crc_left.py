"""``to_arrow()`` of records with the CRCs checked by the record kernel (``walk.leave_crc``).

For the records of uncompressed v2 batches, the walk leaves each batch's CRC to the reader,
whose record kernel checks it while decoding the batch (its bytes read once); the walk's thread
decodes a share of each chunk first, and the CRCs of batches no consumer decodes are checked
last.
Whoever checks a CRC, the rows and the findings (codes, positions, order, messages) must be
those of a walk that checks every CRC itself: on every fixture tree under every read option,
read whole or mapped, on one thread or two, and on a mapped segment with bad CRCs mid-segment
(data and control batches), in and out of the offset bounds.
"""

from __future__ import annotations

import shutil
import struct

import pytest

import segtools
from segtools import fanout
from segtools.decode import walk
from segtools.fetch import rows as fetch_rows
from segtools.fetch.columns import FIELDS, Level
from segtools.storage import segment as segment_room
from tests.fixtures_manifest import FIXTURES, SAMPLE

TREES = sorted(p for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())
RECORD_COLUMNS = [n for n, _ in FIELDS[Level.RECORDS] if n != "tier"]
STATES = ("live", "delete", "future", "stray")
OPTIONS = {
    "default": {},
    "binary": dict(binary="binary"),
    "all": dict(columns=RECORD_COLUMNS, states=STATES),
    "control_headers": dict(columns=RECORD_COLUMNS, include_control=True,
                            include_headers=True, states=STATES),
    "committed": dict(columns=RECORD_COLUMNS, read_committed=True, states=STATES),
    "bounded": dict(columns=RECORD_COLUMNS, start_offset=3, end_offset=40, states=STATES),
    "key_value_crc": dict(columns=["key", "value", "offset", "crc_valid"], states=STATES),
}
NEVER = 1 << 62  # no batch is that long: the walk checks every CRC itself


def read(path, **options) -> tuple[list, list]:
    """Every Arrow batch as Python values (batch boundaries kept) and every finding."""
    findings = []
    batches = [b.to_pylist() for b in
               segtools.open(path).to_arrow(on_finding=findings.append, **options)]
    return batches, [(f.code, str(f.path), f.position, f.offset, f.message) for f in findings]


@pytest.fixture
def mapped(monkeypatch):
    """Every sealed fixture segment mapped (they are below the size read whole), walked in
    tiny chunks on a thread of its own: every chunk boundary and the hand-over run."""
    monkeypatch.setattr(segment_room, "SMALL_FILE", 0)
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 512)
    monkeypatch.setattr(fetch_rows, "WINDOW_BYTES", 1024)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")


def both_ways(monkeypatch, path, **options) -> tuple[tuple, tuple]:
    monkeypatch.setattr(walk, "LEAVE_CRC_FROM", 0)
    left = read(path, **options)
    monkeypatch.setattr(walk, "LEAVE_CRC_FROM", NEVER)
    return left, read(path, **options)


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_every_fixture_tree_reads_the_same_whoever_checks_the_crcs(tree, option,
                                                                   monkeypatch):
    left, walked = both_ways(monkeypatch, tree, **OPTIONS[option])
    assert left == walked


@pytest.mark.parametrize("option", ["default", "control_headers", "bounded", "committed"])
@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_every_mapped_fixture_tree_reads_the_same_whoever_checks_the_crcs(tree, option,
                                                                          monkeypatch, mapped):
    left, walked = both_ways(monkeypatch, tree, **OPTIONS[option])
    assert left == walked


def _shifted(batch: bytes, shift: int) -> bytes:
    """The batch with its base offset moved (the CRC starts after it, so it stays valid)."""
    return struct.pack(">q", struct.unpack_from(">q", batch)[0] + shift) + batch[8:]


def _corrupt_copies(root, copies: int) -> tuple:
    """A sealed (mapped) segment of ``copies`` shifted copies of a transactional fixture
    segment (data batches and control markers), with a byte changed in a data batch of copy
    7, in a control batch of copy 13 and in the last batch; the positions of the three."""
    src = SAMPLE / "payments.txn-0" / "00000000000000000000.log"
    raw = src.read_bytes()
    positions, pos = [], 0
    while pos < len(raw):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", raw, pos + 8)[0]
    assert raw[positions[4] + 22] & 0x20  # the fifth batch is a control batch
    span = 20
    data = bytearray(b"".join(
        b"".join(_shifted(raw[a:b], span * k) for a, b in
                 zip(positions, [*positions[1:], len(raw)], strict=True))
        for k in range(copies)))
    bad = [7 * len(raw) + positions[2], 13 * len(raw) + positions[4],
           (copies - 1) * len(raw) + positions[-1]]
    for at in bad:
        data[at + 70] ^= 0xFF  # past the header: only the CRC sees it
    pdir = root / "big-0"
    pdir.mkdir(parents=True)
    shutil.copy(SAMPLE / "meta.properties", root / "meta.properties")
    (pdir / "00000000000000000000.log").write_bytes(bytes(data))
    end = span * copies
    (pdir / f"{end:020d}.log").write_bytes(_shifted(raw[:positions[1]], end))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_text(f"0\n1\nbig 0 {end + 20}\n")
    return pdir, bad, len(raw)


@pytest.mark.parametrize("options", [
    {}, dict(include_control=True), dict(start_offset=150, end_offset=290),
    dict(columns=["offset", "value", "crc_valid"], include_control=True, binary="binary"),
], ids=["default", "control", "bounded", "columns"])
def test_bad_crcs_mid_segment_are_reported_as_the_walk_reports_them(tmp_path, monkeypatch,
                                                                   options):
    """A mapped segment read in many chunks on two threads: a bad CRC in a data batch, in a
    control batch (never decoded by default: its CRC is checked after the decode) and in the
    last batch are each reported once, in file order, with the rows of a walk that checks
    every CRC itself, whatever share of each chunk's decode the walk's thread takes."""
    pdir, bad, size = _corrupt_copies(tmp_path / "logs", 20)

    def chunked() -> None:  # mapped, walked three copies a chunk on a thread of its own
        monkeypatch.setattr(segment_room, "SMALL_FILE", 0)
        monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
        monkeypatch.setattr(fetch_rows, "WINDOW_BYTES", 6 * size)
        monkeypatch.setenv("SEGTOOLS_WORKERS", "2")

    chunked()
    monkeypatch.setattr(walk, "LEAVE_CRC_FROM", NEVER)
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    want = read(pdir, **options)
    monkeypatch.undo()
    chunked()
    monkeypatch.setattr(walk, "LEAVE_CRC_FROM", 0)
    # every batch of the range is checked, shown or not (with bounds, the range is the whole
    # segment: it has no offset index to start from)
    assert [f[2] for f in want[1] if f[0] == "crc_mismatch"] == bad
    shares = []
    real = fetch_rows._Share.waited

    def pinned(share: float):
        def waited(self, seconds: float) -> None:
            real(self, seconds)
            self.fraction = share
            shares.append(share)
        return waited

    for share in (0.0, 0.5, 1.0):
        monkeypatch.setattr(fetch_rows._Share, "waited", pinned(share))
        assert read(pdir, **options) == want
    assert set(shares) == {0.0, 0.5, 1.0}  # the walk had a thread of its own
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert read(pdir, **options) == want


def test_large_batches_leave_their_crcs_and_small_ones_do_not(tmp_path):
    """By default only batches of ``LEAVE_CRC_FROM`` bytes or more are left to the reader:
    a one-record batch's CRC costs less in the walk."""
    from segtools.decode.source import BufferSource

    small = (SAMPLE / "payments.txn-0" / "00000000000000000000.log").read_bytes()
    large = (SAMPLE / "orders.v2-eu-0" / "00000000000000000005.log").read_bytes()
    assert len(small) < walk.LEAVE_CRC_FROM <= len(large)
    for data, left in ((small, 0), (large, 1)):
        chunk = next(iter(walk.walk(BufferSource(data), verify_crc=True, leave_crc=True)))
        assert len(chunk.left) == left
