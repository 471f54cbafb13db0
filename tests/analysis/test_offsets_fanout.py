"""``__consumer_offsets`` partitions replayed side by side, in worker processes
(``OffsetsReplaying``), answer byte for byte as one replay of them all does: the ``offsets``
command's whole output (text and JSON lines, the latest offsets and ``--history``, filtered by
group and topic) on every fixture tree holding the topic and on a generated log of five
partitions whose groups rewind at every copy (every section of anomalies interleaved across
partitions); and the library's answer, field for field, with each kind of sink. A group
whose records lie in two partitions (no broker writes that, a hand-made tree can) and copies
of one partition (log dirs of several brokers) are replayed as one process replays them."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from benchmarks import internal_logs
from segtools import fanout
from segtools.analysis import offsets as offsets_room
from segtools.analysis.offsets import begin_replay, replay_offsets
from segtools.analysis.partition_log import partitions_of
from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES

TOPIC = "__consumer_offsets"
FORENSICS = FIXTURES / "logdirs" / "forensics"
TREES = [p for p in sorted((FIXTURES / "logdirs").iterdir()) if partitions_of([p], TOPIC)]


@pytest.fixture(scope="module")
def rewinding(tmp_path_factory) -> Path:
    """The forensics tree's five ``__consumer_offsets`` partitions, each repeated three times
    (``benchmarks/internal_logs``: Kafka's batches, CRC-32C recomputed), every copy rewinding
    its groups: regressions, deletions and removed groups in every partition."""
    root = tmp_path_factory.mktemp("offsets-rewinding")
    for name in internal_logs.TOPICS_OFFSETS:
        part = FORENSICS / name
        internal_logs.repeat(part, root, 3 * sum(f.stat().st_size for f in part.glob("*.log")))
    return root


def _output(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def _workers(monkeypatch, n: int) -> list[bool]:
    """``n`` workers, whatever the size of the log; returns a list saying, for each replay
    begun, whether it went to workers."""
    monkeypatch.setenv("SEGTOOLS_WORKERS", str(n))
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    forked: list[bool] = []
    real = offsets_room.OffsetsReplaying.__init__

    def spied(self, *args, **kwargs):
        real(self, *args, **kwargs)
        forked.append(self.forked)

    monkeypatch.setattr(offsets_room.OffsetsReplaying, "__init__", spied)
    return forked


OPTIONS = [[], ["--format", "jsonl"], ["--history"], ["--history", "--format", "jsonl"],
           ["--group", "b*", "--topic", "orders.v2-eu"],
           ["--at", "2023-11-20T09:07:00Z", "--format", "jsonl"]]


@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_workers_print_what_one_process_prints(options, rewinding, monkeypatch):
    trees = [*TREES, rewinding]
    expected = []
    with monkeypatch.context() as serial:
        _workers(serial, 1)
        for tree in trees:
            expected.append(_output(["offsets", "-q", *options, str(tree)]))
    forked = _workers(monkeypatch, 2)
    for tree, answer in zip(trees, expected, strict=True):
        assert _output(["offsets", "-q", *options, str(tree)]) == answer, tree.name
    many = [len(partitions_of([tree], TOPIC)) > 1 for tree in trees]
    assert forked == many and any(many)
    assert "regression" in expected[-1][1] or "--group" in options or "--at" in options


def _answer(replay) -> tuple:
    return (replay.paths, list(replay.groups.items()), replay.commits, replay.regressions,
            replay.deletions, replay.group_deletions, replay.findings, replay.records)


@pytest.mark.parametrize("sink", ["none", "callable"])
def test_the_library_merges_as_one_replay_answers(sink, rewinding, monkeypatch):
    """Without a sink the anomalies come back in the answer, in each partition's order; a
    sink that is only a callable gets them all, in the order one replay finds them."""
    parts = partitions_of([rewinding], TOPIC)
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    answers = []
    for processes in (1, 2):
        found: list = []
        replay = replay_offsets(parts, history=True, processes=processes,
                                sink=None if sink == "none" else found.append)
        answers.append((_answer(replay), found))
    assert answers[1] == answers[0]
    assert answers[0][0][3] or answers[0][1]  # regressions, in the answer or the sink


def test_a_group_in_two_partitions_is_replayed_by_one_process(tmp_path, monkeypatch):
    """The forensics tree with one partition copied under another number: its groups' records
    lie in two partitions, so one replay holds them (and reports, say, the copy's commits as
    regressions of the original's); the workers' answers are dropped for it."""
    for part in FORENSICS.glob(f"{TOPIC}-*"):
        shutil.copytree(part, tmp_path / part.name)
    shutil.copytree(FORENSICS / f"{TOPIC}-39", tmp_path / f"{TOPIC}-40")
    parts = partitions_of([tmp_path], TOPIC)
    serial = _output(["offsets", "-q", "--format", "jsonl", str(tmp_path)])
    forked = _workers(monkeypatch, 2)
    merges: list = []
    merged = offsets_room._merged
    monkeypatch.setattr(offsets_room, "_merged",
                        lambda *a: merges.append(merged(*a)) or merges[-1])
    assert _output(["offsets", "-q", "--format", "jsonl", str(tmp_path)]) == serial
    assert forked == [True] and merges == [None]
    assert begin_replay(parts, processes=2).result() == replay_offsets(parts, processes=1)


def test_copies_of_one_partition_stay_in_one_process(tmp_path, monkeypatch):
    """Two log dirs holding the same partitions (copied from two brokers) replay in one
    process: their groups are the same."""
    for d in ("broker-1", "broker-2"):
        shutil.copytree(FORENSICS, tmp_path / d)
    forked = _workers(monkeypatch, 2)
    code, out = _output(["offsets", "-q", str(tmp_path / "broker-1"), str(tmp_path / "broker-2")])
    assert forked == [False] and code == 1 and "offset regressions" in out
