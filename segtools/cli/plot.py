"""The retention forecast as a picture: what goes when, and what holds it back.

Top panel: bytes on disk over time with no new data (one line per partition, or per topic when
there are many), stepping down where segments are deleted. Bottom panel, on the same time
axis: one bar per segment spanning the time from when its *oldest* record passes retention.ms
to when its *newest* record does (its record timestamps shifted by retention.ms, which the
axis on top of the panel reads back as record time). Kafka's time rule deletes a segment only
at the right end of its bar, so a long bar is old data waiting for new data in the same
segment; an orange dotted tail is a segment that is past retention but waits for an earlier
one (retention is prefix-only); a red bar is a segment whose newest timestamp is in the
future, and the annotation says what it holds back. The step in the top panel sits exactly
above where the bars end.

PNG uses matplotlib's Agg canvas directly (no pyplot, no global backend state); HTML embeds
the same PNG (base64) and the verdict tables, so nothing is fetched when the page is opened.
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import matplotlib.dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from segtools.analysis.forecast import Forecast
from segtools.analysis.retention import (
    ABOVE_HIGH_WATERMARK,
    BLOCKED_BY_EARLIER_SEGMENT,
    MAX_EPOCH_MS,
    PartitionRetention,
    SegmentVerdict,
    own_expiry,
    waits_for,
)
from segtools.cli.common import refuse_under_log_dir
from segtools.cli.plot_axes import binary_bytes
from segtools.errors import SegtoolsError
from segtools.timestamps import DAY_MS
from segtools.units import format_bytes, format_duration, format_time

MAX_BARS = 60

#: colour, legend text
CATEGORIES = {
    "deleted": ("#8c8c8c", "deleted at --at (past retention, or size / log-start rule)"),
    "expires": ("#1f77b4", "kept; goes when its newest record passes retention.ms"),
    "blocked": ("#ff7f0e", "past retention but kept: an earlier segment is kept (prefix rule)"),
    "future": ("#d62728", "newest timestamp in the FUTURE: holds back later segments"),
    "hw": ("#9467bd", "at/after the high watermark: never deleted"),
    "never": ("#c7c7c7", "never deleted by time (empty last segment, compact-only, or "
                         "retention.ms=-1)"),
}


def _category(v: SegmentVerdict, now: int) -> str:
    if v.deletable:
        return "deleted"
    if v.max_timestamp > now:
        return "future"
    if v.reason == BLOCKED_BY_EARLIER_SEGMENT:
        return "blocked"
    if v.reason == ABOVE_HIGH_WATERMARK:
        return "hw"
    if v.eligible_at is None:
        return "never"
    return "expires"


def _num(ms: float) -> float:
    """Epoch ms -> matplotlib's date number (days), clamped to what it can draw."""
    return mdates.date2num(datetime.fromtimestamp(min(max(ms, 0), MAX_EPOCH_MS) / 1000, UTC))


def _pick(explained: Sequence) -> tuple[list, int]:
    """Partitions to draw bars for, most interesting first, within MAX_BARS segments."""
    def interest(e) -> int:
        codes = {c.code for c in e.retention.callouts}
        return -(3 * ("future_timestamp" in codes) + 2 * ("stale_records" in codes) +
                 any(v.deletable for v in e.retention.segments))
    chosen, used = [], 0
    for e in sorted(explained, key=interest):
        n = len(e.retention.segments)
        if chosen and used + n > MAX_BARS:
            continue
        chosen.append(e)
        used += n
    hidden = sum(len(e.retention.segments) for e in explained) - used
    order = {id(e): i for i, e in enumerate(explained)}
    return sorted(chosen, key=lambda e: order[id(e)]), hidden


def _series(fc: Forecast) -> tuple[list[float], list[float]]:
    xs, ys = [_num(fc.start_ms)], [fc.start_size]
    for s in fc.steps:
        xs.append(_num(s.at_ms))
        ys.append(s.size_after)
    xs.append(_num(fc.end_ms))
    ys.append(fc.end_size)
    return xs, ys


def _date_axis(axis, span_days: float) -> None:
    """Plain UTC date labels whose precision follows the visible span."""
    fmt = ("%H:%M:%S" if span_days < 0.02 else "%m-%d %H:%M" if span_days < 60
           else "%Y-%m-%d")
    axis.set_major_locator(mdates.AutoDateLocator(tz=UTC, maxticks=9))
    axis.set_major_formatter(mdates.DateFormatter(fmt, tz=UTC))


# Layout, in inches: the figure is laid out by hand so the panels keep their size whatever
# the number of bars.
_W, _LEFT, _RIGHT = 13.0, 2.45, 0.3
_TITLE, _TOP_H, _GAP, _BAR_H = 1.15, 2.9, 1.35, 0.3
_BELOW = 0.75  # tick labels and the x label under the bars


def figure(explained: Sequence, topics: Mapping[str, Forecast], *, now_ms: int,
           until_ms: int) -> Figure:
    """Build the figure (the caller saves it)."""
    if not explained:
        raise SegtoolsError("nothing to plot: no live partition with segments")
    drawn, hidden = _pick(explained)
    bars = [(e, i) for e in drawn for i in range(len(e.retention.segments))]
    span = until_ms - now_ms
    starts = []
    for e, i in bars:
        v = e.retention.segments[i]
        r = e.retention.config.local_retention_ms_effective
        if r >= 0 and v.size:
            first = v.first_timestamp if v.first_timestamp is not None else v.max_timestamp
            starts.append(min(first, v.max_timestamp) + r)
    left_ms = max(min([now_ms, *starts]), now_ms - span) - span * 0.04
    left, right, now = _num(left_ms), _num(until_ms), _num(now_ms)
    notes = _notes(explained, hidden)
    legend_h = 0.55
    notes_h = 0.17 * (notes.count("\n") + 1) + 0.15 if notes else 0.1
    bars_h = _BAR_H * len(bars) + 0.35
    height = _TITLE + _TOP_H + _GAP + bars_h + _BELOW + legend_h + notes_h
    fig = Figure(figsize=(_W, height))
    FigureCanvasAgg(fig)  # the Agg backend, without pyplot's global state
    width = (_W - _LEFT - _RIGHT) / _W
    bottom_y = _BELOW + legend_h + notes_h
    bottom = fig.add_axes((_LEFT / _W, bottom_y / height, width, bars_h / height))
    top = fig.add_axes((_LEFT / _W, (bottom_y + bars_h + _GAP) / height, width,
                        _TOP_H / height), sharex=bottom)
    _top_panel(top, explained, topics, now_ms, until_ms, left)
    present = _bottom_panel(bottom, bars, now_ms, until_ms, left, right)
    for ax in (top, bottom):
        ax.axvline(now, color="black", linewidth=1.3, zorder=5)
        ax.set_xlim(left, right)
        _date_axis(ax.xaxis, right - left)
        ax.tick_params(axis="x", labelbottom=True, labelsize=8)
    top.annotate("--at ", (now, 0.02), xycoords=("data", "axes fraction"), ha="right",
                 fontsize=9, fontweight="bold")
    bottom.set_xlabel("wall-clock time (UTC)", fontsize=9)
    handles = [Patch(facecolor=CATEGORIES[c][0], edgecolor="black" if c in ("future", "blocked")
                     else CATEGORIES[c][0], label=CATEGORIES[c][1])
               for c in CATEGORIES if c in present]
    if handles:
        fig.legend(handles=handles, loc="lower left", ncol=2, fontsize=8.5, frameon=False,
                   bbox_to_anchor=(_LEFT / _W - 0.01, (notes_h + 0.02) / height))
    topic_names = sorted({e.input.topic for e in explained})
    shown = ", ".join(topic_names[:3]) + (f" (+{len(topic_names) - 3} more)"
                                          if len(topic_names) > 3 else "")
    fig.text(0.01, 1 - 0.3 / height, f"Retention forecast: {shown}", fontsize=14,
             fontweight="bold", va="center")
    fig.text(0.01, 1 - 0.62 / height,
             f"at {format_time(now_ms)} (--at) · no new data · next {format_duration(span)}.  "
             "Kafka deletes a whole segment once its NEWEST record is older than "
             "retention.ms,\nand only from the start of the log: an expired segment waits "
             "for every segment before it.", fontsize=9.5, va="center", color="#333333")
    if notes:
        fig.text(0.01, 0.08 / height, notes, fontsize=8.5, va="bottom", ha="left",
                 family="monospace")
    return fig


def _top_panel(ax, explained, topics, now_ms, until_ms, left) -> None:
    ax.axvspan(left, _num(now_ms), color="#f0f0f0", zorder=0)
    series: list[tuple[str, Forecast]]
    if len(explained) <= 6:
        series = [(e.input.label, e.forecast) for e in explained if e.forecast is not None]
        what = "partition"
    else:
        series = sorted(topics.items(), key=lambda kv: -kv[1].start_size)[:8]
        what = "topic (largest 8)" if len(topics) > 8 else "topic"
    ax.set_title(f"bytes on disk per {what}: each step down is segments being deleted",
                 fontsize=10, loc="left")
    drops = []
    for label, fc in series:
        xs, ys = _series(fc)
        (line,) = ax.step(xs, ys, where="post", linewidth=2.2, label=label)
        for s in fc.steps:
            drops.append((s.removed_bytes, s, line.get_color()))
    drops.sort(key=lambda x: -x[0])
    for n, (_, s, color) in enumerate(sorted(drops[:6], key=lambda x: x[1].at_ms)):
        names = ",".join(f"@{b}" for b in s.removed[:3]) + ("…" if len(s.removed) > 3 else "")
        ax.annotate(f"−{format_bytes(s.removed_bytes)} ({names})",
                    (_num(s.at_ms), s.size_after + s.removed_bytes / 2), xytext=(5, 8 * (n % 2)),
                    textcoords="offset points", fontsize=8, color=color, va="center")
    if what == "partition":
        for e in explained:
            _why_flat(ax, e, until_ms)
    if len(explained) == 1:
        rb = explained[0].retention.config.local_retention_bytes_effective
        if rb >= 0:
            ax.axhline(rb, color="#d62728", linestyle="--", linewidth=1)
            ax.annotate(f"retention.bytes {format_bytes(rb)}", (1.0, rb),
                        xycoords=("axes fraction", "data"), xytext=(-4, 3),
                        textcoords="offset points", ha="right", fontsize=8, color="#d62728")
    binary_bytes(ax.yaxis)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(bottom=0, top=max([fc.start_size for _, fc in series] + [1]) * 1.12)
    ax.grid(axis="y", color="#e5e5e5")
    if len(series) > 1:
        ax.legend(loc="upper right", fontsize=8, ncol=min(3, len(series)), framealpha=0.9)


def _why_flat(ax, e, until_ms: int) -> None:
    """Say, on the line itself, when the next deletion after the window is and what holds
    it: the answer to "why is it not shrinking"."""
    pr: PartitionRetention = e.retention
    later = [v for v in pr.segments if not v.deletable and
             (v.eligible_at is None or v.eligible_at > until_ms)]
    if not later or e.forecast is None or not e.forecast.end_size:
        return
    first = later[0]
    holder = next((v for v in pr.segments if v.base_offset == first.blocked_by), None)
    future = next((v for v in pr.segments if not v.deletable and v.max_timestamp > pr.now_ms),
                  None)
    if future is not None and first.base_offset >= future.base_offset:
        why = f"held by @{future.base_offset}, whose newest timestamp is in the future"
    elif holder is not None:
        why = f"held by @{holder.base_offset}"
    elif first.eligible_at is None:
        why = f"@{first.base_offset}: {first.reason}"
    else:
        why = f"@{first.base_offset} expires then"
    when = "never" if first.eligible_at is None else format_time(first.eligible_at)
    ax.annotate(f"{format_bytes(e.forecast.end_size)} stay; next deletion: {when} ({why})",
                (1.0, e.forecast.end_size), xycoords=("axes fraction", "data"),
                xytext=(-6, 6), textcoords="offset points", ha="right", fontsize=8.5,
                color="#b22222", fontweight="bold",
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5})


def _bottom_panel(ax, bars, now_ms, until_ms, left, right) -> set[str]:
    ax.set_title("one bar per segment, from when its OLDEST record passes retention.ms to "
                 "when its NEWEST does; ✕ = deleted there", fontsize=10, loc="left", pad=34)
    labels = []
    present: set[str] = set()
    retentions = {e.retention.config.local_retention_ms_effective for e, _ in bars}
    for row, (e, i) in enumerate(bars):
        v = e.retention.segments[i]
        y = len(bars) - 1 - row
        r = e.retention.config.local_retention_ms_effective
        cat = _category(v, now_ms)
        present.add(cat)
        color = CATEGORIES[cat][0]
        labels.append(f"{e.input.label} @{v.base_offset}  {format_bytes(v.size)}")
        if r < 0 or v.size == 0 or not e.retention.config.delete:
            ax.text(right, y, f"never by time ({v.reason})  ", va="center", ha="right",
                    fontsize=8, color="#555555")
            continue
        first = v.first_timestamp if v.first_timestamp is not None else v.max_timestamp
        x0 = _num(min(first, v.max_timestamp) + r)
        x1 = _num(own_expiry(v, r))
        ax.barh(y, max(x1 - x0, (right - left) * 0.004), left=x0, height=0.62, color=color,
                edgecolor="black" if cat in ("future", "blocked") else color, linewidth=0.7)
        if v.stale and v.stale.count:
            ax.annotate(f"{v.stale.count} records older than retention.ms wait inside",
                        (x1, y), xytext=(5, -3), textcoords="offset points", va="top",
                        fontsize=7.5, color="#1f4e79")
        if v.max_timestamp_source == "mtime":
            ax.text(x1, y, "  age from file mtime (no timestamps)", va="center", fontsize=7.5,
                    color="#555555")
        gone = max(v.eligible_at, now_ms) if v.eligible_at is not None else None
        waits = waits_for(e.retention.segments, i, r) if not v.deletable else None
        inside = gone is not None and gone <= until_ms
        if waits is not None:
            end = _num(gone) if inside else right
            ax.plot([x1, end], [y, y], linestyle=(0, (1, 1.5)), color="#ff7f0e", linewidth=2.4)
        label = f"waits for @{waits}" if waits is not None else ""
        if inside:
            ax.plot([_num(gone)], [y], marker="x", color="black", markersize=7, mew=1.6,
                    zorder=6)
        elif not v.deletable:
            label += (" · " if label else "") + ("never" if gone is None else
                                                 f"goes {format_time(gone)} →")
        if label:
            where = (_num(gone), y) if inside else (right, y)
            ax.annotate(label, where, xytext=(-4, 5), textcoords="offset points", ha="right",
                        va="bottom", fontsize=7.5, color="#a04000" if waits else "#333333",
                        bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none",
                              "pad": 0.5})
        if cat == "future":
            behind = sum(1 for _, j in bars if e.retention.segments[j].blocked_by ==
                         v.base_offset)
            note = (f"newest timestamp {format_time(v.max_timestamp)} is in the FUTURE"
                    + (f": holds back {behind} expired segment(s) behind it" if behind else ""))
            ax.annotate(note, (max(x0, left), y), xytext=(4, 8), textcoords="offset points",
                        fontsize=8.5, color="#d62728", fontweight="bold")
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels(list(reversed(labels)), fontsize=8, family="monospace")
    ax.set_ylim(-0.7, len(bars) - 0.3)
    ax.grid(axis="x", color="#ececec")
    if len(retentions) == 1 and (r := next(iter(retentions))) >= 0:
        shift = r / DAY_MS
        sec = ax.secondary_xaxis("top", functions=(lambda x: x - shift, lambda x: x + shift))
        _date_axis(sec.xaxis, right - left)
        sec.tick_params(labelsize=7, colors="#666666")
        sec.set_xlabel(f"record timestamp (= wall-clock − retention.ms {format_duration(r)})",
                       fontsize=8, color="#666666", labelpad=2)
    return present


def _notes(explained, hidden: int) -> str:
    lines = []
    if hidden:
        lines.append(f"{hidden} more segment(s) not drawn (over {MAX_BARS} bars); see the "
                     "text or JSON output")
    for e in explained:
        for c in e.retention.callouts:
            if c.code in ("future_timestamp", "stale_records", "quiet_active_segment",
                          "mtime_fallback", "above_high_watermark"):
                lines.append(f"{e.input.label}: {c.message}")
    wrapped = []
    for line in lines[:6]:
        wrapped += textwrap.wrap(line, 170, subsequent_indent="    ")
    if len(lines) > 6:
        wrapped.append(f"... and {len(lines) - 6} more call-out(s) in the text output")
    return "\n".join(wrapped)


def png_bytes(explained, topics, *, now_ms: int, until_ms: int) -> bytes:
    fig = figure(explained, topics, now_ms=now_ms, until_ms=until_ms)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def write(path: str, explained, topics, *, now_ms: int, until_ms: int) -> None:
    """Write ``path`` (.png, or .html with the PNG inside) without touching anything else,
    and never inside a log dir."""
    refuse_under_log_dir(path)
    png = png_bytes(explained, topics, now_ms=now_ms, until_ms=until_ms)
    data = png if path.lower().endswith(".png") else html_page(
        png, explained, now_ms=now_ms).encode("utf-8")
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None


def html_page(png: bytes, explained, *, now_ms: int) -> str:
    """A self-contained page: the picture, then each partition's verdicts and call-outs."""
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>segtools retention at {esc(format_time(now_ms))}</title><style>",
        "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ddd;padding:3px 7px;vertical-align:top;font-size:13px}"
        "th{background:#f4f4f4}.del{color:#b00;font-weight:bold}.keep{color:#070}"
        ".why{color:#555}.callout{background:#fff7e0;border-left:4px solid #f0a000;"
        "padding:4px 8px;margin:4px 0}img{max-width:100%}</style></head><body>",
        f"<h1>Retention at {esc(format_time(now_ms))}</h1>",
        f"<img alt='retention forecast' src='data:image/png;base64,"
        f"{base64.b64encode(png).decode('ascii')}'>",
    ]
    for e in explained:
        pr: PartitionRetention = e.retention
        parts.append(f"<h2>{esc(e.input.label)}</h2><p>{esc(str(e.input.dir.path))} · "
                     f"high watermark {pr.high_watermark} · log start offset "
                     f"{pr.log_start_offset} · {esc(format_bytes(pr.size))}</p>")
        for c in pr.callouts:
            parts.append(f"<div class='callout'><b>{esc(c.code)}</b>: {esc(c.message)}</div>")
        parts.append("<table><tr><th>segment</th><th>size</th><th>largest timestamp</th>"
                     "<th>age</th><th>verdict</th><th>eligible at</th><th>reason</th></tr>")
        for v in pr.segments:
            verdict = "<span class='del'>DELETE</span>" if v.deletable else \
                "<span class='keep'>keep</span>"
            parts.append(
                f"<tr><td>@{v.base_offset}..{'' if v.last_offset is None else v.last_offset}"
                f"</td><td>{esc(format_bytes(v.size))}</td>"
                f"<td>{esc(format_time(v.max_timestamp))} ({esc(v.max_timestamp_source)})</td>"
                f"<td>{esc(format_duration(v.age_ms))}</td><td>{verdict}</td>"
                f"<td>{esc(format_time(v.eligible_at))}</td><td><b>{esc(v.reason)}</b><br>"
                f"<span class='why'>{esc(v.reason_text)}</span></td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "".join(parts)
