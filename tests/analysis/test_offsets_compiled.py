"""The ``__consumer_offsets`` replay's compiled loop (``analysis/_offsets.pyx``) is held to the
rule written in Python: on every fixture tree holding the topic, whole and up to a moment, the
replay with the compiled loop applying the plain commits and folding the groups' own records
equals the replay with every row handed to Python, field for field (groups, their offsets,
members and parts in order, the history of commits, regressions, deletions, group deletions,
findings)."""

from __future__ import annotations

import dataclasses
import json
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import internal_logs
from segtools.analysis import offsets as offsets_room
from segtools.analysis.offsets import replay_offsets
from segtools.analysis.partition_log import partitions_of
from segtools.decode import programs
from segtools.formats.internal.consumer_offsets import (
    CONSUMER_GROUP_TYPES,
    GROUP_METADATA_TYPE,
    RECORD_TYPES,
    SHARE_GROUP_TYPES,
)
from tests.fixtures_manifest import FIXTURES
from tests.forensics import marker_batch, message_values, records_batch, write_partition

TREES = [p for p in sorted((FIXTURES / "logdirs").iterdir())
         if partitions_of([p], "__consumer_offsets")]


def _python_only(monkeypatch) -> list[int]:
    """Every row handed to Python: the compiled loop may apply no key and fold no group, and
    no group or key is known before Python reaches its first row.
    Returns a list that counts the rows the loop was offered (plain commits, foldable
    records)."""
    offered: list[int] = []
    compiled = offsets_room._offsets.apply_commits

    def nothing_fast(kinds, key_code, vver, vals, *rest):
        rest = list(rest)
        kinds = np.asarray(kinds)
        offered.append(int((kinds == offsets_room._offsets.PLAIN).sum()))
        offered.append(int((kinds == offsets_room._offsets.FOLDABLE).sum()))
        rest[12] = np.zeros_like(rest[12])  # fast: no key
        rest[-6] = np.zeros_like(rest[-6])  # group_fast: no group
        return compiled(kinds, key_code, vver, vals, *rest)

    monkeypatch.setattr(offsets_room._offsets, "apply_commits", nothing_fast)
    # transactional commits held by Python, applied at markers Python reaches
    monkeypatch.setattr(offsets_room._Replayer, "_loop_may_hold", lambda *args: False)
    # groups and keys met by Python as it reaches their rows, not ahead of the loop
    monkeypatch.setattr(offsets_room._Replayer, "_meet", lambda *args: None)
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
    assert at is not None or sum(offered[::2]), "no plain commit was offered to the loop"
    if tree.name == "forensics" and at is None:
        assert sum(offered[1::2]), "no group record was offered to the fold"


def test_every_tree_with_group_offsets_is_compared():
    assert {p.name for p in TREES} >= {"forensics", "zookeeper", "hostile"}



@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict:
    """The forensics tree's ``__consumer_offsets`` partitions, each repeated four times with
    rising offsets and timestamps (``benchmarks/internal_logs``: Kafka's batches, their
    CRC-32C recomputed), as written and one record per batch, the copies' groups consuming on
    or rewinding: every group's records recur block after block, as a long log's do."""
    out = {}
    for shape in internal_logs.SHAPES:
        for move_on in (False, True):
            root = tmp_path_factory.mktemp(f"offsets-{shape}-{move_on}")
            for name in internal_logs.TOPICS_OFFSETS:
                part = FIXTURES / "logdirs" / "forensics" / name
                size = sum(f.stat().st_size for f in part.glob("*.log"))
                internal_logs.repeat(part, root, 4 * size, shape, move_on)
            out[f"{shape}-{'on' if move_on else 'rewind'}"] = root
    return out


def _counting_folds(monkeypatch, rows: int) -> list[int]:
    """Blocks of ``rows`` records (a group met in one block is known in the next, so its
    records are folded), and a list counting the rows the loop folded."""
    folds: list[int] = []
    compiled = offsets_room._offsets.apply_commits
    blocks = programs.Decoder.blocks

    def counted(*args):
        out = compiled(*args)
        folds.append(int((np.asarray(args[-4]) >= 0).sum()))  # run
        return out

    monkeypatch.setattr(offsets_room._offsets, "apply_commits", counted)
    monkeypatch.setattr(programs.Decoder, "blocks",
                        lambda self, chunk, rows_=0: blocks(self, chunk, rows))
    return folds


@pytest.mark.parametrize("rows", [3, 8, 24])
@pytest.mark.parametrize("log", ["fixture-on", "fixture-rewind", "one-on", "one-rewind"])
def test_the_fold_of_group_records_is_the_python_rule(copies, log, rows, monkeypatch):
    """The forensics tree's groups (classic, KIP-848 consumer and share groups, members that
    join, leave and come back, tombstones, transactional commits, consumer-protocol bytes in
    an older layout) repeated, replayed in blocks of ``rows``: the loop folds their records,
    and the answer (groups and members as JSON, in order, and everything else the replay
    returns) is the one every row handed to Python gives."""
    tree = copies[log]
    with monkeypatch.context() as python:
        _python_only(python)
        expected = _replayed(tree)
        expected_json = _groups_json(tree)
    folds = _counting_folds(monkeypatch, rows)
    assert _replayed(tree) == expected
    assert _groups_json(tree) == expected_json
    assert sum(folds), "no group record was folded"


def _groups_json(tree) -> tuple:
    """The replay without its history (the compiled loop then applies commits and reports
    regressions itself), its groups as the CLI writes them: key order counts."""
    r = replay_offsets(partitions_of([tree], "__consumer_offsets"))
    return ([json.dumps(g.to_json()) for g in r.groups.values()], r.regressions, r.deletions,
            r.group_deletions, r.findings)


def _key_bytes(record_type: int, group: str, member: str = "", partition: int = 0) -> bytes:
    schema = RECORD_TYPES[record_type][1]
    return struct.pack(">h", record_type) + schema.write(
        {"group": group, "groupId": group, "memberId": member, "topic": "t",
         "partition": partition}, schema.valid.low)


def _value_bytes(record_type: int, value: dict | None) -> bytes | None:
    if value is None:
        return None
    schema = RECORD_TYPES[record_type][2]
    version = 3 if record_type <= GROUP_METADATA_TYPE else schema.valid.low
    return struct.pack(">h", version) + schema.write(value, version)


_GROUPS = st.sampled_from(["g", "h"])
_PRODUCERS = st.sampled_from([7, 8])
_COMMIT = st.tuples(st.just("commit"), _GROUPS, st.integers(0, 1),
                    st.one_of(st.none(), st.integers(0, 6)), st.booleans(), _PRODUCERS)
_MARKER = st.tuples(st.just("marker"), st.booleans(), _PRODUCERS)
_CLASSIC = st.tuples(st.just("classic"), _GROUPS, st.one_of(
    st.none(), message_values(RECORD_TYPES[GROUP_METADATA_TYPE][2], 3)))
_MODERN = st.sampled_from([*CONSUMER_GROUP_TYPES, *SHARE_GROUP_TYPES]).flatmap(
    lambda t: st.tuples(st.just("modern"), st.just(t), _GROUPS, st.sampled_from(["a", "b"]),
                        st.one_of(st.none(), message_values(RECORD_TYPES[t][2], 0))))


def _log(records: list[tuple]) -> list[bytes]:
    """Each record as its own batch: commits (transactional ones by producer 7, or the
    producer a sixth field names), markers (of producer 7, or the one a third field names),
    classic group metadata and KIP-848 / KIP-932 records (None: a tombstone)."""
    out = []
    for offset, rec in enumerate(records):
        ts = 1_700_000_000_000 + 1000 * offset
        if rec[0] == "marker":
            out.append(marker_batch("COMMIT" if rec[1] else "ABORT", offset=offset,
                                    timestamp=ts, producer_id=rec[2] if len(rec) > 2 else 7))
            continue
        if rec[0] == "commit":
            group, partition, committed, txn = rec[1:5]
            producer = rec[5] if len(rec) > 5 else 7
            pair = (_key_bytes(1, group, partition=partition), None if committed is None else
                    _value_bytes(1, {"offset": committed, "metadata": f"m{committed}",
                                     "commitTimestamp": ts}))
            out.append(records_batch([pair], base_offset=offset, timestamp=ts,
                                     producer_id=producer if txn else -1,
                                     producer_epoch=0 if txn else -1, transactional=txn))
            continue
        if rec[0] == "classic":
            pair = (_key_bytes(GROUP_METADATA_TYPE, rec[1]),
                    _value_bytes(GROUP_METADATA_TYPE, rec[2]))
        else:
            _, t, group, member, value = rec
            pair = (_key_bytes(t, group, member), _value_bytes(t, value))
        out.append(records_batch([pair], base_offset=offset, timestamp=ts))
    return out


_IDS = ["AAAAAAAAAAAAAAAAAAAAAA", "AQEBAQEBAQEBAQEBAQEBAQ"]
_ASSIGNED = st.lists(st.fixed_dictionaries({"topicId": st.sampled_from(_IDS),
                                            "partitions": st.lists(st.integers(0, 2),
                                                                   max_size=2)}), max_size=2)
#: One consumer group's members' parts, its topic names and epochs, over few ids: a member's
#: parts come and go, and assignments name topics whose names change.
_PARTS = st.one_of(
    st.tuples(st.just("modern"), st.just(4), st.just("g"), st.just(""), st.one_of(
        st.none(), st.fixed_dictionaries({"topics": st.lists(st.fixed_dictionaries(
            {"topicId": st.sampled_from(_IDS), "topicName": st.sampled_from(["x", "y"])}),
            max_size=2)}))),
    st.tuples(st.just("modern"), st.sampled_from([3, 6]), st.just("g"), st.just(""),
              st.one_of(st.none(), st.fixed_dictionaries({"epoch": st.integers(0, 3),
                                                          "assignmentEpoch": st.integers(0, 3)}))),
    st.tuples(st.just("modern"), st.sampled_from([5, 7, 8]), st.just("g"),
              st.sampled_from(["a", "b"]), st.one_of(
                  st.none(), st.fixed_dictionaries({"clientId": st.sampled_from(["c", "d"]),
                                                    "topicPartitions": _ASSIGNED,
                                                    "assignedPartitions": _ASSIGNED}))))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(records=st.one_of(
    st.lists(st.one_of(_COMMIT, _MARKER, _CLASSIC, _MODERN, _MODERN), min_size=4, max_size=40),
    st.lists(st.one_of(_PARTS, _PARTS, _PARTS, _COMMIT, _MARKER), min_size=4, max_size=40)),
       rows=st.sampled_from([2, 3, 5, 8]))
def test_generated_group_records_fold_as_python_applies_them(records, rows, monkeypatch):
    """Generated logs of two groups' commits (transactional ones by two producers), the
    producers' markers, classic metadata and KIP-848 / KIP-932 records (every value field
    random, tombstones among them), or of one KIP-848 group's parts over few members and
    topic ids, replayed in small blocks with the fold and the loop's held commits, equal the
    replay with every row handed to Python."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        write_partition(tree, "__consumer_offsets-0", _log(records))
        expected, folded, _ = _python_and_folded(
            monkeypatch, rows, lambda: (_replayed(tree), _groups_json(tree)))
        assert folded == expected


def _python_and_folded(monkeypatch, rows: int, answer):
    """``answer()`` with every row handed to Python, then in blocks of ``rows`` with the
    loop and the fold; and what the loop was handed to hold (transactional commits) per
    call."""
    with monkeypatch.context() as python:
        _python_only(python)
        expected = answer()
    with monkeypatch.context() as folding:
        _counting_folds(folding, rows)
        held = _offered_held(folding)
        return expected, answer(), held


def _classic(generation: int, members: int = 0) -> dict:
    return {"protocolType": "connect", "generation": generation, "protocol": f"p{generation}",
            "leader": "l", "members": [
                {"memberId": f"m{i}", "clientId": "c", "clientHost": "h", "sessionTimeout": 1,
                 "rebalanceTimeout": 1, "subscription": b"s", "assignment": b"a"}
                for i in range(members)]}


_E = ("modern", 3, "g", "", {"epoch": 1})
#: Logs whose folding goes wrong if a rule of the fold is left out, in blocks of ``rows``.
CASES = {
    # a member's parts are added in the order their first records came
    "parts in order": (3, [_E, _E, _E, ("modern", 5, "g", "a", {"clientId": "c"}),
                           ("modern", 7, "g", "a", {}),
                           ("modern", 5, "g", "a", {"clientId": "d"})]),
    # a member's assignment names topics as the partition metadata of its moment did
    "topic names of the moment": (4, [
        _E, _E, _E, _E,
        ("modern", 4, "g", "", {"topics": [{"topicId": _IDS[0], "topicName": "x"}]}),
        ("modern", 4, "g", "", {"topics": [{"topicId": _IDS[0], "topicName": "y"}]}),
        ("modern", 8, "g", "a", {"assignedPartitions": [{"topicId": _IDS[0], "partitions": [0]}]}),
        ("modern", 4, "g", "", {"topics": [{"topicId": _IDS[0], "topicName": "x"}]})]),
    # a regression reads the group's generation of its moment: the group's records before
    # it and after it are folded apart
    "regression between group records": (3, [
        ("classic", "g", _classic(0)), ("commit", "g", 0, 5, False),
        ("commit", "h", 0, 1, False), ("classic", "g", _classic(1)),
        ("commit", "g", 0, 2, False), ("classic", "g", _classic(2))]),
    # a transactional commit's regression, applied by its marker, reads the group's state
    # of the marker's moment, though the group's later records come in the same block (its
    # records are not folded while the commit waits)
    "held commit's regression": (3, [
        ("classic", "g", _classic(1)), ("commit", "g", 0, 5, False),
        ("commit", "g", 0, 6, False), ("commit", "g", 0, 2, True),
        ("commit", "h", 0, 1, False), ("commit", "h", 0, 2, False),
        ("classic", "g", _classic(2)), ("marker", True), ("classic", "g", _classic(3))]),
}


@pytest.mark.parametrize("case", CASES)
def test_each_rule_of_the_fold(case, monkeypatch, tmp_path):
    rows, records = CASES[case]
    write_partition(tmp_path, "__consumer_offsets-0", _log(records))
    with monkeypatch.context() as python:
        _python_only(python)
        expected = (_replayed(tmp_path), _groups_json(tmp_path))
    folds = _counting_folds(monkeypatch, rows)
    assert (_replayed(tmp_path), _groups_json(tmp_path)) == expected
    assert sum(folds) or case == "held commit's regression", "nothing was folded"


def test_a_regression_after_a_tombstone_of_an_absent_key_keeps_its_previous_metadata(
        tmp_path, monkeypatch):
    """The loop hands back what each key it regressed or deleted held before, one per such
    row; a tombstone of a key that held nothing has no metadata to read, and the regression
    after it in the same block still reads its own key's (it read the tombstone's None)."""
    def commit(partition: int, offset: int | None, metadata: str) -> tuple:
        return (_key_bytes(1, "g", partition=partition), None if offset is None else
                _value_bytes(1, {"offset": offset, "metadata": metadata,
                                 "commitTimestamp": 1_700_000_000_000}))

    write_partition(tmp_path, "__consumer_offsets-0", [
        records_batch([commit(0, 10, "first")], base_offset=0, timestamp=1_700_000_000_000),
        records_batch([commit(1, None, ""), commit(0, 5, "second")], base_offset=1,
                      timestamp=1_700_000_001_000)])
    compiled = replay_offsets(partitions_of([tmp_path], "__consumer_offsets"))
    assert [r.previous.metadata for r in compiled.regressions] == ["first"]
    _python_only(monkeypatch)
    assert replay_offsets(partitions_of([tmp_path], "__consumer_offsets")) == compiled


#: Two producers' transactions over two groups' keys, interleaved: commits and tombstones
#: held, committed (regressing a key, deleting one), aborted, and left open at the end.
_TRANSACTIONS = [
    ("classic", "g", _classic(1)), ("commit", "g", 0, 5, False), ("commit", "h", 0, 9, False),
    ("commit", "g", 0, 2, True, 7), ("commit", "h", 0, 3, True, 8),
    ("commit", "g", 1, None, True, 7), ("commit", "g", 0, 7, False),
    ("classic", "g", _classic(2)), ("marker", False, 8), ("commit", "h", 0, 1, True, 8),
    ("marker", True, 7), ("classic", "g", _classic(3)), ("commit", "g", 0, 4, True, 8),
    ("marker", True, 8), ("commit", "h", 1, 6, True, 7), ("commit", "g", 0, 8, True, 9),
    ("commit", "h", 1, 2, False)]


def _offered_held(monkeypatch) -> list[int]:
    """A list counting the transactional commits the loop was handed to hold."""
    held: list[int] = []
    compiled = offsets_room._offsets.apply_commits

    def counted(kinds, *rest):
        held.append(int((np.asarray(kinds) == offsets_room._offsets.HELD).sum()))
        return compiled(kinds, *rest)

    monkeypatch.setattr(offsets_room._offsets, "apply_commits", counted)
    return held


@pytest.mark.parametrize("rows", [2, 3, 5, 64])
def test_transactions_held_by_the_loop_as_python_holds_them(rows, monkeypatch, tmp_path):
    """The compiled loop holds each producer's transactional commits and applies them at its
    COMMIT (the regressions and deletions they make read the group's state of the marker's
    moment, and say when the marker came) or drops them at its ABORT; commits still open at
    the end are the same finding. In blocks of ``rows`` (commits held across blocks), the
    answer equals Python's holding, and the CLI's sink (anomalies as columns) agrees too."""
    write_partition(tmp_path, "__consumer_offsets-0", _log(_TRANSACTIONS))
    expected, folded, held = _python_and_folded(
        monkeypatch, rows, lambda: (_groups_json(tmp_path), _columns(tmp_path)))
    assert folded == expected
    assert sum(held) == 2 * 7, "the loop did not hold every transactional commit"
    _, regressions, deletions, _, findings = expected[0]
    assert [(r.current.offset, r.current.producer_id, r.current.applied_at.offset)
            for r in regressions if r.current.producer_id] == [(2, 7, 10), (1, 8, 13)]
    assert [(d.partition, d.where.offset) for d in deletions] == [(1, 5)]
    assert [f.code for f in findings] == ["transactional_offset_commit_pending"] * 2


def test_commits_held_by_the_loop_are_handed_to_python_before_a_record_only_it_reads(
        monkeypatch, tmp_path):
    """A block holding a record only the reference reads (an unknown record type here) is
    applied by Python: the commits the loop holds then are handed over, and their marker,
    reached by Python, applies them as the loop would have."""
    batches = _log(_TRANSACTIONS[:6])
    unknown = struct.pack(">h", 99) + b"\x00\x01g"
    batches.append(records_batch([(unknown, b"\x00\x00")], base_offset=6,
                                 timestamp=1_700_000_006_000))
    batches += _log(_TRANSACTIONS[:12])[7:]
    write_partition(tmp_path, "__consumer_offsets-0", batches)
    expected, folded, held = _python_and_folded(monkeypatch, 4, lambda: _groups_json(tmp_path))
    assert folded == expected
    assert held[0], "the loop held nothing before the record only the reference reads"
    assert "consumer_offsets_unknown_record_type" in [f.code for f in expected[4]]
    assert any(r.current.producer_id == 7 for r in expected[1])


def _columns(tree) -> tuple:
    """The replay's anomalies as the CLI's sink takes them (a block's columns at a time),
    each column joined over the blocks."""
    taken: list = []

    class Sink:
        take = taken.append

        def __call__(self, anomaly):
            raise AssertionError("a column sink is handed no object")

    replay_offsets(partitions_of([tree], "__consumer_offsets"), sink=Sink())
    if not taken:
        return ()
    return tuple((kind, f.name, [v for found in taken
                                 for v in getattr(getattr(found, kind), f.name)])
                 for kind in ("regressions", "deletions", "group_deletions")
                 for f in dataclasses.fields(getattr(taken[0], kind)))


def _offered_groups(monkeypatch) -> list[int]:
    """A list counting the groups' own records the loop was handed to apply."""
    modern: list[int] = []
    compiled = offsets_room._offsets.apply_commits

    def counted(kinds, *rest):
        kinds = np.asarray(kinds)
        modern.append(int(((kinds == offsets_room._offsets.MODERN)
                           | (kinds == offsets_room._offsets.CLASSIC)).sum()))
        return compiled(kinds, *rest)

    monkeypatch.setattr(offsets_room._offsets, "apply_commits", counted)
    return modern


def _groups_answer(tree) -> tuple:
    """The replay without a history (the loop applies the KIP-848 records), as the API and
    the CLI see it: groups as JSON, each group's members and their parts in the order they
    were added, its topic names, every anomaly in the order a sink is handed them, the
    findings, and the anomalies as the CLI's column sink takes them."""
    found: list = []
    r = replay_offsets(partitions_of([tree], "__consumer_offsets"), sink=found.append)
    return ([json.dumps(g.to_json()) for g in r.groups.values()],
            [json.dumps([g.kind, g.deleted_at, list(g.members848.items()), g.topic_names])
             for g in r.groups.values()], found, r.findings, _columns(tree))


def _topics(name: str) -> dict:
    return {"topics": [{"topicId": _IDS[0], "topicName": name}]}


def _assigned(field: str) -> dict:
    return {field: [{"topicId": _IDS[0], "partitions": [0]}]}


#: Logs whose groups' own records (classic metadata, KIP-848 records) the loop applies
#: wrongly if a rule of its is left out, in blocks of ``rows``.
GROUP_CASES = {
    # a regression reads a classic group's state and generation of its moment: Stable with
    # members, Empty without, Dead after its tombstone (which keeps the generation), and the
    # group ends with its last value's fields and no members
    "classic states at regressions": (3, [
        ("classic", "g", _classic(1, members=2)), ("commit", "g", 0, 5, False),
        ("commit", "g", 0, 3, False), ("classic", "g", _classic(2)),
        ("commit", "g", 0, 2, False), ("classic", "g", None), ("commit", "g", 0, 1, False),
        ("classic", "g", _classic(3, members=1)), ("commit", "g", 0, 0, False),
        ("classic", "h", _classic(4, members=1)), ("classic", "g", None)]),
    # a value whose members' consumer-protocol bytes do not read is applied and reported
    # where it comes among the findings
    "consumer-protocol bytes that do not read": (2, [
        ("classic", "g", {**_classic(1, members=2), "protocolType": "consumer"}),
        ("commit", "g", 0, 5, False), ("classic", "h", _classic(1, members=1)),
        ("commit", "g", 0, 3, False), ("commit", "g", 0, 2, True, 7),
        ("classic", "g", {**_classic(2, members=1), "protocolType": "consumer"})]),
    # a regression reads a classic group's state only while no KIP-848 record came after its
    # last GroupMetadataValue (the group converted to the new protocol, and back)
    "kind at a regression": (3, [
        ("classic", "g", _classic(1)), ("commit", "g", 0, 5, False), _E,
        ("commit", "g", 0, 2, False), ("classic", "g", _classic(2)),
        ("commit", "g", 0, 1, False), _E, ("commit", "h", 0, 1, False),
        ("commit", "g", 0, 0, False)]),
    # the later of a classic group's records and the KIP-848 ones decides its kind and
    # whether it is removed
    "kind and removal by the later record": (2, [
        ("classic", "g", _classic(1)), _E, ("classic", "g", None),
        ("modern", 5, "h", "a", {"clientId": "c"}), ("classic", "h", _classic(1)),
        ("modern", 3, "k", "", {"epoch": 2}), ("classic", "k", None),
        ("modern", 11, "k", "", None), ("modern", 3, "m", "", None),
        ("classic", "m", _classic(1)), ("classic", "m", None), ("modern", 6, "m", "", None)]),
    # a member's parts keep the order they were added in (a part tombstoned and set again
    # goes last), a member whose every part is tombstoned leaves, and one set again comes
    # back after the others
    "parts added, removed and added again": (2, [
        ("modern", 5, "g", "a", {"clientId": "c"}), ("modern", 5, "g", "b", {"clientId": "c"}),
        ("modern", 7, "g", "a", _assigned("topicPartitions")),
        ("modern", 8, "g", "a", _assigned("assignedPartitions")), ("modern", 7, "g", "a", None),
        ("modern", 5, "g", "b", None), ("modern", 7, "g", "a", _assigned("topicPartitions")),
        ("modern", 5, "g", "a", {"clientId": "d"}), ("modern", 8, "g", "d", None),
        ("modern", 8, "g", "c", _assigned("assignedPartitions")),
        ("modern", 5, "g", "b", {"clientId": "e"}), ("modern", 13, "g", "a", {})]),
    # an assignment names topics as the partition metadata of its moment did, across blocks
    # (the values no group or part names any more are dropped as the log goes on)
    "topic names of the moment": (2, [
        ("modern", 4, "g", "", _topics("x")),
        ("modern", 8, "g", "a", _assigned("assignedPartitions")),
        ("modern", 4, "g", "", _topics("y")), _E, _E, ("modern", 4, "g", "", None),
        ("modern", 7, "g", "a", _assigned("topicPartitions")), _E,
        ("modern", 4, "g", "", _topics("z")), ("modern", 4, "h", "", _topics("x")),
        ("modern", 8, "h", "b", _assigned("assignedPartitions"))]),
    # an epoch tombstone removes its group where it comes among the other anomalies
    "removals in order": (3, [
        ("classic", "h", _classic(1)), ("commit", "g", 0, 5, False), ("classic", "h", None),
        ("commit", "g", 0, None, False), ("modern", 3, "g", "", None),
        ("classic", "h", None), ("modern", 11, "g", "", None), _E]),
}


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_the_loop_applies_the_groups_of_every_tree_as_python_does(tree, monkeypatch):
    """Every fixture tree's groups, replayed without a history (the loop applies the groups'
    own records), equal every row handed to Python."""
    with monkeypatch.context() as python:
        _python_only(python)
        expected = _groups_answer(tree)
    offered = _offered_groups(monkeypatch)
    assert _groups_answer(tree) == expected
    # the hostile tree's damaged records leave its blocks to Python
    assert sum(offered) or tree.name == "hostile", "the loop applied no group record"


@pytest.mark.parametrize("case", GROUP_CASES)
def test_each_rule_of_the_groups_in_the_loop(case, monkeypatch, tmp_path):
    rows, records = GROUP_CASES[case]
    write_partition(tmp_path, "__consumer_offsets-0", _log(records))
    with monkeypatch.context() as python:
        _python_only(python)
        expected = _groups_answer(tmp_path)
    _counting_folds(monkeypatch, rows)
    monkeypatch.setattr(offsets_room, "TOPIC_VALUES_KEPT", 0)  # dropped after each block
    offered = _offered_groups(monkeypatch)
    assert _groups_answer(tmp_path) == expected
    assert sum(offered), "the loop applied no group record"


def test_groups_the_loop_applied_are_handed_to_python_before_a_record_only_it_reads(
        monkeypatch, tmp_path):
    """A block holding a record only the reference reads is applied by Python: what the loop
    applied of the groups' own records until then is set on the groups first, and Python's
    rule goes on from there (a member's parts in order, a classic group's state at a
    regression, the group's removal)."""
    before = [("classic", "h", _classic(1, members=1)), ("classic", "k", _classic(2)),
              ("classic", "k", None), ("commit", "h", 0, 5, False),
              ("modern", 5, "g", "a", {"clientId": "c"}), ("modern", 4, "g", "", _topics("x")),
              ("modern", 8, "g", "a", _assigned("assignedPartitions")),
              ("modern", 7, "g", "b", _assigned("topicPartitions")),
              ("modern", 3, "h", "", {"epoch": 1})]
    after = [("modern", 5, "g", "a", {"clientId": "d"}), ("modern", 7, "g", "a", {}),
             ("commit", "h", 0, 2, False), ("modern", 7, "g", "b", None),
             ("modern", 3, "g", "", None)]
    batches = _log(before)
    unknown = struct.pack(">h", 99) + b"\x00\x01g"
    batches.append(records_batch([(unknown, b"\x00\x00")], base_offset=len(before),
                                 timestamp=1_700_000_100_000))
    batches += _log([*before, ("commit", "h", 1, 1, False), *after])[len(before) + 1:]
    write_partition(tmp_path, "__consumer_offsets-0", batches)
    with monkeypatch.context() as python:
        _python_only(python)
        expected = _groups_answer(tmp_path)
    _counting_folds(monkeypatch, 4)
    offered = _offered_groups(monkeypatch)
    assert _groups_answer(tmp_path) == expected
    assert offered[0], "the loop applied nothing before the record only the reference reads"
    assert "consumer_offsets_unknown_record_type" in [f.code for f in expected[3]]


@pytest.mark.parametrize("rows", [2, 64])
def test_a_member_part_tombstoned_keeps_no_value_bytes(rows, monkeypatch, tmp_path):
    """The loop keeps the bytes of the member parts present, not of those a tombstone
    removed, whether the tombstone comes in the value's block or a later one."""
    write_partition(tmp_path, "__consumer_offsets-0", _log([
        ("modern", 5, "g", "a", {"clientId": "c"}),
        ("modern", 7, "g", "a", _assigned("topicPartitions")),
        ("modern", 5, "g", "b", {"clientId": "c"}), ("modern", 5, "g", "a", None),
        ("modern", 7, "g", "a", None)]))
    _counting_folds(monkeypatch, rows)
    replayer = offsets_room._Asked(None, None, 1 << 30, False, None, None).replayer(None)
    replayer.partition(partitions_of([tmp_path], "__consumer_offsets")[0], None)
    assert sum(raw is not None for raw in replayer._modern_groups.raw) == 1
    replayer.finish()
    assert list(replayer.groups["g"].members848) == ["b"]
