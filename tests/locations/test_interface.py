"""The seam's interface (docs/locations.md): resolving, listing, byte ranges, and a path that
travels to another process (a Spark task on another host) and reopens its location there."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

from segtools.storage import location
from segtools.storage.logdirs import walk
from segtools.storage.scope import LocationScope


def test_local_paths_are_located_paths_on_the_local_disk(tmp_path):
    """A local path resolves to a path of the local disk: still a ``pathlib.Path`` (equal
    to the plain one, pickled as one), and its location answers what differs between kinds."""
    resolved = location.resolve(str(tmp_path))
    assert resolved == tmp_path and isinstance(resolved, Path)
    assert isinstance(resolved, location.LocalPath)
    assert resolved.location.kind == "local" and resolved.location.compiled_reads
    assert isinstance(resolved / "a" / "b", location.LocalPath)
    assert isinstance(resolved.parent, location.LocalPath)
    assert location.as_path(str(tmp_path)) == Path(tmp_path)
    assert location.as_path(tmp_path).location is resolved.location
    assert pickle.loads(pickle.dumps(resolved)) == resolved
    assert pickle.loads(pickle.dumps(resolved)).location is resolved.location


def test_listing_and_ranges_match_the_local_files(copies):
    with LocationScope(copies.options):  # a name printed in the scope reads with its options
        root = location.resolve(copies.uri)
        listed = {str(p).replace(copies.uri, str(copies.local.root)): e.size
                  for p, e in location.list_files(root)}
        local = {str(p): p.stat().st_size for p in copies.local.root.rglob("*") if p.is_file()}
        assert listed == local
        log = copies.local.sample / "orders.v2-eu-0" / "00000000000000000005.log"
        remote = f"{copies.uri}/sample/orders.v2-eu-0/00000000000000000005.log"
        assert location.read_range(remote, 100, 5000) == log.read_bytes()[100:5000]
        assert location.read_range(log, 100, 5000) == log.read_bytes()[100:5000]


def test_a_listed_segment_reopens_in_another_process(copies):
    """What a Spark task carries: a listing's SegmentFiles (pickled with its location's URI
    and options) and a byte range; a fresh interpreter reads the same bytes from the store."""
    log_dirs, _ = walk([f"{copies.uri}/sample"], copies.options)
    files = next(p for p in log_dirs[0].partitions if p.path.name == "orders.v2-eu-0").segments[1]
    task = pickle.dumps((files, 0, files.log_size))
    code = ("import pickle, sys, hashlib\n"
            "from segtools.storage.segment import Segment\n"
            "files, lo, hi = pickle.loads(sys.stdin.buffer.read())\n"
            "with Segment.open(files) as seg:\n"
            "    rows = sum(len(w.table) for w in seg.walk(lo, hi))\n"
            "print(str(files.log), rows)\n")
    proc = subprocess.run([sys.executable, "-c", code], input=task, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode().split()
    assert out[0] == f"{copies.uri}/sample/orders.v2-eu-0/00000000000000000005.log"
    assert int(out[1]) == 1
