"""The report's tests: reports written by the real command, and a real browser to open them.

The browser is Debian's chromium (``/usr/bin/chromium``; ``make test`` installs it with
apt-get when it runs as root) driven by Playwright for Python, launched on the system binary:
Playwright's own browser download is never used. Where no chromium can be had, the browser
tests skip and say so; everything else still runs.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from segtools.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".cache" / "test-artifacts"
CHROMIUM = os.environ.get("SEGTOOLS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

#: Installed before any script of the page runs: every payload in the hostile tree calls
#: pwn(n), and the page's policy reports what it blocked; both are recorded, never acted on.
WATCH = """
window.__pwned = [];
window.pwn = function (n) { window.__pwned.push(String(n)); };
window.__blocked = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__blocked.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def write_report(*argv: str) -> tuple[int, str]:
    """``segtools report ARGV`` in this process; its exit code, and what it printed (the
    report's path on stdout, then stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", *argv])
    return code, out.getvalue() + err.getvalue()


@dataclass
class Opened:
    page: object
    url: str
    console: list = field(default_factory=list)  # (type, text)
    errors: list = field(default_factory=list)  # uncaught page errors
    requests: list = field(default_factory=list)  # every request the page made

    def problems(self) -> list:
        return [m for m in self.console if m[0] in ("error", "warning")] + self.errors

    @property
    def pwned(self) -> list:
        return self.page.evaluate("window.__pwned")

    @property
    def blocked(self) -> list:
        return self.page.evaluate("window.__blocked")


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (the test extra has it)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"no browser at {CHROMIUM}: 'make test' installs Debian's chromium with "
                    "apt-get when run as root; elsewhere install it (or set SEGTOOLS_CHROMIUM)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def open_report(browser, tmp_path):
    """Open a report file in a fresh page that records console messages, page errors and
    every request (each one is answered by the file itself or refused)."""
    contexts = []

    def opener(path: Path, width: int = 1400) -> Opened:
        ctx = browser.new_context(viewport={"width": width, "height": 1000},
                                  java_script_enabled=True)
        contexts.append(ctx)
        page = ctx.new_page()
        url = path.resolve().as_uri()
        opened = Opened(page, url)
        page.add_init_script(WATCH)
        page.on("console", lambda m: opened.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: opened.errors.append(str(e)))

        def route(r):
            opened.requests.append(r.request.url)
            if r.request.url == url:
                r.continue_()
            else:
                r.abort()

        page.route("**/*", route)
        page.on("request", lambda r: r.url == url or opened.requests.append(r.url))
        page.goto(url)
        page.wait_for_selector("body[data-ready]", timeout=15_000)
        return opened

    yield opener
    for ctx in contexts:
        ctx.close()


def screenshot(opened: Opened, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / name
    opened.page.screenshot(path=str(out), full_page=True)
    return out


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
