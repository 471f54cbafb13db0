"""The report as one HTML page: the auto-escaping template, the inlined assets, the embedded
data, and a Content-Security-Policy that forbids every fetch.

Three layers keep hostile strings from the tree inert:

1. Jinja2 renders the page with auto-escaping on: a topic named ``"><img onerror=...>`` is
   written as ``&#34;&gt;&lt;img ...``, text in the page.
2. The data the script draws from is JSON inside ``<script type="application/json">``, which
   the browser never runs; ``<``, ``>``, ``&``, U+2028 and U+2029 are written as ``\\uXXXX``
   escapes, so no string can close the element (``</script>``) or open a comment (``<!--``).
   The script reads it with ``JSON.parse`` and puts every string into the page with
   ``textContent`` (never as markup).
3. The policy allows only the page's own scripts and one stylesheet (by their sha256) and
   nothing else: no other script, no inline handler, no image, font, frame or connection, no
   form target, no base URL. Even a mistake in 1 or 2 could not run or fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from segtools.report import assets, whatif
from segtools.report.model import SEVERITY_RANK, ReportModel, json_text
from segtools.text import terminal_safe
from segtools.units import format_bytes, format_time

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: JSON text that must not appear raw inside a script element (HTML's script data state), or
#: that JavaScript source treats as a line end.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _script_safe(text: str) -> str:
    for raw, escaped in _SCRIPT_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def embed_json(data: dict) -> Markup:
    """``data`` as JSON that is safe as the text of a ``<script type="application/json">``."""
    return Markup(_script_safe(json_text(data)))


def embed_details(model: ReportModel) -> tuple[list[dict], Markup]:
    """The partition rows with each ``detail`` as the ``[start, end)`` of its JSON text in
    one string, and that string, safe as the text of a ``<script type="application/json">``.

    The page parses its main document at once, and a partition's detail only when it is
    opened: the string is read from the element (``textContent``) once and sliced. The texts
    are ASCII (``json_text``), and the HTML parser changes nothing inside a script element
    but line ends (none is in JSON text), so offsets in characters are offsets in it."""
    rows, pieces, at = [], [], 0
    for row in model.data["partitions"]:
        text = model.details[row["id"]] if row["detail"] else None
        if text is None:
            rows.append({**row, "detail": None})
            continue
        text = _script_safe(text)
        rows.append({**row, "detail": [at, at + len(text)]})
        pieces.append(text)
        at += len(text) + 1  # one line per detail
    return rows, Markup("\n".join(pieces))


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()
                                         ).decode("ascii") + "'"


def content_security_policy(scripts: list[str], styles: list[str]) -> str:
    """Only these inline scripts and styles run or apply; nothing may be fetched or sent."""
    return ("default-src 'none'; "
            f"script-src {' '.join(_hash(s) for s in scripts)}; "
            f"style-src {' '.join(_hash(s) for s in styles)}; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
            "object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; "
            "base-uri 'none'; form-action 'none'")


def _visible(value):
    """Every value the template prints: control characters (terminal escapes) shown as
    ``\\xNN``, as on the command line; the page's own markup (``Markup``) left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return terminal_safe(value)
    return value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, finalize=_visible)
    env.filters["size"] = format_bytes
    # a path wraps after a "/" only (a 20-digit segment file name stays on one line)
    env.filters["path"] = lambda p: Markup("/<wbr>").join(
        escape(terminal_safe(part)) for part in str(p).split("/"))
    env.filters["time"] = lambda ms: "unknown" if ms is None else format_time(ms)
    return env


def render(model: ReportModel) -> str:
    a = assets.load()
    rows, details_json = embed_details(model)
    data = {**model.data, "partitions": rows}
    css = a.uplot_css + "\n" + a.report_css
    worst = max((SEVERITY_RANK[c["severity"]] for c in data["finding_codes"]), default=0)
    meta = data["meta"]
    title = ", ".join(Path(p).name or p for p in meta["paths"])
    whatif_js = whatif.script() if data.get("what_if") else ""  # its section's charts
    return environment().get_template("report.html.j2").render(
        csp=content_security_policy([a.uplot_js, a.format_js, a.report_js,
                                     *filter(None, [whatif_js])],
                                    [css]),
        whatif=data.get("what_if"), whatif_js=Markup(whatif_js),
        css=Markup(css), uplot_js=Markup(a.uplot_js), format_js=Markup(a.format_js),
        report_js=Markup(a.report_js),
        uplot_version=a.uplot_version, data_json=embed_json(data), details_json=details_json,
        listed=sum(1 for r in rows if r["listed"]),
        with_detail=sum(1 for r in rows if r["detail"] is not None), meta=meta, title=title,
        generated=format_time(meta["generated_at"] // 1000 * 1000),  # ISO UTC, as every time
        summary=data["summary"], codes=data["finding_codes"], left_out=data["left_out"],
        skipped=data["skipped"], tiered=data["tiered"], schemas=data.get("schemas"),
        finding_total=sum(c["count"] for c in data["finding_codes"]),
        sources=data["finding_sources"], merged=data["findings_merged"],
        worst={3: "error", 2: "warning", 1: "info", 0: "none"}[worst],
        custody=data.get("custody"))
