"""A real standalone cluster, not local mode: a master and two workers on 127.0.0.1, started
from the pip-installed pyspark with ``bin/spark-class`` (the wheel ships no ``start-*.sh``;
docs/spark-datasource-api.md §7), a driver in its own process reading through ``spark://``,
and every daemon stopped whatever happens.

The driver reads the local fixture trees (the rows must come from executor Python workers
running this venv's interpreter, with the same counts Kafka's reader dumped), then the same
trees from the S3 server (moto's), whose upload copy was deleted first, so nothing can come
from a shared disk: each executor opens the store and reads its own byte ranges. Those rows,
at every level, must equal a local read of the same trees, both workers must have read some,
and the printed plan must not hold the secret key. Last, ``analyses.what_if`` simulates the
``whatif`` tree on the executors and must give the CLI's ``retention --what-if --recommend``
objects."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES
from tests.s3server import SECRET_KEY
from tests.spark.cluster_driver import comparable
from tests.spark.conftest import committed, expected_rows
from tests.spark.inprocess import read
from tests.spark.test_whatif import CHANGE as WHATIF_CHANGE
from tests.spark.test_whatif import CONFIG as WHATIF_CONFIG
from tests.spark.test_whatif import NOW as WHATIF_AT
from tests.spark.test_whatif import as_cli

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: exited with {proc.returncode}:\n{log.read_text()}")
        time.sleep(0.25)
    raise TimeoutError(f"{log.name}: no {text!r} after {timeout}s:\n{log.read_text()}")


def descendants(pid: int) -> list[int]:
    """Child processes, recursively (the worker's executor JVMs), from /proc."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            out += [child, *descendants(child)]
    return out


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM (spark-class execs java, so this is the JVM), then SIGKILL after 20 s; then
    make sure the executors it launched are gone too."""
    if proc.poll() is not None:
        return
    children = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    deadline = time.monotonic() + 10
    for pid in children:
        while _is_executor(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _is_executor(pid):
            os.kill(pid, signal.SIGKILL)


def _is_executor(pid: int) -> bool:
    """Still running, and still the executor JVM it was (not a reused process id)."""
    try:
        return b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@contextmanager
def standalone_cluster(work: Path, workers: int = 2):
    import pyspark

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # no credentials
    env.update(SPARK_HOME=str(Path(pyspark.__file__).parent), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log = work / "master.out"
        with open(master_log, "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work))
        wait_for(master_log, "I have been elected leader", procs[0])
        for n in range(1, workers + 1):
            log, workdir = work / f"worker-{n}.out", work / f"worker-{n}"
            with open(log, "wb") as out:
                procs.append(subprocess.Popen(
                    [spark_class(), "org.apache.spark.deploy.worker.Worker", "--host",
                     "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port",
                     str(free_port()), "--work-dir", str(workdir), url],
                    stdout=out, stderr=subprocess.STDOUT,
                    env=dict(env, SPARK_WORKER_DIR=str(workdir)), cwd=work))
        for n, proc in enumerate(procs[1:], start=1):
            wait_for(work / f"worker-{n}.out", "Successfully registered with master", proc)
        yield url
    finally:
        for proc in reversed(procs):
            stop(proc)


def local_rows(trees: list[Path], **options: str) -> list[dict]:
    """What the driver computes from the store, computed here from the local copies."""
    table = read({"paths": json.dumps([str(t) for t in trees]), "partitionStates": "all",
                  **options})
    for i, f in enumerate(table.schema):
        if str(f.type).startswith("timestamp"):
            table = table.set_column(i, f.name, table.column(f.name).cast("int64"))
    return comparable(table.select([n for n in table.column_names if n not in WHERE])
                      .to_pylist())


WHERE = ("log_dir", "partition_dir", "path", "summary_json", "mtime")


def test_reads_local_and_object_storage_trees_on_a_standalone_cluster(trees, s3_trees,
                                                                       tmp_path):
    server, uris = s3_trees
    storage = {f"storage.{k}": v for k, v in server.options.items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(KAFKALOG_STORAGE_OPTIONS=json.dumps(storage), KAFKALOG_CORES="2")
    remotes = [a for uri in uris.values() for a in ("--remote", uri)]
    whatif_tree = shutil.copytree(FIXTURES / "logdirs" / "whatif", tmp_path / "whatif")
    simulate = ["--what-if", str(whatif_tree), str(WHATIF_CONFIG), str(WHATIF_AT), WHATIF_CHANGE]
    with standalone_cluster(tmp_path) as url:
        done = subprocess.run([sys.executable, "-m", "tests.spark.cluster_driver", url,
                               str(trees), *remotes, *simulate], capture_output=True,
                              text=True, cwd=REPO, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert SECRET_KEY not in done.stdout + done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["master"] == url
    live = [r for r in expected_rows() if r["state"] == "live"]
    want: dict[str, int] = {}
    for r in live:
        if not r["is_control"]:
            name = f"{r['topic']}-{r['partition']}"
            want[name] = want.get(name, 0) + 1
    assert got["counts"] == want
    assert got["committed"] == len(committed(live))
    assert got["headers"] > 0 and got["segments"] > 0

    remote = got["remote"]
    local = [trees / name for name in uris]
    assert remote["log_dirs"] == sorted(uris.values())
    assert remote["records"] == local_rows(local, includeHeaders="true", includeControl="true")
    assert remote["batches"] == local_rows(local, level="batches")
    assert remote["segments"] == local_rows(local, level="segments")
    assert len(remote["records"]) > 1000
    assert SECRET_KEY not in remote["plan"]
    assert remote["executors"] == [sys.executable]
    assert got["driver_pid"] not in remote["pids"]  # decoded in the executors' Python workers
    workdirs = {Path(w).relative_to(tmp_path).parts[0] for w in remote["workdirs"]}
    assert workdirs == {"worker-1", "worker-2"}  # both workers read from the store

    # the what-if simulated on the executors: the CLI's what_if objects and recommendations
    cli = subprocess.run([str(Path(sys.executable).parent / "segtools"), "retention",
                          str(whatif_tree), "--config", str(WHATIF_CONFIG), "--at",
                          str(WHATIF_AT), "--what-if", WHATIF_CHANGE, "--recommend",
                          "--format", "json"], capture_output=True, text=True, check=False)
    assert cli.returncode in (0, 1), cli.stderr
    want = json.loads(cli.stdout)
    rows = got["what_if"]["objects"]
    assert [as_cli(r) for r in rows] == want["what_if"]
    assert [json.loads(r["recommendation"]) for r in rows if r["recommendation"]] == \
        want["recommendations"]
