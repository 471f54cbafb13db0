"""``--max-read-rate`` (issue 36): the token bucket holds the rate within 10 % over a long
read, through both local readers and across forked workers sharing one bucket."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time

import pytest

from segtools.storage import gentle
from segtools.storage.source import MappedSource, WindowSource
from segtools.storage.throttle import ReadRate, parse_rate

MiB = 2**20
RATE = 16 * MiB
#: Long enough that the bucket's initial burst (a tenth of a second) is under 4 %.
SIZE = 48 * MiB


@pytest.mark.parametrize(("text", "rate"), [
    ("50MiB", 50 * MiB), ("1GiB", 2**30), ("200MB/s", 200_000_000), ("1048576", MiB),
    ("1.5KiB", 1536), ("2 gb", 2_000_000_000)])
def test_rates_read_as_people_write_them(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "fast", "0", "-1MiB", "5XB", "1e9"])
def test_a_bad_rate_is_refused(text):
    with pytest.raises(ValueError):
        parse_rate(text)


@pytest.fixture
def big(tmp_path) -> str:
    """A sparse file: reading it costs no disk, so the elapsed time is the cap's alone."""
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as f:
        f.truncate(SIZE)
    return str(path)


def read_through(source_type, path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        source = source_type(fd, SIZE)
        done = 0
        while done < SIZE:
            done = source.window(done, done + source.stride)[2]
            source.release(done)
        source.close()
        return done
    finally:
        os.close(fd)


def within_ten_percent(nbytes: int, elapsed: float) -> None:
    achieved = nbytes / elapsed
    assert 0.9 * RATE <= achieved <= 1.1 * RATE, f"{achieved / MiB:.1f} MiB/s"


@pytest.mark.parametrize("source_type", [WindowSource, MappedSource])
def test_the_cap_holds_over_a_long_read(big, source_type):
    with gentle.applied(gentle.Gentle(rate=ReadRate(RATE))):
        start = time.monotonic()
        nbytes = read_through(source_type, big)
        elapsed = time.monotonic() - start
    assert nbytes == SIZE
    within_ten_percent(nbytes, elapsed)


def test_uncapped_is_not_slowed(big):
    start = time.monotonic()
    read_through(WindowSource, big)
    assert time.monotonic() - start < SIZE / RATE / 2


def test_the_cap_is_for_all_workers_together(big):
    """Two forked workers reading at once share the one bucket: together they get the rate,
    not twice it."""
    rate = ReadRate(RATE)
    ctx = multiprocessing.get_context("fork")
    with gentle.applied(gentle.Gentle(rate=rate)):
        start = time.monotonic()
        workers = [ctx.Process(target=read_through, args=(WindowSource, big))
                   for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.monotonic() - start
    assert all(w.exitcode == 0 for w in workers)
    within_ten_percent(2 * SIZE, elapsed)


def test_the_cap_holds_for_an_object_store():
    """Range requests to a store take from the same bucket (the walk's ranges and those
    fetched ahead on the location's threads): an fsspec in-memory store, so the elapsed
    time is the cap's alone."""
    import fsspec

    from segtools.storage.location import as_path
    from segtools.storage.scope import LocationScope

    size = 24 * MiB
    fsspec.filesystem("memory").pipe("/segtools-rate/00000000000000000000.log",
                                     os.urandom(size))
    with LocationScope({}), gentle.applied(gentle.Gentle(rate=ReadRate(RATE))):
        path = as_path("memory://segtools-rate/00000000000000000000.log")
        opened = path.location.open_segment(path, sealed=True, listed=None, small=0)
        source = opened.source
        assert opened.size == size
        start = time.monotonic()
        done = 0
        while done < size:
            done = source.window(done, min(size, done + source.stride))[2]
            source.release(done)
        elapsed = time.monotonic() - start
    fsspec.filesystem("memory").rm("/segtools-rate", recursive=True)
    within_ten_percent(size, elapsed)


def _executor(big: str, queue) -> None:
    """A Spark executor's Python daemon: two concurrent tasks, each a process it forks,
    each making its bucket as a task does (``ReadRate.for_executor``)."""
    ctx = multiprocessing.get_context("fork")

    def task() -> None:
        with gentle.applied(gentle.Gentle(rate=ReadRate.for_executor(RATE))):
            read_through(WindowSource, big)

    start = time.monotonic()
    tasks = [ctx.Process(target=task) for _ in range(2)]
    for t in tasks:
        t.start()
    for t in tasks:
        t.join()
    queue.put((time.monotonic() - start, [t.exitcode for t in tasks]))
    for name in os.listdir(tempfile.gettempdir()):  # this executor's bucket
        if name.startswith(f"segtools-{os.getuid()}-read-rate-{os.getpid()}-"):
            os.unlink(os.path.join(tempfile.gettempdir(), name))


def test_the_spark_cap_is_for_an_executor_s_tasks_together(big):
    """``maxReadRate`` on Spark: the tasks an executor runs at once are processes segtools
    does not fork (PySpark's daemon does); they share one bucket, so together they get the
    rate, not the rate each."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    daemon = ctx.Process(target=_executor, args=(big, queue))
    daemon.start()
    elapsed, codes = queue.get(timeout=60)
    daemon.join()
    assert codes == [0, 0]
    within_ten_percent(2 * SIZE, elapsed)


def test_a_bucket_sent_to_an_executor_is_made_there():
    """What Spark pickles (a reader holding settings) arrives as the executor's bucket."""
    import pickle

    sent = pickle.loads(pickle.dumps(ReadRate(RATE)))
    assert sent.rate == RATE and type(sent._state).__name__ == "_FileShared"
    os.unlink(os.path.join(tempfile.gettempdir(),
                           f"segtools-{os.getuid()}-read-rate-{os.getppid()}-{RATE}"))


def test_a_spark_task_reads_under_its_executor_s_bucket(monkeypatch):
    """The reader's task side takes ``maxReadRate`` from the executor's bucket (made by
    :meth:`ReadRate.for_executor`), not from one of its own."""
    pytest.importorskip("pyspark")
    from tests.fixtures_manifest import FIXTURES
    from tests.spark.inprocess import read

    made = []

    def watched(cls, rate):
        made.append(rate)
        return cls(rate)  # this process's own: no file left behind

    monkeypatch.setattr(ReadRate, "for_executor", classmethod(watched))
    table = read({"path": str(FIXTURES / "logdirs" / "sample"), "maxReadRate": "1GiB"})
    assert table.num_rows > 0 and made and set(made) == {2**30}
