"""The public Python API (``segtools.open`` and the analyses) against the command line, on every
fixture tree written by Kafka's own code: the two faces must give the same answers, because
they call the same library functions. Also: the Arrow read goes into DuckDB, pandas and polars.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pytest

import segtools
from segtools.cli.main import main
from segtools.errors import SegtoolsError
from tests.fixtures_manifest import FIXTURES

TREES = sorted(p for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())


def cli_jsonl(*argv: str) -> list[dict]:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    out.flush()
    assert code in (0, 1), code
    return [json.loads(line) for line in raw.getvalue().decode().splitlines() if line.strip()]


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_records_match_dump(tree):
    """Every record of every live partition: the API's rows equal ``dump --deep``'s lines."""
    logs = segtools.open(tree)
    for p in logs.partitions():
        files = [str(s.log) for s in p.segments if s.log_size]
        if not files:
            continue
        dumped = [(r["offset"], r.get("key"), r.get("value"))
                  for r in cli_jsonl("dump", *files, "--deep", "--format", "jsonl",
                                     "--bytes", "base64")
                  if r["type"] == "record"]
        api = [(r["offset"], _b64(r["key"]), _b64(r["value"]))
               for r in segtools.open(p.path).records(include_control=True,
                                                      columns=["offset", "key", "value"])]
        assert api == dumped, p.name


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_verify_matches_cli(tree):
    cli = Counter((f["code"], f["path"], f.get("offset"))
                  for f in cli_jsonl("verify", str(tree), "--format", "jsonl", "--quiet")
                  if f["type"] == "finding")
    api = Counter((f.code, f.path, f.offset) for f in segtools.verify(tree))
    assert api == cli


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_transactions_match_cli(tree):
    at = "2023-12-08T03:00:00Z"  # one clock for both faces
    cli = [o for o in cli_jsonl("transactions", str(tree), "--format", "json", "--quiet",
                                "--at", at) if o["type"] == "hanging_transaction"]
    report = segtools.transactions(tree, now=at)
    api = [h.to_json() for pt in report.partitions for h in pt.hanging]
    assert api == cli


def test_offsets_match_cli():
    tree = FIXTURES / "logdirs" / "forensics"
    cli = cli_jsonl("offsets", str(tree), "--format", "json", "--quiet")
    replay = segtools.offsets_at(tree)
    assert [r.to_json() for r in replay.regressions] == \
        [o for o in cli if o["type"] == "offset_regression"]
    assert replay.regressions, "the forensics tree holds a reset to earliest"
    at = min(c.where.timestamp for g in replay.groups.values() for c in g.offsets.values())
    earlier = segtools.offsets_at(tree, at=datetime.fromtimestamp(at / 1000, UTC))
    assert sum(len(g.offsets) for g in earlier.groups.values()) <= \
        sum(len(g.offsets) for g in replay.groups.values())


def test_diverge_matches_cli():
    tree = FIXTURES / "logdirs" / "replicas"
    cli = [o for o in cli_jsonl("diverge", str(tree), "--format", "json")
           if o["type"] == "divergence"]
    api = segtools.diverge(tree)
    assert [{**s.divergence.to_json(), "partition": s.key} for s in api] == cli
    assert any(s.divergence.status == "diverged" for s in api)


def test_selectors():
    logs = segtools.open(FIXTURES / "logdirs" / "sample")
    p = logs.partitions("orders.v2-eu", 0)[0]
    offsets = [r["offset"] for r in logs.records(topics="orders.v2-eu", partitions=0)]
    assert offsets == sorted(offsets) and len(offsets) > 10
    window = [r["offset"] for r in logs.records(topics="orders.v2-eu", partitions=0,
                                                 start_offset=offsets[3],
                                                 end_offset=offsets[8])]
    assert window == offsets[3:8]
    by_map = [r["offset"] for r in logs.records(
        topics="orders.v2-eu", start_offset={"orders.v2-eu": {0: offsets[5]}})
        if r["partition"] == 0]
    assert by_map == offsets[5:]
    times = [r["timestamp"] for r in logs.records(topics="orders.v2-eu", partitions=0)]
    later = list(logs.records(topics="orders.v2-eu", partitions=0, start_time=times[6]))
    assert later and all(r["offset"] >= offsets[6] for r in later)
    assert p.topic == "orders.v2-eu" and p.segments


def test_read_committed_hides_aborted_records():
    logs = segtools.open(FIXTURES / "logdirs" / "sample")
    everything = list(logs.records(topics="payments.txn"))
    committed = list(logs.records(topics="payments.txn", read_committed=True))
    assert 0 < len(committed) < len(everything)


def test_findings_of_a_read_are_collected_or_strict():
    logs = segtools.open(FIXTURES / "logdirs" / "sample")
    rows = list(logs.batches(topics="corrupt-crc"))
    assert any(not r["crc_valid"] for r in rows)
    with pytest.raises(SegtoolsError):
        list(logs.records(topics="corrupt-crc", strict=True))


def test_missing_path_is_one_error():
    with pytest.raises(SegtoolsError, match="no such file"):
        segtools.open("/no/such/dir")


def test_arrow_into_duckdb_pandas_polars():
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    logs = segtools.open(FIXTURES / "logdirs" / "sample")
    expected = Counter(r["topic"] for r in logs.records(columns=["topic"]))
    reader = logs.to_arrow(columns=["topic", "partition", "offset", "key", "value"])
    assert isinstance(reader, segtools.ArrowRead)
    assert isinstance(reader.reader(), pa.RecordBatchReader)
    records = reader  # noqa: F841 (DuckDB finds the reader by its variable name)
    got = dict(duckdb.sql("SELECT topic, count(*) FROM records GROUP BY topic").fetchall())
    assert got == dict(expected)
    frame = logs.to_arrow(columns=["topic", "offset"]).read_pandas()
    assert len(frame) == sum(expected.values())
    polars_frame = pl.from_arrow(logs.to_arrow(level="batches").read_all())
    assert polars_frame.height == sum(1 for _ in logs.batches())




def test_every_command_takes_the_decompression_cap():
    """``--max-decompressed-bytes`` is accepted everywhere and reaches the read: a cap far
    below the sample's compressed batches turns them into findings, not output."""
    from segtools.cli.main import COMMANDS, build_parser

    for name in COMMANDS:
        args = build_parser([name]).parse_args(
            [name, "x", *(["--offset", "0"] if name == "find" else []),
             *(["-o", "x.html"] if name == "report" else []),
             *(["-c", "select 1"] if name == "query" else []),
             "--max-decompressed-bytes", "1024"])
        assert args.max_decompressed_bytes == 1024, name
    tree = FIXTURES / "logdirs" / "sample" / "orders.v2-eu-4"   # zstd batches
    capped = cli_jsonl("verify", str(tree), "--deep", "--format", "jsonl", "--quiet",
                       "--max-decompressed-bytes", "64")
    assert any(f.get("code") == "corrupt_compressed_payload" for f in capped)
    assert segtools.open(tree, max_decompressed_bytes=64).verify(deep=True)


AT = "2023-11-16T00:00:00Z"
CONFIG = FIXTURES / "configs" / "sample-topic-configs.txt"


def cli_document(*argv: str) -> dict:
    (doc,) = cli_jsonl(*argv, "--format", "json", "--quiet", "--at", AT)
    return doc


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_explain_retention_matches_cli(tree):
    """The API's report is the CLI's ``--format json`` document, value for value (the deep
    pass and the forecast included)."""
    cli = cli_document("retention", str(tree), "--config", str(CONFIG), "--forecast", "3")
    api = segtools.explain_retention(tree, at=AT, config=CONFIG, forecast_days=3)
    assert api.partitions, tree.name
    assert json.loads(json.dumps(api.to_json())) == cli


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_explain_compaction_matches_cli(tree):
    """Every partition analysed as compacted (a flag in the CLI, ``configs`` in the API)."""
    cli = cli_document("compaction", str(tree), "--cleanup-policy", "compact", "--top", "3")
    api = segtools.explain_compaction(tree, at=AT, configs={"cleanup.policy": "compact"},
                                      top=3)
    assert api.partitions, tree.name
    assert json.loads(json.dumps(api.to_json())) == cli


def test_explain_rejects_a_bad_config_value():
    with pytest.raises(SegtoolsError, match=r"retention\.ms"):
        segtools.explain_retention(FIXTURES / "logdirs" / "sample",
                                   configs={"retention.ms": "soon"})
