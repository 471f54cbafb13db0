"""No step grows faster than the tree: the work of ``scan``, ``verify``, ``retention`` and
``report`` over 10,000 partitions is at most 11 times their work over 1,000 (issue 25).

Work is counted, not timed: the Python function calls the command makes (``cProfile``'s
count), which a quadratic step shows at once (comparing every partition with every other was a
million calls at 1,000 partitions and a hundred million at 10,000), and which a shared or slow
machine does not change. The trees are cheap: every partition directory holds one hard link
to a Kafka-written segment of the sample tree (its indexes left out: Kafka rebuilds them, and
the commands note it), under its own topic name.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import pstats

import pytest

from segtools.cli.main import main
from tests.fixtures_manifest import SAMPLE

SOURCE = SAMPLE / "payments-compact-1" / "00000000000000000000.log"
SIZES = (1_000, 10_000)
GROWTH = 11


def tiny_tree(root, partitions: int):
    root.mkdir()
    (root / "meta.properties").write_bytes((SAMPLE / "meta.properties").read_bytes())
    lines = []
    for i in range(partitions):
        pdir = root / f"t{i // 50:04d}-{i % 50}"
        pdir.mkdir()
        os.link(SOURCE, pdir / SOURCE.name)
        lines.append(f"t{i // 50:04d} {i % 50} 12\n")
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_text(f"0\n{len(lines)}\n" + "".join(lines))
    return root


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("scale")
    return {n: tiny_tree(base / f"tree-{n}", n) for n in SIZES}


def calls(argv: list[str]) -> int:
    """Python function calls made by one command (its output goes to a pipe-like buffer)."""
    profile = cProfile.Profile()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        profile.enable()
        code = main(argv)
        profile.disable()
    assert code in (0, 1), out.getvalue()[-500:]
    assert out.getvalue()
    return sum(row[1] for row in pstats.Stats(profile).stats.values())


@pytest.mark.parametrize("command", [["scan", "-q"], ["verify", "-q"],
                                     ["retention", "-q", "--no-deep", "--at", "1700100000000"]])
def test_work_grows_linearly_with_the_tree(trees, command, monkeypatch):
    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")  # all the work in this process, counted
    small, large = (calls([*command, str(trees[n])]) for n in SIZES)
    assert large <= GROWTH * small, (command[0], small, large, large / small)


def test_the_report_grows_linearly_with_the_tree(trees, tmp_path, monkeypatch):
    """``report`` runs every analysis and lays out a page with a row and a detail per
    partition: the same bound holds for all of it."""
    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    small, large = (calls(["report", "-q", "--at", "1700100000000", str(trees[n]),
                           "-o", str(tmp_path / f"report-{n}.html")]) for n in SIZES)
    assert large <= GROWTH * small, (small, large, large / small)
