"""Work that is independent per partition, on every core the process may use, in order.

Summarising a tree's segments, or verifying its partitions, is the same small job repeated
for thousands of partitions, each reading only its own files; in one Python process it uses
one core. Here the jobs go to forked worker processes (they inherit the listing, so only an
index is sent and only the result, a few frozen values, comes back) and the results come back
in the jobs' order, so the output is the same as a serial run's. Small trees stay in one
process: a worker's start and the pickling would cost more than they save.

``SEGTOOLS_WORKERS=N`` sets the number of processes (1: serial).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Below this many segments the work stays in this process.
MIN_SEGMENTS = 2000

#: The work a forked worker finds in its copy of this module.
_WORK: tuple[Callable, Sequence] | None = None


def workers() -> int:
    """Processes to use: ``SEGTOOLS_WORKERS``, else the CPUs this process may run on."""
    wanted = os.environ.get("SEGTOOLS_WORKERS", "")
    if wanted.isdigit():
        return max(1, int(wanted))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _run(i: int):
    assert _WORK is not None
    fn, items = _WORK
    return fn(items[i])


def ordered(fn: Callable[[T], R], items: Sequence[T], *, segments: int) -> Iterator[R]:
    """``map(fn, items)``, spread over worker processes when the work is large enough.

    The workers are forked here, before the caller starts anything else (a progress bar's
    thread), and start at once; ``fn`` and ``items`` reach them through the fork, so neither
    is pickled, and each result must pickle. Stopping early (a closed pipe) terminates the
    workers."""
    n = min(workers(), len(items))
    if n < 2 or segments < MIN_SEGMENTS or \
            "fork" not in multiprocessing.get_all_start_methods():
        return map(fn, items)
    global _WORK
    _WORK = (fn, items)
    # every object alive now moves out of the collector's sight: a worker's collections then
    # never walk (and so never copy, page by page) the listing it inherited
    gc.freeze()
    try:
        pool = multiprocessing.get_context("fork").Pool(n)
    finally:
        _WORK = None  # the workers hold their own copy
    # the jobs are handed out now: the caller may do other work before it reads the results
    results = pool.imap(_run, range(len(items)),
                        chunksize=max(1, min(64, len(items) // (16 * n))))
    return _drain(pool, results)


def _drain(pool, results: Iterator) -> Iterator:
    try:
        yield from results
    finally:
        pool.terminate()
        pool.join()
