"""The report in a real browser (Debian's chromium, driven by Playwright): it renders without
errors, its charts draw, its tables filter and sort, it prints, it stays small on a large
tree, and nothing from a hostile log dir runs, links or fetches."""

from __future__ import annotations

import pytest

from segtools.report.model import DETAILS_LEFT_OUT
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

    # hover names what is deleted when (the tooltip is text from the same analysis)
    page.locator("#overview-chart").scroll_into_view_if_needed()
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
    assert page.evaluate("document.scripts.length") == 3
    assert page.evaluate("""[...document.querySelectorAll('*')].flatMap(e =>
        [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))""") == []
    screenshot(opened, "report-hostile.png")


def test_a_thousand_partitions_stay_small_and_say_what_was_left_out(open_report, tmp_path):
    tree = big_tree(tmp_path / "big", topics=100, partitions=10)
    out = tmp_path / "big.html"
    code, err = write_report(str(tree), "-o", str(out), "--at", AT)
    assert code in (0, 1), err
    size = out.stat().st_size
    assert size < 4 * 1024 * 1024, size
    page_text = out.read_text()
    data = embedded(page_text)
    assert data["summary"]["partitions"] == 1000 and len(data["partitions"]) == 1000
    left = {item["what"]: item["count"] for item in data["left_out"]}
    detailed = sum(1 for p in data["partitions"] if p["detail"])
    assert left[DETAILS_LEFT_OUT] == 1000 - detailed > 0
    assert "Summarised to keep this file small" in page_text
    opened = open_report(out)
    page = opened.page
    assert page.locator("#partitions-table tbody tr").count() == 50
    assert page.inner_text("#partitions-pager").count("page 1 of 20") == 1
    page.click("#partitions-pager button:has-text('next')")
    assert "page 2 of 20" in page.inner_text("#partitions-pager")
    page.fill("#p-text", "events.042-")
    assert page.locator("#partitions-table tbody tr").count() == 10
    assert opened.problems() == []
    assert f"{1000 - detailed} {DETAILS_LEFT_OUT}" in page.inner_text("#left-out")


@pytest.mark.parametrize("width", [480])
def test_narrow_window_still_renders(open_report, tmp_path, width):
    out = tmp_path / "r.html"
    write_report(str(FIXTURES / "logdirs" / "forensics"), "-o", str(out))
    opened = open_report(out, width=width)
    assert opened.problems() == []
    assert opened.page.locator("#overview-chart canvas").count() == 1
