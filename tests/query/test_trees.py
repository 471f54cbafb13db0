"""A query walks only as far as its views need: the partitions a record view's conditions
name, with the rows the whole tree gives; and its start-up imports only what it runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import segtools
import segtools.api
from segtools.cli.main import main
from segtools.sql.pushdown import Pushdown
from segtools.sql.trees import partition_paths
from segtools.storage import logdirs, source
from tests.fixtures_manifest import FIXTURES, SAMPLE

ROOT = Path(__file__).resolve().parents[2]
POINT = ("select \"offset\", key, value, timestamp, segment_base_offset, position from records "
         "where topic = 'orders.v2-eu' and partition = 3 and \"offset\" between 10 and 12 "
         "order by \"offset\"")


@pytest.fixture
def loaded(monkeypatch) -> list[str]:
    """The partition directories the walk loads, in order."""
    seen: list[str] = []
    real = logdirs.load_named_partition_dir

    def load(path, *args, **kwargs):
        seen.append(os.path.basename(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(logdirs, "load_named_partition_dir", load)
    return seen


def test_a_point_query_walks_only_its_partition(capsys, loaded):
    code = main(["query", str(SAMPLE), "-c", POINT, "--format", "jsonl", "--bytes", "hex"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert loaded == ["orders.v2-eu-3"]  # listed once: the read plans over that listing
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["offset"] for r in rows] == [10, 11, 12]
    # the same rows as the whole tree's view (the notebook connection walks everything)
    whole = segtools.open(SAMPLE).duckdb().sql(POINT).fetchall()
    assert [(r["offset"], r["segment_base_offset"], r["position"]) for r in rows] == [
        (w[0], w[4], w[5]) for w in whole]
    assert [r["value"] for r in rows] == [w[2].hex() for w in whole]


def test_a_dataset_relists_at_each_read_unless_opened_to_be_read_at_once(loaded):
    """A notebook's dataset sees the segments rolled since it was opened (each read walks
    again); the query's, opened to be read at once, plans over the walk it made."""
    for relist, walks in ((True, 2), (False, 1)):
        loaded.clear()
        tree = segtools.api.LogDirs([str(SAMPLE / "orders.v2-eu-3")], relist=relist)
        rows = tree.to_arrow(columns=["offset"]).read_all().num_rows
        assert loaded == ["orders.v2-eu-3"] * walks and rows > 0


@pytest.mark.parametrize("sql", [
    "select count(*) from records where topic = 'orders.v2-eu'",  # no partition named
    "select count(*) from records where partition = 3",  # no topic named
    "select count(*) from records where topic = 'orders.v2-eu' or partition = 3",
    "select count(*) from records where topic = 'no-such-topic' and partition = 0",
])
def test_a_query_that_names_no_partition_exactly_walks_the_tree(capsys, loaded, sql):
    main(["query", str(SAMPLE), "-c", sql, "--format", "csv"])
    capsys.readouterr()
    assert "orders.v2-eu-3" in loaded and "payments.txn-0" in loaded


def test_the_analysis_views_read_the_whole_tree_beside_a_narrowed_one(capsys, loaded):
    sql = ("select (select count(*) from records where topic = 'orders.v2-eu' and "
           "partition = 3) as n, (select count(*) from segments) as segments")
    main(["query", str(SAMPLE), "-c", sql, "--format", "jsonl"])
    row = json.loads(capsys.readouterr()[0])
    whole = segtools.open(SAMPLE)
    assert row["segments"] == whole.to_arrow("segments", columns=["base_offset"]
                                             ).read_all().num_rows
    assert row["n"] == whole.to_arrow(topics="orders.v2-eu", partitions=3,
                                      columns=["offset"]).read_all().num_rows


def test_partition_paths_are_the_named_directories_of_a_log_dir():
    push = Pushdown(topics=("orders.v2-eu",), partitions=(1, 3, 99))
    assert partition_paths([str(SAMPLE)], push) == (
        str(SAMPLE / "orders.v2-eu-1"), str(SAMPLE / "orders.v2-eu-3"))
    assert partition_paths([str(SAMPLE)], Pushdown(topics=("orders.v2-eu",))) is None
    assert partition_paths([str(SAMPLE)], Pushdown(partitions=(1,))) is None
    # nothing there: the whole tree says what is there (or that nothing is)
    assert partition_paths([str(SAMPLE)], Pushdown(topics=("gone",), partitions=(0,))) is None
    # not a log dir: a container of several, an object store, a partition directory
    assert partition_paths([str(FIXTURES / "logdirs" / "replicas")], push) is None
    assert partition_paths(["s3://bucket/logs"], push) is None


def test_partition_paths_keep_what_the_whole_walk_would_skip(tmp_path):
    """A symlinked partition directory is listed and skipped by the log dir's walk; named
    alone it would be read. Such a tree is walked whole."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    shutil.copy(SAMPLE / "meta.properties", log_dir)
    shutil.copytree(SAMPLE / "orders.v2-eu-1", tmp_path / "elsewhere")
    (log_dir / "orders.v2-eu-1").symlink_to(tmp_path / "elsewhere")
    push = Pushdown(topics=("orders.v2-eu",), partitions=(1,))
    assert partition_paths([str(log_dir)], push) is None
    (log_dir / "orders.v2-eu-1").unlink()
    shutil.copytree(SAMPLE / "orders.v2-eu-1", log_dir / "orders.v2-eu-1")
    assert partition_paths([str(log_dir)], push) == (str(log_dir / "orders.v2-eu-1"),)
    payloads = FIXTURES / "logdirs" / "payloads"
    assert partition_paths([str(payloads)], Pushdown(topics=("orders",), partitions=(0,)),
                           with_schemas=True) == (str(payloads / "orders-0"),
                                                  str(payloads / "_schemas-0"))


def test_a_decoded_point_query_keeps_the_schemas_partition(capsys, loaded):
    payloads = FIXTURES / "logdirs" / "payloads"
    sql = ("select \"offset\", value_decoded from records where topic = 'orders' "
           "and partition = 0 order by \"offset\"")
    main(["query", str(payloads), "--decode", "-c", sql, "--format", "jsonl"])
    rows = [json.loads(line) for line in capsys.readouterr()[0].splitlines()]
    assert set(loaded) == {"orders-0", "_schemas-0"}
    whole = segtools.open(payloads).duckdb(decode=True).sql(sql).fetchall()
    assert rows and [r["value_decoded"] for r in rows] == [
        None if v is None else json.loads(v) for _, v in whole]


def test_a_missing_path_is_refused_even_when_no_view_is_read(capsys, tmp_path):
    code = main(["query", str(tmp_path / "nothing"), "-c", "select 1"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "no such file or directory" in err


#: the modules the probe asks whether the collector still walks
KEPT = ("duckdb", "pyarrow", "numpy", "segtools.fetch.rows")


@pytest.fixture(scope="module")
def point_query_process() -> dict:
    """A point query run by ``main`` in a fresh interpreter, as the command runs: its exit
    code, its rows, the modules it loaded, and which of ``KEPT`` the collector still walks."""
    probe = (
        "import gc, sys, types\n"
        "from segtools.cli.main import main\n"
        f"code = main(['query', {str(SAMPLE)!r}, '--format', 'jsonl', '-c', {POINT!r}])\n"
        "loaded = [n for n, m in sys.modules.items() if type(m) is types.ModuleType]\n"
        "walked = {id(o) for o in gc.get_objects()}\n"
        f"collected = [n for n in {KEPT!r} if id(vars(sys.modules[n])) in walked]\n"
        "print(json.dumps({'code': code, 'loaded': loaded, 'collected': collected}), "
        "file=sys.stderr)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spark")])}
    done = subprocess.run([sys.executable, "-c", "import json\n" + probe], env=env,
                          capture_output=True, text=True, check=True, timeout=120)
    return {**json.loads(done.stderr.strip().splitlines()[-1]),
            "rows": done.stdout.splitlines()}


def test_start_up_imports_only_what_the_query_runs(point_query_process):
    """pandas (through pyarrow's conversion of a zoned time) and the analyses the query never
    calls cost more than the rest of a point query: they are not imported."""
    report = point_query_process
    assert report["code"] == 0
    assert len(report["rows"]) == 3
    assert json.loads(report["rows"][0])["timestamp"].endswith("+00:00")
    loaded_now = set(report["loaded"])
    for name in ("pandas", "pyarrow.compute", "segtools.analysis.explain",
                 "segtools.analysis.whatif", "segtools.analysis.verify", "segtools.results",
                 "segtools.analysis.offsets",
                 # nor what only a remote store, decoding or a forked worker needs (a whole
                 # command's start, docs/query.md)
                 "psutil", "multiprocessing.pool",
                 "segtools.storage.remote_store", "segtools.payloads.decoder",
                 "segtools.payloads.plain"):
        assert name not in loaded_now, name


def test_the_modules_a_query_loads_are_kept_out_of_the_collector(point_query_process):
    """The engine, Arrow and the reading stack live until the process ends: frozen once
    loaded, no collection during the walk goes over them again and the exit does not tear
    them down object by object (docs/performance.md, SQL)."""
    assert point_query_process["code"] == 0
    assert point_query_process["collected"] == []


WHATIF = FIXTURES / "logdirs" / "whatif"
HOUR = ("select \"offset\", timestamp from records where topic = 'busy-clicks' "
        "and timestamp >= '2024-01-04 05:00' and timestamp < '2024-01-04 06:00' "
        "order by \"offset\"")


def explained(capsys, *flags: str) -> dict:
    code = main(["query", str(WHATIF), "--explain", "--format", "jsonl", *flags, "-c", HOUR])
    out, _ = capsys.readouterr()
    assert code == 0
    (row,) = [json.loads(line) for line in out.splitlines()]
    return row


def test_time_index_reads_the_hour_s_segment_of_a_ten_day_log(capsys):
    """busy-clicks-0 holds ten days in seven segments; one hour on the third day lies in the
    third segment. The lower bound alone reads from there to the end of the log; with the
    time index, as Kafka reads a time range, the one segment."""
    whole = segtools.open(WHATIF).to_arrow(topics="busy-clicks", columns=["offset"]
                                           ).read_all().num_rows
    without = explained(capsys)
    assert (without["segments"], without["segments_total"]) == (5, 7)
    assert without["timestamp_max"] is None
    with_index = explained(capsys, "--time-index")
    assert (with_index["segments"], with_index["segments_total"]) == (1, 7)
    assert with_index["bytes"] < without["bytes"] < with_index["bytes_total"]
    assert with_index["timestamp_max"] == "2024-01-04T06:00:00.001000+00:00"
    rows = {}
    for flags in ((), ("--time-index",)):
        main(["query", str(WHATIF), "--format", "jsonl", *flags, "-c", HOUR])
        rows[flags] = [json.loads(line) for line in capsys.readouterr()[0].splitlines()]
    assert rows[()] == rows[("--time-index",)] and len(rows[()]) == 15 < whole
    assert all(r["timestamp"].startswith("2024-01-04T05:") for r in rows[()])


def test_time_index_reads_only_the_segment_it_plans(capsys, monkeypatch):
    """Counted where the bytes are read (the index searches' own reads of the segment they
    look into included): every ``.log`` byte read comes from the hour's segment."""
    read: list[str] = []
    pread = os.pread

    def counted_pread(fd, length, position):
        read.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        return pread(fd, length, position)

    monkeypatch.setattr(os, "pread", counted_pread)
    for cls in (source.MappedSource, source.WindowSource):
        original = cls.window

        def window(self, lo, hi, *, keep=False, _original=original):
            read.append(os.path.basename(os.readlink(f"/proc/self/fd/{self.fd}")))
            return _original(self, lo, hi, keep=keep)

        monkeypatch.setattr(cls, "window", window)
    main(["query", str(WHATIF), "--time-index", "--format", "csv", "-c", HOUR])
    capsys.readouterr()
    assert {name for name in read if name.endswith(".log")} == {"00000000000000001100.log"}
    read.clear()
    main(["query", str(WHATIF), "--format", "csv", "-c", HOUR])
    capsys.readouterr()
    assert len({name for name in read if name.endswith(".log")}) == 5


def test_explain_lists_each_record_view_the_query_names(capsys, loaded):
    sql = ("select * from batches b join segments s using (topic, partition) "
           "where b.topic = 'orders.v2-eu' and b.partition = 1 and s.topic = 'orders.v2-eu' "
           "and s.partition = 1")
    code = main(["query", str(SAMPLE), "--explain", "--format", "jsonl", "-c", sql])
    rows = {r["view"]: r for r in map(json.loads, capsys.readouterr()[0].splitlines())}
    assert code == 0 and set(rows) == {"batches", "segments"}
    for row in rows.values():  # a partition's batches and segments: all of its one segment
        assert (row["partitions_walked"], row["partitions"]) == (1, 1)
        assert row["segments"] == row["segments_total"] and row["bytes"] == row["bytes_total"]
    assert set(loaded) == {"orders.v2-eu-1"}
