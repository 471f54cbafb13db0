"""Fixtures shared across test packages: the S3-protocol server (tests/s3server.py) and the
GCS and Azure emulators (tests/stores.py), each alone and as ``object_store``, one of each."""

from __future__ import annotations

import pytest

from segtools.storage import scope
from tests.s3server import S3Server
from tests.stores import AzuriteServer, GcsServer

#: Every object store the README names, by the scheme of its URIs.
STORES = ("s3", "gs", "abfs")


@pytest.fixture(scope="session")
def s3_server():
    """One moto server for the session, on 127.0.0.1 and a free port; stopped at the end."""
    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def gcs_server():
    """fake-gcs-server for the session (``gs://``)."""
    with GcsServer() as server:
        yield server


@pytest.fixture(scope="session")
def azurite_server():
    """Azurite's blob service for the session (``abfs://``)."""
    with AzuriteServer() as server:
        yield server


@pytest.fixture(scope="session", params=STORES)
def object_store(request):
    """Each store in turn: a test that takes it runs once per protocol."""
    return request.getfixturevalue({"s3": "s3_server", "gs": "gcs_server",
                                    "abfs": "azurite_server"}[request.param])


@pytest.fixture(autouse=True)
def _no_location_left_open():
    """No test leaves a location scope applied behind it: what a run, a dataset or a task
    opens is theirs and ends with them (segtools.storage.scope), so the next test starts as a
    fresh process would."""
    yield
    assert scope.current() is None, "a location scope is still applied after the test"
