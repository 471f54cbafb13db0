"""The forensic commands end to end, as an operator runs them: ``.venv/bin/segtools ...``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics import FORENSICS, REPLICAS

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([SEGTOOLS, *argv], capture_output=True, text=True, timeout=120)


def json_lines(out: str) -> list[dict]:
    objs = [json.loads(line) for line in out.splitlines()]
    assert all(next(iter(o)) == "type" for o in objs)  # docs/architecture.md §3: "type" first
    return objs


def test_offsets_text_shows_the_reset():
    p = run("offsets", str(FORENSICS))
    assert p.returncode == 1, p.stderr  # an offset regression was found
    assert "billing  orders.v2-eu-0: 240 -> 0 (-240); group Empty, generation 2" in p.stdout
    assert "2023-11-20T09:07:30.000Z" in p.stdout
    assert "analytics  payments-compact-0 (was 60)" in p.stdout
    assert p.stderr == ""


def test_offsets_json_history_and_at():
    p = run("offsets", str(FORENSICS), "--history", "--topic", "orders.v2-eu", "--partition",
            "0", "--format", "json")
    objs = json_lines(p.stdout)
    commits = [o["offset"] for o in objs if o["type"] == "offset_commit"]
    assert commits == [50, 100, 150, 200, 240, 0, 30, 60]
    (reg,) = [o for o in objs if o["type"] == "offset_regression"]
    assert (reg["group"], reg["previous_offset"], reg["offset"], reg["timestamp"]) == (
        "billing", 240, 0, 1_700_471_250_000)
    p = run("offsets", str(FORENSICS), "--group", "billing", "--at", "2023-11-20T09:07:00Z",
            "--format", "json")
    assert p.returncode == 0
    offsets = {o["partition"]: o["offset"] for o in json_lines(p.stdout)
               if o["type"] == "committed_offset"}
    assert offsets == {0: 240, 1: 200}


def test_transactions_reports_the_hanging_transaction():
    p = run("transactions", str(FORENSICS))
    assert p.returncode == 1
    assert ("HANGING: producer 5001 epoch 0 (transactional.id payments-hanging-tx): first "
            "offset 8") in p.stdout
    assert "pins the last stable offset at 8 (22 offsets held back)" in p.stdout
    p = run("transactions", str(FORENSICS / "payments.hanging-0"), "--format", "json")
    objs = json_lines(p.stdout)
    (h,) = [o for o in objs if o["type"] == "hanging_transaction"]
    assert (h["producer_id"], h["first_offset"], h["last_stable_offset"],
            h["offsets_held_back"]) == (5001, 8, 8, 22)
    assert [o["code"] for o in objs if o["type"] == "finding"] == ["hanging_transaction"]


def test_transactions_clean_partition_exits_zero():
    sample = FORENSICS.parent / "sample" / "payments.txn-0"
    p = run("transactions", str(sample), "--format", "json")
    assert p.returncode == 0, p.stdout
    summary = next(o for o in json_lines(p.stdout) if o["type"] == "partition_transactions")
    assert (summary["committed"], summary["aborted"], summary["open"]) == (3, 2, 0)


def test_metadata_timeline_and_records():
    p = run("metadata", str(FORENSICS), "--topic", "orders.v2-eu")
    assert p.returncode == 0, p.stderr
    assert "partition orders.v2-eu-9: isr [2,1] -> [2]; leader 1 -> 2 (leader epoch 2" \
        in p.stdout
    assert "config topic orders.v2-eu: retention.ms=86400000 (was 604800000)" in p.stdout
    p = run("metadata", str(FORENSICS / "__cluster_metadata-0"), "--records", "--format",
            "json")
    objs = json_lines(p.stdout)
    assert len(objs) == 189  # every record of the log, NoOps included
    assert objs[0]["type"] == "control_record" and objs[0]["record"] == "LeaderChangeMessage"


def test_metadata_state_json():
    p = run("metadata", str(FORENSICS), "--format", "json", "--at", "1700384400000")
    state = json_lines(p.stdout)[-1]
    assert state["type"] == "metadata_state"
    orders = next(t for t in state["topics"] if t["topic"] == "orders.v2-eu")
    assert orders["configs"] == {"retention.ms": "86400000", "segment.bytes": "65536"}


def test_diverge():
    p = run("diverge", str(REPLICAS / "broker1" / "orders.v2-eu-9"),
            str(REPLICAS / "broker2" / "orders.v2-eu-9"))
    assert p.returncode == 1
    assert "FIRST DIFFERENCE at offset 40" in p.stdout
    assert "only on broker1: 40..44 (leader epoch 1;" in p.stdout
    assert "broker1 (latest epoch 1) would truncate to 40" in p.stdout
    p = run("diverge", str(REPLICAS), "--format", "json")
    (d,) = [o for o in json_lines(p.stdout) if o["type"] == "divergence"]
    assert (d["first_difference_offset"], d["presumed_leader"]) == (40, "broker2")


@pytest.mark.parametrize("argv", [
    ["offsets", "/nonexistent/kafka-logs"],
    ["offsets", str(FORENSICS / "payments.hanging-0")],
    ["metadata", str(FORENSICS / "payments.hanging-0")],
    ["diverge", str(REPLICAS / "broker1")],
    ["offsets", str(FORENSICS), "--at", "yesterday"],
])
def test_usage_errors_are_one_line_exit_2(argv):
    p = run(*argv)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.strip().splitlines()[-1].startswith("segtools: error: ")
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_offsets_anomalies_spooled_a_few_lines_at_a_time(fmt, monkeypatch, capsys):
    """The anomalies reach their spools in batches of lines: with batches of one line or
    two, the answer is the one written line by line would be."""
    from segtools.cli import offsets as page
    from segtools.cli.main import main

    def answer() -> str:
        assert main(["offsets", "-q", "--format", fmt, str(FORENSICS)]) == 1
        return capsys.readouterr().out

    expected = answer()
    assert "regression" in expected
    for lines in (1, 2):
        monkeypatch.setattr(page, "SPOOL_LINES", lines)
        assert answer() == expected
