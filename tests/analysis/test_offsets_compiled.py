"""The ``__consumer_offsets`` replay's compiled loop (``analysis/_offsets.pyx``) is held to the
rule written in Python: on every fixture tree holding the topic, whole and up to a moment, the
replay with the compiled loop applying the plain commits equals the replay with every row
handed to Python, field for field (groups, their offsets, the history of commits,
regressions, deletions, group deletions, findings)."""

from __future__ import annotations

import numpy as np
import pytest

from segtools.analysis import offsets as offsets_room
from segtools.analysis.offsets import replay_offsets
from segtools.analysis.partition_log import partitions_of
from tests.fixtures_manifest import FIXTURES

TREES = [p for p in sorted((FIXTURES / "logdirs").iterdir())
         if partitions_of([p], "__consumer_offsets")]


def _python_only(monkeypatch) -> list[int]:
    """Every row handed to Python: the compiled loop may apply no key. Returns a list that
    counts the rows the loop was offered."""
    offered: list[int] = []
    compiled = offsets_room._offsets.apply_commits

    def nothing_fast(kinds, key_code, vver, vals, *rest):
        rest = list(rest)
        fast = rest[13]
        offered.append(int((np.asarray(kinds) == 1).sum()))
        rest[13] = np.zeros_like(fast)
        return compiled(kinds, key_code, vver, vals, *rest)

    monkeypatch.setattr(offsets_room._offsets, "apply_commits", nothing_fast)
    return offered


def _replayed(tree, **kw):
    r = replay_offsets(partitions_of([tree], "__consumer_offsets"), history=True, **kw)
    return (r.groups, r.commits, r.regressions, r.deletions, r.group_deletions, r.findings,
            r.records)


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
@pytest.mark.parametrize("at", [None, 1_700_471_250_000])
def test_the_compiled_loop_is_the_python_rule(tree, at, monkeypatch):
    compiled = _replayed(tree, at=at)
    offered = _python_only(monkeypatch)
    assert _replayed(tree, at=at) == compiled
    assert at is not None or sum(offered), "no plain commit was offered to the loop"


def test_every_tree_with_group_offsets_is_compared():
    assert {p.name for p in TREES} >= {"forensics", "zookeeper", "hostile"}
