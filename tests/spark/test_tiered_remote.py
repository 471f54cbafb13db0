"""``.option("remoteStore", DIR)``: a tiered partition read as one log, its remote part from
Kafka's LocalTieredStorage layout (the ``tiered`` fixture), checked against the CLI's rows."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES

pytestmark = pytest.mark.spark

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TIERED = FIXTURES / "logdirs" / "tiered"
STORE = FIXTURES / "remote" / "tiered"


def cli(*argv: str) -> list[dict]:
    proc = subprocess.run([SEGTOOLS, *argv], capture_output=True, text=True, timeout=120)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def read(spark, level: str, columns: str):
    return (spark.read.format("kafkalog").option("topics", "clicks.tiered")
            .option("level", level).option("remoteStore", str(STORE)).load(str(TIERED))
            .selectExpr(*columns.split(",")).collect())


def test_records_are_one_log_with_the_remote_part_as_the_cli_dumps_it(spark):
    rows = read(spark, "records", "partition,offset,key,value,tier")
    p0 = sorted((r for r in rows if r.partition == 0), key=lambda r: r.offset)
    offsets = [r.offset for r in p0]
    assert offsets == list(range(offsets[0], offsets[-1] + 1))  # no gap, no duplicate
    remote = [r for r in p0 if r.tier == "remote"]
    assert remote and {r.tier for r in p0 if r not in remote} == {"local"}
    # the remote rows are what `segtools dump` reads from the store's .log, record by record
    seg = next(r for r in cli("scan", str(TIERED), "--topic", "clicks.tiered", "--partition",
                              "0", "--remote-store", str(STORE), "--format", "jsonl")
               if r.get("tier") == "remote" and r["base_offset"] == remote[0].offset)
    dumped = [r for r in cli("dump", seg["path"], "--print-data", "--format", "jsonl",
                                     "--bytes", "base64")
              if r["type"] == "record"]
    assert [(r.offset, r.key, r.value) for r in remote] == [
        (d["offset"], base64.b64decode(d["key"]) if d["key"] is not None else None,
         base64.b64decode(d["value"])) for d in dumped]


def test_segment_rows_match_scans_remote_rows(spark):
    rows = read(spark, "segments", "partition,base_offset,last_offset,record_count,path,tier")
    scanned = {(r["partition"], r["base_offset"]): r for r in cli(
        "scan", str(TIERED), "--topic", "clicks.tiered", "--remote-store", str(STORE),
        "--format", "jsonl") if r.get("type") == "segment" and r["tier"] == "remote"}
    remote = [r for r in rows if r.tier == "remote"]
    assert remote
    for r in remote:
        s = scanned[(r.partition, r.base_offset)]
        assert (r.last_offset, r.record_count, r.path) == \
            (s["last_offset"], s["record_count"], s["path"])


def test_without_the_option_the_log_is_the_local_one(spark):
    df = (spark.read.format("kafkalog").option("topics", "clicks.tiered")
          .option("level", "segments").load(str(TIERED)))
    assert "tier" not in df.columns  # the default shape is unchanged
    rows = (spark.read.format("kafkalog").schema("base_offset long, tier string")
            .option("topics", "clicks.tiered").option("level", "segments").load(str(TIERED))
            .collect())
    assert len(rows) == 7 and {r.tier for r in rows} == {"local"}
