"""Which Kafka wrote this: the evidence on the bundled (Kafka-written) trees and how bounds
combine."""

from __future__ import annotations

import json

import segtools
from segtools.analysis.kafka_versions import (
    METADATA_VERSIONS,
    RULES,
    Evidence,
    combine,
    log_dir_versions,
    metadata_version_release,
)
from segtools.storage.index import TimeIndex
from segtools.storage.logdirs import load_log_dir
from tests.fixtures_manifest import FIXTURES

ZOOKEEPER = FIXTURES / "logdirs" / "zookeeper"
OLDER_TIME_INDEX = "time index entry naming a record inside its batch (older convention)"


def test_bounds_intersect_and_disagreement_is_visible():
    zk = Evidence(RULES["meta.properties version 0 (ZooKeeper broker.id)"], "x")
    json_shutdown = Evidence(RULES[".kafka_cleanshutdown as JSON (broker epoch)"], "x")
    assert combine([zk, json_shutdown]).label == "3.7 to 3.9"
    directory_id = Evidence(RULES["meta.properties directory.id"], "x")
    empty_shutdown = Evidence(RULES[".kafka_cleanshutdown empty"], "x")
    disagree = combine([directory_id, empty_shutdown])
    assert not disagree.consistent
    # not an inverted range ("3.7 to 3.6"): no release is named when none fits
    assert disagree.label == "no Kafka release matches all the evidence"
    assert combine([]).label == "unknown"
    older = Evidence(RULES[OLDER_TIME_INDEX], "x")
    assert not combine([json_shutdown, older]).consistent  # an upgraded broker's old segment


def test_bundled_trees():
    kraft = log_dir_versions(load_log_dir(FIXTURES / "logdirs" / "forensics"))
    assert kraft.label == "3.9 or later"
    [mv] = [e for e in kraft.evidence if e.rule.name.startswith("KRaft metadata.version")]
    assert mv.detail == "metadata.version 21 (3.9-IV0)" and mv.low == (3, 9)
    assert mv.where.endswith("__cluster_metadata-0")
    [boot] = [e for e in kraft.evidence if e.rule.name == "bootstrap.checkpoint"]
    assert boot.low == (3, 3)
    legacy = log_dir_versions(load_log_dir(FIXTURES / "logdirs" / "legacy"))
    assert legacy.high == (3, 6) and legacy.consistent


def _summaries(tree):
    from segtools.storage.summary import summarize

    log_dir = load_log_dir(tree)
    return log_dir, [summarize(s, is_active=s is p.active_segment)
                     for p in log_dir.partitions for s in p.segments]


def test_a_zookeeper_era_dir():
    """meta.properties v0 and an empty .kafka_cleanshutdown bound the broker to 3.6 at most,
    partition.metadata to 2.8 at least; a time index whose last entry names a record inside
    its batch (what leaders up to 3.6 wrote) bounds its writer to 3.6 too."""
    log_dir, summaries = _summaries(ZOOKEEPER)
    vr = log_dir_versions(log_dir, summaries)
    assert (vr.label, vr.consistent) == ("2.8 to 3.6", True)
    [older] = [e for e in vr.evidence if e.rule.name == OLDER_TIME_INDEX]
    assert (older.low, older.high) == ((0, 10), (3, 6))
    # the evidence is a real entry: it names an offset below the end of the batch holding it
    with TimeIndex(older.where) as index:
        timestamp, offset = index.last_entry
    pdir = older.where.rsplit("/", 1)[0]
    [batch] = [b for b in segtools.open(pdir).batches()
               if b["base_offset"] <= offset <= b["last_offset"]
               and b["segment_base_offset"] == int(older.where.rsplit("/", 1)[1][:20])]
    assert offset < batch["last_offset"]
    assert int(batch["max_timestamp"].timestamp() * 1000) == timestamp
    assert f"offset {offset}, inside the batch ending at {batch['last_offset']}" in older.detail


def test_trees_whose_leaders_index_last_offsets_show_no_older_convention():
    for tree in ("sample", "forensics", "producers", "legacy"):
        log_dir, summaries = _summaries(FIXTURES / "logdirs" / tree)
        vr = log_dir_versions(log_dir, summaries)
        assert OLDER_TIME_INDEX not in [e.rule.name for e in vr.evidence], tree


def test_metadata_version_is_read_from_the_log_or_the_bootstrap_file():
    """The level a FeatureLevelRecord finalized: the metadata log's latest (its snapshot here),
    or a bootstrap.checkpoint's (the level the cluster was formatted with)."""
    from segtools.analysis.cluster_metadata import metadata_version

    kraft = FIXTURES / "logdirs" / "forensics"
    assert metadata_version(kraft / "__cluster_metadata-0") == 21
    assert metadata_version(kraft / "bootstrap.checkpoint") == 21
    assert metadata_version(kraft / "payments.hanging-0" / "00000000000000000000.log") is None


def test_metadata_version_levels_name_their_release():
    """MetadataVersion's levels 1..21 (3.0-IV1 .. 3.9-IV0), each naming its release; a level
    above 3.9's latest production level needs a later release."""
    assert sorted(METADATA_VERSIONS) == list(range(1, 22))
    for release, name in METADATA_VERSIONS.values():
        assert name.startswith(f"{release[0]}.{release[1]}-IV")
    releases = [METADATA_VERSIONS[level][0] for level in sorted(METADATA_VERSIONS)]
    assert releases == sorted(releases)
    assert metadata_version_release(21) == ((3, 9), "3.9-IV0")
    assert metadata_version_release(22)[0] == (4, 0)


def test_scan_shows_the_range(capsys):
    from segtools.cli.main import main

    main(["scan", str(FIXTURES / "logdirs" / "forensics"), "--format", "jsonl", "-q"])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    [log_dir] = [r for r in rows if r["type"] == "log_dir"]
    assert log_dir["kafka_versions"] == "3.9 or later" and log_dir["evidence"]
    main(["scan", str(ZOOKEEPER), "--format", "jsonl", "-q"])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    [log_dir] = [r for r in rows if r["type"] == "log_dir"]
    assert (log_dir["kafka_versions"], log_dir["low"], log_dir["high"]) == \
        ("2.8 to 3.6", [2, 8], [3, 6])
    rules = {e["rule"]: e["allows"] for e in log_dir["evidence"]}
    assert rules[OLDER_TIME_INDEX] == "0.10 to 3.6"
    assert rules[".kafka_cleanshutdown empty"] == "<= 3.6"
    main(["scan", str(ZOOKEEPER), "-q"])
    out = capsys.readouterr().out
    assert "written by Kafka 2.8 to 3.6" in out
    assert f"  {OLDER_TIME_INDEX} [last entry names offset" in out
