"""``spark.read.format("kafkalog")`` end to end on a local[2] session.

The central check joins what Spark returns with what the CLI prints for the same files
(``segtools dump --deep --format jsonl``, run in-process): every record of every fixture log,
every codec and magic, control records and corrupt batches included.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from segtools.storage.partition import parse_partition_dir_name
from tests.fixtures_manifest import LOGS
from tests.spark.conftest import TREES, committed, expected_rows

pytestmark = pytest.mark.spark

COLUMNS = ("topic", "partition", "segment_base_offset", "offset", "key", "value", "headers",
           "ts", "is_control", "crc_valid", "magic", "compression", "position")


def cli_dump(trees: Path) -> list[tuple]:
    """Every record line ``segtools dump --deep --format jsonl`` prints, with its batch."""
    paths = [str(trees / Path(e["path"]).relative_to("logdirs")) for e in LOGS
             if e["tree"] in TREES and e["path"].endswith(".log")]
    done = subprocess.run([str(Path(sys.executable).parent / "segtools"), "dump", "--deep",
                           "--format", "jsonl", *paths], capture_output=True, check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: findings (CRC, torn tail)
    rows = []
    name = segment = batch = None
    for line in map(json.loads, done.stdout.splitlines()):
        if line["type"] == "file":
            path = Path(line["path"])
            name, segment = parse_partition_dir_name(path.parent.name), int(path.name[:20])
        elif line["type"] == "batch":
            batch = line
        elif line["type"] == "record":
            rows.append((
                name.topic, name.partition, segment, line["offset"],
                _b64(line["key"]), _b64(line["value"]),
                tuple((h["key"], _b64(h["value"])) for h in line["headers"]),
                None if line["timestamp"] == -1 else line["timestamp"],
                batch["is_control"], batch["crc_valid"], batch["magic"],
                batch["compression"], batch["position"]))
    return rows


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def spark_rows(df) -> list[tuple]:
    picked = df.selectExpr(*COLUMNS[:7], "unix_millis(timestamp) AS ts", *COLUMNS[8:])
    return [(*r[:6], tuple((h["key"], h["value"]) for h in r["headers"]), *r[7:])
            for r in picked.collect()]


def load(spark, path, **options):
    reader = spark.read.format("kafkalog")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


def test_spark_rows_equal_the_cli_dump(spark, trees):
    df = load(spark, str(trees), includeHeaders=True, includeControl=True,
              partitionStates="all")
    got = spark_rows(df)
    want = cli_dump(trees)
    assert len(got) == len(want) == len(expected_rows())
    assert sorted(got, key=repr) == sorted(want, key=repr)
    magics = {r[10] for r in got}
    codecs = {r[11] for r in got}
    assert magics == {0, 1, 2} and codecs == {"none", "gzip", "snappy", "lz4", "zstd"}


def test_counts_per_partition_follow_the_options(spark, trees):
    def counts(df):
        return {(r["topic"], r["partition"]): r["count"]
                for r in df.groupBy("topic", "partition").count().collect()}

    def expected(rows):
        out: dict = {}
        for r in rows:
            out[(r["topic"], r["partition"])] = out.get((r["topic"], r["partition"]), 0) + 1
        return out

    live = [r for r in expected_rows() if r["state"] == "live"]
    assert counts(load(spark, str(trees))) == expected([r for r in live if not r["is_control"]])
    assert counts(load(spark, str(trees), readCommitted=True)) == expected(committed(live))


def test_several_paths_and_a_user_schema(spark, trees):
    df = (spark.read.format("kafkalog").schema("offset long, key binary, partition long")
          .load([str(trees / "sample" / "orders.v2-eu-0"), str(trees / "legacy")]))
    assert df.columns == ["offset", "key", "partition"]
    assert df.count() == 252 + 7 + 54 * 3 + 18
    assert df.filter("key IS NULL").count() > 0


def test_offsets_and_timestamps_options(spark, trees):
    path = str(trees / "sample" / "orders.v2-eu-0")
    df = load(spark, path, startingOffsets='{"orders.v2-eu": {"0": 3}}',
              endingOffsets='{"orders.v2-eu": {"0": 210}}')
    offsets = sorted(r[0] for r in df.select("offset").collect())
    assert offsets == list(range(3, 210))
    rows = [r for r in expected_rows() if r["topic"] == "orders.v2-eu" and r["partition"] == 0]
    start = sorted(r["timestamp"] for r in rows)[100]
    first = min(r["offset"] for r in rows if r["timestamp"] >= start)
    df = load(spark, path, startingTimestamp=start)
    assert df.agg({"offset": "min"}).first()[0] == first


def test_batches_and_segments_levels(spark, trees):
    batches = load(spark, str(trees / "sample"), level="batches")
    assert batches.filter("topic = 'payments.txn'").count() == 14
    assert batches.filter("is_control").count() == 5
    segments = load(spark, str(trees), level="segments")
    live_logs = [e for e in LOGS if e["tree"] in TREES and e["path"].endswith(".log")
                 and "-delete/" not in e["path"]]
    assert segments.count() == len(live_logs)
    row = segments.filter("topic = 'orders.v2-eu' AND base_offset = 205").first()
    assert row["is_active"] and row["max_timestamp_source"] in ("timeindex", "log")


def test_pushdown_is_opt_in_and_never_changes_the_answer(spark, trees):
    import pyspark_kafkalog
    from pyspark.errors import AnalysisException

    query = ("topic = 'orders.v2-eu' AND partition IN (1, 3) AND offset >= 200 "
             "AND timestamp >= timestamp'2023-01-01 00:00:00'")
    plain = sorted(load(spark, str(trees)).filter(query).select("partition", "offset")
                   .collect())
    with pytest.raises(AnalysisException, match="filterPushdown"):
        load(spark, str(trees), pushdown=True).filter(query).count()
    pyspark_kafkalog.enable_pushdown(spark)
    try:
        pushed = sorted(load(spark, str(trees), pushdown=True).filter(query)
                        .select("partition", "offset").collect())
        assert pushed == plain and len(plain) == 2 * 52
        assert load(spark, str(trees), pushdown=True).count() == \
            load(spark, str(trees)).count()
    finally:
        spark.conf.set(pyspark_kafkalog.PUSHDOWN_CONF, "false")


def test_errors_are_one_clear_message(spark, trees, tmp_path):
    from pyspark.errors import AnalysisException, PythonException

    with pytest.raises(AnalysisException, match="option level: must be one of"):
        load(spark, str(trees), level="rows")
    with pytest.raises(AnalysisException, match="option readCommitted: must be true or false"):
        load(spark, str(trees), readCommitted="perhaps")
    typed = spark.read.format("kafkalog").schema("topic int, offset long").load(str(trees))
    with pytest.raises(Exception, match="column topic is string; the schema may declare it "
                                        "so, not int") as raised:  # on the driver, not a task
        typed.count()
    assert "Task" not in str(raised.value).split("column topic")[0]
    with pytest.raises(AnalysisException, match="no such file or directory"):
        load(spark, str(tmp_path / "nope")).count()
    with pytest.raises(PythonException, match=r"corrupt-crc-0/0+\.log: crc_mismatch.*at byte"):
        load(spark, str(trees / "sample" / "corrupt-crc-0"), failOnCorruption=True).count()
