"""The record views held to the commands they mirror (``scan``, ``dump``) on the same tree,
and the partition directories a topic's deletion leaves (``--states``)."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

import segtools
from segtools.cli.main import main
from tests.fixtures_manifest import SAMPLE

#: the sample's renamed directory: partition 5 of ``orders.v2-eu``, deleted
DELETED = "orders.v2-eu-5.063107e4eddd35a58f0f382e601f1be3-delete"


def jsonl(capsys, *args: str) -> tuple[int, list[dict]]:
    code = main([*args, "--format", "jsonl"])
    out, _ = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()]


def dumped(capsys, logs) -> list[dict]:
    """``dump --deep``'s records of ``logs``, each with the file it came from."""
    _, rows = jsonl(capsys, "dump", "--deep", *map(str, logs))
    out, path = [], None
    for row in rows:
        path = row.get("path", path) if row["type"] not in ("record", "batch") else path
        if row["type"] == "record":
            out.append({**row, "file": path})
    return out


def test_a_deleted_topic_s_directories_are_read_with_states_delete(capsys):
    code, scanned = jsonl(capsys, "scan", str(SAMPLE))
    deleted = sorted(r["path"] for r in scanned
                     if r["type"] == "segment" and r["state"] == "delete")
    assert deleted and all(DELETED in p for p in deleted)
    code, rows = jsonl(capsys, "query", str(SAMPLE), "--states", "delete",
                       "-c", "select path from segments order by path")
    assert code == 0 and [r["path"] for r in rows] == deleted
    code, rows = jsonl(capsys, "query", str(SAMPLE), "--states", "delete", "-c",
                       "select topic, partition, \"offset\" from records "
                       "where topic = 'orders.v2-eu' and partition = 5 order by \"offset\"")
    expected = dumped(capsys, sorted((SAMPLE / DELETED).glob("*.log")))
    assert code == 0 and rows and [r["offset"] for r in rows] == [
        r["offset"] for r in expected]
    assert {(r["topic"], r["partition"]) for r in rows} == {("orders.v2-eu", 5)}
    # by default, as a consumer (and every face) reads, the live directories only
    assert segtools.query(SAMPLE, "select count(*) as n from records "
                                  "where topic = 'orders.v2-eu' and partition = 5"
                          ).to_pylist() == [{"n": 0}]


def test_every_state_with_the_markers_is_every_record_dump_prints(capsys):
    logs = sorted(SAMPLE.glob("*/*.log"))
    expected = dumped(capsys, logs)
    table = segtools.query(SAMPLE, "select topic, partition, \"offset\", is_control "
                                   "from records", states="all", include_control=True)
    assert table.num_rows == len(expected)
    assert sorted(table.column("offset").to_pylist()) == sorted(r["offset"] for r in expected)
    assert sum(table.column("is_control").to_pylist()) == sum(
        "control" in r for r in expected) > 0
    # without them, the view holds no control record at all
    assert segtools.query(SAMPLE, "select count(*) as n from records where is_control",
                          states="all").to_pylist() == [{"n": 0}]


def test_a_deleted_topic_s_survivors_exported_in_one_command(capsys, tmp_path):
    target = tmp_path / "survivors.parquet"
    code = main(["query", str(SAMPLE), "--states", "delete", "-o", str(target), "-c",
                 "select * from records where topic = 'orders.v2-eu'"])
    capsys.readouterr()
    assert code == 0
    got = duckdb.sql(f"select partition, count(*) from '{target}' group by all").fetchall()
    assert got == [(5, 4)]


@pytest.mark.parametrize("states", ["bogus", "live,nope"])
def test_an_unknown_state_is_one_line(capsys, states):
    code = main(["query", str(SAMPLE), "--states", states, "-c", "select 1"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--states: unknown state" in err


def test_a_point_query_over_every_state_finds_the_renamed_directory(tmp_path):
    """A query naming its partition exactly reads only that directory, found by its plain
    name; with other states it must also find the renamed one of the same partition."""
    root = tmp_path / "logs"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("*-delete", "payments*",
                                                                  "edge-cases-*", "big-value-*"))
    shutil.copytree(root / "orders.v2-eu-0",
                    root / "orders.v2-eu-0.0123456789abcdef0123456789abcdef-delete")
    sql = ("select count(*) as n from records where topic = 'orders.v2-eu' and partition = 0 "
           "and \"offset\" >= 0")
    live = segtools.query(root, sql).to_pylist()[0]["n"]
    assert live > 0
    assert segtools.query(root, sql, states="all").to_pylist() == [{"n": 2 * live}]
    assert segtools.query(root, sql, states="delete").to_pylist() == [{"n": live}]
