"""The DataFrame analyses: aggregations checked against brute force over Kafka's own dump, and
the retention report checked against the CLI's function called directly on the same tree."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark_kafkalog import analyses

from segtools.analysis.config import TopicConfig
from segtools.analysis.retention import explain_retention
from segtools.storage.logdirs import walk
from segtools.storage.summary import summarize
from tests.spark.conftest import expected_rows

pytestmark = pytest.mark.spark

NOW = 1_700_100_000_000  # a little after the fixtures were written


def epoch_ms(value: datetime | None) -> int | None:
    """A Spark timestamp as collected (a naive datetime in this process's zone) in epoch ms."""
    return None if value is None else round(value.timestamp() * 1000)


def moment(ms: int | None) -> int | None:
    """A library moment as the verdict tables hold it: Kafka's -1 ("none") is null."""
    return None if ms is None or ms < 0 else ms


@pytest.fixture(scope="module")
def records(spark, trees):
    return analyses.load(spark, str(trees)).cache()


@pytest.fixture(scope="module")
def segments(spark, trees):
    return analyses.load(spark, str(trees), level="segments").cache()


def live_data():
    return [r for r in expected_rows() if r["state"] == "live" and not r["is_control"]]


def test_key_reuse_equals_a_brute_force(records):
    got = {(r["topic"], r["partition"]): r.asDict() for r in
           analyses.key_reuse(records).collect()}
    per: dict = {}
    for r in live_data():
        per.setdefault((r["topic"], r["partition"]), []).append(r["key"])
    assert set(got) == set(per)
    for tp, keys in per.items():
        keyed = [k for k in keys if k is not None]
        counts = {k: keyed.count(k) for k in set(keyed)}
        row = got[tp]
        assert row["records"] == len(keys)
        assert row["null_key_records"] == len(keys) - len(keyed)
        assert row["distinct_keys"] == len(counts)
        assert row["superseded_records"] == len(keyed) - len(counts)
        assert row["max_versions"] == max(counts.values(), default=0)


def test_top_keys(records):
    top = analyses.top_keys(records, n=2).filter("topic = 'payments-compact'").collect()
    assert {r["rank"] for r in top} == {1, 2} and all(r["versions"] >= 1 for r in top)


def test_tombstones_count_and_age(records):
    got = {(r["topic"], r["partition"]): r for r in
           analyses.tombstones(records, now_ms=NOW, delete_retention_ms=3_600_000).collect()}
    stones = [r for r in live_data() if r["key"] is not None and r["value"] is None]
    want: dict = {}
    for r in stones:
        want.setdefault((r["topic"], r["partition"]), []).append(r["timestamp"])
    assert {tp: row["tombstones"] for tp, row in got.items()} == \
        {tp: len(ts) for tp, ts in want.items()}
    for tp, ts in want.items():
        known = [t for t in ts if t is not None]
        if known:
            assert got[tp]["max_age_ms"] == NOW - min(known)
            assert got[tp]["past_delete_retention"] == sum(NOW - t > 3_600_000 for t in known)


def test_segment_and_partition_stats(segments):
    stats = analyses.segment_stats(segments, now_ms=NOW).collect()
    assert len(stats) == segments.count()
    assert {r["max_timestamp_source"] for r in stats} <= {"timeindex", "log", "mtime"}
    per = {(r["topic"], r["partition"]): r for r in analyses.partition_stats(segments).collect()}
    assert per[("orders.v2-eu", 0)]["segments"] == 3
    assert per[("orders.v2-eu", 0)]["records"] == 252


@pytest.mark.parametrize("config", [
    TopicConfig(retention_ms=3_600_000),
    TopicConfig(retention_ms=-1, retention_bytes=1000),
    TopicConfig(cleanup_policy=("compact",)),
])
def test_retention_report_is_the_cli_function(segments, trees, config):
    report = analyses.retention_report(segments, config, now_ms=NOW).collect()
    assert report and all(isinstance(r["max_timestamp"], datetime) for r in report)
    got = {(r["log_dir"], r["topic"], r["partition"], r["base_offset"]):
           (r["deletable"], r["reason"], epoch_ms(r["eligible_at"]),
            epoch_ms(r["max_timestamp"]))
           for r in report}
    want = {}
    for log_dir in walk([trees])[0]:
        for pdir in log_dir.partitions:
            if pdir.name.state.value != "live":
                continue
            tp = (pdir.name.topic, pdir.name.partition)
            summaries = [summarize(s, is_active=s is pdir.active_segment)
                         for s in pdir.segments]
            result = explain_retention(summaries, config, now_ms=NOW,
                                       high_watermark=log_dir.high_watermarks.get(tp),
                                       log_start_offset=log_dir.log_start_offsets.get(tp))
            for v in result.segments:
                want[(str(log_dir.path), *tp, v.base_offset)] = (
                    v.deletable, v.reason, moment(v.eligible_at), moment(v.max_timestamp))
    assert got == want
    assert any(deletable for deletable, *_ in got.values()) == config.delete


def test_retention_config_per_topic(segments):
    report = analyses.retention_report(
        segments, {"orders.v2-eu": TopicConfig(retention_ms=1)}, now_ms=NOW).collect()
    orders = [r for r in report if r["topic"] == "orders.v2-eu"]
    others = [r for r in report if r["topic"] != "orders.v2-eu"]
    assert {r["retention_ms"] for r in orders} == {1}
    assert {r["retention_ms"] for r in others} == {TopicConfig().retention_ms}


def test_compaction_report_is_the_cli_report(spark, trees):
    """One Spark job over three compacted partitions and one that is not: each compacted
    partition's report equals ``segtools compaction --format json`` on the same files."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    compact = TopicConfig(cleanup_policy=("compact",))
    names = ["payments-compact-0", "payments-compact-1", "payments.txn-0"]
    report = analyses.compaction_report(
        spark, [str(trees / "sample" / n) for n in [*names, "orders.v2-eu-1"]],
        {"payments-compact": compact, "payments.txn": compact}, now_ms=NOW).collect()
    assert [f"{r['topic']}-{r['partition']}" for r in report] == names
    for row, name in zip(report, names, strict=True):
        got = json.loads(row["report_json"])
        done = subprocess.run([str(Path(sys.executable).parent / "segtools"), "compaction",
                               str(trees / "sample" / name), "--cleanup-policy", "compact",
                               "--at", str(NOW), "--format", "json"],
                              capture_output=True, text=True, check=False)
        assert done.returncode in (0, 1), done.stderr
        cli = json.loads(done.stdout)["partitions"][0]
        got.pop("config")  # same values; the CLI records that they came from its flags
        assert {k: cli[k] for k in got} == got
        assert row["distinct_keys"] == got["key_reuse"]["distinct_keys"]
        assert row["removed_records"] == got["next_clean"]["removed_records"]


def test_producer_batching_is_the_cli_analysis(spark):
    import segtools
    from tests.fixtures_manifest import FIXTURES

    tree = FIXTURES / "logdirs" / "producers"
    report = analyses.producer_batching(analyses.load(spark, str(tree), level="batches"))
    got = {(r["topic"], r["producer_id"], r["producer_epoch"]):
           (r["batches"], r["verdict"], r["sequence_gaps"], r["sequence_duplicates"],
            r["epoch_bumps"])
           for r in report.collect()}
    want = {}
    for r in segtools.producers(tree):
        for g in r.producers.values():
            mine = [e for e in r.events if (e.producer_id, e.producer_epoch) ==
                    (g.producer_id, g.producer_epoch)]
            want[(r.topic, g.producer_id, g.producer_epoch)] = (
                g.batches, g.verdict, sum(e.kind == "gap" for e in mine),
                sum(e.kind == "duplicate" for e in mine), sum(e.kind == "epoch_bump" for e in mine))
    assert got == want
