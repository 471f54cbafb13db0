"""The report's what-if section (``segtools report ... --what-if NAME=VALUE --recommend``) read
in a real browser (Debian's chromium through Playwright) on the ``whatif`` tree: what the page
SHOWS per topic (its table's values and their exact numbers, the recommendation's sentence and
cost table, the charts' legends under the cursor) must be what ``segtools retention --what-if
--recommend --format json`` says for the same tree, change and time."""

from __future__ import annotations

import contextlib
import html
import io
import json
import math

import pytest

from segtools.analysis.whatif import shown_cost, shown_value
from segtools.cli.main import main
from segtools.units import format_bytes, format_duration
from tests.fixtures_manifest import FIXTURES
from tests.report.conftest import screenshot, write_report
from tests.report.test_browser import canvas_ink

TREE = FIXTURES / "logdirs" / "whatif"
CONFIG = FIXTURES / "configs" / "whatif-topic-configs.txt"
AT = "2024-01-11T00:00Z"  # the tree's evaluation time: T + 240 h
CHANGE = "segment.bytes=16384"
ASK = ("--config", str(CONFIG), "--at", AT, "--what-if", CHANGE, "--recommend")

#: Every what-if topic as the page shows it: its name, the change, each table row's cells (text
#: and the exact number in the cell's tooltip); each recommendation's parts.
READ_SECTION = """() => {
  const text = e => e ? e.textContent.trim() : null;
  const topics = Array.from(document.querySelectorAll('#what-if details.whatif-topic')).map(d => ({
    topic: text(d.querySelector('.whatif-topic-name')),
    change: text(d.querySelector('.whatif-change')),
    charts: d.querySelectorAll('.uplot').length,
    rows: Array.from(d.querySelectorAll('table.whatif-table tbody tr')).map(tr => ({
      label: text(tr.cells[0]), current: text(tr.cells[1]), proposed: text(tr.cells[2]),
      exact: [tr.cells[1].title, tr.cells[2].title]}))}));
  const recs = Array.from(document.querySelectorAll('#what-if .whatif-recommendation')).map(r => ({
    topic: text(r.querySelector('.whatif-rec-topic')),
    change: text(r.querySelector('.whatif-rec-change')),
    why: text(r.querySelector('.whatif-why')),
    cost: Array.from(r.querySelectorAll('table.whatif-cost tbody tr')).map(
      tr => Array.from(tr.cells).map(td => td.textContent)),
    alternatives: Array.from(r.querySelectorAll('.whatif-alternatives li')).map(li => ({
      change: text(li.querySelector('code')),
      does: text(li.querySelector('.whatif-alt-does'))}))}));
  return {topics, recs, drawn: document.getElementById('what-if').dataset.drawn};
}"""


def cli_json(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["retention", str(TREE), *argv, "--format", "json"])
    assert code in (0, 1)
    return json.loads(out.getvalue())


def age(ms: int | None) -> str:
    return "-" if ms is None else format_duration(ms)


def exact(value, unit: str) -> str:
    return "-" if value is None else f"{value} {unit}".rstrip()


def share(fraction: float) -> str:
    """A swing as a person reads it: whole percents, one decimal where rounding would say
    none or all of a share that is neither (0.9973 is 99.7%, not 100%)."""
    if 0.995 <= fraction < 1:
        return f"{int(fraction * 1000) / 10}%"
    if 0 < fraction < 0.005:
        return f"{math.ceil(fraction * 1000) / 10}%"
    return f"{round(100 * fraction)}%"


def expected_rows(c: dict, p: dict) -> list[dict]:
    """The table ``segtools retention --what-if`` prints, from its JSON numbers."""
    def row(label, fmt, unit, key):
        return {"label": label, "current": fmt(c[key]), "proposed": fmt(p[key]),
                "exact": [exact(c[key], unit), exact(p[key], unit)]}

    def count(n):
        return f"{n:,}"

    return [row("on disk now", format_bytes, "bytes", "start_bytes"),
            row("peak size", format_bytes, "bytes", "peak_bytes"),
            row("trough size", format_bytes, "bytes", "trough_bytes"),
            {"label": "swing", "current": share(c["swing"]),
             "proposed": share(p["swing"]), "exact": [str(c["swing"]), str(p["swing"])]},
            row("oldest record kept now", age, "ms", "oldest_age_ms_start"),
            row("oldest record, max", age, "ms", "oldest_age_ms_max"),
            row("oldest record, 2nd half", age, "ms", "oldest_age_ms_late"),
            row("oldest record, end", age, "ms", "oldest_age_ms_end"),
            row("segments, most at once", count, "", "segments_max"),
            {"label": "rolls / deletions",
             "current": f"{c['rolls']:,} / {c['deletions']:,}",
             "proposed": f"{p['rolls']:,} / {p['deletions']:,}",
             "exact": [f"{c['rolls']} / {c['deletions']}", f"{p['rolls']} / {p['deletions']}"]}]


def expected_alternative(a: dict) -> dict:
    """An ``also keeps it:`` line of the CLI, from its JSON: the change (a value in units
    beside it where that reads differently) and what it does over the horizon's second half."""
    change = ", ".join(f"{k}={v}" + ("" if shown_value(k, v) == str(v)
                                     else f" ({shown_value(k, v)})")
                       for k, v in a["changes"].items())
    after, cost = a["after"], a["cost"]["after"]
    cleaner = (f", {cost['cleaner_passes']} cleaner passes reading "
               f"{format_bytes(cost['cleaner_bytes_read'])}" if "cleaner_passes" in cost else "")
    return {"change": change,
            "does": f"(oldest record at most {age(after['oldest_age_ms_late'])}, swing "
                    f"{share(after['swing_late'])}, segments at most "
                    f"{cost['segments_max']}{cleaner})"}


@pytest.fixture(scope="module")
def cli() -> dict:
    return cli_json(*ASK)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("whatif-report") / "whatif.html"
    code, err = write_report(str(TREE), "-o", str(out), *ASK)
    assert code in (0, 1), err
    return out


def test_the_page_shows_the_cli_numbers(open_report, report, cli):
    """Each topic's table: the CLI's peak and trough sizes, swing, oldest record ages,
    segments and rolls, written as the CLI writes them, with the exact JSON numbers behind
    each cell; the change is the one asked for."""
    opened = open_report(report)
    shown = opened.page.evaluate(READ_SECTION)
    screenshot(opened, "whatif-report.png")
    topics = {w["topic"]: w for w in cli["what_if"] if w["partition"] is None}
    assert sorted(t["topic"] for t in shown["topics"]) == sorted(topics)
    for t in shown["topics"]:
        want = topics[t["topic"]]
        assert t["change"] == CHANGE
        assert t["rows"] == expected_rows(want["current"], want["proposed"]), t["topic"]
        assert t["charts"] == 2
    assert shown["drawn"] == str(len(topics))
    assert opened.problems() == [] and opened.blocked == []


def test_the_page_shows_the_cli_recommendations(open_report, report, cli):
    """Each recommendation, in the CLI's order: its topic, change, sentence, cost table (in
    the CLI's units) and the other changes that also keep the promise, each worded as the
    CLI's ``also keeps it:`` line (the quiet topic's fix is a smaller segment)."""
    shown = open_report(report).page.evaluate(READ_SECTION)["recs"]
    assert [r["topic"] for r in shown] == [r["topic"] for r in cli["recommendations"]]
    assert "quiet-events" in [r["topic"] for r in shown]
    for got, want in zip(shown, cli["recommendations"], strict=True):
        assert got["change"] == ", ".join(f"{k}={v}" for k, v in want["changes"].items())
        assert got["why"] == want["why"]
        before, after = want["cost"]["before"], want["cost"]["after"]
        assert got["cost"] == [[k.removesuffix("_ms").replace("_", " "), shown_cost(k, before[k]),
                                shown_cost(k, after[k])] for k in before]
        assert got["alternatives"] == [expected_alternative(a)
                                       for a in want.get("alternatives", [])]


def test_the_charts_draw_the_cli_series(open_report, report, cli):
    """Under the cursor, a size chart's legend shows the time and the two runs' sizes of
    the CLI's series (a run without a point there shows '-'); the age chart shows the
    oldest record's age, ``at - oldest record``, and retention.ms. Both charts drew ink."""
    page = open_report(report).page
    topics = {w["topic"]: w for w in cli["what_if"] if w["partition"] is None}
    details = page.locator("#what-if details.whatif-topic")
    seen = 0
    for i in range(details.count()):
        d = details.nth(i)
        w = topics[d.locator(".whatif-topic-name").inner_text()]
        sizes = [{format_bytes(b) for _, b, _ in w[s]["series"]} | {"-"}
                 for s in ("current", "proposed")]
        ages = [{age(at - o) for at, _, o in w[s]["series"] if o is not None} | {"-"}
                for s in ("current", "proposed")]
        for kind, allowed, extra in (("size", sizes, 0), ("age", ages, 1)):
            chart = d.locator(f".whatif-{kind}")
            assert chart.get_attribute("data-series") == str(2 + extra)
            assert canvas_ink(page, f"#{chart.get_attribute('id')} canvas") > 1000
            chart.scroll_into_view_if_needed()
            box = chart.locator(".u-over").bounding_box()
            for k in range(1, 24):
                page.mouse.move(box["x"] + box["width"] * k / 24, box["y"] + box["height"] / 2)
                values = chart.locator(".u-legend .u-value").all_inner_texts()
                assert values[0].startswith("20")  # the time, ISO UTC
                assert values[1] in allowed[0] and values[2] in allowed[1], (kind, values)
                seen += values[1] != "-"
                if extra:
                    assert values[3] == format_duration(7 * 86_400_000)  # retention.ms
    assert seen > 20


def test_no_section_unless_asked(tmp_path):
    """Without --what-if or --recommend the report has no what-if section and no script for
    it."""
    out = tmp_path / "plain.html"
    code, err = write_report(str(TREE), "-o", str(out), "--config", str(CONFIG), "--at", AT)
    assert code in (0, 1), err
    html = out.read_text()
    assert 'id="what-if"' not in html and "D.what_if" not in html
    code, err = write_report(str(TREE), "-o", str(out), "--what-if", CHANGE, "--horizon", "0")
    assert code == 2 and "--horizon" in err
    # --horizon alone asks for no simulation: refused, as by segtools retention
    code, err = write_report(str(TREE), "-o", str(out), "--horizon", "60")
    assert code == 2 and "--horizon without --what-if or --recommend" in err


def test_the_page_says_why_nothing_is_recommended(tmp_path):
    """The page showed tables only: a topic --recommend left alone said neither why (its
    promise kept, a history too short to extrapolate) nor that no appends were modelled.
    Each topic carries the CLI's sentence and notes, word for word."""
    out = tmp_path / "why.html"
    kept, short = TREE / "busy-clicks-0", FIXTURES / "logdirs" / "sample" / "torn-tail-0"
    code, err = write_report(str(kept), str(short), "-o", str(out), "--config", str(CONFIG),
                             "--at", AT, "--recommend")
    assert code in (0, 1), err
    page = out.read_text()
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(io.StringIO()):
        main(["retention", str(kept), str(short), "--config", str(CONFIG), "--at", AT,
              "--recommend"])
    lines = [line.strip() for line in said.getvalue().splitlines()
             if line.startswith(("topic ", "  torn-tail-0: "))]
    assert len(lines) == 3 and any("too short to extrapolate" in line for line in lines)
    assert any("no change proposed because the current config keeps its promise" in line
               for line in lines)
    for line in lines:
        assert line in html.unescape(page), line


def test_charts_stay_within_the_budget_recommendations_first():
    """With room for one chart, the topic drawn is one with a recommendation; the others
    keep their table and the section counts them; the drawn points are the library's
    series (size as is, age as ``at - oldest record``)."""
    import segtools
    from segtools.report.whatif import from_report

    report = segtools.what_if(TREE, changes=CHANGE, at=AT, recommend=True, config=CONFIG)
    section = from_report(report, charted=1)
    drawn = [t for t in section["topics"] if t["chart"] is not None]
    assert len(drawn) == 1 and drawn[0]["recommendation"] is not None
    assert section["charts_left_out"] == len(section["topics"]) - 1 == 3
    assert all(len(t["rows"]) == 10 for t in section["topics"])
    w = next(x for x in report.items if x.topic == drawn[0]["topic"] and x.partition is None)
    chart = drawn[0]["chart"]
    points = dict(zip(chart["x"], zip(chart["size"][0], chart["age"][0], strict=True),
                      strict=True))
    for at, size, oldest in w.current.series:
        assert points[at / 1000] == (size, None if oldest is None else at - oldest)
    assert chart["retention_ms"] == 7 * 86_400_000
