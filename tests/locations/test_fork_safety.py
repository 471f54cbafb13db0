"""The worker pool over every object store: every run finishes (under a timeout) with the
answer of a serial run. The pool does not fork a run whose own scope holds an object-store
location (:meth:`segtools.storage.scope.LocationScope.shares_connections`): quiescing the
range threads before a fork still let an S3 worker hang on a lock of pyarrow's client in two
full runs.

A worker forked while the parent's range threads were downloading used to wait forever for
a download no thread of its own would finish (``got.result()`` in the child). The runs go
through :mod:`tests.locations.fork_runs` in a process of their own, so a hang fails the
test at the timeout instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "fixtures" / "logdirs" / "sample"
#: Runs per store (each run: a scan and a verify, each forking two workers). The suite runs
#: a few, to keep the suite's time; SEGTOOLS_FORK_RUNS=100 runs the long check by hand.
RUNS = int(os.environ.get("SEGTOOLS_FORK_RUNS", "3"))


def test_worker_pool_over_each_store(object_store):
    bucket = "fork-runs"
    uri = object_store.upload_tree(TREE, bucket, "sample")
    env = {**os.environ, "SEGTOOLS_WORKERS": "2",
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "spark")])}
    proc = subprocess.run([sys.executable, "-m", "tests.locations.fork_runs", uri,
                           json.dumps(object_store.options), str(RUNS)],
                          cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60 + 20 * RUNS)
    assert proc.returncode == 0 and proc.stdout.strip() == f"ok {RUNS}", proc.stdout + proc.stderr
