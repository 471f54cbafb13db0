"""The query's conditions read into selectors: only what cannot change the answer."""

from __future__ import annotations

import duckdb
import pytest

from segtools.sql.pushdown import Parsed, Pushdown, for_view
from segtools.sql.pushdown import parse as parse_on


def parse(sql: str) -> Parsed:
    return parse_on(duckdb.connect(), sql)


def push(sql: str, view: str = "records") -> Pushdown:
    return for_view(parse(sql), view)


def test_conjuncts_become_selectors():
    p = push("select count(*) from records where topic = 'a' and partition in (1, 2) "
             "and \"offset\" between 5 and 9")
    assert (p.topics, p.partitions, p.offset_min, p.offset_max) == (("a",), (1, 2), 5, 10)
    assert {"topic", "partition", "offset"} <= p.columns and "value" not in p.columns


@pytest.mark.parametrize(("where", "low", "high"), [
    ('"offset" > 3', 4, None), ('"offset" >= 3', 3, None), ('"offset" < 3', None, 3),
    ('"offset" <= 3', None, 4), ('3 < "offset"', 4, None), ('10 >= "offset"', None, 11),
    ('"offset" = 7', 7, 8), ('"offset" in (9, 4, 6)', 4, 10),
    ('"offset" > 3 and "offset" > 5 and "offset" < 20 and "offset" <= 12', 6, 13),
])
def test_offset_bounds(where, low, high):
    p = push(f"select * from records where {where}")
    assert (p.offset_min, p.offset_max) == (low, high)
    assert p.columns is None  # select *: every column


def test_time_bounds():
    """Both bounds are read; the upper one (the next ms after the literal's, so that ``<``
    and ``<=`` both keep every row they pass) is used only with ``time_index``."""
    p = push("select key from records r where r.timestamp >= TIMESTAMP '2024-01-01 00:00:00' "
             "and r.timestamp < TIMESTAMP '2024-01-01 01:00:00'")
    assert (p.timestamp_min_ms, p.timestamp_max_ms) == (1704067200000, 1704070800001)
    assert (p.offset_min, p.offset_max) == (None, None)


@pytest.mark.parametrize(("where", "low", "high"), [
    ("timestamp <= '2024-01-01 01:00:00'", None, 1704070800001),
    ("'2024-01-01 01:00:00' > timestamp", None, 1704070800001),
    ("timestamp between '2024-01-01' and '2024-01-01 01:00'", 1704067200000, 1704070800001),
    ("timestamp = '2024-01-01 01:00:00.250'", 1704070800250, 1704070800251),
    ("timestamp in ('2024-01-01 01:00', '2024-01-01')", 1704067200000, 1704070800001),
    ("timestamp < '2024-01-01 02:00' and timestamp < '2024-01-01 01:00'", None,
     1704070800001),
    ("timestamp < 5", None, None),  # a number is no time in DuckDB
])
def test_upper_time_bound(where, low, high):
    p = push(f"select * from records where {where}")
    assert (p.timestamp_min_ms, p.timestamp_max_ms) == (low, high)


@pytest.mark.parametrize("sql", [
    "select * from records where topic = 'a' or partition = 1",
    "select * from records join batches b on true where topic = 'a'",  # whose topic?
    "select * from records r join batches b on true where b.topic = 'a'",
    "select * from records where upper(topic) = 'A'",
    "select * from records where partition = (select 1)",
    "with records as (select 1 as topic) select * from records where topic = 'a'",
])
def test_nothing_pushed_when_it_could_change_the_answer(sql):
    p = push(sql)
    assert (p.topics, p.partitions, p.offset_min, p.offset_max, p.timestamp_min_ms) == (
        None, None, None, None, None)


def test_qualified_columns_in_a_join_are_pushed():
    p = push("select r.key from records r join segments s on r.topic = s.topic "
             "where r.topic = 'orders' and r.partition = 3")
    assert (p.topics, p.partitions) == (("orders",), (3,))


def test_contradiction_reads_nothing():
    assert push("select * from records where topic = 'a' and topic = 'b'").empty()
    assert push('select * from records where "offset" > 9 and "offset" < 3').empty()


def test_views_not_named_are_not_read():
    tree = parse("select count(*) from segments")
    assert for_view(tree, "records").references == 0
    assert for_view(tree, "segments").references == 1
    assert for_view(parse("select 1 from records a, records b"), "records").references == 2


def test_columns_only_those_named():
    assert push("select count(*) from records").columns is not None
    assert "value" not in push("select topic, count(*) from records group by topic").columns
    assert push("select r.* from records r").columns is None
    assert push("select r from records r").columns is None  # the row itself


def test_the_engine_s_own_parser_decides():
    """DuckDB's grammar is the one the query runs under: a syntax error reads no view (the
    engine's error is the answer), a statement its serializer does not take reads them
    whole, and DuckDB's own syntax (``->>``, ``group by all``, ``exclude``) is understood."""
    assert push("selec * from records").references == 0
    assert push("describe records") == Pushdown()
    p = push("select value_decoded->>'$.id' from records where topic = 'a' group by all")
    assert p.topics == ("a",) and "value_decoded" in p.columns
    assert push("select * exclude (value) from records").columns is None
    assert push("select count(*) from records where \"offset\" > 3.5 and \"offset\" <= 7.2"
                ).offset_min == 4
    assert push("select count(*) from records where \"offset\" <= 7.2").offset_max == 8
