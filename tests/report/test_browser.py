"""The report in a real browser (Debian's chromium, driven by Playwright): it renders without
errors, its charts draw, its tables filter and sort, it prints, it stays small on a large
tree, and nothing from a hostile log dir runs, links or fetches."""

from __future__ import annotations

import re

import pytest

from segtools.report.model import DETAILS_LEFT_OUT, SAMPLES_LEFT_OUT, Budget
from tests.fixtures_manifest import FIXTURES
from tests.report.bigtree import big_tree
from tests.report.conftest import screenshot, write_report
from tests.report.test_report import AT, CONFIG, embedded

HOSTILE = FIXTURES / "logdirs" / "hostile"

#: The payloads of fixtures/java/HostileFixtures.java as the page must show them: as text,
#: control characters made visible the way the command line shows them.
SHOWN = ["<script>pwn(1)<\\script>", '"><img src=x onerror=pwn(2)>', "javascript:pwn(3)",
         "\\x1b[31mred\\x1b[0m\\x1b]8;;javascript:pwn(4)\\x07link",
         "</script><script>pwn(5)</script>", "<!--<script>pwn(6)</script>-->",
         '"><img src=x onerror=pwn(7)>', "javascript:pwn(8)", "\\u2028\\u2029';pwn(9);//",
         "\\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mred", "<svg onload=pwn(10)>",
         "\\xff\\xfe<b>pwn(14)</b>", '"><img src=x onerror=pwn(11)>',
         "</script><script>pwn(12)</script>", "javascript:pwn(13)"]


def canvas_ink(page, selector: str) -> int:
    """Pixels a chart's canvas has drawn (not transparent): a chart that drew nothing has 0."""
    return page.eval_on_selector(selector, """c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }""")


def visible_rows(page) -> list[dict]:
    return page.eval_on_selector_all("#findings-table tbody tr", """rows => rows.map(r => ({
        severity: r.dataset.severity, code: r.cells[1].innerText, topic: r.cells[2].innerText}))""")


def test_fixture_trees_render_draw_filter_and_print(open_report, tmp_path):
    out = tmp_path / "fixtures.html"
    code, err = write_report(str(FIXTURES / "logdirs"), "-o", str(out), "--at", AT,
                             "--config", str(CONFIG))
    assert code == 1, err
    data = embedded(out.read_text())
    opened = open_report(out)
    page = opened.page

    # the overview chart: one line per topic it names, drawn
    n = len(data["overview"]["series"])
    assert n >= 2
    assert page.get_attribute("#overview-chart", "data-series") == str(n)
    assert page.locator("#overview-chart .u-legend .u-series").count() == n + 1  # + time
    assert canvas_ink(page, "#overview-chart canvas") > 1000

    # a consumer group with regressions: its timeline is open and drawn, regressions marked
    group = next(g for g in data["groups"] if g["regressions"])
    chart = page.locator("details.group[open] .chart.offsets").first
    assert chart.get_attribute("data-series") == str(len(group["lines"]))
    # a line and its regression markers per partition (a static legend has no time row)
    assert chart.locator(".u-legend .u-series").count() == 2 * len(group["lines"])
    assert canvas_ink(page, "details.group[open] .chart.offsets canvas") > 500

    # hover names what is deleted when (the tooltip is text from the same analysis); the
    # chart is brought into view first, wherever the trees above it leave it
    page.locator("#overview-chart .u-over").scroll_into_view_if_needed()
    box = page.locator("#overview-chart .u-over").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    assert page.locator("#overview-chart .tip").is_visible()

    # filtering the findings table
    total = len(data["findings"])
    assert len(visible_rows(page)) == min(total, 50)
    page.select_option("#f-severity", "error")
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    rows = visible_rows(page)
    assert rows and len(rows) == len(errors) and {r["severity"] for r in rows} == {"error"}
    assert page.inner_text("#f-count") == f"{len(errors)} of {total} shown"
    page.select_option("#f-severity", "")
    code_name = data["finding_codes"][-1]["code"]
    page.select_option("#f-code", code_name)
    rows = visible_rows(page)
    assert rows and {r["code"] for r in rows} == {code_name}
    page.select_option("#f-code", "")
    page.select_option("#f-topic", "payments")
    assert {r["topic"] for r in visible_rows(page)} == {"payments"}
    page.select_option("#f-topic", "")
    page.fill("#f-text", "CRC")
    assert {r["code"] for r in visible_rows(page)} == {"crc_mismatch"}
    page.fill("#f-text", "")
    page.click("#findings-table th[data-key=code]")
    codes = [r["code"] for r in visible_rows(page)]
    assert codes == sorted(codes)

    # a partition's detail: opened from its row, with its own forecast chart
    page.locator("#partitions-table button.show").first.click()
    opened_detail = page.locator("details.partition[open]").first
    assert opened_detail.locator("table").count() >= 1

    screenshot(opened, "report-fixtures.png")

    # on paper: every detail opens and draws, nothing is a link
    page.emulate_media(media="print")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert page.locator("details:not([open])").count() == 0
    assert page.locator("a").count() == 0
    assert opened.problems() == []
    assert set(opened.requests) <= {opened.url}


def test_hostile_strings_stay_text_and_nothing_runs_or_fetches(open_report, tmp_path):
    """Topic names, keys, values, header keys and values, a group id and a transactional id
    holding markup, script, javascript: URLs and terminal escapes (Kafka-written bytes, see
    fixtures/java/HostileFixtures.java): shown as text, nothing executed, nothing fetched."""
    config = tmp_path / "compact.properties"
    config.write_text("log.cleanup.policy=compact,delete\n")
    out = tmp_path / "hostile.html"
    code, err = write_report(str(HOSTILE), "-o", str(out), "--config", str(config),
                             "--at", "2023-12-09T00:00:00Z")
    assert code == 1, err  # the hanging transaction and the regression are findings
    opened = open_report(out)
    page = opened.page
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")  # draw every detail
    for chart in page.locator(".chart .u-over").all()[:3]:  # hover: tooltips with the names
        box = chart.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    text = page.inner_text("body")
    missing = [s for s in SHOWN if s not in text]
    assert not missing, missing
    assert opened.pwned == [] and opened.blocked == []
    assert opened.problems() == []
    assert set(opened.requests) <= {opened.url}
    assert page.locator("img, svg, iframe, object, embed, a, form, base, link").count() == 0
    # the page's three scripts (uPlot, the shared formatting, the report), and its two data
    # elements (the document, the details)
    assert page.evaluate("[...document.scripts].map(s => s.type || s.id)") == [
        "application/json", "application/json", "", "", ""]
    assert page.evaluate("""[...document.querySelectorAll('*')].flatMap(e =>
        [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))""") == []
    screenshot(opened, "report-hostile.png")


#: What the page holds once it has loaded: elements in the document, filled partition details.
LOADED = """() => ({elements: document.getElementsByTagName('*').length,
                    filled: document.querySelectorAll('details.partition[data-filled]').length})"""


def test_a_large_tree_opens_with_its_detail_read_on_demand(open_report, tmp_path):
    """1,000 partitions: every one has a summary row and a detail, but the page parses only
    its summary document at load; the table pages, sorts and filters; a partition that is not
    listed opens from its row and shows its own detail (and why it has no records)."""
    tree = big_tree(tmp_path / "big", topics=100, partitions=10)
    out = tmp_path / "big.html"
    code, err = write_report(str(tree), "-o", str(out), "--at", AT)
    assert code in (0, 1), err
    page_text = out.read_text()
    data = embedded(page_text)
    assert data["summary"]["partitions"] == 1000 and len(data["partitions"]) == 1000
    # the document parsed at load stays small: the details are a string apart from it
    document = re.search(r'id="report-data">(.*?)</script>', page_text, re.S).group(1)
    assert len(document) < 1024 * 1024, len(document)
    assert all(p["detail"] for p in data["partitions"])
    listed = [p for p in data["partitions"] if p["listed"]]
    assert len(listed) == Budget().listed_partitions
    left = {item["what"]: item["count"] for item in data["left_out"]}
    assert DETAILS_LEFT_OUT not in left
    live = sum(1 for p in data["partitions"] if p["state"] == "live")
    assert left[SAMPLES_LEFT_OUT] == live - len(listed) > 0
    assert "Summarised to keep this file small" in page_text

    opened = open_report(out)
    page = opened.page
    loaded = page.evaluate(LOADED)
    assert loaded["filled"] == 0  # no detail parsed or drawn before it is opened
    assert loaded["elements"] < 3000, loaded  # 50 rows a page, the listed details closed
    assert page.locator("details.partition").count() == len(listed)
    assert page.locator("#partitions-table tbody tr").count() == 50
    assert page.inner_text("#partitions-pager").count("page 1 of 20") == 1
    page.click("#partitions-pager button:has-text('next')")
    assert "page 2 of 20" in page.inner_text("#partitions-pager")
    page.click("#partitions-table th[data-key=size]")
    shown = page.eval_on_selector_all("#partitions-table tbody tr", "rs => rs.length")
    assert shown == 50 and "page 1 of 20" in page.inner_text("#partitions-pager")
    smallest = min(p["size"] for p in data["partitions"])
    first = next(p for p in data["partitions"] if p["size"] == smallest)
    assert page.inner_text("#partitions-table tbody tr:first-child td:nth-child(4)") == \
        _bytes(first["size"])

    # a partition that is not listed: found by the filter, opened from its row
    other = next(p for p in data["partitions"] if not p["listed"] and p["state"] == "live"
                 and p["detail"]["segments"])
    page.fill("#p-text", f"{other['topic']}-{other['partition']}")
    assert page.locator("#partitions-table tbody tr").count() == 1
    page.click("#partitions-table tbody tr button.show")
    box = page.locator(f"details#p-{other['id']}")
    assert box.get_attribute("open") is not None and box.get_attribute("data-filled") == "1"
    rows = box.locator("table").first.locator("tbody tr").all_inner_texts()
    segs = other["detail"]["segments"]
    assert len(rows) == len(segs)
    for row, seg in zip(rows, segs, strict=True):
        if "gap" not in seg:
            assert row.startswith(f"@{seg['base_offset']}.."), (row, seg)
    assert "read for the most telling partitions only" in box.inner_text()
    assert page.evaluate(LOADED)["filled"] == 1  # only that one was parsed and drawn
    page.fill("#p-text", "events.042-")
    assert page.locator("#partitions-table tbody tr").count() == 10
    assert opened.problems() == []
    assert f"{left[SAMPLES_LEFT_OUT]} {SAMPLES_LEFT_OUT}" in page.inner_text("#left-out")


def _bytes(n: int) -> str:
    """The page's way of writing a size (report.js fmtBytes)."""
    units, i, v = ["B", "KiB", "MiB", "GiB", "TiB"], 0, float(n)
    while v >= 1024 and i < len(units) - 1:
        v, i = v / 1024, i + 1
    return f"{v:.0f} {units[i]}" if i == 0 else f"{v:.1f} {units[i]}"


@pytest.mark.parametrize("width", [480])
def test_narrow_window_still_renders(open_report, tmp_path, width):
    out = tmp_path / "r.html"
    write_report(str(FIXTURES / "logdirs" / "forensics"), "-o", str(out))
    opened = open_report(out, width=width)
    assert opened.problems() == []
    assert opened.page.locator("#overview-chart canvas").count() == 1
