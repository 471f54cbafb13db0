"""Which Kafka wrote this: the evidence on the bundled (Kafka-written) trees and how bounds
combine."""

from __future__ import annotations

import json
import shutil

from segtools.analysis.kafka_versions import RULES, Evidence, combine, log_dir_versions
from segtools.storage.logdirs import load_log_dir
from tests.fixtures_manifest import FIXTURES


def test_bounds_intersect_and_disagreement_is_visible():
    zk = Evidence(RULES["meta.properties version 0 (ZooKeeper broker.id)"], "x")
    json_shutdown = Evidence(RULES[".kafka_cleanshutdown as JSON (broker epoch)"], "x")
    assert combine([zk, json_shutdown]).label == "3.7 to 3.9"
    directory_id = Evidence(RULES["meta.properties directory.id"], "x")
    empty_shutdown = Evidence(RULES[".kafka_cleanshutdown empty"], "x")
    assert not combine([directory_id, empty_shutdown]).consistent
    assert combine([]).label == "unknown"


def test_bundled_trees():
    kraft = log_dir_versions(load_log_dir(FIXTURES / "logdirs" / "forensics"))
    assert kraft.label == "3.7 or later"
    legacy = log_dir_versions(load_log_dir(FIXTURES / "logdirs" / "legacy"))
    assert legacy.high == (3, 6) and legacy.consistent


def test_a_zookeeper_dir_without_clean_shutdown_json(tmp_path):
    tree = tmp_path / "zk"
    shutil.copytree(FIXTURES / "logdirs" / "legacy", tree)
    (tree / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    assert log_dir_versions(load_log_dir(tree)).label == "3.7 to 3.9"


def test_scan_shows_the_range(capsys):
    from segtools.cli.main import main

    main(["scan", str(FIXTURES / "logdirs" / "forensics"), "--format", "jsonl", "-q"])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    [log_dir] = [r for r in rows if r["type"] == "log_dir"]
    assert log_dir["kafka_versions"] == "3.7 or later" and log_dir["evidence"]
    main(["scan", str(FIXTURES / "logdirs" / "forensics"), "-q"])
    assert "written by Kafka 3.7 or later" in capsys.readouterr().out
