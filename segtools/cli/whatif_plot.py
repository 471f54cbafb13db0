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
from matplotlib.ticker import FuncFormatter

from segtools.analysis.whatif import WhatIf, WhatIfReport, changes_json
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
                           label="retention.ms")
            age_ax.legend(loc="upper right", fontsize=8)
        name = _plain(w.topic)
        size_ax.set_title(f"{name}: bytes on disk", fontsize=10, loc="left")
        age_ax.set_title(f"{name}: age of the oldest record (days)", fontsize=10, loc="left")
        size_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v)))
        size_ax.set_ylim(bottom=0)
        age_ax.set_ylim(bottom=0)
        size_ax.legend(loc="lower right", fontsize=8)
        for ax in (size_ax, age_ax):
            ax.set_xlabel(f"days after {format_time(report.at_ms)}", fontsize=8)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def png_bytes(report: WhatIfReport) -> bytes:
    buf = io.BytesIO()
    figure(report).savefig(buf, format="png")
    return buf.getvalue()


def html_page(png: bytes, items: Sequence[WhatIf]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(w.topic)}</td><td>{w.current.peak_bytes}</td>"
        f"<td>{w.proposed.peak_bytes}</td><td>{w.current.oldest_age_ms_max}</td>"
        f"<td>{w.proposed.oldest_age_ms_max}</td></tr>" for w in items)
    return ("<!doctype html><meta charset=utf-8><title>segtools what-if</title>"
            f"<img alt='what-if' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
            "<table><tr><th>topic</th><th>peak now</th><th>peak proposed</th>"
            "<th>oldest age now (ms)</th><th>oldest age proposed (ms)</th></tr>"
            f"{rows}</table>")


def write(path: str, report: WhatIfReport) -> None:
    """Write ``path`` (.png, or .html with the PNG inside), never inside a log dir."""
    refuse_under_log_dir(path)
    png = png_bytes(report)
    data = png if path.lower().endswith(".png") else \
        html_page(png, _topics(report)).encode("utf-8")
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None
