"""``to_arrow(remote_store=...)``: the API reads a tiered partition as one log, the remote part
from the ``tiered`` fixture's LocalTieredStorage store, with the rows ``scan`` lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import segtools
from tests.fixtures_manifest import FIXTURES

TIERED = FIXTURES / "logdirs" / "tiered"
STORE = FIXTURES / "remote" / "tiered"


def test_records_run_from_the_remote_part_into_the_local_one():
    t = segtools.open(TIERED).to_arrow("records", topics="clicks.tiered", partitions=0,
                                       remote_store=STORE).read_all()
    assert "tier" in t.column_names
    rows = sorted(zip(t["offset"].to_pylist(), t["tier"].to_pylist(), strict=True))
    offsets = [o for o, _ in rows]
    assert offsets == list(range(100, 550))  # remote 100-199, then the local 200-549
    assert {tier for o, tier in rows if o < 200} == {"remote"}
    assert {tier for o, tier in rows if o >= 200} == {"local"}


def test_segment_rows_are_scans_remote_rows():
    t = segtools.open(TIERED).to_arrow("segments", topics="clicks.tiered",
                                       remote_store=STORE).read_all().to_pylist()
    proc = subprocess.run([str(Path(sys.executable).with_name("segtools")), "scan", str(TIERED),
                           "--topic", "clicks.tiered", "--remote-store", str(STORE),
                           "--format", "jsonl"], capture_output=True, text=True, timeout=120)
    scanned = {(r["partition"], r["base_offset"]): r for r in map(json.loads,
               proc.stdout.splitlines()) if r["type"] == "segment" and r["tier"] == "remote"}
    remote = [r for r in t if r["tier"] == "remote"]
    assert remote and all(
        (r["last_offset"], r["record_count"], r["size"]) ==
        (scanned[(r["partition"], r["base_offset"])]["last_offset"],
         scanned[(r["partition"], r["base_offset"])]["record_count"],
         scanned[(r["partition"], r["base_offset"])]["size"]) for r in remote)
