"""A small segment read whole and walked in one call gives the table the ordinary walk gives,
or steps aside (None) whenever that walk has anything to say: on every ``.log`` of the
fixture trees, Kafka-written and hostile, with and without the CRC check."""

from __future__ import annotations

import numpy as np
import pytest

from segtools.decode.source import BufferSource
from segtools.decode.table import COLUMNS
from segtools.decode.walk import FIRST_ROWS, table, whole_table
from tests.fixtures_manifest import FIXTURES

LOGS = sorted(p for p in (FIXTURES / "logdirs").rglob("*.log")
              if p.is_file() and p.stat().st_size <= 256 * 1024)


@pytest.mark.parametrize("verify_crc", [True, False])
def test_whole_table_is_the_walk_or_steps_aside(verify_crc):
    taken = stepped = 0
    for path in LOGS:
        data = path.read_bytes()
        walked, findings = table(BufferSource(data), path=str(path), verify_crc=verify_crc)
        whole = whole_table(data, verify_crc=verify_crc)
        if whole is None:
            stepped += 1
            continue
        taken += 1
        assert not findings, path
        for name in COLUMNS:
            assert np.array_equal(getattr(whole, name), getattr(walked, name)), (path, name)
            assert getattr(whole, name).dtype == getattr(walked, name).dtype
    # the trees hold both: clean segments, and damaged or legacy-compressed ones
    assert taken > 50 and stepped > 5, (taken, stepped)


def test_a_damaged_segment_steps_aside():
    """Each way a walk can end early or meet a problem: whole_table leaves it to the walk."""
    path = next(p for p in LOGS if whole_table(p.read_bytes()) is not None
                and p.stat().st_size > 200)
    data = path.read_bytes()
    assert whole_table(data[:-5]) is None  # torn tail
    assert whole_table(data + bytes(30)) is None  # zero tail
    flipped = bytearray(data)
    flipped[70] ^= 0xFF  # inside the first batch's CRC coverage
    assert whole_table(bytes(flipped)) is None
    assert whole_table(bytes(flipped), verify_crc=False) is not None


def test_more_batches_than_the_first_table_holds():
    """A segment of more batches than :data:`FIRST_ROWS` is walked again into a table sized
    for its bytes: the same table as the walk's, and a torn tail or a bad CRC past the first
    table's rows still steps aside."""
    path = max(LOGS, key=lambda p: len(table(BufferSource(p.read_bytes()))[0])
               if whole_table(p.read_bytes()) is not None else 0)
    data = path.read_bytes()
    walked, _ = table(BufferSource(data), path=str(path))
    assert len(walked) > FIRST_ROWS
    whole = whole_table(data)
    for name in COLUMNS:
        assert np.array_equal(getattr(whole, name), getattr(walked, name)), (path, name)
    assert whole_table(data[:-5]) is None
    flipped = bytearray(data)
    flipped[int(walked.position[-1]) + 70] ^= 0xFF  # inside the last batch's CRC coverage
    assert whole_table(bytes(flipped)) is None
    assert whole_table(bytes(flipped), verify_crc=False) is not None
