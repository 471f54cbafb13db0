"""Topic config resolution: flags > --config file > __cluster_metadata > Kafka defaults."""

from __future__ import annotations

import json
import shutil
import sys
import types

import pytest

from segtools.analysis import config as cfg
from segtools.analysis.partition_input import load_cluster_metadata
from segtools.cli.main import main
from segtools.errors import SegtoolsError
from tests.fixtures_manifest import SAMPLE

DESCRIBE = """\
Dynamic configs for topic payments-compact are:
  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}
  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}
  ssl.secret=null sensitive=true synonyms={}
Dynamic configs for topic orders.v2-eu are:
  retention.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=1048576}
Default configs for brokers in the cluster are:
  log.retention.hours=48 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=48}
"""  # noqa: E501  (kafka-configs prints long lines)


def test_describe_output_sections_synonyms_and_lists():
    f = cfg.parse_config_text(DESCRIBE, "cfg.txt")
    pay = cfg.resolve("payments-compact", config_file=f)
    assert pay.cleanup_policy == ("compact", "delete") and pay.compact and pay.delete
    assert pay.retention_ms == 3_600_000
    src = pay.source("cleanup.policy")
    assert src.source == cfg.SOURCE_CONFIG_FILE
    assert src.detail == "cfg.txt:2 DYNAMIC_TOPIC_CONFIG"
    orders = cfg.resolve("orders.v2-eu", config_file=f)
    assert orders.retention_bytes == 1_048_576
    # the broker default section stands behind every topic, through its log.* synonym
    assert orders.retention_ms == 48 * 3_600_000
    assert "via log.retention.hours=48" in orders.source("retention.ms").detail
    assert orders.source("segment.bytes").source == cfg.SOURCE_DEFAULT


def test_plain_properties_topic_name_beats_broker_synonym():
    f = cfg.parse_config_text("# comment\nlog.retention.ms=7\nretention.ms = 5\n"
                              "log.retention.minutes: 3\n! bang comment\n", "p")
    assert cfg.resolve("any", config_file=f).retention_ms == 5
    f = cfg.parse_config_text("log.retention.minutes=3\nlog.retention.hours=1\n", "p")
    assert cfg.resolve("any", config_file=f).retention_ms == 180_000  # minutes before hours


def test_priority_flags_file_metadata_default():
    f = cfg.parse_config_text("retention.ms=2000\n", "f")
    meta = {"t": {"retention.ms": "3000", "retention.bytes": "4000",
                  "cleanup.policy": "compact"}}
    c = cfg.resolve("t", flags={"retention.ms": "1000"}, config_file=f, metadata=meta,
                    metadata_detail="/m/__cluster_metadata-0")
    assert c.retention_ms == 1000 and c.source("retention.ms").source == cfg.SOURCE_FLAG
    assert c.retention_bytes == 4000
    assert c.source("retention.bytes") == cfg.ConfigValue(
        cfg.SOURCE_CLUSTER_METADATA, "ConfigRecord in /m/__cluster_metadata-0")
    assert c.cleanup_policy == ("compact",)
    c = cfg.resolve("t", config_file=f, metadata=meta)
    assert c.retention_ms == 2000
    assert cfg.resolve("other", config_file=None, metadata=meta).retention_ms == 604_800_000


def test_bad_values_are_clear_errors():
    with pytest.raises(SegtoolsError, match=r"p:2: retention.ms"):
        cfg.resolve("t", config_file=cfg.parse_config_text("a=b\nretention.ms=soon\n", "p"))
    with pytest.raises(ValueError, match="not compact or delete"):
        cfg.parse_value("cleanup.policy", "compact,shred")
    with pytest.raises(ValueError, match="between 0 and 1"):
        cfg.parse_value("min.cleanable.dirty.ratio", "1.5")
    with pytest.raises(SegtoolsError, match="not key=value"):
        cfg.parse_config_text("=nothing\n", "p")


def test_json_round_trip():
    c = cfg.resolve("payments-compact", config_file=cfg.parse_config_text(DESCRIBE, "x"))
    doc = c.to_json()
    assert set(doc) == set(cfg.DEFINITIONS)
    assert {v["source"] for v in doc.values()} <= set(cfg.SOURCES)
    assert cfg.TopicConfig.from_json(json.loads(json.dumps(doc))) == c


def _fake_decoder(monkeypatch, configs):
    module = types.ModuleType("segtools.analysis.cluster_metadata")
    calls = []

    def topic_configs(path, at=None):
        calls.append(str(path))
        return configs

    module.topic_configs = topic_configs
    monkeypatch.setitem(sys.modules, "segtools.analysis.cluster_metadata", module)
    return calls


def test_cluster_metadata_decoder_is_used_when_present(monkeypatch, tmp_path):
    calls = _fake_decoder(monkeypatch, {"t": {"retention.ms": "60000"}})
    configs, where, findings = load_cluster_metadata([tmp_path / "__cluster_metadata-0"])
    assert configs == {"t": {"retention.ms": "60000"}} and not findings
    assert calls == [str(tmp_path / "__cluster_metadata-0")] and where == calls[0]


def test_cluster_metadata_decoder_missing(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "segtools.analysis.cluster_metadata", None)
    configs, _, findings = load_cluster_metadata([tmp_path])
    assert configs == {} and findings[0].code == "cluster_metadata_decoder_missing"
    assert load_cluster_metadata([]) == ({}, "", [])


def test_cli_takes_topic_configs_from_a_metadata_log_in_the_tree(monkeypatch, tmp_path,
                                                                   capsys):
    logdir = tmp_path / "kafka-logs"
    shutil.copytree(SAMPLE / "payments-compact-1", logdir / "payments-compact-1")
    meta = logdir / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "00000000000000000000.log").write_bytes(b"")
    _fake_decoder(monkeypatch, {"payments-compact": {"cleanup.policy": "compact",
                                                     "retention.ms": "60000"}})
    code = main(["retention", str(logdir), "--at", "1700025300000", "--format", "json",
                 "--retention-bytes", "100"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    [part] = doc["partitions"]
    assert part["config"]["cleanup.policy"]["source"] == "cluster_metadata"
    assert part["config"]["retention.ms"]["value"] == 60000
    assert part["config"]["retention.bytes"] == {"value": 100, "source": "flag",
                                                 "detail": "--retention-bytes"}
    # compact-only: retention.ms / retention.bytes do not delete
    assert {s["reason"] for s in part["segments"]} == {"delete_policy_disabled"}
    assert any("__cluster_metadata" in s["path"] and "KRaft" in s["reason"]
               for s in doc["skipped"])
