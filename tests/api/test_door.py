"""The Python API's door: every argument checked by the selectors it shares with the Spark
options (segtools.fetch.arguments), in the forms a notebook user types, with errors that name
the argument as it was passed; a lone segment file read like any partition; findings per read.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pyarrow as pa
import pytest

import segtools
from segtools.fetch.arguments import ArgumentError
from segtools.fetch.stream import payloads_as_text
from tests.fixtures_manifest import FIXTURES

SAMPLE = FIXTURES / "logdirs" / "sample"


@pytest.fixture(scope="module")
def logs():
    return segtools.open(SAMPLE)


@pytest.fixture
def lone(tmp_path):
    """A segment file copied out of its partition directory, into a folder of another name."""
    segment = SAMPLE / "orders.v2-eu-0" / "00000000000000000000.log"
    shutil.copy(segment, tmp_path / segment.name)
    return tmp_path / segment.name


def offsets_of(reader) -> list[tuple[str, int, int]]:
    table = reader.read_all()
    return list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                    table.column("offset").to_pylist(), strict=True))


def test_a_lone_segment_file_is_read_with_no_topic(lone):
    """The bytes do not say which partition they were: topic and partition are null, every
    level reads, and ``topics`` does not list the folder's name."""
    logs = segtools.open(lone)
    whole = segtools.open(SAMPLE / "orders.v2-eu-0" / lone.name)
    want = [r["offset"] for r in whole.records()]
    got = list(logs.records())
    assert [r["offset"] for r in got] == want and want
    assert {(r["topic"], r["partition"]) for r in got} == {(None, None)}
    assert logs.to_arrow().read_all().num_rows == len(want)
    assert len(list(logs.batches())) == len(list(whole.batches()))
    assert [s["base_offset"] for s in logs.segments()] == [0]
    assert logs.topics == []
    (p,) = logs.partitions()
    assert (p.topic, p.partition, p.name) == (None, None, lone.parent.name)
    with pytest.raises(ArgumentError, match=r"^topics: no topic matches 'orders'"):
        logs.to_arrow(topics="orders")


@pytest.mark.parametrize(("given", "rows"), [("false", 23), ("False", 23), (False, 23),
                                             ("true", 16), (True, 16), ("1", 16)])
def test_read_committed_as_text_or_bool(logs, given, rows):
    assert logs.to_arrow(topics="payments.txn", read_committed=given).read_all().num_rows == rows


def test_read_committed_refuses_other_values(logs):
    with pytest.raises(ArgumentError, match=r"^read_committed: must be true or false, not 'no"):
        logs.to_arrow(read_committed="nope")


@pytest.mark.parametrize("given", [0, "0", [0], ["0"], (0,)])
def test_partitions_as_number_or_text(logs, given):
    assert [p.name for p in logs.partitions("orders*", partitions=given)] == ["orders.v2-eu-0"]
    assert {r["partition"] for r in logs.records(topics="orders*", partitions=given,
                                                 columns=["partition"])} == {0}


def test_a_selection_that_matches_nothing_is_an_error(logs):
    with pytest.raises(ArgumentError, match=r"^topics: no topic matches 'nonexistent' under "
                                            r".*topics: big-value, corrupt-crc"):
        logs.to_arrow(topics="nonexistent")
    with pytest.raises(ArgumentError, match=r"^partitions: no partition 9"):
        list(logs.records(topics="orders*", partitions=9))


def test_offsets_in_every_accepted_form(logs):
    """Spark-JSON keys (``"0"``), numbers, JSON text and one offset as text all read the same
    rows; the earliest/latest words are Spark's."""
    want = offsets_of(logs.to_arrow(topics="orders.v2-eu", partitions=0,
                                    start_offset={"orders.v2-eu": {0: 100}}))
    assert want and min(o for _, _, o in want) == 100
    for form in ({"orders.v2-eu": {"0": 100}}, '{"orders.v2-eu": {"0": 100}}', 100, "100"):
        got = offsets_of(logs.to_arrow(topics="orders.v2-eu", partitions=0, start_offset=form))
        assert got == want, form
    every = offsets_of(logs.to_arrow(topics="orders.v2-eu", start_offset="earliest",
                                     end_offset="latest"))
    assert every == offsets_of(logs.to_arrow(topics="orders.v2-eu"))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"start_offset": {"orders.v2-eu": {"9": 100}}},
     "^start_offset: names orders.v2-eu-9, which is not under"),
    ({"start_offset": "soon"}, "^start_offset: must be an offset"),
    ({"start_offset": "latest"}, "^start_offset: latest is not allowed"),
    ({"end_offset": {"orders.v2-eu": {"0": -2}}}, "^end_offset: orders.v2-eu-0 = -2"),
    ({"start_offset": {"orders.v2-eu": {"zero": 1}}}, "keyed by partition numbers"),
    ({"start_time": "yesterday"}, "^start_time: must be epoch ms, ISO-8601 or a datetime"),
    ({"start_time": datetime(2023, 11, 15)}, "^start_time: .* has no time zone"),
    ({"level": "record"}, "^level: must be one of records, batches, segments, not 'record'"),
    ({"topic": "orders"}, "^to_arrow\\(\\) got an unexpected argument 'topic'; did you mean "
                          "'topics'"),
    ({"states": "deleted"}, "^states: unknown state 'deleted'"),
    ({"columns": ["offest"]}, "^columns: level=records has no column 'offest'"),
])
def test_errors_name_the_python_argument(logs, kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        logs.to_arrow(**kwargs)


def test_a_keyword_of_another_method_is_refused_by_name(logs):
    with pytest.raises(ArgumentError, match=r"^records\(\) got an unexpected argument "
                                            r"'binary'"):
        logs.records(binary="binary")
    with pytest.raises(ArgumentError, match=r"did you mean 'columns'"):
        logs.to_arrow(column=["offset"])


def test_a_typo_in_records_names_records(logs):
    with pytest.raises(ArgumentError, match=r"^records\(\) got an unexpected argument "
                                            r"'partiton'; did you mean 'partitions'"):
        logs.records(partiton=0)


def test_times_in_every_accepted_form(logs):
    moment = datetime(2023, 11, 14, 22, 13, 30, tzinfo=UTC)
    ms = int(moment.timestamp() * 1000)
    want = offsets_of(logs.to_arrow(topics="orders.v2-eu", start_time=ms))
    assert want
    for form in (moment, "2023-11-14T22:13:30Z", "2023-11-14T22:13:30", str(ms),
                 {"orders.v2-eu": {str(p): ms for p in range(5)}}):
        assert offsets_of(logs.to_arrow(topics="orders.v2-eu", start_time=form)) == want, form


def test_findings_are_per_read_never_accumulating():
    """Three reads of a tree with a CRC mismatch: each read's findings, once."""
    logs = segtools.open(SAMPLE)
    counts = []
    for _ in range(3):
        logs.to_arrow().read_all()
        counts.append(sum(f.code == "crc_mismatch" for f in logs.findings))
    assert counts == [1, 1, 1]
    walk_only = len(segtools.open(SAMPLE).findings)
    logs.to_arrow(topics="orders*").read_all()  # a read without damage leaves the walk's
    assert len(logs.findings) == walk_only


def test_to_arrow_reads_again_at_each_use(logs):
    """A notebook cell run twice over the same ``to_arrow()`` answer gets the same rows each
    time, from ``read_all()`` as from DuckDB's scan (a spent ``RecordBatchReader`` gave an
    empty table the second time), and each pass reports its own findings."""
    duckdb = pytest.importorskip("duckdb")
    reader = logs.to_arrow(topics="corrupt-crc")
    first = reader.read_all()
    assert first.num_rows > 0
    assert reader.read_all().equals(first)
    assert [f.code for f in logs.findings].count("crc_mismatch") == 1
    records = reader  # noqa: F841 (DuckDB finds it by its variable name)
    for _ in range(2):
        assert duckdb.sql('SELECT count(*) FROM records').fetchall()[0][0] == first.num_rows
    assert sum(b.num_rows for b in reader) == first.num_rows


def test_strings_gives_keys_and_values_as_utf8_text(logs):
    """``strings=True``: key and value as UTF-8 ``string`` columns, the same payloads as the
    bytes decoded, so DuckDB's JSON functions run on them without ``decode()``."""
    duckdb = pytest.importorskip("duckdb")
    raw = logs.to_arrow(topics="orders.v2-eu", columns=["key", "value"]).read_all()
    text = logs.to_arrow(topics="orders.v2-eu", columns=["key", "value"], strings=True)
    assert text.schema.field("value").type == pa.string()
    table = text.read_all()
    assert table.column("value").to_pylist() == [
        None if v is None else v.decode() for v in raw.column("value").to_pylist()]
    records = text  # noqa: F841 (DuckDB finds it by its variable name)
    assert duckdb.sql("SELECT count(*) FROM records WHERE value LIKE '%'").fetchall()[0][0] \
        == table.num_rows
    first = next(logs.records(topics="orders.v2-eu", strings=True))
    assert isinstance(first["value"], str)
    with pytest.raises(ArgumentError, match="strings"):
        logs.to_arrow(strings="perhaps")


def test_bytes_that_are_not_utf8_become_replacement_characters():
    batch = pa.record_batch({"key": pa.array([b"k", None], pa.binary()),
                             "value": pa.array([b"ok", b"\xff\xfe"], pa.binary_view())})
    out = payloads_as_text(batch)
    assert out.column("key").to_pylist() == ["k", None]
    assert out.column("value").to_pylist() == ["ok", "\ufffd\ufffd"]


@pytest.mark.parametrize(("given", "decoded"), [
    (True, True), ("true", True), ("TRUE", True), ("1", True), ("schema", True),
    (False, False), ("false", False), ("", False), ("0", False)])
def test_decode_takes_the_spark_options_words(given, decoded):
    """A value copied from ``.option("decode", "true")`` means the same in Python."""
    payloads = segtools.open(FIXTURES / "logdirs" / "payloads")
    names = payloads.to_arrow(topics="orders", decode=given).schema.names
    assert ("value_decoded" in names) is decoded


@pytest.mark.parametrize(("call", "message"), [
    (lambda: segtools.open(SAMPLE).to_arrow(decode="bogus"), "^decode: unknown decode mode"),
    (lambda: segtools.open(SAMPLE).to_arrow(decode=3), "^decode: must be true, false"),
    (lambda: segtools.open(""), "^paths: an empty path names no location"),
    (lambda: segtools.open(SAMPLE, max_read_rate="fast"), "^max_read_rate: not a rate"),
    (lambda: segtools.open(SAMPLE, page_cache="off"), "^page_cache: must be one of"),
    (lambda: segtools.open(SAMPLE, jobs=0), "^jobs: must be >= 1"),
])
def test_the_door_names_every_argument(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_paths_as_a_list_as_spark_load_takes_them():
    both = [SAMPLE, FIXTURES / "logdirs" / "legacy"]
    assert repr(segtools.open(both)) == repr(segtools.open(*both))


def test_a_partition_repr_escapes_what_would_drive_a_terminal():
    names = [repr(p) for p in segtools.open(FIXTURES / "logdirs" / "hostile").partitions()]
    assert names and not any(c in name for name in names for c in "\x1b\x07\x9b")
    assert any("\\x1b[31mred" in name for name in names)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: segtools.explain_retention(SAMPLE, forecast_days=-1), "^forecast_days: must be more"),
    (lambda: segtools.explain_retention(SAMPLE, forecast_days="soon"), "^forecast_days: must be a"),
    (lambda: segtools.explain_compaction(SAMPLE, top="many"), "^top: must be a whole number"),
    (lambda: segtools.explain_compaction(SAMPLE, tombstone_limit=-1), "^tombstone_limit: must be"),
    (lambda: segtools.producers(SAMPLE, duplicates_window="soon"), "^duplicates_window: not a"),
    (lambda: segtools.open(SAMPLE).transactions(changes="x"), "^changes: must be a whole"),
    (lambda: segtools.explain_retention(SAMPLE, config="/nonexistent/topic.properties"),
     "^config: /nonexistent/topic.properties: "),
])
def test_analysis_arguments_are_checked_at_the_door(call, message):
    """Each analysis argument fails with its own name, never deep inside the analysis (a
    string ``forecast_days`` was once multiplied into an 86-million-digit number)."""
    with pytest.raises(ArgumentError, match=message):
        call()


def test_analysis_numbers_as_text_mean_the_numbers():
    assert segtools.explain_retention(SAMPLE, at="2023-11-16T00:00Z", forecast_days="7") \
        .to_json() == segtools.explain_retention(SAMPLE, at="2023-11-16T00:00Z",
                                                 forecast_days=7).to_json()
    assert segtools.producers(SAMPLE, duplicates_window="2m").to_json() == \
        segtools.producers(SAMPLE, duplicates_window=120_000).to_json()


def test_decode_columns_can_be_named_among_columns():
    """As a Spark schema naming only ``value_decoded``: the columns asked, in their order,
    the values decoded as a full decode does, the key side not decoded at all."""
    payloads = segtools.open(FIXTURES / "logdirs" / "payloads")
    narrow = payloads.to_arrow(topics="orders", decode=True,
                               columns=["offset", "value_decoded", "value_schema_id"]).read_all()
    assert narrow.schema.names == ["offset", "value_decoded", "value_schema_id"]
    full = payloads.to_arrow(topics="orders", decode=True).read_all()
    for name in narrow.schema.names:
        assert narrow.column(name).to_pylist() == full.column(name).to_pylist(), name
    with pytest.raises(ArgumentError, match=r"^columns: value_decoded is a decode column"):
        payloads.to_arrow(topics="orders", columns=["offset", "value_decoded"])


def test_to_polars_is_a_frame_of_every_row(logs):
    read = logs.to_arrow(level="batches")
    frame = read.to_polars()
    assert type(frame).__name__ == "DataFrame"
    assert frame.shape == (read.read_all().num_rows, len(read.schema.names))


def test_offsets_groups_that_match_nothing_are_refused():
    forensics = FIXTURES / "logdirs" / "forensics"
    with pytest.raises(ArgumentError, match=r"^groups: no group matches 'biling'"):
        segtools.offsets_at(forensics, groups="biling")
    assert segtools.offsets_at(forensics, groups="billing*").groups


def test_a_time_in_epoch_seconds_is_refused_not_read_as_1970(logs):
    """1700000010 read as ms is 1970-01-20: every record would be selected, silently."""
    with pytest.raises(ArgumentError, match=r"^start_time: 1700000010 looks like epoch seconds"):
        logs.to_arrow(topics="orders.v2-eu", start_time=1700000010)
    assert logs.to_arrow(topics="orders.v2-eu", start_time=0).read_all().num_rows == \
        logs.to_arrow(topics="orders.v2-eu").read_all().num_rows


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: t.partitions("nope"), r"^topics: no topic matches 'nope' \(topics here: big-value"),
    (lambda t: t.partitions("orders*", partitions=9), "^partitions: no partition 9"),
    (lambda t: t.schema_usage("nosuch"), "^topics: no topic matches 'nosuch'"),
    (lambda t: t.transactions(topics="nope"), "^topics: no topic matches 'nope'"),
])
def test_a_selection_of_nothing_is_refused_by_every_method(logs, call, message):
    with pytest.raises(ArgumentError, match=message):
        call(logs)
