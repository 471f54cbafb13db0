"""A cap on the bytes read per second, across every worker of a run: a token bucket.

A broker's appends and its consumers' fetches share the disk with whatever else reads it;
``--max-read-rate`` keeps segtools' share bounded. Tokens are bytes, refilled at the rate;
a reader takes the bytes it is about to read and, when the bucket is in debt, sleeps until the
debt is paid. The bucket lives in shared memory made before the workers are forked, so the cap
holds for the run as a whole, not per process.
"""

from __future__ import annotations

import multiprocessing
import re
import time

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


class ReadRate:
    """A token bucket of ``rate`` bytes per second shared by this process and its forks."""

    def __init__(self, rate: int):
        self.rate = rate
        self._lock = multiprocessing.get_context("fork").Lock()
        self._tokens = multiprocessing.get_context("fork").RawValue("d", rate * BURST_SECONDS)
        self._stamp = multiprocessing.get_context("fork").RawValue("d", time.monotonic())

    def take(self, nbytes: int) -> None:
        """Account for ``nbytes`` about to be read, sleeping as long as the cap requires."""
        if nbytes <= 0:
            return
        with self._lock:
            now = time.monotonic()
            tokens = min(self.rate * BURST_SECONDS,
                         self._tokens.value + (now - self._stamp.value) * self.rate)
            tokens -= nbytes
            self._tokens.value = tokens
            self._stamp.value = now
        if tokens < 0:
            time.sleep(-tokens / self.rate)

    def __reduce__(self):
        """A Spark executor gets a bucket of its own (the cap is per executor there)."""
        return (ReadRate, (self.rate,))
