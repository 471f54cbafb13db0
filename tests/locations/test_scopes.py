"""Who owns a location (segtools/storage/scope.py): the run, the dataset or the task that
opened it, never the process. A notebook that once read a store still forks its later local
runs; a dataset's ``close()`` closes what it opened; a name is never quietly read through a
location that another caller opened with other options."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import segtools
from segtools import fanout
from segtools.errors import SegtoolsError
from segtools.storage import location, scope
from segtools.storage.scope import LocationScope

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "logdirs" / "sample"


@pytest.fixture(scope="module")
def sample_uri(s3_server):
    return s3_server.upload_tree(SAMPLE, "scopes", "sample")


def _pids(n: int = 8) -> set[int]:
    return set(fanout.ordered(lambda _: os.getpid(), range(n), segments=n))


def test_a_dataset_over_a_store_leaves_later_local_runs_forking(s3_server, sample_uri,
                                                                 monkeypatch):
    """The store a notebook opened stays its dataset's: a later local dataset's work still
    goes to forked workers, while a run in the store's own scope stays in this process."""
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 1)
    remote = segtools.open(sample_uri, storage_options=s3_server.options)
    assert remote.to_arrow("segments").read_all().num_rows > 0  # the store is open, in use
    local = segtools.open(SAMPLE)
    with local.locations.applied():
        assert _pids() - {os.getpid()}, "the local dataset's work did not fork"
    with remote.locations.applied():
        assert _pids() == {os.getpid()}, "a run holding a store forked"
    remote.close()


def test_a_dataset_closes_what_it_opened(s3_server, sample_uri):
    with segtools.open(sample_uri, storage_options=s3_server.options) as logs:
        rows = logs.to_arrow("batches").read_all().num_rows
        opened = logs.locations.locations
        assert rows > 0 and [loc.kind for loc in opened] == ["object"]
    assert logs.locations.locations == []
    assert scope.current() is None


def test_a_dataset_in_a_run_reads_in_the_run_scope(s3_server, sample_uri):
    """A dataset opened inside a run (the report command's) keeps the run's options and
    leaves the closing to the run."""
    with LocationScope(s3_server.options) as run:
        logs = segtools.open(sample_uri)
        assert logs.locations is run
        assert logs.to_arrow("segments").read_all().num_rows > 0
        logs.close()
        assert len(run.locations) == 1
    assert run.locations == []


def test_a_name_is_not_read_through_another_callers_location(s3_server, sample_uri,
                                                             monkeypatch):
    """A URI resolved with no options is opened from the store's own chain (here an
    endpoint where nothing listens), not quietly through a location someone else opened
    with theirs."""
    kept = segtools.open(sample_uri, storage_options=s3_server.options)
    assert kept.partitions()
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nothing-here")
    with pytest.raises(SegtoolsError, match=r"cannot connect|cannot list"):
        segtools.open(sample_uri, storage_options={"max_attempts": 1})
    with pytest.raises(SegtoolsError, match=r"cannot connect|cannot list"):
        location.resolve(f"{sample_uri}/orders.v2-eu-0").is_dir()
    kept.close()


def test_paths_of_one_pickle_share_one_location(s3_server, sample_uri):
    """A task's paths reopen one location per pickle, in the scope applied where they are
    unpickled (a Spark task's), which closes it."""
    with LocationScope(s3_server.options):
        root = location.resolve(sample_uri)
        paths = [root / "orders.v2-eu-0", root / "orders.v2-eu-0" / "leader-epoch-checkpoint"]
        blob = pickle.dumps(paths)
    with LocationScope() as task:
        again = pickle.loads(blob)
        assert again == paths and again[0].location is again[1].location
        assert task.locations == [again[0].location]
        assert again[1].read_bytes().startswith(b"0\n")
    assert task.locations == []


def test_a_reader_thread_opens_in_its_callers_scope(s3_server, sample_uri):
    """``fanout.ahead`` produces on a thread of its own: a name resolved there finds the
    caller's location (with its options), as it would on the caller's thread."""
    with LocationScope(s3_server.options) as run:
        root = location.resolve(sample_uri)
        names = [f"{sample_uri}/orders.v2-eu-0/leader-epoch-checkpoint"]
        read = list(fanout.ahead(location.read_range(n, 0, 2) for n in names))
        assert read == [b"0\n"] and run.locations == [root.location]
