"""The what-if as a monitoring graph: per topic, bytes on disk over time under today's config
(grey) and the proposed one (blue), and beside it the age of the oldest record on disk with
retention.ms drawn as the promise. A quiet topic rolled by ``segment.ms`` draws a sawtooth
whose teeth are a whole segment deleted at once; the fix draws a nearly flat line.

PNG from matplotlib's Agg canvas (no pyplot state); HTML embeds the same PNG as base64, so the
page fetches nothing.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter

from segtools.analysis.whatif import (
    WhatIf,
    WhatIfReport,
    alternative_parts,
    changes_json,
    cost_label,
    exact_rows,
    shown_cost,
    table_rows,
    topic_notes,
    topic_sentence,
)
from segtools.cli.common import refuse_under_log_dir
from segtools.errors import SegtoolsError
from segtools.units import format_bytes, format_time

DAY_MS = 86_400_000
MAX_TOPICS = 8


def _plain(text: str) -> str:
    """A topic name as literal text: no mathtext (``$``), no control characters."""
    return "".join(c if c.isprintable() else "?" for c in text).replace("$", r"\$")


def _topics(report: WhatIfReport) -> list[WhatIf]:
    return [w for w in report.items if w.partition is None][:MAX_TOPICS]


def figure(report: WhatIfReport) -> Figure:
    rows = _topics(report) or []
    fig = Figure(figsize=(12, 2.8 * max(len(rows), 1)), dpi=100)
    FigureCanvasAgg(fig)
    if not rows:
        ax = fig.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "no partitions to simulate", ha="center", va="center")
        ax.set_axis_off()
        return fig
    retention = report.retention_ms
    for i, w in enumerate(rows):
        size_ax = fig.add_subplot(len(rows), 2, 2 * i + 1)
        age_ax = fig.add_subplot(len(rows), 2, 2 * i + 2, sharex=size_ax)
        change = ", ".join(f"{k}={v}" for k, v in changes_json(w.changes).items()) or "no change"
        for outcome, colour, label in ((w.current, "#7f7f7f", "current"),
                                       (w.proposed, "#1f77b4", f"proposed ({_plain(change)})")):
            days = [(t - report.at_ms) / DAY_MS for t, _, _ in outcome.series]
            size_ax.step(days, [b for _, b, _ in outcome.series], where="post", color=colour,
                         label=label, linewidth=1.6)
            ages = [((t - o) / DAY_MS if o is not None else float("nan"))
                    for t, _, o in outcome.series]
            age_ax.step(days, ages, where="post", color=colour, linewidth=1.6)
        r = retention.get(w.topic, -1)
        if r >= 0:
            age_ax.axhline(r / DAY_MS, color="#d62728", linestyle="--", linewidth=1,
                           label=report.retention_names.get(w.topic, "retention.ms"))
            age_ax.legend(loc="upper right", fontsize=8)
        name = _plain(w.topic)
        size_ax.set_title(f"{name}: bytes on disk", fontsize=10, loc="left")
        age_ax.set_title(f"{name}: age of the oldest record (days)", fontsize=10, loc="left")
        peak = max((b for o in (w.current, w.proposed) for _, b, _ in o.series), default=0)
        size_ax.yaxis.set_major_locator(FixedLocator(binary_ticks(peak)))
        size_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v)))
        size_ax.set_ylim(bottom=0)
        age_ax.set_ylim(bottom=0)
        size_ax.legend(loc="lower right", fontsize=8)
        for ax in (size_ax, age_ax):
            ax.set_xlabel(f"days after {format_time(report.at_ms)}", fontsize=8)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def binary_ticks(peak: float, most: int = 6) -> list[float]:
    """Size ticks at round numbers of the unit the labels use (KiB, MiB, ...: 0, 50 KiB,
    100 KiB, not 97.7 KiB), at most ``most`` of them up to just past ``peak``."""
    unit = 1.0
    while peak >= 1024 * unit and unit < 1024.0 ** 5:
        unit *= 1024
    span = max(peak / unit, 1e-9)
    step = next(s for s in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250,
                            500, 1000) if span / s <= most - 1)
    count = int(span // step) + 2
    return [i * step * unit for i in range(count)]


def png_bytes(report: WhatIfReport) -> bytes:
    buf = io.BytesIO()
    figure(report).savefig(buf, format="png")
    return buf.getvalue()


def html_page(png: bytes, report: WhatIfReport, items: Sequence[WhatIf]) -> str:
    """The picture and, per topic, what the CLI's text says: its sentence and its table
    (sizes and durations in units, the exact figures in each cell's title), then the
    recommendations with their cost, with what was simulated above them."""
    def cell(text: str, exact: str) -> str:
        return f"<td class=num title='{html.escape(exact)}'>{html.escape(text)}</td>"

    def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        return ("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) +
                "</tr>" + "".join(rows) + "</table>")

    tables = []
    for w in items:
        change = ", ".join(f"{k}={v}" for k, v in changes_json(w.changes).items()) or \
            "no change"
        body = [f"<tr><td>{html.escape(label)}</td>{cell(cur, ex[0])}{cell(prop, ex[1])}</tr>"
                for (label, cur, prop), ex in zip(table_rows(w.current, w.proposed),
                                                  exact_rows(w.current, w.proposed),
                                                  strict=True)]
        notes = "".join(f"<p>{html.escape(line)}</p>" for line in topic_notes(report, w))
        tables.append(f"<h2>{html.escape(w.topic)}: {html.escape(change)}</h2>"
                      f"<p><b>{html.escape(topic_sentence(w))}</b></p>{notes}"
                      f"{table(('', 'current', 'proposed'), body)}")
    for r in report.recommendations:
        before, after = r.cost["before"], r.cost["after"]
        body = [f"<tr><td>{html.escape(cost_label(key))}</td>"
                f"{cell(shown_cost(key, before[key]), str(before[key]))}"
                f"{cell(shown_cost(key, after[key]), str(after[key]))}</tr>" for key in before]
        also = "".join(f"<p>also keeps it: {html.escape(change)} ({html.escape(does)})</p>"
                       for change, does in map(alternative_parts, r.alternatives))
        tables.append(f"<h2>recommendation: {html.escape(r.topic)}</h2>"
                      f"<p><b>{html.escape(r.why)}</b></p>"
                      f"{table(('cost', 'before', 'after'), body)}{also}")
    head = (f"what-if from {format_time(report.at_ms)} to {format_time(report.end_ms)}, "
            f"starting from the segments on disk; ingest: {report.ingest.describe()}")
    return ("<!doctype html><meta charset=utf-8><title>segtools what-if</title>"
            "<style>body{font-family:sans-serif}td.num{text-align:right}"
            "td,th{padding:2px 10px}</style>"
            f"<p>{html.escape(head)}</p>"
            f"<img alt='what-if' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
            f"{''.join(tables)}")


def write(path: str, report: WhatIfReport) -> None:
    """Write ``path`` (.png, or .html with the PNG inside), never inside a log dir."""
    refuse_under_log_dir(path)
    png = png_bytes(report)
    data = png if path.lower().endswith(".png") else \
        html_page(png, report, _topics(report)).encode("utf-8")
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None
