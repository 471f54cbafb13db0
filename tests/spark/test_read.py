"""What the executors produce, checked in-process against what Kafka's own reader dumped.

Every fixture log (every codec, magic 0/1/2, control batches, aborted transactions, compacted
batches, a CRC mismatch, a torn tail) is read through the source's planner and reader, with the
pickling Spark does in between, and compared record by record with ``fixtures/expected``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark_kafkalog import scan
from pyspark_kafkalog.options import Level, OptionError

from segtools.decode import chunks
from segtools.errors import CorruptDataError, SegtoolsError
from segtools.fetch import arrow
from tests.fixtures_manifest import LOGS, expected_lines
from tests.spark.conftest import committed, expected_rows
from tests.spark.inprocess import read, schema_of

KEY = ("tree", "topic", "partition", "offset")
COMPARED = ("key", "value", "headers", "timestamp", "position", "magic", "compression",
            "crc_valid", "is_control", "is_transactional", "producer_id", "segment_base_offset")


def normalised(table: pa.Table) -> list[dict]:
    """Arrow rows in the shape of :func:`expected_rows` (timestamps in ms, headers as
    tuples, the tree named by the log dir)."""
    out = []
    micros = table.column("timestamp").cast(pa.int64()).to_pylist()
    for row, us in zip(table.to_pylist(), micros, strict=True):
        row["tree"] = Path(row["log_dir"]).name
        row["timestamp"] = None if us is None else us // 1000
        row["headers"] = [(h["key"], h["value"]) for h in row.get("headers") or []]
        out.append(row)
    return out


def by_key(rows: list[dict]) -> dict[tuple, dict]:
    keyed = {tuple(r[k] for k in KEY): r for r in rows}
    assert len(keyed) == len(rows), "duplicate rows"
    return keyed


def assert_same(got: list[dict], want: list[dict]) -> None:
    g, w = by_key(got), by_key(want)
    assert sorted(g) == sorted(w)
    for k, expected in w.items():
        for field in COMPARED:
            assert g[k][field] == expected[field], (k, field)


@pytest.fixture(scope="module")
def everything(trees):
    return read({"path": str(trees), "includeHeaders": True, "includeControl": True,
                 "partitionStates": "all"})


def test_every_record_of_every_fixture_equals_kafkas_reader(everything):
    assert_same(normalised(everything), expected_rows())


def test_default_hides_control_records_and_deleted_partitions(trees):
    got = normalised(read({"path": str(trees), "includeHeaders": True}))
    want = [r for r in expected_rows() if not r["is_control"] and r["state"] == "live"]
    assert_same(got, want)


def test_read_committed_drops_aborted_transactions_like_a_consumer(trees):
    got = normalised(read({"path": str(trees), "readCommitted": True, "includeHeaders": True}))
    want = committed([r for r in expected_rows() if r["state"] == "live"])
    assert_same(got, want)
    txn = [r for r in got if r["topic"] == "payments.txn"]
    assert 0 < len(txn) < len([r for r in expected_rows() if r["topic"] == "payments.txn"
                               and not r["is_control"]])


def test_schema_and_kafka_columns(everything, trees):
    names = everything.schema.names
    assert names[:8] == ["key", "value", "topic", "partition", "offset", "timestamp",
                         "timestampType", "headers"]
    row = next(r for r in everything.to_pylist() if r["topic"] == "legacy.v0")
    assert row["timestampType"] == -1 and row["timestamp"] is None
    types = {r["timestampType"] for r in everything.to_pylist() if r["topic"] == "edge-cases"}
    assert types == {0, 1}
    assert {r["log_dir"] for r in everything.to_pylist()} == {
        str(trees / "sample"), str(trees / "legacy")}


@pytest.fixture
def fresh_worker():
    """The findings' log as a new executor worker process has it: nothing said yet."""
    for f in scan.findings_log.filters:
        f.seen.clear()


def test_corrupt_batch_is_flagged_and_logged(trees, caplog, fresh_worker):
    with caplog.at_level(logging.WARNING, logger="pyspark_kafkalog"):
        rows = read({"path": str(trees / "sample" / "corrupt-crc-0")}).to_pylist()
    assert [r["crc_valid"] for r in rows].count(False) == 3
    assert any("crc_mismatch" in m and "at byte 225" in m for m in caplog.messages)


def test_a_finding_is_logged_once_per_worker_whatever_the_actions(trees, caplog, fresh_worker):
    """Spark reads the file again for each action; the worker says its finding once."""
    with caplog.at_level(logging.WARNING, logger="pyspark_kafkalog"):
        for _ in range(3):
            rows = read({"path": str(trees / "sample" / "corrupt-crc-0")}).to_pylist()
            assert [r["crc_valid"] for r in rows].count(False) == 3
    said = [m for m in caplog.messages if "crc_mismatch" in m and "at byte 225" in m]
    assert len(said) == 1, said


def test_fail_on_corruption_names_file_and_position(trees):
    with pytest.raises(CorruptDataError) as e:
        read({"path": str(trees / "sample" / "corrupt-crc-0"), "failOnCorruption": True})
    assert "corrupt-crc-0/00000000000000000000.log" in str(e.value)
    assert "at byte 225" in str(e.value)
    torn = read({"path": str(trees / "sample" / "torn-tail-0"), "failOnCorruption": True})
    assert torn.num_rows == 12  # a torn tail is the end of data, not corruption


def test_undecodable_records_are_skipped_with_a_warning(tmp_path, caplog):
    """A v2 batch that declares 3 records but holds 2, with a correct CRC: the kernel keeps
    the records before the fault (as Kafka's iterator and ``segtools dump`` do), the read
    goes on with a warning, and ``failOnCorruption`` turns it into an error with the byte."""
    from segtools.formats import batch as v2
    from tests.builders import encode_records

    records = [dict(timestamp_delta=i, offset_delta=i, key=b"k%d" % i, value=b"v", headers=[])
               for i in range(2)]
    lying = v2.build_batch(base_offset=0, records_payload=encode_records(records),
                           records_count=3, last_offset_delta=2, base_timestamp=1,
                           max_timestamp=2)
    pdir = tmp_path / "logs" / "bad-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(lying)
    with caplog.at_level(logging.WARNING, logger="pyspark_kafkalog"):
        rows = read({"path": str(pdir)}).to_pylist()
    assert [r["key"] for r in rows] == [b"k0", b"k1"]
    assert "corrupt_records" in caplog.text
    with pytest.raises(CorruptDataError, match=r"bad-0/00000000000000000000.log.*at byte"):
        read({"path": str(pdir), "failOnCorruption": True})


def test_user_schema_builds_only_the_asked_columns(trees, monkeypatch):
    calls = []
    real = arrow.views_array
    monkeypatch.setattr(arrow, "views_array",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    table = read({"path": str(trees / "sample")},
                 schema_of(Level.RECORDS, "offset", "key", "partition"))
    assert table.schema.names == ["offset", "key", "partition"]
    assert len(calls) > 0
    keys_only = len(calls)
    calls.clear()
    read({"path": str(trees / "sample")},
         schema_of(Level.RECORDS, "offset", "key", "value", "partition"))
    assert len(calls) == 2 * keys_only  # the value gather happens only when value is asked


def test_batch_level_columns_skip_the_deep_decode(trees, monkeypatch):
    decoded = []

    real = chunks.decode

    def counting(source, table, **kw):
        decoded.extend(table.position.tolist())
        return real(source, table, **kw)

    monkeypatch.setattr(chunks, "decode", counting)
    shallow = read({"path": str(trees / "sample" / "orders.v2-eu-3")},
                   schema_of(Level.RECORDS, "topic", "partition", "compression"))
    assert shallow.num_rows == 252 and decoded == []
    deep = read({"path": str(trees / "sample" / "orders.v2-eu-3")},
                schema_of(Level.RECORDS, "topic", "offset"))
    assert deep.num_rows == 252 and decoded


def test_user_schema_may_widen_types(trees):
    from pyspark.sql.types import LongType, StructField, StructType

    table = read({"path": str(trees / "sample" / "orders.v2-eu-0")},
                 StructType([StructField("partition", LongType()),
                             StructField("OFFSET", LongType())]))
    assert table.schema.field("partition").type == pa.int64()
    assert table.num_rows == 252


def test_unknown_column_is_an_error_naming_the_columns(trees):
    with pytest.raises(OptionError, match="no column 'nope'"):
        read({"path": str(trees), "level": "batches"},
             schema_of(Level.BATCHES, "count").add("nope", "long"))


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(SegtoolsError, match="no such file or directory"):
        read({"path": str(tmp_path / "missing")})
    with pytest.raises(SegtoolsError, match="no Kafka partitions found"):
        read({"path": str(tmp_path)})


def test_batches_level_equals_the_batch_headers(trees):
    """Every batch header Kafka's reader dumped for the partition's segments (data batches
    and transaction markers alike), field for field, in log order."""
    table = read({"path": str(trees / "sample" / "payments.txn-0"), "level": "batches"})
    fields = ("base_offset", "last_offset", "count", "position", "size", "magic",
              "compression", "crc", "crc_valid", "producer_id", "producer_epoch",
              "base_sequence", "last_sequence", "is_transactional", "is_control")
    got = [(r["segment_base_offset"], *(r[f] for f in fields),
            int(r["max_timestamp"].timestamp() * 1000), r["leader_epoch"])
           for r in table.to_pylist()]
    want = [(int(Path(entry["path"]).name.split(".")[0]), *(b[f] for f in fields),
             b["max_timestamp"], b["partition_leader_epoch"])
            for entry in LOGS if entry["path"].startswith("logdirs/sample/payments.txn-0/")
            and entry["path"].endswith(".log")
            for b in expected_lines(entry) if b["type"] == "batch"]
    assert len(want) == 14  # 9 + 5 batches, markers included
    assert got == want


def test_segments_level_is_one_summary_per_segment(trees):
    rows = read({"path": str(trees), "level": "segments"}).to_pylist()
    compact = sorted((r for r in rows if r["topic"] == "payments-compact"
                      and r["partition"] == 0), key=lambda r: r["base_offset"])
    assert [r["base_offset"] for r in compact] == [0, 25, 40, 55, 60]
    assert compact[-1]["size"] == 0 and compact[-1]["is_active"]
    assert compact[0]["cleaner_offset"] == 40
    orders = next(r for r in rows if r["topic"] == "orders.v2-eu" and r["partition"] == 0)
    assert orders["log_start_offset"] == 3 and orders["high_watermark"] == 252
    corrupt = next(r for r in rows if r["topic"] == "corrupt-crc")
    assert corrupt["crc_errors"] == 1
    assert any(f["code"] == "crc_mismatch" for f in corrupt["findings"])


def test_segment_vanished_after_planning_is_skipped(trees, tmp_path, caplog):
    import shutil

    from tests.spark.inprocess import plan

    copy = tmp_path / "logs"
    shutil.copytree(trees / "sample" / "payments-compact-1", copy / "payments-compact-1")
    reader, tasks = plan({"path": str(copy)})
    (copy / "payments-compact-1" / "00000000000000000000.log").unlink()
    with caplog.at_level(logging.WARNING, logger="pyspark_kafkalog"):
        rows = [r for t in tasks for b in reader.read(t) for r in b.to_pylist()]
    assert len(rows) == 28 and "deleted since the read was planned" in caplog.text


def test_placeholder_partition_reads_nothing():
    from pyspark.sql.datasource import InputPartition

    assert list(scan.read_task(InputPartition(None), None)) == []


def test_segment_files_as_paths(trees):
    pdir = trees / "sample" / "payments-compact-0"
    empty = read({"path": str(pdir / "00000000000000000060.log"), "level": "segments"})
    assert empty.to_pylist()[0]["size"] == 0  # an empty segment still has its summary row
    two = read({"paths": json.dumps([str(pdir / "00000000000000000025.log"),
                                     str(pdir / "00000000000000000040.log")])})
    assert sorted(set(two.column("segment_base_offset").to_pylist())) == [25, 40]
    assert two.num_rows == 14 + 15


def test_python_api_reads_what_the_source_reads(everything, trees):
    """One implementation, two faces: ``segtools.open(...).to_arrow()`` with the same options
    gives the Spark source's schema and rows, and both equal Kafka's reader."""
    import segtools
    from segtools.fetch.arguments import PARTITION_STATES

    api = segtools.open(trees).to_arrow(include_headers=True, include_control=True,
                                        states=PARTITION_STATES, binary="binary").read_all()
    assert api.schema == everything.schema
    assert_same(normalised(api), normalised(everything))
    assert_same(normalised(api), expected_rows())


def test_a_lone_segment_file_reads_with_null_topic(tmp_path):
    """A segment file copied out of its partition directory: read in full, topic and
    partition null (nothing says which they were), as ``segtools.open`` reads it."""
    import shutil

    from tests.fixtures_manifest import FIXTURES

    source = FIXTURES / "logdirs" / "sample" / "orders.v2-eu-0" / "00000000000000000000.log"
    shutil.copy(source, tmp_path / source.name)
    table = read({"path": str(tmp_path / source.name)},
                 schema_of(Level.RECORDS, "topic", "partition", "offset"))
    whole = read({"path": str(source)}, schema_of(Level.RECORDS, "offset"))
    assert table.column("offset").to_pylist() == whole.column("offset").to_pylist()
    assert whole.num_rows and set(table.column("topic").to_pylist()) == {None}
    assert set(table.column("partition").to_pylist()) == {None}


def test_offset_map_errors_name_the_spark_option(trees):
    with pytest.raises(OptionError, match=r"^kafkalog: option startingOffsets: names "
                                          r"orders.v2-eu-9, which is not under"):
        read({"path": str(trees / "sample"), "startingOffsets": '{"orders.v2-eu": {"9": 1}}'})
    with pytest.raises(OptionError, match=r"^kafkalog: option topics: no topic matches 'nope'"):
        read({"path": str(trees / "sample"), "topics": "nope"})


@pytest.mark.parametrize(("declared", "message"), [
    ("topic", "column topic is string; the schema may declare it so, not int"),
    ("offset", "column offset is bigint; the schema may declare it so \\(or a wider integer\\), "
               "not int"),
])
def test_a_schema_type_the_column_cannot_take_fails_on_the_driver(trees, declared, message):
    from pyspark.sql.types import IntegerType, StructField, StructType

    from tests.spark.inprocess import plan

    with pytest.raises(OptionError, match=message):
        plan({"path": str(trees / "sample")}, StructType([StructField(declared, IntegerType())]))


def test_strings_gives_keys_and_values_as_text_in_sparks_exact_schema(trees):
    """``strings=true`` (or a user schema declaring ``key string``/``value string``): the
    payloads as UTF-8 text, each batch in exactly the Arrow form Spark checks."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import LongType, StringType, StructField, StructType
    from pyspark_kafkalog import DefaultSource

    path = str(trees / "sample" / "orders.v2-eu-0")
    raw = read({"path": path})
    source = DefaultSource({"path": path, "strings": "true"})
    assert source.schema()["value"].dataType == StringType()
    text = read({"path": path, "strings": "true"})
    assert text.schema.equals(to_arrow_schema(source.schema(), timezone="UTC"))
    assert text.column("value").to_pylist() == [
        None if v is None else v.decode() for v in raw.column("value").to_pylist()]
    declared = read({"path": path}, StructType([StructField("offset", LongType()),
                                                StructField("key", StringType())]))
    assert declared.column("key").to_pylist() == [
        None if k is None else k.decode() for k in raw.column("key").to_pylist()]
    with pytest.raises(OptionError, match="strings"):
        read({"path": path, "strings": "perhaps"})
