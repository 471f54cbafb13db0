"""Work that is independent per partition, on every core the process may use, in order; and
a reader's two halves on two threads (:func:`ahead`).

Summarising a tree's segments, or verifying its partitions, is the same small job repeated
for thousands of partitions, each reading only its own files; in one Python process it uses
one core. Here the jobs go to forked worker processes (they inherit the listing, so only an
index is sent and only the result, a few frozen values, comes back, with the names of the
files the job read when the run keeps a chain of custody) and the results come back in the
jobs' order, so the output, custody included, is the same as a serial run's. Small trees stay in one
process: a worker's start and the pickling would cost more than they save.

``SEGTOOLS_WORKERS=N`` sets the number of processes (1: serial); ``--jobs N`` caps it for a
run. In gentle mode (a running broker holds the log dir, :mod:`segtools.storage.gentle`) the
workers run at a lower CPU priority and in the best-effort class's lowest I/O priority, so the
broker's own threads are served first; each worker hands back the page cache it filled after
each job.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TextIO, TypeVar

import lazy_loader

from segtools.storage import gentle, scope

#: The worker pool and the priority calls load when a run forks workers or yields to a
#: broker: a read in this process (a query, a dump) does not pay their imports.
multiprocessing = lazy_loader.load("multiprocessing", suppress_warning=True)
psutil = lazy_loader.load("psutil", suppress_warning=True)

T = TypeVar("T")
R = TypeVar("R")

#: Below this many segments the work stays in this process.
MIN_SEGMENTS = 2000

#: How much nicer than the broker a gentle worker is (``nice`` 0..19: 10 is below every
#: thread of a default broker, and still gets the CPU the broker leaves idle).
GENTLE_NICE = 10
#: The best-effort I/O class's lowest level: served after the broker's requests, but never
#: starved the way the idle class would be on a disk the broker keeps busy.
GENTLE_IO_LEVEL = 7

#: ``prctl(2)``'s request for the signal a process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1

#: The signals that end a run (:mod:`segtools.cli.main` handles them in Python, and writes
#: each to its wakeup descriptor). They stay blocked from just before the fork until a worker
#: has put its own dispositions in place (:func:`_start_worker`): one delivered in between
#: would run the parent's handler, in the worker, on the parent's wakeup descriptor.
ENDING_SIGNALS = frozenset((signal.SIGTERM, signal.SIGHUP, signal.SIGINT))

#: The standard streams a worker inherited, kept as they were until it exits: never flushed,
#: closed or collected (collecting one flushes it). See :func:`_own_streams`.
_INHERITED_STREAMS: list = []

#: The work a forked worker finds in its copy of this module: the job, the items, the run's
#: location scope (whose chain of custody each job's reads go back to), and the pid of the
#: process that forked it from its main thread (None from another thread: see
#: :func:`_die_with`).
_WORK: tuple[Callable, Sequence, scope.LocationScope | None, int | None] | None = None


def workers() -> int:
    """Processes to use: ``SEGTOOLS_WORKERS``, else the CPUs this process may run on; never
    more than the run's ``--jobs``."""
    wanted = os.environ.get("SEGTOOLS_WORKERS", "")
    if wanted.isdigit():
        n = max(1, int(wanted))
    else:
        try:
            n = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            n = os.cpu_count() or 1
    jobs = gentle.current().jobs
    return n if jobs is None else max(1, min(n, jobs))


def yield_to_broker() -> None:
    """Lower this process's CPU and I/O priority (for good: a process cannot raise them
    back without privileges, so only a worker or a command-line run calls this)."""
    me = psutil.Process()
    with contextlib.suppress(psutil.Error, OSError):
        me.nice(max(me.nice(), GENTLE_NICE))
    if hasattr(psutil, "IOPRIO_CLASS_BE"):  # Linux
        with contextlib.suppress(psutil.Error, OSError):
            me.ionice(psutil.IOPRIO_CLASS_BE, GENTLE_IO_LEVEL)


def _start_worker() -> None:
    """A worker's first act. It inherits the command's handlers of SIGTERM and SIGHUP (which
    raise ``SystemExit`` so a run ends cleanly, :mod:`segtools.cli.main`); a worker must
    instead die at once when the pool terminates it, whatever it is doing (blocked on the
    task queue's lock, which the terminating parent holds, it once waited forever for the
    exception a Python handler would raise). Ctrl-C is the parent's to handle.

    It also inherits the parent's wakeup descriptor, the pipe the parent's watcher reads to
    end a run stuck in C (:func:`segtools.cli.main._stop_if_stuck`): a signal this worker
    took through a Python handler would be written there and read as the parent's own, and
    the parent ended a few seconds later with nothing written (a pool terminated while one
    worker was still starting: 2 forced-fork runs of ``tiered --hashes`` in 154 at load 3 to
    10 exited 143 without a word). So the descriptor is dropped first, and the signals
    :func:`ordered` blocked across the fork are let in only once this worker's own
    dispositions are in place (one that came meanwhile is taken then, by the default
    action). Its standard streams and its location scope's lock are its own too
    (:func:`_own_streams`, :meth:`~segtools.storage.scope.LocationScope.forked`)."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDING_SIGNALS)
    _own_streams()
    if _WORK is not None and _WORK[3] is not None:
        _die_with(_WORK[3])
    if gentle.current().yield_cpu:
        yield_to_broker()
    owner = None if _WORK is None else _WORK[2]
    if owner is not None:
        owner.forked()


def _own_streams() -> None:
    """A worker's own standard streams, on the same descriptors. Another thread of the
    parent may have been inside a write to one at the fork (a progress bar's refresh, which
    runs while ``retention``, ``tiered`` or ``producers`` fork their workers): the copy of
    that stream's lock is then held for good in the worker, and the flush every worker makes
    as it exits (``multiprocessing``'s) would wait on it forever, and the parent, joining its
    pool, with it. It would also write a second time what the parent had buffered."""
    _INHERITED_STREAMS.extend((sys.stdout, sys.stderr))
    sys.stdout = _stream(1, sys.stdout)
    sys.stderr = _stream(2, sys.stderr)


def _stream(fd: int, inherited: object) -> TextIO | None:
    """A line-buffered text stream on ``fd``, encoding as ``inherited`` did (None when the
    descriptor is not open, as Python has it for a process started without one)."""
    try:
        return open(fd, "w", buffering=1, closefd=False,
                    encoding=getattr(inherited, "encoding", None) or "utf-8",
                    errors=getattr(inherited, "errors", None) or "backslashreplace")
    except OSError:
        return None


def _die_with(parent: int) -> None:
    """Ask the kernel to end this worker when the run that forked it dies (SIGKILL, an OOM
    kill): the pool's queue is shared with the other workers, so an orphan would wait on it
    forever, idle on a broker's host. The parent may have died before the request took
    effect, so it is checked once after. Linux sends the signal when the *thread* that
    forked ends, so it is asked for only when that thread is the main one: an API caller's
    thread may hand the results to another and end while the workers still work."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _run(i: int) -> tuple[object, tuple]:
    """Job ``i``'s result and the files it read (:meth:`LocationScope.take_reads
    <segtools.storage.scope.LocationScope.take_reads>`: the run's chain of custody, kept
    by the parent, sees a worker's reads only as they come back)."""
    assert _WORK is not None
    fn, items, owner, _ = _WORK
    try:
        result = fn(items[i])
        return result, () if owner is None else owner.take_reads()
    finally:
        if owner is not None:  # a failed job's reads are dropped with it
            owner.take_reads()
        keeper = gentle.current().keeper
        if keeper is not None:  # this job's files are done: hand back what it brought in
            keeper.restore_all()


def ordered(fn: Callable[[T], R], items: Sequence[T], *, segments: int,
            processes: int | None = None) -> Iterator[R]:
    """``map(fn, items)``, spread over worker processes when the work is large enough.

    ``processes``: how many (None: :func:`workers`; 1: this process only, as a Spark task
    that already has a core of its own asks).

    The workers are forked here, before the caller starts anything else (a progress bar's
    thread), and start at once; ``fn`` and ``items`` reach them through the fork, so neither
    is pickled, and each result must pickle. Stopping early (a closed pipe) terminates the
    workers. An object-store location may have downloads in flight on its threads when the
    fork happens: a worker's copy of it notices it is in another process and opens its own
    client and threads (:meth:`segtools.storage.objectstore.ObjectStoreLocation.fs`), so no
    worker waits on a download only the parent's threads could finish. A run whose scope
    holds a location whose client keeps process-wide connections and locks (an object
    store's) is not forked at all: the work stays in this process
    (:meth:`segtools.storage.scope.LocationScope.shares_connections`: the run's own
    locations decide, not what else the process holds open)."""
    n = planned(len(items), segments=segments, processes=processes)
    if n < 2:
        return map(fn, items)
    global _WORK
    owner = scope.current()
    on_main = threading.current_thread() is threading.main_thread()
    _WORK = (fn, items, owner, os.getpid() if on_main else None)
    # every object alive now moves out of the collector's sight: a worker's collections then
    # never walk (and so never copy, page by page) the listing it inherited
    gc.freeze()
    # the workers start with the ending signals blocked (see :func:`_start_worker`); the
    # pool's own threads, started here too, keep them blocked (signals are the main
    # thread's), and the parent takes any that came meanwhile once the pool is up
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        pool = multiprocessing.get_context("fork").Pool(n, initializer=_start_worker)
    finally:
        _WORK = None  # the workers hold their own copy
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    # the jobs are handed out now: the caller may do other work before it reads the results
    results = pool.imap(_run, range(len(items)),
                        chunksize=max(1, min(64, len(items) // (16 * n))))
    return _drain(pool, results, owner, len(items))


def planned(jobs: int, *, segments: int, processes: int | None = None) -> int:
    """How many worker processes :func:`ordered` forks for ``jobs`` jobs of ``segments``
    segments' work (1: none, the work stays in this process). A caller whose answer depends
    on how the work is split (a replay that merges per-job results when it forks, and keeps
    one state across jobs when it does not) asks first."""
    n = min(workers() if processes is None else max(1, processes), jobs)
    if n < 2 or segments < MIN_SEGMENTS or _holds_store() or \
            "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return n


def _in_scope(owner: scope.LocationScope | None, work: Callable[[], None]) -> None:
    if owner is None:
        work()
        return
    with owner.applied():
        work()


def _holds_store() -> bool:
    owner = scope.current()
    return owner is not None and owner.shares_connections()


def _drain(pool, results: Iterator, owner: scope.LocationScope | None,
           jobs: int) -> Iterator:
    """The results, then the pool shut down: closed, so each worker takes the end-of-work
    marker and exits by itself, as soon as the last of the ``jobs`` results came back (a
    reader that knows how many it asked for takes that many with ``next`` and never asks
    for the end, and the pool it dropped was terminated); terminated (SIGTERM) only when
    the reader stopped early (a closed pipe, an error), as nothing else would end them.

    Each job's reads are noted in the run's scope (``owner``) as its result is taken, in
    the jobs' order whichever worker finished first: where a one-process run, which reads
    a job when its result is asked for, notes them."""
    taken = 0
    try:
        for result, reads in results:
            taken += 1
            if owner is not None:
                owner.merge_reads(reads)
            if taken == jobs:
                pool.close()
                pool.join()
            yield result
    except BaseException:
        if taken < jobs:
            pool.terminate()
        raise
    else:
        pool.close()
    finally:
        pool.join()


def ahead(items: Iterable[T], depth: int = 1, name: str = "segtools-ahead",
          idle: Callable[[], bool] | None = None) -> Iterator[T]:
    """``items``, produced up to ``depth`` ahead of the consumer by a thread of their own.

    For a reader whose two halves both let go of the GIL (the compiled walk of a mapped
    segment and the decoding of the chunk before it; inflating a chunk and rendering the one
    before), so the reader uses the second core instead of waiting. Everything ``items``
    touches must be touched by it alone. An exception it raises is raised here; when the
    consumer stops early (a closed pipe, Ctrl-C, a ``limit``) the thread is stopped, ``items``
    closed and the thread joined, so nothing is left running behind the caller.

    ``idle``, when given, is called instead of waiting while the next item is not ready yet,
    as long as it returns True (it did a step of work): a share of the producer's work that
    the consumer takes on only when it would otherwise wait, so a consumer that is itself the
    slower half is not slowed further."""
    box: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((done, None))
        except BaseException as e:  # handed to the consumer, raised there
            put((done, e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    # the thread opens what the caller would, in the caller's location scope (a thread starts
    # with no context variable set)
    worker = threading.Thread(target=_in_scope, args=(scope.current(), work), name=name,
                              daemon=True)
    worker.start()
    try:
        while True:
            try:
                item, error = box.get_nowait()
            except queue.Empty:
                if idle is not None and idle():
                    continue
                item, error = box.get()
            if item is done:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        worker.join()
