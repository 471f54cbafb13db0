"""The report's samples decoded with the schemas ``dump --decode`` is given (``--schemas``,
``--schema-registry``, ``--decode MODE``): the same values, each schema's source named in the
schemas section, the same error line for a source that cannot be read, and redaction hiding
what a redacted value decodes to. The tree read holds no ``_schemas`` topic: two partitions of
the payloads tree, whose schemas live elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import segtools
from segtools.payloads.sources import gather
from segtools.report.model import build
from segtools.text import shown_path
from tests.fixtures_manifest import FIXTURES
from tests.payloads.registry import serving
from tests.report.conftest import ROOT, write_report
from tests.report.test_report import embedded

PAYLOADS = FIXTURES / "logdirs" / "payloads"
STORE = PAYLOADS / "_schemas-0"  # another tree's _schemas topic: not on the disk read
SHOWN = shown_path(str(STORE))  # as the page names it
TOPICS = ("orders", "customers")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("elsewhere") / "kafka-logs"
    for topic in TOPICS:
        shutil.copytree(PAYLOADS / f"{topic}-0", root / f"{topic}-0")
    return root


def report(tree, out, *argv: str) -> tuple[str, dict]:
    """What the report said and the document its page carries (every sample decodes: no
    finding beyond the info that a copied log dir has no meta.properties)."""
    code, said = write_report(str(tree), "-o", str(out), "-q", *argv)
    assert code == 0, said
    return said, embedded(out.read_text())


def samples(data: dict, topic: str) -> list[dict]:
    (row,) = [r for r in data["partitions"] if r["topic"] == topic]
    return row["detail"]["samples"]["first"] + row["detail"]["samples"]["last"]


def dumped(tree, topic: str, *argv: str) -> dict[int, dict]:
    """``segtools dump --decode ARGV`` of the topic's segment: its records by offset."""
    done = subprocess.run([sys.executable, "-m", "segtools.cli.main", "dump", "--decode", *argv,
                           "--format", "jsonl", "-q",
                           str(tree / f"{topic}-0" / "00000000000000000000.log")],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return {r["offset"]: r for r in rows if r["type"] == "record"}


def assert_shown_as_dumped(sample: dict, record: dict) -> int:
    """The sample's decoded sides are the dump's (the report cuts a long one to its preview);
    how many sides were decoded."""
    decoded = 0
    for side in ("key", "value"):
        assert sample.get(f"{side}_schema") == record.get(f"{side}_schema"), side
        if f"{side}_decoded" not in record:
            assert f"{side}_decoded" not in sample, side
            continue
        shown = sample[f"{side}_decoded"]
        whole = json.dumps(record[f"{side}_decoded"], ensure_ascii=False, separators=(",", ":"))
        if shown.endswith("…"):
            assert whole.startswith(shown[:-1]) and len(shown) > 10, side
        else:
            assert json.loads(shown) == record[f"{side}_decoded"], side
        decoded += 1
    return decoded


@pytest.mark.parametrize("mode", [[], ["--decode", "string:schema"]], ids=["schema", "pair"])
def test_samples_decode_with_named_schemas_as_dump_shows_them(tree, tmp_path, mode):
    said, data = report(tree, tmp_path / "r.html", *mode, "--schemas", str(STORE))
    assert "schemas: 7 version(s) from _schemas in" in said  # said once, as dump says it
    for topic in TOPICS:
        records = dumped(tree, topic, *mode, "--schemas", str(STORE))
        shown = samples(data, topic)
        assert shown
        decoded = sum(assert_shown_as_dumped(s, records[s["offset"]]) for s in shown)
        assert decoded == len(shown) * (2 if mode else 1)  # every value; with string:, keys
    section = data["schemas"]
    assert section["sources"] == [{"where": SHOWN, "versions": 7}]
    orders = {t["topic"]: t for t in section["topics"]}["orders"]
    assert {v["where"] for v in orders["timeline"]} == {SHOWN}
    assert [(u["schema_id"], u["subject"], u["where"]) for u in orders["usage"]
            if u["side"] == "value"] == [(2, "orders-value", SHOWN), (3, "orders-value", SHOWN)]


def test_samples_decode_with_a_registry_as_dump_shows_them(tree, tmp_path):
    """Basic auth from the URL goes to the registry, and nowhere on the page or stderr."""
    (history,) = gather([STORE], []).histories()
    with serving(history) as registry:
        url = registry.url.replace("http://", "http://alice:s3cret@")
        said, data = report(tree, tmp_path / "r.html", "--schema-registry", url)
        records = dumped(tree, "orders", "--schema-registry", url)
    shown = samples(data, "orders")
    assert sum(assert_shown_as_dumped(s, records[s["offset"]]) for s in shown) == len(shown)
    assert {auth for _, _, auth in registry.heard} == {"Basic YWxpY2U6czNjcmV0"}
    page = (tmp_path / "r.html").read_text()
    assert "s3cret" not in page and "s3cret" not in said and "alice" not in page
    section = data["schemas"]
    assert section["sources"] == [{"where": registry.url, "versions": None}]
    usage = {t["topic"]: t for t in section["topics"]}["orders"]["usage"]
    assert ("value", 3, "orders-value", registry.url) in {
        (u["side"], u["schema_id"], u["subject"], u["where"]) for u in usage}


@pytest.mark.parametrize("argv, error", [
    (["--schemas", "{tmp}/gone"], "{tmp}/gone: no such file or directory"),
    (["--schema-registry", "ftp://registry"], "ftp://registry: a schema registry URL is "
                                              "http://HOST[:PORT] or https://..."),
    (["--decode", "string:bogus"], "--decode: "),
], ids=["schemas", "registry", "mode"])
def test_a_source_that_cannot_be_read_is_dump_s_error_line(tree, tmp_path, argv, error):
    out = tmp_path / "r.html"
    code, said = write_report(str(tree), "-o", str(out), "-q",
                              *(a.format(tmp=tmp_path) for a in argv))
    assert code == 2 and not out.exists()
    assert said.startswith(f"segtools: error: {error.format(tmp=tmp_path)}")
    assert said.count("\n") == 1 and "Traceback" not in said


def test_redaction_hides_what_values_decode_to(tree, tmp_path):
    _, data = report(tree, tmp_path / "r.html", "--schemas", str(STORE),
                     "--redact", "values,topics", "--redact-key", "k")
    page = (tmp_path / "r.html").read_text()
    for inside_values in ("order_id", "placed_at", "Customer 0", "Gent", "SKU-100"):
        assert inside_values not in page
    assert "orders-value" not in page  # the subject names the topic
    shown = [s for row in data["partitions"] for s in row["detail"]["samples"]["first"]]
    assert len(shown) == 2 * 3
    for s in shown:
        assert s["value"].startswith("value.") and "value_decoded" not in s


def test_the_python_face_builds_the_same_report(tree):
    """``build(decoder=logs.payload_decoder(schemas=...))``: the samples decode as the API's
    ``to_arrow(decode=True, schemas=...)`` rows (one decoder, every face)."""
    logs = segtools.open(tree)
    model = build([str(tree)], logs=logs, decoder=logs.payload_decoder(schemas=[STORE]))
    data = {**model.data, "partitions": [{**r, "detail": model.detail(r["id"])}
                                         for r in model.data["partitions"]]}
    rows = segtools.open(tree).to_arrow(decode=True, schemas=[STORE], topics="customers")
    table = rows.read_all()
    by_offset = dict(zip(table.column("offset").to_pylist(),
                         table.column("value_decoded").to_pylist(), strict=True))
    shown = samples(data, "customers")
    assert shown
    for s in shown:
        whole = by_offset[s["offset"]]
        assert whole.startswith(s["value_decoded"].removesuffix("…"))
    assert data["schemas"]["sources"] == [{"where": SHOWN, "versions": 7}]


def test_a_redacted_topic_has_one_token_on_the_whole_page(tree, tmp_path):
    """The schemas section names each topic and subject with the token the partitions' rows
    and ``dump`` give it under the same key (it was redacted twice: a token of the token)."""
    _, data = report(tree, tmp_path / "t.html", "--schemas", str(STORE),
                     "--redact", "topics", "--redact-key", "k")
    tokens = {r["topic"] for r in data["partitions"]}
    assert len(tokens) == len(TOPICS) and all(t.startswith("topic.") for t in tokens)
    section = data["schemas"]["topics"]
    assert tokens <= {t["topic"] for t in section}  # the store names other topics too
    for t in section:
        subjects = {v["subject"] for v in t["timeline"]} | {
            u["subject"] for u in t["usage"] if u["subject"] is not None}
        assert subjects and subjects <= {t["topic"] + "-key", t["topic"] + "-value"}
    done = subprocess.run([sys.executable, "-m", "segtools.cli.main", "dump", "--format",
                           "jsonl", "-q", "--redact", "topics", "--redact-key", "k",
                           str(tree / "orders-0" / "00000000000000000000.log")],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    (named,) = [json.loads(line)["path"] for line in done.stdout.splitlines()
                if json.loads(line)["type"] == "file"]
    assert named.split("/")[-2].removesuffix("-0") in tokens
