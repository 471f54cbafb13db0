"""The source reads object storage: the fixture trees put in a real S3-protocol server (moto's,
on 127.0.0.1) give the same rows as the local copy, at every level; a task carries its
location and byte ranges but no secret, and reopens the store on the executor with the
reader's secret options or, when none were given, the store's own credential chain.

Planned and read in-process as an executor would (tests/spark/inprocess.py); the standalone
cluster reads the same server in test_cluster.py."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyspark_kafkalog.options import OptionError, parse_options
from pyspark_kafkalog.planning import plan as plan_tasks

from segtools.errors import SegtoolsError
from tests.s3server import ACCESS_KEY, SECRET_KEY
from tests.spark.inprocess import plan as plan_reader
from tests.spark.inprocess import read

#: Columns that name where a row's bytes live, so differ between the copies by design.
WHERE = ("log_dir", "partition_dir", "path", "summary_json", "mtime")


def comparable(table: pa.Table) -> list[dict]:
    """Rows without where they live. A segment whose largest timestamp comes from its file's
    modification time (no record says one) differs too: an object's is its upload time
    (docs/locations.md)."""
    keep = [c for c in table.column_names if c not in WHERE]
    rows = table.select(keep).to_pylist()
    for r in rows:
        if r.get("max_timestamp_source") == "mtime":
            r["largest_timestamp"] = None
    return sorted(rows, key=lambda r: tuple(repr(r[c]) for c in keep))


@pytest.mark.parametrize("level", ["records", "batches", "segments"])
@pytest.mark.parametrize("tree", ["sample", "legacy"])
def test_object_storage_reads_equal_local_reads(s3_trees, trees, tree, level):
    server, uris = s3_trees
    extra = {"level": level, "partitionStates": "all"}
    if level == "records":
        extra |= {"includeHeaders": "true", "includeControl": "true"}
    local = read({"path": str(trees / tree), **extra})
    remote = read({"path": uris[tree], **extra, **storage_options(server)})
    assert remote.num_rows == local.num_rows > 0
    assert comparable(remote) == comparable(local)
    assert set(remote.column("log_dir").to_pylist()) == {uris[tree]}


def test_every_store_reads_as_local_with_tiny_ranges(object_store, trees):
    """S3 (moto), GCS (fake-gcs-server) and Azure (Azurite), each read through the source
    with 4 KiB blocks and seeks (every window stitched from several ranges): the local rows."""
    uri = object_store.upload_tree(trees / "sample", "kafkalog-stores", "sample")
    opts = {"level": "records", "includeHeaders": "true", "minPartitions": "3",
            "storage.block_bytes": "4096", "storage.seek_bytes": "4096"}
    local = read({"path": str(trees / "sample"), **opts})
    remote = read({"path": uri, **opts,
                   **{f"storage.{k}": v for k, v in object_store.options.items()}})
    assert remote.num_rows == local.num_rows > 0
    assert comparable(remote) == comparable(local)


def test_a_task_closes_the_locations_it_opened(s3_trees, monkeypatch):
    """A Python worker runs many tasks: each task's store clients are its own, closed when
    its rows are read."""
    from segtools.storage.objectstore import ObjectStoreLocation
    server, uris = s3_trees
    closed = []
    original = ObjectStoreLocation.close
    monkeypatch.setattr(ObjectStoreLocation, "close",
                        lambda self: (closed.append(self), original(self))[1])
    reader, tasks = plan_reader({"path": uris["sample"] + "/orders.v2-eu-1",
                                 **storage_options(server)})
    closed.clear()  # the driver's planning closed its own
    task = pickle.loads(pickle.dumps(tasks[0]))
    rows = sum(b.num_rows for b in reader.read(task))
    assert rows > 0
    assert {id(loc) for loc in closed} == {id(r.files.log.location) for r in task.ranges}


def test_bounds_and_read_committed_from_object_storage(s3_trees, trees):
    server, uris = s3_trees
    opts = {"startingOffsets": '{"orders.v2-eu": {"0": 40}}', "readCommitted": "true",
            "endingOffsets": '{"orders.v2-eu": {"0": 300}}', "minPartitions": "3"}
    local = read({"path": str(trees / "sample"), **opts})
    remote = read({"path": uris["sample"], **opts, **storage_options(server)})
    assert comparable(remote) == comparable(local)


def storage_options(server) -> dict[str, str]:
    return {f"storage.{k}": v for k, v in server.options.items()}


def test_tasks_carry_the_location_but_no_secret(s3_trees):
    server, uris = s3_trees
    opts = parse_options({"path": uris["sample"], "minPartitions": "4",
                          **storage_options(server)})
    assert opts.storage_secrets == {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY}
    assert SECRET_KEY not in repr(opts)
    tasks = plan_tasks(opts, cores=2)
    assert len(tasks) >= 4
    packed = [pickle.dumps(t) for t in tasks]
    for blob in packed:
        assert SECRET_KEY.encode() not in blob and ACCESS_KEY.encode() not in blob
        assert server.endpoint.encode() in blob  # the public options do travel
    assert all(SECRET_KEY not in repr(t) for t in tasks)

    task = pickle.loads(packed[0])
    ranges = task.open(opts.storage_secrets)
    assert ranges and all(str(r.files.log).startswith(uris["sample"]) for r in ranges)
    assert ranges[0].files.log.location.options["secret_key"] == SECRET_KEY


def test_credentials_from_the_standard_chain(s3_trees, monkeypatch):
    server, uris = s3_trees
    for name, value in server.env.items():
        monkeypatch.setenv(name, value)
    table = read({"path": uris["sample"] + "/orders.v2-eu-1"})
    assert table.num_rows == 252


def test_credentials_in_the_uri_are_refused_without_echoing_them():
    with pytest.raises(OptionError, match=r"storage\.access_key") as e:
        parse_options({"path": f"s3://{ACCESS_KEY}:{SECRET_KEY}@bucket/logs"})
    assert SECRET_KEY not in str(e.value) and ACCESS_KEY not in str(e.value)


def test_storage_options_are_split_by_name():
    opts = parse_options({"path": "s3://b/x", "storage.endpoint_url": "http://h:1",
                          "storage.region": "eu-west-1", "storage.session_token": "t0k",
                          "storage.concurrency": "4", "Storage.Profile": "forensics"})
    assert opts.storage_options == {"endpoint_url": "http://h:1", "region": "eu-west-1",
                                    "concurrency": 4, "profile": "forensics"}
    assert opts.storage_secrets == {"session_token": "t0k"}
    with pytest.raises(OptionError, match=r"storage\.concurrency"):
        parse_options({"path": "s3://b/x", "storage.concurrency": "many"})


def test_a_missing_bucket_is_one_error_naming_it_without_secrets(s3_trees):
    server, _ = s3_trees
    opts = parse_options({"path": "s3://no-such-bucket/logs", **storage_options(server)})
    with pytest.raises(SegtoolsError) as e:
        plan_tasks(opts)
    text = str(e.value)
    assert "s3://no-such-bucket" in text and text.startswith("kafkalog: ")
    assert SECRET_KEY not in text and ACCESS_KEY not in text
