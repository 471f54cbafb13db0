"""The forecast picture: drawn from the future-timestamp scenario, and it must say so itself.

Set SEGTOOLS_KEEP_PLOTS=DIR to keep the PNG and HTML for a look."""

from __future__ import annotations

import itertools
import math
import os
import shutil
from types import SimpleNamespace

import pytest

from segtools.analysis.config import TopicConfig
from segtools.analysis.explain import RetentionExplained
from segtools.analysis.forecast import combine, forecast_partition
from segtools.analysis.retention import explain_retention
from tests.analysis.scenarios import DAY, future_blocker
from tests.fixtures_manifest import FIXTURES

pytest.importorskip("matplotlib")
from segtools.cli import plot  # imported only once matplotlib is known to be there


def scenario():
    segs, now = future_blocker()
    pr = explain_retention(segs, TopicConfig(), now_ms=now, high_watermark=None,
                           log_start_offset=None)
    fc = forecast_partition(pr, until_ms=now + 14 * DAY)
    label = SimpleNamespace(label="orders-0", topic="orders",
                            dir=SimpleNamespace(path="/var/kafka-logs/orders-0"))
    return [RetentionExplained(label, pr, fc)], {"orders": combine([("orders-0", fc)])}, now


def texts(fig) -> str:
    found = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        found += [t.get_text() for t in ax.texts] + [ax.get_title(loc="left")]
        found += [t.get_text() for t in ax.get_yticklabels()]
    return "\n".join(found)


def test_the_picture_explains_the_blocker(tmp_path):
    explained, topics, now = scenario()
    fig = plot.figure(explained, topics, now_ms=now, until_ms=now + 14 * DAY)
    words = texts(fig)
    assert "is in the FUTURE: holds back 2 expired segment(s) behind it" in words
    assert words.count("waits for @300") == 4  # @400 @500 (expired) and @600 @700 (young)
    assert "5.0 MiB stay; next deletion: 2023-12-31T22:13:20Z (held by @300" in words
    assert "orders-0 @300  1.0 MiB" in words
    assert "−3.0 MiB (@0,@100,@200)" in words

    png, page = tmp_path / "blocker.png", tmp_path / "blocker.html"
    plot.write(str(png), explained, topics, now_ms=now, until_ms=now + 14 * DAY)
    plot.write(str(page), explained, topics, now_ms=now, until_ms=now + 14 * DAY)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    html = page.read_text()
    assert "data:image/png;base64," in html and "blocked_by_earlier_segment" in html
    keep = os.environ.get("SEGTOOLS_KEEP_PLOTS")
    if keep:
        shutil.copy(png, keep)
        shutil.copy(page, keep)


def test_many_partitions_are_capped(tmp_path):
    explained, topics, now = scenario()
    many = explained * 9  # 72 segments: over the 60-bar budget
    fig = plot.figure(many, topics, now_ms=now, until_ms=now + DAY)
    assert "more segment(s) not drawn" in texts(fig)


def _tick_bytes(ax, axis: str) -> tuple[list[float], list[str]]:
    ax.figure.canvas.draw()
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    i = 1 if axis == "y" else 0
    shown = [t for t in ticks if lo <= t.get_position()[i] <= hi]
    return [t.get_position()[i] for t in shown], [t.get_text() for t in shown]


def _round_binary(values: list[float]) -> bool:
    steps = {b - a for a, b in itertools.pairwise(values)}
    return len(steps) == 1 and (step := steps.pop()) >= 1 and \
        2 ** round(math.log2(step)) == step and all(v % step == 0 for v in values)


def test_byte_axes_tick_at_round_binary_values_each_label_once():
    """The retention picture's size axis ticks at 16/32/48 KiB-like values, never at
    19.5 / 39.1 / 58.6 KiB; bytes-per-batch ticks 16 bytes apart never print one label twice."""
    explained, topics, now = scenario()
    fig = plot.figure(explained, topics, now_ms=now, until_ms=now + 14 * DAY)
    values, labels = _tick_bytes(fig.axes[0], "y")
    assert len(values) >= 3 and _round_binary(values), labels
    assert len(set(labels)) == len(labels), labels
    from segtools.cli.plot_axes import BinaryFormatter, BinaryLocator
    close = BinaryLocator(5).tick_values(15_600, 15_760)
    labels = BinaryFormatter().format_ticks(close)
    assert _round_binary(list(close)) and len(set(labels)) == len(labels), labels


def test_producers_picture_says_what_it_leaves_out_and_keeps_short_spans_narrow():
    import segtools
    from segtools.cli import producers_plot
    results = segtools.producers(FIXTURES / "logdirs" / "producers")
    total = sum(1 for r in results for g in r.producers.values() if g.batches)
    assert total > producers_plot.MAX_PRODUCERS
    fig = producers_plot.figure(results)
    assert f"the {producers_plot.MAX_PRODUCERS} busiest of {total} producer groups" in \
        fig._suptitle.get_text()
    fig.canvas.draw()
    for ax in fig.axes:
        if ax.get_xlabel().startswith("time in"):
            lo, hi = ax.get_xlim()
            assert hi - lo >= producers_plot.MIN_STEPS, (lo, hi)
            ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
            assert all(t == int(t) and t >= 0 for t in ticks), ticks
        if ax.get_xlabel().startswith("bytes per batch"):
            values, labels = _tick_bytes(ax, "x")
            assert len(set(labels)) == len(labels) and _round_binary(values), labels
    import matplotlib.pyplot as plt
    plt.close(fig)
