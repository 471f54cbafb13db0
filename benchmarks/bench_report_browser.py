"""The report of a large tree in a browser, against a plain page of the same tree's files.

``segtools report`` over a tree of 1,000 or 10,000 partitions (the trees of
:mod:`benchmarks.bench_tree`, built once and reused) is opened in chromium, driven by
Playwright on the system binary as the report's tests do, and timed inside the page
(``performance.now()``):

- **load**: from navigation to the page's script having drawn it (``body[data-ready]``) and
  the next frame painted;
- **open a detail**: a click on a partition's "open" button (one that is not listed, so its
  detail is parsed from the page's details string) until its detail is drawn and painted;
- **filter**: typing a topic into the partitions filter until the table is redrawn;
- **sort**: a click on the size column's header until the table is redrawn;
- **next page** of the partitions table.

The peer, measured in the same run and the same browser: a plain static HTML page listing
every file of the same tree with its size (what ``find TREE -type f -printf '%s %p\\n'`` prints,
as a table), from navigation to its first frame painted. Each figure is given as a ratio to the
peer's load; the page's node count and JavaScript heap come from the DevTools protocol. Best
of ``--repeat`` fresh pages.

    python -m benchmarks.bench_report_browser [--sizes 1000,10000] [--repeat 3] [--reuse]

``--reuse`` opens ``report-browser-N.html`` already written beside the trees by an earlier
run instead of writing it again.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import subprocess
import time
from pathlib import Path

from benchmarks.bench_tree import ENV, SEGTOOLS, TREES, build_tree

CHROMIUM = os.environ.get("SEGTOOLS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

#: Installed before any script of a page runs: when the page is ready (the report's script
#: marks <body data-ready>; a static page is ready when parsed), the next frame is awaited and
#: the time since navigation kept in window.__painted.
WATCH = """
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
(() => {
  const painted = () => requestAnimationFrame(() => setTimeout(() => {
    window.__painted = performance.now(); }, 0));
  const static_ = () => !document.querySelector('script:not([type])');
  document.addEventListener('DOMContentLoaded', () => {
    if (static_()) { painted(); return; }
    if (document.body.dataset.ready) { painted(); return; }
    new MutationObserver((m, o) => {
      if (document.body.dataset.ready) { o.disconnect(); painted(); }
    }).observe(document.body, {attributes: true});
  });
})();
"""

#: One interaction, timed in the page: ``act`` runs, then the next frame is awaited.
TIMED = """async (act) => {
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const t = performance.now();
  (new Function(act))();
  await frame();
  return performance.now() - t;
}"""

OPEN_OTHER = """
const data = JSON.parse(document.getElementById('report-data').textContent);
const p = data.partitions.find(p => p.detail && !p.listed) || data.partitions.find(p => p.detail);
const box = document.getElementById('p-text');
box.value = p.topic + '-' + p.partition;
box.dispatchEvent(new Event('input'));
window.__target = p.id;
"""
CLICK_OPEN = "document.querySelector('#partitions-table tbody tr button.show').click();"
FILTER = """const box = document.getElementById('p-text');
box.value = window.__topic; box.dispatchEvent(new Event('input'));"""
CLEAR = """const box = document.getElementById('p-text');
box.value = ''; box.dispatchEvent(new Event('input'));"""
SORT = "document.querySelector('#partitions-table th[data-key=size]').click();"
NEXT = """[...document.querySelectorAll('#partitions-pager button')].find(
    b => b.textContent === 'next').click();"""


def listing_page(tree: Path, out: Path) -> Path:
    """The peer: every file of the tree with its size, one table row each, no script."""
    found = subprocess.run(["find", str(tree), "-type", "f", "-printf", "%s %p\\n"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    with open(out, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><meta charset='utf-8'><title>files</title></head>"
                f"<body><h1>{html.escape(str(tree))}</h1><table><thead><tr><th>size</th>"
                "<th>path</th></tr></thead><tbody>\n")
        for line in found:
            size, _, path = line.partition(" ")
            f.write(f"<tr><td>{size}</td><td>{html.escape(path)}</td></tr>\n")
        f.write("</tbody></table></body></html>\n")
    return out


def write_report(tree: Path, out: Path) -> float:
    t = time.perf_counter()
    subprocess.run([SEGTOOLS, "report", "-q", str(tree), "-o", str(out)], env=ENV,
                   stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def metrics(page) -> dict:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    cdp.detach()
    return {"nodes": int(got.get("Nodes", 0)), "js_heap_mb": got.get("JSHeapUsedSize", 0) / 2**20}


def open_timed(browser, path: Path, wait: str) -> tuple[object, object, float]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.add_init_script(WATCH)
    page.goto(path.resolve().as_uri(), wait_until="load", timeout=600_000)
    page.wait_for_function("window.__painted !== undefined", timeout=600_000)
    assert page.evaluate(wait), path
    return ctx, page, page.evaluate("window.__painted")


def measure(browser, report: Path, peer: Path, repeat: int) -> dict:
    best: dict[str, float] = {}
    seen: dict[str, dict] = {}

    def keep(name: str, ms: float) -> None:
        best[name] = min(best.get(name, float("inf")), ms)

    for _ in range(repeat):
        ctx, page, ms = open_timed(browser, peer, "document.querySelectorAll('tr').length > 1")
        keep("peer_load", ms)
        seen["peer"] = metrics(page)
        ctx.close()
        ctx, page, ms = open_timed(browser, report, "!!document.body.dataset.ready")
        keep("load", ms)
        seen["report"] = metrics(page)
        page.evaluate(TIMED, OPEN_OTHER)
        keep("open_detail", page.evaluate(TIMED, CLICK_OPEN))
        assert page.evaluate("document.getElementById('p-' + window.__target).dataset.filled")
        page.evaluate(TIMED, CLEAR)
        page.evaluate("window.__topic = JSON.parse(document.getElementById('report-data')"
                      ".textContent).partitions.slice(-1)[0].topic")
        keep("filter", page.evaluate(TIMED, FILTER))
        page.evaluate(TIMED, CLEAR)
        keep("sort", page.evaluate(TIMED, SORT))
        keep("next_page", page.evaluate(TIMED, NEXT))
        errors = page.evaluate("window.__errors || []")
        assert not errors, errors
        ctx.close()
    return {"ms": best, "ratio": {k: v / best["peer_load"] for k, v in best.items()},
            "pages": seen}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse", action="store_true",
                    help="open report-browser-N.html of an earlier run if there is one")
    opts = ap.parse_args()
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for n in (int(s) for s in opts.sizes.split(",")):
            tree = build_tree(n)
            report = TREES / f"report-browser-{n}.html"
            if not (opts.reuse and report.exists()):
                print(f"{n} partitions: segtools report took {write_report(tree, report):.1f} s")
            peer = listing_page(tree, TREES / f"listing-{n}.html")
            r = measure(browser, report, peer, opts.repeat)
            r["report_mb"] = report.stat().st_size / 2**20
            r["peer_mb"] = peer.stat().st_size / 2**20
            results[n] = r
            print(f"{n} partitions: report {r['report_mb']:.1f} MB, "
                  f"{r['pages']['report']['nodes']} nodes, "
                  f"{r['pages']['report']['js_heap_mb']:.0f} MB JS heap; peer (static file "
                  f"listing) {r['peer_mb']:.1f} MB, {r['pages']['peer']['nodes']} nodes; "
                  f"load average {os.getloadavg()[0]:.1f}")
            for k, ms in r["ms"].items():
                print(f"  {k:12} {ms:9.1f} ms = {r['ratio'][k]:6.3f}x the peer's load")
        browser.close()
    TREES.mkdir(parents=True, exist_ok=True)
    (TREES / "report-browser.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
