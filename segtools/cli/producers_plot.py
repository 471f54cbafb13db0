"""The picture for ``segtools producers --plot``: records per batch, bytes per batch and the
rate of batches and records over time for the busiest producers, with the diagnosis in each
row's title (matplotlib, optional extra ``plot``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from segtools.analysis.producers import NON_IDEMPOTENT, PartitionProducers, ProducerBatching
from segtools.cli.common import refuse_under_log_dir
from segtools.cli.plot_axes import binary_bytes
from segtools.units import format_bytes, format_duration

MAX_PRODUCERS = 6
#: The rate panel spans at least this many time steps: one busy second is one bar among
#: several, on whole-step ticks, not a bar as wide as the panel over ticks -0.4..0.4.
MIN_STEPS = 10
BATCH, RECORD, SIZE = "#4c72b0", "#dd8452", "#55a868"


def _title(g: ProducerBatching) -> str:
    who = ("non-idempotent producers" if g.producer_id == NON_IDEMPOTENT
           else f"producer {g.producer_id} epoch {g.producer_epoch}")
    verdict = g.verdict
    if g.ceiling:
        verdict += f": batches close at ~{format_bytes(g.ceiling)} (batch.size)"
    elif g.linger_ms is not None:
        verdict += f": batches close after ~{g.linger_ms} ms (linger.ms)"
    elif g.verdict == "unbatched":
        verdict += ": one record per batch (linger.ms=0)"
    return f"{g.topic}-{g.partition} {who} — {verdict}"


def _records_per_batch(ax, g: ProducerBatching) -> None:
    counts = sorted(g.records_per_batch.items())
    ax.bar([k for k, _ in counts], [v for _, v in counts], width=0.8, color=BATCH)
    lo, hi = counts[0][0], counts[-1][0]
    ax.set_xlim(lo - 1, hi + 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("records per batch")
    ax.set_ylabel("batches")


def _bytes_per_batch(ax, g: ProducerBatching) -> None:
    sizes = sorted(g.sizes.items())
    lo, hi = sizes[0][0], sizes[-1][0] + 16
    ax.hist([k for k, _ in sizes], weights=[v for _, v in sizes],
            bins=min(40, max(1, (hi - lo) // 16)), range=(lo, hi), color=SIZE)
    if hi - lo <= 32:
        ax.set_xlim(lo - 64, hi + 64)
    binary_bytes(ax.xaxis, ticks=3)  # a third of the figure's width: room for 3 labels
    ax.set_xlabel("bytes per batch (16-byte steps)")


def _rate(ax, g: ProducerBatching) -> None:
    rate = g.rate
    keys = sorted(rate.batches)
    start = keys[0]
    unit = rate.width_ms
    xs = [(k - start) / unit for k in keys]
    ax.bar(xs, [rate.batches[k] for k in keys], width=0.9, color=BATCH, label="batches")
    ax.set_ylabel(f"batches per {format_duration(unit)}", color=BATCH)
    ax.set_xlim(-0.5, max(xs[-1], MIN_STEPS - 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    other = ax.twinx()
    other.plot(xs, [rate.records[k] for k in keys], color=RECORD, marker=".", label="records")
    other.set_ylabel(f"records per {format_duration(unit)}", color=RECORD)
    other.set_ylim(bottom=0)
    since = datetime.fromtimestamp(start / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    ax.set_xlabel(f"time in {format_duration(unit)} steps from {since} UTC")


def figure(results: Sequence[PartitionProducers]):
    """One row per producer group, the busiest first, at most ``MAX_PRODUCERS``; the top line
    says how many of how many are drawn."""
    every = sorted((g for r in results for g in r.producers.values() if g.batches),
                   key=lambda g: -g.batches)
    groups = every[:MAX_PRODUCERS]
    rows = max(len(groups), 1)
    fig = plt.figure(figsize=(15, 3.6 * rows + 0.4), layout="constrained")
    fig.suptitle(f"the {len(groups)} busiest of {len(every)} producer groups (by batches); "
                 "segtools producers lists every one" if len(every) > len(groups)
                 else f"{len(every)} producer group(s)", x=0.01, ha="left", fontsize=12)
    for row, g in zip(fig.subfigures(rows, 1, squeeze=False)[:, 0], groups, strict=False):
        row.suptitle(_title(g), x=0.01, ha="left", fontsize=11, fontweight="bold")
        left, middle, right = row.subplots(1, 3)
        _records_per_batch(left, g)
        _bytes_per_batch(middle, g)
        _rate(right, g)
    return fig


def write(path: str, results: Sequence[PartitionProducers]) -> None:
    refuse_under_log_dir(path)
    fig = figure(results)
    fig.savefig(path, dpi=90)
    plt.close(fig)
