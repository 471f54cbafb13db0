"""The report's workers list the partition directories (``open(listed=False)``): the page is
the one a listing in the parent gives, the listing's findings and skips in their places."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import segtools
from segtools import fanout
from segtools.report import model
from tests.fixtures_manifest import FIXTURES, SAMPLE
from tests.report.bigtree import big_tree
from tests.report.conftest import write_report
from tests.report.test_report import embedded

AT = 1_700_604_840_000


def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers whatever the tree's size: the listing then crosses back from them."""
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    monkeypatch.setattr(fanout, "workers", lambda: 2)


@pytest.fixture(name="forked")
def _forked(monkeypatch):
    forked(monkeypatch)


def _hostile(tmp_path: Path) -> Path:
    """A copy of the sample tree whose partitions hold what a listing reports: a stray file
    and a stray directory, a FIFO under an index's name (a segment file that cannot be read),
    and a partition with no segment."""
    tree = tmp_path / "logs"
    shutil.copytree(FIXTURES / "logdirs" / "sample", tree, symlinks=True)
    (tree / "orders.v2-eu-1" / "notes.txt").write_text("left by an operator\n")
    (tree / "orders.v2-eu-2" / "backup").mkdir()
    index = tree / "orders.v2-eu-3" / "00000000000000000000.index"
    index.unlink()
    os.mkfifo(index)
    (tree / "empty-0").mkdir()
    return tree


def _built(logs: segtools.LogDirs) -> tuple[dict, list, list]:
    built = model.build([str(p) for p in logs.paths], at=AT, logs=logs)
    built.data["meta"]["generated_at"] = 0
    return built.data, built.details, [(f.code, f.path) for f in built.findings]


def test_listed_by_workers_gives_the_same_page(tmp_path, forked):
    tree = _hostile(tmp_path)
    here = _built(segtools.open(str(tree)))
    logs = segtools.open(str(tree), listed=False)
    assert not any(d.partitions for d in logs.log_dirs) and logs.unlisted
    there = _built(logs)
    assert there == here
    assert not logs.unlisted  # the tree is listed whole once the workers are done
    data = there[0]
    found = {(f["code"], f["topic"], f["partition"]) for f in data["findings"]}
    assert {("stray_file", "orders.v2-eu", 1), ("stray_directory", "orders.v2-eu", 2),
            ("not_a_regular_file", "orders.v2-eu", 3)} <= found
    rows = {(r["topic"], r["partition"]): r for r in data["partitions"]}
    assert rows[("orders.v2-eu", 1)]["warnings"] + rows[("orders.v2-eu", 1)]["infos"] >= 1
    assert any(s["path"].endswith("empty-0") for s in data["skipped"])


@pytest.mark.parametrize("swap", ["removed", "a file"])
def test_a_partition_that_vanishes_after_the_walk(tmp_path, forked, swap):
    """Removed (or replaced by a file) between the roots' walk and a worker's listing: the
    partition is reported as a directory that could not be listed, skipped by retention,
    and the rest is read."""
    tree = _hostile(tmp_path)
    logs = segtools.open(str(tree), listed=False)
    shutil.rmtree(tree / "payments.txn-0")
    if swap == "a file":
        (tree / "payments.txn-0").write_bytes(b"not a directory")
    data, _, findings = _built(logs)
    gone = str(tree / "payments.txn-0")
    assert ("partition_dir_unreadable", gone) in findings
    row = next(r for r in data["partitions"] if r["path"].endswith("payments.txn-0"))
    assert row["segments"] == 0 and row["errors"] + row["warnings"] >= 1
    assert any(s["path"].endswith("payments.txn-0") and "could not be listed" in s["reason"]
               for s in data["skipped"])
    assert sum(r["segments"] for r in data["partitions"]) > 0


def test_finding_rows_place_each_path_as_before(tmp_path):
    """The finding rows' topic and partition, looked up once per directory, are those the
    whole path's parts give (the deepest part that names a partition directory)."""
    tree = _hostile(tmp_path)
    built = model.build([str(tree)], at=AT)
    paths = [f.path for f in built.findings] + [
        "orders-0", "logs/orders-0/", "logs/orders-0/stray-1", "logs/orders-0/x/y.log",
        "./orders-0/a.log", "/", "relative/path", "a-1/b-2/c.log", "a-1/b/c.log"]
    where = model._places()
    for path in [*paths, *paths]:  # the second time from the memo
        assert where(path) == model._where(path), path


def test_a_listed_tree_keeps_its_listing(tmp_path):
    """``take_listing`` fills in a tree found but not listed; a tree listed when it was
    opened (or one off the local disk, always listed) is kept as it is."""
    logs = segtools.open(str(FIXTURES / "logdirs" / "sample"))
    before = list(logs.log_dirs)
    logs.take_listing({})
    assert logs.log_dirs == before and not logs.unlisted


def _custody(tree: Path, out: Path, *argv: str) -> list[dict]:
    """The chain of custody of ``report --hashes`` of ``tree``: every file the run read, with
    the size and time seen at its open and its SHA-256."""
    code, err = write_report(str(tree), "-o", str(out), "--at", str(AT), "-q", "--hashes", *argv)
    assert code in (0, 1), err
    return embedded(out.read_text())["custody"]


def test_hashes_list_what_the_workers_read(tmp_path, monkeypatch):
    """Forked (two workers listing and reading the partitions), the chain of custody lists
    exactly the files, sizes, times and hashes one process's run lists: every segment
    included, which only the workers read."""
    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    serial = _custody(SAMPLE, tmp_path / "one.html")
    forked(monkeypatch)
    assert _custody(SAMPLE, tmp_path / "two.html") == serial
    listed = {r["path"] for r in serial}
    assert {str(f) for f in SAMPLE.glob("*/*.log")} <= listed
    assert all(r["sha256"] and not r["changed"] for r in serial)


def test_hashes_of_a_tree_that_forks_by_default(tmp_path, monkeypatch):
    """500 partitions (each a copy of one of the sample's): enough for the report to fork its
    two workers by itself, and the custody is still the one-process run's."""
    monkeypatch.setattr("tests.report.bigtree.SOURCES", ("edge-cases-0",))
    tree = big_tree(tmp_path / "big", topics=50, partitions=10)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    serial = _custody(tree, tmp_path / "one.html", "--jobs", "1")
    calls = []
    real = fanout._drain
    monkeypatch.setattr(fanout, "_drain", lambda *a: calls.append(a) or real(*a))
    assert _custody(tree, tmp_path / "two.html") == serial
    assert calls  # the report did fork
    assert len(serial) == sum(1 for f in tree.rglob("*") if f.is_file())  # every file is read
