"""What a warm count costs an executor's Python worker (docs/performance.md, "Spark").

Spark reuses a Python worker from one task to the next, and each task is a read of its own:
whatever memory a read takes fresh from the system, every task of every count pays for again.
Checked here in a fresh interpreter, as a worker is, without a JVM: the reader and a task are
unpickled as Spark ships them, and the task is read several times.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark import TaskContext, cloudpickle
from pyspark_kafkalog.options import Level, parse_options
from pyspark_kafkalog.reader import KafkaLogReader, on_task_cores
from pyspark_kafkalog.schema import default_schema

from segtools import fanout
from segtools.fetch import rows
from segtools.storage import gentle
from tests.builders import make_batch
from tests.spark.logbuilder import write_partition

ROOT = Path(__file__).resolve().parents[2]
VALUE_BYTES = 1000
PAGE = 4096

#: A reused worker: the same task read again and again; for each read, the bytes of its
#: values and the pages the process faulted in meanwhile.
WORKER = """
import json, pickle, resource, sys
reader = pickle.loads(bytes.fromhex(sys.argv[1]))
task = pickle.loads(bytes.fromhex(sys.argv[2]))
reads = []
for _ in range(4):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    values = sum(len(b.column("value").buffers()[2]) for b in reader.read(task))
    reads.append((values, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))
print(json.dumps(reads))
"""


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    """About 12 MiB of uncompressed batches of ten 1000-byte values, in one segment."""
    root = tmp_path_factory.mktemp("worker") / "logs"
    batch = make_batch([dict(timestamp_delta=i, offset_delta=i, key=b"key-%05d" % i,
                             value=b"v" * VALUE_BYTES, headers=[]) for i in range(10)],
                       base_timestamp=1_700_000_000_000)
    write_partition(root / "events-0", batch, batches=(12 << 20) // len(batch),
                    segment_bytes=64 << 20)
    return root


def test_a_reused_worker_reads_its_next_task_into_memory_it_already_has(partition):
    """Each task's record columns were cut from fresh anonymous mappings, unmapped when the
    task ended: a worker faulted in a page for nearly every 4 KiB of values it handed Spark,
    on every count (a quarter of its CPU for one-record batches). The blocks now come from
    the C heap, which keeps them for the next task: after the first read, a read faults in
    fewer pages than half of those its values fill (about a third here; 1.1 times as many
    before)."""
    reader = KafkaLogReader(parse_options({"path": str(partition)}),
                            default_schema(Level.RECORDS, False))
    task = reader.partitions()[0]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "spark"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", WORKER, cloudpickle.dumps(reader).hex(),
                           pickle.dumps(task).hex()],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    reads = json.loads(done.stdout.strip().splitlines()[-1])
    values = reads[0][0]
    assert values > 4 << 20  # the task is (about half) the segment's values
    warm = [faults for _, faults in reads[1:]]
    assert max(warm) * PAGE < values // 2, (warm, values // PAGE)


@pytest.fixture
def task_of(request):
    """Runs the test as inside a Spark task given ``request.param`` cores (Spark's
    ``TaskContext`` of the worker), or outside any task (None)."""
    TaskContext._setTaskContext(None if request.param is None else TaskContext(cpus=request.param))
    yield request.param
    TaskContext._setTaskContext(None)


def walk_threads(reader: KafkaLogReader, monkeypatch) -> tuple[int, pa.Table]:
    """How many walk-ahead threads a read of the partition's task started, and its rows."""
    started = []
    ahead = fanout.ahead

    def counted(*args, **kwargs):
        started.append(kwargs.get("name"))
        return ahead(*args, **kwargs)

    monkeypatch.setattr(fanout, "ahead", counted)
    # chunks of 1 MiB: the 12 MiB task is one that walks ahead wherever a core is spare
    monkeypatch.setattr(rows, "WALK_BYTES", 1 << 20)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})  # a host of two cores
    monkeypatch.delenv("SEGTOOLS_WORKERS", raising=False)
    task = pickle.loads(pickle.dumps(reader.partitions()[0]))
    table = pa.Table.from_batches(list(reader.read(task)))
    return len(started), table


@pytest.mark.parametrize("task_of", [1, 2, None], indirect=True)
def test_a_task_reads_on_the_cores_spark_gave_it(partition, task_of, monkeypatch):
    """Spark runs a task per core and converts each task's batches into rows on a JVM thread
    beside it: a task's read walked a chunk ahead on a thread of its own whenever the host
    had a second core, which only added hand-offs (docs/performance.md, "Spark"). A task of
    one core now reads inline; a task given two cores (``spark.task.cpus``), or a read
    outside Spark's tasks, still walks ahead; the rows are the same."""
    reader = KafkaLogReader(parse_options({"path": str(partition)}),
                            default_schema(Level.RECORDS, False))
    threads, table = walk_threads(reader, monkeypatch)
    assert (threads == 0) == (task_of == 1), threads
    TaskContext._setTaskContext(None)
    monkeypatch.undo()
    _, outside = walk_threads(reader, monkeypatch)
    assert table.num_rows > 5_000 and table.equals(outside)


def test_a_gentle_runs_cap_still_applies_within_a_task():
    """A broker's lock held: the run's own cap on workers, under the task's cores."""
    capped = gentle.Gentle(jobs=1)
    assert on_task_cores(capped, 4).jobs == 1
    assert on_task_cores(gentle.Gentle(), 2).jobs == 2
    assert on_task_cores(capped, None) is capped
