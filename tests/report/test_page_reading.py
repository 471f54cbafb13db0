"""The report read as a person reads it, in a real browser, on the bundled trees: no word is
cut in two by a narrow column (a 20-digit segment file name stays on one line), chart times
are ISO UTC like every other time on the page, byte axes tick at round binary values with no
label twice, and every count the page states says what it counts."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from tests.fixtures_manifest import FIXTURES
from tests.report.conftest import write_report
from tests.report.test_report import AT, CONFIG

#: Every token of a table cell (words, cut after each "/" or "-" where lines may wrap; a <wbr>
#: separates text nodes, so the page's own break points are allowed) that the layout split
#: over two lines although it would fit the cell on a line of its own.
BROKEN_WORDS = """() => {
  window.dispatchEvent(new Event('beforeprint'));
  const broken = [];
  document.querySelectorAll('table.grid td:not(.data)').forEach(td => {
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[^\\s\\/-]+[\\/-]?/g)) {
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const rects = Array.from(r.getClientRects()).filter(x => x.width > 0);
        const wide = rects.reduce((s, x) => s + x.width, 0);
        if (rects.length > 1 && wide <= td.clientWidth) broken.push(m[0]);
      }
    }
  });
  return broken;
}"""


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    out = tmp_path_factory.mktemp("reading") / "fixtures.html"
    code, err = write_report(str(FIXTURES / "logdirs"), "-o", str(out), "--at", AT,
                             "--config", str(CONFIG))
    assert code == 1, err
    ctx = browser.new_context(viewport={"width": 1000, "height": 1000})
    p = ctx.new_page()
    p.goto(out.resolve().as_uri())
    p.wait_for_selector("body[data-ready]", timeout=15_000)
    yield p
    ctx.close()


def test_narrow_columns_break_no_word(page):
    assert page.evaluate(BROKEN_WORDS) == []
    names = page.locator("#findings-table td.path").all_inner_texts()
    assert any(re.search(r"/\d{20}\.\w+", n) for n in names)


def test_chart_times_are_iso_utc(page):
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    ticks = page.eval_on_selector_all(
        ".chart .uplot", "cs => cs.map(c => c.dataset.xticks).filter(Boolean)")
    assert ticks and page.locator("details.group .chart .uplot").count()
    for axis in ticks:
        for label in axis.split("|"):
            assert re.fullmatch(r"\d{4}-\d\d-\d\d\n\d\d:\d\d(:\d\d(\.\d+)?)?Z", label), label


def test_byte_axes_tick_at_round_binary_values_each_once(page):
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    axes = page.eval_on_selector_all(
        ".chart .uplot", "cs => cs.map(c => c.dataset.yticks).filter(Boolean)")
    assert axes
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for axis in axes:
        labels = axis.split("|")
        assert len(labels) == len(set(labels)), labels
        values = [float(v) * units[u] for v, u in (label.split() for label in labels)]
        step = min(b - a for a, b in itertools.pairwise(values)) if len(values) > 1 else 1
        assert step == 2 ** round(math.log2(step)), labels


def test_counts_say_what_they_count(page):
    sources = " ".join(page.inner_text("#finding-sources").split())
    total = int(page.locator(".card.sev-error b, .card.sev-warning b, .card.sev-info b")
                .first.inner_text())
    parts = [int(n) for n in re.findall(r"(\d+) from segtools", sources)]
    parts += [int(n) for n in re.findall(r"(\d+) from the topic config", sources)]
    assert sum(parts) == total, sources
    left = page.inner_text("#left-out")
    if "group charts" in left:
        assert "summed over groups" in left and "whole cluster" in left


def test_every_date_on_the_page_is_iso_utc(page):
    """One style for every time the page prints (``2023-11-20T09:07:30Z``), never a local,
    12-hour or space-separated one."""
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    text = page.inner_text("body")
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?Z", text)
    assert not re.search(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|\d{4}-\d\d-\d\d \d\d:\d\d|"
                         r"\d(am|pm)\b| UTC\b", text), \
        re.search(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|\d{4}-\d\d-\d\d \d\d:\d\d|\d(am|pm)\b| UTC\b",
                  text)
