"""Option parsing: Spark's strings (keys in any case) to one value, with errors that name the
option, and Spark's Kafka-source rules for a batch query."""

from __future__ import annotations

import pytest
from pyspark_kafkalog.options import Level, OptionError, parse_options


def test_defaults_and_case_insensitive_keys():
    o = parse_options({"PATH": "/x", "includeheaders": "TRUE", "MinPartitions": "4"})
    assert o.paths == ("/x",) and o.include_headers and o.min_partitions == 4
    assert o.level is Level.RECORDS and not o.read_committed and not o.include_control
    assert o.topics == ("*",) and o.partition_states == ("live",) and o.verify_crc


def test_several_paths_arrive_as_json():
    assert parse_options({"paths": '["/a","/b"]'}).paths == ("/a", "/b")
    assert parse_options({"paths": '["/a"]', "path": "/c"}).paths == ("/a", "/c")


def test_offsets_and_timestamps():
    o = parse_options({"path": "/x", "startingOffsets": '{"t": {"0": 23, "1": -2}}',
                       "endingOffsets": '{"t": {"0": 50, "1": -1}}',
                       "startingOffsetsByTimestamp": '{"t": {"2": 1700000000000}}',
                       "endingTimestamp": "1700000009999", "topics": "t, orders.*"})
    assert o.starting_offsets == {"t": {0: 23, 1: -2}}
    assert o.ending_offsets == {"t": {0: 50, 1: -1}}
    assert o.starting_timestamps == {"t": {2: 1_700_000_000_000}}
    assert o.ending_timestamp == 1_700_000_009_999 and o.topics == ("t", "orders.*")


@pytest.mark.parametrize(("options", "message"), [
    ({}, "no path given"),
    ({"path": "/x", "level": "rows"}, "option level: must be one of"),
    ({"path": "/x", "startingOffsets": "latest"}, "not allowed for a batch read"),
    ({"path": "/x", "endingOffsets": "earliest"}, "not allowed for a batch read"),
    ({"path": "/x", "startingOffsets": '{"t": {"0": -1}}'}, "not allowed"),
    ({"path": "/x", "endingOffsets": '{"t": {"0": -2}}'}, "not allowed"),
    ({"path": "/x", "startingOffsets": "{bad"}, "not valid JSON"),
    ({"path": "/x", "startingOffsets": '{"t": {"x": 1}}'}, "keyed by partition numbers"),
    ({"path": "/x", "minPartitions": "0"}, "minPartitions must be >= 1"),
    ({"path": "/x", "includeHeaders": "maybe"}, "option includeHeaders: must be true or false"),
    ({"path": "/x", "startingTimestamp": "soon"},
     "option startingTimestamp: must be epoch ms, ISO-8601"),
    ({"path": "/x", "partitionStates": "gone"}, "unknown state"),
    ({"path": "/x", "subscribe": "t"}, "unknown option"),
])
def test_bad_values_name_the_option(options, message):
    with pytest.raises(OptionError, match=message):
        parse_options(options)


def test_all_partition_states():
    assert parse_options({"path": "/x", "partitionStates": "all"}).partition_states == (
        "live", "delete", "future", "stray")


def test_the_python_api_forms_are_accepted_too():
    """One parser per selector for both faces: ISO times, one offset for every partition,
    a partitions option, JSON maps keyed by strings."""
    o = parse_options({"path": "/x", "startingTimestamp": "2023-11-14T22:13:30Z",
                       "endingTimestamp": "1700000009999", "startingOffsets": "100",
                       "partitions": "0,2", "readCommitted": "False"})
    assert o.starting_timestamp == 1_700_000_010_000 and o.ending_timestamp == 1_700_000_009_999
    assert o.starting_offset == 100 and o.starting_offsets == {}
    assert o.partitions == (0, 2) and o.read_committed is False


@pytest.mark.parametrize(("options", "message"), [
    ({"path": "/x", "startingOffsets": "soon"}, "^kafkalog: option startingOffsets: must be"),
    ({"path": "/x", "partitions": "first"}, "^kafkalog: option partitions: must be a partition"),
    ({"path": "/x", "readCommited": "true"}, "did you mean readCommitted"),
    ({"path": "/x", "startingOffsetsByTimestamp": "1700000000000"}, "must be a JSON map"),
])
def test_errors_name_the_spark_option(options, message):
    with pytest.raises(OptionError, match=message):
        parse_options(options)


def test_gentle_options():
    from segtools.storage.gentle import PageCacheMode

    o = parse_options({"path": "/x", "pageCache": "RESTORE", "maxReadRate": "50MiB"})
    assert o.page_cache is PageCacheMode.RESTORE and o.max_read_rate == 50 * 2**20
    plain = parse_options({"path": "/x"})
    assert plain.page_cache is None and plain.max_read_rate is None
    with pytest.raises(OptionError, match="pageCache must be one of"):
        parse_options({"path": "/x", "pageCache": "drop"})
    with pytest.raises(OptionError, match="maxReadRate"):
        parse_options({"path": "/x", "maxReadRate": "fast"})
