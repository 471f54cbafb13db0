"""Remote stores read as what they are: the Aiven plugin's chunked, compressed or encrypted
objects and Kafka's LocalTieredStorage files, in ``dump`` and ``tiered``; what reading needs
is said in one line, never reported as damage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures_manifest import FIXTURES

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
AIVEN = FIXTURES / "remote" / "tiered-aiven" / "clicks.tiered-UgjU_1Q2Ov-WHo0amwnGGw" / "0"
LTS = (FIXTURES / "remote" / "tiered" / "kafka-tiered-storage"
       / "clicks.tiered-0-UgjU_1Q2Ov-WHo0amwnGGw")
COMPRESSED = AIVEN / "00000000000000000100-vx9gOvOrMRKv76ntp69O4w.log"
ENCRYPTED = AIVEN / "00000000000000000300-UeFtuQ_VP3GBTzih4Tpq_A.log"
AT = "2024-06-01T12:00:00Z"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})


def jsonl(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_dump_of_a_compressed_aiven_object_is_its_segment():
    proc = run("dump", "--format", "jsonl", str(COMPRESSED))
    lines = jsonl(proc)
    assert proc.returncode == 0, proc.stdout[-500:]
    assert not [x for x in lines if x["type"] == "finding"]
    batches = [x for x in lines if x["type"] == "batch"]
    assert batches[0]["base_offset"] == 100 and batches[-1]["last_offset"] == 199
    assert all(b["crc_valid"] for b in batches)


def test_dump_of_an_encrypted_aiven_object_says_what_it_needs():
    proc = run("dump", str(ENCRYPTED))
    assert proc.returncode == 0
    assert "corrupt_batch_length" not in proc.stdout and "truncated_tail" not in proc.stdout
    (note,) = [line for line in proc.stdout.splitlines() if "remote_segment_encrypted" in line]
    assert "fixture-rsa-key" in note and "private key" in note


def test_tiered_shows_the_encrypted_segment_as_encrypted():
    proc = run("tiered", str(FIXTURES / "logdirs" / "tiered"), "--remote-store",
               str(FIXTURES / "remote" / "tiered-aiven"), "--at", AT)
    (row,) = [line for line in proc.stdout.splitlines()
              if line.startswith("300..399  UeFtuQ_VP3GBTzih4Tpq_A")]
    assert "None..None" not in row and "encrypted" in row
    assert any(line.startswith("INFO remote_segment_encrypted") and "private key" in line
               for line in proc.stdout.splitlines())


def test_a_log_dir_given_as_the_remote_store_is_said_to_be_one():
    proc = run("tiered", str(FIXTURES / "logdirs" / "tiered"), "--remote-store",
               str(FIXTURES / "logdirs" / "sample"), "--at", AT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "a Kafka log dir, not a remote store" in proc.stderr


def test_dump_reads_a_local_tiered_storage_leader_epoch_checkpoint():
    path = LTS / "00000000000000000200-K_D9QpBZO_mfztDlxKDOwA.leader_epoch_checkpoint"
    proc = run("dump", "--format", "jsonl", str(path))
    assert proc.returncode == 0, proc.stderr
    entries = [x for x in jsonl(proc) if x["type"] == "checkpoint_entry"]
    assert entries and all({"epoch", "start_offset"} <= set(x) for x in entries)


#: The entries each index file's dump prints (the file lines say where they come from).
ENTRIES = ("index_entry", "timeindex_entry", "snapshot_entry", "checkpoint_entry")


def test_dump_of_an_aiven_manifest_says_how_its_segment_is_kept_and_what_reading_needs():
    for manifest in sorted(AIVEN.glob("*.rsm-manifest")):
        proc = run("dump", str(manifest))
        assert proc.returncode == 0, proc.stderr
        assert not [x for x in proc.stdout.splitlines() if x.startswith(("ERROR", "WARNING"))]
        assert "chunk(s) of 1.0 KiB" in proc.stdout
        stem = manifest.name.removesuffix(".rsm-manifest")
        if stem.startswith("00000000000000000300"):
            (note,) = [line for line in proc.stdout.splitlines()
                       if line.startswith("INFO remote_segment_encrypted")]
            assert "private key" in note and "fixture-rsa-key" in note
        else:
            assert f"to read the segment: segtools dump {stem}.log" in proc.stdout


def test_dump_of_an_aiven_indexes_object_shows_the_files_local_tiered_storage_keeps():
    """The same segment copied by both plugins: the indexes in Aiven's one object are, entry
    for entry, the index files LocalTieredStorage keeps; encrypted ones are a note."""
    compared = 0
    for indexes in sorted(AIVEN.glob("*.indexes")):
        stem = indexes.name.removesuffix(".indexes")
        proc = run("dump", "--format", "jsonl", str(indexes))
        assert proc.returncode == 0, proc.stderr
        lines = jsonl(proc)
        if stem.startswith("00000000000000000300"):
            assert [x["code"] for x in lines if x["type"] == "finding"] == \
                ["remote_segment_encrypted"]
            continue
        local = run("dump", "--format", "jsonl",
                    *(str(LTS / f"{stem}{suffix}") for suffix in
                      (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint")))
        assert [x for x in lines if x["type"] in ENTRIES] == \
            [x for x in jsonl(local) if x["type"] in ENTRIES]
        assert [x for x in lines if x["type"] in ENTRIES]
        compared += 1
    assert compared == 2


def test_find_refuses_an_aiven_store_as_scan_does():
    """``find`` reads a remote segment from the one store the planner and ``scan`` read
    (:func:`segtools.storage.remote_store.segment_store`): an Aiven bucket, whose segments
    are chunked objects, is refused in the same one line and exit 2, not a note of its own."""
    tree = str(FIXTURES / "logdirs" / "tiered")
    found = run("find", f"{tree}/clicks.tiered-0", "--offset", "150", "--remote-store",
                str(FIXTURES / "remote" / "tiered-aiven"))
    scanned = run("scan", tree, "--remote-store", str(FIXTURES / "remote" / "tiered-aiven"))
    assert (found.returncode, found.stdout) == (2, "")
    assert found.stderr == scanned.stderr and found.stderr.count("\n") == 1
    assert found.stderr.startswith("segtools: error: ")
