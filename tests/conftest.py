"""Fixtures shared across test packages: the S3-protocol server (tests/s3server.py)."""

from __future__ import annotations

import pytest

from tests.s3server import S3Server


@pytest.fixture(scope="session")
def s3_server():
    """One moto server for the session, on 127.0.0.1 and a free port; stopped at the end."""
    with S3Server() as server:
        yield server
