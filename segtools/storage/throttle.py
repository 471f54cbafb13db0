"""A cap on the bytes read per second, across every worker of a run: a token bucket.

A broker's appends and its consumers' fetches share the disk with whatever else reads it;
``--max-read-rate`` keeps segtools' share bounded. Tokens are bytes, refilled at the rate;
a reader takes the bytes it is about to read and, when the bucket is in debt, sleeps until the
debt is paid. The bucket lives in shared memory made before the workers are forked, so the cap
holds for the run as a whole, not per process.

A Spark executor runs its concurrent tasks in Python worker processes that segtools does not
fork: PySpark's daemon forks them (or, without the daemon, the executor's JVM starts them), so
the workers of one executor share one parent. Their bucket (:meth:`ReadRate.for_executor`)
is a small file named after that parent, mapped by each task and updated under a POSIX record
lock, so the cap holds for the executor as a whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import multiprocessing
import os
import re
import struct
import tempfile
import time
from collections.abc import Iterator

#: Unit suffixes a rate may carry (per second), binary and decimal, as ``kafka-configs`` and
#: humans write them.
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "t": 1000**4,
          "tb": 1000**4, "tib": 1024**4}
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*?)(?:/s)?\s*", re.IGNORECASE)
#: The bucket's depth in seconds of rate: a reader idle for longer earns no more than this.
BURST_SECONDS = 0.1


def parse_rate(text: str) -> int:
    """``50MiB``, ``1GiB``, ``200MB/s``, ``1048576``: bytes per second (positive)."""
    match = _RATE.fullmatch(text)
    unit = match and _UNITS.get(match.group(2).lower())
    if not match or unit is None:
        raise ValueError(f"not a rate: {text!r} (for example 50MiB or 1GiB, per second)")
    rate = int(float(match.group(1)) * unit)
    if rate <= 0:
        raise ValueError(f"must be positive: {text!r}")
    return rate


class _ForkShared:
    """The bucket's state in shared memory this process's forks inherit."""

    def __init__(self, rate: int):
        self._lock = multiprocessing.get_context("fork").Lock()
        self._tokens = multiprocessing.get_context("fork").RawValue("d", rate * BURST_SECONDS)
        self._stamp = multiprocessing.get_context("fork").RawValue("d", time.monotonic())

    @contextlib.contextmanager
    def held(self) -> Iterator[list[float]]:
        """``[tokens, stamp]`` under the lock; what the block leaves in it is stored."""
        with self._lock:
            state = [self._tokens.value, self._stamp.value]
            yield state
            self._tokens.value, self._stamp.value = state


#: The file bucket's layout: tokens and the monotonic stamp of their last update.
_STATE = struct.Struct("=dd")


class _FileShared:
    """The bucket's state in a file every process of one parent maps: ``CLOCK_MONOTONIC``
    is one clock for every process of the host, so the stamps compare across them."""

    def __init__(self, path: str, rate: int):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(fd).st_uid != os.getuid():
                raise PermissionError(f"{path}: not this user's")
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size < _STATE.size:  # the first task here fills it
                    os.pwrite(fd, _STATE.pack(rate * BURST_SECONDS, time.monotonic()), 0)
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
            self._map = mmap.mmap(fd, _STATE.size)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    @contextlib.contextmanager
    def held(self) -> Iterator[list[float]]:
        fcntl.lockf(self._fd, fcntl.LOCK_EX)
        try:
            state = list(_STATE.unpack_from(self._map))
            yield state
            _STATE.pack_into(self._map, 0, *state)
        finally:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)


class ReadRate:
    """A token bucket of ``rate`` bytes per second shared by this process and its forks
    (or, :meth:`for_executor`, by the processes of one Spark executor)."""

    def __init__(self, rate: int, *, state: _ForkShared | _FileShared | None = None):
        self.rate = rate
        self._state = state or _ForkShared(rate)

    @classmethod
    def for_executor(cls, rate: int) -> ReadRate:
        """The bucket the Spark tasks of this process's executor share: keyed by the parent
        process (PySpark's daemon, or the executor's JVM) and the rate. A file in the system's
        temporary directory, never in a log dir; where it cannot be made, a bucket of this
        task's own."""
        name = f"segtools-{os.getuid()}-read-rate-{os.getppid()}-{rate}"
        try:
            state = _FileShared(os.path.join(tempfile.gettempdir(), name), rate)
        except OSError:
            state = None
        return cls(rate, state=state)

    def take(self, nbytes: int) -> None:
        """Account for ``nbytes`` about to be read, sleeping as long as the cap requires."""
        if nbytes <= 0:
            return
        with self._state.held() as state:
            now = time.monotonic()
            tokens = min(self.rate * BURST_SECONDS, state[0] + (now - state[1]) * self.rate)
            tokens -= nbytes
            state[:] = [tokens, now]
        if tokens < 0:
            time.sleep(-tokens / self.rate)

    def __reduce__(self):
        """Sent to another process (a Spark executor): a bucket made there, shared by the
        tasks of that executor."""
        return (ReadRate.for_executor, (self.rate,))
