"""``--salvage``: past damage, the walk resynchronises on the next batch whose CRC validates,
recovers every batch the damage did not touch, and says which bytes and offsets were lost."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.findings import Finding
from segtools.model import Batch
from tests.decoding import batches_of, salvage_items
from tests.fixtures_manifest import LOGS, log_path

CASES = ("v2-transactions", "v1-create-time", "v2-record-edge-cases")
SEGMENTS = {c: log_path(next(e for e in LOGS if e["case"] == c)).read_bytes() for c in CASES}
SEGMENT = SEGMENTS["v2-transactions"]
GOOD = batches_of(SEGMENT)


def salvage(buf):
    items = salvage_items(buf)
    return ([i for i in items if isinstance(i, Batch)],
            [i for i in items if isinstance(i, Finding)])


def test_clean_segment_unchanged():
    batches, findings = salvage(SEGMENT)
    assert batches == GOOD and not findings


def test_smashed_length_field_resyncs_on_the_next_batch():
    victim = GOOD[2]
    buf = bytearray(SEGMENT)
    buf[victim.position + 8:victim.position + 12] = (7).to_bytes(4, "big")
    batches, findings = salvage(bytes(buf))
    assert [b.position for b in batches] == [b.position for b in GOOD if b is not victim]
    skipped = [f for f in findings if f.code == "salvage_skipped"]
    assert len(skipped) == 1 and skipped[0].position == victim.position
    assert f"offsets {victim.base_offset}..{victim.last_offset} lost" in skipped[0].message


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CASES), st.integers(0, 2**32), st.integers(1, 64))
def test_random_damage_recovers_every_untouched_batch(case, seed, length):
    original = SEGMENTS[case]
    good = batches_of(original)
    rnd = random.Random(seed)
    start = rnd.randrange(len(original) - length)
    buf = bytearray(original)
    for i in range(start, start + length):
        buf[i] = rnd.randrange(256)
    batches, _ = salvage(bytes(buf))
    untouched = [b for b in good if b.end <= start or b.position >= start + length]
    got = {(b.position, b.crc) for b in batches if b.crc_valid}
    assert {(b.position, b.crc) for b in untouched} <= got
