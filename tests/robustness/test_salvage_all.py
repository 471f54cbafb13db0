"""Salvage check (issue 8 §6) on every fixture ``.log``: for random damage, the salvaging walk
recovers every batch the damage did not touch, exactly as it was in the undamaged original;
and ``verify --salvage`` says so through the CLI.

tests/decode/test_salvage.py holds the property on three segments; this extends it to every
Kafka-written segment (every codec, v0/v1 wrappers, control batches, compacted and torn ones).
"""

from __future__ import annotations

import json
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.findings import Finding
from segtools.model import Batch
from tests.decoding import batches_of, salvage_items
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

LOGS = sorted(p for p in (FIXTURES / "logdirs").rglob("*.log") if p.stat().st_size)
ORIGINALS = {p: p.read_bytes() for p in LOGS}
GOOD = {p: [b for b in batches_of(data) if b.crc_valid]
        for p, data in ORIGINALS.items()}


def damage(data: bytes, seed: int, length: int) -> tuple[bytes, int, int]:
    rnd = random.Random(seed)
    length = min(length, len(data))
    start = rnd.randrange(len(data) - length + 1)
    buf = bytearray(data)
    for i in range(start, start + length):
        buf[i] = rnd.randrange(256)
    return bytes(buf), start, start + length


def untouched(path, start: int, stop: int) -> list[Batch]:
    return [b for b in GOOD[path] if b.end <= start or b.position >= stop]


def recovered(buf: bytes) -> list[Batch]:
    return [b for b in salvage_items(buf) if isinstance(b, Batch)]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_recovers_every_untouched_batch(path):
    data = ORIGINALS[path]
    for seed in range(6):
        buf, start, stop = damage(data, seed, 1 + seed * 11)
        got = {b.position: b for b in recovered(buf)}
        for b in untouched(path, start, stop):
            assert got.get(b.position) == b, (seed, start, stop, b)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(LOGS), st.integers(0, 2**32), st.integers(1, 200))
def test_random_damage_anywhere(path, seed, length):
    buf, start, stop = damage(ORIGINALS[path], seed, length)
    items = salvage_items(buf)
    got = {b.position: b for b in items if isinstance(b, Batch)}
    assert all(got.get(b.position) == b for b in untouched(path, start, stop))
    assert all(isinstance(i, Batch | Finding) for i in items)
    positions = [b.position for b in items if isinstance(b, Batch)]
    assert positions == sorted(set(positions))


def test_verify_salvage_reports_the_loss_through_the_cli(tmp_path):
    """One damaged copy through ``verify --salvage``: the lost bytes are reported as
    ``salvage_skipped`` and every other batch is still verified (no CRC finding for them)."""
    src = next(p for p in LOGS if p.parent.name == "payments.txn-0")
    pdir = tmp_path / "payments.txn-0"
    shutil.copytree(src.parent, pdir)
    victim = GOOD[src][3]
    buf = bytearray(ORIGINALS[src])
    buf[victim.position + 8:victim.position + 12] = (3).to_bytes(4, "big")
    (pdir / src.name).write_bytes(bytes(buf))
    r = run_cli(["verify", "--salvage", "--format", "jsonl", "-q", str(pdir / src.name)])
    assert r.code == 1
    findings = [json.loads(line) for line in r.stdout.decode().splitlines()]
    skipped = [f for f in findings if f.get("code") == "salvage_skipped"]
    assert len(skipped) == 1 and skipped[0]["position"] == victim.position
    assert not [f for f in findings if f.get("code") == "crc_mismatch"]
    clean = run_cli(["verify", "--format", "jsonl", "-q", str(pdir / src.name)])
    assert any('"corrupt_batch_length"' in line for line in clean.stdout.decode().splitlines())
