"""A located path stays where it lives: two buckets holding the same keys are two log dirs,
and the ``__remote_log_metadata`` partitions of an object-store log dir are found in the
store, not looked for on the local disk under the same key."""

from __future__ import annotations

import re
from pathlib import Path

from segtools.analysis.remote_input import metadata_dirs
from segtools.formats.internal.remote_log_metadata import TOPIC
from segtools.storage import location
from segtools.storage.logdirs import load_log_dir

TIERED = Path(__file__).resolve().parents[2] / "fixtures" / "logdirs" / "tiered"


def test_metadata_partitions_of_two_buckets(s3_server):
    uris = [s3_server.upload_tree(TIERED, bucket, "logs/tiered")
            for bucket in ("tiered-one", "tiered-two")]
    dirs = [load_log_dir(location.resolve(u, s3_server.options)) for u in uris]
    found = metadata_dirs(dirs)
    local = metadata_dirs([load_log_dir(TIERED)])
    assert local and all(p.name.topic == TOPIC for p in local)
    assert len(found) == 2 * len(local)
    assert sorted(str(p.path) for p in found) == sorted(
        str(p.path).replace(str(TIERED), u) for u in uris for p in local)


REMOTE = Path(__file__).resolve().parents[2] / "fixtures" / "remote" / "tiered"


def test_remote_store_in_an_object_store(s3_server):
    """``--remote-store s3://...``: the tiered storage's copies are read through the same
    seam as the log dirs, and ``tiered`` and ``scan`` answer as with the local copy."""
    from tests.robustness.commands import run_cli
    uri = s3_server.upload_tree(REMOTE, "tiered-remote", "rsm")
    flags = [f"--storage-option={k}={v}" for k, v in s3_server.options.items()]
    for argv in (["tiered", "--at", "2024-06-01T12:00:00Z", "--format", "json", str(TIERED)],
                 ["scan", "-q", "--format", "jsonl", str(TIERED)]):
        local = run_cli([*argv, "--remote-store", str(REMOTE)])
        remote = run_cli([*argv, "--remote-store", uri, *flags])
        assert local.code in (0, 1) and remote.code == local.code, remote.stderr
        assert "remote" in local.stdout.decode()
        # an object's modification time is its upload's (docs/locations.md)
        assert _times_out(remote.stdout.decode().replace(uri, str(REMOTE))) == \
            _times_out(local.stdout.decode()), argv


def _times_out(text: str) -> str:
    return re.sub(r'"mtime_ms":\d+', "", text)


def test_a_directory_beside_a_longer_name(object_store):
    """``t/tiered`` beside ``t/tiered-hostile`` is found on every store (pyarrow's Azure
    client calls the shorter one missing: '-' sorts before '/')."""
    for name in ("tiered/p-0/a.log", "tiered-hostile/p-0/b.log"):
        object_store.put("beside-names", f"t/{name}", b"x")
    root = location.resolve(object_store.uri("beside-names", "t/tiered"), object_store.options)
    assert root.is_dir() and [p.name for p in root.iterdir()] == ["p-0"]
