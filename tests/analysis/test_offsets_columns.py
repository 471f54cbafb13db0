"""The ``offsets`` command's anomalies rendered a block at a time from columns
(``analysis/offsets_columns.py``, ``Anomalies.take``) are byte for byte the lines rendered
one object at a time (``Anomalies.__call__``, what every other sink still gets): the whole
output, text and JSON lines, latest offsets and ``--history``, filtered by group and topic,
on every fixture tree holding ``__consumer_offsets``, on the forensics tree's partitions
repeated (consuming on and rewinding, as written and one record per batch) in small blocks,
and on generated logs (plain and transactional commits, markers, tombstones, classic and
KIP-848 groups). Names and moments whose text has edge cases (controls, lone surrogates,
dates past year 9999, Kafka's -1) are held to the one-at-a-time renderers directly."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segtools.analysis import offsets as offsets_room
from segtools.analysis.offsets import GroupDeletion, Location, OffsetDeletion
from segtools.analysis.offsets_columns import DeletionColumns, GroupDeletionColumns
from segtools.analysis.partition_log import partitions_of
from segtools.cli import offsets as offsets_cli
from segtools.cli import render
from segtools.cli.main import main
from segtools.decode import programs
from tests.analysis.test_offsets_compiled import (
    _CLASSIC,
    _COMMIT,
    _MARKER,
    _MODERN,
    _log,
    copies,  # noqa: F401 (a fixture: the repeated logs)
)
from tests.fixtures_manifest import FIXTURES
from tests.forensics import write_partition

TOPIC = "__consumer_offsets"
TREES = [p for p in sorted((FIXTURES / "logdirs").iterdir()) if partitions_of([p], TOPIC)]
OPTIONS = [[], ["--format", "jsonl"], ["--history"], ["--history", "--format", "jsonl"],
           ["--group", "b*", "--topic", "orders.v2-eu"],
           ["--topic", "orders.v2-eu", "--partition", "1", "--format", "jsonl"]]


class _NoColumns:
    """Matches no sink: the replay hands every anomaly over as an object."""


def _output(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def _both(monkeypatch, tree: Path, options: list[str]) -> tuple:
    """The command's output with the anomalies as columns, and as objects."""
    argv = ["offsets", "-q", "--jobs", "1", *options, str(tree)]
    columns = _output(argv)
    with monkeypatch.context() as objects:
        objects.setattr(offsets_room, "ColumnSink", _NoColumns)
        return columns, _output(argv)


@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_columns_print_what_objects_print(options, copies, monkeypatch):  # noqa: F811
    blocks = programs.Decoder.blocks
    monkeypatch.setattr(programs.Decoder, "blocks",  # many blocks, each with a few anomalies
                        lambda self, chunk, rows=0: blocks(self, chunk, 24))
    for tree in [*TREES, *copies.values()]:
        columns, objects = _both(monkeypatch, tree, options)
        assert columns == objects, tree.name
    if "--history" not in options and "--topic" not in options:
        for section in ("regression", "deleted", "group"):
            assert section in objects[1], section  # every kind of anomaly was compared


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(records=st.lists(st.one_of(_COMMIT, _COMMIT, _MARKER, _CLASSIC, _MODERN), min_size=4,
                        max_size=40),
       jsonl=st.booleans())
def test_generated_logs_print_the_same_with_columns(records, jsonl, monkeypatch):
    """Regressions and deletions found by the compiled loop and by Python (transactional
    commits applied at their marker, keys met for the first time) interleave in log order."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        write_partition(tree, "__consumer_offsets-0", _log(records))
        columns, objects = _both(monkeypatch, tree, ["--format", "jsonl"] if jsonl else [])
        assert columns == objects


_EDGES = [-1, 0, 999, 1_700_000_000_123, offsets_cli._LAST_MS, offsets_cli._LAST_MS + 1,
          2**63 - 1]


@given(st.lists(st.one_of(st.sampled_from(_EDGES), st.integers(-(2**63) + 1, 2**63 - 1)),
                max_size=20).flatmap(lambda distinct: st.lists(
                    st.sampled_from(distinct), max_size=60) if distinct else st.just([]))
       | st.lists(st.integers(-(2**63) + 1, 2**63 - 1), max_size=20))
def test_many_moments_read_as_one_at_a_time(moments):
    """Moments repeated in any order (a request's commits share one), and distinct ones."""
    assert offsets_cli._human_times(moments) == [render.human_time(m) for m in moments]


_NAMES = ["plain", "caf\u00e9", "bell\x07", "c1\x9b[31m", "bidi\u202e", "line\u2028end",
          "lone\udcff", 'quote"back\\slash', "\U0001f600"]


@pytest.mark.parametrize("group", _NAMES)
@pytest.mark.parametrize("topic", ["orders", "t\udc80", "t\u200b"])
def test_names_in_json_lines_as_render_dumps_writes_them(group, topic):
    where = Location(3, 42, 1_700_000_000_000)
    deletion = OffsetDeletion(group, topic, 7, None, where)
    columns = DeletionColumns([group], [topic], [7], [None], [3], [42], [where.timestamp])
    names = offsets_cli._Names()
    expected = render.dumps(deletion.to_json())
    assert offsets_cli._deletion_json_lines(columns, names, None) == [expected]
    removed = GroupDeletionColumns([group], [3], [42], [where.timestamp])
    assert offsets_cli._group_deletion_json_lines(removed, names) == \
        [render.dumps(GroupDeletion(group, where).to_json())]
    args = argparse.Namespace(format="text", topic=None, partition=None)
    sink = offsets_cli.Anomalies(args, tempfile.gettempdir())
    sink(deletion)
    assert offsets_cli._deletion_lines(columns, names, None) == sink.pending["deletions"]
    json.loads(expected)
