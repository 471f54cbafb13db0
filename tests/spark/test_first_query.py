"""What a fresh session's first query costs the source (docs/spark.md, "The first query").

Every Python process Spark starts for a query imports the source anew: the driver's planner
that unpickles the reader and runs ``partitions()``, and each executor's Python worker as it
unpickles the reader and its first task. What those processes import is the source's own share
of a first query, so it is checked here, in a fresh interpreter as Spark's are, without a JVM.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql.datasource import CaseInsensitiveDict, DataSourceReader, InputPartition
from pyspark_kafkalog import DefaultSource
from pyspark_kafkalog.options import Level, OptionError, parse_options
from pyspark_kafkalog.reader import KafkaLogReader
from pyspark_kafkalog.schema import default_schema

from benchmarks.bench_spark_ceiling import CeilingSource

ROOT = Path(__file__).resolve().parents[2]
#: What only a read with ``decode`` needs: the payload decoder, the schemas' sources (and the
#: registry client behind them).
DECODE_ONLY = ("segtools.payloads.decoder", "segtools.payloads.sources", "urllib.request",
               "segtools.payloads.columns")
#: What only the options ``pageCache`` and ``maxReadRate`` need: the gentle settings, the
#: broker's lock and page cache, the read-rate bucket.
GENTLE_ONLY = ("segtools.storage.gentle", "segtools.storage.pagecache",
               "segtools.storage.throttle")

#: The planner Spark starts at ``load()``: the source unpickled, its ``schema()`` called.
LOAD_PLANNER = """
import json, pickle, sys, types
source = pickle.loads(bytes.fromhex(sys.argv[1]))
fields = len(source.schema().fields)
loaded = [n for n, m in sys.modules.items() if type(m) is types.ModuleType]
print(json.dumps({"fields": fields, "loaded": loaded}))
"""

#: The planner Spark starts at the first action: the source unpickled, its reader made and
#: pickled (as Spark ships it), then unpickled and asked for its partitions.
ACTION_PLANNER = """
import json, pickle, sys, types
from pyspark import cloudpickle
source = pickle.loads(bytes.fromhex(sys.argv[1]))
reader = pickle.loads(cloudpickle.dumps(source.reader(source.schema())))
tasks = reader.partitions()
loaded = [n for n, m in sys.modules.items() if type(m) is types.ModuleType]
print(json.dumps({"tasks": len(tasks), "loaded": loaded}))
"""
#: What only a task's read needs: the record columns' builder, the summaries, the walk's
#: threads.
READ_ONLY = ("pyspark_kafkalog.scan", "segtools.fetch.rows", "segtools.storage.summary",
             "segtools.fanout")

#: An executor's Python worker: unpickle the reader and a task, read the task's rows, and
#: name the modules that were really loaded (a lazily loaded module that nothing touched is
#: still a stand-in, not a ``types.ModuleType``).
EXECUTOR = """
import json, pickle, sys, types
reader = pickle.loads(bytes.fromhex(sys.argv[1]))
task = pickle.loads(bytes.fromhex(sys.argv[2]))
rows = sum(batch.num_rows for batch in reader.read(task))
loaded = [n for n, m in sys.modules.items() if type(m) is types.ModuleType]
print(json.dumps({"rows": rows, "loaded": loaded}))
"""


def run_as_executor(reader: DataSourceReader, task: object) -> dict:
    return _run(EXECUTOR, cloudpickle.dumps(reader).hex(), pickle.dumps(task).hex())


def _run(script: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "spark"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script, *args],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_planner_at_load_loads_neither_decoding_nor_the_gentle_settings(trees):
    """``schema()`` runs in a planner process of its own at ``load()``: it parses every
    option and derives the schema, and imported the decode columns and the gentle settings'
    modules (``multiprocessing``, ``ctypes``) for nothing: about a quarter of the CPU the
    source adds to that process (docs/performance.md, "What load() runs")."""
    source = DefaultSource(CaseInsensitiveDict({"path": str(trees / "sample")}))
    report = _run(LOAD_PLANNER, cloudpickle.dumps(source).hex())
    assert report["fields"] == len(default_schema(Level.RECORDS, False).fields)
    loaded = set(report["loaded"])
    assert "segtools.fetch.columns" in loaded  # the probe does see what schema() loads
    assert [name for name in DECODE_ONLY + GENTLE_ONLY if name in loaded] == []


def test_the_planner_at_the_first_action_loads_no_read_path(trees):
    """The planner that makes the reader and runs ``partitions()`` starts with a fresh
    session's first action; the reader's module imported the read path with it (the record
    columns' builder, the summaries, the walk's threads: 24 ms of that process's CPU), which
    only the executors' workers use."""
    source = DefaultSource(CaseInsensitiveDict({"path": str(trees / "sample")}))
    report = _run(ACTION_PLANNER, cloudpickle.dumps(source).hex())
    assert report["tasks"] >= 1
    loaded = set(report["loaded"])
    assert "segtools.fetch.plan" in loaded  # the probe does see what planning loads
    assert [name for name in READ_ONLY if name in loaded] == []


def test_the_gentle_options_still_parse_and_fail_at_load():
    """The gentle settings' modules load when their options are given."""
    opts = parse_options({"path": "/x", "pageCache": "restore", "maxReadRate": "50MiB"})
    assert (opts.page_cache.value, opts.max_read_rate) == ("restore", 50 * 2**20)
    with pytest.raises(OptionError, match="pageCache must be one of"):
        parse_options({"path": "/x", "pageCache": "sometimes"})
    with pytest.raises(OptionError, match="option maxReadRate"):
        parse_options({"path": "/x", "maxReadRate": "fast"})


def test_an_executor_loads_no_payload_decoding_for_a_read_without_it(trees):
    """The decoder and the schemas' sources were a seventh of what the reader's module
    imported in each Python worker, whether or not anything was decoded."""
    path = trees / "sample" / "orders.v2-eu-1"
    reader = KafkaLogReader(parse_options({"path": str(path)}),
                            default_schema(Level.RECORDS, False))
    tasks = reader.partitions()
    report = run_as_executor(reader, tasks[0])
    assert report["rows"] > 0
    loaded = set(report["loaded"])
    assert "segtools.fetch.rows" in loaded  # the probe does see what a read loads
    assert [name for name in DECODE_ONLY if name in loaded] == []
    assert [name for name in READ_ONLY if name not in loaded] == []


def test_the_benchmarks_ceiling_imports_nothing_of_the_source_or_its_peers(tmp_path):
    """``bench_spark`` takes the ceiling's first count for Spark's own first-query cost: its
    executors must import no more than Spark's reader path does (it lived in the benchmark's
    module, whose import loads kafka-python for the naive peer)."""
    schema = default_schema(Level.RECORDS, False)
    options = CaseInsensitiveDict({"tasks": "1", "rows": "10", "topic": "t",
                                   "logDir": str(tmp_path), "valueBytes": "8"})
    reader = CeilingSource(options).reader(schema)
    report = run_as_executor(reader, InputPartition(0))
    assert report["rows"] == 10
    assert [name for name in report["loaded"]
            if name.split(".")[0] in ("segtools", "pyspark_kafkalog", "kafka")] == []
