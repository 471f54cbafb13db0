"""``--schemas DIR``: a directory of schema files with imports between them, resolved by name,
decodes the Kafka-written payloads of the fixture tree as its ``_schemas`` topic does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import segtools
from segtools.cli.schemas import _schema_text
from segtools.errors import SegtoolsError
from segtools.payloads import schema_files
from segtools.payloads.schema_files import avro_names, proto_imports, read_directory
from segtools.payloads.schemas import LATEST, SchemaReference

pytest.importorskip("fastavro")

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "fixtures" / "logdirs" / "payloads"
COLUMNS = ("offset", "value_decoded", "value_schema_id", "value_payload_error")


@pytest.fixture(scope="module")
def history():
    """The registrations as the fixture's _schemas topic holds them (Kafka-written)."""
    return segtools.open(TREE).schema_history()


def rows(topic: str, **options) -> list[tuple]:
    table = segtools.open(TREE).to_arrow(decode=True, topics=topic, **options).read_all()
    return list(zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True))


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_imports_resolved_by_path_and_by_type_name(tmp_path, history):
    """An export by id (``<id>.avsc``, ``<id>.proto``) beside the files they import in protoc's
    layout (``shop/common/address.proto``) and an ``.avsc`` of the referenced type: the
    orders' Avro (which uses ``shop.Money``) and the customers' Protobuf (which imports the
    address) decode to what the topic's registrations give, record for record."""
    by_id = {v.id: v.schema for v in history}
    root = write(tmp_path, {"2.avsc": by_id[2], "3.avsc": by_id[3], "5.proto": by_id[5],
                            "types/money.avsc": by_id[1],
                            "shop/common/address.proto": by_id[4]})
    for topic in ("orders", "customers"):
        expected = rows(topic)
        assert all(r[3] is None for r in expected)
        assert rows(topic, schemas=[root]) == expected
    refs = {v.id: v.references for v in read_directory(root)}
    assert refs[2] == refs[3] == (SchemaReference("shop.Money", "shop.Money", 1),)
    assert refs[5] == (SchemaReference("shop/common/address.proto",
                                       "shop/common/address.proto", 1),)


def test_imports_resolved_as_reference_subjects(tmp_path, history):
    """The subjects Confluent's serializers register references under by default (the
    reference's name: ``shop.Money``, ``shop/common/address.proto``), as
    ``<subject>/<version>`` files; the latest version is the one used. Through the command
    line, as a user runs it."""
    by_id = {v.id: v.schema for v in history}
    older = json.loads(by_id[1])  # an older Money (v1) whose layout the bodies do not have
    older["fields"].append({"name": "note", "type": "string", "default": ""})
    root = write(tmp_path, {"2.avsc": by_id[2], "3.avsc": by_id[3], "5.proto": by_id[5],
                            "shop.Money/1.avsc": json.dumps(older),
                            "shop.Money/2.avsc": by_id[1],
                            "shop/common/address.proto/1.proto": by_id[4]})
    done = subprocess.run([sys.executable, "-m", "segtools.cli.main", "dump", "--decode",
                           "--schemas", str(root), "--format", "jsonl", "-q",
                           *(str(TREE / f"{t}-0" / "00000000000000000000.log")
                             for t in ("orders", "customers"))],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # no finding
    records = [json.loads(line) for line in done.stdout.splitlines()]
    decoded = [r["value_decoded"] for r in records if r["type"] == "record"]
    expected = [json.loads(r[1]) for t in ("orders", "customers") for r in rows(t)]
    assert decoded == expected and len(decoded) == 16


def test_missing_and_ambiguous_imports_are_reference_findings(tmp_path, history):
    """An import no file satisfies, or a type two different files define, is not guessed: it
    is a reference to the subject of that name, missing here (``payload_reference_missing``)."""
    by_id = {v.id: v.schema for v in history}
    other = json.loads(by_id[1])
    other["fields"].reverse()
    root = write(tmp_path, {"3.avsc": by_id[3], "5.proto": by_id[5],
                            "a/money.avsc": by_id[1], "b/money.avsc": json.dumps(other)})
    found = {v.id: v for v in read_directory(root)}
    assert found[3].references == (SchemaReference("shop.Money", "shop.Money", LATEST),)
    assert _schema_text(found[3]).endswith("references shop.Money -> shop.Money latest")
    for topic in ("orders", "customers"):
        errors = {r[3] for r in rows(topic, schemas=[root]) if r[0] >= 4 or topic != "orders"}
        assert errors == {"payload_reference_missing"}


def test_avro_names_and_proto_imports():
    names = avro_names(json.dumps({
        "type": "record", "name": "Order", "namespace": "shop", "fields": [
            {"name": "total", "type": "Money"},
            {"name": "lines", "type": {"type": "array", "items": {
                "type": "record", "name": "Line", "namespace": "shop.lines",
                "fields": [{"name": "sku", "type": "Sku"}]}}},
            {"name": "seen", "type": ["null", "shop.Line2", {"type": "map", "values": "long"}]},
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A"]}},
            {"name": "again", "type": "Kind"}]}))
    assert names.top == "shop.Order"
    assert names.missing() == ("shop.Money", "shop.lines.Sku", "shop.Line2")
    assert avro_names("[" * 100_000) is None and avro_names("{") is None
    text = ('syntax = "proto3";\n// import "commented/out.proto";\n/* import "x.proto"; */\n'
            'import "google/protobuf/timestamp.proto";\nimport public "a/b.proto";\n'
            'import weak "c.proto"; import "confluent/meta.proto";\nimport "a/b.proto";\n')
    assert proto_imports(text) == ("a/b.proto", "c.proto")


def test_a_huge_or_not_utf8_schema_file_is_an_error_naming_it(tmp_path, monkeypatch):
    """A schema file was read whole whatever its size, and bytes that are not UTF-8 were
    replaced (the schema then compiled under a name the file does not hold)."""
    (tmp_path / "notes.json").write_bytes(b"\xff" * 64)  # not a schema's: never read
    (tmp_path / "1.avsc").write_bytes(b'{"type":"record","name":"R\xff","fields":[]}')
    with pytest.raises(SegtoolsError, match=r"not UTF-8 text \(byte 0xff at 26\)") as e:
        read_directory(tmp_path)
    assert e.value.path == str(tmp_path / "1.avsc")
    monkeypatch.setattr(schema_files, "MAX_SCHEMA_FILE_BYTES", 64)
    (tmp_path / "1.avsc").write_text('{"type":"record","name":"R","doc":"' + "x" * 64 +
                                     '","fields":[]}')
    with pytest.raises(SegtoolsError, match="not a schema file"):
        read_directory(tmp_path)


def test_a_chain_of_custody_lists_the_schema_files_read(tmp_path, history):
    """``--hashes`` lists every file a run read: the schema files of ``--schemas DIR`` too,
    with the hash of what was read (they decide what each value decodes to)."""
    import hashlib

    by_id = {v.id: v.schema for v in history}
    root = write(tmp_path / "schemas", {"2.avsc": by_id[2], "3.avsc": by_id[3],
                                        "types/money.avsc": by_id[1]})
    done = subprocess.run(
        [sys.executable, "-m", "segtools.cli.main", "dump", "--decode", "--schemas", str(root),
         "--hashes", "--format", "jsonl", "-q",
         str(TREE / "orders-0" / "00000000000000000000.log")],
        capture_output=True, text=True, cwd=ROOT, check=True)
    custody = {r["path"]: r for r in map(json.loads, done.stdout.splitlines())
               if r["type"] == "custody"}
    for name in ("2.avsc", "3.avsc", "types/money.avsc"):
        read = custody[str(root / name)]
        assert read["sha256"] == hashlib.sha256((root / name).read_bytes()).hexdigest()


def test_an_empty_schemas_location_is_an_error_not_the_current_directory(tmp_path):
    """``--schemas ""`` (an unset variable) once searched the current directory for every
    ``_schemas`` copy below it and merged them: now one line and exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "segtools.cli.main", "dump", "--decode", "--schemas", "",
         str(TREE / "orders-0" / "00000000000000000000.log")],
        capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "empty schemas location" in done.stderr
