"""Gentle mode: what a run does to a live broker's page cache, disk and CPU, decided once.

A run on a broker's own host reads the files the broker serves from. When a running broker
holds a log dir (:func:`segtools.storage.pagecache.broker_lock_holder`), the run leaves the
page cache as it found it, and its workers yield the CPU and the disk; a read-rate cap applies
when asked for. On a copy (a laptop, a bundle) nothing of this is needed: the cache is kept so
repeated runs stay warm, and nothing will truncate the files.

The face that starts a run decides the :class:`Gentle` settings and applies them around the
run (:func:`applied`); the readers in ``storage/`` look them up where they open and read
files (:func:`current`). A context variable carries them rather than an argument through
every reader: it is scoped to the run, inherited by forked workers, and no process-wide value
outlives the ``with`` block.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from segtools.storage.pagecache import LOCK_FILE, PageCacheKeeper, broker_lock_holder
from segtools.storage.throttle import ReadRate
from segtools.units import format_bytes

T = TypeVar("T")


class PageCacheMode(enum.Enum):
    """``--page-cache``: ``restore`` hands back what the run brought in, ``keep`` leaves it."""

    RESTORE = "restore"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class Gentle:
    """A run's settings. ``keeper`` is None when the page cache is kept; ``rate`` is None
    when no cap applies; ``jobs`` None lets the run use every core; ``yield_cpu`` lowers the
    workers' CPU and I/O priority."""

    keeper: PageCacheKeeper | None = None
    rate: ReadRate | None = None
    jobs: int | None = None
    yield_cpu: bool = False
    #: The broker's pid and log dir when one holds a log dir of the run.
    broker: tuple[int, str] | None = None
    #: No broker holds any of the run's (local) log dirs: nothing will truncate their
    #: files, so the active segment may be mapped like a sealed one.
    still: bool = False
    #: The run's log dirs whose ``.lock`` is there but free (a stopped broker's).
    free: tuple[str, ...] = ()
    #: Whether the run's readers may hand out zero-copy views of a mapped segment that live
    #: past its close (the Arrow columns of the Python API, Spark and SQL): a view read later
    #: would fault handed-back pages in again, so when the cache is restored such a run reads
    #: sealed segments through private windows. A command that prints what it reads keeps
    #: no view past a segment, and maps them (no copy).
    views_outlive_segments: bool = True


#: Outside any run's settings: nothing gentle, as segtools read before gentle mode.
UNSET = Gentle()
#: The settings of the run under way.
_CURRENT: contextvars.ContextVar[Gentle | None] = contextvars.ContextVar("segtools_gentle",
                                                                          default=None)


def current() -> Gentle:
    return _CURRENT.get() or UNSET


@contextlib.contextmanager
def applied(settings: Gentle) -> Iterator[Gentle]:
    """Run the block under ``settings``; on the way out every file noted is handed back."""
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)
        if settings.keeper is not None:
            settings.keeper.restore_all()


def iterate(settings: Gentle, items: Iterable[T]) -> Iterator[T]:
    """``items`` pulled under ``settings`` one step at a time, in a context of their own (a
    lazy reader handed to a caller, who may pull it from anywhere); what the steps noted is
    handed back when it ends."""
    context = contextvars.copy_context()
    context.run(_CURRENT.set, settings)
    it = iter(items)
    try:
        while True:
            try:
                item = context.run(next, it)
            except StopIteration:
                return
            yield item
    finally:
        if settings.keeper is not None:
            settings.keeper.restore_all()


def watched(*paths: str | os.PathLike[str] | None) -> contextlib.AbstractContextManager:
    """Around a read by code that opens files itself: the cache left as found when the run
    restores it, nothing otherwise."""
    keeper = current().keeper
    return contextlib.nullcontext() if keeper is None else keeper.around(paths)


def held_by_broker(paths: Iterable[str | os.PathLike[str]]) -> tuple[int, str] | None:
    """The first ``(pid, log dir)`` among ``paths`` whose log dir a running broker holds."""
    return lock_states(paths)[0]


def appended_by_broker(log: str) -> bool:
    """Whether a running broker may be appending to the segment ``log`` right now: the last
    ``.log`` of its partition dir (Kafka appends only to the active segment) in a log dir a
    broker holds. Asked only of segments whose listing did not seal them."""
    directory, name = os.path.split(log)
    try:
        later = any(e.name.endswith(".log") and e.name[:-4].isdigit() and e.name > name
                    for e in os.scandir(directory or "."))
    except OSError:
        return False
    return not later and held_by_broker([log]) is not None


def lock_states(paths: Iterable[str | os.PathLike[str]]
                ) -> tuple[tuple[int, str] | None, list[str]]:
    """The first ``(pid, log dir)`` a running broker holds among ``paths``' log dirs (or
    None), and the log dirs whose ``.lock`` nobody holds (a stopped broker's).

    A path is a log dir (it has a ``.lock`` and ``meta.properties``), a partition dir or a
    file in one (its log dir is the parent or the grandparent), or a directory of log dirs
    (each child with both)."""
    free: list[str] = []
    for path in paths:
        for log_dir in log_dirs_of(os.path.abspath(os.fspath(path))):
            pid = broker_lock_holder(log_dir)
            if pid is not None:
                return (pid, log_dir), free
            free.append(log_dir)
    return None, free


#: Kafka writes it into every log dir it locks (``meta.properties``: the broker's or node's
#: id and the cluster id); a ``.lock`` without it is someone else's (pytest's numbered
#: temporary directories hold one, as other tools' work directories may).
_LOG_DIR_MARK = "meta.properties"


def _is_locked_log_dir(directory: str) -> bool:
    return all(os.path.isfile(os.path.join(directory, name))
               for name in (LOCK_FILE, _LOG_DIR_MARK))


def log_dirs_of(path: str) -> list[str]:
    """The log dirs whose lock speaks for ``path`` (see :func:`held_by_broker`)."""
    here = path if os.path.isdir(path) else os.path.dirname(path)
    for candidate in (here, os.path.dirname(here)):
        if _is_locked_log_dir(candidate):
            return [candidate]
    try:
        with os.scandir(here) as entries:
            return [e.path for e in entries
                    if e.is_dir(follow_symlinks=False) and _is_locked_log_dir(e.path)]
    except OSError:
        return []


def decide(paths: Iterable[str | os.PathLike[str]], *, page_cache: PageCacheMode | None = None,
           max_read_rate: int | None = None, jobs: int | None = None) -> Gentle:
    """The settings for a run over ``paths``: gentle by default when a broker holds one of
    the local log dirs, the caller's choices otherwise (None: the default)."""
    paths = [os.fspath(p) for p in paths]
    local = [p for p in paths if "://" not in p]
    broker, free = lock_states(local)
    mode = page_cache or (PageCacheMode.RESTORE if broker else PageCacheMode.KEEP)
    if jobs is None and broker is not None:
        jobs = max(1, _cores() // 2)
    still = broker is None and len(local) == len(paths)
    keeper = PageCacheKeeper(spare_active=not still)  # a hot tail only where one may be
    return Gentle(keeper=keeper if mode is PageCacheMode.RESTORE else None,
                  rate=ReadRate(max_read_rate) if max_read_rate else None,
                  jobs=jobs, yield_cpu=broker is not None, broker=broker,
                  still=still, free=tuple(free))


def notice(settings: Gentle) -> str | None:
    """The one line said on stderr about gentle mode; for a stopped broker's log dir (its
    ``.lock`` free), that nothing will truncate its files; None for a copy (no ``.lock``),
    where both go without saying."""
    if settings.broker is None:
        if settings.still and settings.free:
            return (f"segtools: no running broker holds {settings.free[0]} (its .lock is "
                    "free): nothing will truncate its files, the active segments are read "
                    "like sealed ones")
        return None
    pid, log_dir = settings.broker
    cache = "restored as found" if settings.keeper is not None else "kept (--page-cache keep)"
    rate = (f"reads capped at {format_bytes(settings.rate.rate)}/s" if settings.rate else
            "reads not capped (set one with --max-read-rate, e.g. 50MiB)")
    return (f"segtools: gentle mode: a running broker (pid {pid}) holds {log_dir}; page cache "
            f"{cache}, {rate}, {settings.jobs} worker(s) at low CPU and I/O priority")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
