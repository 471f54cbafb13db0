"""Work spread over worker processes gives the same answer, in the same order, as one process
(``segtools.fanout``): the commands' whole output is compared, byte for byte."""

from __future__ import annotations

import contextlib
import io

import pytest

from segtools import fanout
from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES, SAMPLE

TREES = [str(SAMPLE), str(FIXTURES / "logdirs" / "legacy"), str(FIXTURES / "logdirs" / "producers")]


def output(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.parametrize("argv", [
    ["scan", "-q", "--format", "jsonl"], ["scan", "-q"], ["verify", "-q", "--format", "jsonl"],
    ["verify", "-q"], ["retention", "-q", "--at", "1700200000000", "--format", "json"]])
def test_workers_answer_as_one_process_does(argv, monkeypatch):
    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    serial = output([*argv, *TREES])
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    calls = []
    real = fanout._drain
    monkeypatch.setattr(fanout, "_drain", lambda *a: calls.append(a) or real(*a))
    assert output([*argv, *TREES]) == serial
    assert calls  # the workers did run


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
