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
from segtools.analysis.offsets import (
    GroupDeletion,
    Location,
    OffsetCommit,
    OffsetDeletion,
    OffsetRegression,
)
from segtools.analysis.offsets_columns import (
    DeletionColumns,
    GroupDeletionColumns,
    RegressionColumns,
)
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
    assert offsets_cli._deletion_json_text(columns, names, None) == (expected, 1)
    removed = GroupDeletionColumns([group], [3], [42], [where.timestamp])
    assert offsets_cli._group_deletion_json_lines(removed, names) == \
        [render.dumps(GroupDeletion(group, where).to_json())]
    args = argparse.Namespace(format="text", topic=None, partition=None)
    sink = offsets_cli.Anomalies(args, tempfile.gettempdir())
    sink(deletion)
    assert offsets_cli._deletion_text(columns, names, None) == \
        ("\n".join(sink.pending["deletions"]), 1)
    json.loads(expected)


_INT64 = st.one_of(st.sampled_from([-(2**63), -(2**63) + 1, -1, 0, 1, 9, 10, 2**63 - 1]),
                   st.integers(-(2**63), 2**63 - 1))
#: Names as the replay can hold them: any text but lone surrogates, and bytes that are not
#: UTF-8 (lone surrogates by ``surrogateescape``, what ``terminal_safe`` shows as ``\\xNN``).
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
#: A group's state is one of Kafka's words: printable ASCII (quotes drawn too).
_STATES = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
_ODD_NAMES = st.one_of(st.sampled_from(_NAMES), _TEXT,
                       st.binary(max_size=8).map(lambda b: b.decode("utf-8", "surrogateescape")))


@st.composite
def _block(draw) -> tuple[list[OffsetRegression], list[OffsetDeletion]]:
    """A block's regressions and deletions over a few odd names (repeated, as a log's are),
    at 64-bit edges (a difference past 64 bits too), with missing values."""
    groups = draw(st.lists(_ODD_NAMES, min_size=1, max_size=3))
    topics = draw(st.lists(_ODD_NAMES, min_size=1, max_size=3))
    moments = draw(st.lists(st.sampled_from(_EDGES), min_size=1, max_size=3))

    def where():
        return Location(draw(st.integers(0, 2**31 - 1)), draw(_INT64),
                        draw(st.sampled_from(moments)))

    def commit(group, topic, partition, offset):
        return OffsetCommit(group, topic, partition, offset, -1, "", 0, -1, 3, where())

    regressions, deletions = [], []
    for _ in range(draw(st.integers(0, 12))):
        group, topic = draw(st.sampled_from(groups)), draw(st.sampled_from(topics))
        partition = draw(st.integers(0, 2**31 - 1))
        if draw(st.booleans()):
            regressions.append(OffsetRegression(
                commit(group, topic, partition, draw(_INT64)),
                commit(group, topic, partition, draw(_INT64)),
                draw(st.one_of(st.sampled_from([None, "", "Stable", "Empty", "Dead"]),
                               _STATES)),
                draw(st.one_of(st.none(), _INT64))))
        else:
            deletions.append(OffsetDeletion(group, topic, partition,
                                            draw(st.one_of(st.none(), _INT64)), where()))
    return regressions, deletions


def _regression_columns(found: list[OffsetRegression]) -> RegressionColumns:
    out = RegressionColumns()
    for r in found:
        c, w = r.current, r.current.where
        for column, value in (("group", c.group), ("topic", c.topic),
                              ("partition", c.partition), ("previous_offset", r.previous.offset),
                              ("offset", c.offset), ("timestamp", c.effective_timestamp),
                              ("previous_timestamp", r.previous.effective_timestamp),
                              ("commit_timestamp", c.commit_timestamp),
                              ("group_state", r.group_state), ("generation", r.generation),
                              ("log_partition", w.partition), ("log_offset", w.offset),
                              ("log_timestamp", w.timestamp)):
            getattr(out, column).append(value)
    return out


@settings(max_examples=150, deadline=None)
@given(block=_block(), keep_seed=st.lists(st.booleans(), min_size=12, max_size=12),
       filtered=st.booleans())
def test_compiled_writer_writes_the_lines_one_at_a_time(block, keep_seed, filtered):
    """The compiled writer's block text and JSON lines (``_anomaly_lines.pyx``) are the
    one-object-at-a-time lines joined, with the names cached across blocks (the second pass
    finds them all)."""
    regressions, deletions = block
    names = offsets_cli._Names()
    reference = offsets_cli._Names()
    removed = DeletionColumns()
    for d in deletions:
        for column, value in (("group", d.group), ("topic", d.topic), ("partition", d.partition),
                              ("last_offset", d.last_offset), ("log_partition", d.where.partition),
                              ("log_offset", d.where.offset),
                              ("log_timestamp", d.where.timestamp)):
            getattr(removed, column).append(value)
    def dumps(anomaly, _names):
        return render.dumps(anomaly.to_json())

    for _ in range(2):
        for found, columns, text, line in (
                (regressions, _regression_columns(regressions), offsets_cli._regression_text,
                 offsets_cli._regression_line),
                (deletions, removed, offsets_cli._deletion_text, offsets_cli._deletion_line),
                (regressions, _regression_columns(regressions),
                 offsets_cli._regression_json_text, dumps),
                (deletions, removed, offsets_cli._deletion_json_text, dumps)):
            keep = keep_seed[:len(found)] if filtered else None
            kept = [a for i, a in enumerate(found) if keep is None or keep[i]]
            lines = [line(a, reference) for a in kept]
            assert text(columns, names, keep) == ("\n".join(lines), len(lines))
