"""Every fixture tree read from each object store gives the answers it gives from local disk.

The trees are the Kafka-written fixtures, uploaded unchanged to moto's server (a real
S3-protocol server on 127.0.0.1), fake-gcs-server and Azurite (``store_copies``: on S3
once more with 64 KiB blocks and 4 KiB seeks). Every command runs with the argument sets the
robustness tests use (tests/robustness/commands.py) that print JSON (the whole answer, every field),
once on the local copy and once on ``s3://``, in this process; the report runs too (its
document is the analyses' answers). Only names (the URI for the path) and modification
times may differ (docs/locations.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import segtools
from tests.robustness.commands import ARGUMENT_SETS

#: Commands that measure ages against the clock: both runs are given the same moment.
AT = {command: ["--at", "2026-01-01T00:00:00Z"]
      for command in ("retention", "compaction", "tiered", "transactions")}


def _json_argvs(copies, command: str) -> list[list[str]]:
    argvs = ARGUMENT_SETS[command](copies.local)
    machine = [a for a in argvs if "json" in a or "jsonl" in a] or argvs[:1]
    return [a[:1] + AT.get(command, []) + a[1:] for a in machine]


@pytest.mark.parametrize("command", [c for c in ARGUMENT_SETS if c != "report"])
def test_command_same_from_each_store(store_copies, command):
    copies = store_copies
    for argv in _json_argvs(copies, command):
        local, remote = copies.run_both(argv)
        assert remote.code == local.code, (argv, remote.stderr)
        assert copies.normalise(remote.stderr, True) == copies.normalise(local.stderr, False)
        assert (copies.normalise(remote.stdout.decode(), True)
                == copies.normalise(local.stdout.decode(), False)), argv


def test_api_same_from_each_store(store_copies):
    """``segtools.open(uri, storage_options=...)``: the same records, batches, segments and
    verify findings as the local tree."""
    copies = store_copies
    local = segtools.open(copies.local.root)
    remote = segtools.open(copies.uri, storage_options=copies.options)
    for level in ("records", "batches", "segments"):
        a = local.to_arrow(level, include_headers=True).read_all()
        b = remote.to_arrow(level, include_headers=True).read_all()
        assert b.num_rows == a.num_rows > 0
        for name in a.column_names:
            col_a, col_b = a.column(name).to_pylist(), b.column(name).to_pylist()
            col_b = [copies.normalise(v, True) if isinstance(v, str) else v for v in col_b]
            assert col_b == col_a, (level, name)
    seen_local = [(f.code, f.severity, f.path, f.position) for f in local.verify()]
    seen_remote = [(f.code, f.severity, copies.normalise(f.path, True), f.position)
                   for f in remote.verify()]
    assert seen_remote == seen_local


def test_report_same_from_s3(copies, tmp_path):
    """The report's page is the same from either copy, but for when it was written."""
    from tests.robustness.commands import run_cli
    pages = {}
    for name in ("local", "remote"):
        target = tmp_path / f"{name}.html"
        argv = ["report", "-q", "-o", str(target), "--at", "2026-01-01T00:00:00Z",
                str(copies.local.sample)]
        run = run_cli(argv if name == "local" else copies.remote_argv(argv))
        assert run.code in (0, 1), run.stderr
        # the page breaks long paths after each '/' (<wbr>): names are compared without it
        page = copies.normalise(target.read_text().replace("<wbr>", ""), name == "remote")
        pages[name] = re.sub(r"(<dt>written</dt><dd>|\"generated_at\":)[^<,]*", "", page)
    assert "corrupt-crc" in pages["local"]
    assert pages["remote"] == pages["local"]


def test_hashes_from_s3_are_the_local_ones(copies):
    """--hashes: the chain of custody of an S3 read names the same files with the same sizes,
    times and SHA-256 as the local read (and says where each was)."""
    argv = ["verify", "-q", "--format", "jsonl", "--hashes", str(copies.local.sample)]
    local, remote = copies.run_both(argv)

    def chain(run, remote_run):
        out = {}
        for r in map(json.loads, run.stdout.decode().splitlines()):
            if r["type"] == "custody":
                out[copies.normalise(r.pop("path"), remote_run)] = r
        return out

    a, b = chain(local, False), chain(remote, True)
    assert len(a) > 20 and a.keys() == b.keys()
    for path in a:
        assert {a[path].pop("location"), b[path].pop("location")} == {"local", "object"}
        # the store's version tag, from the open's HEAD (a listing carries none): for an
        # object uploaded in one part, S3's ETag is the MD5 of its bytes (in several, the
        # MD5 of the parts' MD5s and their count)
        assert a[path].pop("etag") is None
        etag = b[path].pop("etag")
        assert etag == hashlib.md5(Path(path).read_bytes()).hexdigest() or \
            re.fullmatch(r"[0-9a-f]{32}-[0-9]+", etag), (path, etag)
        assert b[path] == a[path], path
