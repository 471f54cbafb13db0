"""Shared fixtures of the Spark data-source tests.

* ``trees``: a private copy of the Kafka-written ``sample`` and ``legacy`` trees with their
  manifest mtimes restored (git does not keep them), so a test never races a regeneration of
  ``fixtures/`` and retention sees the times the generator set.
* ``spark``: ONE ``local[2]`` session for the whole run (start-up costs ~10 s;
  docs/spark-datasource-api.md §7), with ``PYSPARK_PYTHON`` pinned to this interpreter
  (docs/spark-datasource-api.md §8) and the logs quietened.
* ``expected_rows``: what Kafka's own reader dumped for every fixture log, as comparable rows.
* ``s3_trees``: the session's moto S3 server on 127.0.0.1 (tests/s3server.py) holding the same
  trees, uploaded from a copy that is deleted before any test reads them.

Tests that start a JVM carry ``pytest.mark.spark`` (``pytest -m spark`` selects them); the
others exercise planning and reading in-process, as a Spark executor would.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from segtools.storage.partition import parse_partition_dir_name
from tests.fixtures_manifest import FIXTURES, LOGS, expected_lines

TREES = ("sample", "legacy")
LOG4J = "rootLogger.level = fatal\nrootLogger.appenderRef.stderr.ref = console\n" \
        "appender.console.type = Console\nappender.console.name = console\n" \
        "appender.console.target = SYSTEM_ERR\n" \
        "appender.console.layout.type = PatternLayout\n"


#: This checkout first on the Python workers' path: Spark starts them with its own PYTHONPATH
#: plus ``spark.executorEnv.PYTHONPATH``, not the driver's, so without it they would import
#: whichever segtools the venv's editable install points at (another checkout's).
CHECKOUT = Path(__file__).resolve().parents[2]
CHECKOUT_PATH = os.pathsep.join([str(CHECKOUT / "spark"), str(CHECKOUT)])


def copy_trees(dest: Path) -> Path:
    """Copy the fixture trees to ``dest`` and restore every segment file's manifest mtime."""
    for tree in TREES:
        shutil.copytree(FIXTURES / "logdirs" / tree, dest / tree)
    for entry in LOGS:
        if entry["tree"] not in TREES:
            continue
        log = dest / Path(entry["path"]).relative_to("logdirs")
        stem = log.name.split(".", 1)[0]
        seconds = entry["mtime_ms"] / 1000
        for companion in log.parent.glob(stem + ".*"):
            if companion.name.endswith(".log.deleted") != log.name.endswith(".log.deleted"):
                continue
            os.utime(companion, (seconds, seconds))
    return dest


@pytest.fixture(scope="session")
def trees(tmp_path_factory) -> Path:
    return copy_trees(tmp_path_factory.mktemp("kafkalog-trees"))


@pytest.fixture(scope="session")
def s3_trees(s3_server, tmp_path_factory):
    """``(server, {tree: "s3://kafkalog/<tree>"})`` on the session's S3 server
    (tests/conftest.py); uploaded from a copy deleted at once, so no local copy remains."""
    copy = copy_trees(tmp_path_factory.mktemp("kafkalog-upload"))
    uris = {tree: s3_server.upload_tree(copy / tree, "kafkalog", tree) for tree in TREES}
    shutil.rmtree(copy)
    return s3_server, uris


def spark_environment() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    warnings.filterwarnings("ignore", message=".*pandas >= 3.0.0.*", category=FutureWarning)


def quiet_log4j(directory: Path) -> str:
    path = directory / "log4j2.properties"
    path.write_text(LOG4J)
    return f"-Dlog4j2.configurationFile=file:{path}"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    spark_environment()
    import pyspark_kafkalog
    from pyspark.sql import SparkSession

    java_opts = quiet_log4j(tmp_path_factory.mktemp("log4j"))
    session = (SparkSession.builder.master("local[2]").appName("kafkalog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               .config("spark.executorEnv.PYTHONPATH", CHECKOUT_PATH)
               .getOrCreate())
    session.sparkContext.setLogLevel("FATAL")
    pyspark_kafkalog.register(session)  # an editable install is invisible to the lookup
    yield session
    session.stop()


# ----------------------------------------------------------------------------- expectations


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def expected_rows(entries=None) -> list[dict]:
    """Every record Kafka's reader returned for the fixture logs (not ``.log.deleted``
    leftovers, which are not segments), with its batch's flags, as plain dicts."""
    rows = []
    for entry in entries if entries is not None else LOGS:
        if entry["tree"] not in TREES or not entry["path"].endswith(".log"):
            continue
        name = parse_partition_dir_name(Path(entry["path"]).parent.name)
        segment_base = int(Path(entry["path"]).name.split(".")[0])
        batch = None
        for line in expected_lines(entry):
            if line["type"] == "batch":
                batch = line
                continue
            if line["type"] != "record":
                continue
            rows.append({
                "tree": entry["tree"], "topic": name.topic, "partition": name.partition,
                "state": name.state.value, "segment_base_offset": segment_base,
                "offset": line["offset"],
                "timestamp": None if line["timestamp"] == -1 else line["timestamp"],
                "key": _bytes(line["key"]), "value": _bytes(line["value"]),
                "headers": [(h["key"], _bytes(h["value"])) for h in line["headers"]],
                "position": batch["position"], "magic": batch["magic"],
                "compression": batch["compression"], "crc_valid": batch["crc_valid"],
                "is_control": batch["is_control"],
                "is_transactional": batch["is_transactional"],
                "producer_id": batch["producer_id"], "base_offset": batch["base_offset"],
                "last_offset": batch["last_offset"],
                "control": line.get("control", {}).get("type"),
            })
    return rows


def committed(rows: list[dict]) -> list[dict]:
    """The ``read_committed`` view, computed from the markers themselves (independently of
    the ``.txnindex`` the source uses): a transactional producer's data batches since its
    previous marker are dropped when the next marker is an ABORT. Markers and other control
    records are dropped, as a consumer never returns them."""
    out: list[dict] = []
    pending: dict[tuple, list[dict]] = {}
    for r in sorted(rows, key=lambda r: (r["tree"], r["topic"], r["partition"], r["offset"])):
        tp = (r["tree"], r["topic"], r["partition"], r["producer_id"])
        if r["is_control"]:
            held = pending.pop(tp, [])
            if r["control"] == "COMMIT":
                out.extend(held)
            continue
        if r["is_transactional"]:
            pending.setdefault(tp, []).append(r)
        else:
            out.append(r)
    for held in pending.values():  # no marker yet: an open transaction (none in fixtures)
        out.extend(held)
    return out
