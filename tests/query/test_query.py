"""segtools query: the views are the library's reads, narrowed before anything is decoded."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import segtools
from segtools.api import LogDirs
from segtools.cli.main import main
from segtools.storage import source
from tests.fixtures_manifest import FIXTURES, SAMPLE

HOSTILE = FIXTURES / "logdirs" / "hostile"


def query(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["query", *args])
    out, err = capsys.readouterr()
    return code, out, err


def tree_state(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_point_query_matches_to_arrow(capsys):
    sql = ("select \"offset\", key, value, timestamp from records where topic = 'orders.v2-eu' "
           "and partition = 1 and \"offset\" between 100 and 104 order by \"offset\"")
    code, out, _ = query(capsys, str(SAMPLE), "-c", sql, "--format", "jsonl", "--bytes", "hex")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    expected = segtools.open(SAMPLE).to_arrow(
        topics="orders.v2-eu", partitions=1, start_offset=100, end_offset=105,
        columns=["offset", "key", "value", "timestamp"], binary="binary").read_all()
    assert [r["offset"] for r in rows] == expected.column("offset").to_pylist()
    assert [r["value"] for r in rows] == [v.hex() for v in expected.column("value").to_pylist()]
    assert [r["timestamp"] for r in rows] == [
        t.isoformat() for t in expected.column("timestamp").to_pylist()]


def test_aggregation_over_every_view(capsys):
    code, out, _ = query(capsys, str(SAMPLE), "-c",
                         "select topic, count(*) as n from records group by topic order by topic",
                         "--format", "csv")
    assert code == 1  # the sample's damaged partitions: findings met while reading
    counts = {line.split(",")[0]: int(line.split(",")[1]) for line in out.splitlines()[1:]}
    assert counts["orders.v2-eu"] == sum(1 for _ in segtools.open(SAMPLE).records(
        topics="orders.v2-eu", columns=["offset"]))
    code, out, _ = query(capsys, str(SAMPLE), "-c",
                         "select count(*) from segments s join batches b "
                         "on s.topic = b.topic and s.partition = b.partition "
                         "and b.base_offset >= s.base_offset and b.base_offset < s.next_offset",
                         "--format", "csv")
    assert code == 1
    batches = segtools.open(SAMPLE).to_arrow("batches", columns=["base_offset"]).read_all()
    assert int(out.splitlines()[1]) == batches.num_rows


def _is_log(fd: int) -> bool:
    return os.readlink(f"/proc/self/fd/{fd}").endswith(".log")


def bytes_walked(monkeypatch) -> list[int]:
    """Every byte read from a segment's ``.log``: a small file's one ``pread`` at open, and
    the windows a larger one's walk asks its mapping or ``pread`` source for. (The index
    searches that choose the position are the indexes' own reads, not counted here.)"""
    asked: list[int] = []
    pread = os.pread

    def counted_pread(fd, length, position):
        data = pread(fd, length, position)
        if _is_log(fd):
            asked.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted_pread)
    for cls in (source.MappedSource, source.WindowSource):
        original = cls.window

        def window(self, lo, hi, *, keep=False, _original=original):
            got = _original(self, lo, hi, keep=keep)
            if _is_log(self.fd):
                asked.append(max(0, min(hi, got[2]) - lo))
            return got

        monkeypatch.setattr(cls, "window", window)
    return asked


def test_pushdown_reads_only_the_selected_bytes(capsys, monkeypatch):
    asked = bytes_walked(monkeypatch)
    point = ("select \"offset\", value from records where topic = 'orders.v2-eu' "
             "and partition = 0 and \"offset\" = 230")
    code, out, _ = query(capsys, str(SAMPLE), "-c", point, "--format", "jsonl")
    assert code == 0 and [json.loads(r)["offset"] for r in out.splitlines()] == [230]
    pushed = sum(asked)
    asked.clear()
    # the same rows, with the condition written so that nothing can be pushed
    unpushed = point.replace("where ", "where (").replace("= 230", "= 230) or false")
    code, out, _ = query(capsys, str(SAMPLE), "-c", unpushed, "--format", "jsonl")
    assert code == 1 and [json.loads(r)["offset"] for r in out.splitlines()] == [230]
    whole = sum(asked)
    partition = sum(p.stat().st_size for p in (SAMPLE / "orders.v2-eu-0").glob("*.log"))
    assert 0 < pushed <= (SAMPLE / "orders.v2-eu-0" / "00000000000000000205.log").stat().st_size
    assert whole > partition > 10 * pushed


def test_export_through_the_engine_writer(capsys, tmp_path):
    target = tmp_path / "eu.parquet"
    code, out, _ = query(capsys, str(SAMPLE), "-c",
                         "select * from records where topic = 'orders.v2-eu'", "-o", str(target))
    assert code == 0 and out == ""
    written = pq.read_table(target)
    assert written.num_rows == segtools.query(
        SAMPLE, "select count(*) as n from records where topic = 'orders.v2-eu'"
    ).column("n")[0].as_py()
    assert "value" in written.column_names
    for suffix in (".csv", ".jsonl"):
        code, _, _ = query(capsys, str(SAMPLE), "-c", "select topic from segments",
                           "-o", str(tmp_path / f"s{suffix}"))
        assert code == 1 and (tmp_path / f"s{suffix}").stat().st_size > 0


def test_nothing_written_under_the_locations(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = tree_state(SAMPLE)
    code, _, err = query(capsys, str(SAMPLE), "-c", "select * from segments",
                         "-o", str(SAMPLE / "out.parquet"))
    assert code == 2 and err.startswith("segtools: error: ") and err.count("\n") == 1
    code, _, _ = query(capsys, str(SAMPLE), "-c",
                       "select a.topic, count(*) from records a join records b "
                       "using (topic, partition, \"offset\") group by 1", "--memory", "64MB")
    assert code == 1
    assert tree_state(SAMPLE) == before
    assert list(tmp_path.iterdir()) == []  # the engine's spill directory is gone


@pytest.mark.parametrize(("sql", "where"), [
    ("select * form records", "(line 1, column 15)"),
    ("select nope from segments", "(line 1, column 8)"),
    ("   select nope from segments", "(line 1, column 11)"),
    ('select "offset"\nfrom segments where nope', "(line 2, column 21)"),
    ("select * from no_such_view", "no_such_view"),
    ("select count(*) from record", 'Did you mean "records"? (line 1, column 22)'),
    ("", "the query is empty"),
    (" ;\n-- nothing\n", "the query is empty"),
    ("select 1; select count(*) from records", "one SQL statement per query, not 2"),
])
def test_sql_error_is_one_line(capsys, sql, where):
    code, out, err = query(capsys, str(SAMPLE), "-c", sql)
    assert code == 2 and out == ""
    assert err.startswith("segtools: error: ") and err.count("\n") == 1 and where in err


def test_hostile_tree_gives_findings_as_rows(capsys):
    code, out, err = query(capsys, str(HOSTILE), "-c",
                           "select code, severity, path from findings order by all",
                           "--format", "jsonl")
    assert code == 0 and "Traceback" not in err
    rows = [json.loads(r) for r in out.splitlines()]
    verified = segtools.open(HOSTILE).verify()
    assert sorted(r["code"] for r in rows) == sorted(f.code for f in verified)
    code, out, err = query(capsys, str(HOSTILE), "-c", "select count(*) from records")
    assert code in (0, 1) and "Traceback" not in err


def test_text_table_streams_with_a_header(capsys):
    code, out, _ = query(capsys, str(SAMPLE), "-c",
                         "select topic, partition, base_offset, size from segments "
                         "order by topic, partition, base_offset")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["topic", "partition", "base_offset", "size"]
    assert len(lines) - 1 == segtools.open(SAMPLE).to_arrow("segments").read_all().num_rows


def test_duckdb_connection_holds_every_view():
    con = segtools.open(SAMPLE).duckdb()
    ((records,),) = con.execute("select count(*) from records").fetchall()
    assert records == segtools.query(SAMPLE, "select count(*) as n from records"
                                     ).column("n")[0].as_py()
    names = {row[0] for row in con.execute("show tables").fetchall()}
    assert {"records", "batches", "segments", "findings"} <= names
    assert os.path.isdir(SAMPLE)


@pytest.mark.parametrize("sql", [
    "copy (select 1) to '{dir}/evil.csv'",
    "copy (select * from segments) to '{sample}/evil.csv'",
    "attach '{dir}/evil.db'",
])
def test_the_query_itself_cannot_write(capsys, tmp_path, sql):
    before = tree_state(SAMPLE)
    code, _, err = query(capsys, str(SAMPLE), "-c", sql.format(dir=tmp_path, sample=SAMPLE))
    assert code == 2 and err.count("\n") == 1 and "Permission Error" in err
    assert list(tmp_path.iterdir()) == [] and tree_state(SAMPLE) == before


def test_bad_memory_is_one_line(capsys):
    code, _, err = query(capsys, str(SAMPLE), "-c", "select 1", "--memory", "lots")
    assert code == 2 and err.startswith("segtools: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["text", "csv", "jsonl"])
def test_repeated_column_names(capsys, fmt):
    code, out, err = query(capsys, str(SAMPLE), "--format", fmt, "-c",
                           "select f.path, s.path, f.code from findings f join segments s "
                           "on f.path = s.path order by all")
    assert code in (0, 1) and "error" not in err
    lines = out.splitlines()
    if fmt == "jsonl":
        assert lines and all(set(json.loads(r)) == {"path", "path_2", "code"} for r in lines)
    else:
        assert lines[0].replace(",", " ").split() == ["path", "path_2", "code"]
        assert len(lines) > 1


def test_rows_read_are_told_to_the_progress_display():
    from segtools.sql import engine
    from segtools.sql.views import Options

    told: list[int] = []
    tree = segtools.open(SAMPLE)
    sql = "select count(*) from records where topic = 'orders.v2-eu'"
    with engine.session() as con:
        engine.register(con, tree, sql, Options(on_rows=told.append))
        (n,) = engine.run(con, sql).read_all().to_pylist()[0].values()
    assert sum(told) == n > 0


@pytest.mark.parametrize("where", ["topic = 'nope'", "topic = 'orders.v2-eu' and partition = 9",
                                   "topic in ('nope', 'gone')"])
@pytest.mark.parametrize("view", ["records", "batches", "segments"])
def test_conditions_naming_nothing_give_no_rows(view, where):
    """In SQL a condition no row meets is a question with no rows, not an error (the API's
    selectors refuse such a typo; the pushdown must not turn one into the other)."""
    table = segtools.query(SAMPLE, f"select * from {view} where {where}")
    assert table.num_rows == 0
    assert table.schema.names == segtools.query(SAMPLE, f"select * from {view} limit 0"
                                                ).schema.names


@pytest.mark.parametrize("sql", ["select 1 as one", "select 1 as one; "])
def test_a_query_naming_no_view_runs(capsys, sql):
    """No view to register: the parse's own result must not be left open on the connection
    (DuckDB then refused the query itself: 'connection has an unfinished result')."""
    code, out, err = query(capsys, str(SAMPLE), "--format", "jsonl", "-c", sql)
    assert (code, json.loads(out), err) == (0, {"one": 1}, "")


def test_an_aggregation_reads_only_its_two_columns_as_views(monkeypatch):
    """The benchmark's aggregation hands the reader only ``topic`` and ``value``, the values
    as views of the segment's bytes (no copy), the topic as a dictionary: the walk decodes
    nothing else and DuckDB groups by an index (docs/performance.md, SQL)."""
    asked: list[dict] = []
    real = LogDirs.to_arrow

    def to_arrow(self, level="records", **kwargs):
        asked.append({"level": str(level), **kwargs})
        return real(self, level, **kwargs)

    monkeypatch.setattr(LogDirs, "to_arrow", to_arrow)
    table = segtools.query(SAMPLE / "orders.v2-eu-1", "select topic, count(*), "
                           "sum(octet_length(value)) from records group by topic")
    assert table.num_rows == 1
    (read,) = [a for a in asked if a["level"] == "records"]
    assert sorted(read["columns"]) == ["topic", "value"]
    assert read["binary"] == "view" and read["dictionary"] is True


@pytest.mark.parametrize("bytes_mode", ["base64", "hex"])
def test_a_text_export_writes_bytes_as_the_printed_rows_do(capsys, tmp_path, bytes_mode):
    """Keys, values and header values (bytes nested in a list of structs) in ``-o x.jsonl``
    and ``-o x.csv`` are the text ``--bytes`` prints, not the engine's own escaped text."""
    sql = ("select \"offset\", key, value, headers, {'k': key} as nested from records "
           "where topic = 'edge-cases' and \"offset\" in (5, 9) order by \"offset\"")
    args = (str(SAMPLE), "-c", sql, "--bytes", bytes_mode)
    code, printed, _ = query(capsys, *args, "--format", "jsonl")
    assert code == 0
    code, _, _ = query(capsys, *args, "-o", str(tmp_path / "rows.jsonl"))
    assert code == 0
    rows = [json.loads(line) for line in printed.splitlines()]
    assert [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()
            ] == rows
    code, _, _ = query(capsys, *args, "-o", str(tmp_path / "rows.csv"))
    assert code == 0
    written = (tmp_path / "rows.csv").read_text()
    assert all(r["key"] in written and r["value"] in written for r in rows)
    assert rows[1]["headers"][0]["value"] in written


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("sql", ["select topic, count(*) from records group by all",
                                 "select \"offset\" from records where topic = 'edge-cases'"])
def test_the_progress_display_is_gone_before_rows_reach_its_terminal(monkeypatch, sql):
    """A bar on the terminal the rows are printed on would have rows glued to its line:
    it goes before the first row (or the header of none) is written."""
    written_when_gone: list[str] = []

    @contextmanager
    def progress(description: str, *, quiet: bool):
        yield lambda n: None
        written_when_gone.append(sys.stdout.getvalue())

    monkeypatch.setattr(sys, "stdout", _Terminal())
    monkeypatch.setattr("segtools.cli.common.rows_progress", progress)
    assert main(["query", str(SAMPLE), "-c", sql]) in (0, 1)
    assert written_when_gone == [""] and sys.stdout.getvalue().startswith(("topic", "offset"))


def test_no_rows_still_print_the_header_and_names_are_terminal_safe(capsys):
    code, out, _ = query(capsys, str(SAMPLE), "-c",
                         "select topic, \"offset\" as \"a\x1b[31mb\" from records where false")
    assert code == 0
    assert out.split() == ["topic", "a\\x1b[31mb"] and "\x1b" not in out
