"""Every analysis result as a notebook shows it: a short repr, a table of its rows (times as
UTC timestamps), ``to_json()`` equal to what the command prints, findings first in HTML; and
still an instance of the library's own type."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest

import segtools
from segtools.analysis.explain import CompactionReport, RetentionReport
from segtools.analysis.offsets import OffsetsReplay
from segtools.analysis.tiered import TieredReport
from segtools.analysis.transactions import TransactionsReport
from segtools.cli.main import main
from segtools.results import is_moment
from tests.fixtures_manifest import FIXTURES

LOGDIRS = FIXTURES / "logdirs"
SAMPLE = str(LOGDIRS / "sample")
CONFIGS = str(FIXTURES / "configs" / "sample-topic-configs.txt")
AT = "2023-11-16T00:00:00Z"


def cli(*argv: str) -> list[dict]:
    """What a command prints with --format json/jsonl, parsed."""
    raw = io.StringIO()
    with contextlib.redirect_stdout(raw):
        code = main(list(argv))
    assert code in (0, 1), code
    text = raw.getvalue()
    if text.lstrip().startswith("{") and "\n{" not in text.strip():
        return [json.loads(text)]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


CASES = {
    "retention": (lambda: segtools.explain_retention(SAMPLE, at=AT, config=CONFIGS),
                  ("retention", SAMPLE, "--at", AT, "--config", CONFIGS, "--format", "json"),
                  RetentionReport, "segment"),
    "compaction": (lambda: segtools.explain_compaction(SAMPLE, at=AT, config=CONFIGS),
                   ("compaction", SAMPLE, "--at", AT, "--config", CONFIGS, "--format", "json"),
                   CompactionReport, "partition"),
    "tiered": (lambda: segtools.tiered(str(LOGDIRS / "tiered"), at="2024-06-01T12:00:00Z"),
               ("tiered", str(LOGDIRS / "tiered"), "--at", "2024-06-01T12:00:00Z", "--format",
                "json"), TieredReport, "remote segment"),
    "transactions": (lambda: segtools.transactions(str(LOGDIRS / "forensics"), now=AT),
                     ("transactions", str(LOGDIRS / "forensics"), "--now", AT, "--format",
                      "jsonl"), TransactionsReport, "transaction"),
    "offsets": (lambda: segtools.offsets_at(str(LOGDIRS / "forensics")),
                ("offsets", str(LOGDIRS / "forensics"), "--format", "jsonl"), OffsetsReplay,
                "committed offset"),
    "producers": (lambda: segtools.producers(str(LOGDIRS / "producers")),
                  ("producers", str(LOGDIRS / "producers"), "--format", "jsonl"), list,
                  "producer"),
    "diverge": (lambda: segtools.diverge(str(LOGDIRS / "replicas")),
                ("diverge", str(LOGDIRS / "replicas"), "--format", "jsonl"), list, "replica"),
    "verify": (lambda: segtools.verify(SAMPLE),
               ("verify", SAMPLE, "--format", "jsonl"), list, "finding"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    make, argv, base, kind = CASES[request.param]
    return request.param, make(), argv, base, kind


def test_repr_is_one_short_line(case):
    name, result, _, base, _ = case
    text = repr(result)
    assert isinstance(result, base)
    assert "\n" not in text and len(text) < 400, (name, len(text))
    assert text.startswith("<") and text.endswith(">")


def test_to_json_is_what_the_command_prints(case):
    name, result, argv, _, _ = case
    printed = cli(*argv)
    got = result.to_json()
    if isinstance(got, dict):
        got = [got]
    if name == "verify":  # verify ends with its summary line
        printed = [o for o in printed if o["type"] != "summary"]
    assert json.loads(json.dumps(got, default=str)) == printed


def test_rows_as_arrow_and_pandas(case):
    name, result, _, _, kind = case
    rows = result.rows()
    assert rows, name
    table = result.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == len(rows)
    frame = result.to_pandas()
    assert len(frame) == len(rows)
    assert type(result).row_kind == kind
    for field in table.schema:
        if field.name.endswith("timestamp") and not pa.types.is_null(field.type):
            assert pa.types.is_timestamp(field.type), (name, field)


def test_html_shows_findings_first_then_rows(case):
    name, result, _, _, _ = case
    page = result._repr_html_()
    assert page.count("<table>") >= 1 and len(page) < 200_000, name
    found = result._findings()
    if found and name != "verify":
        assert page.index(found[0].code) < page.rindex("<table>"), name


def test_a_partition_repr_is_one_line():
    p = segtools.open(SAMPLE).partitions("orders.v2-eu", partitions=0)[0]
    assert repr(p) == ("<Partition orders.v2-eu-0 (live): 3 segment(s), 103.6 KiB, base "
                       "offsets 0..205, high watermark 252, log start offset 3>")


def test_compaction_with_no_config_says_why_in_its_repr():
    """Without a config nothing in the sample tree is compacted (Kafka's default policy is
    delete): the repr says so, in words that are not the CLI's flags."""
    text = repr(segtools.explain_compaction(SAMPLE, at=AT))
    assert "no compacted partition" in text and "cleanup.policy=compact" in text
    named = repr(segtools.explain_compaction(f"{SAMPLE}/orders.v2-eu-0", at=AT))
    assert "0 compacted partition(s), 0 the cleaner" in named  # its policy is delete
    assert "1 named without a config (cleanup.policy=delete" in named
    assert "--" not in text


def test_a_replays_commits_are_filtered_by_commits_for_and_history_is_deprecated():
    """``history=True`` is the replay's argument; the filter over the commits it kept is
    ``commits_for``. The old method name still answers, for one release, with a warning."""
    replay = segtools.open(str(LOGDIRS / "forensics")).offsets_at(history=True)
    every = replay.commits_for()
    assert every == list(replay.commits) and every
    topic, partition = every[0].topic, every[0].partition
    mine = replay.commits_for(topic, partition)
    assert mine and all(c.topic == topic and c.partition == partition for c in mine)
    with pytest.warns(DeprecationWarning, match="commits_for"):
        assert replay.history(topic, partition) == mine


def test_rows_give_every_moment_as_a_utc_datetime(case):
    """One type for a moment in the Python face: ``rows()`` as the records' ``timestamp``
    (a UTC datetime), never the CLI's epoch ms, which only ``to_json()`` keeps."""
    name, result, _, _, _ = case
    moments = [(k, v) for r in result.rows() for k, v in r.items() if is_moment(k)]
    for key, value in moments:
        assert value is None or (isinstance(value, datetime) and value.tzinfo == UTC), \
            (name, key, value)
    if name in ("retention", "tiered"):
        assert any(isinstance(v, datetime) for _, v in moments), name
