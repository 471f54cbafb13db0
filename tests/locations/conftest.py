"""The fixture trees in the S3 server, and the way one command is run on both copies."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.robustness.commands import Run, Tree, copy_fixture_trees, run_cli

BUCKET = "kafka-copies"
PREFIX = "trees"


@dataclass(frozen=True)
class Copies:
    """The same trees on local disk and in the object store."""

    local: Tree
    uri: str
    options: dict[str, str]

    def remote_argv(self, argv: list[str]) -> list[str]:
        root = str(self.local.root)
        flags = [f"--storage-option={k}={v}" for k, v in self.options.items()]
        return [a.replace(root, self.uri) if a.startswith(root) else a for a in argv] + flags

    def run_both(self, argv: list[str]) -> tuple[Run, Run]:
        """The command on each copy; the remote one from a fresh listing and fresh reads."""
        return run_cli(argv), run_cli(self.remote_argv(argv))

    def normalise(self, text: str, remote: bool) -> str:
        """Remote names back to local ones."""
        return text.replace(self.uri, str(self.local.root)) if remote else text


#: Range sizes small enough that every window of a segment is stitched from many ranges
#: (4 KiB everywhere costs every command thousands of requests: the window, batch and record
#: level is held to 4 KiB ranges on every store in test_exact_bytes.py).
SMALL = {"block_bytes": "65536", "seek_bytes": "4096", "small_file_bytes": "0"}
#: The stores (and range sizes) :func:`store_copies` runs on.
STORE_COPIES = {"s3": ("s3_server", {}), "gs": ("gcs_server", {}),
                "abfs": ("azurite_server", {}), "s3-small": ("s3_server", SMALL)}


@pytest.fixture(scope="session", params=list(STORE_COPIES))
def store_copies(request, tmp_path_factory) -> Copies:
    """The fixture trees in each store, and on S3 again with small ranges."""
    server_name, extra = STORE_COPIES[request.param]
    if server_name == "s3_server":
        base = request.getfixturevalue("copies")
        return Copies(base.local, base.uri, {**base.options, **extra})
    server = request.getfixturevalue(server_name)
    local = copy_fixture_trees(tmp_path_factory.mktemp(f"{server.scheme}copies") / "trees")
    if server.scheme == "abfs":
        _drop_control_names(local.root)
    uri = server.upload_tree(local.root, BUCKET, PREFIX)
    fs = server.filesystem()
    from pyarrow import fs as pafs
    for info in fs.get_file_info(pafs.FileSelector(f"{BUCKET}/{PREFIX}", recursive=True)):
        if info.type == pafs.FileType.File and info.mtime_ns:
            # in nanoseconds: a float of seconds can land a hair below the store's
            # millisecond (…44.431 read back as …44.430999), which the answers truncate
            stamp = info.mtime_ns
            os.utime(local.root / info.path[len(BUCKET) + len(PREFIX) + 2:], ns=(stamp, stamp))
    return Copies(local, uri, {**server.options, **extra})


def _drop_control_names(root: Path) -> None:
    """The hostile tree's names that Azure cannot hold as they are: terminal escapes
    (pyarrow's Azure writer aborts the process on Azurite's answer to such a name) and
    backslashes (Azure reads one in a blob name as a slash). That copy goes without them, on
    both sides: the local answer is the one of the same files."""
    import shutil
    for path in sorted(root.rglob("*"), reverse=True):
        if any(ord(c) < 32 or ord(c) == 127 or c == "\\" for c in path.name) and path.exists():
            shutil.rmtree(path) if path.is_dir() else path.unlink()


@pytest.fixture(scope="session")
def copies(s3_server, tmp_path_factory) -> Copies:
    local = copy_fixture_trees(tmp_path_factory.mktemp("s3copies") / "trees")
    uri = s3_server.upload_tree(local.root, BUCKET, PREFIX)
    _same_mtimes(s3_server, local.root)
    return Copies(local, uri, s3_server.options)


def _same_mtimes(server, root: Path) -> None:
    """Give each local file its object's modification time (when it was uploaded: a store
    keeps no other), so answers that fall back on file times agree too."""
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                       Prefix=PREFIX)
    for page in pages:
        for obj in page.get("Contents", []):
            stamp = obj["LastModified"].timestamp()
            os.utime(root / obj["Key"][len(PREFIX) + 1:], (stamp, stamp))
