"""Text checkpoints, partition.metadata, meta.properties, .kafka_cleanshutdown."""

from __future__ import annotations

import pytest

from segtools.formats.checkpoints import (
    EpochEntry,
    parse_clean_shutdown,
    parse_java_properties,
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
)


def only(findings):
    assert len(findings) == 1, findings
    return findings[0]


def test_offset_checkpoint_ok():
    text = "0\n3\norders.v2-eu 3 1200\n__consumer_offsets 17 9\nt-x 0 0\n"
    value, findings = parse_offset_checkpoint(text, "c")
    assert findings == []
    assert value == {("orders.v2-eu", 3): 1200, ("__consumer_offsets", 17): 9, ("t-x", 0): 0}


def test_crlf_and_tabs():
    value, findings = parse_offset_checkpoint("0\r\n1\r\nt\t0  5\r\n", "c")
    assert findings == [] and value == {("t", 0): 5}


@pytest.mark.parametrize("text", ["", "0\n", "0"])
def test_empty_or_version_only_is_no_entries(text):
    assert parse_offset_checkpoint(text, "c") == ({}, [])


@pytest.mark.parametrize(("text", "code", "line"), [
    ("1\n0\n", "checkpoint_bad_version", 1),
    ("x\n0\n", "checkpoint_bad_version", 1),
    ("0\ntwo\nt 0 5\n", "checkpoint_bad_count", 2),
    ("0\n2\nt 0 5\n", "checkpoint_count_mismatch", 2),
    ("0\n2\nt 0 5\nt 1\n", "checkpoint_bad_entry", 4),
    ("0\n1\nt 0 5\nt 1 6\n", "checkpoint_count_mismatch", 2),
    ("0\n1\nt 0 five\n", "checkpoint_bad_entry", 3),
    ("0\n1\n t 0 5\n", "checkpoint_bad_entry", 3),
    ("0\n2\nt 0 5\n\n", "checkpoint_bad_entry", 4),
    ("0\n1\nt 0 99999999999999999999\n", "checkpoint_bad_entry", 3),
])
def test_malformations(text, code, line):
    _, findings = parse_offset_checkpoint(text, "c")
    f = next(f for f in findings if f.code == code)
    assert f.message.startswith(f"line {line}:")
    assert f.severity == "error"
    assert f.position == sum(len(x) + 1 for x in text.split("\n")[: line - 1])


def test_malformed_line_keeps_the_rest():
    value, findings = parse_offset_checkpoint("0\n3\nt 0 5\nbad\nt 1 6\n", "c")
    assert value == {("t", 0): 5, ("t", 1): 6}
    assert {f.code for f in findings} == {"checkpoint_bad_entry"}


def test_duplicate_partition_last_wins():
    value, findings = parse_offset_checkpoint("0\n2\nt 0 5\nt 0 6\n", "c")
    assert value == {("t", 0): 6}
    assert only(findings).code == "checkpoint_duplicate_entry"


def test_leader_epoch_checkpoint():
    entries, findings = parse_leader_epoch_checkpoint("0\n2\n0 0\n3 1500\n", "l")
    assert findings == [] and entries == [EpochEntry(0, 0), EpochEntry(3, 1500)]
    _, findings = parse_leader_epoch_checkpoint("0\n2\n3 1500\n2 1600\n", "l")
    assert only(findings).code == "leader_epoch_not_increasing"
    _, findings = parse_leader_epoch_checkpoint("0\n1\n3 1500 9\n", "l")
    assert only(findings).code == "checkpoint_bad_entry"


TOPIC_ID = "IkU5XEqjSDWKjg5z0Yf4Fg"


def test_partition_metadata():
    value, findings = parse_partition_metadata(f"version: 0\ntopic_id: {TOPIC_ID}\n", "p")
    assert findings == [] and value is not None and value.topic_id == TOPIC_ID
    assert len(value.topic_id_hex) == 32


@pytest.mark.parametrize(("text", "code"), [
    ("version: 1\ntopic_id: IkU5XEqjSDWKjg5z0Yf4Fg\n", "partition_metadata_bad_version"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "partition_metadata_bad_topic_id"),
    ("version: 0\ntopic_id: not-a-uuid\n", "partition_metadata_bad_topic_id"),
    ("version: 0\n", "partition_metadata_malformed"),
    ("version 0\ntopic_id: IkU5XEqjSDWKjg5z0Yf4Fg\n", "partition_metadata_malformed"),
])
def test_partition_metadata_rejects(text, code):
    value, findings = parse_partition_metadata(text, "p")
    assert value is None and only(findings).code == code


def test_java_properties_syntax():
    text = ("# comment\n! also a comment\n  \nbroker.id=3\ncluster.id : abc\\\n   def\n"
            "log.dirs /data/a\\tb\nkey\\=with\\:sep = v\\u0041\n")
    props = parse_java_properties(text)
    assert props == {"broker.id": "3", "cluster.id": "abcdef", "log.dirs": "/data/a\tb",
                     "key=with:sep": "vA"}


def test_meta_properties_v0_and_v1():
    meta, findings = parse_meta_properties("#\nversion=0\nbroker.id=7\ncluster.id=c1\n", "m")
    assert findings == [] and meta is not None and meta.node_id == 7 and meta.version == 0
    meta, findings = parse_meta_properties(
        f"version=1\nnode.id=2\ncluster.id=c1\ndirectory.id={TOPIC_ID}\n", "m")
    assert findings == [] and meta is not None and meta.directory_id == TOPIC_ID
    _, findings = parse_meta_properties("version=1\ncluster.id=c1\n", "m")
    assert only(findings).code == "meta_properties_invalid"
    _, findings = parse_meta_properties("version=9\n", "m")
    assert only(findings).code == "meta_properties_bad_version"


def test_clean_shutdown():
    assert parse_clean_shutdown("", "s") == (parse_clean_shutdown("", "s")[0], [])
    value, findings = parse_clean_shutdown('{"version":0,"brokerEpoch":42}', "s")
    assert findings == [] and value.broker_epoch == 42
    _, findings = parse_clean_shutdown("{nope", "s")
    assert only(findings).code == "clean_shutdown_malformed"
