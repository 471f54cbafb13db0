"""The analysis views hold what the analyses (and so the commands' JSON Lines) say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import segtools
from tests.fixtures_manifest import FIXTURES, SAMPLE

FORENSICS = FIXTURES / "logdirs" / "forensics"
PAYLOADS = FIXTURES / "logdirs" / "payloads"
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))


def rows(path, sql) -> list[dict]:
    return segtools.query(path, sql).to_pylist()


def test_retention_verdict_per_segment():
    got = rows(SAMPLE, "select topic, partition, base_offset, deletable, reason from retention")
    report = segtools.open(SAMPLE).explain_retention().to_json()
    expected = [(p["topic"], p["partition"], s["base_offset"], s["deletable"], s["reason"])
                for p in report["partitions"] for s in p["segments"]]
    assert sorted(tuple(r.values()) for r in got) == sorted(expected)


def test_transactions_and_producers():
    got = rows(SAMPLE, "select producer_id, marker, marker_offset from transactions "
                       "where topic = 'payments.txn' order by first_offset")
    scans = [p.scan for p in segtools.open(SAMPLE).transactions().partitions]
    expected = [(t.producer_id, t.marker, t.to_json()["marker_offset"])
                for s in scans if s.partition.name.topic == "payments.txn"
                for t in sorted(s.transactions, key=lambda t: t.first_offset)]
    assert [tuple(r.values()) for r in got] == expected and expected
    (n,) = rows(SAMPLE, "select count(*) as n from producers")[0].values()
    assert n == sum(len(r.producers) for r in segtools.open(SAMPLE).producers())


def test_offsets_are_the_commit_history():
    got = rows(FORENSICS, 'select "group", topic, partition, "offset" from offsets')
    commits = segtools.open(FORENSICS).offsets_at(history=True).commits
    assert [tuple(r.values()) for r in got] == [
        (c.to_json()["group"], c.to_json()["topic"], c.to_json()["partition"],
         c.to_json()["offset"]) for c in commits] and got
    assert rows(SAMPLE, "select count(*) as n from offsets") == [{"n": 0}]


@pytest.mark.parametrize("view", ["retention", "producers", "transactions", "offsets",
                                  "schemas"])
def test_same_columns_on_every_tree(view):
    first = segtools.query(SAMPLE, f"select * from {view} limit 0").schema
    assert segtools.query(PAYLOADS, f"select * from {view} limit 0").schema == first


def test_schemas_versions():
    got = rows(PAYLOADS, "select id, subject, version from schemas order by id")
    history = segtools.open(PAYLOADS).schema_history()
    assert got == sorted(({"id": v.id, "subject": v.subject, "version": v.version}
                          for v in history.versions), key=lambda r: r["id"])


def test_retention_blocked_by_is_the_blocking_segments_base_offset():
    tiered = FIXTURES / "logdirs" / "tiered"
    got = rows(tiered, "select blocked_by from retention where blocked_by is not null")
    report = segtools.open(tiered).explain_retention().to_json()
    expected = [s["blocked_by"] for p in report["partitions"] for s in p["segments"]
                if s["blocked_by"] is not None]
    assert sorted(r["blocked_by"] for r in got) == sorted(expected) and expected


@pytest.mark.parametrize("at", ["2023-11-15T00:00Z", "2030-01-01T00:00Z"])
def test_retention_view_answers_for_the_querys_moment(at):
    """``--at`` on query, as on retention: the verdicts are those of that moment (one early
    enough that nothing is due, one late enough that time retention is), from every face."""
    sql = "select topic, partition, base_offset, deletable, reason from retention"
    got = sorted(tuple(r.values()) for r in segtools.query(SAMPLE, sql, at=at).to_pylist())
    report = segtools.open(SAMPLE).explain_retention(at=at).to_json()
    expected = sorted((p["topic"], p["partition"], s["base_offset"], s["deletable"],
                       s["reason"]) for p in report["partitions"] for s in p["segments"])
    assert got == expected
    cli = subprocess.run([SEGTOOLS, "query", str(SAMPLE), "--at", at, "--format", "jsonl",
                          "-c", sql], capture_output=True, text=True, timeout=120)
    assert sorted(tuple(json.loads(line).values()) for line in cli.stdout.splitlines()) == got


def test_the_moment_changes_the_verdicts():
    sql = "select count(*) as n from retention where deletable"
    early = segtools.query(SAMPLE, sql, at="2023-11-15T00:00Z").column("n")[0].as_py()
    late = segtools.query(SAMPLE, sql, at="2030-01-01T00:00Z").column("n")[0].as_py()
    assert early < late


def test_producers_view_api_and_command_agree_on_every_state():
    """``sample`` holds a deleted topic's directory (``...-delete``): the command lists its
    producers, so the API and the view must too (they read live directories only)."""
    done = subprocess.run([SEGTOOLS, "producers", "--format", "jsonl", str(SAMPLE)],
                          capture_output=True, check=False)
    command = sorted((o["topic"], o["partition"], o["producer_id"])
                     for o in map(json.loads, done.stdout.decode().splitlines())
                     if o.get("type") == "producer_batching")
    api = sorted((g.to_json()["topic"], g.to_json()["partition"], g.to_json()["producer_id"])
                 for r in segtools.open(SAMPLE).producers() for g in r.producers.values())
    view = sorted(tuple(r.values()) for r in rows(
        SAMPLE, "select topic, partition, producer_id from producers"))
    assert command and command == api == view
    assert any(p.state != "live" for p in segtools.open(SAMPLE).partitions(states="all"))
