"""``analyses.what_if`` on the ``whatif`` tree (fixtures/java/WhatIfFixtures.java: a quiet
topic rolled by ``segment.ms``, a busy one rolled by ``segment.bytes``, a ``compact,delete``
ledger): one Spark job, whose rows must equal ``segtools retention --what-if --recommend
--format json`` on the same files, object for object, and ``segtools.what_if()``'s."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark_kafkalog import analyses

import segtools
from tests.fixtures_manifest import FIXTURES

pytestmark = pytest.mark.spark

SEGTOOLS = str(Path(sys.executable).parent / "segtools")
CONFIG = FIXTURES / "configs" / "whatif-topic-configs.txt"
NOW = 1_704_067_200_000 + 240 * 3_600_000  # the tree's --at: T + 240 h
CHANGE = "segment.bytes=16384"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A private copy: a regeneration of fixtures/ cannot change the files mid-test."""
    return Path(shutil.copytree(FIXTURES / "logdirs" / "whatif",
                                tmp_path_factory.mktemp("whatif") / "whatif"))


@pytest.fixture(scope="module")
def cli(tree) -> dict:
    done = subprocess.run([SEGTOOLS, "retention", str(tree), "--config", str(CONFIG),
                           "--at", str(NOW), "--what-if", CHANGE, "--recommend",
                           "--format", "json"], capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def rows(spark, tree) -> list[dict]:
    """The one Spark job: every topic of the tree, with the topic configs the CLI resolves
    from the same file (the Spark analyses take configs as values)."""
    configs = {pi.topic: pi.config
               for pi in segtools.open(tree).inputs(config=CONFIG).partitions}
    df = analyses.what_if(spark, str(tree), CHANGE, configs, now_ms=NOW, recommend=True)
    return [r.asDict(recursive=True) for r in df.collect()]


def as_cli(row: dict) -> dict:
    """A row as the CLI's ``what_if`` object (series structs back to ``[at, bytes, oldest]``)."""
    def outcome(o: dict) -> dict:
        return {**o, "series": [[p["at_ms"], p["bytes"], p["oldest_record_ms"]]
                                for p in o["series"]]}
    return {"type": "what_if", "topic": row["topic"], "partition": row["partition"],
            "changes": json.loads(row["changes"]), "current": outcome(row["current"]),
            "proposed": outcome(row["proposed"]), "too_short": row["too_short"],
            "unrecommended": row["unrecommended"]}


def test_spark_rows_are_the_cli_what_if_objects(rows, cli):
    """Each partition and each topic: the same sizes, ages, counts and series, in the CLI's
    order (a topic's partitions, then the topic)."""
    assert [(r["topic"], r["partition"]) for r in rows] == \
        [(w["topic"], w["partition"]) for w in cli["what_if"]]
    assert {r["topic"] for r in rows} == {"busy-clicks", "ledger-compact", "quiet-events",
                                          "customers.compact"}
    for row, want in zip(rows, cli["what_if"], strict=True):
        assert as_cli(row) == want
    assert any(r["current"]["peak_bytes"] != r["proposed"]["peak_bytes"] for r in rows)


def test_spark_recommendations_are_the_cli_ones(rows, cli):
    """``--recommend``'s objects ride on the topic rows, the same objects; partition rows
    carry none."""
    got = [json.loads(r["recommendation"]) for r in rows if r["recommendation"]]
    assert got == cli["recommendations"]
    assert {r["topic"] for r in cli["recommendations"]} >= {"quiet-events"}
    assert all(r["recommendation"] is None for r in rows if r["partition"] is not None)


def test_the_api_gives_the_cli_document(tree, cli):
    """``segtools.what_if()`` is the third face of the same answer."""
    api = segtools.what_if(tree, changes=CHANGE, at=NOW, recommend=True,
                           config=CONFIG).to_json()
    assert api["what_if"] == cli["what_if"]
    assert api["recommendations"] == cli["recommendations"]


def test_one_config_shape_for_python_and_spark(spark, tree):
    """Kafka config names to values, for every topic or per topic, are taken alike by
    ``segtools.what_if(configs=...)`` and ``analyses.what_if(config=...)``, with the same
    answer; a value Kafka would refuse is refused by both."""
    configs = {"retention.ms": 3 * 86_400_000, "segment.bytes": 65536,
               "ledger-compact": {"cleanup.policy": "compact,delete", "segment.ms": 86_400_000},
               "customers.compact": {"cleanup.policy": ["compact", "delete"],
                                     "segment.ms": 86_400_000}}
    api = segtools.what_if(tree, changes={"segment.bytes": 16384}, at=NOW, horizon_days=5,
                           configs=configs).to_json()
    df = analyses.what_if(spark, str(tree), {"segment.bytes": 16384}, configs, now_ms=NOW,
                          horizon_days=5)
    got = [as_cli(r.asDict(recursive=True)) for r in df.collect()]
    assert got == api["what_if"]
    with pytest.raises(segtools.SegtoolsError, match=r"segment\.bytes"):
        segtools.what_if(tree, changes="segment.bytes=0", at=NOW)
    with pytest.raises(ValueError, match=r"segment\.bytes"):
        analyses.what_if(spark, str(tree), "segment.bytes=0", now_ms=NOW)
    with pytest.raises(ValueError, match=r"retention\.ms"):
        analyses.what_if(spark, str(tree), CHANGE, {"orders": {"retention.ms": "soon"}},
                         now_ms=NOW)


def test_a_magic_0_partition_is_aged_by_its_files_mtimes_in_every_face(spark, trees):
    """Magic 0 batches carry no timestamp: Kafka ages their segments by the files'
    ``lastModified``, and so do the CLI and the API. Spark's what-if is built from the source's
    rows, so its segment rows must bring the files' mtimes too: without them it aged the
    segments as if from 1970 and deleted them at the first check, where the other faces keep
    them a week (``retention.ms``'s default). ``trees`` has the generator's mtimes restored."""
    part = trees / "legacy" / "legacy.v0-0"
    at = max(log.stat().st_mtime_ns // 1_000_000 for log in part.glob("*.log")) + 3_600_000
    done = subprocess.run([SEGTOOLS, "retention", str(part), "--at", str(at),
                           "--what-if", CHANGE, "--format", "json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    cli = json.loads(done.stdout)["what_if"]
    api = segtools.what_if(part, changes=CHANGE, at=at).to_json()["what_if"]
    df = analyses.what_if(spark, str(part), CHANGE, now_ms=at)
    got = [as_cli(r.asDict(recursive=True)) for r in df.collect()]
    assert got == cli == api
    kept = cli[0]["current"]
    assert kept["start_bytes"] > 0 and kept["series"][1][1] == kept["start_bytes"]
