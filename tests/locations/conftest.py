"""The fixture trees in the S3 server, and the way one command is run on both copies."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from segtools.storage import location
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
        location.close_all()
        return run_cli(argv), run_cli(self.remote_argv(argv))

    def normalise(self, text: str, remote: bool) -> str:
        """Remote names back to local ones."""
        return text.replace(self.uri, str(self.local.root)) if remote else text


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
