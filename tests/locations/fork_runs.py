"""Runs of ``scan --crc`` and ``verify`` over an object-store tree with the worker pool, many
times in one process: ``python -m tests.locations.fork_runs URI OPTIONS_JSON RUNS``.

Each run opens the location afresh, so the directory's small files are still downloading on
the location's threads when :func:`segtools.fanout.ordered` forks its workers: the race the
workers must survive. The pool forks from 2,000 segments on; here from one, so a fixture
tree reaches it. Prints one line, ``ok RUNS``, after every run gave the answer of a serial
run in this process; a hang is the caller's timeout.
"""

from __future__ import annotations

import json
import sys

from segtools import fanout
from tests.robustness.commands import run_cli


def main(uri: str, options: dict[str, str], runs: int) -> int:
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    commands = (["scan", "-q", "--crc", "--format", "jsonl", uri],
                ["verify", "-q", "--format", "jsonl", uri])
    serial = {}
    for argv in commands:  # the answers of one process, no worker
        run = run_cli(argv + flags)
        serial[argv[0]] = (run.code, run.stdout, run.stderr)
        if run.code not in (0, 1):
            print(f"serial {argv[0]} failed: {run.stderr}", flush=True)
            return 1
    fanout.MIN_SEGMENTS = 1
    for i in range(runs):
        for argv in commands:
            run = run_cli(argv + flags)
            if (run.code, run.stdout, run.stderr) != serial[argv[0]]:
                print(f"run {i}: {argv[0]} answered otherwise than serially: {run.stderr}",
                      flush=True)
                return 1
    print(f"ok {runs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])))
