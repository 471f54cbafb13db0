"""The files a report inlines: the vendored chart library (uPlot), checked, and the report's
own script and stylesheet.

uPlot is vendored, not fetched: a report must open from disk with no network, and an
incident file must not depend on a CDN answering later. ``assets/uplot.json`` pins the npm
version and the sha256 of each vendored file; ``assets/refresh.sh`` refreshes them from the npm
registry. The sums are checked here, before a byte is inlined, so a file changed by hand (or
half-copied) stops the report with an error instead of shipping unknown script to a reader.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from segtools.errors import SegtoolsError

HERE = Path(__file__).resolve().parent / "assets"


@dataclass(frozen=True, slots=True)
class Assets:
    uplot_js: str
    uplot_css: str
    uplot_version: str
    format_js: str
    report_js: str
    report_css: str


def _read(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def check_pinned() -> dict:
    """The pin file, after checking each vendored file against its sha256."""
    pin = json.loads(_read("uplot.json"))
    for name, expected in pin["sha256"].items():
        found = hashlib.sha256((HERE / name).read_bytes()).hexdigest()
        if found != expected:
            raise SegtoolsError(f"vendored {name} does not match its pinned sha256 "
                                f"({found[:12]} != {expected[:12]}); run "
                                "segtools/report/assets/refresh.sh", path=str(HERE / name))
    return pin


@cache
def load() -> Assets:
    pin = check_pinned()
    found = Assets(_read("uPlot.iife.min.js"), _read("uPlot.min.css"), pin["version"],
                   _read("format.js"), _read("report.js"), _read("report.css"))
    for name, text in (("uPlot.iife.min.js", found.uplot_js), ("format.js", found.format_js),
                       ("report.js", found.report_js),
                       ("uPlot.min.css", found.uplot_css), ("report.css", found.report_css)):
        if "</script" in text.lower() or "</style" in text.lower():
            raise SegtoolsError("would end its inline element early", path=str(HERE / name))
    return found
