"""Redaction that covers everything (issue 41): with ``--redact topics`` no topic name the
tree mentions survives, wherever it is stored (partition directories, ``__consumer_offsets``
keys, ``__cluster_metadata``) or shown (findings, previews, compaction's top keys, the chain
of custody of ``--hashes``)."""

from __future__ import annotations

import json
import re
import shutil

import segtools
from segtools.analysis.cluster_metadata import topic_configs
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

FORENSICS = FIXTURES / "logdirs" / "forensics"


def named_topics(tree) -> set[str]:
    """Every non-internal topic named anywhere in the tree, found without segtools' redactor."""
    commits = segtools.open(str(tree)).offsets_at(history=True).commits
    names = {c.topic for c in commits} | set(topic_configs(tree / "__cluster_metadata-0"))
    names |= {p.name.rsplit("-", 1)[0] for p in tree.iterdir() if p.is_dir()}
    return {n for n in names if not n.startswith("__")}


def mentions(text: str, names: set[str]) -> list[str]:
    """Names that appear as a word, or right after a ``\\xNN`` escape of a binary key."""
    found = []
    for n in sorted(names):
        if re.search(rf"(?:(?<![A-Za-z0-9._])|(?<=\\x[0-9a-f]{{2}})){re.escape(n)}"
                     r"(?![A-Za-z0-9._])", text):
            found.append(n)
    return found


def test_the_report_names_no_topic_anywhere(tmp_path):
    tree = tmp_path / "forensics"
    shutil.copytree(FORENSICS, tree)
    names = named_topics(tree)
    assert {"orders.v2-eu", "payments-compact", "big-value"} <= names  # from offsets, metadata
    out = tmp_path / "r.html"
    run = run_cli(["report", "-q", "--hashes", "--redact", "topics", "-o", str(out), str(tree)])
    assert run.code in (0, 1), run.stderr
    page = out.read_text()
    assert '"custody"' in page or "custody" in page
    assert mentions(page, names) == []
    plain = tmp_path / "plain.html"
    run_cli(["report", "-q", "--hashes", "-o", str(plain), str(tree)])
    assert set(mentions(plain.read_text(), names)) >= {"orders.v2-eu", "payments.hanging"}


def test_the_report_s_decoded_samples_name_no_topic(tmp_path):
    """``report --decode string``: the samples' keys and values decoded as text, the
    ``__consumer_offsets`` keys among them spelling topic names. Under ``--redact topics`` a
    side redacted shows its token, never what it decodes to; not one name is left, not even
    after a JSON escape (``\\f`` before ``orders.v2-eu``) where no word pattern finds it."""
    names = named_topics(FORENSICS)
    plain, redacted = tmp_path / "plain.html", tmp_path / "redacted.html"
    run = run_cli(["report", "-q", "--decode", "string", "-o", str(plain), str(FORENSICS)])
    assert run.code in (0, 1), run.stderr
    decoded = re.findall(r'"key_decoded":"((?:[^"\\]|\\.)*)"', plain.read_text())
    assert {"orders.v2-eu", "payments.txn"} <= {n for n in names if any(n in d for d in decoded)}
    run = run_cli(["report", "-q", "--decode", "string", "--redact", "topics", "-o",
                   str(redacted), str(FORENSICS)])
    assert run.code in (0, 1), run.stderr
    page = redacted.read_text()
    assert '"key_decoded"' in page and [n for n in names if n in page] == []


def test_the_custody_list_of_a_dump_is_redacted(tmp_path):
    tree = tmp_path / "forensics"
    shutil.copytree(FORENSICS, tree)
    log = next((tree / "payments.hanging-0").glob("*.log"))
    run = run_cli(["dump", "--hashes", "--redact", "topics", "--format", "jsonl", str(log)])
    assert run.code in (0, 1), run.stderr
    custody = [json.loads(line) for line in run.stdout.decode().splitlines()
               if '"custody"' in line]
    assert custody and all("payments.hanging" not in r["path"] for r in custody)
    assert mentions(run.stdout.decode(), {"payments.hanging"}) == []


def test_dump_of_an_internal_topic_names_no_topic():
    """``dump --print-data --redact topics`` of the segments that spell topic names in their
    bytes (offset commits' keys, transactions' partitions, ``TopicRecord``s): the names sat
    after a length byte shown as ``\\r`` or ``\\x0c``, where no word pattern finds them, and
    were printed. Their keys and values are tokens now."""
    names = named_topics(FORENSICS)
    for partition in ("__consumer_offsets-9", "__consumer_offsets-5", "__transaction_state-7",
                      "__cluster_metadata-0"):
        segment = str(FORENSICS / partition / "00000000000000000000.log")
        for fmt in (["--format", "text"], ["--format", "jsonl", "--bytes", "utf8"]):
            run = run_cli(["dump", "--deep", "--print-data", "--redact", "topics", *fmt,
                           segment])
            shown = run.stdout.decode("utf-8", "replace")
            assert [n for n in names if n in shown] == [], (partition, fmt)
            assert "value." in shown, (partition, fmt)
