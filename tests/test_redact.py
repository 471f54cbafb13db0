"""Redaction (segtools/redact.py) and ``segtools dump --redact``: tokens hide the bytes but keep
equality visible, a given key makes them stable, and no original byte reaches the output."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from segtools.errors import SegtoolsError
from segtools.findings import Finding, Severity
from segtools.model import Record
from segtools.redact import redactor
from tests.fixtures_manifest import SAMPLE

COMPACT_LOG = SAMPLE / "payments-compact-0" / "00000000000000000000.log"


def segtools(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "segtools.cli.main", *argv],
                          capture_output=True, text=True, check=False)


def test_same_bytes_same_token_and_kinds_are_separated():
    r = redactor("keys,values,headers")
    assert r.key(b"user-1") == r.key(b"user-1") != r.key(b"user-2")
    assert r.key(b"same") != r.value(b"same")
    assert r.key(None) is None and r.value(None) is None
    assert r.key(b"user-1").startswith(b"key.") and r.key(b"user-1").isascii()
    assert r.topic("orders") == "orders"  # topics were not asked for


def test_a_given_key_makes_tokens_stable_and_a_random_one_does_not():
    assert redactor("keys", "k1").key(b"x") == redactor("keys", "k1").key(b"x")
    assert redactor("keys", "k1").key(b"x") != redactor("keys", "k2").key(b"x")
    assert redactor("keys").key(b"x") != redactor("keys").key(b"x")


def test_records_keep_control_records_and_redact_header_keys_and_values():
    r = redactor("keys,values,headers")
    rec = r.record(Record(5, 0, b"k", b"v", (("trace", b"abc"), ("none", None))))
    assert rec.key.startswith(b"key.") and rec.value.startswith(b"value.")
    (k1, v1), (k2, v2) = rec.headers
    assert k1.startswith("header.") and v1.startswith(b"header.") and v2 is None
    assert k1 != k2


def test_topics_in_paths_and_text_as_whole_words():
    r = redactor("topics")
    r.learn(["orders", "__consumer_offsets"])
    token = r.topic("orders")
    assert r.path("/data/orders-3/00000000000000000000.log") == \
        f"/data/{token}-3/00000000000000000000.log"
    assert r.path("/data/orders-3.0123456789abcdef0123456789abcdef-delete") == \
        f"/data/{token}-3.0123456789abcdef0123456789abcdef-delete"
    assert r.text("partition orders-3 of orders, not orders.v2") == \
        f"partition {token}-3 of {token}, not orders.v2"
    assert r.topic("__consumer_offsets") == "__consumer_offsets"
    f = r.finding(Finding("crc_mismatch", Severity.ERROR, "/d/orders-0/0.log", "in orders"))
    assert f.path == f"/d/{token}-0/0.log" and f.message == f"in {token}"


@pytest.mark.parametrize("bad", ["", "keys,passwords", "KEYS"])
def test_unknown_kinds_are_refused(bad):
    with pytest.raises(SegtoolsError, match="redaction kind"):
        redactor(bad)


def test_a_key_without_redact_is_refused():
    with pytest.raises(SegtoolsError, match="--redact-key needs --redact"):
        redactor(None, "k")


def test_dump_redacts_every_key_and_value_and_keeps_reuse_visible():
    plain = segtools("dump", "--deep", "--format", "jsonl", str(COMPACT_LOG))
    redacted = segtools("dump", "--deep", "--format", "jsonl", "--bytes", "utf8",
                        "--redact", "keys,values,headers,topics", str(COMPACT_LOG))
    assert redacted.returncode == plain.returncode
    before = [json.loads(line) for line in plain.stdout.splitlines()]
    after = [json.loads(line) for line in redacted.stdout.splitlines()]
    assert after[0]["type"] == "redaction" and after[0]["kinds"] == \
        ["headers", "keys", "topics", "values"]
    records = [(b, a) for b, a in zip([o for o in before if o["type"] == "record"],
                                      [o for o in after if o["type"] == "record"], strict=True)]
    assert records
    for b, a in records:
        assert b["offset"] == a["offset"]
        assert (b["key"] is None) == (a["key"] is None)
        assert (b["value"] is None) == (a["value"] is None)  # tombstones stay visible
        assert a["key"] is None or a["key"].startswith("key.")
    keys_before = {b["key"] for b, _ in records}
    keys_after = {a["key"] for _, a in records}
    assert len(keys_before) == len(keys_after)  # same key, same token
    for b, _ in records:
        for field in ("key", "value"):
            if b[field]:
                assert base64.b64decode(b[field]).decode("utf-8", "replace") \
                    not in redacted.stdout
    assert "payments-compact" not in redacted.stdout


def test_dump_refuses_redaction_with_a_decoder():
    proc = segtools("dump", "--offsets-decoder", "--redact", "keys", str(COMPACT_LOG))
    assert proc.returncode == 2
    assert proc.stderr.startswith("segtools: error:") and "decoder" in proc.stderr
