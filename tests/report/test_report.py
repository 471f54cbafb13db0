"""``segtools report`` without a browser: the file it writes, its safety rules, and that what it
shows is what the library's analyses (and so the other commands) say."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import segtools
from segtools import fanout
from segtools.report import assets, model
from segtools.report.model import (
    DETAILS_LEFT_OUT,
    Budget,
    ReportModel,
    build,
    forecast_chart,
    json_text,
)
from segtools.report.page import content_security_policy, embed_details, embed_json, render
from segtools.text import INVISIBLE
from segtools.timestamps import to_millis
from tests.fixtures_manifest import FIXTURES
from tests.report.conftest import ROOT, write_report

TREES = sorted(p for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())
AT = "2023-11-16T00:00:00Z"
CONFIG = FIXTURES / "configs" / "sample-topic-configs.txt"


def embedded(page: str) -> dict:
    """The JSON document a report carries, each partition's ``detail`` read from the details
    string as the page's script reads it (the slice its row names, parsed)."""
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m, "no embedded data"
    data = json.loads(m.group(1))
    m = re.search(r'<script type="application/json" id="report-details">(.*?)</script>', page,
                  re.S)
    assert m, "no embedded details"
    for row in data["partitions"]:
        if row["detail"] is not None:
            start, end = row["detail"]
            row["detail"] = json.loads(m.group(1)[start:end])
    return data


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_every_fixture_tree_gives_a_report(tree, tmp_path):
    out = tmp_path / "report.html"
    code, err = write_report(str(tree), "-o", str(out), "--at", AT, "--config", str(CONFIG))
    assert code in (0, 1), err
    page = out.read_text()
    data = embedded(page)
    assert data["summary"]["partitions"] == sum(len(d.partitions) for d in
                                                segtools.open(tree).log_dirs)
    serious = any(c["severity"] in ("warning", "error") for c in data["finding_codes"])
    assert code == (1 if serious else 0), err
    shown = {(f["code"], f["offset"]) for f in data["findings"]}
    assert {(f.code, f.offset) for f in segtools.verify(tree)} <= shown
    assert err.splitlines()[0] == str(out) and "report written:" in err


def test_the_report_shows_the_analyses_own_answers(tmp_path):
    """Retention verdicts, forecast steps, compaction state, regressions and hanging
    transactions in the report are the API's (one implementation, several faces)."""
    tree = FIXTURES / "logdirs"
    model = build([str(tree)], at=to_millis(AT), config=str(CONFIG))
    data = model.data
    retention = segtools.explain_retention(tree, at=AT, config=CONFIG, forecast_days=14)
    by_path = {str(e.input.dir.path): e for e in retention.partitions}
    rows = [{**r, "detail": model.detail(r["id"])} for r in data["partitions"] if r["detail"]]
    rows = [r for r in rows if r["detail"]["retention"]]
    assert rows
    for row in rows:
        e = by_path[str(Path(row["path"]).resolve())]
        segs = [s for s in row["detail"]["segments"] if "gap" not in s]
        assert [(s["base_offset"], s["deletable"], s["reason"]) for s in segs] == \
            [(v.base_offset, v.deletable, v.reason) for v in e.retention.segments]
        assert row["detail"]["retention"]["chart"] == forecast_chart([(e.input.label,
                                                                        e.forecast)])
        assert row["deletable_bytes"] == e.retention.deletable_bytes
    compaction = segtools.explain_compaction(tree, at=AT, config=CONFIG)
    dirty = {str(e.input.dir.path): round(e.compaction.dirty_ratio, 4)
             for e in compaction.partitions}
    assert dirty and {str(Path(r["path"]).resolve()): r["dirty_ratio"]
                      for r in data["partitions"] if r["compacted"]} == dirty
    replay = segtools.offsets_at(tree)
    assert data["offset_regressions"] == len(replay.regressions) > 0
    marked = [p for g in data["groups"] for line in g["lines"] for p in line["points"] if p[4]]
    assert len(marked) == len(replay.regressions)
    hanging = segtools.transactions(tree, now=AT)
    assert [(h["producer_id"], h["first_offset"]) for h in data["hanging"]] == \
        [(h.transaction.producer_id, h.transaction.first_offset)
         for pt in hanging.partitions for h in pt.hanging]


def test_the_detail_budget_goes_to_the_most_telling_and_says_what_it_left_out():
    """Past the byte budget a partition keeps its summary row only, the most telling first
    (errors before the rest), and the document counts the others; a kept detail is the same
    as without the budget."""
    tree = FIXTURES / "logdirs" / "sample"
    full = build([str(tree)], at=to_millis(AT), config=str(CONFIG))
    cut = build([str(tree)], at=to_millis(AT), config=str(CONFIG),
                budget=Budget(listed_partitions=1, detail_bytes=0))
    rows = cut.data["partitions"]
    kept = [r for r in rows if r["detail"]]
    assert len(kept) == 1 and kept[0]["listed"]
    assert all(r["detail"] for r in full.data["partitions"])
    assert kept[0]["worst"] == max(r["worst"] for r in rows) == 3
    assert cut.details[kept[0]["id"]] == full.details[kept[0]["id"]]
    assert [t is None for t in cut.details] == [not r["detail"] for r in rows]
    left = {x["what"]: x["count"] for x in cut.data["left_out"]}
    assert left[DETAILS_LEFT_OUT] == len(rows) - 1


def test_other_sections_are_bounded_and_say_so():
    """Replica sets and directories not analysed, past the row budget: left out (the diverged
    replica sets kept first) and counted."""
    tree = FIXTURES / "logdirs"
    full = build([str(tree)], at=to_millis(AT))
    cut = build([str(tree)], at=to_millis(AT), budget=Budget(rows=1))
    left = {x["what"]: x["count"] for x in cut.data["left_out"]}
    for section, what in (
            ("divergence", "replica sets not shown (diverged ones first; segtools diverge "
                           "compares all)"),
            ("skipped", "directories not analysed left out of their list")):
        assert len(full.data[section]) > 1
        assert cut.data[section] == full.data[section][:1]
        assert left[what] == len(full.data[section]) - 1
    assert cut.data["divergence"][0]["status"] == "diverged"


def test_the_analyses_run_beside_give_what_one_process_gives(monkeypatch):
    """verify, producers and transactions run in forked workers beside the rest: the
    document, the details and the findings are those of one process."""
    def made() -> tuple:
        m = build([str(FIXTURES / "logdirs")], at=to_millis(AT), config=str(CONFIG))
        m.data["meta"]["generated_at"] = 0
        return m.data, m.details, [f.to_json() for f in m.findings]

    monkeypatch.setenv("SEGTOOLS_WORKERS", "1")
    serial = made()
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    calls = []
    real = fanout._drain
    monkeypatch.setattr(fanout, "_drain", lambda *a: calls.append(a) or real(*a))
    assert made() == serial
    assert calls  # the workers did run


def test_embedded_json_cannot_close_its_element_or_open_a_comment():
    nasty = {"k": "</script><script>alert(1)</script><!-- \u2028\u2029 & é \udcff",
             "nan": float("nan")}
    text = str(embed_json(nasty))
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert text.isascii()
    back = json.loads(text)
    assert back["k"].startswith("</script><script>") and back["nan"] is None


def test_details_cannot_close_their_element_and_each_slice_is_its_detail():
    """The details string: no ``<``, ``>``, ``&`` or JavaScript line end raw in it, and the
    ``[start, end)`` a row names parses back to that row's detail (escapes change lengths)."""
    details = [{"k": "</script><script>alert(1)</script><!-- \u2028\u2029 & é"}, None,
               {"n": float("inf"), "s": ">>"}]
    model = ReportModel({"partitions": [{"id": i, "detail": d is not None}
                                        for i, d in enumerate(details)]}, [], [],
                        [None if d is None else json_text(d) for d in details])
    rows, text = embed_details(model)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert text.isascii() and rows[1]["detail"] is None
    assert json.loads(text[slice(*rows[0]["detail"])]) == details[0]
    assert json.loads(text[slice(*rows[2]["detail"])]) == {"n": None, "s": ">>"}


def test_the_policy_allows_only_the_pages_own_script_and_style():
    csp = content_security_policy(["a()"], ["b{}"])
    digest = "sha256-" + __import__("base64").b64encode(hashlib.sha256(b"a()").digest()).decode()
    assert f"script-src '{digest}'" in csp
    for directive in ("default-src 'none'", "connect-src 'none'", "img-src 'none'",
                      "base-uri 'none'", "form-action 'none'"):
        assert directive in csp
    assert "unsafe" not in csp and "http" not in csp


def test_the_page_inlines_everything_and_links_nothing(tmp_path):
    out = tmp_path / "r.html"
    write_report(str(FIXTURES / "logdirs" / "sample"), "-o", str(out), "--at", AT)
    page = out.read_text()
    assert "Content-Security-Policy" in page
    assert not re.search(r"<(link|img|iframe|a)\b", page)
    assert not re.search(r"\b(src|href)\s*=", page.split('id="report-data"')[0])
    a = assets.load()
    assert a.uplot_js in page and a.format_js in page and a.report_js in page
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    for s in scripts:  # the hashes in the policy are those of the scripts on the page
        digest = __import__("base64").b64encode(hashlib.sha256(s.encode()).digest()).decode()
        assert f"sha256-{digest}" in html.unescape(csp)


def test_vendored_chart_library_is_checked_against_its_pin(tmp_path, monkeypatch):
    pin = assets.check_pinned()
    assert pin["version"] and pin["license"] == "MIT"
    copy = tmp_path / "assets"
    shutil.copytree(assets.HERE, copy)
    (copy / "uPlot.iife.min.js").write_text("/* changed */" +
                                            (copy / "uPlot.iife.min.js").read_text())
    monkeypatch.setattr(assets, "HERE", copy)
    with pytest.raises(segtools.SegtoolsError, match="pinned sha256"):
        assets.check_pinned()


def test_output_inside_a_log_dir_is_refused(tmp_path):
    tree = shutil.copytree(FIXTURES / "logdirs" / "sample", tmp_path / "sample")
    before = sorted(p.name for p in tree.iterdir())
    for target in (tree / "report.html", tree / "orders.v2-eu-0" / "report.html"):
        code, err = write_report(str(tree), "-o", str(target))
        assert code == 2 and err.startswith("segtools: error:") and "log dir" in err
        assert err.count("\n") == 1
    assert sorted(p.name for p in tree.iterdir()) == before
    code, err = write_report(str(tree), "-o", str(tmp_path / "report.txt"))
    assert code == 2 and ".html" in err


def test_missing_path_is_a_one_line_error(tmp_path):
    code, err = write_report(str(tmp_path / "nope"), "-o", str(tmp_path / "r.html"))
    assert code == 2 and err.startswith("segtools: error:") and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_redacted_report_holds_no_key_value_header_or_topic(tmp_path):
    tree = FIXTURES / "logdirs" / "sample"
    out = tmp_path / "r.html"
    code, _ = write_report(str(tree), "-o", str(out), "--at", AT, "--config", str(CONFIG),
                           "--redact", "keys,values,headers,topics", "--redact-key", "k")
    assert code == 1  # findings are reported whatever is redacted
    page = out.read_text()
    data = embedded(page)
    assert "redacted: keys, values, headers, topics" in page
    assert data["meta"]["redaction"].startswith("redacted:")
    for topic in ("orders.v2-eu", "payments-compact", "corrupt-crc", "payments.txn"):
        assert topic not in page
    samples = [r for p in data["partitions"] if p["detail"] and p["detail"]["samples"]
               for r in p["detail"]["samples"]["first"]]
    assert samples and all(r["key"] is None or r["key"].startswith("key.") for r in samples)
    assert all(r["value"] is None or r["value"].startswith("value.") for r in samples)
    logs = segtools.open(tree)
    real = {r["key"] for r in logs.records(topics="payments-compact") if r["key"]}
    for key in real:
        assert key.decode() not in page
    # stable tokens: the same key gives the same report tokens with the same --redact-key
    out2 = tmp_path / "r2.html"
    write_report(str(tree), "-o", str(out2), "--at", AT, "--config", str(CONFIG),
                 "--redact", "keys,values,headers,topics", "--redact-key", "k")
    second = embedded(out2.read_text())
    assert [p["topic"] for p in second["partitions"]] == [p["topic"] for p in data["partitions"]]


def test_help_stays_fast_and_lists_the_report():
    """jinja2 and the analyses are imported only when the report runs."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "segtools.cli.main", "--help"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    assert time.perf_counter() - start < 2.0
    assert "report" in proc.stdout
    probe = ("import sys; from segtools.cli.main import build_parser; build_parser(['scan']); "
             "print(sorted(m for m in ('jinja2', 'segtools.report.page') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_render_is_deterministic_for_the_same_model():
    model = build([str(FIXTURES / "logdirs" / "legacy")], at=1_700_000_000_000)
    assert render(model) == render(model)


def test_redacted_hostile_report_names_no_topic(tmp_path):
    """Topic names are redacted wherever the report carries them (values, paths, messages,
    the transactional id's partitions); the group and transactional ids are not redacted."""
    out = tmp_path / "r.html"
    write_report(str(FIXTURES / "logdirs" / "hostile"), "-o", str(out),
                 "--redact", "keys,values,headers,topics")
    page = out.read_text()
    data = embedded(page)
    text = json.dumps(data) + page.split('id="report-data"')[0]
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14):  # topic names, keys, values, headers
        assert f"pwn({n})" not in text, n
    assert "pwn(13)" in text  # the transactional id stays
    (open_id,) = data["open_transactional_ids"]
    assert [p["topic"] for p in open_id["partitions"]] == \
        [r["topic"] for r in data["partitions"] if r["hanging"]]


def test_sample_records_of_one_segment_are_read_from_one_opening(monkeypatch):
    """A partition of one segment (most of a broker's tree) has its first and last records
    read from one opening of the segment, and they are what two separate reads give."""
    opened: list[str] = []
    real_open = model.Segment.open

    def counted(files, **kwargs):
        opened.append(str(files.log))
        return real_open(files, **kwargs)

    pdirs = [p.directory for p in segtools.open(FIXTURES / "logdirs" / "producers").partitions()]
    single = [p for p in pdirs if len([s for s in p.segments if s.log_size]) == 1]
    assert single
    for pdir in single:
        files = next(s for s in pdir.segments if s.log_size)
        apart = (model._records(files, first=True, last=False, n=3, limit=1 << 20)[0],
                 model._records(files, first=False, last=True, n=3, limit=1 << 20)[1])
        monkeypatch.setattr(model.Segment, "open", counted)
        shown = model.samples(pdir, None, Budget(samples=3), 1 << 20)
        monkeypatch.setattr(model.Segment, "open", real_open)
        assert opened == [str(files.log)], pdir
        opened.clear()
        first_offsets = {r.offset for r in apart[0]}
        assert [r["offset"] for r in shown["first"]] == [r.offset for r in apart[0]]
        assert [r["offset"] for r in shown["last"]] == [r.offset for r in apart[1]
                                                        if r.offset not in first_offsets]


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_sample_records_decode_only_the_batches_they_need(tree, monkeypatch):
    """The first (last) ``n`` records of a segment's first (last) ``n`` data batches are
    those of all ``n`` batches decoded, on every segment of every fixture tree (damaged ones
    included), though only as many batches as hold ``n`` records are decoded when they
    decode as declared."""
    decoded: list[int] = []
    real = model.Segment.records

    def counted(segment, table):
        decoded.append(len(table))
        return real(segment, table)

    fewer = 0
    for pdir in (p.directory for p in segtools.open(tree).partitions()):
        for files in pdir.segments:
            if not files.log_size:
                continue
            try:
                segment = model.Segment.open(files, decompress_limit=1 << 20)
            except segtools.SegtoolsError:
                continue
            with segment:
                table = segment.table(verify_crc=False)[0]
                data = table.take(~table.is_control)
                for n in (1, 3):
                    for from_end in (False, True):
                        picked = data.take(slice(max(0, len(data) - n), None) if from_end
                                           else slice(0, n))
                        every = model._batch_records(segment, picked)
                        monkeypatch.setattr(model.Segment, "records", counted)
                        shown = model._end_records(segment, picked, n, from_end=from_end)
                        monkeypatch.setattr(model.Segment, "records", real)
                        want = every[-n:] if from_end else every[:n]
                        got = shown[-n:] if from_end else shown[:n]
                        assert [(r.offset, r.key, r.value) for r in got] == \
                            [(r.offset, r.key, r.value) for r in want], files.log
                        fewer += sum(decoded) < len(picked)
                        decoded.clear()
    if tree.name == "producers":
        assert fewer


def test_every_invisible_character_in_a_detail_is_shown_as_text():
    """Each invisible character (a bidi override, a zero-width space) in a document comes out
    of ``json_text`` as ``\\uXXXX`` text, keys included, whichever of them it is; a document
    without one is written as it is."""
    plain = {"key": "caf\u00e9", "n": [1, 2.5, None]}
    assert json_text(plain) == json.dumps(plain, separators=(",", ":"))
    for c in INVISIBLE:
        shown = f"\\u{c:04x}"
        doc = {f"k{chr(c)}": [f"a{chr(c)}b", 1]}
        assert json.loads(json_text(doc)) == {f"k{shown}": [f"a{shown}b", 1]}, hex(c)
