"""``scan --remote-store``: a tiered partition's whole log, its copied remote segments (read from
Kafka's LocalTieredStorage layout of the ``tiered`` fixture) listed with the local ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from segtools.analysis.remote_input import remote_metadata
from segtools.analysis.tiered import remote_by_partition
from segtools.storage.logdirs import load_log_dir
from segtools.storage.remote_store import read_segment
from tests.fixtures_manifest import FIXTURES

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TIERED = FIXTURES / "logdirs" / "tiered"
STORE = FIXTURES / "remote" / "tiered"


def scan(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, "scan", str(TIERED), "--topic", "clicks.tiered", *argv],
                          capture_output=True, text=True, timeout=120)


def segment_rows(proc: subprocess.CompletedProcess) -> list[dict]:
    return [r for r in map(json.loads, proc.stdout.splitlines()) if r["type"] == "segment"]


def test_remote_rows_are_the_copied_segments_read_from_the_store():
    proc = scan("--remote-store", str(STORE), "--format", "jsonl")
    assert proc.returncode == 1, proc.stderr  # one copied segment is missing from the store
    rows = segment_rows(proc)
    remote = remote_by_partition(remote_metadata([load_log_dir(TIERED)]))
    for partition in (0, 1):
        rp = remote[("clicks.tiered", partition)]
        mine = [r for r in rows if r["partition"] == partition]
        tiers = [r["tier"] for r in mine]
        assert tiers == sorted(tiers, key=lambda t: t != "remote")  # remote part first
        got = {r["remote_segment_id"]: r for r in mine if r["tier"] == "remote"}
        on_disk = {s.segment_id for s in rp.live_segments} & {
            p.name[21:-4] for p in STORE.rglob(f"clicks.tiered-{partition}-*/*.log")}
        assert set(got) == on_disk and got
        for s in rp.live_segments:
            if s.segment_id not in got:
                continue
            row = got[s.segment_id]
            # the metadata's offsets, and what the store's reader finds in the same .log
            assert (row["base_offset"], row["last_offset"]) == (s.start_offset, s.end_offset)
            content = read_segment(Path(row["path"]))
            assert (row["batch_count"], row["record_count"], row["size"]) == \
                (content.batches, content.records, content.size)
        assert all(r["remote_segment_id"] is None for r in mine if r["tier"] == "local")
    missing = [f for f in map(json.loads, proc.stdout.splitlines())
               if f["type"] == "finding" and f["code"] == "remote_segment_missing"]
    assert len(missing) == 1 and "clicks.tiered-1" in missing[0]["message"]


def test_partition_0_reads_as_one_log_from_remote_start_to_local_end():
    rows = segment_rows(scan("--remote-store", str(STORE), "--format", "jsonl"))
    p0 = [r for r in rows if r["partition"] == 0]
    covered = set()
    for r in p0:
        covered |= set(range(r["base_offset"], r["last_offset"] + 1))
    assert covered == set(range(min(covered), max(covered) + 1))
    assert min(r["base_offset"] for r in p0 if r["tier"] == "remote") < \
        min(r["base_offset"] for r in p0 if r["tier"] == "local")


def test_text_and_csv_mark_the_remote_tier():
    text = scan("--remote-store", str(STORE)).stdout
    assert any(line.split()[-1] == "remote" for line in text.splitlines())
    csv = scan("--remote-store", str(STORE), "--format", "csv").stdout.splitlines()
    assert csv[0].endswith(",tier,remote_segment_id")
    assert sum(line.split(",")[-2] == "remote" for line in csv[1:]) >= 3


def test_without_the_store_every_row_is_local():
    rows = segment_rows(scan("--format", "jsonl"))
    assert rows and {r["tier"] for r in rows} == {"local"}


def test_an_aiven_store_is_refused_in_one_line():
    proc = scan("--remote-store", str(FIXTURES / "remote" / "tiered-aiven"), "--format", "csv")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("segtools: error: ") and proc.stderr.count("\n") == 1
