"""The real console script, driven as an operator would: output, exit codes, findings."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES, SAMPLE

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))


def run(*args: str, check_code: int | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([SEGTOOLS, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


def jsonl(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_help_for_every_command():
    for cmd in ("dump", "scan", "verify", "find"):
        proc = run(cmd, "--help", check_code=0)
        assert "examples:" in proc.stdout


@pytest.mark.parametrize("args", [
    ("dump", "/no/such/file.log"),
    ("scan", "/no/such/dir"),
    ("verify", "/no/such/dir"),
    ("dump", str(FIXTURES / "README.md")),
    ("find", str(SAMPLE), "--offset", "notanumber"),
    ("find", str(SAMPLE), "--timestamp", "yesterday-ish"),
])
def test_bad_input_is_one_line_and_exit_2(args):
    proc = run(*args, check_code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("segtools: error: ")
    assert "Traceback" not in proc.stderr


def test_dump_clean_segment_exit_0_and_kafka_line_shape():
    proc = run("dump", str(SAMPLE / "orders.v2-eu-1" / "00000000000000000000.log"),
               check_code=0)
    assert proc.stdout.startswith("Dumping ")
    assert "baseOffset: 0 lastOffset:" in proc.stdout and "compresscodec: gzip" in proc.stdout


def test_dump_torn_tail_exit_1_with_finding():
    proc = run("dump", "--format", "jsonl",
               str(SAMPLE / "torn-tail-0" / "00000000000000000000.log"), check_code=1)
    findings = [x for x in jsonl(proc) if x["type"] == "finding"]
    assert [f["code"] for f in findings] == ["truncated_tail"]
    assert findings[0]["position"] == 1047


def test_dump_text_is_terminal_safe(tmp_path):
    from tests.builders import make_batch
    evil = make_batch([dict(timestamp_delta=0, offset_delta=0, key=b"\x1b]0;pwned\x07",
                            value=b"\x1b[2J\x9b31m", headers=[(b"\x1b[1m", b"\x07")])])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(evil)
    proc = run("dump", "--print-data", str(path), check_code=0)
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\x9b" not in proc.stdout
    assert "\\x1b" in proc.stdout


def test_scan_formats():
    table = run("scan", str(SAMPLE), check_code=1)  # the sample has a torn tail on purpose
    assert "orders.v2-eu-3" in table.stdout and "leftovers" in table.stdout
    rows = [r for r in jsonl(run("scan", str(SAMPLE), "--format", "jsonl"))
            if r["type"] == "segment"]
    assert {r["topic"] for r in rows} >= {"orders.v2-eu", "payments.txn", "edge-cases"}
    csv = run("scan", str(SAMPLE), "--format", "csv", "--topic", "orders.*",
              "--partition", "3").stdout.splitlines()
    assert csv[0].startswith("log_dir,topic,partition") and len(csv) == 2


def test_verify_reports_the_planted_problems():
    proc = run("verify", str(FIXTURES / "logdirs"), "--format", "jsonl", check_code=1)
    lines = jsonl(proc)
    codes = {(Path(f["path"]).parent.name, f["code"]) for f in lines if f["type"] == "finding"}
    assert ("corrupt-crc-0", "crc_mismatch") in codes
    assert ("legacy-corrupt.v1-0", "crc_mismatch") in codes
    assert ("torn-tail-0", "truncated_tail") in codes
    assert ("payments-compact-0", "offset_gap_compaction") in codes
    assert lines[-1]["type"] == "summary" and lines[-1]["errors"] == 2


def test_verify_clean_partition_exit_0():
    run("verify", str(SAMPLE / "orders.v2-eu-2"), check_code=0)


def test_verify_salvage_on_a_smashed_copy(tmp_path):
    part = tmp_path / "orders.v2-eu-1"
    shutil.copytree(SAMPLE / "orders.v2-eu-1", part)
    log = part / "00000000000000000000.log"
    positions = [b["position"] for b in jsonl(run("dump", "--format", "jsonl", str(log)))
                 if b["type"] == "batch"]
    data = bytearray(log.read_bytes())
    data[positions[2] + 8:positions[2] + 12] = b"\xff\xff\x00\x10"  # a bogus length
    log.write_bytes(bytes(data))
    plain = jsonl(run("verify", str(part), "--format", "jsonl"))
    salvaged = jsonl(run("verify", str(part), "--salvage", "--format", "jsonl", check_code=1))
    skipped = [f for f in salvaged if f["type"] == "finding" and f["code"] == "salvage_skipped"]
    assert len(skipped) == 1 and "lost" in skipped[0]["message"]
    assert plain != salvaged


def test_find_by_offset_and_timestamp_agree_with_dump():
    """``find`` answers what ``dump --deep`` shows: the record at an offset, and for a time
    the first record (in offset order) whose timestamp is at or after it, as a broker's
    ``ListOffsets`` answers; a time between two records' times finds the later one."""
    part = SAMPLE / "orders.v2-eu-0"
    dumped = [x for x in jsonl(run("dump", "--deep", "--format", "jsonl", "--bytes", "base64",
                                   *map(str, sorted(part.glob("*.log"))), check_code=0))
              if x["type"] == "record"]
    by_offset = {r["offset"]: r for r in dumped}
    found = jsonl(run("find", str(part), "--offset", "230", "--format", "json", "--bytes",
                      "base64", check_code=0))[0]["record"]
    assert {k: found[k] for k in ("offset", "timestamp", "key", "value")} == {
        k: by_offset[230][k] for k in ("offset", "timestamp", "key", "value")}
    stamps = sorted({r["timestamp"] for r in dumped})
    between = next(a + 1 for a, b in itertools.pairwise(stamps) if b - a > 1
                   and a >= by_offset[230]["timestamp"])
    for ts in (by_offset[230]["timestamp"], between):
        want = min((r for r in dumped if r["timestamp"] >= ts), key=lambda r: r["offset"])
        by_time = jsonl(run("find", str(SAMPLE), "--topic", "orders.v2-eu", "--partition", "0",
                            "--timestamp", str(ts), "--format", "json", check_code=0))[0]
        assert (by_time["record"]["offset"], by_time["record"]["timestamp"]) == (
            want["offset"], want["timestamp"]), ts


def test_find_past_the_end_exit_1():
    run("find", str(SAMPLE / "orders.v2-eu-0"), "--offset", "999999", check_code=1)


def test_read_only_tree(tmp_path):
    """scan, verify and dump give the same answers on a tree they cannot write to as on the
    tree itself (nothing under a log dir needs to be writable)."""
    tree = tmp_path / "ro"
    shutil.copytree(SAMPLE, tree)
    log = Path("orders.v2-eu-1") / "00000000000000000000.log"

    def answers(root: Path) -> list[str]:
        outs = [run("scan", str(root), "--format", "jsonl", check_code=1).stdout,
                run("verify", str(root), "--deep", "--format", "jsonl", check_code=1).stdout,
                run("dump", "--deep", str(root / log), check_code=0).stdout]
        return [out.replace(str(root), "ROOT").replace(os.path.relpath(root), "ROOT")
                for out in outs]

    for p in [tree, *tree.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        seen = answers(tree)
    finally:
        for p in [tree, *tree.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert seen == answers(SAMPLE)
    assert '"code":"crc_mismatch"' in seen[1] and "baseOffset: 0" in seen[2]


def test_dump_offset_range_seeks_through_the_index():
    log = SAMPLE / "orders.v2-eu-0" / "00000000000000000205.log"
    lines = jsonl(run("dump", "--format", "jsonl", "--start-offset", "245", "--end-offset",
                      "248", str(log), check_code=0))
    records = [x["offset"] for x in lines if x["type"] == "record"]
    assert records == [245, 246, 247, 248]
    batches = [x for x in lines if x["type"] == "batch"]
    # the index entry for 244 starts the scan at byte 5447: earlier batches are never read
    assert batches[0]["position"] >= 5447


def test_dump_time_range():
    log = SAMPLE / "orders.v2-eu-1" / "00000000000000000000.log"
    everything = [x for x in jsonl(run("dump", "--deep", "--format", "jsonl", str(log)))
                  if x["type"] == "record"]
    stamps = sorted(x["timestamp"] for x in everything)
    lo, hi = stamps[10], stamps[20]
    got = [x for x in jsonl(run("dump", "--format", "jsonl", "--start-time", str(lo),
                                "--end-time", str(hi), str(log))) if x["type"] == "record"]
    assert [x["offset"] for x in got] == [x["offset"] for x in everything
                                          if lo <= x["timestamp"] <= hi]


def test_dump_index_files_and_checkpoints():
    part = SAMPLE / "orders.v2-eu-0"
    lines = jsonl(run("dump", "--format", "jsonl", str(part / "00000000000000000205.index"),
                      str(part / "00000000000000000205.timeindex"),
                      str(part / "leader-epoch-checkpoint"), check_code=0))
    assert [x["offset"] for x in lines if x["type"] == "index_entry"] == [244, 247, 251]
    assert [x["offset"] for x in lines if x["type"] == "timeindex_entry"] == [244, 247, 251]
    assert [x["epoch"] for x in lines if x["type"] == "checkpoint_entry"] == [0, 1]


def test_dump_claims_no_index_entry_in_an_all_zero_index():
    """payments-compact-0's active segment: Kafka preallocated its indexes and indexed nothing
    yet. No ``index_entry`` / ``timeindex_entry`` in JSON; the text says what
    kafka-dump-log.sh prints from the zeros."""
    base = SAMPLE / "payments-compact-0" / "00000000000000000060"
    index, timeindex = str(base) + ".index", str(base) + ".timeindex"
    lines = jsonl(run("dump", "--format", "jsonl", index, timeindex, check_code=0))
    assert not [x for x in lines if x["type"] in ("index_entry", "timeindex_entry")]
    assert [x["kafka_dump_log_prints"] for x in lines if x.get("message") == "no entries yet"] \
        == ["offset: 60 position: 0", "timestamp: 0 offset: 60"]
    text = run("dump", index, check_code=0).stdout
    assert "\noffset: 60 position: 0\n" not in text
    assert 'kafka-dump-log.sh prints "offset: 60 position: 0"' in text


def test_dump_verify_index_matches_the_log(tmp_path):
    """Every index of a Kafka-written partition checks out (a file line and an "index
    verified" note with its entry count each, no finding); the same index with one entry
    moved by 7 bytes is reported at that entry, exit 1."""
    part = tmp_path / "payments-compact-1"
    shutil.copytree(SAMPLE / "payments-compact-1", part)
    indexes = list(map(str, sorted(part.glob("*.index"))))
    clean = jsonl(run("dump", "--verify-index", "--format", "jsonl", *indexes, check_code=0))
    assert [x["type"] for x in clean] == ["file", "note"] * len(indexes)
    assert [x["path"] for x in clean] == [p for p in indexes for _ in range(2)]
    notes = [x for x in clean if x["type"] == "note"]
    assert all(x["message"] == "index verified" for x in notes), notes
    assert notes[0]["entries"] > 0 and notes[-1]["entries"] == 0, notes  # the active one: none
    index = part / "00000000000000000000.index"
    entry = bytearray(index.read_bytes())
    relative, position = int.from_bytes(entry[0:4], "big"), int.from_bytes(entry[4:8], "big")
    entry[4:8] = (position + 7).to_bytes(4, "big")
    index.write_bytes(bytes(entry))
    damaged = jsonl(run("dump", "--verify-index", "--format", "jsonl", *indexes, check_code=1))
    findings = [x for x in damaged if x["type"] == "finding"]
    assert [(f["code"], f["path"], f["offset"], f["position"]) for f in findings] == [
        ("index_entry_not_at_batch", str(index), relative, position + 7)]


def test_dump_max_bytes_reads_a_prefix():
    log = SAMPLE / "orders.v2-eu-1" / "00000000000000000000.log"
    lines = jsonl(run("dump", "--format", "jsonl", "--max-bytes", "20000", str(log),
                      check_code=0))
    assert all(b["position"] + b["size"] <= 20000 for b in lines if b["type"] == "batch")


FORENSICS = FIXTURES / "logdirs" / "forensics"


@pytest.mark.parametrize(("flag", "partition"), [
    ("--offsets-decoder", "__consumer_offsets-5"),
    ("--transaction-log-decoder", "__transaction_state-5"),
    ("--cluster-metadata-decoder", "__cluster_metadata-0"),
])
def test_dump_internal_topic_decoders(flag, partition):
    log = sorted((FORENSICS / partition).glob("*.log"))[0]
    records = [x for x in jsonl(run("dump", flag, "--format", "jsonl", str(log), check_code=0))
               if x["type"] == "record"]
    assert records and all("decoded" in r for r in records)
    assert not [r for r in records if "error" in r["decoded"]]
    text = run("dump", flag, str(log), check_code=0).stdout
    assert "payload: " in text


def test_dump_offsets_decoder_tombstone_is_delete():
    logs = sorted(FORENSICS.glob("__consumer_offsets-*/*.log"))
    text = "".join(run("dump", "--offsets-decoder", str(p)).stdout for p in logs)
    assert "payload: <DELETE>" in text


def test_dump_read_committed_hides_aborted_and_stops_at_the_lso():
    log = FORENSICS / "payments.hanging-0" / "00000000000000000000.log"
    everything = jsonl(run("dump", "--deep", "--format", "jsonl", str(log)))
    committed = jsonl(run("dump", "--deep", "--read-committed", "--format", "jsonl", str(log)))
    all_offsets = [x["offset"] for x in everything if x["type"] == "record"]
    seen = [x["offset"] for x in committed if x["type"] == "record"]
    assert set(seen) < set(all_offsets)
    assert not [x for x in committed if x["type"] == "batch" and x["is_control"]]
    assert max(seen) < 8  # the hanging transaction pins the last stable offset at 8


def test_max_decompressed_bytes_turns_a_big_batch_into_a_finding():
    log = SAMPLE / "big-value-0" / "00000000000000000000.log"  # a 1 MiB value, zstd
    run("dump", "--deep", str(log), check_code=0)
    lines = jsonl(run("dump", "--deep", "--format", "jsonl", "--max-decompressed-bytes",
                      "65536", str(log), check_code=1))
    assert [f["code"] for f in lines if f["type"] == "finding"] == ["corrupt_compressed_payload"]
    run("verify", "--deep", "--max-decompressed-bytes", "65536", str(log.parent), check_code=1)
    run("dump", "--max-decompressed-bytes", "0", str(log), check_code=2)


def test_the_command_table_matches_each_commands_parser():
    """``segtools --help`` lists commands from a table (their modules load only when run):
    every line there must be what the command's own parser says."""
    import argparse

    from segtools.cli.main import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = {c.dest: c.help for c in sub._choices_actions}
    assert list(sub.choices) == list(COMMANDS)
    assert listed == {name: line for name, (_, line) in COMMANDS.items()}


def test_help_loads_no_command_module():
    """Start-up: ``segtools --help`` imports neither the commands nor numpy."""
    code = ("import sys, contextlib, io\n"
            "from segtools.cli.main import main\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('segtools.cli.') or m in "
            "('numpy', 'rich', 'pyarrow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['segtools.cli.common', 'segtools.cli.helptext', 'segtools.cli.main']"
