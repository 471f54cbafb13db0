"""No false alarms on healthy data: states a healthy broker leaves behind verify with no error
and no warning (issues 13 and 19). The healthy states come from the Kafka-written trees, above
all ``fixtures/logdirs/zookeeper`` (a ZooKeeper-era broker written by the generator following
that era's rules, fixtures/README.md); damage is made by changing a copy of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import segtools
from tests.fixtures_manifest import FIXTURES

REPLICA = FIXTURES / "logdirs" / "replicas" / "broker2"
ZOOKEEPER = FIXTURES / "logdirs" / "zookeeper"
CLEANED = ZOOKEEPER / "__consumer_offsets-49"
ORDERS_ZK = ZOOKEEPER / "orders.zk-0"


def _index_entries(path):
    from segtools.storage.index import OffsetIndex, TimeIndex

    cls = TimeIndex if path.suffix == ".timeindex" else OffsetIndex
    with cls(path) as index:
        first, second = index.entry_arrays()
    return list(zip(first.tolist(), second.tolist(), strict=True))


def _codes(findings, *severities):
    return sorted({f.code for f in findings if str(f.severity) in severities})


def test_epochs_below_a_moved_log_start_offset_are_normal():
    """DeleteRecords moved the repartition topic's log start to 20: LeaderEpochFileCache
    .truncateFromStart dropped epoch 0 and moved epoch 1's start to 20, while batches 0..24
    (epochs 0 and 1) stay in the first segment. One info finding, nothing else."""
    from segtools.storage.logdirs import load_log_dir

    pdir = ZOOKEEPER / "clickstream-sessions-repartition-0"
    log_dir = load_log_dir(ZOOKEEPER)
    [part] = [p for p in log_dir.partitions if p.path == pdir]
    start = log_dir.log_start_offsets[("clickstream-sessions-repartition", 0)]
    first = min(part.leader_epochs, key=lambda e: e.start_offset)
    assert first.start_offset == start
    below = sorted({(b["leader_epoch"], b["base_offset"]) for b in segtools.open(pdir).batches()
                    if b["base_offset"] < start})
    epochs = sorted({e for e, _ in below})
    assert epochs == [first.epoch - 1, first.epoch]  # one epoch dropped, one moved
    found = segtools.verify(pdir)
    assert [(f.code, str(f.severity), f.offset) for f in found] == \
        [("leader_epoch_checkpoint_truncated", "info", below[0][1])]
    assert f"epoch(s) {', '.join(map(str, epochs))}" in found[0].message
    assert f"advanced to {start}" in found[0].message


def test_an_epoch_missing_above_the_checkpoint_start_is_still_reported(tmp_path):
    tree = tmp_path / "broker2"
    shutil.copytree(REPLICA, tree)
    (tree / "orders.v2-eu-9" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n2 40\n")
    assert "leader_epoch_not_in_checkpoint" in _codes(segtools.verify(tree), "warning")


PAYMENTS = FIXTURES / "logdirs" / "sample" / "payments-compact-0"


def _timeindex(path, entries, base):
    import struct
    path.write_bytes(b"".join(struct.pack(">qi", ts, off - base) for ts, off in entries))


def test_time_index_entries_naming_offsets_no_batch_covers_are_harmless(tmp_path):
    """An entry naming an offset that lies between the kept batches of a compacted segment
    (issue 13 saw one on a real __consumer_offsets partition). Kafka's cleaner does not write
    this shape (it names a kept batch's last offset, see the zookeeper tree), so it is made
    here by changing a copy; a lookup scans forward from it, as LogSegment
    .findOffsetByTimestamp does, so it is explained, not an error."""
    pdir = tmp_path / "payments-compact-0"
    shutil.copytree(PAYMENTS, pdir)
    _timeindex(pdir / "00000000000000000000.timeindex",
               [(1_700_021_607_000, 7), (1_700_021_620_000, 19), (1_700_021_623_000, 24)], 0)
    found = [f for f in segtools.verify(pdir) if f.path.endswith("0000.timeindex")]
    assert [f.code for f in found] == ["timeindex_offset_cleaned"]


def test_time_index_entries_in_the_older_record_offset_convention_are_healthy():
    """A leader up to 3.6 indexed the first record holding an uncompressed batch's largest
    timestamp (LogValidator.assignOffsetsNonCompressed), inside the batch; gzip batches and
    later brokers name the batch's last offset. Each .timeindex with older-convention entries
    gets one info finding counting them, and no other finding."""
    batches = list(segtools.open(ORDERS_ZK).batches())
    expected, last_offsets = {}, 0
    for path in sorted(ORDERS_ZK.glob("*.timeindex")):
        for _, offset in _index_entries(path):
            [b] = [b for b in batches if b["base_offset"] <= offset <= b["last_offset"]]
            if offset < b["last_offset"]:
                assert b["compression"] == "none"
                expected[path.name] = expected.get(path.name, 0) + 1
            else:
                last_offsets += 1
    assert expected and last_offsets  # both conventions are in the tree
    found = [f for f in segtools.verify(ORDERS_ZK) if f.path.endswith(".timeindex")]
    assert sorted((Path(f.path).name, f.code, str(f.severity)) for f in found) == \
        [(name, "timeindex_record_offset_convention", "info") for name in sorted(expected)]
    for f in found:
        n = expected[Path(f.path).name]
        assert f.message.startswith(f"{n} time index entr{'y names' if n == 1 else 'ies name'} ")


def test_a_cleaned_segment_indexes_what_the_cleaner_kept():
    """LogCleaner.cleanInto appends each chunk it read with LogSegment.append(result.maxOffset,
    result.maxTimestamp, result.shallowOffsetOfMaxTimestamp): the time index may name the last
    offset of a batch the cleaner rebuilt although that offset's record is gone (filterTo keeps
    the original last offset), and the offset index names the largest offset kept in the chunk,
    a record inside a later batch. Kafka's lookups are right with both: no finding."""
    batches = [b for b in segtools.open(CLEANED).batches() if b["segment_base_offset"] == 0]
    kept = {r["offset"] for r in segtools.open(CLEANED).records() if r["segment_base_offset"] == 0}
    by_last = {b["last_offset"]: b for b in batches}
    times = _index_entries(CLEANED / "00000000000000000000.timeindex")
    # every time index entry ends a kept batch; one of them names an offset with no record
    assert all(offset in by_last for _, offset in times)
    removed = [offset for _, offset in times if offset not in kept]
    assert removed and all(by_last[o]["count"] < o - by_last[o]["base_offset"] + 1 for o in removed)
    # an offset index entry names a record inside a later batch than the one at its position
    at = {b["position"]: b for b in batches}
    later = [(o, p) for o, p in _index_entries(CLEANED / "00000000000000000000.index")
             if o > at[p]["last_offset"]]
    holder = {o: next(b for b in batches if b["base_offset"] <= o <= b["last_offset"])
              for o, _ in later}
    assert later and all(o in kept and holder[o]["position"] > p for o, p in later)
    assert any(o < holder[o]["last_offset"] for o, _ in later)
    found = [f for f in segtools.verify(CLEANED) if f.path.endswith(("0000.index",
                                                                     "0000.timeindex"))]
    assert found == []


def test_an_offset_index_entry_naming_no_batch_after_it_is_an_error(tmp_path):
    """Damage, not a cleaner's entry: an offset that falls between two kept batches after the
    entry's position is in no batch a lookup could find."""
    import struct

    pdir = tmp_path / CLEANED.name
    shutil.copytree(CLEANED, pdir)
    (pdir / "00000000000000000000.index").write_bytes(struct.pack(">ii", 224, 5534))
    found = [f for f in segtools.verify(pdir) if f.path.endswith("0000.index")]
    assert [(f.code, str(f.severity), f.offset, f.position) for f in found] == \
        [("index_entry_mismatch", "error", 224, 5534)]


def test_a_time_index_entry_past_the_last_batch_is_an_error(tmp_path):
    pdir = tmp_path / "payments-compact-0"
    shutil.copytree(PAYMENTS, pdir)
    _timeindex(pdir / "00000000000000000025.timeindex",
               [(1_700_021_640_000, 39), (1_700_021_650_000, 44)], 25)
    codes = [f.code for f in segtools.verify(pdir) if f.path.endswith("0025.timeindex")]
    assert codes == ["timeindex_offset_not_in_log"]


def test_internal_topics_are_compacted_without_a_config():
    """No topic config in a ZooKeeper-era dir: the coordinators create __consumer_offsets and
    __transaction_state with cleanup.policy=compact, so retention never deletes them by time."""
    from segtools.analysis import config as cfg

    for topic in ("__consumer_offsets", "__transaction_state"):
        c = cfg.resolve(topic)
        assert c.compact and not c.delete
        assert c.source("cleanup.policy").source == cfg.SOURCE_INTERNAL
    assert cfg.resolve("orders").source("cleanup.policy").source == cfg.SOURCE_DEFAULT


def test_retention_keeps_consumer_offsets_of_a_zookeeper_era_dir(capsys):
    """A ZooKeeper-era log dir: no __cluster_metadata, no config file. __consumer_offsets is
    compacted, as its coordinator creates it (source internal_topic); no segment of it is
    predicted deleted even a century on, while the data topics fall to the 7-day default."""
    import json

    from segtools.cli.main import main

    assert main(["retention", str(ZOOKEEPER), "--format", "json", "-q",
                 "--at", "2123-01-01T00:00:00Z"]) == 0
    doc = json.loads(capsys.readouterr().out)
    offsets = [p for p in doc["partitions"] if p["topic"] == "__consumer_offsets"]
    assert sorted(p["partition"] for p in offsets) == [30, 49]
    for p in offsets:
        assert p["config"]["cleanup.policy"] == {"value": "compact", "source": "internal_topic",
                                                 "detail": "as the broker creates "
                                                           "__consumer_offsets"}
        assert p["segments"] and not any(s["deletable"] for s in p["segments"])
    others = [p for p in doc["partitions"] if p["topic"] != "__consumer_offsets"]
    assert others and all(p["config"]["cleanup.policy"]["source"] == "default" for p in others)
    assert all(s["deletable"] for p in others for s in p["segments"])


def test_a_zero_run_inside_an_index_is_reported_as_kafka_sees_it(tmp_path):
    """A real __consumer_offsets-21 .index: valid entries, a run of all-zero entries, then
    more valid entries. Kafka counts every slot and its sanity check passes; lookups stay
    correct. No path in Kafka's index code was found that writes it (AbstractIndex appends at
    slot entries * entrySize; the count comes from the file length on load, and recovery or
    truncation lowers it), so the generator cannot produce it: it is built here from a
    Kafka-written segment's own index entries."""
    import struct

    pdir = tmp_path / "orders.v2-eu-0"
    shutil.copytree(FIXTURES / "logdirs" / "sample" / "orders.v2-eu-0", pdir)
    logs = segtools.open(pdir)
    batches = [b for b in logs.batches() if b["segment_base_offset"] == 205]
    entries = [(b["last_offset"] - 205, b["position"]) for b in batches[1:]]
    assert len(entries) >= 2
    raw = [struct.pack(">ii", *e) for e in entries]
    (pdir / "00000000000000000205.index").write_bytes(raw[0] + b"\0" * 8 * 3 + b"".join(raw[1:]))
    found = [f for f in segtools.verify(pdir) if f.path.endswith("0205.index")]
    assert [(f.code, str(f.severity)) for f in found] == [("index_zero_entries_inside", "info")]
    (pdir / "00000000000000000205.index").write_bytes(raw[0] + b"\0" * 8 + b"\x07" * 8)
    found = [f for f in segtools.verify(pdir) if f.path.endswith("0205.index")]
    assert "index_garbage_after_entries" in [f.code for f in found]


KRAFT = FIXTURES / "logdirs" / "forensics"
SNAPSHOT = KRAFT / "__cluster_metadata-0" / "00000000000000000019-0000000001.checkpoint"


def test_kraft_snapshots_dump_and_verify(capsys):
    """The snapshot and bootstrap.checkpoint (written with Kafka's own snapshot header/footer
    record builders) are record-batch files: dump reads them, verify checks them."""
    import json

    from segtools.cli.main import main

    for path in (SNAPSHOT, KRAFT / "bootstrap.checkpoint"):
        assert main(["dump", str(path), "--deep", "--format", "jsonl",
                     "--cluster-metadata-decoder"]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        controls = [r["control"]["type"] for r in lines if r.get("control")]
        assert controls == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
        assert any(r.get("decoded") for r in lines if r["type"] == "record")
    assert _codes(segtools.verify(KRAFT), "warning", "error") == []


def test_an_unfinished_snapshot_is_reported(tmp_path):
    tree = tmp_path / "forensics"
    shutil.copytree(KRAFT, tree)
    snap = tree / "__cluster_metadata-0" / SNAPSHOT.name
    data = snap.read_bytes()
    snap.write_bytes(data[:-75])  # drop the footer batch
    assert "kraft_snapshot_footer_missing" in _codes(segtools.verify(tree), "error")


def test_dump_shows_every_index_entry_and_what_is_wrong(tmp_path, capsys):
    """As kafka-dump-log does, dump prints every entry in the file, and reports damage as
    findings with exit 1: an entry past the end of the .log, trailing partial bytes."""
    import json
    import struct

    from segtools.cli.main import main

    pdir = tmp_path / "orders.v2-eu-0"
    shutil.copytree(FIXTURES / "logdirs" / "sample" / "orders.v2-eu-0", pdir)
    index = pdir / "00000000000000000205.index"
    index.write_bytes(struct.pack(">ii", 30, 5447) + struct.pack(">ii", 46, 10**7) + b"\x01" * 5)
    for argv in (["dump", str(index), "--format", "jsonl"],
                 ["dump", "--verify-index", str(index), "--format", "jsonl"]):
        assert main(argv) == 1
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        codes = {x["code"] for x in lines if x["type"] == "finding"}
        assert "index_position_past_log_end" in codes or "index_entry_not_at_batch" in codes
        if "--verify-index" not in argv:
            assert [x["offset"] for x in lines if x["type"] == "index_entry"] == [235, 251]
            assert "index_length_not_multiple" in codes


def test_a_kraft_partition_path_reads_the_same_configs_as_its_log_dir(capsys):
    """compaction/retention PARTITION_DIR in a KRaft log dir: the topic config comes from the
    __cluster_metadata-0 beside it, not an assumption."""
    import json

    from segtools.cli.main import main

    main(["compaction", str(KRAFT / "__consumer_offsets-5"), "--format", "json", "-q"])
    doc = json.loads(capsys.readouterr().out)
    assert any(s.startswith("__cluster_metadata") for s in doc["config_sources"])
    main(["retention", str(KRAFT / "__consumer_offsets-5"), "--format", "json", "-q",
          "--no-deep"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["partitions"][0]["config"]["cleanup.policy"]["source"] == "cluster_metadata"


def test_a_kafka_go_group_is_a_quirk_not_damage(capsys):
    """kafka-go's ConsumerGroup joins with a version-1 subscription laid out without the
    owned-partitions field version 1 added (joingroup.go, groupMetadata.writeTo). The
    coordinator never parses it; offsets reads it as the version-0 layout it is, reports the
    quirk as info, and exits 0."""
    import json
    import struct

    from segtools.cli.main import main
    from segtools.formats.internal.consumer_offsets import decode_record

    pdir = ZOOKEEPER / "__consumer_offsets-30"
    [raw] = [decode_record(r["key"], r["value"]) for r in segtools.open(pdir).records()
             if r["offset"] == 1]
    [member] = raw.value["members"]
    # kafka-go's bytes: int16 version 1, int32-counted int16-length topics, int32 -1 user data
    assert member["subscription"] == struct.pack(">hih9si", 1, 1, 9, b"orders.zk", -1)
    assert main(["offsets", str(ZOOKEEPER), "--format", "jsonl", "-q"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    found = [x for x in lines if x["type"] == "finding"]
    assert [(f["code"], f["severity"], f["offset"], f["path"]) for f in found] == \
        [("consumer_protocol_older_layout", "info", 1, str(pdir))]
    [group] = [x for x in lines if x["type"] == "group" and x["group"] == raw.group_id]
    [m] = group["members"]
    assert m["subscription"]["version"] == 1 and m["subscription"]["read_as_version"] == 0
    assert m["subscription"]["topics"] == ["orders.zk"]
    assert m["assignment"] == {"version": 1, "partitions": {"orders.zk": [0, 1, 2]},
                               "user_data_bytes": None}


def test_the_zookeeper_era_dir_verifies_with_no_error_and_no_warning(capsys):
    """The whole tree a healthy ZooKeeper-era broker left: verify exits 0 and every finding is
    info, of the kinds the other tests explain one by one."""
    from segtools.cli.main import main

    assert main(["verify", str(ZOOKEEPER), "-q"]) == 0
    found = segtools.verify(ZOOKEEPER)
    assert _codes(found, "warning", "error") == []
    assert _codes(found, "info") == ["leader_epoch_checkpoint_truncated", "offset_gap_compaction",
                                     "timeindex_record_offset_convention"]
    gaps = [f for f in found if f.code == "offset_gap_compaction"]
    assert {Path(f.path).parent.name for f in gaps} == {"__consumer_offsets-49"}
