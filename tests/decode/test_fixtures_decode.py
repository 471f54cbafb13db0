"""Every Kafka-written fixture decodes to exactly what Kafka's own reader returned.

The expectations were dumped by ``FileRecords.batches()`` / ``RecordBatch`` iteration in the
fixture generator (fixtures/java/Dumper.java): every batch field of docs/json-contract.md and every
record's offset, timestamp, key, value, headers, sequence and control marker. No fixture gets
a special case here.
"""

from __future__ import annotations

import json

import pytest

from segtools.cli.main import main
from tests.fixtures_manifest import LOGS, expected_lines, log_path


def dump_jsonl(capsys, path) -> tuple[int, list[dict]]:
    code = main(["dump", "--deep", "--format", "jsonl", "--bytes", "base64", str(path)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return code, lines


@pytest.mark.parametrize("entry", LOGS, ids=[e["case"] for e in LOGS])
def test_decodes_exactly_as_kafka(entry, capsys):
    _, lines = dump_jsonl(capsys, log_path(entry))
    ours = [line for line in lines if line["type"] in ("batch", "record")]
    theirs = [line for line in expected_lines(entry) if line["type"] in ("batch", "record")]
    assert len(ours) == len(theirs)
    for mine, kafka in zip(ours, theirs, strict=True):
        assert mine == kafka


@pytest.mark.parametrize("entry", LOGS, ids=[e["case"] for e in LOGS])
def test_findings_match_what_kafka_saw(entry, capsys):
    code, lines = dump_jsonl(capsys, log_path(entry))
    findings = [line for line in lines if line["type"] == "finding"]
    torn = [f["position"] for f in findings if f["code"] == "truncated_tail"]
    crc = [f["position"] for f in findings if f["code"] == "crc_mismatch"]
    assert torn == ([entry["torn_tail_position"]] if entry["torn_tail_position"] is not None
                    else [])
    assert crc == entry["corrupt_batch_positions"]
    bad = [f for f in findings if f["severity"] != "info"]
    assert code == (1 if bad else 0)
    assert sum(1 for line in lines if line["type"] == "batch") == entry["batches"]
