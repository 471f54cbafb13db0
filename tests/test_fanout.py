"""Work spread over worker processes gives the same answer, in the same order, as one process
(``segtools.fanout``): the commands' whole output is compared, byte for byte."""

from __future__ import annotations

import contextlib
import io

import pytest

from segtools import fanout
from segtools.cli.main import main
from segtools.storage import scope
from tests.fixtures_manifest import FIXTURES, SAMPLE

TREES = [str(SAMPLE), str(FIXTURES / "logdirs" / "legacy"), str(FIXTURES / "logdirs" / "producers")]


def output(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.parametrize("argv", [
    ["scan", "-q", "--format", "jsonl"], ["scan", "-q"], ["verify", "-q", "--format", "jsonl"],
    ["verify", "-q"], ["retention", "-q", "--at", "1700200000000", "--format", "json"],
    # the chain of custody lists every file a worker read, as one process's run does
    ["scan", "-q", "--format", "json", "--hashes"], ["verify", "-q", "--hashes"],
    ["retention", "-q", "--at", "1700200000000", "--format", "json", "--hashes"],
    ["offsets", "--format", "json", "--hashes", str(FIXTURES / "logdirs" / "forensics")]])
def test_workers_answer_as_one_process_does(argv, monkeypatch):
    trees = [] if "offsets" in argv else TREES
    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    serial = output([*argv, *trees])
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    calls = []
    real = fanout._drain
    monkeypatch.setattr(fanout, "_drain", lambda *a: calls.append(a) or real(*a))
    assert output([*argv, *trees]) == serial
    assert calls  # the workers did run
    if "--hashes" in argv:
        assert "sha256" in serial[1] or "chain of custody" in serial[1]


def test_small_work_stays_in_this_process(monkeypatch):
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    assert isinstance(fanout.ordered(abs, [-1, 2], segments=10), map)
    assert list(fanout.ordered(abs, [-1, 2, -3], segments=10**6)) == [1, 2, 3]


def test_processes_one_keeps_the_work_in_this_process():
    """``processes=1`` (a Spark task's choice) forks nothing however large the work."""
    import os
    pids = set(fanout.ordered(lambda _: os.getpid(), list(range(8)), segments=10**9,
                              processes=1))
    assert pids == {os.getpid()}


def _dispositions(_item: int) -> tuple:
    import os
    import signal
    return (os.getpid(), signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP),
            signal.getsignal(signal.SIGINT))


def test_workers_die_at_once_when_terminated(monkeypatch):
    """A worker inherits the command's SIGTERM handler (which raises SystemExit in Python);
    it must take the default instead, so the pool's terminate ends it whatever it waits on
    (one waited forever on the task queue's lock: 1 run of 40 of ``retention`` hung)."""
    import os
    import signal

    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        seen = list(fanout.ordered(_dispositions, list(range(8)), segments=fanout.MIN_SEGMENTS))
    finally:
        signal.signal(signal.SIGTERM, previous)
    workers = [s for s in seen if s[0] != os.getpid()]
    assert workers, "the work did not fork"
    assert all(s[1:] == (signal.SIG_DFL, signal.SIG_DFL, signal.SIG_IGN) for s in workers)


def test_an_early_stop_ends_the_workers():
    """A reader that stops early (``| head``) terminates the pool; a full read closes it."""
    import multiprocessing

    before = set(multiprocessing.active_children())
    stream = fanout.ordered(_dispositions, list(range(64)), segments=fanout.MIN_SEGMENTS,
                            processes=2)
    next(iter(stream))
    stream.close()
    assert set(multiprocessing.active_children()) == before


def _read_noted(job: tuple[str, int, float]) -> str:
    """A job that opens one file (noted as the chain of custody notes a read), after a
    pause."""
    import time

    name, size, pause = job
    time.sleep(pause)
    scope.note_read(name, size, 1)
    return name


def test_each_jobs_reads_reach_the_run_in_the_jobs_order():
    """A worker's reads come back with its job's result and are noted in the run's scope in
    the jobs' order, not in the order the workers finished: the first job, the slower,
    saw ``a`` first (size 1), as a one-process run would keep it; the reads noted before
    the fork stay the parent's alone (not noted again)."""
    jobs = [("a", 1, 0.3), ("a", 2, 0.0), ("b", 3, 0.0), ("c", 4, 0.0)]
    runs = []
    for processes in (1, 2):
        with scope.LocationScope(custody=True) as owner:
            scope.note_read("before", 9, 1)
            names = list(fanout.ordered(_read_noted, jobs, segments=fanout.MIN_SEGMENTS,
                                        processes=processes))
            assert names == ["a", "a", "b", "c"]
            runs.append({name: (read.size, read.mtime_ns) for name, read in owner.reads.items()})
    serial, forked = runs
    assert forked == serial == {"before": (9, 1), "a": (1, 1), "b": (3, 1), "c": (4, 1)}
    assert list(forked) == list(serial)  # noted in the same order


def test_without_custody_nothing_is_noted():
    with scope.LocationScope() as owner:
        assert list(fanout.ordered(_read_noted, [("a", 1, 0.0)] * 4,
                                   segments=fanout.MIN_SEGMENTS, processes=2)) == ["a"] * 4
        assert owner.reads is None and owner.take_reads() == ()


#: Forks two workers on jobs that sleep, prints their pids and waits: killed by the test.
_ORPHANS = """
import os, sys, time
import multiprocessing
from segtools import fanout
stream = fanout.ordered(time.sleep, [30.0] * 4, segments=fanout.MIN_SEGMENTS, processes=2)
print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
next(iter(stream))
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, reaped by init soon, counts as gone)."""
    import os

    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    finally:
        os.sched_yield()


def test_workers_end_when_the_run_is_killed():
    """A run killed outright (SIGKILL, the OOM killer) cannot terminate its pool; its
    workers, which share the pool's queue with each other, would wait on it forever as
    orphans on a broker's host. The kernel ends them (``PR_SET_PDEATHSIG``)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    run = subprocess.Popen([sys.executable, "-c", _ORPHANS], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in run.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in workers if _alive(p)]
    for p in left:  # not left behind by the test either
        os.kill(p, signal.SIGKILL)
    assert not left, "workers outlived the run that forked them"


def test_a_reader_that_counts_its_results_closes_the_pool():
    """A reader that knows how many results it asked for takes that many and never asks
    for the end (``next`` per partition, :func:`segtools.analysis.partition_input.summarised`):
    the workers end as soon as the last result is taken, by the pool's end-of-work marker,
    not later by a terminate (SIGTERM) when the dropped stream is collected."""
    import multiprocessing

    before = set(multiprocessing.active_children())
    stream = fanout.ordered(abs, list(range(-8, 0)), segments=fanout.MIN_SEGMENTS,
                            processes=2)
    assert [next(stream) for _ in range(8)] == list(range(8, 0, -1))
    assert set(multiprocessing.active_children()) == before


#: A run (the CLI's signal handling, with a short grace) whose pool is stopped early while
#: its second worker is still starting; then it goes on, and prints ``whole`` at its end.
_SIGNALLED_WHILE_STARTING = """
import os, sys, time
from segtools import fanout
from segtools.cli import main as cli

cli.STOP_GRACE_S = 0.2
started = fanout._start_worker

def late_start():
    try:  # the first worker starts at once; the other is still starting when the run stops
        os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        time.sleep(0.5)
    started()

fanout._start_worker = late_start
with cli._ending_cleanly():
    stream = fanout.ordered(abs, list(range(8)), segments=fanout.MIN_SEGMENTS, processes=2)
    next(stream)
    stream.close()
    time.sleep(0.6)
print("whole", flush=True)
"""


def test_a_worker_signalled_while_starting_leaves_the_run_alone(tmp_path):
    """The pool terminates its workers with SIGTERM. A worker still starting had the
    parent's handlers and the parent's wakeup descriptor: the signal was written there, the
    parent's watcher (``cli.main._stop_if_stuck``) took it for the parent's own, and the run
    ended (143) before it wrote its answer (``tiered --hashes`` forked at load 3 to 10: 2
    runs in 154 gone without a word). The worker now starts with those signals blocked until
    its own dispositions are in place."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _SIGNALLED_WHILE_STARTING,
                          str(tmp_path / "first")], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (0, "whole\n"), run.stderr


#: Makes another thread of the run hold ``lock`` at the moment of its first fork, and a
#: moment longer (``os.register_at_fork``), as a thread of a parent may happen to.
_HOLD_AT_FORK = """
import os, threading, time

def hold_at_first_fork(lock):
    go, holding = threading.Event(), threading.Event()

    def hold():
        go.wait()
        with lock:
            holding.set()
            time.sleep(0.5)

    def before_fork():
        if not go.is_set():
            go.set()
            holding.wait()

    threading.Thread(target=hold, daemon=True).start()
    os.register_at_fork(before=before_fork)
"""

#: A run whose stderr is written under a lock, as a buffered stream's writes are, and by
#: another thread (a progress bar's refresh) at the fork.
_STREAM_HELD_AT_FORK = _HOLD_AT_FORK + """
import io, sys
from segtools import fanout

class Drawn(io.TextIOBase):
    lock = threading.Lock()

    def write(self, text):
        with self.lock:
            return len(text)

    def flush(self):
        with self.lock:
            pass

sys.stderr = Drawn()
hold_at_first_fork(Drawn.lock)
print(list(fanout.ordered(abs, [-1, -2, -3, -4], segments=fanout.MIN_SEGMENTS, processes=2)),
      file=sys.__stdout__, flush=True)
"""


def test_a_stream_held_by_another_thread_at_the_fork_does_not_stop_the_workers():
    """A worker flushes its standard streams as it exits; one forked while another thread
    of the parent was inside a write (rich's refresh, while ``retention`` and ``tiered``
    fork) inherited that stream's lock held for good and never exited, and the parent
    waited for it forever. A worker now writes to streams of its own."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _STREAM_HELD_AT_FORK], capture_output=True,
                         text=True, timeout=30)
    assert (run.returncode, run.stdout) == (0, "[1, 2, 3, 4]\n"), run.stderr


#: A run whose location scope's lock another thread holds at the fork (a read ahead opening
#: a location); each job then asks the scope for its locations.
_SCOPE_HELD_AT_FORK = _HOLD_AT_FORK + """
from segtools import fanout
from segtools.storage import scope

owner = scope.LocationScope()

def job(i):
    return len(scope.current().locations) + i

hold_at_first_fork(owner._lock)
with owner:
    print(list(fanout.ordered(job, [1, 2, 3, 4], segments=fanout.MIN_SEGMENTS, processes=2)),
          flush=True)
"""


def test_a_scope_lock_held_at_the_fork_does_not_stop_the_workers():
    """A worker's copy of the run's location scope had the lock another thread of the
    parent held at the fork, held for good: its first look at the scope's locations waited
    forever. The worker's scope now starts with a lock of its own."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _SCOPE_HELD_AT_FORK], capture_output=True,
                         text=True, timeout=30)
    assert (run.returncode, run.stdout) == (0, "[1, 2, 3, 4]\n"), run.stderr
