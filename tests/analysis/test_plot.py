"""The forecast picture: drawn from the future-timestamp scenario, and it must say so itself.

Set SEGTOOLS_KEEP_PLOTS=DIR to keep the PNG and HTML for a look."""

from __future__ import annotations

import os
import shutil
from types import SimpleNamespace

import pytest

from segtools.analysis.config import TopicConfig
from segtools.analysis.explain import RetentionExplained
from segtools.analysis.forecast import combine, forecast_partition
from segtools.analysis.retention import explain_retention
from tests.analysis.scenarios import DAY, future_blocker

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
