"""The tiered view as Spark rows: the same rows as ``segtools tiered`` and the API."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from pyspark_kafkalog import analyses

import segtools
from tests.fixtures_manifest import FIXTURES

pytestmark = pytest.mark.spark

TIERED = FIXTURES / "logdirs" / "tiered"
NOW = 1_717_243_200_000  # 2024-06-01T12:00:00Z, the fixture story's moment


def test_spark_rows_are_the_cli_and_api_rows(spark):
    got = [r.asDict() for r in analyses.tiered_segments(spark, str(TIERED), now_ms=NOW)
           .collect()]
    api = segtools.tiered(TIERED, at=NOW).rows()
    moments = ("max_timestamp", "copy_started_ms", "state_changed_ms")
    assert all(isinstance(r[m], datetime) for r in got for m in moments if r[m] is not None)
    assert any(r["copy_started_ms"] is not None for r in got)

    def epoch_ms(row: dict) -> dict:  # a collected timestamp is naive, in this process's zone
        return {k: round(v.timestamp() * 1000) if k in moments and v is not None else v
                for k, v in row.items()}

    assert [epoch_ms(r) for r in got] == [epoch_ms(r) for r in api]
    cli = json.loads(subprocess.run(
        [str(Path(sys.executable).with_name("segtools")), "tiered", str(TIERED), "--at",
         str(NOW), "--format", "json", "--quiet"], capture_output=True, text=True,
        timeout=120).stdout)
    assert sorted((r["topic"], r["partition"], r["segment_id"], r["state"], r["reason"])
                  for r in got) == sorted(
        (p["topic"], p["partition"], s["segment_id"], s["state"], s.get("reason"))
        for p in cli["partitions"] for s in p["remote_segments"])
    stuck = [r for r in got if r["reason"] == "remote_copy_unfinished"]
    assert [(r["start_offset"], r["end_offset"]) for r in stuck] == [(400, 499)]
