"""Damaged internal-topic logs: every replay ends with findings, never an exception."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.analysis.cluster_metadata import timeline
from segtools.analysis.offsets import replay_offsets
from segtools.analysis.partition_log import as_partition
from segtools.analysis.transaction_state import replay_transaction_state
from segtools.analysis.transactions import analyse_partition

from .helpers import FORENSICS

TARGETS = {
    "__cluster_metadata-0": lambda p: timeline(p, keep_records=True),
    "__consumer_offsets-39": lambda p: replay_offsets([as_partition(p)]),
    "__consumer_offsets-9": lambda p: replay_offsets([as_partition(p)]),
    "__transaction_state-5": lambda p: replay_transaction_state([as_partition(p)]),
    "payments.hanging-0": lambda p: analyse_partition(as_partition(p)),
}


@settings(max_examples=60, deadline=None)
@given(target=st.sampled_from(sorted(TARGETS)), data=st.data())
def test_flipped_and_cut_logs_never_raise(target, data):
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / target
        shutil.copytree(FORENSICS / target, pdir)
        log = sorted(pdir.glob("*.log"))[0]
        raw = bytearray(log.read_bytes())
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= data.draw(st.integers(1, 255))
        if data.draw(st.booleans()):
            raw = raw[:data.draw(st.integers(0, len(raw)))]
        log.write_bytes(bytes(raw))
        TARGETS[target](pdir)
