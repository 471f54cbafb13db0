"""A real S3-protocol server for the tests: ``moto``'s server on 127.0.0.1, as a subprocess.

Reusable by any test module (the Spark cluster tests too)::

    with S3Server() as s3:
        s3.upload_tree(Path("fixtures/logdirs/sample"), "logs", "sample")
        segtools.open("s3://logs/sample", storage_options=s3.options)

``tests/conftest.py`` has a session fixture ``s3_server`` around one instance. The server
records every request it serves once :meth:`S3Server.start_recording` is called, so a test
can prove that a run made no write request.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ACCESS_KEY = "segtools-test-key"
SECRET_KEY = "segtools-test-secret-do-not-print"
REGION = "us-east-1"
#: How long a test server may take to accept connections. Waited for only while it does not:
#: on a quiet machine moto answers in about a second, but Azurite (node) once took over 30 s
#: on this machine at a load of 12, and a server that is late fails every test that takes it.
START_SECONDS = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """One moto server process, started on a free port and stopped on exit."""

    scheme = "s3"

    def __init__(self, env: dict[str, str] | None = None) -> None:
        """``env``: extra settings for the server (``INITIAL_NO_AUTH_ACTION_COUNT=0``: every
        request must carry credentials the server knows)."""
        self.extra_env = dict(env or {})
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> S3Server:
        self._dir = tempfile.TemporaryDirectory(prefix="segtools-moto-")
        # the recorder stays off until start_recording(): on from the start (moto's
        # MOTO_ENABLE_RECORDING) it wrote every request of the session, uploads' bodies
        # included, to a log that only grew (one ranged GET after another took 1.6-2x as
        # long; the suite's S3 tests, whose reads overlap, ran no faster without it)
        env = {**os.environ, "MOTO_RECORDER_FILEPATH": os.path.join(self._dir.name, "recording"),
               **self.extra_env}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=self._dir.name)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                self._api("reset-recording")  # an empty log, not none at all
                return self
            except OSError:
                if self._proc.poll() is not None:
                    raise RuntimeError("moto server exited at start") from None
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto server did not start within {START_SECONDS} s")

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
            self._dir.cleanup()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what a client needs ---------------------------------------------------------------

    @property
    def options(self) -> dict[str, str]:
        """Storage options for ``segtools.open`` and the CLI's ``--storage-option``."""
        return {"endpoint_url": self.endpoint, "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY, "region": REGION}

    @property
    def env(self) -> dict[str, str]:
        """The same, as the AWS SDK's standard environment variables."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def create_bucket(self, bucket: str) -> None:
        c = self.client()
        if bucket not in {b["Name"] for b in c.list_buckets().get("Buckets", [])}:
            c.create_bucket(Bucket=bucket)

    def upload_tree(self, local: Path, bucket: str, prefix: str = "") -> str:
        """Put every file under ``local`` at ``prefix/<relative path>``; returns the URI."""
        self.create_bucket(bucket)
        c = self.client()
        for path in sorted(Path(local).rglob("*")):
            if path.is_file() and not path.is_symlink():
                key = "/".join(filter(None, [prefix, path.relative_to(local).as_posix()]))
                c.upload_file(str(path), bucket, key)
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"

    def uri(self, bucket: str, prefix: str = "") -> str:
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.create_bucket(bucket)
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    # -- the request log -------------------------------------------------------------------

    def _api(self, what: str, method: str = "POST") -> bytes:
        req = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/{what}",
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def start_recording(self) -> None:
        self._api("reset-recording")
        self._api("start-recording")

    def recorded(self) -> list[dict]:
        """The requests served since :meth:`start_recording` (method, path, headers); the
        recorder is stopped."""
        self._api("stop-recording")
        return self.request_log()

    def request_log(self) -> list[dict]:
        """The recorder's log as it is now (empty until :meth:`start_recording`)."""
        text = self._api("download-recording", "GET").decode()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def stop_process(proc: subprocess.Popen) -> None:
    """A test server stopped: asked to end, then killed if it has not within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
