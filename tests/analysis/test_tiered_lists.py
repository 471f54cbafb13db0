"""One list of remote segments: ``scan --remote-store``, ``tiered --remote-store``, the
planner (``to_arrow("segments", remote_store=...)``, so Spark) agree on every tiered fixture,
from local disk and from an object store (``--remote-store s3://...``); a store whose segments
cannot be read as log segments (Aiven's chunked objects) is refused by each with one line."""

from __future__ import annotations

import json

import pytest

import segtools
from segtools.errors import SegtoolsError
from segtools.fetch import plan
from segtools.fetch.columns import Level
from segtools.storage.scope import LocationScope
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

AT = "2024-06-01T12:00:00Z"
STORE = FIXTURES / "remote" / "tiered"
AIVEN = FIXTURES / "remote" / "tiered-aiven"
#: Every tiered tree, with the LocalTieredStorage store its metadata names.
TREES = {"tiered": FIXTURES / "logdirs" / "tiered",
         "tiered-hostile": FIXTURES / "logdirs" / "tiered-hostile",
         "tiered-remote-only": FIXTURES / "logdirs" / "tiered-remote-only"}
STORES = {"tiered": STORE, "tiered-hostile": STORE,
          "tiered-remote-only": FIXTURES / "remote" / "tiered-remote-only"}

Listed = set[tuple[str, int, int]]  # (topic, partition, base offset)


def by_scan(tree: str, store: str, flags: list[str]) -> Listed:
    run = run_cli(["scan", "--format", "jsonl", tree, "--remote-store", store, *flags])
    assert run.code in (0, 1), run.stderr
    return {(r["topic"], r["partition"], r["base_offset"])
            for r in map(json.loads, run.stdout.decode().splitlines())
            if r["type"] == "segment" and r.get("tier") == "remote"}


def by_tiered(tree: str, store: str, flags: list[str]) -> Listed:
    """The segments ``tiered`` found copied in the store (``COPY_SEGMENT_FINISHED``, a
    ``.log`` there)."""
    run = run_cli(["tiered", "--at", AT, "--format", "json", tree, "--remote-store", store,
                   *flags])
    assert run.code in (0, 1), run.stderr
    report = json.loads(run.stdout)
    return {(p["topic"], p["partition"], s["start_offset"])
            for p in report["partitions"] for s in p["remote_segments"]
            if s["state"] == "COPY_SEGMENT_FINISHED" and s["store"] is not None
            and s["store"]["files"].get("segment")}


def by_api(tree: str, store: str, options: dict) -> Listed:
    with segtools.open(tree, storage_options=options or None) as logs:
        rows = logs.to_arrow("segments", remote_store=store, states="all").read_all()
    return {(r["topic"], r["partition"], r["base_offset"]) for r in rows.to_pylist()
            if r["tier"] == "remote"}


def by_planner(tree: str, store: str, options: dict) -> Listed:
    with LocationScope(options):
        pieces = plan.ranges(plan.Selection((tree,), level=Level.SEGMENTS, remote_store=store,
                                            storage_options=options,
                                            partition_states=("live", "deleted", "future",
                                                              "stray")))
    return {(p.partition.topic, p.partition.partition, p.files.base_offset) for p in pieces
            if p.tier == "remote"}


def all_four(tree: str, store: str, options: dict) -> dict[str, Listed]:
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    return {"scan": by_scan(tree, store, flags), "tiered": by_tiered(tree, store, flags),
            "api": by_api(tree, store, options), "planner": by_planner(tree, store, options)}


@pytest.mark.parametrize("name", sorted(TREES))
def test_every_face_lists_the_same_remote_segments(name):
    found = all_four(str(TREES[name]), str(STORES[name]), {})
    assert found["scan"] == found["tiered"] == found["api"] == found["planner"], found
    if name == "tiered-remote-only":  # a partition whose directory left: only remote copies
        assert found["scan"] == {("moved.tiered", 0, 0), ("moved.tiered", 0, 100)}
    if name == "tiered":  # the tree that has them: all four copied segments, not one
        assert found["scan"] == {("clicks.tiered", 0, 100), ("clicks.tiered", 0, 200),
                                 ("clicks.tiered", 0, 300), ("clicks.tiered", 1, 0)}


def test_the_same_from_an_object_store(s3_server):
    """``--remote-store s3://...``: the store read through the same seam as the log dirs,
    every face listing what it lists from the local copy."""
    tree = s3_server.upload_tree(TREES["tiered"], "tiered-lists", "logs")
    store = s3_server.upload_tree(STORE, "tiered-lists", "rsm")
    local = all_four(str(TREES["tiered"]), str(STORE), {})
    remote = all_four(tree, store, s3_server.options)
    assert remote == local


def test_a_chunked_store_is_refused_alike():
    """Aiven's objects are chunked (and may be encrypted): only ``tiered`` reads them; the
    readers of log segments refuse the store with the same line."""
    tree, store = str(TREES["tiered"]), str(AIVEN)
    run = run_cli(["scan", tree, "--remote-store", store])
    assert run.code == 2 and "not from Aiven" in run.stderr
    for read in (by_api, by_planner):
        with pytest.raises(SegtoolsError, match="not from Aiven") as caught:
            read(tree, store, {})
        assert caught.value.message in run.stderr
    assert by_tiered(tree, store, [])  # tiered reads the chunked objects


def test_a_partition_only_in_the_store_reads_as_its_remote_log():
    """moved.tiered-0 has no directory in the log dir: ``scan`` lists its copied segments
    under the log dir whose metadata names them (a run on another partition does not), and a
    read of its records is the remote log, offsets 0-199 once each."""
    tree, store = TREES["tiered-remote-only"], STORES["tiered-remote-only"]
    run = run_cli(["scan", "--format", "jsonl", str(tree), "--remote-store", str(store)])
    rows = [r for r in map(json.loads, run.stdout.decode().splitlines())
            if r["type"] == "segment" and r["topic"] == "moved.tiered"]
    assert [(r["tier"], r["log_dir"], r["first_offset"], r["last_offset"]) for r in rows] == [
        ("remote", str(tree), 0, 99), ("remote", str(tree), 100, 199)]
    with segtools.open(tree) as logs:
        records = logs.to_arrow("records", remote_store=str(store), topics="moved.tiered")
        assert records.read_all().column("offset").to_pylist() == list(range(200))
    alone = run_cli(["scan", "--format", "jsonl", str(tree / "__remote_log_metadata-19"),
                     "--remote-store", str(store)])
    assert '"moved.tiered"' in alone.stdout.decode()  # its metadata partition was named
