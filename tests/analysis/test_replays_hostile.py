"""Damaged internal-topic logs: every replay returns its answer with findings as values, never
an exception; and a log cut inside a batch always says so in a finding."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.analysis.cluster_metadata import timeline
from segtools.analysis.offsets import replay_offsets
from segtools.analysis.partition_log import as_partition, iter_tables
from segtools.analysis.transaction_state import replay_transaction_state
from segtools.analysis.transactions import analyse_partition
from segtools.findings import Finding
from tests.forensics import FORENSICS

TARGETS = {
    "__cluster_metadata-0": lambda p: timeline(p, keep_records=True).findings,
    "__consumer_offsets-39": lambda p: replay_offsets([as_partition(p)]).findings,
    "__consumer_offsets-9": lambda p: replay_offsets([as_partition(p)]).findings,
    "__transaction_state-5": lambda p: replay_transaction_state([as_partition(p)]).findings,
    "payments.hanging-0": lambda p: analyse_partition(as_partition(p))[2],
}


def _batch_bounds(pdir: Path) -> set[int]:
    """File positions where a batch of the first segment starts or the segment ends."""
    tables = [t for _, _, t in iter_tables(as_partition(pdir), [])]
    ends = {int(p + s) for t in tables for p, s in zip(t.position, t.size, strict=True)}
    return ends | {int(p) for t in tables for p in t.position}


@settings(max_examples=60, deadline=None)
@given(target=st.sampled_from(sorted(TARGETS)), data=st.data())
def test_flipped_and_cut_logs_never_raise(target, data):
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / target
        shutil.copytree(FORENSICS / target, pdir)
        log = sorted(pdir.glob("*.log"))[0]
        bounds = _batch_bounds(pdir) if log == sorted(pdir.glob("*.log"))[-1] else None
        raw = bytearray(log.read_bytes())
        flips = data.draw(st.integers(0, 8))
        for _ in range(flips):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= data.draw(st.integers(1, 255))
        cut = data.draw(st.integers(0, len(raw))) if data.draw(st.booleans()) else len(raw)
        log.write_bytes(bytes(raw[:cut]))
        findings = TARGETS[target](pdir)
        assert all(isinstance(f, Finding) for f in findings)
        if not flips and bounds is not None and cut not in bounds:
            assert findings, f"{target} cut at {cut} inside a batch, no finding"
