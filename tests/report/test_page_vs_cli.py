"""What the report page SHOWS, read from the rendered page in a real browser, against what the
commands print as JSON, on every bundled fixture tree: replicas (``segtools diverge``),
retention verdicts (``segtools retention``), transactions (``segtools transactions``),
consumer groups (``segtools offsets``) and findings (every command the report runs). A page
that says something another face contradicts fails here, whatever the embedded data says."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections import Counter

import pytest

from segtools.cli.main import main
from segtools.cli.render import shown_path
from tests.fixtures_manifest import FIXTURES
from tests.report.conftest import write_report
from tests.report.test_report import AT, CONFIG

TREES = sorted(p.name for p in (FIXTURES / "logdirs").iterdir() if p.is_dir())
WHERE = ("--at", AT, "--config", str(CONFIG))

#: The page's own reading of itself: every section as the text a person sees in it (every
#: detail opened and filled first, as for printing; the findings table read page by page).
READ_PAGE = """() => {
  window.dispatchEvent(new Event('beforeprint'));
  const text = e => e ? e.textContent : null;
  const rows = (root, sel) => Array.from(root.querySelectorAll(sel)).map(
      tr => Array.from(tr.cells).map(td => td.textContent));
  const out = {replicas: [], verdicts: [], transactions: [], hanging: [], groups: [],
               findings: [], sources: text(document.getElementById('finding-sources'))};
  document.querySelectorAll('#divergence-body details').forEach(d => out.replicas.push({
      summary: text(d.querySelector('summary')),
      truncations: Array.from(d.querySelectorAll('p.truncation')).map(text)}));
  document.querySelectorAll('details.partition').forEach(d => {
    const kv = {};
    d.querySelectorAll('dl.kv dt').forEach(dt => { kv[dt.textContent] = text(dt.nextSibling); });
    const tables = Array.from(d.querySelectorAll('table'));
    const seg = tables.find(t => t.tHead && t.tHead.textContent.startsWith('segment'));
    if (seg) rows(seg, 'tbody tr').forEach(r => { if (r.length > 1)
        out.verdicts.push({path: kv['path'], segment: r[0], verdict: r[6]}); });
    if (kv['transactions'] !== undefined)
      out.transactions.push({path: kv['path'], summary: kv['transactions'],
                             lso: kv['last stable offset']});
  });
  rows(document, '#transactions-body table tbody tr').forEach(r => out.hanging.push(r));
  document.querySelectorAll('#groups-body details.group').forEach(d => out.groups.push({
      summary: text(d.querySelector('summary')),
      regressions: rows(d, 'table.grid tbody tr')}));
  return out;
}"""

READ_FINDINGS = """() => Array.from(document.querySelectorAll('#findings-table tbody tr')).map(
    tr => Array.from(tr.cells).map(td => td.textContent))"""


def visible(text: str) -> str:
    """The page's (and the terminal's) way of showing control characters: ``\\xNN``."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]",
                  lambda m: (f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                             else f"\\u{ord(m[0]):04x}"), text)


def cli(*argv: str) -> list[dict]:
    """A command's JSON lines, run in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main([*argv, "--format", "json"])
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def read_findings(page) -> list[list[str]]:
    shown = page.evaluate(READ_FINDINGS)
    while page.locator("#findings-pager button:has-text('next')").count() and \
            page.locator("#findings-pager button:has-text('next')").is_enabled():
        page.click("#findings-pager button:has-text('next')")
        shown += page.evaluate(READ_FINDINGS)
    return shown


@pytest.fixture(scope="module")
def pages(browser, tmp_path_factory) -> dict[str, dict]:
    """Each tree's report, opened once, as the page shows it."""
    out = {}
    for tree in TREES:
        html = tmp_path_factory.mktemp("page") / f"{tree}.html"
        code, err = write_report(str(FIXTURES / "logdirs" / tree), "-o", str(html), *WHERE)
        assert code in (0, 1), err
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.goto(html.resolve().as_uri())
        page.wait_for_selector("body[data-ready]", timeout=15_000)
        shown = page.evaluate(READ_PAGE)
        shown["findings"] = read_findings(page)
        ctx.close()
        out[tree] = shown
    return out


@pytest.mark.parametrize("tree", TREES)
def test_replicas_say_what_diverge_says(pages, tree):
    path = str(FIXTURES / "logdirs" / tree)
    lines = cli("diverge", path)
    shown = pages[tree]["replicas"]
    statuses = [x["status"] for x in lines if x["type"] == "divergence"]
    assert [s["summary"].split(": ", 1)[1].split(" ")[0] for s in shown] == statuses
    truncations = [t for s in shown for t in s["truncations"]]
    expected = [x for x in lines if x["type"] == "truncation"]
    assert len(truncations) == len(expected)
    for text, t in zip(truncations, expected, strict=True):
        if t["discarded_offsets"]:
            last = t["truncate_to"] + t["discarded_offsets"] - 1
            assert text.startswith(f"{t['replica']} (latest epoch {t['follower_epoch']}) would "
                                   f"truncate to {t['truncate_to']}"), text
            assert f"offsets {t['truncate_to']}..{last} ({t['discarded_offsets']}) discarded" \
                in text, text
        else:
            assert text.startswith(f"{t['replica']} keeps its whole log"), text


@pytest.mark.parametrize("tree", TREES)
def test_retention_verdicts_are_the_commands(pages, tree):
    (doc,) = cli("retention", str(FIXTURES / "logdirs" / tree), *WHERE)
    expected = {(visible(shown_path(p["path"])), s["base_offset"]):
                "DELETE" if s["deletable"] else "keep"
                for p in doc["partitions"] for s in p["segments"]}
    shown = pages[tree]["verdicts"]
    assert shown or not expected
    for row in shown:
        base = int(re.match(r"@(\d+)\.\.", row["segment"])[1])
        assert row["verdict"] == expected[(row["path"], base)], row


@pytest.mark.parametrize("tree", TREES)
def test_transactions_are_the_commands(pages, tree):
    lines = cli("transactions", str(FIXTURES / "logdirs" / tree), "--at", AT)
    per_partition = {visible(shown_path(x["path"])): x for x in lines
                     if x["type"] == "partition_transactions"}
    for row in pages[tree]["transactions"]:
        x = per_partition[row["path"]]
        assert row["summary"] == (f"{x['transactions']}: {x['committed']} committed, "
                                  f"{x['aborted']} aborted, {x['open']} open"), row
        assert row["lso"].startswith(f"{x['last_stable_offset']} "), row
    hanging = [x for x in lines if x["type"] == "hanging_transaction"]
    shown = pages[tree]["hanging"]
    assert Counter((visible(shown_path(h["partition"])), f"{h['producer_id']} (epoch "
                    f"{h['producer_epoch']})", str(h["first_offset"])) for h in hanging) == \
        Counter((r[0], r[1], r[3]) for r in shown if len(r) == 8)


@pytest.mark.parametrize("tree", TREES)
def test_groups_are_the_commands(pages, tree):
    paths = str(FIXTURES / "logdirs" / tree)
    lines = cli("offsets", paths) if any((FIXTURES / "logdirs" / tree).glob(
        "**/__consumer_offsets-*")) else []
    groups = {x["group"]: x for x in lines if x["type"] == "group"}
    committed = Counter(x["group"] for x in lines if x["type"] == "committed_offset")
    regressions = Counter((x["group"], f"{x['topic']}-{x['partition']}",
                           f"{x['previous_offset']} → {x['offset']}")
                          for x in lines if x["type"] == "offset_regression")
    shown = pages[tree]["groups"]
    assert len(shown) == len(groups)
    seen = Counter()
    for g in shown:
        name = next(n for n in groups if g["summary"].startswith(visible(n) + "  "))
        x = groups[name]
        assert f"{x['kind']}, {x['state']}" in g["summary"], g
        assert f"{committed[name]} committed offset(s)" in g["summary"], g
        seen.update((name, r[1], r[2]) for r in g["regressions"])
    assert {(visible(k[0]), *k[1:]): n for k, n in regressions.items()} == \
        {(visible(k[0]), *k[1:]): n for k, n in seen.items()}


@pytest.mark.parametrize("tree", TREES)
def test_findings_are_the_commands_and_say_which(pages, tree):
    """Every row the findings table shows is a finding the command it names prints, and the
    counts per command are the ones the page states."""
    path = str(FIXTURES / "logdirs" / tree)
    by_command = {
        "segtools verify": cli("verify", path),
        # ages measured at the report's moment: the page and the command at one clock
        "segtools transactions": cli("transactions", path, "--at", AT),
        "segtools offsets": cli("offsets", path) if any(
            (FIXTURES / "logdirs" / tree).glob("**/__consumer_offsets-*")) else [],
        "segtools diverge": cli("diverge", path),
        "segtools producers": cli("producers", path),
        # one document: its findings are a list in it
        "segtools tiered": [f for doc in cli("tiered", path, *WHERE) for f in doc["findings"]],
    }
    printed = {c: Counter((x["code"], x.get("offset")) for x in lines
                          if x["type"] == "finding") for c, lines in by_command.items()}
    rows = pages[tree]["findings"]
    per_source = Counter(r[7] for r in rows)
    for row in rows:
        code, offset, source = row[1], row[4], row[7]
        if source.startswith("the topic config"):
            continue
        assert (code, int(offset) if offset != "-" else None) in printed[source], row
    sources = pages[tree]["sources"]
    for source, n in per_source.items():
        assert f"{n} from {source}" in " ".join(sources.split()), sources
