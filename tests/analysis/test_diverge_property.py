"""The columnar replica comparison against a plain batch-by-batch reference, on generated
replicas: a shared history, then each replica's own batches (an old leader's, or none), from
different log starts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.analysis.diverge import BATCH_ID, BatchId, BatchIds, Replica, compare
from segtools.formats.checkpoints import EpochEntry


def _reference(replicas: list[list[BatchId]]) -> tuple:
    """The comparison as a loop over batches (what ``compare`` did before it was columnar)."""
    common_start = max((r[0].base_offset if r else 0) for r in replicas)
    cursors = [[b for b in r if b.last_offset >= common_start] for r in replicas]
    i, agreed, all_agree, first = 0, common_start, None, None
    while True:
        current = [c[i] if i < len(c) else None for c in cursors]
        present = [b for b in current if b is not None]
        if not present:
            break
        if len(set(present)) > 1:
            first = min(b.base_offset for b in present)
            break
        if len(present) < len(current) and all_agree is None:
            all_agree = i
        if all_agree is None:
            agreed = present[0].last_offset + 1
        i += 1
    if all_agree is None:
        all_agree = i
    unique = []
    for k, c in enumerate(cursors):
        others = set().union(*(set(o[all_agree:]) for j, o in enumerate(cursors) if j != k))
        unique.append([(b.base_offset, b.last_offset) for b in c[all_agree:] if b not in others])
    return agreed, first, unique


def _batches(draw, start: int, count: int, epoch: int, salt: int) -> list[BatchId]:
    out, offset = [], start
    for _ in range(count):
        n = draw(st.integers(1, 3))
        out.append(BatchId(offset, offset + n - 1, (offset * 31 + salt) % 2**32, epoch, n,
                           1_700_000_000_000 + offset))
        offset += n
    return out


@st.composite
def replica_sets(draw):
    shared = _batches(draw, 0, draw(st.integers(0, 12)), 0, 0)
    out = []
    for _ in range(draw(st.integers(2, 4))):
        keep = draw(st.integers(0, len(shared)))
        drop = draw(st.integers(0, keep))  # retention moved this replica's log start
        own = _batches(draw, shared[keep - 1].last_offset + 1 if keep else 0,
                       draw(st.integers(0, 4)), 1 + draw(st.integers(0, 1)),
                       draw(st.integers(0, 2))) if keep == len(shared) or draw(st.booleans()) \
            else []
        out.append(shared[drop:keep] + own)
    return out


def _replica(k: int, batches: list[BatchId]) -> Replica:
    rows = np.array([(b.base_offset, b.last_offset, b.crc, b.leader_epoch, b.records,
                      b.max_timestamp) for b in batches], BATCH_ID)
    return Replica(f"r{k}", SimpleNamespace(path=Path(f"/r{k}")), BatchIds(rows),
                   (EpochEntry(0, 0),))


@settings(max_examples=300, deadline=None)
@given(replica_sets())
def test_columnar_comparison_equals_the_batch_by_batch_one(sets):
    d = compare([_replica(k, b) for k, b in enumerate(sets)])
    agreed, first, unique = _reference(sets)
    assert (d.agreed_until, d.first_difference) == (agreed, first)
    got = [[] for _ in sets]
    for u in d.unique:
        got[int(u.replica[1:])].append((u.start_offset, u.end_offset))
    want = []
    for spans in unique:  # the reference lists batches; compare covers them in ranges
        merged: list[tuple[int, int]] = []
        for a, b in spans:
            if merged and merged[-1][1] + 1 == a:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        want.append(merged)
    flat = [[(a, b) for a, b in g] for g in got]
    for g, w in zip(flat, want, strict=True):
        assert _cover(g) == _cover(w)


def _cover(spans):
    return sorted(o for a, b in spans for o in range(a, b + 1))
