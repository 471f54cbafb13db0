"""Partition directory names, file classification and the PartitionDir model."""

from __future__ import annotations

from pathlib import Path

import pytest

from segtools.storage.partition import (
    FileKind,
    Leftover,
    PartitionState,
    classify_partition_file,
    load_partition_dir,
    parse_partition_dir_name,
)

UUID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(("name", "expected"), [
    ("orders.v2-eu-3", ("orders.v2-eu", 3, PartitionState.LIVE, None)),
    ("my-topic-0", ("my-topic", 0, PartitionState.LIVE, None)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49, PartitionState.LIVE, None)),
    ("__cluster_metadata-0", ("__cluster_metadata", 0, PartitionState.LIVE, None)),
    (f"my-topic-0.{UUID}-delete", ("my-topic", 0, PartitionState.DELETE, UUID)),
    (f"a.b-c-12.{UUID}-future", ("a.b-c", 12, PartitionState.FUTURE, UUID)),
    (f"t-7.{UUID}-stray", ("t", 7, PartitionState.STRAY, UUID)),
    ("foo", None),
    ("foo-", None),
    ("-3", None),
    ("foo-bar", None),
    ("foo-99999999999", None),
    ("remote-log-index-cache", None),
    ("t-0-delete", None),  # suffix without .uuid: Kafka's pattern does not match
    ("lost+found", None),
])
def test_dir_name_table(name, expected):
    parsed = parse_partition_dir_name(name)
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None
        assert (parsed.topic, parsed.partition, parsed.state, parsed.uuid) == expected
        assert parsed.raw == name


def test_metadata_log_flag():
    name = parse_partition_dir_name("__cluster_metadata-0")
    assert name is not None and name.is_metadata_log


@pytest.mark.parametrize(("name", "kind", "base", "leftover"), [
    ("00000000000000000000.log", FileKind.LOG, 0, None),
    ("00000000000000001234.index", FileKind.INDEX, 1234, None),
    ("00000000000000001234.timeindex", FileKind.TIMEINDEX, 1234, None),
    ("00000000000000001234.txnindex", FileKind.TXNINDEX, 1234, None),
    ("00000000000000001234.snapshot", FileKind.SNAPSHOT, 1234, None),
    ("00000000000000000000.log.deleted", FileKind.LOG, 0, Leftover.DELETED),
    ("00000000000000000042.index.cleaned", FileKind.INDEX, 42, Leftover.CLEANED),
    ("00000000000000000042.timeindex.swap", FileKind.TIMEINDEX, 42, Leftover.SWAP),
    ("00000000000000000042.snapshot.deleted", FileKind.SNAPSHOT, 42, Leftover.DELETED),
    ("partition.metadata", FileKind.PARTITION_METADATA, None, None),
    ("leader-epoch-checkpoint", FileKind.LEADER_EPOCH_CHECKPOINT, None, None),
    ("leader-epoch-checkpoint.tmp", FileKind.TEMP, None, None),
    ("quorum-state", FileKind.QUORUM_STATE, None, None),
    ("00000000000000000100-0000000002.checkpoint", FileKind.KRAFT_SNAPSHOT, 100, None),
    ("00000000000000000000.log.bak", FileKind.STRAY, None, None),
    ("00000000000000000000.json", FileKind.STRAY, None, None),
    ("notes.txt", FileKind.STRAY, None, None),
])
def test_classify(name, kind, base, leftover):
    pf = classify_partition_file(name)
    assert (pf.kind, pf.base_offset, pf.leftover) == (kind, base, leftover)


def touch(path: Path, size: int = 0) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def make_partition(root: Path, name: str = "orders-2") -> Path:
    d = root / name
    d.mkdir()
    for base, size in ((0, 5000), (100, 7000), (250, 10)):
        touch(d / f"{base:020d}.log", size)
        touch(d / f"{base:020d}.index")
        touch(d / f"{base:020d}.timeindex")
    touch(d / f"{100:020d}.txnindex", 34)
    touch(d / f"{100:020d}.snapshot", 10)
    touch(d / f"{250:020d}.snapshot", 10)
    (d / "partition.metadata").write_text("version: 0\ntopic_id: IkU5XEqjSDWKjg5z0Yf4Fg\n")
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    return d


def test_partition_dir_model(tmp_path):
    d = make_partition(tmp_path)
    touch(d / f"{50:020d}.log.deleted", 300)
    touch(d / f"{100:020d}.log.swap", 200)
    touch(d / f"{100:020d}.index.cleaned")
    touch(d / f"{900:020d}.index")  # orphan
    touch(d / f"{300:020d}.log")  # active, indexes not created yet (KAFKA-13603)
    touch(d / "random.bin")
    pd = load_partition_dir(d)
    assert pd.name is not None and (pd.name.topic, pd.name.partition) == ("orders", 2)
    assert [s.base_offset for s in pd.segments] == [0, 100, 250, 300]
    assert pd.active_segment is not None and pd.active_segment.base_offset == 300
    seg100 = pd.segments[1]
    assert seg100.log_size == 7000 and seg100.txnindex is not None
    assert {p.name for p in seg100.leftovers} == {"00000000000000000100.log.swap",
                                                 "00000000000000000100.index.cleaned"}
    assert [s.offset for s in pd.snapshots] == [100, 250]
    assert pd.topic_id == "IkU5XEqjSDWKjg5z0Yf4Fg"
    assert len(pd.leader_epochs) == 1
    assert [p.name for p in pd.orphans] == ["00000000000000000900.index"]
    assert [p.name for p in pd.strays] == ["random.bin"]
    by_code: dict[str, list] = {}
    for f in pd.findings:
        by_code.setdefault(f.code, []).append(f)
    assert set(by_code) == {"leftover_deleted_file", "leftover_swap_file",
                            "leftover_cleaned_file", "orphan_index_file", "stray_file",
                            "active_segment_missing_index", "active_segment_missing_timeindex"}
    assert all(f.severity == "info" for f in by_code["active_segment_missing_index"])
    assert pd.size_bytes == 5000 + 7000 + 10


def test_missing_index_on_closed_segment_is_warning(tmp_path):
    d = make_partition(tmp_path)
    (d / f"{100:020d}.index").unlink()
    pd = load_partition_dir(d)
    (f,) = pd.findings
    assert f.code == "segment_missing_index" and f.severity == "warning" and f.offset == 100


def test_only_base_offsets(tmp_path):
    d = make_partition(tmp_path)
    pd = load_partition_dir(d, only_base_offsets=[100])
    assert [s.base_offset for s in pd.segments] == [100]
    assert pd.topic_id is not None and pd.findings == ()


def test_pending_delete_dir_and_bad_name(tmp_path):
    pd = load_partition_dir(make_partition(tmp_path, f"orders-2.{UUID}-delete"))
    assert pd.name is not None and pd.name.state is PartitionState.DELETE
    assert [f.code for f in pd.findings] == ["partition_delete"]
    pd = load_partition_dir(make_partition(tmp_path, "not_a_partition"))
    assert pd.name is None and pd.findings[0].code == "partition_dir_name_invalid"


def test_log_contents_never_opened(tmp_path, monkeypatch):
    d = make_partition(tmp_path)
    import builtins
    real_open = builtins.open

    def guarded(file, mode="r", *args, **kwargs):
        assert not str(file).endswith(".log"), "a .log was opened"
        assert "w" not in mode and "a" not in mode and "+" not in mode
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    assert len(load_partition_dir(d).segments) == 3
