"""The payload room on the Kafka-written payloads tree: the _schemas replay, each wire format,
every hostile payload's finding, and the faces (CLI, API) agreeing on every fixture topic."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import segtools
from segtools.findings import REGISTRY
from segtools.payloads import framing
from segtools.payloads.decoder import Modes, PayloadDecoder
from segtools.payloads.errors import PayloadError
from segtools.payloads.schemas import RegisteredSchema, SchemaReference, Schemas
from segtools.payloads.schemas_topic import StoreRecord, replay
from segtools.payloads.sources import gather
from tests.payloads.registry import serving

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "fixtures" / "logdirs" / "payloads"
TOPICS = ("orders", "customers", "events", "payloads.hostile")


@pytest.fixture(scope="module")
def chain():
    findings: list = []
    found = gather([TREE], findings)
    assert findings == []
    return found


def segment(topic: str) -> Path:
    return TREE / f"{topic}-0" / "00000000000000000000.log"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "segtools.cli.main", *args],
                          capture_output=True, text=True, cwd=ROOT, check=False)


# ------------------------------------------------------------------ framing


@pytest.mark.parametrize("indexes", [(0,), (1,), (0, 0), (3, 70, 2)])
def test_message_indexes_round_trip(indexes):
    data = framing.write_message_indexes(indexes) + b"body"
    assert framing.read_message_indexes(data, 0) == (indexes, len(data) - 4)


def test_first_message_is_one_zero_byte():
    assert framing.write_message_indexes((0,)) == b"\x00"
    assert framing.frame(5, b"x", (0,)) == b"\x00\x00\x00\x00\x05\x00x"


@pytest.mark.parametrize("data", [b"", b"\x01\x00\x00\x00\x01", b"\x00\x00"])
def test_not_a_frame(data):
    with pytest.raises(framing.FrameError):
        framing.read_frame(data)


# ------------------------------------------------------------------ the _schemas replay


def test_schemas_history(chain):
    (history,) = chain.histories()
    got = {(v.subject, v.version): (v.id, v.schema_type, v.deleted) for v in history}
    assert got == {("money", 1): (1, "AVRO", False), ("orders-value", 1): (2, "AVRO", False),
                   ("orders-value", 2): (3, "AVRO", False),
                   ("address", 1): (4, "PROTOBUF", False),
                   ("customers-value", 1): (5, "PROTOBUF", False),
                   ("events-value", 1): (6, "JSON", False),
                   ("legacy-value", 1): (7, "AVRO", True)}
    assert [(v.subject, v.id) for v in history.removed] == [("scratch-value", 8)]
    assert history.hard_deleted(8) and not history.hard_deleted(7)
    assert history.compatibility("orders-value") == "FULL"
    assert history.compatibility("events-value") == "BACKWARD"
    legacy = history.by_subject_version("legacy-value", 1)
    # the soft delete keeps the registration's time, not the delete's
    assert legacy.registered_ms < history.by_subject_version("orders-value", 2).registered_ms
    assert history.latest("orders-value").version == 2


def test_undecodable_store_record_is_a_finding():
    findings: list = []
    records = [StoreRecord(0, 1, b"not json", b"{}"),
               StoreRecord(1, 2, b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}',
                           b'{"subject":"s","version":1,"id":9,"schema":"\\"string\\""}')]
    got = replay(records, "x", findings)
    assert [f.code for f in findings] == ["schemas_record_undecodable"]
    assert got.by_id(9).schema_type == "AVRO"


def test_store_records_the_registry_would_not_read_are_findings():
    """Java Integer ids and versions, a Boolean deleted flag, an enum's name as a setting:
    an id past 32 bits, a deleted of "yes" and a compatibility of {"x": 1} were taken (a
    registration under id 2^40, a soft delete, a cleared setting)."""
    key = b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    bad = [b'{"subject":"s","version":1,"id":1099511627776,"schema":"\\"int\\""}',
           b'{"subject":"s","version":1,"id":true,"schema":"\\"int\\""}',
           b'{"subject":"s","version":1,"id":9,"schema":"\\"int\\"","deleted":"yes"}']
    records = [StoreRecord(i, i, key, value) for i, value in enumerate(bad)]
    records.append(StoreRecord(3, 3, b'{"keytype":"CONFIG","subject":null,"magic":0}',
                               b'{"compatibilityLevel":{"x":1}}'))
    findings: list = []
    got = replay(records, "x", findings)
    assert [f.offset for f in findings] == [0, 1, 2, 3]
    assert len(got) == 0 and got.configs == []


# ------------------------------------------------------------------ decoding, per format


def decoded_values(chain, topic: str, mode: str = "schema") -> list:
    logs = segtools.open(TREE)
    decoder = PayloadDecoder(chain, Modes.parse(mode))
    out = []
    for r in logs.records(topics=topic):
        try:
            found = decoder.decode(r["value"], topic=topic, is_key=False)
            out.append((found.value, found.schema.to_json()) if found else None)
        except PayloadError as e:
            out.append(e.code)
    return out


def test_avro_with_reference_evolution_and_logical_types(chain):
    got = decoded_values(chain, "orders")
    first, schema = got[0]
    assert schema == {"id": 2, "subject": "orders-value", "version": 1, "type": "AVRO"}
    assert first["total"] == {"amount": "12.00", "currency": "EUR"}
    assert first["placed_at"] == "2024-05-01T14:00:00Z" and first["ship_on"] == "2024-05-02"
    last, schema = got[-1]
    assert schema["version"] == 2 and schema["id"] == 3
    assert last["request_id"] == "00000000-0000-4000-8000-000000000007"
    assert last["shipped_at"] == "2024-05-03T09:30:00.123456Z"
    assert last["checksum"] == "BwgJCg==" and last["note"] is None


def test_protobuf_two_messages_import_and_well_known_type(chain):
    got = decoded_values(chain, "customers")
    customer, schema = got[0]
    assert schema["message"] == "shop.Customer" and schema["type"] == "PROTOBUF"
    assert customer["customer_id"] == "9007199254740993"  # int64 as a string (proto3 JSON)
    assert customer["tier"] == "FREE" and customer["address"]["city"] == "Gent"
    assert customer["since"] == "2024-04-30T14:00:00Z"
    shipment, schema = got[1]
    assert schema["message"] == "shop.Shipment" and shipment["carrier"] == "dhl"


def test_json_schema(chain):
    value, schema = decoded_values(chain, "events")[0]
    assert schema["type"] == "JSON" and value["event"] == "click"


def test_hostile_payloads_are_findings(chain):
    got = decoded_values(chain, "payloads.hostile")
    assert got[0] == "payload_unknown_schema_id"
    assert got[1] == "payload_body_mismatch"
    assert got[2] == "payload_unknown_magic"
    assert got[3] == "payload_frame_truncated"
    assert got[4] == "payload_schema_hard_deleted"
    assert got[5][0] == {"text": "still readable"}  # soft-deleted: still served by id
    assert got[6] == got[7] == "payload_body_mismatch"
    for code in got:
        if isinstance(code, str):
            assert code in REGISTRY


def test_unframed_only_when_asked(chain):
    assert decoded_values(chain, "plain") == ["payload_unknown_magic"] * 4
    got = decoded_values(chain, "plain", "auto")
    assert [s["type"] for _, s in got] == ["JSON_TEXT", "STRING", "JSON_TEXT", "STRING"]
    decoder = PayloadDecoder(chain, Modes.parse("long:uuid"))
    assert decoder.decode((1000).to_bytes(8, "big"), topic="plain", is_key=True).value == 1000


def schemas_of(*versions: RegisteredSchema) -> Schemas:
    return Schemas(list(versions))


def error_of(lookup, data: bytes) -> str:
    with pytest.raises(PayloadError) as e:
        PayloadDecoder(lookup).decode(data, topic="t", is_key=False)
    return e.value.code


def test_self_reference_hostile_text_and_missing_reference():
    looped = RegisteredSchema(1, "a", 1, "AVRO", '"string"', (SchemaReference("x", "a", 1),))
    assert error_of(schemas_of(looped), framing.frame(1, b"\x02a")) == "payload_schema_invalid"
    cycle = schemas_of(
        RegisteredSchema(1, "a", 1, "AVRO", '"string"', (SchemaReference("b", "b", 1),)),
        RegisteredSchema(2, "b", 1, "AVRO", '"string"', (SchemaReference("a", "a", 1),)))
    assert error_of(cycle, framing.frame(1, b"\x02a")) == "payload_schema_invalid"
    missing = RegisteredSchema(1, "a", 1, "AVRO", '"string"', (SchemaReference("m", "m", 1),))
    assert error_of(schemas_of(missing), framing.frame(1, b"")) == "payload_reference_missing"
    for text in ('{"type": "record"', '[' * 100_000, '{"type":"nope"}'):
        bad = RegisteredSchema(1, "a", 1, "AVRO", text)
        assert error_of(schemas_of(bad), framing.frame(1, b"")) == "payload_schema_invalid"
    proto = RegisteredSchema(1, "p", 1, "PROTOBUF", 'syntax = "proto3"; message A { B b = 1; }')
    assert error_of(schemas_of(proto), framing.frame(1, b"", (0,))) == "payload_schema_invalid"
    escape = RegisteredSchema(1, "p", 1, "PROTOBUF", 'syntax = "proto3";',
                              (SchemaReference("../../etc/x.proto", "q", 1),))
    target = RegisteredSchema(2, "q", 1, "PROTOBUF", 'syntax = "proto3";')
    assert error_of(schemas_of(escape, target), framing.frame(1, b"", (0,))) == \
        "payload_schema_invalid"


# ------------------------------------------------------------------ the faces agree


def cli_values(topic: str) -> list:
    done = cli("dump", "--decode", "--format", "jsonl", str(segment(topic)))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    out = []
    for line in done.stdout.splitlines():
        obj = json.loads(line)
        if obj["type"] == "record":
            out.append(obj.get("value_decoded"))
    return out


@pytest.mark.parametrize("topic", TOPICS)
def test_cli_and_api_decode_the_same_values(topic):
    logs = segtools.open(TREE)
    table = logs.to_arrow(decode=True, topics=topic).read_all()
    api = [None if t is None else json.loads(t) for t in table.column("value_decoded").to_pylist()]
    assert cli_values(topic) == api
    raw = logs.to_arrow(topics=topic, binary="binary").read_all()
    again = segtools.decode_table(raw, TREE).column("value_decoded").to_pylist()
    assert again == table.column("value_decoded").to_pylist()


def test_dump_decode_text_and_exit_code():
    done = cli("dump", "--decode", str(segment("orders")))
    assert done.returncode == 0
    assert 'payload: {"order_id":42,' in done.stdout
    assert done.stderr.count("segtools: schemas:") == 1
    hostile = cli("dump", "--decode", str(segment("payloads.hostile")))
    assert hostile.returncode == 1 and "Traceback" not in hostile.stderr
    assert "ERROR payload_body_mismatch" in hostile.stdout


def test_find_decode():
    done = cli("find", str(TREE / "customers-0"), "--offset", "1", "--decode", "--format",
               "jsonl")
    found = json.loads(done.stdout.splitlines()[0])
    assert found["record"]["value_schema"]["message"] == "shop.Shipment"


def test_schemas_command_and_usage():
    done = cli("schemas", str(TREE), "--usage", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    schemas = [r for r in rows if r["type"] == "schema"]
    assert {(r["subject"], r["version"], r["deleted"]) for r in schemas} >= {
        ("orders-value", 2, False), ("legacy-value", 1, True)}
    for r in schemas:
        assert list(r)[:6] == ["type", "id", "subject", "version", "schema_type", "deleted"]
    use = [(r["schema_id"], r["first_offset"], r["producer_ids"]) for r in rows
           if r["type"] == "schema_usage" and r["topic"] == "orders" and r["side"] == "value"]
    assert use == [(2, 0, [4001]), (3, 4, [4002])]  # the switch, and who made it


def test_registry_read_only_and_cached(chain):
    """A registry on 127.0.0.1 serving the fixture's schemas: GETs only, each asked once."""
    (history,) = chain.histories()
    with serving(history) as registry:
        decoder = PayloadDecoder(gather([], [], registry=registry.url))
        logs = segtools.open(TREE)
        for r in logs.records(topics="orders"):
            found = decoder.decode(r["value"], topic="orders", is_key=False)
            assert found.value["order_id"] >= 42
    seen = [(method, path) for method, path, _ in registry.heard]
    assert seen and all(method == "GET" for method, _ in seen)
    assert len(seen) == len(set(seen))


def test_verify_counts_payloads_per_topic_with_a_cap():
    done = cli("verify", str(TREE), "--decode", "--max-examples", "1", "--format", "jsonl")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    summary = {r["topic"]: r for r in rows if r["type"] == "payload_summary"}
    assert summary["orders"]["undecoded"] == {} and summary["orders"]["decoded"] == 8
    assert summary["payloads.hostile"]["undecoded"]["payload_body_mismatch"] == 3
    assert summary["plain"]["undecoded"] == {"payload_unknown_magic": 4}
    listed = [r for r in rows if r["type"] == "finding" and r["code"] == "payload_body_mismatch"]
    assert len(listed) == 2  # one example, then one finding counting the other two
    assert "2 more record(s)" in listed[1]["message"]


def _sample_rows(model, topic: str) -> list[dict]:
    rows = model.data["partitions"]
    texts = dict(zip((r["id"] for r in rows), model.details, strict=False))
    for r in rows:
        if r["topic"] == topic and texts.get(r["id"]):
            detail = json.loads(texts[r["id"]])
            return detail["samples"]["first"] + detail["samples"]["last"]
    raise AssertionError(f"no samples of {topic}")


@pytest.fixture(scope="module")
def report_model():
    from segtools.report.model import build

    return build([str(TREE)])


def test_report_schema_section(report_model):
    section = {t["topic"]: t for t in report_model.data["schemas"]["topics"]}
    assert [(v["subject"], v["version"]) for v in section["orders"]["timeline"]] == [
        ("orders-value", 1), ("orders-value", 2)]
    usage = [(u["side"], u["schema_id"], u["producer_ids"]) for u in section["orders"]["usage"]]
    assert ("value", 3, [4002]) in usage
    hostile = {u["schema_id"]: u for u in section["payloads.hostile"]["usage"]}
    assert hostile[8]["hard_deleted"] and hostile[999]["subject"] is None


@pytest.mark.parametrize("topic", TOPICS)
def test_report_samples_decode_as_the_other_faces(report_model, topic):
    api = segtools.open(TREE).to_arrow(decode=True, topics=topic).read_all()
    by_offset = dict(zip(api.column("offset").to_pylist(),
                         zip(api.column("value_decoded").to_pylist(),
                             api.column("value_payload_error").to_pylist(), strict=True),
                         strict=True))
    samples = _sample_rows(report_model, topic)
    assert samples
    for s in samples:  # the report shows what the other faces decode (cut to its preview)
        text, error = by_offset[s["offset"]]
        assert s.get("value_payload_error") == error
        if text is None:
            assert "value_decoded" not in s
        else:
            shown = s["value_decoded"].removesuffix("…")
            assert text.startswith(shown) and len(shown) > 10


def test_report_redaction_hides_decoded_values():
    from segtools.redact import redactor
    from segtools.report.model import build

    model = build([str(TREE)], redactor=redactor("values,topics", "k"))
    text = json.dumps(model.data) + "".join(t or "" for t in model.details)
    for inside_values in ("order_id", "Customer 0", "Gent", "still readable"):
        assert inside_values not in text
    assert "orders-value" not in text  # the subject names the topic


@pytest.mark.parametrize("topic", TOPICS)
def test_compiled_and_record_by_record_dumps_agree(topic):
    """The compiled JSON-lines path (decoded columns spliced into its lines) against the
    record-by-record path (taken under --redact; the fixtures carry no headers to redact)."""
    fast = cli("dump", "--decode", "--format", "jsonl", "-q", str(segment(topic)))
    slow = cli("dump", "--decode", "--format", "jsonl", "-q", "--redact", "headers",
               "--redact-key", "k", str(segment(topic)))
    assert fast.returncode == slow.returncode
    rows = [json.loads(line) for line in fast.stdout.splitlines()]
    assert rows == [json.loads(line) for line in slow.stdout.splitlines()[1:]]
    if topic == "customers":
        assert {r["value_schema"]["message"] for r in rows if r["type"] == "record"} == {
            "shop.Customer", "shop.Shipment"}


def test_schema_files_directory(tmp_path, chain):
    """``--schemas DIR``: ``<id>.avsc`` found by id, ``<subject>/<version>.avsc`` naming it."""
    (history,) = chain.histories()
    money = history.by_id(1)
    order = history.by_id(2)
    # a self-contained copy of the order schema: Money inlined where it was referenced
    inlined = json.loads(order.schema)
    inlined["fields"][2]["type"] = json.loads(money.schema)
    (tmp_path / "2.avsc").write_text(json.dumps(inlined))
    (tmp_path / "orders-value").mkdir()
    (tmp_path / "orders-value" / "1.avsc").write_text(json.dumps(inlined))
    done = cli("dump", "--decode", "--schemas", str(tmp_path), "--format", "jsonl", "-q",
               "--end-offset", "3", str(segment("orders")))
    assert done.returncode == 0, done.stderr
    assert "file(s) from" in done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith('{"type":"record"')]
    assert records[0]["value_decoded"]["order_id"] == 42
    assert records[0]["value_schema"] == {"id": 2, "subject": "orders-value", "version": 1,
                                          "type": "AVRO"}
    nothing = cli("dump", "--decode", "--schemas", str(tmp_path / "missing"),
                  str(segment("orders")))
    assert nothing.returncode == 2
    assert nothing.stderr.startswith("segtools: error: ") and "Traceback" not in nothing.stderr


def test_schemas_named_as_a_partition_dir(tmp_path):
    """``--schemas`` naming the ``_schemas-0`` directory of another tree."""
    done = cli("dump", "--decode", "--schemas", str(TREE / "_schemas-0"), "--format", "jsonl",
               "-q", str(segment("events")))
    assert done.returncode == 0, done.stderr
    assert '"value_schema":{"id":6' in done.stdout


def test_redacted_dump_hides_what_values_decode_to():
    done = cli("dump", "--decode", "--redact", "values", "--redact-key", "k", "--format", "jsonl",
               "-q", str(segment("orders")))
    assert done.returncode == 0, done.stderr
    assert "order_id" not in done.stdout and "cust-0" not in done.stdout
    text = cli("dump", "--decode", "--redact", "values", "--redact-key", "k", "-q",
               str(segment("orders")))
    assert "order_id" not in text.stdout and "payload: value." in text.stdout
    topics = cli("dump", "--decode", "--redact", "topics", "--redact-key", "k", "--format",
                 "jsonl", "-q", str(segment("orders")))
    assert topics.returncode == 0 and '"order_id":42' in topics.stdout
    assert "orders" not in topics.stdout  # not in the path, nor in the subject


def test_registry_credentials_never_shown():
    from segtools.payloads.sources import AUTH_VARIABLE, RegistryClient

    client = RegistryClient.from_environment("https://user:secret@registry.example:8081/",
                                             {AUTH_VARIABLE: "alice:s3cret"})
    assert client.shown == "https://registry.example:8081"
    assert "s3cret" not in repr(client) and "secret" not in repr(client)
    assert client.auth == "alice:s3cret"
    down = RegistryClient("http://127.0.0.1:9", "alice:s3cret")  # nothing listens there
    with pytest.raises(segtools.SegtoolsError) as e:
        down.by_id(1)
    assert "s3cret" not in str(e.value) and "unreachable" in str(e.value)


def test_a_segment_inside_an_archive_finds_its_schemas(tmp_path):
    """A support bundle: the log dir in a .tar, a segment named through it; the _schemas
    topic beside it is found through the same location seam."""
    import tarfile

    bundle = tmp_path / "bundle.tar"
    with tarfile.open(bundle, "w") as tar:
        tar.add(TREE, arcname="kafka-logs")
    inside = f"{bundle}/kafka-logs/orders-0/00000000000000000000.log"
    done = cli("dump", "--decode", "--format", "jsonl", "-q", inside)
    assert done.returncode == 0, done.stderr
    assert '"value_decoded":{"order_id":42' in done.stdout
    listed = cli("schemas", f"{bundle}/kafka-logs", "--format", "jsonl")
    assert listed.returncode == 0 and '"subject":"orders-value"' in listed.stdout


def test_auto_leaves_a_key_it_does_not_recognise_as_schema_mode_does(chain):
    """The plain topic's keys are LongSerializer longs (1000..), whose first bytes read as a
    frame naming id 0: auto claims no less of a key than schema mode, which leaves them."""
    for mode in ("schema", "auto"):
        rows = segtools.open(TREE).to_arrow(decode=mode, topics="plain").read_all()
        assert rows.column("key_payload_error").null_count == rows.num_rows, mode
        assert rows.column("key_decoded").null_count == rows.num_rows, mode
    done = cli("dump", "--deep", "--decode", "auto", "--format", "jsonl", str(segment("plain")))
    assert done.returncode == 0, done.stdout
    assert '"finding"' not in done.stdout


def _serve(handler) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_registry_credentials_go_to_the_registry_only(chain):
    """Basic auth from the URL's user part (it was sent to DNS as a host name), never onto
    a redirect to another host (urllib copied it there), and no scheme but http(s) (file://
    read the disk)."""
    (history,) = chain.histories()
    heard: list[tuple[int, str | None]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        moved_to: str | None = None

        def do_GET(self):
            heard.append((self.server.server_address[1], self.headers.get("Authorization")))
            if self.moved_to:
                self.send_response(302)
                self.send_header("Location", self.moved_to + self.path)
                self.end_headers()
                return
            schema = history.by_id(int(self.path.split("?")[0].split("/")[3]))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps({"schema": schema.schema} if "/versions" not in
                                        self.path else []).encode())

        def log_message(self, *args):
            pass

    class Elsewhere(Handler):
        pass

    other = _serve(Elsewhere)
    moved_to = f"http://127.0.0.1:{other.server_address[1]}"
    Moving = type("Moving", (Handler,), {"moved_to": moved_to})
    moving = _serve(Moving)
    try:
        in_url = PayloadDecoder(gather([], [], registry=f"http://alice:s3cret@127.0.0.1:"
                                                         f"{other.server_address[1]}"))
        assert in_url.decode(framing.frame(7, b"\x02a"), topic="t", is_key=False).value == \
            {"text": "a"}
        assert {auth for _, auth in heard} == {"Basic YWxpY2U6czNjcmV0"}
        heard.clear()
        redirected = PayloadDecoder(gather([], [], registry=f"http://alice:s3cret@127.0.0.1:"
                                                             f"{moving.server_address[1]}"))
        redirected.decode(framing.frame(7, b"\x02a"), topic="t", is_key=False)
    finally:
        other.shutdown()
        moving.shutdown()
    assert (moving.server_address[1], "Basic YWxpY2U6czNjcmV0") in heard
    assert (other.server_address[1], None) in heard
    assert all(auth is None for port, auth in heard if port == other.server_address[1])
    for url in ("file:///etc", "ftp://registry", "http://registry:port"):
        with pytest.raises(segtools.SegtoolsError):
            gather([], [], registry=url)


def test_a_schemas_location_that_does_not_exist_says_so(tmp_path):
    done = cli("dump", "--decode", str(segment("orders")), "--schemas", str(tmp_path / "gone"))
    assert done.returncode == 2
    assert done.stderr == f"segtools: error: {tmp_path / 'gone'}: no such file or directory\n"


def test_query_shows_a_typed_map_as_the_object_value_decoded_holds():
    """The orders view's Avro map came out of query as pyarrow's pairs, [["source", ...]]."""
    sql = "select tags from orders where \"offset\" = 1"
    done = cli("query", str(TREE), "--decode", "--format", "jsonl", "-c", sql)
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    (record,) = segtools.open(TREE).records(decode=True, topics="orders", start_offset=1,
                                             end_offset=2)
    assert row["tags"] == json.loads(record["value_decoded"])["tags"] == {"source": "fixture"}
    text = cli("query", str(TREE), "--decode", "-c", sql)
    assert '{"source":"fixture"}' in text.stdout.splitlines()[1]


def test_a_registry_answer_that_is_not_json_says_so():
    """A proxy's HTML page (or an answer cut at the size cap) was "schema registry
    unreachable"."""

    class Html(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>login</html>")

        def log_message(self, *args):
            pass

    server = _serve(Html)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(segtools.SegtoolsError, match="GET /schemas/ids/7 with what is "
                                                         "not JSON"):
            PayloadDecoder(gather([], [], registry=url)).decode(
                framing.frame(7, b"\x02a"), topic="t", is_key=False)
    finally:
        server.shutdown()


@pytest.mark.parametrize(("word", "said"), [
    ("long:bogus", "unknown decode mode 'bogus'"),
    ("string:", "'string:' names no mode for the value"),
    (":schema", "':schema' names no mode for the key"),
])
def test_a_mode_pair_with_a_wrong_side_names_it(word, said):
    """"string:" decoded both sides as strings; "long:bogus" was taken for a file."""
    done = cli("dump", "--decode", word, str(segment("orders")))
    assert done.returncode == 2
    assert done.stderr.startswith(f"segtools: error: --decode: {said}")
    assert done.stderr.count("\n") == 1


def test_protobuf_fields_come_in_the_order_the_proto_declares():
    """json_format writes set fields first and the defaults it fills in after: a customer
    whose tier was FREE (unset) had "tier" after "emails", one with SILVER before."""
    rows = segtools.open(TREE).to_arrow(decode=True, topics="customers").read_all()
    orders = {tuple(json.loads(text)) for text, message in
              zip(rows.column("value_decoded").to_pylist(),
                  rows.column("value_schema_message").to_pylist(), strict=True)
              if message == "shop.Customer"}
    assert orders == {("customer_id", "name", "address", "since", "tier", "emails")}


def test_avro_values_past_a_column_s_json_budget_are_findings(chain, monkeypatch):
    """32 hostile values of 64 MiB of JSON each (an array of nulls: no bytes per item) raised
    OverflowError out of the read (an Arrow string column holds 2 GiB): the values past the
    column's budget are now refused, each a finding, and the ones before it decode."""
    from segtools.payloads import columns

    orders = segtools.open(TREE).to_arrow(topics="orders", columns=["topic", "key", "value"],
                                          binary="binary").read_all()
    monkeypatch.setattr(columns, "MAX_COLUMN_JSON", 400)
    side = columns.decode_side(PayloadDecoder(chain), columns.Payloads.of_column(
        orders.column("value").combine_chunks()), columns.Topics.one("orders", 8), False)
    decoded, errors = side.columns[0].to_pylist(), side.columns[6].to_pylist()
    assert decoded[0] is not None and errors[0] is None
    assert errors[-1] == "payload_body_mismatch" and decoded[-1] is None
    assert "already fill the JSON one Arrow column holds" in side.messages[-1]


def test_soft_and_hard_deletes_are_dated():
    """The timeline kept when each version was registered but not when it was deleted: an
    investigator asking "since when can this id not be registered against" had no answer."""
    key = b'{"keytype":"SCHEMA","subject":"s","version":%d,"magic":1}'
    value = b'{"subject":"s","version":%d,"id":%d,"schema":"\\"int\\""%s}'
    records = [StoreRecord(0, 100, key % 1, value % (1, 9, b"")),
               StoreRecord(1, 200, key % 2, value % (2, 10, b"")),
               StoreRecord(2, 300, key % 1, value % (1, 9, b',"deleted":true')),
               StoreRecord(3, 400, key % 1, value % (1, 9, b',"deleted":true')),
               StoreRecord(4, 500, b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
                           b'{"subject":"s","version":2}'),
               StoreRecord(5, 600, key % 1, None)]
    findings: list = []
    got = replay(records, "x", findings)
    assert findings == []
    (gone,) = got.removed
    assert (gone.registered_ms, gone.deleted_ms, gone.removed_ms) == (100, 300, 600)
    two = got.by_subject_version("s", 2)
    assert (two.registered_ms, two.deleted_ms, two.removed_ms) == (200, 500, None)
    assert two.to_json()["deleted_at"] == 500
    listed = cli("schemas", str(TREE))
    assert "legacy-value v1: id 7 AVRO registered 2024-05-01T13:07:00.000Z DELETED at " \
           "2024-05-01T13:12:00.000Z" in listed.stdout
    assert "hard-deleted: scratch-value v1 (id 8) at 2024-05-01T13:15:00.000Z" in listed.stdout


def test_usage_counts_a_key_as_the_decoder_reads_it():
    """The plain topic's LongSerializer keys were "id 0 (unknown)" in schemas --usage, the
    API's schema_usage and the report, where every decoding face leaves them undecoded."""
    rows = segtools.open(TREE).schema_usage("plain")
    assert [(r.side, r.schema_id, r.records) for r in rows] == [("key", None, 4),
                                                                 ("value", None, 4)]
    listed = cli("schemas", str(TREE), "--usage", "--topic", "plain", "--format", "jsonl")
    keys = [json.loads(line) for line in listed.stdout.splitlines() if '"side":"key"' in line]
    assert [k["schema_id"] for k in keys] == [None]
