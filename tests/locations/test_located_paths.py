"""A located path stays where it lives: two buckets holding the same keys are two log dirs,
and the ``__remote_log_metadata`` partitions of an object-store log dir are found in the
store, not looked for on the local disk under the same key."""

from __future__ import annotations

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
